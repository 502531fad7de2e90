"""Reading user tables from DataFrames or CSV/Parquet paths, and writing result tables.

The public reading and writing helpers of every command and container: :func:`read_table`
(DataFrame, CSV/TSV, optionally compressed, or Parquet), :func:`read_table_rows` (the same, with
the :class:`~crowdbayes.data.validate.RowNames` that messages name its rows by),
:func:`table_writer` and :func:`write_atomically` (several outputs all-or-nothing, from
:mod:`crowdbayes.persistence`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from ..persistence import write_atomically
from .hygiene import DataCheck, loose_name
from .sniff import SEPARATOR_NAMES, TABLE_FORMATS, sniff_separator, sniff_source
from .source import Source, nul_line
from .validate import POSITIONS, RowNames

__all__ = [
    "TableLike",
    "open_source",
    "read_table",
    "read_table_rows",
    "table_writer",
    "write_atomically",
]

TableLike = pd.DataFrame | str | os.PathLike | Source


def read_table(
    source: TableLike,
    *,
    what: str,
    id_columns: Sequence[str] = (),
    also: str = "",
    columns: Sequence[str] | None = None,
    categorical: bool = False,
) -> pd.DataFrame:
    """Return ``source`` as a DataFrame (:func:`read_table_rows` without the row names).

    A path is read as Parquet when its content is Parquet (or its name ends in
    ``.parquet``/``.pq``), else as CSV (``.tsv``/``.tab``, compressed or not, tab-separated),
    gzip-compressed or not; a UTF-8 byte-order mark, Windows line endings and quoted fields are
    read as usual.

    Identifier columns are read as strings from CSV so that ids such as ``0001`` survive. A
    file that is not a table (a NumPy array, a spreadsheet, other binary data), an empty file
    and a header without rows are refused with one line naming the file and the formats
    accepted (``also`` adds one the caller accepts besides tables, e.g. ``a .npy array``).

    ``columns`` (CSV/TSV): when the header has every column named (exactly or but for case and
    spaces), only those are parsed (the others cost nothing); otherwise the whole table is read,
    so that the caller's messages about missing columns see every column. (pandas does not
    refuse a line with more fields than the header when it reads some columns only: the extra
    fields are not read.) ``categorical``
    (CSV/TSV): identifier columns are read as pandas categories of strings (codes made while
    parsing: far faster than one string object per row for a caller that factorises them).
    """
    return read_table_rows(
        source,
        what=what,
        id_columns=id_columns,
        also=also,
        columns=columns,
        categorical=categorical,
    )[0]


def read_table_rows(
    source: TableLike,
    *,
    what: str,
    id_columns: Sequence[str] = (),
    also: str = "",
    columns: Sequence[str] | None = None,
    categorical: bool = False,
) -> tuple[pd.DataFrame, RowNames]:
    """:func:`read_table`, and the :class:`~crowdbayes.data.validate.RowNames` by which messages
    name the table's rows: their positions for a DataFrame or a Parquet file, their lines for a
    CSV/TSV file. The findings of reading (the separator sniffed) are in ``rows.checks``.

    A file that is not a regular file (a named pipe, a shell's ``<(...)``) is read once, into
    memory (:class:`~crowdbayes.data.source.Source`). A text file's separator is sniffed from
    its header (comma, tab, semicolon or pipe; the name's ``.tsv`` wins ties); a header that
    repeats a column name and a NUL byte anywhere in the file are refused.
    """
    if isinstance(source, pd.DataFrame):
        return source, POSITIONS
    file = source if isinstance(source, Source) else open_source(source, what)
    path = file.path
    kind, head = sniff_source(file, what, also)
    if kind == "parquet":
        table, rows = _read_parquet(file, what), POSITIONS
    else:
        table, rows = _read_text(file, what, id_columns, kind, head, columns, categorical)
    if len(table) == 0:
        raise ValueError(f"{what}: {path} has a header but no rows")
    return table, rows


def open_source(source: str | os.PathLike, what: str) -> Source:
    """The file at ``source`` as a :class:`~crowdbayes.data.source.Source` (a pipe read once,
    now), refused with one line when it is missing, a directory or unreadable.

    A caller that looks at a file before a container reads it (e.g. to detect an export's
    format) opens it with this and passes the source on, so that a pipe is read only once."""
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            f"{what}: expected a pandas DataFrame or a path to a CSV/Parquet file; "
            f"got {type(source).__name__}"
        )
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"{what}: file not found: {path}")
    if path.is_dir():
        raise ValueError(f"{what}: {path} is a directory; give a file ({TABLE_FORMATS})")
    try:
        return Source(path)
    except OSError as err:
        raise ValueError(f"{what}: {path} cannot be read ({err.strerror or err})") from None


def _read_parquet(file: Source, what: str) -> pd.DataFrame:
    try:
        return pd.read_parquet(file.target())
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"{what}: reading Parquet needs pyarrow: pip install 'crowdbayes[parquet]'"
        ) from err
    except (ValueError, OSError, TypeError) as err:  # pyarrow's errors derive from these
        raise ValueError(
            f"{what}: {file.path} is not a readable Parquet file ({_first_line(err)})"
        ) from None


def _read_text(
    file: Source,
    what: str,
    id_columns: Sequence[str],
    kind: str,
    head: str | None,
    columns: Sequence[str] | None = None,
    categorical: bool = False,
) -> tuple[pd.DataFrame, RowNames]:
    from pandas.io.common import infer_compression

    name, path = file.name, file.path
    compression = "gzip" if kind == "gzip" else infer_compression(name, "infer")
    default = "\t" if name.endswith((".tsv", ".tab")) or ".tsv." in name else ","
    sep = sniff_separator(head, default)
    # RowNames finds the line of each row by splitting the file as this reader does (the C
    # reader, which skips blank and whitespace-only lines)
    options = dict(
        sep=sep, compression=compression, encoding="utf-8-sig", engine="c", skip_blank_lines=True
    )
    format_name = "TSV" if sep == "\t" else "CSV"
    try:
        line = nul_line(file, compression)
        if line is not None:
            raise ValueError(
                f"{what}: {path} has a NUL byte (\\x00) on line {line}: a damaged or binary "
                "file; remove it"
            )
        first = pd.read_csv(file.target(), header=None, nrows=1, dtype=str, **options)
        header = [h for h in (first.iloc[0].tolist() if len(first) else []) if isinstance(h, str)]
        _refuse_repeated(header, what, path)
        kind_of_id = "category" if categorical else str
        dtype = {c: kind_of_id for c in _matching(header, id_columns)}
        usecols = None  # every column, unless all those asked for are named in the header
        if columns is not None and all(_matching(header, [c]) for c in columns):
            usecols = _matching(header, columns)
        table = pd.read_csv(
            file.target(), dtype=dtype, usecols=usecols, keep_default_na=True, **options
        )
    except pd.errors.EmptyDataError:
        raise ValueError(f"{what}: {path} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, EOFError, OSError) as err:
        raise ValueError(
            f"{what}: {path} cannot be read as {format_name}: {_first_line(err)}"
        ) from None
    rows = RowNames(file, sep=sep, compression=compression)
    if sep != default:
        rows.checks.append(
            DataCheck(
                "separator",
                f"{what}: {path} read as {SEPARATOR_NAMES[sep]}-separated (from its header)",
                {"columns": len(table.columns)},
                warned=False,
            )
        )
    return table, rows


def _refuse_repeated(header: list[str], what: str, path: Path) -> None:
    """Refuse a header naming a column twice (pandas would rename the second ``x.1`` and the
    first would be used silently)."""
    seen: dict[str, int] = {}
    for position, name in enumerate(header, 1):
        if name in seen:
            raise ValueError(
                f"{what}: {path} names column {name!r} twice in its header (columns "
                f"{seen[name]} and {position}); rename one so that each column has one name"
            )
        seen[name] = position


def _matching(header: list[str], columns: Sequence[str]) -> list[str]:
    """The header names that ``columns`` name, exactly or but for case and spaces."""
    wanted = {loose_name(c) for c in columns if isinstance(c, str)}
    return [h for h in header if h in columns or loose_name(h) in wanted]


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def table_writer(df: pd.DataFrame, *, index: bool = True) -> Callable[[Path], None]:
    """A writer for :func:`write_atomically` choosing CSV/TSV/Parquet by the target's suffix.

    The temporary name keeps the target's extensions (``.csv.gz``, ``.parquet``), so format and
    compression are inferred from it.
    """

    def write(tmp: Path) -> None:
        name = tmp.name.lower()
        if name.endswith((".parquet", ".pq")):
            df.to_parquet(tmp, index=index)
        else:
            sep = "\t" if name.endswith((".tsv", ".tsv.gz")) else ","
            df.to_csv(tmp, sep=sep, index=index)

    return write
