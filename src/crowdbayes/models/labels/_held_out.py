"""Which labels may be hidden to score a label model on its own labels, shared by the automatic
model choice (:mod:`.auto`) and the calibration exponent (:mod:`._calibration`).

A label can be hidden when its task keeps at least two other labels and its worker at least one
other (so that a refit still knows the worker and the task). Hidden labels are scored by their
predictive probability, floored at :data:`HELD_OUT_FLOOR`: a model that rules a label out
entirely is penalised by log(1e-6) for it, not by minus infinity.
"""

from __future__ import annotations

import numpy as np

from ...data import Labels

__all__ = ["HELD_OUT_FLOOR", "held_out_folds", "held_out_rows"]

#: the smallest predictive probability a hidden label is scored at
HELD_OUT_FLOOR = 1e-6


def held_out_rows(labels: Labels) -> np.ndarray:
    """Row positions of the labels that may be hidden: from tasks with at least three labels
    and from workers with at least two."""
    per_task = np.bincount(labels.task_codes, minlength=labels.n_tasks)
    per_worker = np.bincount(labels.worker_codes, minlength=labels.n_workers)
    return np.flatnonzero(
        (per_task[labels.task_codes] >= 3) & (per_worker[labels.worker_codes] >= 2)
    )


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
