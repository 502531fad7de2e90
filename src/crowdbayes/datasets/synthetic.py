"""Simulated crowd labels with known truth and known worker confusion matrices.

The generative model is the hierarchical annotation model's prior::

    z_i        ~ Categorical(prevalence)                       true class of task i
    pi_j[k, :] ~ Dirichlet(s * m_k)                            worker j's row for true class k
    m_k        = accuracy_mean on entry k, (1 - accuracy_mean) / (K - 1) elsewhere
    y_ij       ~ Categorical(pi_j[z_i, :])                     label worker j gives task i

With ``K = 2`` the diagonal entries (sensitivity and specificity) are Beta(s*a, s*(1 - a)) with
mean ``a = accuracy_mean`` and concentration ``s = accuracy_concentration``. Each task is
labelled by ``labels_per_task`` distinct workers chosen uniformly at random.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._utils import RandomState, as_generator
from ..data.labels import Labels

__all__ = ["SyntheticLabels", "simulate_labels"]

# Above this many random keys per block, distinct workers are drawn block by block.
_KEYS_PER_BLOCK = 4_000_000


@dataclass(eq=False)
class SyntheticLabels:
    """Simulated labels and the parameters that generated them.

    Attributes
    ----------
    labels : DataFrame
        Columns ``task, worker, label``, all integers (tasks ``0..n_tasks-1``, workers
        ``0..n_workers-1``, classes ``0..K-1``).
    truth : Series
        The true class of each task, indexed by task (index name ``"task"``), named ``"label"``.
    confusion : ndarray, shape (n_workers, K, K)
        ``confusion[j, k, x] = P(worker j says x | true class k)``; rows sum to one.
    prevalence : ndarray, shape (K,)
        The class probabilities the truth was drawn from.
    workers : list of int
        The worker ids, in the order of ``confusion``'s first axis.
    """

    labels: pd.DataFrame = field(repr=False)
    truth: pd.Series = field(repr=False)
    confusion: np.ndarray = field(repr=False)
    prevalence: np.ndarray
    workers: list = field(repr=False)

    @property
    def n_classes(self) -> int:
        return int(self.prevalence.shape[0])

    def to_labels(self, **kwargs) -> Labels:
        """The labels as a :class:`~crowdbayes.Labels` container with classes ``0..K-1``
        declared (so a class nobody happened to use is still a class). The truth is not passed
        as gold; keyword arguments go to ``Labels``."""
        kwargs.setdefault("classes", list(range(self.n_classes)))
        return Labels(self.labels, **kwargs)


def _check_count(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}; got {value}")
    return int(value)


def _check_prevalence(prevalence: object, n_classes: int) -> np.ndarray:
    if prevalence is None:
        return np.full(n_classes, 1.0 / n_classes)
    p = np.asarray(prevalence, dtype=np.float64)
    if p.shape != (n_classes,):
        raise ValueError(f"prevalence must have length n_classes={n_classes}; got shape {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"prevalence must be finite and non-negative; got {p.tolist()}")
    if not np.isclose(p.sum(), 1.0, rtol=0.0, atol=1e-8):
        raise ValueError(f"prevalence must sum to 1; got {p.tolist()} (sum {p.sum():.6g})")
    return p / p.sum()


def _draw_distinct(rng: np.random.Generator, n_rows: int, n_items: int, k: int) -> np.ndarray:
    """Array (n_rows, k): each row ``k`` distinct items from ``range(n_items)``, uniformly.

    Few picks from many items use Floyd's algorithm vectorised over rows (``k`` passes, no
    ``n_rows x n_items`` array); otherwise the ``k`` smallest of uniform random keys per row.
    Either way rows are then shuffled so the order is uniform too.
    """
    if k * k <= 4 * n_items:
        chosen = np.empty((n_rows, k), dtype=np.int64)
        # Floyd: for j = n-k..n-1 draw t in [0, j]; take t unless already chosen, else take j.
        for step, j in enumerate(range(n_items - k, n_items)):
            t = rng.integers(0, j + 1, size=n_rows)
            taken = (chosen[:, :step] == t[:, None]).any(axis=1)
            chosen[:, step] = np.where(taken, j, t)
        return rng.permuted(chosen, axis=1)
    block = max(1, _KEYS_PER_BLOCK // n_items)
    parts = []
    for start in range(0, n_rows, block):
        keys = rng.random((min(block, n_rows - start), n_items))
        picks = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < n_items else keys.argsort(1)
        parts.append(rng.permuted(picks, axis=1))
    return np.concatenate(parts, axis=0).astype(np.int64, copy=False)


def simulate_labels(
    n_tasks: int = 1000,
    n_workers: int = 50,
    labels_per_task: int = 5,
    n_classes: int = 2,
    *,
    prevalence: np.ndarray | list[float] | None = None,
    accuracy_mean: float = 0.75,
    accuracy_concentration: float = 20.0,
    random_state: RandomState = None,
) -> SyntheticLabels:
    """Simulate crowd labels from the hierarchical confusion-matrix model.

    Parameters
    ----------
    n_tasks, n_workers : int
        Numbers of tasks and workers.
    labels_per_task : int
        How many distinct workers label each task (at most ``n_workers``).
    n_classes : int
        Number of classes ``K`` (at least 2).
    prevalence : array of shape (K,), optional
        Class probabilities of the truth; uniform by default.
    accuracy_mean : float in (0, 1)
        Prior mean of each diagonal entry of a worker's confusion matrix; the off-diagonal mass
        is split evenly among the other classes.
    accuracy_concentration : float > 0
        Dirichlet concentration ``s``: large values make workers alike, small ones diverse.
    random_state : int, Generator or None
        Seed. The same seed gives identical output.

    Returns
    -------
    SyntheticLabels
    """
    n_tasks = _check_count(n_tasks, "n_tasks", 1)
    n_workers = _check_count(n_workers, "n_workers", 1)
    labels_per_task = _check_count(labels_per_task, "labels_per_task", 1)
    n_classes = _check_count(n_classes, "n_classes", 2)
    if labels_per_task > n_workers:
        raise ValueError(
            f"labels_per_task={labels_per_task} exceeds n_workers={n_workers}: each task is "
            "labelled by distinct workers"
        )
    p = _check_prevalence(prevalence, n_classes)
    a = float(accuracy_mean)
    if not 0.0 < a < 1.0:
        raise ValueError(f"accuracy_mean must lie strictly between 0 and 1; got {accuracy_mean}")
    s = float(accuracy_concentration)
    if not (np.isfinite(s) and s > 0.0):
        raise ValueError(f"accuracy_concentration must be positive; got {accuracy_concentration}")

    rng = as_generator(random_state)

    k = n_classes
    mean = np.full((k, k), (1.0 - a) / (k - 1))
    np.fill_diagonal(mean, a)
    confusion = np.empty((n_workers, k, k))
    for true_class in range(k):
        confusion[:, true_class, :] = rng.dirichlet(s * mean[true_class], size=n_workers)

    truth = rng.choice(k, size=n_tasks, p=p).astype(np.int64)
    workers = _draw_distinct(rng, n_tasks, n_workers, labels_per_task).ravel()
    tasks = np.repeat(np.arange(n_tasks, dtype=np.int64), labels_per_task)

    # Inverse CDF: the label is the number of cumulative-probability cut points below u. The
    # last cut point (1 up to rounding) is left out so the label never exceeds K - 1.
    cut_points = np.cumsum(confusion, axis=2)[:, :, :-1]
    u = rng.random(tasks.shape[0])
    observed = (u[:, None] >= cut_points[workers, truth[tasks]]).sum(axis=1).astype(np.int64)

    labels = pd.DataFrame({"task": tasks, "worker": workers, "label": observed})
    truth_series = pd.Series(
        truth, index=pd.RangeIndex(n_tasks, name="task"), name="label", dtype=np.int64
    )
    return SyntheticLabels(
        labels=labels,
        truth=truth_series,
        confusion=confusion,
        prevalence=p,
        workers=list(range(n_workers)),
    )
