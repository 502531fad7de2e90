"""Reading user tables from DataFrames or CSV/Parquet paths, and writing result tables.

The public reading and writing helpers of every command and container: :func:`read_table`
(DataFrame, CSV/TSV, optionally compressed, or Parquet), :func:`read_table_rows` (the same, with
the :class:`~crowdbayes.data.validate.RowNames` that messages name its rows by),
:func:`table_writer` and :func:`write_atomically` (several outputs all-or-nothing, from
:mod:`crowdbayes.persistence`).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..persistence import write_atomically
from .hygiene import DataCheck, loose_name
from .sniff import SEPARATOR_NAMES, TABLE_FORMATS, sniff_separator, sniff_source
from .source import Source, nul_line
from .validate import POSITIONS, RowNames

try:  # the compiled reader of identifier columns (setup.py); without it pandas reads them
    from . import _csv_ids
except ImportError:  # pragma: no cover - no C compiler at install time
    _csv_ids = None

__all__ = [
    "TableLike",
    "open_source",
    "read_table",
    "read_table_rows",
    "table_writer",
    "write_atomically",
]

TableLike = pd.DataFrame | str | os.PathLike | Source

#: the strings pandas' CSV reader reads as missing by default (``keep_default_na``; its
#: documented ``na_values`` list): a file whose ids hold one is left to pandas
DEFAULT_NA_STRINGS = frozenset(
    ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN")
    + ("<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")
)


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
    When every column asked for is such a column, a plain uncompressed file (no quotes,
    carriage returns or NUL bytes, every line with the wanted fields) is read by the compiled
    reader :func:`_read_ids_compiled` instead: the same table, in about half pandas' time.
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
    table = None
    if categorical and compression is None and columns is not None:
        table = _read_ids_compiled(file, options, id_columns, columns)
    try:
        if table is None:
            line = nul_line(file, compression)
            if line is not None:
                raise ValueError(
                    f"{what}: {path} has a NUL byte (\\x00) on line {line}: a damaged or "
                    "binary file; remove it"
                )
            names = _header(file, options)
            header = [h for h in names if isinstance(h, str)]
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


def _header(file: Source, options: dict) -> list:
    """The fields of the file's first line as pandas reads them (NaN for an empty one)."""
    first = pd.read_csv(file.target(), header=None, nrows=1, dtype=str, **options)
    return first.iloc[0].tolist() if len(first) else []


def _read_ids_compiled(
    file: Source, options: dict, id_columns: Sequence[str], columns: Sequence[str]
) -> pd.DataFrame | None:
    """The ``columns`` of a plain text file, all of them identifier columns, as the table of
    categories pandas would read (categories sorted, missing values none), by the compiled
    reader ``_csv_ids`` in one pass over the bytes (a regular file mapped into memory, not
    copied); None where pandas must read the file: no compiled reader, a header pandas would
    refuse or whose names do not all match exactly, a file the compiled reader does not handle
    (quotes, carriage returns, NUL bytes, short lines: see its source), an id pandas reads as
    missing (:data:`DEFAULT_NA_STRINGS`). Any of these costs one read of the header."""
    if _csv_ids is None:
        return None
    try:
        names = _header(file, options)
    except (ValueError, OSError, UnicodeDecodeError, EOFError):  # pandas' errors derive from these
        return None  # said again by the reader proper
    positions = {n: i for i, n in enumerate(names) if isinstance(n, str)}
    header = list(positions)
    # the columns pandas would read (usecols) and read as categories (dtype): exactly these
    usecols = _matching(header, columns)
    if (
        len(positions) != len(names)
        or sorted(usecols) != sorted(columns)
        or not set(usecols) <= set(_matching(header, id_columns))
    ):
        return None
    order = sorted(positions[c] for c in columns)
    try:
        if file.data is not None:
            found = _csv_ids.read_ids(file.data, ord(options["sep"]), order, len(names))
        else:
            with (
                open(file.path, "rb") as handle,
                mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data,
            ):
                found = _csv_ids.read_ids(data, ord(options["sep"]), order, len(names))
    except (OSError, ValueError):  # a file that cannot be mapped (empty, special): pandas reads it
        return None
    if found is None:
        return None
    _, read = found
    frame = {}
    for position, (codes, values) in zip(order, read, strict=True):
        if not DEFAULT_NA_STRINGS.isdisjoint(values):
            return None
        frame[names[position]] = _sorted_categorical(codes, values)
    return pd.DataFrame(frame)


def _sorted_categorical(codes: bytearray, values: list[str]) -> pd.Categorical:
    """Codes (int32 bytes) of ``values`` (order of first appearance) as a categorical whose
    categories are sorted, as pandas' reader infers them (codes in the narrowest integers)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    narrow = np.int8 if len(values) < 2**7 else np.int16 if len(values) < 2**15 else np.int32
    rank = np.empty(len(values), dtype=narrow)
    rank[order] = np.arange(len(values), dtype=narrow)
    categories = pd.Index([values[i] for i in order])
    return pd.Categorical.from_codes(
        rank[np.frombuffer(codes, dtype=np.int32)],
        dtype=pd.CategoricalDtype(categories),
        validate=False,  # every code is one of the values'
    )


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
