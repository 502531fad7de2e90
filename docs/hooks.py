"""MkDocs hook: the parts of the documentation that come from the code, so that they cannot
drift from it.

A page asks for a part with an HTML comment on a line of its own, replaced when the site is
built:

- ``<!-- generated: cli-reference -->`` — the ``--help`` of every command, walked from the
  parser of :func:`crowdbayes.cli._parser` (``docs/cli.md``);
- ``<!-- generated: model-tables -->`` — the model table of every ``fit`` command, from
  :func:`crowdbayes.cli._models.readme_tables`, the table that builds the parser
  (``docs/models.md``);
- ``<!-- generated: api-models -->`` — a mkdocstrings entry for every model of
  :func:`crowdbayes.list_models`, grouped by kind of judgment (``docs/api/models.md``);
- ``<!-- generated: benchmark-reports -->`` — every report in ``benchmarks/*/results/`` with
  its title and the command its header records (``docs/benchmarks.md``).

``tests/test_docs.py`` imports this file and checks each part.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: help text is wrapped at this width whatever the terminal that builds the site
HELP_WIDTH = 100
#: the kinds of judgment of the models (their ``tags.judgment``), in the order of the pages
JUDGMENTS = {
    "labels": "Class labels and grades",
    "values": "Numbers",
    "rankings": "Rankings and choices",
    "pairs": "Pairwise comparisons",
    "links": "Same/different links",
}
_MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its sub-parsers here only
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def walk_commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("crowdbayes",)
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command of the parser, depth first: ``(("crowdbayes", "labels", "fit"), parser)``."""
    yield path, parser
    for name, sub in _subcommands(parser).items():
        yield from walk_commands(sub, (*path, name))


def cli_reference() -> str:
    """One section per command with its ``--help``."""
    from crowdbayes.cli import _parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_WIDTH)  # argparse wraps at the terminal's width
    try:
        sections = []
        for path, parser in walk_commands(_parser()):
            level = "#" * min(len(path) + 1, 4)
            text = parser.format_help().rstrip()
            sections.append(f"{level} `{' '.join(path)}`\n\n```text\n{text}\n```")
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return "\n\n".join(sections)


def model_tables() -> str:
    """The model table of every ``fit`` command."""
    from crowdbayes.cli._models import readme_tables

    return readme_tables()


def api_models() -> str:
    """A mkdocstrings entry per model, under a heading per kind of judgment."""
    import crowdbayes

    by_kind: dict[str, list[str]] = {kind: [] for kind in JUDGMENTS}
    for cls in crowdbayes.list_models():
        by_kind[cls.tags.judgment].append(f"::: {cls.__module__}.{cls.__name__}")
    return "\n\n".join(
        f"## {title}\n\n" + "\n\n".join(sorted(by_kind[kind], key=lambda e: e.rsplit(".", 1)[1]))
        for kind, title in JUDGMENTS.items()
    )


_COMMAND = re.compile(r"`((?:[A-Z_]+=\S+ )*\S*python\S* [^`]+)`")


def report_command(text: str) -> str:
    """The command a report's header records (its first lines), or ``""``."""
    match = _COMMAND.search("\n".join(text.splitlines()[:12]))
    if match is None:  # a few reports give it as a plain line
        lines = [ln.strip() for ln in text.splitlines()[:12] if ".py" in ln and "python" in ln]
        return lines[0] if lines else ""
    return match.group(1)


def benchmark_reports() -> str:
    """A table of every committed report: path, title, command."""
    rows = ["| report | title | command |", "| --- | --- | --- |"]
    for path in sorted(REPO.glob("benchmarks/*/results/*.md")):
        text = path.read_text(encoding="utf-8")
        title = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), "")
        command = report_command(text) or "(hand-written notes)"
        cells = [f"`{path.relative_to(REPO)}`", title, f"`{command}`"]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


GENERATORS = {
    "cli-reference": cli_reference,
    "model-tables": model_tables,
    "api-models": api_models,
    "benchmark-reports": benchmark_reports,
}


def expand(markdown: str) -> str:
    """The page with every marker replaced by its generated part (an unknown marker is an
    error, so that a misspelt one cannot leave a hole in the site)."""

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated part {name!r}; known: {sorted(GENERATORS)}")
        return GENERATORS[name]()

    return _MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, **kwargs) -> str:
    """MkDocs event: expand the markers of a page before it is rendered."""
    return expand(markdown)
