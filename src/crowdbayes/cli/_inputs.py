"""Reading the side tables of a command: id lists, ``id, label`` tables, feature tables, and ids
read as text matched to a model's ids.

Imported by the command handlers only (pandas is loaded when a command runs, not when the
parser is built).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..data.io import read_table, read_table_rows

__all__ = [
    "feature_frame",
    "id_column",
    "ids_like",
    "integer_ids",
    "is_npy",
    "read_columns",
    "read_npy",
    "task_labels",
]


def read_columns(path: str, what: str, columns: tuple[str, ...], ids=()) -> pd.DataFrame:
    """The table at ``path`` (``ids``: columns read as text), refused without ``columns``."""
    table = read_table(path, what=what, id_columns=tuple(ids) or columns)
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(
            f"{what}: column {missing[0]!r} is missing; got {list(map(str, table.columns))}"
        )
    return table


def task_labels(path: str, what: str, task: str, label: str) -> pd.Series:
    """A ``task, label`` table as a Series of labels indexed by task."""
    table = read_columns(path, what, (task, label), ids=(task,))
    return table.set_index(task)[label]


def id_column(path: str, column: str, what: str) -> pd.Index:
    """The ids in ``column`` of the table at ``path`` (read as text), in order, once each."""
    table, rows = read_table_rows(path, what=what, id_columns=(column,))
    if column not in table.columns:
        raise ValueError(
            f"{what}: column {column!r} is missing; got {list(map(str, table.columns))}"
        )
    values = table[column]
    missing = np.flatnonzero(values.isna().to_numpy())
    if missing.size:
        raise ValueError(f"{what}: {missing.size} row(s) have no {column} ({rows.some(missing)})")
    return pd.Index(values.unique(), name=column)


def feature_frame(path: str | None, column: str, what: str) -> pd.DataFrame | None:
    """A feature table indexed by its ``column`` of ids (None without a path)."""
    if path is None:
        return None
    return read_columns(path, what, (column,)).set_index(column)


def ids_like(values, known: pd.Index) -> np.ndarray:
    """Ids read from a file are text: as integers when the model's ids are integers and every
    value is a whole number; unknown ids stay as given (a task with no label yet, a new
    worker)."""
    values = pd.Series(np.asarray(values, dtype=object))
    if not pd.api.types.is_integer_dtype(known) or values.empty:
        return values.to_numpy()
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.notna().all() and (numbers == numbers.round()).all():
        return numbers.astype(np.int64).to_numpy()
    return values.to_numpy()


def read_npy(path: str) -> np.ndarray:
    if not Path(path).exists():
        raise FileNotFoundError(f"features: file not found: {path}")
    try:
        values = np.load(path, allow_pickle=False)
    except ValueError as err:
        raise ValueError(f"features: {path} is not a numeric .npy array ({err})") from None
    if values.ndim < 2 or len(values) == 0:
        raise ValueError(
            f"features: expected an array of shape (n_items, n_features, ...); got {values.shape}"
        )
    if not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
        raise ValueError(f"features: the array must be numeric; got dtype {values.dtype}")
    values = values.astype(np.float32 if values.dtype == np.float32 else np.float64)
    bad = ~np.isfinite(values.reshape(len(values), -1))
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(
            f"features: {int(bad.any(axis=1).sum())} row(s) hold missing or infinite values "
            f"(first: item {row})"
        )
    return values


def is_npy(path: str) -> bool:
    """Whether ``path`` names a NumPy ``.npy`` array: by its name, or by its content."""
    if path.lower().endswith(".npy"):
        return True
    try:
        with open(path, "rb") as handle:
            return handle.read(6) == b"\x93NUMPY"
    except OSError:
        return False  # the table reader names the problem


def integer_ids(table: pd.DataFrame, columns: tuple[str, str], rows) -> pd.DataFrame:
    """Ids read as text from a file become integers, to index the rows of a .npy array
    (``rows`` names the file's rows in messages)."""
    table = table.copy()
    for column in columns:
        if column not in table.columns:
            continue  # Links names the missing column
        values = pd.to_numeric(table[column], errors="coerce")
        bad = values.isna() | (values != values.round())
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(
                f"links: column {column!r} must hold integer row numbers of the .npy features; "
                f"got {table[column].iloc[row]!r} on {rows.one(row)}"
            )
        table[column] = values.astype(np.int64)
    return table
