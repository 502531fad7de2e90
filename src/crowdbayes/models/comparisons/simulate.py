"""Seeded comparisons from the Crowd-BT model: item scores, faithful and random workers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..._utils import as_generator
from ._davidson import outcome_log_probs

__all__ = ["SimulatedComparisons", "simulate_crowd_comparisons"]


@dataclass(frozen=True)
class SimulatedComparisons:
    """What :func:`simulate_crowd_comparisons` returns.

    ``comparisons``: ``worker, left, right, label`` (label = the preferred id or ``"equal"``);
    ``scores``: the true score of each item; ``reliability``: each worker's probability of
    answering faithfully (the rest of the time uniformly at random over the outcomes).
    """

    comparisons: pd.DataFrame
    scores: pd.Series
    reliability: pd.Series


def simulate_crowd_comparisons(
    n_items: int = 30,
    n_workers: int = 10,
    per_worker: int = 100,
    *,
    reliability=None,
    score_sd: float = 1.0,
    tie_strength: float = 0.0,
    random_state=None,
) -> SimulatedComparisons:
    """Random pairs judged by workers who answer from Davidson's model with probability
    ``reliability[j]`` (default all 0.9) and uniformly at random otherwise (a tie only when
    ``tie_strength > 0``). Items are ``i0, i1, ...``, workers ``w0, w1, ...``."""
    rng = as_generator(random_state)
    if reliability is None:
        reliability = np.full(n_workers, 0.9)
    reliability = np.asarray(reliability, dtype=np.float64)
    if reliability.shape != (n_workers,):
        raise ValueError(f"reliability: need {n_workers} values; got shape {reliability.shape}")
    scores = rng.normal(0.0, score_sd, n_items)
    n = n_workers * per_worker
    worker = np.repeat(np.arange(n_workers), per_worker)
    left = rng.integers(n_items, size=n)
    right = (left + rng.integers(1, n_items, size=n)) % n_items
    theta = np.log(tie_strength) if tie_strength > 0 else -np.inf
    probs = np.exp(outcome_log_probs(scores[left] - scores[right], theta))
    cumulative = np.cumsum(probs, axis=0)
    u = rng.random(n)
    outcome = np.where(u < cumulative[0], 0, np.where(u < cumulative[1], 1, 2))
    n_kinds = 3 if tie_strength > 0 else 2
    faithful = rng.random(n) < reliability[worker]
    outcome = np.where(faithful, outcome, rng.integers(n_kinds, size=n))
    items = np.array([f"i{k}" for k in range(n_items)], dtype=object)
    labels = np.where(outcome == 0, items[left], np.where(outcome == 1, items[right], "equal"))
    table = pd.DataFrame(
        {
            "worker": [f"w{j}" for j in worker],
            "left": items[left],
            "right": items[right],
            "label": labels,
        }
    )
    return SimulatedComparisons(
        table,
        pd.Series(scores, index=pd.Index(items, name="item"), name="score"),
        pd.Series(reliability, index=pd.Index([f"w{j}" for j in range(n_workers)]), name="p"),
    )
