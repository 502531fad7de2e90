"""One self-contained HTML page: sections of text, tables and figures inlined as PNG.

Nothing on the page refers outside it: the style is inline, figures are ``data:`` URIs, the
one script (:data:`SCRIPT`: sorting tables, downloading embedded CSV) is inline and allowed by
its SHA-256 hash alone, and a Content-Security-Policy forbids every other source, so the page
opens offline and can make no network request even if edited.

Text given to a :class:`Section` is plain text in which ```code``` spans (backticks) are shown
as code; nothing else is markup.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ._mpl import png_bytes

__all__ = ["SCRIPT", "Page", "Section", "format_value", "inline", "with_intervals"]

#: the page's only script: tables marked ``data-sortable`` sort by a column when its heading
#: is clicked (numbers as numbers, again to reverse), and links marked ``data-csv`` download
#: the text of the element they name as a CSV file (a Blob: no network, no size limit of URLs)
SCRIPT = """
(function () {
  function key(cell) {
    var text = cell.textContent.trim();
    var number = Number(text.replace(/,/g, ""));
    return text !== "" && !isNaN(number) ? number : text.toLowerCase();
  }
  function sort(table, column, heading) {
    var ascending = heading.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
      cell.removeAttribute("aria-sort");
    });
    heading.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[column]), y = key(b.cells[column]);
      if (typeof x !== typeof y) { x = String(x); y = String(y); }
      var order = x < y ? -1 : x > y ? 1 : 0;
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  document.querySelectorAll("table[data-sortable]").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (heading, column) {
      heading.tabIndex = 0;
      heading.title = "sort by this column (again to reverse)";
      heading.addEventListener("click", function () { sort(table, column, heading); });
      heading.addEventListener("keydown", function (event) {
        if (event.key === "Enter") { sort(table, column, heading); }
      });
    });
    table.setAttribute("data-sortable", "ready");
  });
  document.querySelectorAll("a[data-csv]").forEach(function (link) {
    var text = document.getElementById(link.getAttribute("data-csv")).textContent;
    link.href = URL.createObjectURL(new Blob([text], {type: "text/csv;charset=utf-8"}));
  });
})();
"""
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode()
_CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    f"script-src 'sha256-{_SCRIPT_HASH}'"
)
_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: #1f2328; background: #fff; margin: 0; line-height: 1.45; font-size: 15px; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 28px 60px; }
header { border-bottom: 2px solid #0072B2; margin-bottom: 12px; }
h1 { font-size: 1.6em; margin: 0.2em 0 0.1em; }
h2 { font-size: 1.25em; margin: 1.6em 0 0.5em; border-bottom: 1px solid #d0d7de;
     padding-bottom: 0.2em; }
p.meta { color: #57606a; font-size: 0.9em; margin: 0.2em 0 0.8em; }
nav { font-size: 0.9em; margin: 0.4em 0 1em; }
nav a { margin-right: 1.1em; color: #0072B2; text-decoration: none; }
div.scroll { overflow-x: auto; max-width: 100%; }
table.data { border-collapse: collapse; font-size: 0.86em; margin: 0.4em 0 0.3em; }
table.data th, table.data td { border-bottom: 1px solid #e5e7eb; padding: 3px 10px;
     text-align: right; vertical-align: top; }
table.data th { background: #f6f8fa; }
table.data tbody tr:nth-child(even) { background: #fafbfc; }
table.data td:first-child, table.data th:first-child { text-align: left; }
table.facts td:first-child { color: #57606a; }
table.facts td { text-align: left; }
table[data-sortable] th { cursor: pointer; user-select: none; }
table[data-sortable] th[aria-sort="ascending"]::after { content: " \\25B2"; }
table[data-sortable] th[aria-sort="descending"]::after { content: " \\25BC"; }
section#summary { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px;
     padding: 2px 18px 10px; }
section#summary h2 { border-bottom: none; margin-top: 0.8em; }
p.lead { font-size: 1.05em; }
a.download { display: inline-block; margin: 0.3em 0 0.6em; padding: 4px 12px;
     border: 1px solid #0072B2; border-radius: 4px; color: #0072B2; text-decoration: none; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.92em;
       background: #eff1f3; padding: 0 3px; border-radius: 3px; white-space: nowrap; }
p.caption, p.note { font-size: 0.88em; color: #57606a; margin: 0.2em 0 1em; }
figure.plot { margin: 1em 0 1.6em; }
figure.plot img { max-width: 100%; height: auto; border: 1px solid #eaeef2; }
figcaption { font-size: 0.9em; color: #333; margin-top: 0.3em; max-width: 62em; }
ul.notes { font-size: 0.9em; }
ul.notes li.warning { color: #9a6700; }
.omitted { font-size: 0.88em; color: #57606a; font-style: italic; }
footer { margin-top: 3em; font-size: 0.85em; color: #57606a; border-top: 1px solid #d0d7de;
         padding-top: 0.6em; }
"""


def _text(value: Any) -> str:
    return html.escape(str(value))


_CODE = re.compile(r"`([^`]+)`")


def inline(text: Any) -> str:
    """``text`` as HTML: escaped, with ```code``` spans shown as ``<code>``."""
    return _CODE.sub(r"<code>\1</code>", _text(text))


def format_value(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            return "—"
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.3g}"
        return f"{value:.3f}" if abs(value) < 100 else f"{value:,.1f}"
    return str(value)


