"""Label-switching detection and correction by matching to a pivot labelling."""

from __future__ import annotations

import numpy as np

__all__ = ["best_permutation"]


def best_permutation(assignments: np.ndarray, pivot: np.ndarray, n_classes: int) -> np.ndarray:
    """Permutation ``σ`` of class codes maximising agreement of ``σ[assignments]`` with ``pivot``.

    Solved exactly as an assignment problem on the K×K contingency table (Hungarian algorithm),
    in the spirit of the pivotal relabelling of Marin, Mengersen & Robert (2005). Returns the
    identity when the labelling is already the best match.
    """
    from scipy.optimize import linear_sum_assignment

    cells = np.bincount(assignments * n_classes + pivot, minlength=n_classes * n_classes)
    table = cells.reshape(n_classes, n_classes).astype(float)
    rows, cols = linear_sum_assignment(table, maximize=True)
    permutation = np.empty(n_classes, dtype=np.int64)
    permutation[rows] = cols
    if table[np.arange(n_classes), permutation].sum() <= np.trace(table):
        return np.arange(n_classes)
    return permutation
