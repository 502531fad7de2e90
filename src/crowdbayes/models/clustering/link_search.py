r"""Searches over hard partitions that start and polish the VB of
:class:`~crowdbayes.models.clustering.LinkClustering`.

Why a search
------------
Links alone identify clusters only through items shared between workers: a worker's own
grouping is always reproducible, and which global cluster each of their groups is must be
inferred from the few items they share with others (and by exclusion). Mean field from a random
:math:`q(z)` gives every task its own arbitrary labelling and stalls there, so every restart
starts from a hard partition and moves whole groups of items, which coordinate ascent on single
items cannot do.

The objective
-------------
Every search here maximises the hard version of the VB objective,

.. math::
    S(z) = \sum_l w_l\,[z_{i_l} = z_{j_l}] + \sum_i \log\pi_{z_i},

with :math:`w_l` the expected message weight of link :math:`l` (positive for a must-link,
negative for a cannot-link; Luo et al. 2018, Eq. 14 with :math:`q(z)` one-hot) and
:math:`\log\pi` the expected log proportions. Only improving moves are made, so :math:`S`
rises until no move helps.

The moves
---------
* :func:`contraction_start`: greedy additive edge contraction of the signed graph, which merges
  groups without labelling them, then a conflict colouring of the components onto the K
  clusters (:mod:`crowdbayes.models.clustering._contraction`; Keuper et al. 2015, Brélaz 1979).
* :func:`greedy_start`: items placed one at a time, the most clear-cut first, each on the
  cluster its placed partners favour.
* :func:`block_search`: a *block* is a connected set of items joined by satisfied must-links.
  A block moves to another cluster, trades clusters with a linked block, or is re-placed
  jointly with the blocks it cannot-links (a worker's other groups) by an assignment problem.
* :func:`kempe_swaps`: for clusters :math:`a, b`, a *Kempe chain* (Kempe 1879) is a connected
  set of blocks of :math:`a` and :math:`b` joined by net cannot-links; exchanging :math:`a` and
  :math:`b` on a whole chain relabels a region of tasks at once, a move no sequence of single
  improving block moves reaches.
* :func:`dissolve_smallest`: a hard partition with spare clusters comes back to K by keeping
  the K largest clusters and re-placing the items of the others (:func:`greedy_placement`, the
  procedure of :func:`greedy_start` given the items kept). (``LinkClustering`` brings its
  searches with spare clusters back to K by the merge and delete moves of
  :mod:`crowdbayes.models.clustering.link_reduce` instead, which reach higher ELBOs.)

:class:`~crowdbayes.models.clustering.LinkClustering` alternates the two starts over its
restarts, improves each with :func:`block_search`, runs VB, and polishes the VB solution with
:func:`kempe_search` (each followed by VB, kept while the ELBO rises). What these searches
reach on the real MNIST annotations, and the searches tried before them, is recorded in
``benchmarks/cluster/results/cluster_link_vb_notes.md``.

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS.
Keuper, M., Levinkov, E., Bonneel, N., Lavoué, G., Brox, T. & Andres, B. (2015). Efficient
decomposition of image and mesh graphs by lifted multicuts. ICCV.
Brélaz, D. (1979). New methods to color the vertices of a graph. Communications of the ACM 22(4).
Kempe, A. B. (1879). On the geographical problem of the four colours. American Journal of
Mathematics 2(3).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import connected_components

from ._contraction import additive_contraction, component_weights, conflict_colouring
from .link_graph import LinkGraph

__all__ = [
    "greedy_start",
    "greedy_placement",
    "dissolve_smallest",
    "contraction_start",
    "block_search",
    "kempe_swaps",
    "kempe_search",
]


def greedy_start(
    graph: LinkGraph, weights: np.ndarray, n_clusters: int, rng: np.random.Generator
) -> np.ndarray:
    """Starting clusters by placing items one at a time, the most clear-cut first.

    Every unplaced item keeps a score ``S[i, k] = Σ_{l ∋ i} w_l [z_partner(l) = k]`` over
    its partners already placed; the next item placed is the one whose best cluster beats
    its second best by the widest margin (ties broken at random), and it takes that
    cluster. Must-links (w > 0) pull an item to a partner's cluster, cannot-links (w < 0)
    push it off, so a worker's groups land on distinct clusters, items shared between tasks
    carry the labels from one task to the next, and a group whose cluster is only fixed by
    exclusion (all other clusters taken in its task) waits until it is. A random start
    instead gives every task its own arbitrary labelling, which coordinate ascent cannot
    reconcile across tasks. Returns the cluster of every item.
    """
    n = graph.n_items
    return greedy_placement(
        graph, weights, np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool), n_clusters, rng
    )


def greedy_placement(
    graph: LinkGraph,
    weights: np.ndarray,
    chosen: np.ndarray,
    placed: np.ndarray,
    n_clusters: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Place the items not ``placed`` one at a time, the most clear-cut first, given the
    clusters ``chosen`` of those that are (the procedure of :func:`greedy_start`, whose
    scores here start from the placed partners). Returns the cluster of every item."""
    n, k = graph.n_items, n_clusters
    chosen = np.array(chosen, dtype=np.int64)
    placed = np.array(placed, dtype=bool)
    rows, cols, entry_w = graph.entries(weights)
    known = placed[cols]
    score = np.zeros((n, k))
    np.add.at(score, (rows[known], chosen[cols[known]]), entry_w[known])
    margin = np.zeros(n)
    if k > 1:
        top2 = -np.partition(-score, 1, axis=1)[:, :2]
        margin = top2[:, 0] - top2[:, 1]
    jitter = rng.random((n, k)) * 1e-9  # random tie-breaks, fixed for this placement
    for _ in range(int((~placed).sum())):
        item = int(np.argmax(np.where(placed, -np.inf, margin + jitter[:, 0])))
        cluster = int(np.argmax(score[item] + jitter[item]))
        placed[item], chosen[item] = True, cluster
        a, b = graph.indptr[item], graph.indptr[item + 1]
        partners = graph.indices[a:b]
        np.add.at(score[:, cluster], partners, weights[graph.link_of_entry[a:b]])
        if k > 1:
            top2 = -np.partition(-score[partners], 1, axis=1)[:, :2]
            margin[partners] = top2[:, 0] - top2[:, 1]
    return chosen


