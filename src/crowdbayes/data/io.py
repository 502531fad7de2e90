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
from .sniff import TABLE_FORMATS, sniff_table
from .validate import POSITIONS, RowNames

__all__ = [
    "TableLike",
    "read_table",
    "read_table_rows",
    "table_writer",
    "write_atomically",
]

TableLike = pd.DataFrame | str | os.PathLike


def read_table(
    source: TableLike, *, what: str, id_columns: Sequence[str] = (), also: str = ""
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
    """
    return read_table_rows(source, what=what, id_columns=id_columns, also=also)[0]


def read_table_rows(
    source: TableLike, *, what: str, id_columns: Sequence[str] = (), also: str = ""
) -> tuple[pd.DataFrame, RowNames]:
    """:func:`read_table`, and the :class:`~crowdbayes.data.validate.RowNames` by which messages
    name the table's rows: their positions for a DataFrame or a Parquet file, their lines for a
    CSV/TSV file."""
    if isinstance(source, pd.DataFrame):
        return source, POSITIONS
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
    kind = sniff_table(path, what=what, also=also)
    if kind == "parquet":
        table, rows = _read_parquet(path, what), POSITIONS
    else:
        table, rows = _read_text(path, what, id_columns, "gzip" if kind == "gzip" else "infer")
    if len(table) == 0:
        raise ValueError(f"{what}: {path} has a header but no rows")
    return table, rows


def _read_parquet(path: Path, what: str) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"{what}: reading Parquet needs pyarrow: pip install 'crowdbayes[parquet]'"
        ) from err
    except (ValueError, OSError, TypeError) as err:  # pyarrow's errors derive from these
        raise ValueError(
            f"{what}: {path} is not a readable Parquet file ({_first_line(err)})"
        ) from None


def _read_text(
    path: Path, what: str, id_columns: Sequence[str], compression: str
) -> tuple[pd.DataFrame, RowNames]:
    name = path.name.lower()
    sep = "\t" if name.endswith((".tsv", ".tab")) or ".tsv." in name else ","
    # RowNames finds the line of each row by splitting the file as this reader does (the C
    # reader, which skips blank and whitespace-only lines)
    options = dict(
        sep=sep, compression=compression, encoding="utf-8-sig", engine="c", skip_blank_lines=True
    )
    try:
        header = pd.read_csv(path, nrows=0, **options).columns
        dtype = {c: str for c in id_columns if c in header}
        table = pd.read_csv(path, dtype=dtype, keep_default_na=True, **options)
        return table, RowNames(path, sep=sep, compression=compression)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{what}: {path} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, EOFError, OSError) as err:
        format_name = "TSV" if sep == "\t" else "CSV"
        raise ValueError(
            f"{what}: {path} cannot be read as {format_name}: {_first_line(err)}"
        ) from None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def table_writer(df: pd.DataFrame, *, index: bool = True) -> Callable[[Path], None]:
    """A writer for :func:`write_atomically` choosing CSV/TSV/Parquet by the target's suffix.

    The temporary file keeps the target's name as its suffix, so compression is inferred too.
    """

    def write(tmp: Path) -> None:
        name = tmp.name.lower()
        if name.endswith((".parquet", ".pq")):
            df.to_parquet(tmp, index=index)
        else:
            sep = "\t" if name.endswith((".tsv", ".tsv.gz")) else ","
            df.to_csv(tmp, sep=sep, index=index)

    return write
