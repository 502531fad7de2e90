r"""Bringing a links-only VB solution with spare clusters back to K by merge and delete moves.

:class:`~crowdbayes.models.clustering.LinkClustering` with ``search_factor`` f above 1 also
searches with :math:`K' = \lceil fK \rceil` clusters and brings the best solution found there
back to K with the moves of this module.

Why search with spare clusters
------------------------------
Links tie clusters together only through items that several workers saw, so at exactly K
clusters the search must label every region of tasks consistently with the others at once. With
spare clusters a digit may hold two clusters in two regions that share few items; the search at
K' then reaches higher ELBOs (on the real MNIST annotations K' = 15 uses about 12 clusters and
ends above the ELBO of the K = 10 optimum near the truth). What is left is to undo the spare
clusters without undoing the alignment.

The moves
---------
From q(z) = ``resp`` with :math:`K_c` columns, a candidate with :math:`K_c - 1` columns is

* a *merge* of clusters a and b: :math:`r'_{i,a} = r_{ia} + r_{ib}`, column b removed (the
  merge move of split-and-merge EM, Ueda et al. 2000, and of memoized VB, Hughes & Sudderth
  2013, §4.2). Summing the responsibilities keeps every agreement
  :math:`\bar s_l = r_i^\top r_j` of a link between two items of the two clusters and raises
  the others' by :math:`r_{ia} r_{jb} + r_{ib} r_{ja}`: the merge costs the cannot-link
  evidence between a and b and gains their must-link evidence, so the pairs worth trying are
  those with the largest net link weight :math:`\sum_l \mathbb{E}[w_l]\,(r_{ia} r_{jb} +
  r_{ib} r_{ja})` between them (:func:`merge_pair_weights`);
* a *delete* of cluster c: column c removed and every row renormalised, so that the items of c
  are re-placed by the next sweeps on the clusters their links favour (the delete move of
  Hughes & Sudderth 2013, §4.3, in its simplest form).

Each candidate is refined by a few VB sweeps at :math:`K_c - 1` (``merge_sweeps``) and scored
by the ELBO it reaches; the best is kept and refined to convergence (VB and the polish of
:class:`~crowdbayes.models.clustering.LinkClustering`), and the moves repeat until K clusters
remain (:func:`reduce_clusters`). Every candidate of one step has the same number of clusters,
so their ELBOs are bounds on the evidence of the same model and may be compared; as in Hughes &
Sudderth, a few sweeps stand in for the converged ELBO (on the real MNIST annotations the best
merge after 5 sweeps is also the best after convergence;
``benchmarks/cluster/results/cluster_link_vb_search.md``). The reduced solutions are more
candidates beside the restarts at K, the highest final ELBO winning, so the spare-cluster search
can only raise the ELBO of the fit.

References
----------
Ueda, N., Nakano, R., Ghahramani, Z. & Hinton, G. E. (2000). SMEM algorithm for mixture models.
Neural Computation 12(9), 2109–2128.
Hughes, M. C. & Sudderth, E. B. (2013). Memoized online variational inference for Dirichlet
process mixture models. NeurIPS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from .link_graph import LinkGraph

__all__ = [
    "merge_columns",
    "delete_column",
    "merge_pair_weights",
    "reduce_clusters",
    "used_clusters",
    "padded_to",
]

#: floor of a responsibility after a move, so that log q(z) stays finite
_FLOOR = 1e-12


def padded_to(resp: np.ndarray, n_clusters: int) -> np.ndarray:
    """q(z) ``resp`` with at most ``n_clusters`` columns, padded with empty clusters (at the
    floor) to ``n_clusters``."""
    if resp.shape[1] > n_clusters:
        raise ValueError(f"padded_to: {resp.shape[1]} clusters are more than {n_clusters}")
    padded = np.hstack([resp, np.zeros((resp.shape[0], n_clusters - resp.shape[1]))])
    return _floored(padded)


def used_clusters(resp: np.ndarray) -> np.ndarray:
    """Which clusters (columns of q(z) = ``resp``) are the most probable cluster of some item."""
    used = np.zeros(resp.shape[1], dtype=bool)
    used[np.argmax(resp, axis=1)] = True
    return used


def merge_columns(resp: np.ndarray, a: int, b: int) -> np.ndarray:
    """q(z) with clusters ``a`` and ``b`` merged: column a holds their sum, column b is gone."""
    if a == b:
        raise ValueError(f"merge_columns: a cluster cannot be merged with itself ({a})")
    merged = resp.copy()
    merged[:, a] += merged[:, b]
    return _floored(np.delete(merged, b, axis=1))


def delete_column(resp: np.ndarray, c: int) -> np.ndarray:
    """q(z) without cluster ``c``: its column removed and every row renormalised."""
    return _floored(np.delete(resp, c, axis=1))


def _floored(resp: np.ndarray) -> np.ndarray:
    resp = np.maximum(resp, _FLOOR)
    return resp / resp.sum(axis=1, keepdims=True)


def merge_pair_weights(graph: LinkGraph, weights: np.ndarray, resp: np.ndarray) -> np.ndarray:
    r"""(K, K) net link weight between every two clusters under q(z) = ``resp``:
    :math:`W_{ab} = \sum_l \mathbb{E}[w_l]\,(r_{ia} r_{jb} + r_{ib} r_{ja})`, the change of
    the expected link log-likelihood :math:`\sum_l \bar s_l \mathbb{E}[w_l]` when a and b merge
    at the same q(z) and link weights (module docstring); the diagonal is :math:`-\infty`."""
    left, right = resp[graph.left], resp[graph.right]
    between = (left * weights[:, None]).T @ right
    between = between + between.T
    np.fill_diagonal(between, -np.inf)
    return between


def _candidates(
    graph: LinkGraph, weights: np.ndarray, resp: np.ndarray, n_pairs: int
) -> Iterator[np.ndarray]:
    """The moves of one step: a delete of every cluster, and a merge of the ``n_pairs`` pairs
    with the largest :func:`merge_pair_weights`."""
    k = resp.shape[1]
    for c in range(k):
        yield delete_column(resp, c)
    between = merge_pair_weights(graph, weights, resp)
    a, b = np.triu_indices(k, 1)
    for pair in np.argsort(-between[a, b], kind="stable")[:n_pairs]:
        yield merge_columns(resp, int(a[pair]), int(b[pair]))


def reduce_clusters(
    state,
    n_clusters: int,
    *,
    graph: LinkGraph,
    weigh: Callable[[object], np.ndarray],
    refine: Callable[[np.ndarray], tuple[object, object]],
    settle: Callable[[np.ndarray], tuple[object, object]],
    n_pairs: int,
) -> tuple[object, object]:
    """Greedy merge and delete moves from the VB ``state`` (its q(z) ``state.resp``) down to
    ``n_clusters`` clusters.

    Clusters that hold less than half an item are dropped first. Each step scores every
    candidate (:func:`_candidates`, pairs ranked under the link weights ``weigh(state)`` of the
    current state's workers) by ``refine(candidate) -> (state, run)``, a few VB sweeps at one
    cluster fewer, keeps the candidate with the highest ``run.history[-1]`` and brings it to
    convergence with ``settle(resp) -> (state, run)``. With no more than ``n_clusters``
    clusters used, the used ones are padded with empty columns (at the floor) and settled once.
    Returns the final ``(state, run)``.
    """
    if n_clusters < 1:
        raise ValueError(f"reduce_clusters: n_clusters must be at least 1; got {n_clusters}")
    resp = state.resp
    resp = _floored(resp[:, resp.sum(axis=0) >= 0.5])
    if resp.shape[1] <= n_clusters:
        return settle(padded_to(resp, n_clusters))
    run = None
    while resp.shape[1] > n_clusters:
        weights = weigh(state)
        best = None
        for candidate in _candidates(graph, weights, resp, n_pairs):
            scored = refine(candidate)
            if best is None or scored[1].history[-1] > best[1].history[-1]:
                best = scored
        state, run = settle(best[0].resp)
        resp = state.resp
    return state, run
