"""What the command line writes must not act on whoever reads it.

- **Spreadsheets.** A CSV cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
  return is run as a formula by Excel, LibreOffice and Google Sheets ("CSV injection", OWASP).
  The ids and labels the commands write come from their inputs, so :func:`formula_cells` finds
  such cells (plain numbers such as ``-1.5`` or ``+3`` are left alone: a spreadsheet reads them
  as numbers) in a table's index, string columns and headers; the commands warn about them, and
  with ``--escape-formulas`` write them prefixed with ``'`` as OWASP recommends (a spreadsheet
  then shows the text, without the quote). Parquet files store typed values, not cells to
  evaluate, and are written as they are.
- **Terminals.** Ids and labels printed in summaries and messages could hold escape sequences
  (colours, cursor moves, a rewritten title bar, ``\\r`` hiding the start of a line, bidi
  overrides reordering it): :func:`terminal_safe` writes every control character as its
  Python escape (``\\x1b``, ``\\u202e``).

Reference: OWASP, "CSV Injection", https://owasp.org/www-community/attacks/CSV_Injection
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from ._messages import printable

__all__ = ["FORMULA_START", "FormulaCells", "formula_cells", "escape_formulas", "terminal_safe"]

#: first characters that make a spreadsheet evaluate a cell (OWASP)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def terminal_safe(text: str) -> str:
    """``text`` with every character a terminal would act on (escape sequences, ``\\r``,
    bidi overrides) written as its escape (``"\\x1b[31m"`` for an ANSI colour code), line by
    line: its line breaks are kept (:func:`._messages.printable` of each line)."""
    return "\n".join(map(printable, text.split("\n")))


def _risky(value: object) -> bool:
    if not isinstance(value, str) or not value.startswith(FORMULA_START):
        return False
    if value[0] in "+-":
        try:
            float(value)
        except ValueError:
            return True
        return False  # a signed number
    return True


def _risky_mask(values) -> tuple[list, list[bool]]:
    """``values`` (an Index or Series) as a list, and which of them are risky: a vectorised
    first-character test, the exact test only on its few hits."""
    import pandas as pd

    text = pd.Series(values, dtype=object)
    items = text.tolist()
    mask = [False] * len(items)
    try:
        candidates = text.str[:1].isin(list(FORMULA_START)).to_numpy()
    except AttributeError:  # pandas refuses .str on objects none of which is a string
        return items, mask
    for position in candidates.nonzero()[0]:
        mask[position] = _risky(items[position])
    return items, mask


@dataclass(frozen=True)
class FormulaCells:
    """How many cells of a table a spreadsheet would run as formulas, and the first one."""

    count: int
    example: str | None


def _string_parts(table):
    """(kind, position, values) of every part of ``table`` that may hold strings: the index
    levels and columns of strings, and the headers (index names and column names)."""
    import pandas as pd

    def strings(values) -> bool:
        return values.dtype == object or isinstance(
            values.dtype, (pd.StringDtype, pd.CategoricalDtype)
        )

    index = table.index
    for level in range(index.nlevels):
        values = index.get_level_values(level)
        if strings(values):
            yield "index", level, values
    for position in range(table.shape[1]):
        column = table.iloc[:, position]
        if strings(column):
            yield "column", position, column
    yield "headers", None, [*index.names, *table.columns]


def formula_cells(table) -> FormulaCells:
    """The cells (ids, labels, headers) of ``table`` that start a formula."""
    count, example = 0, None
    for _, _, values in _string_parts(table):
        items, mask = _risky_mask(values)
        if example is None and any(mask):
            example = str(items[mask.index(True)])
        count += sum(mask)
    return FormulaCells(count, example)


def _escaped(values) -> list:
    items, mask = _risky_mask(values)
    return [f"'{v}" if risky else v for v, risky in zip(items, mask, strict=True)]


def escape_formulas(table):
    """A copy of ``table`` with every cell that starts a formula prefixed with ``'`` (OWASP's
    escaping; a spreadsheet shows the text without the quote)."""
    import pandas as pd

    escaped = table.copy()
    levels = [table.index.get_level_values(i) for i in range(table.index.nlevels)]
    for kind, position, values in _string_parts(table):
        if kind == "column":
            escaped.isetitem(position, pd.Series(_escaped(values), index=table.index, dtype=object))
        elif kind == "index":
            levels[position] = pd.Index(_escaped(values), dtype=object, name=values.name)
    index = pd.MultiIndex.from_arrays(levels) if len(levels) > 1 else levels[0]
    names = _escaped(table.index.names)
    escaped.index = index.set_names(names if len(levels) > 1 else names[0])
    escaped.columns = _escaped(table.columns)
    return escaped


def safe_for_spreadsheets(table, where: str, *, escape: bool):
    """``table`` as it should be written to the CSV ``where``: escaped when ``escape``, else as
    it is, with a warning on stderr when some of its cells start a formula."""
    if escape:
        return escape_formulas(table)
    found = formula_cells(table)
    if found.count:
        example = terminal_safe(repr(found.example))
        print(
            f"crowdbayes: warning: {where}: {found.count} id(s) or label(s) start with =, +, -, "
            f"@, a tab or a carriage return (e.g. {example}), which a spreadsheet may run as a "
            "formula; pass --escape-formulas to write them with a leading '",
            file=sys.stderr,
        )
    return table
