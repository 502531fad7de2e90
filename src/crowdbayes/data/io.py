"""Reading user tables from DataFrames or CSV/Parquet paths, and writing result tables.

The public reading and writing helpers of every command and container: :func:`read_table`
(DataFrame, CSV/TSV, optionally compressed, or Parquet), :func:`table_writer` and
:func:`write_atomically` (several outputs all-or-nothing, from :mod:`crowdbayes.persistence`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from ..persistence import write_atomically

__all__ = ["TableLike", "read_table", "table_writer", "write_atomically"]

TableLike = pd.DataFrame | str | os.PathLike


def read_table(source: TableLike, *, what: str, id_columns: Sequence[str] = ()) -> pd.DataFrame:
    """Return ``source`` as a DataFrame; paths ending in ``.parquet``/``.pq`` are read as Parquet,
    anything else as CSV (``.tsv`` and ``.tsv.gz`` tab-separated).

    Identifier columns are read as strings from CSV so that ids such as ``0001`` survive.
    """
    if isinstance(source, pd.DataFrame):
        return source
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            f"{what}: expected a pandas DataFrame or a path to a CSV/Parquet file; "
            f"got {type(source).__name__}"
        )
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(f"{what}: file not found: {path}")
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        try:
            return pd.read_parquet(path)
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError(
                f"{what}: reading Parquet needs pyarrow: pip install 'crowdbayes[parquet]'"
            ) from err
    sep = "\t" if name.endswith((".tsv", ".tsv.gz", ".tab")) else ","
    try:
        header = pd.read_csv(path, sep=sep, nrows=0).columns
    except pd.errors.EmptyDataError as err:
        raise ValueError(f"{what}: the file {path} is empty") from err
    dtype = {c: str for c in id_columns if c in header}
    return pd.read_csv(path, sep=sep, dtype=dtype, keep_default_na=True)


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
