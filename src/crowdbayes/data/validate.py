"""Boundary checks shared by the data containers: messages name the column, value and rows
(a DataFrame's rows by position, a file's by line: :class:`RowNames`)."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .source import Source

__all__ = ["RowNames", "plain", "show_id", "show_values", "reject_missing"]


def plain(value):
    """A NumPy scalar as the Python value it holds (other values as they are)."""
    return value.item() if isinstance(value, np.generic) else value


def show_id(value) -> str:
    """``repr`` of one user id, without numpy's ``np.int64(...)`` wrapper."""
    return repr(plain(value))


def show_values(values: Sequence, limit: int = 5) -> str:
    """``[a, b, c, ...]``: the first few of ``values`` for an error message."""
    values = [plain(v) for v in values]
    shown = ", ".join(repr(v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


class RowNames:
    """How messages name the rows of a table: ``row 4`` or ``line 6``.

    The rows of a DataFrame (or of a Parquet file) are named by their 0-based position, as
    pandas shows them. The rows of a CSV/TSV file are named by the line of the file on which
    they start, counted from 1 as an editor counts them (the header is line 1 when the file
    starts with it), found exactly as pandas' reader splits the file into rows: blank and
    whitespace-only lines are skipped, and a quoted field may run over several lines. The lines
    are found only when a message asks for them, by reading the file again up to the rows
    named (no cost for a valid table). Should that fail (the file was changed or removed in
    between), the rows are named by position.
    """

    def __init__(
        self, path: Path | Source | None = None, *, sep: str = ",", compression: str | None = None
    ) -> None:
        self._path, self._sep, self._compression = path, sep, compression
        #: positions in the table as given of the rows still in the table (None: all of them)
        self._kept: np.ndarray | None = None
        #: the line of each data row of the file, as far as a message has needed them
        self._lines: list[int] = []
        #: findings of reading the table (:class:`~crowdbayes.data.hygiene.DataCheck`)
        self.checks: list = []

    def kept(self, keep: np.ndarray) -> RowNames:
        """The names of the rows left where the boolean mask ``keep`` is true (messages about
        the rows of a filtered table still name the rows of the table as it was given)."""
        names = RowNames(self._path, sep=self._sep, compression=self._compression)
        names._lines = self._lines  # one file: share the lines found so far
        names.checks = self.checks
        positions = np.flatnonzero(keep)
        names._kept = positions if self._kept is None else self._kept[positions]
        return names

    def one(self, position: int) -> str:
        """The name of the row at ``position`` of the table: ``row 4`` or ``line 6``."""
        (number,) = self._numbers([position])
        return f"{self._unit} {number}"

    def some(self, positions: Sequence[int], limit: int = 5) -> str:
        """The first ``limit`` rows of ``positions``: ``row(s) [4, 7]`` or ``line(s) [6, 9]``."""
        shown = self._numbers(list(positions[: limit + 1]))
        return f"{self._unit}(s) {show_values(shown, limit)}"

    @property
    def _unit(self) -> str:
        return "row" if self._path is None else "line"

    def _numbers(self, positions: list[int]) -> list[int]:
        rows = [int(p) if self._kept is None else int(self._kept[p]) for p in positions]
        if self._path is None or not rows:
            return rows
        needed = max(rows) + 1
        if len(self._lines) < needed:
            try:
                self._lines[:] = _row_lines(self._path, self._sep, self._compression, needed)
            except Exception:  # naming the rows must not replace the error it is naming them for
                self._path = None
                return rows
        return [self._lines[r] for r in rows]


#: the rows of a DataFrame: named by position
POSITIONS = RowNames()


def _row_lines(path: Path | Source, sep: str, compression: str | None, count: int) -> list[int]:
    """The line on which each of the first ``count`` data rows of a CSV/TSV file starts.

    Python's ``csv`` reader splits the records as pandas' C reader does (the same quoting and
    line ends); a one-line record that is empty or only whitespace (spaces and tabs, less the
    separator) is a blank line, which pandas skips; the first record left is the header. One
    quirk of pandas' reader is followed too: after a blank line ended by a lone carriage return
    (old Mac line ends), a separator that starts the next line is dropped.
    """
    from pandas.io.common import get_handle  # the decompression read_csv uses

    blank = str.maketrans("", "", " \t".replace(sep, ""))
    lines: list[int] = []
    target = path.target() if isinstance(path, Source) else path
    with get_handle(target, "r", encoding="utf-8-sig", compression=compression) as handles:
        source = _Lines(handles.handle, sep)
        reader = csv.reader(source, delimiter=sep)
        start, header = 1, True
        for _ in reader:
            end = reader.line_num
            if end > start or source.last.rstrip("\r\n").translate(blank):
                if not header:
                    lines.append(start)
                    if len(lines) == count:
                        break
                header = False
            else:
                source.after_blank = source.last.endswith("\r")
            start = end + 1
    if len(lines) < count:
        raise ValueError(f"{path} has fewer rows than when it was read")
    return lines


class _Lines:
    """The lines of a text file for the csv reader, remembering the last one read (the
    reader's current line, when its record is one line); a line that follows a blank line
    ended by a lone carriage return (``after_blank``) loses a leading separator."""

    def __init__(self, handle, sep: str) -> None:
        self._handle, self._sep = iter(handle), sep
        self.last, self.after_blank = "", False

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = next(self._handle)
        if self.after_blank and line.startswith(self._sep):
            line = line[1:]
        self.after_blank = False
        self.last = line
        return line


def reject_missing(
    df: pd.DataFrame, columns: Sequence[str], what: str, rows: RowNames = POSITIONS
) -> None:
    """Refuse missing values in ``columns``, naming the column, the count and the first rows."""
    for col in columns:
        missing = np.flatnonzero(df[col].isna().to_numpy())
        if missing.size:
            raise ValueError(
                f"{what}: column {col!r} has {missing.size} missing value(s) ({rows.some(missing)})"
            )
