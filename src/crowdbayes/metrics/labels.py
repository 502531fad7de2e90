"""Metrics for inferred class labels, scored against gold labels.

Every metric takes ``gold``, a Series of true classes indexed by task id, and predictions indexed
by the same task ids (a Series of classes, or a DataFrame of class probabilities with one column
per class, as returned by ``predict`` and ``predict_proba``). Only the gold tasks are scored;
every one of them must have a prediction. Ids are matched exactly: ``1`` and ``"1"`` are
different tasks, and the error says so when that is why ids fail to match.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = [
    "accuracy",
    "brier_score",
    "log_loss",
    "mean_absolute_error",
    "worker_recovery_error",
]


def _show(values: Sequence, limit: int = 5) -> str:
    values = list(values)
    shown = ", ".join(repr(v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def _check_gold(gold: pd.Series) -> pd.Series:
    if not isinstance(gold, pd.Series):
        raise TypeError(
            f"gold must be a pandas Series of classes indexed by task; got {type(gold).__name__}"
        )
    if len(gold) == 0:
        raise ValueError("gold: no gold labels to score against (empty Series)")
    missing = int(gold.isna().sum())
    if missing:
        raise ValueError(f"gold: {missing} task(s) have a missing gold label")
    if gold.index.has_duplicates:
        dup = gold.index[gold.index.duplicated()].unique()
        raise ValueError(f"gold: task(s) listed more than once: {_show(dup)}")
    return gold


def _positions(gold_index: pd.Index, index: pd.Index, what: str) -> np.ndarray:
    """Row of ``index`` holding each gold task; raises naming the gold tasks that are absent."""
    if index.has_duplicates:
        dup = index[index.duplicated()].unique()
        raise ValueError(f"{what}: task(s) listed more than once: {_show(dup)}")
    positions = index.get_indexer(gold_index)
    absent = np.flatnonzero(positions < 0)
    if absent.size:
        missing_ids = gold_index[absent]
        message = (
            f"{what}: {absent.size} of {len(gold_index)} gold task(s) have no prediction: "
            f"{_show(missing_ids)}"
        )
        as_text = set(map(str, index))
        if any(str(t) in as_text for t in missing_ids):
            message += (
                f". The ids differ only in type (gold index dtype {gold_index.dtype}, "
                f"{what} index dtype {index.dtype}); ids are not converted, so make them match, "
                "e.g. gold.index = gold.index.astype(str)"
            )
        raise ValueError(message)
    return positions


def _gold_columns(gold: pd.Series, probas: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of the gold tasks (n, K) and the column of each task's gold class."""
    if not isinstance(probas, pd.DataFrame):
        raise TypeError(
            "probas must be a pandas DataFrame indexed by task with one column per class; "
            f"got {type(probas).__name__}"
        )
    rows = _positions(gold.index, probas.index, "probas")
    if probas.columns.has_duplicates:
        raise ValueError(f"probas: class columns repeat: {list(probas.columns)}")
    columns = probas.columns.get_indexer(gold.to_numpy())
    unknown = np.flatnonzero(columns < 0)
    if unknown.size:
        bad = pd.unique(gold.to_numpy()[unknown])
        raise ValueError(
            f"gold: {unknown.size} gold label(s) are not among the probas columns "
            f"{list(probas.columns)}: {_show(bad)}"
        )
    values = probas.to_numpy(dtype=np.float64)[rows]
    if not np.all(np.isfinite(values)):
        raise ValueError("probas: the gold tasks' probabilities contain NaN or infinite values")
    if np.any(values < 0) or np.any(values > 1):
        raise ValueError("probas: probabilities must lie in [0, 1]")
    return values, columns


def accuracy(gold: pd.Series, predicted: pd.Series) -> float:
    """Fraction of gold tasks whose predicted class equals the gold class.

    Parameters
    ----------
    gold : Series
        True classes indexed by task.
    predicted : Series
        Predicted classes indexed by task; must cover every gold task (extra tasks are ignored).
    """
    gold = _check_gold(gold)
    if not isinstance(predicted, pd.Series):
        raise TypeError(
            f"predicted must be a pandas Series indexed by task; got {type(predicted).__name__}"
        )
    rows = _positions(gold.index, predicted.index, "predicted")
    hits = predicted.to_numpy()[rows] == gold.to_numpy()
    return float(np.mean(hits))


def log_loss(gold: pd.Series, probas: pd.DataFrame, eps: float = 1e-15) -> float:
    """Mean negative log probability given to the gold class.

    ``-mean_i log(clip(p_i[gold_i], eps, 1))``: probabilities are clipped to ``[eps, 1]`` so a
    confident mistake costs ``-log(eps)`` (about 34.5 for the default) instead of infinity.
    Rows are used as given, not renormalised; only the gold class's probability enters.

    Parameters
    ----------
    gold : Series
        True classes indexed by task.
    probas : DataFrame
        Class probabilities indexed by task, one column per class; must cover every gold task
        and have a column for every gold class.
    eps : float
        Lower clipping bound, in (0, 1).
    """
    if not 0.0 < eps < 1.0:
        raise ValueError(f"eps must lie strictly between 0 and 1; got {eps}")
    gold = _check_gold(gold)
    values, columns = _gold_columns(gold, probas)
    p = np.clip(values[np.arange(len(columns)), columns], eps, 1.0)
    return float(-np.mean(np.log(p)))


