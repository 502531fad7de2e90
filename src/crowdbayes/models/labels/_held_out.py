"""Which labels may be hidden to score a label model on its own labels, shared by the automatic
model choice (:mod:`.auto`) and the calibration exponent (:mod:`._calibration`,
:mod:`._difficulty`), and the pieces the calibration exponent's two parts share.

A label can be hidden when its task keeps at least two other labels and its worker at least one
other (so that a refit still knows the worker and the task). Hidden labels are scored by their
predictive probability, floored at :data:`HELD_OUT_FLOOR`: a model that rules a label out
entirely is penalised by log(1e-6) for it, not by minus infinity.

The calibration exponent's parts both read a label against its worker's confusion rows
without it (:func:`rows_without_label`: the Dirichlet concentration :math:`A_{jk:}` less the
label's expected count :math:`p(c_i = k \\mid x)\\, e_{x_{ij}}`), and both choose an exponent
of the tempered family :math:`p_a \\propto p^a` (:func:`temper`) in :math:`[a_{\\min}, 1]`
(:func:`best_exponent`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import softmax

from ...data import Labels
from ._base import feedback_tasks

__all__ = [
    "HELD_OUT_FLOOR",
    "MIN_EXPONENT",
    "best_exponent",
    "held_out_folds",
    "held_out_rows",
    "fixed_overlap",
    "earlier_in_task",
    "prequential_rows",
    "rows_without_label",
    "temper",
]

#: the smallest predictive probability a hidden label is scored at
HELD_OUT_FLOOR = 1e-6
#: the smallest exponent searched: a = 0.05 already makes a 0.99 posterior of two classes 0.56
MIN_EXPONENT = 0.05


def held_out_rows(labels: Labels) -> np.ndarray:
    """Row positions of the labels that may be hidden: from tasks with at least three labels
    and from workers with at least two."""
    per_task = np.bincount(labels.task_codes, minlength=labels.n_tasks)
    per_worker = np.bincount(labels.worker_codes, minlength=labels.n_workers)
    return np.flatnonzero(
        (per_task[labels.task_codes] >= 3) & (per_worker[labels.worker_codes] >= 2)
    )


def fixed_overlap(labels: Labels) -> bool:
    """Every task with labels has the same number of them: no label was asked for because of
    another's answer (``._calibration``'s docstring)."""
    per_task = np.bincount(labels.task_codes, minlength=labels.n_tasks)
    return bool(np.ptp(per_task[per_task > 0]) == 0)


def task_order(labels: Labels) -> tuple[np.ndarray, np.ndarray]:
    """The rows grouped by task in the order given (``order``) and, per sorted row, its place
    among its task's labels (``place``: 0 for the task's first label)."""
    order = np.lexsort((np.arange(labels.n_labels), labels.task_codes))
    tasks = labels.task_codes[order]
    first = np.flatnonzero(np.r_[True, tasks[1:] != tasks[:-1]])
    place = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
    return order, place


def prequential_rows(labels: Labels) -> np.ndarray:
    """Row positions of the labels a prequential check scores: each label with at least two
    labels of its task before it in the order given, from a worker with at least two (the
    check reads each against its task's earlier labels only; ``._calibration``)."""
    order, place = task_order(labels)
    per_worker = np.bincount(labels.worker_codes, minlength=labels.n_workers)
    rows = order[place >= 2]
    return np.sort(rows[per_worker[labels.worker_codes[rows]] >= 2])


def earlier_in_task(labels: Labels, values: np.ndarray) -> np.ndarray:
    """Per row, the sum of ``values`` (n_labels, K) over the labels of its task that come
    before it in the order given."""
    order, place = task_order(labels)
    sorted_values = values[order]
    running = np.cumsum(sorted_values, axis=0) - sorted_values  # before the row
    earlier = np.empty_like(values)
    # less the running sum at the task's first row (``place`` rows back)
    earlier[order] = running - running[np.arange(len(order)) - place]
    return earlier


def held_out_folds(labels: Labels, n_folds: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Row positions of the labels hidden in each fold: at most one label of each task per
    fold, among :func:`held_out_rows`."""
    shuffled = rng.permutation(held_out_rows(labels))
    # the rank of each shuffled row among its task's rows: fold f hides the rows of rank f
    order = np.argsort(labels.task_codes[shuffled], kind="stable")
    tasks = labels.task_codes[shuffled][order]
    starts = np.r_[0, np.flatnonzero(np.diff(tasks)) + 1]
    rank = np.arange(len(tasks)) - np.repeat(starts, np.diff(np.r_[starts, len(tasks)]))
    rows = shuffled[order]
    return [np.sort(rows[rank == fold]) for fold in range(n_folds)]


def rows_without_label(
    labels: Labels, rows: np.ndarray, probas: np.ndarray, concentration: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the labels at positions ``rows``, each (n, K) over the classes k: the total
    :math:`\\sum_x A_{jkx}` of the label's worker's row k in ``concentration`` (workers, K, K),
    its entry :math:`A_{jkx_{ij}}` at the label, and the label's expected count in the row,
    :math:`p(c_i = k \\mid x)` from class-major ``probas`` (K, n_tasks) where the task fed
    back into the rows (0 where not). The row without the label is the first two less the
    third; how to floor the difference is the caller's. Gathers (n, K), never the (n, K, K)
    rows themselves."""
    tasks, workers = labels.task_codes[rows], labels.worker_codes[rows]
    totals = concentration.sum(axis=2)[workers]
    own = concentration[workers, :, labels.label_codes[rows]]
    weight = (probas[:, tasks] * feedback_tasks(labels)[tasks]).T
    return totals, own, weight


def best_exponent(loss: Callable[[float], float]) -> float:
    """The exponent in [:data:`MIN_EXPONENT`, 1] of the smallest ``loss``: a bounded scalar
    search (Brent) to 1e-3, and 1 itself where it does at least as well (the bounded search
    never evaluates the end point)."""
    best = minimize_scalar(
        loss, bounds=(MIN_EXPONENT, 1.0), method="bounded", options={"xatol": 1e-3}
    )
    return 1.0 if loss(1.0) <= best.fun else float(best.x)


def temper(probas: np.ndarray, exponent: float) -> np.ndarray:
    """Class-major (K, n_tasks) ``probas`` raised to ``exponent`` and normalised per task."""
    if exponent == 1.0:
        return probas
    with np.errstate(divide="ignore"):
        return softmax(exponent * np.log(probas), axis=0)
