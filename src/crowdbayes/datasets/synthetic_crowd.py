"""Simulated workers labelling items whose true classes are given (e.g. a labelled image set).

Worker ``j`` has an accuracy ``a_j ~ U(accuracy)``; a wrong label goes, with probability
``confusable_share``, to the true class's ``confusable`` partner (a 4 read as a 9) and otherwise
uniformly to another class. Each labelled item gets between ``labels_per_task[0]`` and
``labels_per_task[1]`` labels (uniformly) from distinct workers chosen at random.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .._utils import RandomState, as_generator

__all__ = ["simulate_crowd_labels"]


def simulate_crowd_labels(
    truth: Sequence,
    items: Sequence | None = None,
    *,
    n_workers: int = 50,
    labels_per_task: tuple[int, int] = (1, 3),
    accuracy: tuple[float, float] = (0.5, 0.9),
    confusable: Mapping | None = None,
    confusable_share: float = 0.5,
    random_state: RandomState = 0,
) -> tuple[pd.DataFrame, pd.Series]:
    """Labels (``task, worker, label``) for the items ``items`` (default: every position of
    ``truth``), whose true classes are ``truth[item]``; returns the labels and each worker's
    accuracy (indexed by worker id ``w0, w1, ...``)."""
    truth = np.asarray(truth)
    items = np.arange(len(truth)) if items is None else np.asarray(items)
    low, high = labels_per_task
    if not 1 <= low <= high <= n_workers:
        raise ValueError(
            f"labels_per_task must satisfy 1 <= low <= high <= n_workers; got {labels_per_task}"
        )
    rng = as_generator(random_state)
    classes = np.unique(truth)
    worker_accuracy = rng.uniform(*accuracy, size=n_workers)
    counts = rng.integers(low, high + 1, size=len(items))
    task = np.repeat(items, counts)
    worker = np.concatenate([rng.choice(n_workers, c, replace=False) for c in counts])
    true = truth[task]
    label = true.copy()
    wrong = rng.random(len(task)) >= worker_accuracy[worker]
    for row in np.flatnonzero(wrong):
        partner = None if confusable is None else confusable.get(true[row].item())
        if partner is not None and rng.random() < confusable_share:
            label[row] = partner
        else:
            label[row] = rng.choice(classes[classes != true[row]])
    worker_ids = np.array([f"w{w}" for w in range(n_workers)])
    table = pd.DataFrame({"task": task, "worker": worker_ids[worker], "label": label})
    return table, pd.Series(worker_accuracy, index=pd.Index(worker_ids, name="worker"))