def brier_score(gold: pd.Series, probas: pd.DataFrame) -> float:
    """Multi-class Brier score: ``mean_i sum_k (p_ik - [k == gold_i])^2`` (0 is perfect, 2 worst).

    Parameters are as for :func:`log_loss`.
    """
    gold = _check_gold(gold)
    values, columns = _gold_columns(gold, probas)
    onehot = np.zeros_like(values)
    onehot[np.arange(len(columns)), columns] = 1.0
    return float(np.mean(np.sum((values - onehot) ** 2, axis=1)))


def mean_absolute_error(
    gold: pd.Series, predicted: pd.Series | pd.DataFrame, classes: Sequence | None = None
) -> float:
    """Mean absolute error in grade steps, for ordered classes.

    A grade's position in ``classes`` (lowest first) is its value, so with grades coded
    ``0, 1, 2, 3`` the error is the plain difference. ``predicted`` is either a Series of grades
    (hard predictions: ``mean_i |pos(pred_i) - pos(gold_i)|``) or a DataFrame of probabilities
    with one column per grade (the posterior's expected absolute error,
    ``mean_i sum_k p_ik |k - pos(gold_i)|``; rows are used as given).

    Parameters
    ----------
    gold : Series
        True grades indexed by task.
    predicted : Series or DataFrame
        Predicted grades, or grade probabilities, indexed by task; must cover every gold task.
    classes : sequence, optional
        The grades in order, lowest first. Default: the DataFrame's columns in their order, or,
        for a Series, the sorted distinct grades when they are numbers (text grades need
        ``classes``).
    """
    gold = _check_gold(gold)
    if isinstance(predicted, pd.DataFrame):
        order = pd.Index(predicted.columns if classes is None else list(classes))
        missing = [c for c in order if c not in predicted.columns]
        if missing:
            raise ValueError(f"probas: no column for grade(s) {_show(missing)}")
        values, columns = _gold_columns(gold, predicted[order])
        distance = np.abs(np.arange(len(order))[None, :] - columns[:, None])
        return float(np.mean(np.sum(values * distance, axis=1)))
    if not isinstance(predicted, pd.Series):
        raise TypeError(
            "predicted must be a pandas Series of grades or a DataFrame of grade probabilities "
            f"indexed by task; got {type(predicted).__name__}"
        )
    rows = _positions(gold.index, predicted.index, "predicted")
    guessed = predicted.to_numpy()[rows]
    if classes is None:
        seen = pd.unique(np.concatenate([gold.to_numpy(), guessed]))
        numeric = (int, float, np.number)
        if not all(isinstance(v, numeric) and not isinstance(v, bool) for v in seen):
            raise ValueError(
                "mean_absolute_error: the grades are not numbers; pass classes=[...] in "
                f"order, lowest first (got {_show(seen)})"
            )
        classes = sorted(seen)
    order = pd.Index(list(classes))
    positions = []
    for what, values in (("gold", gold.to_numpy()), ("predicted", guessed)):
        codes = order.get_indexer(values)
        unknown = np.flatnonzero(codes < 0)
        if unknown.size:
            raise ValueError(
                f"{what}: {unknown.size} grade(s) are not among the classes {list(order)}: "
                f"{_show(pd.unique(values[unknown]))}"
            )
        positions.append(codes)
    return float(np.mean(np.abs(positions[1] - positions[0])))


def worker_recovery_error(
    true_confusion: np.ndarray | pd.DataFrame, estimated_confusion: np.ndarray | pd.DataFrame
) -> float:
    """Mean absolute error between true and estimated worker parameters, over workers and cells.

    Typically arrays of shape (n_workers, K, K) of confusion matrices, but any matching shape
    works (e.g. (n_workers, 2) sensitivities and specificities). When both are DataFrames the
    estimate is aligned to the true one by index and columns, which must all be present.
    """
    if isinstance(true_confusion, pd.DataFrame) and isinstance(estimated_confusion, pd.DataFrame):
        missing_rows = true_confusion.index.difference(estimated_confusion.index)
        missing_cols = true_confusion.columns.difference(estimated_confusion.columns)
        if len(missing_rows) or len(missing_cols):
            raise ValueError(
                "estimated_confusion lacks rows or columns of true_confusion: "
                f"{len(missing_rows)} row(s) {_show(missing_rows)}, "
                f"{len(missing_cols)} column(s) {_show(missing_cols)}"
            )
        estimated_confusion = estimated_confusion.loc[true_confusion.index, true_confusion.columns]
    true = np.asarray(true_confusion, dtype=np.float64)
    est = np.asarray(estimated_confusion, dtype=np.float64)
    if true.shape != est.shape:
        raise ValueError(
            f"true_confusion has shape {true.shape} but estimated_confusion has shape {est.shape}"
        )
    if true.size == 0:
        raise ValueError("worker_recovery_error: the arrays are empty")
    if not (np.all(np.isfinite(true)) and np.all(np.isfinite(est))):
        raise ValueError("worker_recovery_error: the arrays contain NaN or infinite values")
    return float(np.mean(np.abs(true - est)))