def with_intervals(frame: pd.DataFrame, columns: dict[str, tuple[str, str]]) -> pd.DataFrame:
    """``frame`` with each ``column`` shown as ``value [lower, upper]`` (the ``lower`` and
    ``upper`` columns dropped), where those columns exist."""
    frame = frame.copy()
    for column, (lower, upper) in columns.items():
        if column not in frame.columns or lower not in frame.columns or upper not in frame.columns:
            continue
        frame[column] = [
            format_value(v)
            if not np.isfinite(lo)
            else f"{format_value(v)} [{format_value(lo)}, {format_value(hi)}]"
            for v, lo, hi in zip(frame[column], frame[lower], frame[upper], strict=True)
        ]
        frame = frame.drop(columns=[lower, upper])
    return frame


@dataclass
class Section:
    """A titled part of the page; its methods append HTML in order."""

    anchor: str
    title: str
    parts: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    omitted: list[tuple[str, str]] = field(default_factory=list)

    def paragraph(self, text: str, css: str | None = None) -> None:
        style = f' class="{css}"' if css else ""
        self.parts.append(f"<p{style}>{inline(text)}</p>")

    def facts(self, rows: Iterable[tuple[str, Any]]) -> None:
        """A two-column table of named values."""
        body = "".join(
            f"<tr><td>{inline(name)}</td><td>{inline(format_value(value))}</td></tr>"
            for name, value in rows
        )
        self.parts.append(f'<table class="data facts"><tbody>{body}</tbody></table>')

    def table(
        self,
        frame: pd.DataFrame,
        caption: str | None = None,
        *,
        max_rows: int = 20,
        index: bool = True,
        sortable: bool = False,
        anchor: str | None = None,
    ) -> None:
        """A table of at most ``max_rows`` rows (the caption says how many were left out);
        ``sortable``: sorted by a column when its heading is clicked (:data:`SCRIPT`)."""
        shown = frame.head(max_rows)
        if index:
            shown = shown.reset_index()
        head = "".join(f"<th>{_text(column)}</th>" for column in shown.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{_text(format_value(v))}</td>" for v in row) + "</tr>"
            for row in shown.itertuples(index=False)
        )
        marks = (' data-sortable="yes"' if sortable else "") + (
            f' id="{_text(anchor)}"' if anchor else ""
        )
        self.parts.append(
            f'<div class="scroll"><table class="data"{marks}><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>"
        )
        more = len(frame) - len(shown)
        text = caption or ""
        if more > 0:
            text = f"{text} (first {len(shown)} of {len(frame):,} rows shown.)".strip()
        if text:
            self.paragraph(text, "caption")

    def figure(self, name: str, draw: Callable[[], Any], title: str, caption: str) -> None:
        """Draw ``draw()`` as an inlined PNG under ``title`` with its how-to-read ``caption``;
        a figure the model has nothing for (``ValueError``) is left out with a note why."""
        try:
            figure = draw()
        except ValueError as err:
            self.omitted.append((name, str(err)))
            self.parts.append(
                f'<p class="omitted">Figure "{_text(name)}" not drawn: {_text(err)}.</p>'
            )
            return
        data = png_bytes(figure)
        width, height = (int(round(v)) for v in figure.get_size_inches() * figure.dpi)
        encoded = base64.b64encode(data).decode("ascii")
        self.figures.append(name)
        self.parts.append(
            f'<figure class="plot" data-figure="{_text(name)}">'
            f'<img src="data:image/png;base64,{encoded}" width="{width}" height="{height}" '
            f'alt="{_text(title)}"><figcaption><strong>{inline(title)}.</strong> '
            f"{inline(caption)}</figcaption></figure>"
        )

    def notes(self, items: Iterable[tuple[str, str]]) -> None:
        """A list of ``(kind, text)`` notes; ``kind`` ``"warning"`` is highlighted."""
        body = "".join(f'<li class="{_text(kind)}">{inline(text)}</li>' for kind, text in items)
        self.parts.append(f'<ul class="notes">{body}</ul>')

    def download(self, name: str, text: str, label: str) -> None:
        """A link that downloads ``text`` as the file ``name`` (a CSV kept in the page, hidden;
        :data:`SCRIPT` makes the link a Blob)."""
        anchor = f"{self.anchor}-{len(self.parts)}-data"
        self.parts.append(
            f'<p><a class="download" href="#{anchor}" download="{_text(name)}" '
            f'data-csv="{anchor}">{inline(label)}</a></p>'
            f'<pre id="{anchor}" hidden>{_text(text)}</pre>'
        )

    def render(self) -> str:
        heading = f'<section id="{self.anchor}"><h2>{_text(self.title)}</h2>'
        return heading + "".join(self.parts) + "</section>"


@dataclass
class Page:
    """The report page: a title, a line of facts, sections, a footer."""

    title: str
    meta: str
    footer: str
    sections: list[Section] = field(default_factory=list)

    def section(self, anchor: str, title: str) -> Section:
        section = Section(anchor, title)
        self.sections.append(section)
        return section

    @property
    def figures(self) -> list[str]:
        return [name for section in self.sections for name in section.figures]

    @property
    def omitted(self) -> list[tuple[str, str]]:
        return [item for section in self.sections for item in section.omitted]

    def render(self) -> str:
        nav = "".join(f'<a href="#{s.anchor}">{_text(s.title)}</a>' for s in self.sections)
        body = "".join(section.render() for section in self.sections)
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_text(self.title)}</title><style>{_STYLE}</style></head>"
            f"<body><main><header><h1>{_text(self.title)}</h1>"
            f'<p class="meta">{inline(self.meta)}</p><nav>{nav}</nav></header>'
            f"{body}<footer>{inline(self.footer)}</footer></main>"
            f"<script>{SCRIPT}</script></body></html>\n"
        )
