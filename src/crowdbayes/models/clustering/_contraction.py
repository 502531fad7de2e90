r"""Hard starting partitions from signed pairwise weights: contraction, then colouring.

Used to start :class:`~crowdbayes.models.clustering.LinkClustering`, where every link
``l = (i, j)`` carries a weight :math:`w_l` (positive for a must-link, negative for a
cannot-link: the log-odds of the two-coin model at the starting accuracies). The hard version
of the VB objective is :math:`\sum_l w_l [z_i = z_j] + \sum_i \log\pi_{z_i}`.

1. **Greedy additive edge contraction** (GAEC; Keuper et al. 2015) solves the first term with
   no bound on the number of clusters (correlation clustering / multicut): starting from
   singletons, repeatedly merge the two clusters joined by the largest positive summed weight,
   until every pair of clusters is joined by zero or negative weight. A worker's groups
   become clusters first (their many internal must-links outweigh everything else), then
   groups of different workers that share items join, unless the cannot-links between them
   outweigh the shared items. Nothing is labelled yet, so no early guess about which global
   cluster a group is has to be undone later.
2. **Conflict colouring** maps these components onto ``K`` clusters: what is left between
   components is only cannot-link weight (conflicts), so this is weighted graph colouring, done
   by DSatur (Brélaz 1979): the component whose conflicting neighbours already use the most
   distinct clusters goes next, onto the cluster of least conflict weight (ties: the cluster
   already holding most items, for the :math:`\log\pi` term, then at random).

References
----------
Keuper, M., Levinkov, E., Bonneel, N., Lavoué, G., Brox, T. & Andres, B. (2015). Efficient
decomposition of image and mesh graphs by lifted multicuts. ICCV.
Brélaz, D. (1979). New methods to color the vertices of a graph. Communications of the ACM 22(4).
"""

from __future__ import annotations

import heapq

import numpy as np
import scipy.sparse as sp

__all__ = ["additive_contraction", "component_weights", "conflict_colouring"]


def additive_contraction(
    n_items: int, left: np.ndarray, right: np.ndarray, weights: np.ndarray, rng
) -> np.ndarray:
    """Greedy additive edge contraction of the signed graph ``(left, right, weights)``.

    Merges the pair of clusters with the largest positive summed weight until none is
    positive (ties broken at random with ``rng``). Returns the component of every item,
    ``0 … n_components−1``.
    """
    neighbours: list[dict[int, float]] = [{} for _ in range(n_items)]
    for i, j, w in zip(left.tolist(), right.tolist(), np.asarray(weights).tolist(), strict=True):
        if i != j:
            neighbours[i][j] = neighbours[i].get(j, 0.0) + w
            neighbours[j][i] = neighbours[j].get(i, 0.0) + w
    heap = [
        (-w, rng.random(), i, j)
        for i in range(n_items)
        for j, w in neighbours[i].items()
        if i < j and w > 0
    ]
    heapq.heapify(heap)
    parent = np.arange(n_items)
    while heap:
        neg_w, _, i, j = heapq.heappop(heap)
        if neighbours[i].get(j) != -neg_w:  # stale: i or j merged since, or weight changed
            continue
        if len(neighbours[i]) < len(neighbours[j]):
            i, j = j, i  # merge the smaller adjacency into the larger
        parent[j] = i
        del neighbours[i][j], neighbours[j][i]
        for k, w in neighbours[j].items():
            del neighbours[k][j]
            total = neighbours[i].get(k, 0.0) + w
            neighbours[i][k] = neighbours[k][i] = total
            if total > 0:
                heapq.heappush(heap, (-total, rng.random(), min(i, k), max(i, k)))
        neighbours[j] = {}
    for item in range(n_items):  # follow each item's chain of merges to its root
        root = item
        while parent[root] != root:
            root = parent[root]
        parent[item] = root
    return np.unique(parent, return_inverse=True)[1]


def component_weights(
    component: np.ndarray, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray
) -> sp.csr_matrix:
    """Summed ``weights`` of the entries ``rows → cols`` between components, no diagonal (with
    both directions of every link given, a symmetric CSR)."""
    n = int(component.max()) + 1
    a, b = component[rows], component[cols]
    apart = a != b
    between = sp.csr_matrix((weights[apart], (a[apart], b[apart])), shape=(n, n))
    between.sum_duplicates()
    return between


def conflict_colouring(
    between: sp.csr_matrix, sizes: np.ndarray, n_colours: int, rng
) -> np.ndarray:
    """DSatur colouring of components with ``n_colours`` colours that keeps the negative
    ``between`` weight inside colours small (module docstring). Returns every component's
    colour."""
    n = between.shape[0]
    conflict = between.multiply(between < 0).tocsr()
    conflict.data = -conflict.data
    cost = np.zeros((n, n_colours))  # conflict weight of each component with each colour
    seen = np.zeros((n, n_colours), dtype=bool)  # a conflicting neighbour has that colour
    degree = np.asarray(conflict.sum(axis=1)).ravel()
    jitter = rng.random(n)
    colour = np.full(n, -1, dtype=np.int64)
    filled = np.zeros(n_colours)
    for _ in range(n):
        key = seen.sum(axis=1) * (degree.max() + 1.0) + degree + 1e-9 * jitter
        key[colour >= 0] = -np.inf
        c = int(np.argmax(key))
        best = np.flatnonzero(cost[c] <= cost[c].min() + 1e-9)
        best = best[filled[best] == filled[best].max()]
        colour[c] = int(rng.choice(best))
        filled[colour[c]] += sizes[c]
        lo, hi = conflict.indptr[c], conflict.indptr[c + 1]
        partners = conflict.indices[lo:hi]
        cost[partners, colour[c]] += conflict.data[lo:hi]
        seen[partners, colour[c]] = True
    return colour