def dissolve_smallest(
    graph: LinkGraph,
    weights: np.ndarray,
    chosen: np.ndarray,
    n_clusters: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Reduce the hard assignments ``chosen`` to their ``n_clusters`` largest clusters
    (renumbered ``0 … n_clusters−1`` by decreasing size): the items of the others are
    re-placed by :func:`greedy_placement` given the items kept, each on the kept cluster its
    links favour: one way for a search run with more clusters than asked to come back to
    ``n_clusters``.
    """
    sizes = np.bincount(chosen)
    kept = np.argsort(-sizes, kind="stable")[:n_clusters]
    renumber = np.full(sizes.size, -1, dtype=np.int64)
    renumber[kept] = np.arange(kept.size)
    reduced = renumber[chosen]
    placed = reduced >= 0
    return greedy_placement(graph, weights, np.where(placed, reduced, 0), placed, n_clusters, rng)


def contraction_start(
    graph: LinkGraph, weights: np.ndarray, n_clusters: int, rng: np.random.Generator
) -> np.ndarray:
    """Starting clusters by greedy additive edge contraction of the signed link graph,
    then a conflict colouring of its components onto ``n_clusters`` clusters
    (:mod:`crowdbayes.models.clustering._contraction`). Returns the cluster of every item."""
    component = additive_contraction(graph.n_items, graph.left, graph.right, weights, rng)
    between = component_weights(component, *graph.entries(weights))
    sizes = np.bincount(component).astype(np.float64)
    return conflict_colouring(between, sizes, n_clusters, rng)[component]


def block_search(
    graph: LinkGraph,
    weights: np.ndarray,
    log_pi: np.ndarray,
    chosen: np.ndarray,
    rng: np.random.Generator,
    max_passes: int = 50,
) -> np.ndarray:
    """Improve hard assignments ``chosen`` by moving whole groups of items at once.

    A *block* is a connected set of items joined by satisfied must-links (both ends in the
    same cluster). Single items cannot leave such a group (its must-links hold them), so
    coordinate ascent cannot fix a group placed on the wrong cluster; here each block may
    move to another cluster, or trade clusters with a linked block (the move that resolves
    two groups of one task sitting on each other's cluster). The objective is the hard
    version of the VB objective, ``Σ_l w_l [z_i = z_j] + Σ_i log π_{z_i}`` (module
    docstring); only improving moves are made, so it rises until no single move or swap helps.
    Each block's clique is built once per search, and a joint re-placement that failed is
    tried again only after a block it depends on moved (the same moves as trying it every time).
    """
    k = log_pi.size
    block, between, size, cluster = _block_graph(graph, weights, chosen)
    n_blocks = size.size
    score = np.asarray(between @ np.eye(k)[cluster]) + size[:, None] * log_pi
    # A failed joint re-placement of b depends only on the score rows and clusters of its
    # clique; ``touched[x]`` is the move after which x's row or cluster last changed,
    # ``failed[b]`` the move count when b's last failed, so it is retried only after a change.
    touched = np.zeros(n_blocks, dtype=np.int64)
    failed = np.full(n_blocks, -1, dtype=np.int64)
    moves = 0

    def move(b: int, target: int) -> None:
        nonlocal moves
        lo, hi = between.indptr[b], between.indptr[b + 1]
        partners, w = between.indices[lo:hi], between.data[lo:hi]
        score[partners, cluster[b]] -= w
        score[partners, target] += w
        cluster[b] = target
        moves += 1
        touched[b] = moves
        touched[partners] = moves

    cliques = _Cliques(between, k)

    def reassign_clique(b: int) -> bool:
        """Re-place ``b`` and the blocks it cannot-links with (those that all cannot-link
        each other: a worker's other groups in a task) jointly on distinct clusters, by
        an assignment problem; made only if the objective rises."""
        clique = cliques.of(b)
        if clique is None:
            return False
        members, inner = clique
        if failed[b] >= 0 and touched[members].max() <= failed[b]:
            return False  # nothing it depends on moved since it last failed
        old = cluster[members]
        same_old = old[:, None] == old[None, :]
        external = score[members] - inner @ np.eye(k)[old]
        rows, cols = linear_sum_assignment(external, maximize=True)
        new = np.empty_like(old)
        new[rows] = cols
        gain = external[rows, cols].sum() - (
            external[np.arange(members.size), old].sum() + 0.5 * inner[same_old].sum()
        )
        if gain <= 1e-9 or np.array_equal(new, old):
            failed[b] = moves
            return False
        for member, target in zip(members, new, strict=True):
            if cluster[member] != target:
                move(int(member), int(target))
        return True

    for _ in range(max_passes):
        improved = False
        for b in rng.permutation(n_blocks):
            here = cluster[b]
            best_gain, best = 1e-9, None
            target = int(np.argmax(score[b]))
            if score[b, target] - score[b, here] > best_gain:
                best_gain, best = score[b, target] - score[b, here], (target, None)
            lo, hi = between.indptr[b], between.indptr[b + 1]
            partners, w = between.indices[lo:hi], between.data[lo:hi]
            there = cluster[partners]
            gain = (
                score[b, there]
                - score[b, here]
                + score[partners, here]
                - score[partners, there]
                - 2.0 * w
            )
            gain[there == here] = -np.inf
            if gain.size and gain.max() > best_gain:
                c = int(np.argmax(gain))
                best_gain, best = gain[c], (int(there[c]), int(partners[c]))
            if best is not None:
                target, other = best
                move(b, target)
                if other is not None:
                    move(other, here)
                improved = True
            elif partners.size:
                improved |= reassign_clique(b)
        if not improved:
            break
    return cluster[block]


def kempe_swaps(
    graph: LinkGraph, weights: np.ndarray, log_pi: np.ndarray, chosen: np.ndarray
) -> tuple[np.ndarray, float]:
    """One pass of Kempe-chain swaps over every pair of clusters; returns the new hard
    assignments and the rise of the hard objective (that of :func:`block_search`).

    For clusters ``a`` and ``b``, a *chain* is a connected set of blocks of ``a`` and ``b``
    joined by net cannot-links (negative summed weight). Exchanging ``a`` and ``b`` on a whole
    chain leaves every link inside it as it was (its groups stay apart) and every link to
    the other clusters too; only the links between the chain and the rest of ``a ∪ b`` (net
    must-links, by construction) change. This relabels a whole region of tasks at once:
    the move that repairs two clusters swapped on one side of a shared image, which no
    sequence of single improving block moves reaches. The best improving chain of each pair
    is swapped.
    """
    block, between, size, cluster = _block_graph(graph, weights, chosen)
    between = between.tocoo()
    i, j, w = between.row, between.col, between.data
    n_blocks, k = size.size, log_pi.size
    position = np.empty(n_blocks, dtype=np.int64)
    total = 0.0
    for a in range(k):
        for b in range(a + 1, k):
            in_pair = (cluster == a) | (cluster == b)
            nodes = np.flatnonzero(in_pair)
            if nodes.size == 0:
                continue
            position[nodes] = np.arange(nodes.size)
            edge = in_pair[i] & in_pair[j]
            ii, jj, ww = position[i[edge]], position[j[edge]], w[edge]
            apart = ww < 0
            n_chains, chain = _components(nodes.size, ii[apart], jj[apart])
            here = cluster[nodes]
            crossing = chain[ii] != chain[jj]
            flip = ww * (1.0 - 2.0 * (here[ii] == here[jj]))
            gain = np.bincount(
                chain[ii[crossing]], weights=flip[crossing], minlength=n_chains
            ).astype(np.float64)
            size_a = np.bincount(chain, weights=size[nodes] * (here == a), minlength=n_chains)
            size_b = np.bincount(chain, weights=size[nodes] * (here == b), minlength=n_chains)
            gain += (size_a - size_b) * (log_pi[b] - log_pi[a])
            best = int(np.argmax(gain))
            if gain[best] > 1e-9:
                members = nodes[chain == best]
                cluster[members] = np.where(cluster[members] == a, b, a)
                total += float(gain[best])
    return cluster[block], total


def _components(n: int, u: np.ndarray, v: np.ndarray) -> tuple[int, np.ndarray]:
    """Connected components of the undirected graph on ``n`` nodes with edges ``u``–``v``:
    ``(n_components, label)``, labelled in the order of each component's smallest node (as
    :func:`scipy.sparse.csgraph.connected_components` labels them). Every node carries the
    smallest node it is known to be joined to; edges and pointer jumping lower the labels
    until they stop changing, when each is its component's smallest node."""
    label = np.arange(n)
    while u.size:
        before = label.copy()
        low = np.minimum(label[u], label[v])
        np.minimum.at(label, u, low)
        np.minimum.at(label, v, low)
        label = label[label]
        if np.array_equal(label, before):
            break
    roots, label = np.unique(label, return_inverse=True)
    return roots.size, label


def kempe_search(
    graph: LinkGraph,
    weights: np.ndarray,
    log_pi: np.ndarray,
    chosen: np.ndarray,
    rng: np.random.Generator,
    max_passes: int = 20,
) -> np.ndarray:
    """:func:`block_search`, then passes of :func:`kempe_swaps` each followed by
    :func:`block_search`, while the hard objective rises."""
    chosen = block_search(graph, weights, log_pi, chosen, rng)
    for _ in range(max_passes):
        chosen, gain = kempe_swaps(graph, weights, log_pi, chosen)
        if gain <= 1e-9:
            break
        chosen = block_search(graph, weights, log_pi, chosen, rng)
    return chosen


def _block_graph(graph: LinkGraph, weights: np.ndarray, chosen: np.ndarray):
    """Blocks of ``chosen`` (components of its satisfied must-links): ``(block, between,
    size, cluster)`` with the block of every item, the summed link weights between blocks
    (symmetric CSR, no diagonal), block sizes and block clusters."""
    n = graph.n_items
    rows, cols, entry_w = graph.entries(weights)
    held = (entry_w > 0) & (chosen[rows] == chosen[cols])
    glue = sp.csr_matrix((np.ones(held.sum()), (rows[held], cols[held])), shape=(n, n))
    n_blocks, block = connected_components(glue, directed=False)
    between = component_weights(block, rows, cols, entry_w)
    size = np.bincount(block, minlength=n_blocks).astype(np.float64)
    cluster = np.empty(n_blocks, dtype=np.int64)
    cluster[block] = chosen
    return block, between, size, cluster


class _Cliques:
    """The clique of every block for the joint re-placement of :func:`block_search`, built on
    first use: the block and, of the blocks it cannot-links (most negative weight first), each
    that cannot-links all those taken before it, at most ``k`` in all. Returns ``(members,
    inner)`` (the blocks and the weights between them) or None when no other block qualifies.
    It depends on the block graph alone, so it is built once per search."""

    def __init__(self, between: sp.csr_matrix, k: int) -> None:
        self.between, self.k = between, k
        self.lookup = np.full(between.shape[0], -1, dtype=np.int64)
        self.cache: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}

    def of(self, b: int) -> tuple[np.ndarray, np.ndarray] | None:
        if b not in self.cache:
            self.cache[b] = self._build(b)
        return self.cache[b]

    def _build(self, b: int) -> tuple[np.ndarray, np.ndarray] | None:
        lo, hi = self.between.indptr[b], self.between.indptr[b + 1]
        partners, w = self.between.indices[lo:hi], self.between.data[lo:hi]
        candidates = partners[w < 0][np.argsort(w[w < 0])]
        sub = _dense_block(self.between, np.concatenate([[b], candidates]), self.lookup)
        # scanning the candidates in order, one is taken when it conflicts with all taken
        # before it: the next taken is the first later one that conflicts with all so far
        conflicts = sub < 0
        allowed = conflicts[:, 0].copy()
        kept = [0]
        while len(kept) < self.k:
            later = allowed[kept[-1] + 1 :]
            first = int(later.argmax()) if later.size else 0
            if not later.size or not later[first]:
                break
            kept.append(kept[-1] + 1 + first)
            allowed &= conflicts[:, kept[-1]]
        if len(kept) < 2:
            return None
        kept = np.array(kept)
        return np.concatenate([[b], candidates[kept[1:] - 1]]), sub[np.ix_(kept, kept)]


def _dense_block(matrix: sp.csr_matrix, rows: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    """``matrix[rows][:, rows]`` as a dense array, reading only those rows (``lookup`` is a
    scratch array of -1s as long as the matrix, restored on return; the matrix has no
    repeated entries)."""
    lookup[rows] = np.arange(rows.size)
    starts, ends = matrix.indptr[rows], matrix.indptr[rows + 1]
    lengths = ends - starts
    entry = np.arange(lengths.sum()) + np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
    where = lookup[matrix.indices[entry]]
    inside = where >= 0
    out = np.zeros((rows.size, rows.size))
    out[np.repeat(np.arange(rows.size), lengths)[inside], where[inside]] = matrix.data[entry][
        inside
    ]
    lookup[rows] = -1
    return out
