"""Confusion-matrix workers (Dawid & Skene 1979) and their one-coin special case.

Notation: ``A`` is the sparse (tasks × workers·K) count matrix of :class:`~crowdbayes.Labels`
(``A[i, j*K + x]`` = how often worker ``j`` said ``x`` on task ``i``); ``log_conf`` has shape
(workers, true class, observed class). Then for every task ``i`` and candidate class ``k``

    log p(labels of i | c_i = k) = Σ_{j,x} A[i, jK+x] · log θ[j, k, x]  = (A @ T)[i, k],

with ``T[jK+x, k] = log θ[j, k, x]``, and the expected counts of the M-step / VB update are

    n[j, k, x] = Σ_i A[i, jK+x] · r[i, k]  = (Aᵀ @ r)[jK+x, k].

Both are single sparse–dense products, linear in the number of labels.
"""

from __future__ import annotations

import numpy as np

from ..data import Labels
from ..data.labels import LabelBlock
from ..maths import finite_sum
from .confusion_pass import confusion_map

__all__ = [
    "label_log_likelihood",
    "confusion_statistics",
    "confusion_counts",
    "full_confusion_map",
    "one_coin_map",
    "full_confusion_log_prior",
    "one_coin_log_prior",
]


def label_log_likelihood(labels: Labels, log_conf: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-task log-likelihood of each candidate class, up to a per-task constant.

    Returns ``(relative, offset)`` with the class-major (K, n_tasks) array
    ``relative[k, i] = log p(x_i | c_i = k) − log p(x_i | c_i = K−1)`` (the last row is 0)
    and ``offset = Σ_i log p(x_i | c_i = K−1)``. Posteriors over c_i are unchanged by the
    per-task shift, and the total evidence is
    ``Σ_i logsumexp_k(log π_k + relative[k, i]) + offset``. The shift saves one of the K sparse
    products, and the offset is a dot product with the worker label totals.
    """
    k_true = log_conf.shape[1]
    table = log_conf.transpose(1, 0, 2).reshape(k_true, -1)  # table[k, j*K + x] = log θ[j,k,x]
    base = table[-1]
    finite = np.isfinite(base)
    contrast = np.where(finite, table[:-1] - np.where(finite, base, 0.0), table[:-1])
    relative = np.zeros((k_true, labels.n_tasks))
    matrix = labels.count_matrix
    if k_true == 2:
        relative[0] = matrix @ contrast[0]
    else:  # one multi-vector product beats K−1 single ones
        relative[:-1] = (matrix @ np.ascontiguousarray(contrast.T)).T
    offset = float(labels.column_totals[finite] @ base[finite])
    if not finite.all():  # a worker label impossible under class K−1: shift by 0 instead
        relative[-1] = matrix @ np.where(finite, 0.0, -np.inf)
    return relative, offset


def label_log_likelihood_offsets(labels: Labels, log_conf: np.ndarray) -> np.ndarray:
    """The per-task terms of :func:`label_log_likelihood`'s ``offset`` (n_tasks,):
    ``log p(x_i | c_i = K−1)``, with a label impossible under class K−1 counted as 0 there too;
    they sum to ``offset``. For objectives over a subset of the tasks."""
    base = log_conf[:, -1, :].reshape(-1)  # base[j*K + x] = log θ[j, K−1, x]
    return labels.count_matrix @ np.where(np.isfinite(base), base, 0.0)


def confusion_statistics(
    labels: Labels, responsibilities: np.ndarray, *, sums_to_one: bool = True
) -> np.ndarray:
    """Expected counts ``n[j, k, x]`` of worker ``j`` saying ``x`` on tasks of true class ``k``,
    from class-major (K, n_tasks) responsibilities.

    ``n = Aᵀ r`` class by class; when every task's responsibilities sum to one (``sums_to_one``)
    the last class's counts are the worker's label totals minus the others', saving one sparse
    product. Pass ``sums_to_one=False`` for weighted responsibilities (tasks left out with
    weight 0).
    """
    n_classes = responsibilities.shape[0]
    if "count_matrix" not in vars(labels) and labels.label_codes is not None:
        return _statistics_from_codes(labels, responsibilities, sums_to_one)
    matrix_t = labels.count_matrix.T
    flat = np.empty((n_classes, matrix_t.shape[0]))
    if not sums_to_one:
        flat[:] = (matrix_t @ np.ascontiguousarray(responsibilities.T)).T
    elif n_classes == 2:
        flat[0] = matrix_t @ responsibilities[0]
    else:  # one multi-vector product beats K−1 single ones
        flat[:-1] = (matrix_t @ np.ascontiguousarray(responsibilities[:-1].T)).T
    if sums_to_one:
        flat[-1] = np.maximum(labels.column_totals - flat[:-1].sum(axis=0), 0.0)
    return flat.reshape(n_classes, -1, n_classes).transpose(1, 0, 2)


def _statistics_from_codes(
    labels: LabelBlock, responsibilities: np.ndarray, sums_to_one: bool
) -> np.ndarray:
    """:func:`confusion_statistics` by one weighted count over the labels per class (the
    labels' task's responsibility added to the cell ``j·K + x``), for labels whose count matrix
    has not been built: a fit whose passes run in the compiled kernel never needs it, nor
    SciPy (whose first import costs a fresh process a fifth of a second)."""
    n_classes = responsibilities.shape[0]
    n_columns = labels.n_workers * n_classes
    columns, tasks = labels.label_columns, labels.task_codes
    flat = np.empty((n_classes, n_columns))
    for k in range(n_classes - 1 if sums_to_one else n_classes):
        flat[k] = np.bincount(columns, weights=responsibilities[k][tasks], minlength=n_columns)
    if sums_to_one:
        flat[-1] = np.maximum(labels.column_totals - flat[:-1].sum(axis=0), 0.0)
    return flat.reshape(n_classes, -1, n_classes).transpose(1, 0, 2)


def confusion_counts(labels: LabelBlock, classes: np.ndarray) -> np.ndarray:
    """:func:`confusion_statistics` of hard assignments (task ``i`` in class ``classes[i]``):
    how often worker ``j`` said ``x`` on tasks assigned ``k``, the same numbers (whole counts,
    so exact in any order of summation) by one count over the labels, with no sparse product
    and so without importing ``scipy.sparse`` (the majority vote of the command line needs
    nothing else of SciPy)."""
    if labels.label_codes is None:  # compacted: only the count matrix is left
        return confusion_statistics(labels, np.eye(labels.n_classes)[:, classes])
    k = labels.n_classes
    key = (labels.worker_codes * k + classes[labels.task_codes]) * k + labels.label_codes
    counts = np.bincount(key, minlength=labels.n_workers * k * k).astype(np.float64)
    return counts.reshape(labels.n_workers, k, k)


def full_confusion_map(
    statistics: np.ndarray, pseudo_counts: float, diagonal: float = 0.0
) -> np.ndarray:
    """MAP estimate of every worker's full confusion matrix.

    ``θ[j, k, :] ∝ n[j, k, :] + a`` — the mode of the posterior under a symmetric
    Dirichlet(a + 1) prior on each row (``a = 0`` gives the maximum-likelihood estimate of
    Dawid & Skene). Rows with no counts at all are uniform. ``diagonal`` :math:`d` is added to
    the diagonal counts first (``(n + d I) + a``: a Dirichlet(a + 1 + d [x = k]) prior).
    """
    compiled = confusion_map(statistics, pseudo_counts, diagonal)
    if compiled is not None:  # the same numbers in one loop (a third of an M-step's time)
        return compiled
    if diagonal:
        smoothed = statistics.copy()
        n_classes = statistics.shape[-1]
        flat = smoothed.reshape(-1, n_classes * n_classes)  # a view: the array is fresh
        flat[:, :: n_classes + 1] += diagonal
        smoothed += pseudo_counts
    else:
        smoothed = statistics + pseudo_counts
    totals = _row_sums(smoothed)
    positive = totals > 0
    if positive.all():  # the usual case: the same numbers without the masked copy
        smoothed /= totals
        return smoothed
    n_classes = statistics.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(positive, smoothed / totals, 1.0 / n_classes)


def _row_sums(values: np.ndarray) -> np.ndarray:
    """``values.sum(axis=-1, keepdims=True)``, the same numbers: below 8 classes numpy adds a
    row's entries one after the other, which the sum of the K slices does without numpy's
    per-row reduction loop (a third of an EM step's M-step at 1,000 workers)."""
    n_classes = values.shape[-1]
    if n_classes >= 8:  # numpy sums 8 or more by pairs
        return values.sum(axis=-1, keepdims=True)
    totals = values[..., :1].copy()
    for k in range(1, n_classes):
        totals += values[..., k : k + 1]
    return totals


def one_coin_map(statistics: np.ndarray, pseudo_counts: float) -> np.ndarray:
    """MAP estimate under the one-coin model: worker ``j`` is right with probability ``p_j`` and
    otherwise picks one of the other ``K − 1`` classes uniformly.

    ``p_j = (Σ_k n[j,k,k] + a) / (Σ_{k,x} n[j,k,x] + 2a)``, i.e. a Beta(a + 1, a + 1) prior on p_j.
    """
    n_classes = statistics.shape[-1]
    correct = np.trace(statistics, axis1=1, axis2=2)
    total = statistics.sum(axis=(1, 2))
    accuracy = (correct + pseudo_counts) / np.maximum(total + 2 * pseudo_counts, 1e-300)
    accuracy = np.where(total + 2 * pseudo_counts > 0, accuracy, 1.0 / n_classes)
    eye = np.eye(n_classes)
    off = (1.0 - accuracy) / (n_classes - 1)
    return accuracy[:, None, None] * eye + off[:, None, None] * (1.0 - eye)


def full_confusion_log_prior(
    log_confusion: np.ndarray, pseudo_counts: float, diagonal: float = 0.0
) -> float:
    """log density (up to a constant) of the Dirichlet(a + 1 + d [x = k]) rows whose mode
    :func:`full_confusion_map` gives when ``d`` is added to the diagonal statistics:
    ``Σ_{j,k,x} (a + d [x = k]) log θ_{jkx}``, from ``log θ`` (cells at ``log 0`` can only
    occur where their pseudo-count is 0, and add nothing)."""
    total = float(log_confusion.sum())
    if np.isfinite(total):  # the usual case: every cell finite, nothing to leave out
        finite = log_confusion
    else:
        finite = np.where(np.isfinite(log_confusion), log_confusion, 0.0)
        total = float(finite.sum())
    value = pseudo_counts * total
    if diagonal:  # Σ_j trace θ_j: numpy's trace (a sum over the last axis) as _row_sums adds it
        traces = _row_sums(np.diagonal(finite, axis1=1, axis2=2))
        value += diagonal * float(traces.sum())
    return value


def one_coin_log_prior(confusion: np.ndarray, pseudo_counts: float) -> float:
    """log density (up to a constant) of the Beta(a + 1, a + 1) prior that :func:`one_coin_map`
    maximises: ``a Σ_j [log p_j + log(1 − p_j)]``."""
    accuracy = confusion[:, 0, 0]
    with np.errstate(divide="ignore"):
        return pseudo_counts * finite_sum(np.log(accuracy) + np.log1p(-accuracy))
