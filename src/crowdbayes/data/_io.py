"""Reading user tables from DataFrames or CSV/Parquet paths, and writing results atomically."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

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


def write_atomically(path: str | os.PathLike, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp_path)`` then move the temporary file onto ``path``.

    A failure in ``write`` leaves no partial output file behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=f"-{path.name}", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        write(tmp_path)
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_table(df: pd.DataFrame, path: str | os.PathLike, *, index: bool = True) -> None:
    """Write ``df`` to CSV (or Parquet by suffix) atomically."""
    suffix = Path(path).name.lower()
    if suffix.endswith((".parquet", ".pq")):
        write_atomically(path, lambda p: df.to_parquet(p, index=index))
    else:
        sep = "\t" if suffix.endswith((".tsv", ".tsv.gz")) else ","
        write_atomically(path, lambda p: df.to_csv(p, sep=sep, index=index))
