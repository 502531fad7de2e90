"""The ``Values`` container: workers' numeric answers for tasks, validated and encoded once."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .hygiene import Hygiene
from .io import TableLike, read_table_rows
from .labels import _DUPLICATE_POLICIES, _duplicate_policy
from .validate import RowNames, reject_missing, show_values

__all__ = ["Values", "as_values"]


class Values:
    """Continuous answers given by workers to tasks, in long format (``task, worker, value``).

    Each row says that ``worker`` answered ``value`` (a number: a price, a count, a coordinate,
    a score) for ``task``. The table is validated once — missing columns, an empty table,
    missing ids or values, values that are not numbers (named with their rows) and infinite
    values are refused — and integer-encoded once; models report results in the user's ids.

    Parameters
    ----------
    data : DataFrame or path
        The answers (CSV/TSV, or Parquet for a ``.parquet`` path).
    task, worker, value : str
        Column names in ``data`` (defaults ``task``, ``worker``, ``value``).
    duplicates : {"keep", "drop", "error"}
        Rows repeating a task–worker pair: ``"keep"`` (default) counts each as a separate answer
        and warns, ``"drop"`` keeps the first and warns, ``"error"`` raises.
    normalize : bool
        Strip the spaces around text ids and put them in Unicode NFC (default; the count of
        values changed is warned). See :mod:`crowdbayes.data.hygiene`.

    Attributes
    ----------
    tasks, workers : pandas.Index
        The user's ids, in order of their integer codes.
    task_codes, worker_codes : ndarray of int
        One entry per answer.
    values : ndarray of float
        The answers.
    data_checks : list of DataCheck
        What the checks before inference found (:mod:`crowdbayes.data.hygiene`).
    """

    def __init__(
        self,
        data: TableLike,
        *,
        task: str = "task",
        worker: str = "worker",
        value: str = "value",
        duplicates: str = "keep",
        normalize: bool = True,
    ) -> None:
        what = "values"
        if duplicates not in _DUPLICATE_POLICIES:
            raise ValueError(f"duplicates must be one of {_DUPLICATE_POLICIES}; got {duplicates!r}")
        df, rows = read_table_rows(data, what=what, id_columns=(task, worker))
        hygiene = Hygiene(what, normalize=normalize, rows=rows)
        df = hygiene.columns(df, {"task": task, "worker": worker, "value": value})
        if len(df) == 0:
            raise ValueError(f"{what}: the table is empty (0 rows)")
        reject_missing(df, (task, worker, value), what, rows)
        numbers = _numeric_column(df[value], value, what, rows)
        task_codes, tasks = hygiene.encode(df[task], task, rows)
        worker_codes, workers = hygiene.encode(df[worker], worker, rows)
        keep, _ = _duplicate_policy(task_codes, worker_codes, tasks, workers, duplicates, hygiene)
        if keep is not None:
            task_codes, worker_codes, numbers = task_codes[keep], worker_codes[keep], numbers[keep]
        hygiene.report_normalized()
        self.tasks: pd.Index = pd.Index(tasks, name="task")
        self.workers: pd.Index = pd.Index(workers, name="worker")
        self.task_codes = task_codes.astype(np.int64, copy=False)
        self.worker_codes = worker_codes.astype(np.int64, copy=False)
        self.values = numbers
        #: what the checks before inference found (:class:`~crowdbayes.data.hygiene.DataCheck`)
        self.data_checks = hygiene.checks

    @property
    def n_tasks(self) -> int:
        return len(self.tasks)

    @property
    def n_workers(self) -> int:
        return len(self.workers)

    @property
    def n_values(self) -> int:
        return len(self.values)

    def require_workers(self, minimum: int, model: str) -> None:
        """Raise if fewer than ``minimum`` distinct workers answered."""
        if self.n_workers < minimum:
            raise ValueError(
                f"{model} learns each worker's bias and noise and needs answers from at least "
                f"{minimum} workers; got {self.n_workers} ({show_values(self.workers)})"
            )

    def to_frame(self) -> pd.DataFrame:
        """The encoded answers back as a ``task, worker, value`` DataFrame in the user's ids."""
        return pd.DataFrame(
            {
                "task": self.tasks[self.task_codes],
                "worker": self.workers[self.worker_codes],
                "value": self.values,
            }
        )

    def __repr__(self) -> str:
        return (
            f"Values({self.n_values} values, {self.n_tasks} tasks, {self.n_workers} workers, "
            f"range [{self.values.min():g}, {self.values.max():g}])"
        )


def _numeric_column(column: pd.Series, name: str, what: str, rows: RowNames) -> np.ndarray:
    """The column as floats; text that is not a number, booleans and infinite values are
    refused with the column, the count and the first rows (and values) named."""
    if pd.api.types.is_bool_dtype(column):
        raise ValueError(f"{what}: column {name!r} holds True/False, not numbers")
    numbers = pd.to_numeric(column, errors="coerce")
    bad = np.flatnonzero(numbers.isna().to_numpy())
    if bad.size:
        raise ValueError(
            f"{what}: column {name!r} has {bad.size} value(s) that are not numbers "
            f"({rows.some(bad)}: {show_values(column.iloc[bad[:5]].tolist())})"
        )
    array = numbers.to_numpy(dtype=np.float64)
    infinite = np.flatnonzero(~np.isfinite(array))
    if infinite.size:
        raise ValueError(
            f"{what}: column {name!r} has {infinite.size} infinite value(s) ({rows.some(infinite)})"
        )
    return array


def as_values(data: Values | TableLike, **kwargs) -> Values:
    """Pass a :class:`Values` through; wrap a DataFrame or path in one (a :class:`Labels` is
    refused: class labels are not numbers to average)."""
    if isinstance(data, Values):
        if kwargs:
            raise TypeError("options such as value= go to Values(...), not to fit()")
        return data
    if not isinstance(data, (pd.DataFrame, str)) and not hasattr(data, "__fspath__"):
        raise TypeError(
            f"expected continuous answers (Values, a DataFrame or a path); got "
            f"{type(data).__name__}"
            + (" (class labels: use a label model)" if type(data).__name__ == "Labels" else "")
        )
    return Values(data, **kwargs)
