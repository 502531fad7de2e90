r"""Crowd clustering from links alone: mean-field variational Bayes (``LinkClustering``).

This is the relational part of BayesSCDC (Luo et al. 2018, §3) without the deep generative model
of the items: only the pairwise judgments inform the clusters.

Model
-----
.. math::
    \pi \sim \mathrm{Dir}(\gamma_0), \quad z_i \sim \mathrm{Cat}(\pi), \quad
    \alpha_m \sim \mathrm{Beta}(a^0), \quad \beta_m \sim \mathrm{Beta}(b^0), \\
    p(L_l = 1 \mid z_i = z_j) = \alpha_{m_l}, \quad p(L_l = 0 \mid z_i \ne z_j) = \beta_{m_l}

for every link :math:`l = (m_l, i, j, L_l)` (the two-coin model,
:mod:`crowdbayes.annotators.two_coin`).

Inference
---------
Mean field :math:`q(\pi)\prod_i q(z_i)\prod_m q(\alpha_m) q(\beta_m)` with categorical
:math:`q(z_i) = r_i`, Dirichlet :math:`q(\pi)` and Beta :math:`q(\alpha_m), q(\beta_m)`.
Coordinate ascent, one sweep:

1. :math:`q(\pi) = \mathrm{Dir}(\gamma_0 + \sum_i r_i)`, and :math:`q(\alpha_m), q(\beta_m)`
   by the conjugate two-coin updates with agreements :math:`\bar s_l = r_i^\top r_j`.
2. :math:`\log r_{ik} = \mathbb{E}\log\pi_k + \sum_{l \ni i} \mathbb{E}[w_l]\, r_{j(l)k}
   + \text{const}` (Luo et al. 2018, Eq. 14 without the observation term). The update of
   :math:`r_i` depends on its link partners, so items are updated in *colour classes* of a
   greedy colouring of the link graph: items of one class share no link, so updating a whole
   class at once is still an exact coordinate step, and the ELBO cannot decrease.

The evidence lower bound, tracked after every sweep (``elbo_history_``), is

.. math::
    \mathcal{L} = \sum_l (\bar s_l \mathbb{E}[w_l] + \mathbb{E}[c_l])
    + \sum_{i,k} r_{ik}\mathbb{E}\log\pi_k + H[q(z)]
    - \mathrm{KL}(q(\pi)\|p(\pi)) - \sum_m \mathrm{KL}(q(\alpha_m)\|p(\alpha_m))
    - \sum_m \mathrm{KL}(q(\beta_m)\|p(\beta_m)).

Sums over links
---------------
Every link enters a sweep only through sums: the two-coin counts of each worker and the
expected log-likelihood (:func:`link_local_stats`), and the messages to the items of one colour
class (:func:`link_messages`). So the links may be split into partitions, each summed on its
own with the current q(z), and the sums added: :func:`iterate_link_vb` runs the sweeps over any
such source of sums (:class:`LinkStatistics`, one partition holding every link, is the
in-memory fit; :func:`crowdbayes.distributed.fit_links_distributed` maps the same functions
over a Dask cluster), with the globals updated from the summed counts by
:func:`link_global_update`. Only the VB is a sum; the search below is not.

Search
------
Links alone identify clusters only through items shared between workers: a worker's own
grouping is always reproducible, and which global cluster each of their groups is must be
inferred from the few items they share with others (and by exclusion). Mean field from a random
q(z) gives every task its own arbitrary labelling and stalls there, so each restart starts from
a hard partition, one of two kinds in turn (restarts 0, 2, 4, … and 1, 3, …):

* a *contraction* start (:meth:`LinkGraph.contraction_start`): greedy additive edge
  contraction of the signed link graph, which merges groups without labelling them (a worker's
  groups first, then groups of different workers that share items, unless cannot-links
  outweigh them), then a colouring of the resulting components onto the K clusters that keeps
  conflicting components apart (:mod:`crowdbayes.models.clustering._contraction`);
* a *greedy* start (:meth:`LinkGraph.greedy_start`): items placed one at a time, most
  clear-cut first, each on the cluster its placed partners favour.

The start is improved by moves of whole groups of must-linked items: to another cluster,
trading clusters with a linked group, or re-placing a group and the groups it cannot-links
with jointly by an assignment problem (:meth:`LinkGraph.block_search`); then VB runs to
convergence, and ``n_polish`` rounds of group moves and Kempe-chain swaps (exchanging two
clusters on a whole chain of groups that cannot-link each other, :meth:`LinkGraph.kempe_swaps`)
on its solution, with the weights learnt by VB, each followed by VB, are kept while the ELBO
rises. The highest final ELBO wins.

This is a heuristic search. On the real MNIST annotations (``benchmarks/cluster_semicrowd.py``)
the alignment of the tasks' labellings is what makes it hard: the 91 tasks are tied together
only by the 465 images seen in more than one task (two tasks that share images share one in 94%
of cases), so the labels of a task's groups are fixed mostly by exclusion within tasks, a
Sudoku-like colouring problem (spectral starts on the signed link graph, simulated annealing of
the collapsed posterior of z, annealing of the tasks' label permutations on the shared images,
tabu colouring of the must-link components and region-wise greedy restarts were tried before the
contraction start and did no better than the greedy one). With K = 10 the contraction starts
reach an ELBO of −7,575 (five restarts; the greedy starts alone −8,119), while VB started from
the true digits reaches −7,536, and −7,374 polished: better optima exist. With K = 15 a digit
may take different clusters in different regions of tasks, and the search reaches −7,371, above
the −7,397 of VB polished from the true digits; K = 10 started from the 10 largest clusters of
that fit reaches −7,368, above the −7,374 near the truth at K = 10. Both have a lower per-task
NMI than the optimum near the truth (0.9811 and 0.9782 against 0.9835, the workers' own
groupings 0.9822): among the optima known, the model prefers ones that do not beat the workers
per task.

The contraction start is the better one on task-shaped data (simulated MNIST tasks: −8,682
against −9,637); on a few random pairs per item (the faces, 1,000 links) the greedy start is
(−645 against −709); taking both keeps the better.

Identifiability
---------------
A worker's sensitivity α_m is learnt only from images that somebody else also saw: an image
that one worker put in the wrong group and nobody else judged fits the links perfectly in the
cluster of that group, so VB puts it there instead of charging the worker an error. On the
MNIST annotations most of the measured sensitivity errors are of this kind (81 images move
away from their digit's cluster at the optimum near the truth, 75 of them seen by one worker),
and α is not identifiable from links: estimates do not track the α measured against the true
digits, while the specificities β do at that optimum (r = 0.94); see the real-data tests.

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS. (Eqs. 1, 14, 20, 25, 28–29.)
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from scipy.sparse.csgraph import connected_components

from ..._math import dirichlet_expected_log, dirichlet_kl
from ..._utils import RandomState, as_generator, spawn_generators
from ...annotators.two_coin import (
    link_expected_log_likelihood,
    link_message_weights,
    two_coin_expectations,
    two_coin_kl,
    two_coin_posterior,
    two_coin_statistics,
)
from ...data._io import TableLike
from ...data.links import Links, as_links
from ...exceptions import ConvergenceWarning, NotFittedError
from ...inference.driver import run_iterations
from ..labels.bayesian_dawid_skene import dirichlet_marginal_summary
from ._contraction import additive_contraction, component_weights, conflict_colouring

__all__ = [
    "LinkClustering",
    "LinkGraph",
    "LinkGlobals",
    "LinkStatistics",
    "link_model_elbo",
    "greedy_colouring",
    "colour_order",
    "link_weights",
    "link_local_stats",
    "link_messages",
    "link_global_update",
    "iterate_link_vb",
]


# ---------------------------------------------------------------------------- pure pieces
def greedy_colouring(n_items: int, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Colour the link graph so that no two linked items share a colour.

    Greedy (Welsh–Powell order: most-linked items first, each takes the smallest colour none
    of its neighbours has). Returns the colour of every item, ``0 … n_colours−1``.
    """
    rows, cols = np.concatenate([left, right]), np.concatenate([right, left])
    adjacency = sp.csr_matrix(
        (np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n_items, n_items)
    )
    indptr, indices = adjacency.indptr, adjacency.indices
    colour = np.full(n_items, -1, dtype=np.int64)
    for item in np.argsort(-np.diff(indptr), kind="stable"):
        neighbours = colour[indices[indptr[item] : indptr[item + 1]]]
        taken = np.zeros(neighbours.size + 1, dtype=bool)
        taken[neighbours[(neighbours >= 0) & (neighbours <= neighbours.size)]] = True
        colour[item] = int(np.argmin(taken))
    return colour


def colour_order(colours: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The internal item order of the VB sweeps from every item's colour: ``order`` (internal
    code → input code), ``position`` (its inverse) and ``bounds`` (colour class ``c`` is the
    internal range ``bounds[c]:bounds[c+1]``)."""
    order = np.argsort(colours, kind="stable")
    position = np.empty(colours.size, dtype=np.int64)
    position[order] = np.arange(colours.size)
    bounds = np.searchsorted(colours[order], np.arange(colours.max() + 2))
    return order, position, bounds


@dataclass
class LinkGraph:
    """Links in the internal item order of the VB sweeps.

    Items are renumbered ``0 … n_items−1`` so that each colour class is a contiguous range
    (``bounds[c]:bounds[c+1]``); ``indptr``/``indices``/``link_of_entry`` hold both directions
    of every link as a CSR structure whose values (the message weights) change every sweep.
    Repeated pairs keep separate entries, so their weights add up in the products.
    """

    n_items: int
    n_workers: int
    left: np.ndarray
    right: np.ndarray
    worker: np.ndarray
    labels: np.ndarray
    bounds: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    link_of_entry: np.ndarray

    @classmethod
    def build(
        cls, n_items: int, n_workers: int, left, right, worker, labels, *, colour: bool = True
    ) -> tuple[LinkGraph, np.ndarray]:
        """Renumber items by colour; returns the graph and ``order`` (internal code → input
        code)."""
        colours = greedy_colouring(n_items, left, right) if colour else np.arange(n_items)
        order, position, bounds = colour_order(colours)
        graph = cls.from_internal(
            n_items, n_workers, position[left], position[right], worker, labels, bounds
        )
        return graph, order

    @classmethod
    def from_internal(
        cls, n_items: int, n_workers: int, left, right, worker, labels, bounds
    ) -> LinkGraph:
        """The graph of some links whose item codes are already internal (colour-ordered, colour
        classes ``bounds[c]:bounds[c+1]``): all links (:meth:`build`) or one partition of them
        (:mod:`crowdbayes.distributed`), with ``n_items`` and ``bounds`` those of all links."""
        n_links = left.size
        rows = np.concatenate([left, right])
        cols = np.concatenate([right, left])
        links = np.concatenate([np.arange(n_links), np.arange(n_links)])
        by_row = np.argsort(rows, kind="stable")
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_items))])
        return cls(
            n_items,
            n_workers,
            left,
            right,
            worker,
            labels,
            np.asarray(bounds),
            indptr,
            cols[by_row],
            links[by_row],
        )

    def __post_init__(self) -> None:
        # one CSR block per colour class, built once; each sweep only refills its values
        self._blocks = []
        for lo, hi in zip(self.bounds[:-1], self.bounds[1:], strict=True):
            a, b = self.indptr[lo], self.indptr[hi]
            block = sp.csr_matrix(
                (np.zeros(b - a), self.indices[a:b], self.indptr[lo : hi + 1] - a),
                shape=(hi - lo, self.n_items),
            )
            self._blocks.append((int(lo), int(hi), block, self.link_of_entry[a:b]))

    @property
    def n_colours(self) -> int:
        return len(self._blocks)

    def colour_messages(self, colour: int, weights: np.ndarray, resp: np.ndarray):
        """``(lo, hi, m)``: the items ``lo:hi`` of one colour class and their messages
        ``m[i] = Σ_{l ∋ i} w_l r_{partner(l)}`` over this graph's links (one row per item)."""
        lo, hi, block, links = self._blocks[colour]
        weighted = sp.csr_matrix((weights[links], block.indices, block.indptr), shape=block.shape)
        return lo, hi, weighted @ resp

    def greedy_start(
        self, weights: np.ndarray, n_clusters: int, rng: np.random.Generator
    ) -> np.ndarray:
        """Starting q(z) by placing items one at a time, the most clear-cut first.

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
        n, k = self.n_items, n_clusters
        score = np.zeros((n, k))
        margin = np.zeros(n)
        jitter = rng.random((n, k)) * 1e-9  # random tie-breaks, fixed for this start
        placed = np.zeros(n, dtype=bool)
        chosen = np.empty(n, dtype=np.int64)
        for _ in range(n):
            item = int(np.argmax(np.where(placed, -np.inf, margin + jitter[:, 0])))
            cluster = int(np.argmax(score[item] + jitter[item]))
            placed[item], chosen[item] = True, cluster
            a, b = self.indptr[item], self.indptr[item + 1]
            partners = self.indices[a:b]
            np.add.at(score[:, cluster], partners, weights[self.link_of_entry[a:b]])
            if k > 1:
                top2 = -np.partition(-score[partners], 1, axis=1)[:, :2]
                margin[partners] = top2[:, 0] - top2[:, 1]
        return chosen

    def contraction_start(
        self, weights: np.ndarray, n_clusters: int, rng: np.random.Generator
    ) -> np.ndarray:
        """Starting clusters by greedy additive edge contraction of the signed link graph,
        then a conflict colouring of its components onto ``n_clusters`` clusters
        (:mod:`crowdbayes.models.clustering._contraction`). Returns the cluster of every item."""
        component = additive_contraction(self.n_items, self.left, self.right, weights, rng)
        between = component_weights(component, *self._entries(weights))
        sizes = np.bincount(component).astype(np.float64)
        return conflict_colouring(between, sizes, n_clusters, rng)[component]

    def block_search(
        self,
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
        version of the VB objective, ``Σ_l w_l [z_i = z_j] + Σ_i log π_{z_i}``; only
        improving moves are made, so it rises until no single move or swap helps.
        """
        k = log_pi.size
        block, between, size, cluster = self._block_graph(weights, chosen)
        n_blocks = size.size
        score = np.asarray(between @ np.eye(k)[cluster]) + size[:, None] * log_pi

        def move(b: int, target: int) -> None:
            lo, hi = between.indptr[b], between.indptr[b + 1]
            partners, w = between.indices[lo:hi], between.data[lo:hi]
            score[partners, cluster[b]] -= w
            score[partners, target] += w
            cluster[b] = target

        lookup = np.full(n_blocks, -1, dtype=np.int64)

        def reassign_clique(b: int, partners: np.ndarray, w: np.ndarray) -> bool:
            """Re-place ``b`` and the blocks it cannot-links with (those that all cannot-link
            each other: a worker's other groups in a task) jointly on distinct clusters, by
            an assignment problem; made only if the objective rises."""
            candidates = partners[w < 0][np.argsort(w[w < 0])]
            members = [b]
            sub = _dense_block(between, np.concatenate([[b], candidates]), lookup)
            kept = [0]
            for position in range(1, sub.shape[0]):
                if len(kept) < k and np.all(sub[position, kept] < 0):
                    kept.append(position)
                    members.append(int(candidates[position - 1]))
            if len(members) < 2:
                return False
            members = np.array(members)
            inner = sub[np.ix_(kept, kept)]
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
                    improved |= reassign_clique(b, partners, w)
            if not improved:
                break
        return cluster[block]

    def _entries(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Both directions of every link as entries ``(row, column, weight)``."""
        rows = np.repeat(np.arange(self.n_items), np.diff(self.indptr))
        return rows, self.indices, weights[self.link_of_entry]

    def _block_graph(self, weights: np.ndarray, chosen: np.ndarray):
        """Blocks of ``chosen`` (components of its satisfied must-links): ``(block, between,
        size, cluster)`` with the block of every item, the summed link weights between blocks
        (symmetric CSR, no diagonal), block sizes and block clusters."""
        n = self.n_items
        rows, cols, entry_w = self._entries(weights)
        held = (entry_w > 0) & (chosen[rows] == chosen[cols])
        glue = sp.csr_matrix((np.ones(held.sum()), (rows[held], cols[held])), shape=(n, n))
        n_blocks, block = connected_components(glue, directed=False)
        between = component_weights(block, rows, cols, entry_w)
        size = np.bincount(block, minlength=n_blocks).astype(np.float64)
        cluster = np.empty(n_blocks, dtype=np.int64)
        cluster[block] = chosen
        return block, between, size, cluster

    def kempe_swaps(
        self, weights: np.ndarray, log_pi: np.ndarray, chosen: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """One pass of Kempe-chain swaps over every pair of clusters; returns the new hard
        assignments and the rise of the hard objective (that of :meth:`block_search`).

        For clusters ``a`` and ``b``, a *chain* is a connected set of blocks of ``a`` and ``b``
        joined by net cannot-links (negative summed weight). Exchanging ``a`` and ``b`` on a whole
        chain leaves every link inside it as it was (its groups stay apart) and every link to
        the other clusters too; only the links between the chain and the rest of ``a ∪ b`` (net
        must-links, by construction) change. This relabels a whole region of tasks at once:
        the move that repairs two clusters swapped on one side of a shared image, which no
        sequence of single improving block moves reaches. The best improving chain of each pair
        is swapped.
        """
        block, between, size, cluster = self._block_graph(weights, chosen)
        between = between.tocoo()
        i, j, w = between.row, between.col, between.data
        n_blocks, k = size.size, log_pi.size
        total = 0.0
        for a in range(k):
            for b in range(a + 1, k):
                in_pair = (cluster == a) | (cluster == b)
                edge = in_pair[i] & in_pair[j]
                ii, jj, ww = i[edge], j[edge], w[edge]
                apart = ww < 0
                chains = sp.csr_matrix(
                    (np.ones(apart.sum()), (ii[apart], jj[apart])), shape=(n_blocks, n_blocks)
                )
                n_chains, chain = connected_components(chains, directed=False)
                crossing = chain[ii] != chain[jj]
                flip = ww * (1.0 - 2.0 * (cluster[ii] == cluster[jj]))
                gain = np.bincount(
                    chain[ii[crossing]], weights=flip[crossing], minlength=n_chains
                ).astype(np.float64)
                size_a = np.bincount(chain, weights=size * (cluster == a), minlength=n_chains)
                size_b = np.bincount(chain, weights=size * (cluster == b), minlength=n_chains)
                gain += (size_a - size_b) * (log_pi[b] - log_pi[a])
                gain[size_a + size_b == 0] = -np.inf
                best = int(np.argmax(gain))
                if gain[best] > 1e-9:
                    members = in_pair & (chain == best)
                    cluster[members] = np.where(cluster[members] == a, b, a)
                    total += float(gain[best])
        return cluster[block], total

    def kempe_search(
        self,
        weights: np.ndarray,
        log_pi: np.ndarray,
        chosen: np.ndarray,
        rng: np.random.Generator,
        max_passes: int = 20,
    ) -> np.ndarray:
        """:meth:`block_search`, then passes of :meth:`kempe_swaps` each followed by
        :meth:`block_search`, while the hard objective rises."""
        chosen = self.block_search(weights, log_pi, chosen, rng)
        for _ in range(max_passes):
            chosen, gain = self.kempe_swaps(weights, log_pi, chosen)
            if gain <= 1e-9:
                break
            chosen = self.block_search(weights, log_pi, chosen, rng)
        return chosen

    def agreement(self, resp: np.ndarray) -> np.ndarray:
        """s̄_l = r_i · r_j for every link."""
        return np.einsum("lk,lk->l", resp[self.left], resp[self.right])


def _dense_block(matrix: sp.csr_matrix, rows: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    """``matrix[rows][:, rows]`` as a dense array, reading only those rows (``lookup`` is a
    scratch array of -1s as long as the matrix, restored on return)."""
    lookup[rows] = np.arange(rows.size)
    out = np.zeros((rows.size, rows.size))
    for i, row in enumerate(rows):
        lo, hi = matrix.indptr[row], matrix.indptr[row + 1]
        where = lookup[matrix.indices[lo:hi]]
        inside = where >= 0
        out[i, where[inside]] = matrix.data[lo:hi][inside]
    lookup[rows] = -1
    return out


def _softmax_rows(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise softmax and its log (one pass; rows of K are short, so no scipy overhead)."""
    logits = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    totals = probs.sum(axis=1, keepdims=True)
    probs /= totals
    return probs, logits - np.log(totals)


def _soften(chosen: np.ndarray, n_clusters: int, smoothing: float) -> np.ndarray:
    """Rows of q(z) with ``1 − smoothing`` on the chosen cluster, the rest spread evenly."""
    if n_clusters == 1:
        return np.ones((chosen.size, 1))
    resp = np.full((chosen.size, n_clusters), smoothing / (n_clusters - 1))
    resp[np.arange(chosen.size), chosen] = 1.0 - smoothing
    return resp


def _entropy(resp: np.ndarray, log_resp: np.ndarray) -> float:
    return float(-np.sum(np.where(resp > 0, resp * log_resp, 0.0)))


def link_model_elbo(
    resp: np.ndarray,
    prevalence: np.ndarray,
    alpha: np.ndarray,
    beta: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    worker: np.ndarray,
    labels: np.ndarray,
    prior_prevalence: np.ndarray,
    prior_alpha: np.ndarray,
    prior_beta: np.ndarray,
) -> float:
    """The evidence lower bound of the links-only model (module docstring) at the given
    variational parameters: ``resp`` (n_items, K) rows of q(z), ``prevalence`` (K,) Dirichlet
    q(π), ``alpha``/``beta`` (n_workers, 2) Beta rows of q(α), q(β)."""
    with np.errstate(divide="ignore"):
        log_resp = np.log(resp)
    weights, offsets = link_message_weights(two_coin_expectations(alpha, beta), worker, labels)
    agreement = np.einsum("lk,lk->l", resp[left], resp[right])
    return float(
        link_expected_log_likelihood(agreement, weights, offsets)
        + resp.sum(axis=0) @ dirichlet_expected_log(prevalence)
        + _entropy(resp, log_resp)
        - dirichlet_kl(prevalence, prior_prevalence)
        - two_coin_kl(alpha, prior_alpha)
        - two_coin_kl(beta, prior_beta)
    )


@dataclass
class _State:
    resp: np.ndarray
    log_resp: np.ndarray
    prevalence: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray


# ------------------------------------------------------------ VB as sufficient statistics
@dataclass
class LinkGlobals:
    """The global factors of the VB: Dirichlet q(π) (``prevalence``, shape (K,)) and the Beta
    rows of every worker's q(α_m), q(β_m) (``alpha``, ``beta``, shape (n_workers, 2))."""

    prevalence: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray


def link_weights(graph: LinkGraph, globals_: LinkGlobals) -> tuple[np.ndarray, np.ndarray]:
    """``(E[w_l], E[c_l])`` of the links of ``graph`` (one partition) under ``globals_``: the
    message weights and constants of :func:`~crowdbayes.annotators.two_coin.link_message_weights`.
    """
    expected = two_coin_expectations(globals_.alpha, globals_.beta)
    return link_message_weights(expected, graph.worker, graph.labels)


def link_local_stats(
    graph: LinkGraph,
    resp: np.ndarray,
    weighted: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict:
    r"""Sufficient statistics of one partition of the links at :math:`q(z)` = ``resp``.

    With agreements :math:`\bar s_l = r_i^\top r_j` of the partition's links:
    ``alpha_counts``, ``beta_counts`` (n_workers, 2), the two-coin counts
    :math:`\sum_l \bar s_l (L_l, 1 - L_l)` and :math:`\sum_l (1 - \bar s_l)(1 - L_l, L_l)` per
    worker (:func:`~crowdbayes.annotators.two_coin.two_coin_statistics`), and
    ``expected_loglik``, :math:`\sum_l \bar s_l \mathbb{E}[w_l] + \mathbb{E}[c_l]` under the
    weights ``weighted = link_weights(graph, globals_)`` (0 without them). Every entry is a sum
    over links, so the statistics of several partitions add up (``add_stats``) to those of
    their union.
    """
    agreement = graph.agreement(resp)
    alpha_counts, beta_counts = two_coin_statistics(
        agreement, graph.worker, graph.labels, graph.n_workers
    )
    expected = 0.0 if weighted is None else link_expected_log_likelihood(agreement, *weighted)
    return {"alpha_counts": alpha_counts, "beta_counts": beta_counts, "expected_loglik": expected}


def link_messages(
    graph: LinkGraph, colour: int, weights: np.ndarray, resp: np.ndarray
) -> np.ndarray:
    r"""One partition's part of the messages to the items of colour class ``colour``:
    :math:`m_i = \sum_{l \ni i} \mathbb{E}[w_l]\, r_{\text{partner}(l)}` over its links, one
    row per item of the class (items ``bounds[c]:bounds[c+1]``). Messages of partitions add up."""
    return graph.colour_messages(colour, weights, resp)[2]


def link_global_update(stats: dict, resp: np.ndarray, priors) -> LinkGlobals:
    r"""The conjugate updates of the globals from the summed statistics of all partitions and
    the current q(z): :math:`q(\pi) = \mathrm{Dir}(\gamma_0 + \sum_i r_i)`,
    :math:`q(\alpha_m) = \mathrm{Beta}(a^0 + \text{alpha\_counts}_m)`,
    :math:`q(\beta_m) = \mathrm{Beta}(b^0 + \text{beta\_counts}_m)`."""
    prior_pi, prior_alpha, prior_beta = priors
    return LinkGlobals(
        prior_pi + resp.sum(axis=0),
        two_coin_posterior(prior_alpha, stats["alpha_counts"]),
        two_coin_posterior(prior_beta, stats["beta_counts"]),
    )


class LinkStatistics:
    """Where :func:`iterate_link_vb` gets its sums over links: here one partition holding every
    link (the in-memory fit); :mod:`crowdbayes.distributed` maps the same functions over the
    partitions of a cluster and adds their results.

    ``weigh(globals_)`` fixes the link weights for the coming sweep, ``stats(resp)`` returns
    :func:`link_local_stats` at ``resp`` (under the weights, once weighed), and
    ``messages(colour, resp)`` :func:`link_messages` of a colour class.
    """

    def __init__(self, graph: LinkGraph) -> None:
        self.graph = graph
        self.weighted: tuple[np.ndarray, np.ndarray] | None = None

    def weigh(self, globals_: LinkGlobals) -> None:
        self.weighted = link_weights(self.graph, globals_)

    def stats(self, resp: np.ndarray) -> dict:
        return link_local_stats(self.graph, resp, self.weighted)

    def messages(self, colour: int, resp: np.ndarray) -> np.ndarray:
        return link_messages(self.graph, colour, self.weighted[0], resp)


def iterate_link_vb(
    resp: np.ndarray,
    priors,
    source: LinkStatistics,
    bounds: np.ndarray,
    *,
    max_iter: int,
    tol: float | None,
    progress: bool = False,
    desc: str = "LinkClustering sweeps",
    callback=None,
):
    """Coordinate-ascent VB from q(z) = ``resp`` (internal item order, colour classes
    ``bounds``) with the sums over links taken by ``source``; returns ``(state, run)``.

    One sweep: the globals from the statistics of the previous q(z)
    (:func:`link_global_update`), the link weights under them, q(z) colour class by colour
    class from the summed messages, then the statistics at the new q(z), which give both the
    ELBO of this sweep and the globals of the next one. ``callback(sweep, elbo)`` (1-based)
    after every sweep.
    """
    prior_pi, prior_alpha, prior_beta = priors
    resp = resp.copy()
    state = _State(resp, np.log(resp), prior_pi, prior_alpha, prior_beta)
    stats = source.stats(state.resp)

    def sweep(iteration: int) -> float:
        nonlocal stats
        globals_ = link_global_update(stats, state.resp, priors)
        state.prevalence, state.alpha, state.beta = (
            globals_.prevalence,
            globals_.alpha,
            globals_.beta,
        )
        source.weigh(globals_)
        log_pi = dirichlet_expected_log(state.prevalence)
        for colour, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            messages = source.messages(colour, state.resp)
            state.resp[lo:hi], state.log_resp[lo:hi] = _softmax_rows(messages + log_pi)
        stats = source.stats(state.resp)
        elbo = (
            stats["expected_loglik"]
            + state.resp.sum(axis=0) @ log_pi
            + _entropy(state.resp, state.log_resp)
            - dirichlet_kl(state.prevalence, prior_pi)
            - two_coin_kl(state.alpha, prior_alpha)
            - two_coin_kl(state.beta, prior_beta)
        )
        if callback is not None:
            callback(iteration + 1, float(elbo))
        return elbo

    run = run_iterations(
        sweep,
        max_iter=max_iter,
        tol=tol,
        min_iter=2,
        progress=progress,
        desc=desc,
    )
    return state, run


# ------------------------------------------------------------------------------ estimator
class LinkClustering:
    r"""Cluster items from noisy must-link / cannot-link judgments by variational Bayes.

    Mean-field VB over cluster assignments :math:`q(z_i)`, cluster proportions
    :math:`q(\pi)` (Dirichlet) and every worker's two-coin sensitivity :math:`\alpha_m`
    (P(must-link | same cluster)) and specificity :math:`\beta_m` (P(cannot-link | different
    clusters)), Beta-distributed: the relational part of BayesSCDC (Luo et al. 2018) on its own.
    The maths is in :mod:`crowdbayes.models.clustering.link_vb`.

    Only items that appear in at least one link get an assignment: without features nothing
    is known about the others (observations attached to the :class:`~crowdbayes.data.links.
    Links` are ignored here; the SCDC models use them).

    Parameters
    ----------
    n_clusters : int
        K, the number of mixture components (an upper bound: with a small
        ``prior_prevalence`` unneeded components empty out; see ``n_clusters_used_``).
    prior_prevalence : float
        Symmetric Dirichlet concentration γ₀ of π.
    prior_alpha, prior_beta : (float, float)
        Beta prior parameters of every α_m and β_m (default Beta(1, 1), as in the paper).
    init_accuracy : (float, float)
        Beta parameters of α_m and β_m that weigh the links in the greedy start (default
        (10, 1), mean 0.91, the paper's initial variational parameters): every worker is first
        trusted alike; VB then learns each worker's accuracy.
    init_smoothing : float
        Probability spread over the other clusters when a hard start (greedy, group moves or
        ``init``) becomes q(z).
    n_polish : int
        Rounds of group moves and Kempe-chain swaps on the VB solution, each followed by VB,
        kept while the ELBO rises (module docstring, "Search"); 0 turns them off.
    n_init : int
        Restarts, alternating contraction and greedy starts (module docstring, "Search"),
        each with its own random tie-breaks; the run with the highest final ELBO is kept.
    max_iter, tol : int, float
        Sweeps per restart and the relative ELBO change that counts as converged.
    credible_level : float
        Mass of the central credible intervals of ``workers_``.
    random_state : int, Generator or None
        Seeds the restarts (each gets its own spawned generator).
    progress : bool
        Show a progress bar over the sweeps.

    Attributes
    ----------
    assignments_ : Series
        Most probable cluster of every linked item (index: the user's item ids). Clusters are
        numbered by decreasing expected size.
    probas_ : DataFrame
        Items × clusters posterior probabilities q(z_i = k).
    prevalence_ : Series
        Posterior mean of π.
    workers_ : DataFrame
        Per worker (index: worker id): ``alpha``, ``alpha_sd``, ``alpha_lower``,
        ``alpha_upper``, the same for ``beta`` (posterior mean, sd, central interval), and
        ``n_links``.
    n_clusters_used_ : int
        Clusters that are the most probable cluster of at least one item.
    elbo_ : float
        Final ELBO of the kept restart; ``elbo_history_`` the per-sweep values of its last VB
        run (non-decreasing) and ``restart_elbos_`` the final ELBO of every restart.
    n_iter_, converged_ : int, bool
        Of the kept restart.
    """

    def __init__(
        self,
        n_clusters: int = 10,
        *,
        prior_prevalence: float = 1.0,
        prior_alpha: tuple[float, float] = (1.0, 1.0),
        prior_beta: tuple[float, float] = (1.0, 1.0),
        init_accuracy: tuple[float, float] = (10.0, 1.0),
        init_smoothing: float = 0.1,
        n_polish: int = 2,
        n_init: int = 5,
        max_iter: int = 300,
        tol: float | None = 1e-8,
        credible_level: float = 0.9,
        random_state: RandomState = None,
        progress: bool = False,
    ) -> None:
        self.n_clusters = n_clusters
        self.prior_prevalence = prior_prevalence
        self.prior_alpha = prior_alpha
        self.prior_beta = prior_beta
        self.init_accuracy = init_accuracy
        self.init_smoothing = init_smoothing
        self.n_polish = n_polish
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.credible_level = credible_level
        self.random_state = random_state
        self.progress = progress

    # -------------------------------------------------------------------------- interface
    def fit(self, links: Links | TableLike, init: pd.Series | None = None) -> LinkClustering:
        """Fit to ``links`` (a :class:`~crowdbayes.data.links.Links`, DataFrame or path).

        Parameters
        ----------
        init : Series, optional
            Starting clusters (integers ``0 … n_clusters−1``) indexed by item id, e.g. from a
            clustering of the items' features; linked items missing from it start at random.
            Every restart starts from it (softened by ``init_smoothing``), so one restart is
            enough; the block moves still run afterwards.
        """
        self._check_params()
        links = as_links(links)
        linked = links.linked_codes
        compact = np.full(links.n_items, -1, dtype=np.int64)
        compact[linked] = np.arange(linked.size)
        graph, order = LinkGraph.build(
            linked.size,
            links.n_workers,
            compact[links.left_codes],
            compact[links.right_codes],
            links.worker_codes,
            links.labels,
        )
        priors = self._priors()
        start = None
        if init is not None:
            start = self._initial_resp(init, links.item_ids[linked[order]], priors[0].size)
        best, best_run = None, None
        self.restart_elbos_ = []
        generators = spawn_generators(as_generator(self.random_state), self.n_init)
        for restart, rng in enumerate(generators):
            resp = None if start is None else start(rng)
            state, run = self._run(graph, priors, rng, resp, contract=restart % 2 == 0)
            self.restart_elbos_.append(run.history[-1])
            if best_run is None or run.history[-1] > best_run.history[-1]:
                best, best_run = state, run
        self._warn_unless_converged(best_run)
        worker_links = np.bincount(links.worker_codes, minlength=links.n_workers)
        self._set_results(
            links.item_ids, linked[order], links.worker_ids, worker_links, best, best_run
        )
        return self

    def fit_predict(self, links: Links | TableLike) -> pd.Series:
        """Fit, then return ``assignments_``."""
        return self.fit(links).assignments_

    def predict(self) -> pd.Series:
        """The most probable cluster of every linked item."""
        self._check_fitted()
        return self.assignments_

    def predict_proba(self) -> pd.DataFrame:
        """Posterior cluster probabilities of every linked item."""
        self._check_fitted()
        return self.probas_

    # ---------------------------------------------------------------------------- internals
    def _check_fitted(self) -> None:
        if not hasattr(self, "assignments_"):
            raise NotFittedError("LinkClustering is not fitted yet: call fit(links) first")

    def _initial_resp(self, init: pd.Series, ids: pd.Index, k: int):
        if not isinstance(init, pd.Series):
            raise TypeError(f"init must be a pandas Series indexed by item; got {type(init)}")
        values = init.reindex(ids)
        known = values.notna().to_numpy()
        codes = values.to_numpy()[known]
        if known.any() and not np.all((codes == np.round(codes)) & (codes >= 0) & (codes < k)):
            raise ValueError(f"init: clusters must be integers in [0, {k - 1}]")
        if not known.any():
            raise ValueError("init: none of the linked items has a starting cluster")
        chosen = np.zeros(ids.size, dtype=np.int64)
        chosen[known] = codes.astype(np.int64)

        def start(rng: np.random.Generator) -> np.ndarray:
            chosen[~known] = rng.integers(k, size=int((~known).sum()))
            return _soften(chosen, k, self.init_smoothing)

        return start

    def _check_params(self) -> None:
        if int(self.n_clusters) != self.n_clusters or self.n_clusters < 1:
            raise ValueError(f"n_clusters must be a positive integer; got {self.n_clusters!r}")
        if self.n_init < 1:
            raise ValueError(f"n_init must be at least 1; got {self.n_init!r}")
        for name in ("prior_alpha", "prior_beta", "init_accuracy"):
            value = np.asarray(getattr(self, name), dtype=np.float64)
            if value.shape != (2,) or not np.all(value > 0):
                raise ValueError(f"{name} must be two positive numbers; got {getattr(self, name)}")
        if not self.prior_prevalence > 0:
            raise ValueError(f"prior_prevalence must be positive; got {self.prior_prevalence!r}")
        if not 0 < self.credible_level < 1:
            raise ValueError(f"credible_level must lie in (0, 1); got {self.credible_level!r}")

    def _priors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            np.full(int(self.n_clusters), float(self.prior_prevalence)),
            np.asarray(self.prior_alpha, dtype=np.float64),
            np.asarray(self.prior_beta, dtype=np.float64),
        )

    def _run(self, graph: LinkGraph, priors, rng: np.random.Generator, resp=None, contract=True):
        """One restart: a contraction start (``contract``) or a greedy one, improved by block
        moves, VB to convergence, then rounds of block moves and Kempe swaps on the VB
        solution, each followed by VB and kept only if the ELBO rises. Returns the final state
        and the driver result of its VB run."""
        prior_pi = priors[0]
        k = prior_pi.size
        start = np.tile(np.asarray(self.init_accuracy, dtype=np.float64), (graph.n_workers, 1))
        if resp is None:
            weights, _ = link_message_weights(
                two_coin_expectations(start, start), graph.worker, graph.labels
            )
            if contract:
                chosen = graph.contraction_start(weights, k, rng)
            else:
                chosen = graph.greedy_start(weights, k, rng)
            log_pi = dirichlet_expected_log(prior_pi + np.bincount(chosen, minlength=k))
            chosen = graph.block_search(weights, log_pi, chosen, rng)
            resp = _soften(chosen, k, self.init_smoothing)
        state, run = self._vb(graph, priors, resp)
        for _ in range(self.n_polish):
            weights, _ = link_message_weights(
                two_coin_expectations(state.alpha, state.beta), graph.worker, graph.labels
            )
            chosen = np.argmax(state.resp, axis=1)
            moved = graph.kempe_search(
                weights, dirichlet_expected_log(state.prevalence), chosen, rng
            )
            if np.array_equal(moved, chosen):
                break
            candidate, candidate_run = self._vb(
                graph, priors, _soften(moved, k, self.init_smoothing)
            )
            if candidate_run.history[-1] <= run.history[-1]:
                break
            state, run = candidate, candidate_run
        return state, run

    def _vb(self, graph: LinkGraph, priors, resp: np.ndarray):
        """Coordinate-ascent VB from q(z) = ``resp`` over all links as one partition
        (:func:`iterate_link_vb`, the loop the distributed fit runs too)."""
        return iterate_link_vb(
            resp,
            priors,
            LinkStatistics(graph),
            graph.bounds,
            max_iter=self.max_iter,
            tol=self.tol,
            progress=self.progress,
        )

    def _warn_unless_converged(self, run) -> None:
        """A :class:`ConvergenceWarning` (pointing at the user's ``fit`` call) when the kept
        run stopped at ``max_iter`` with a tolerance set."""
        if self.tol is not None and not run.converged:
            warnings.warn(
                f"LinkClustering did not converge in {self.max_iter} sweeps (tol={self.tol}); "
                "increase max_iter or tol",
                ConvergenceWarning,
                stacklevel=3,
            )

    def _set_results(
        self, item_ids: pd.Index, item_codes, worker_ids: pd.Index, worker_links, state, run
    ) -> None:
        """Results in the user's ids: ``item_codes`` are the codes (into ``item_ids``) of the
        items in internal order, ``worker_links`` every worker's number of links."""
        sizes = state.resp.sum(axis=0)
        relabel = np.argsort(-sizes, kind="stable")  # cluster 0 is the largest
        resp = state.resp[:, relabel]
        ids = item_ids[item_codes]
        # report items in the order of their codes (first appearance), not colour order
        back = np.argsort(item_codes, kind="stable")
        ids, resp = ids[back], resp[back]
        clusters = pd.RangeIndex(resp.shape[1], name="cluster")
        self.probas_ = pd.DataFrame(resp, index=pd.Index(ids, name="item"), columns=clusters)
        self.assignments_ = pd.Series(
            np.argmax(resp, axis=1), index=self.probas_.index, name="cluster"
        )
        prevalence = state.prevalence[relabel]
        self.prevalence_ = pd.Series(prevalence / prevalence.sum(), index=clusters, name="share")
        self.n_clusters_used_ = int(self.assignments_.nunique())
        self.workers_ = self._worker_table(worker_ids, worker_links, state)
        self.elbo_history_ = run.history
        self.elbo_ = run.history[-1]
        self.n_iter_, self.converged_ = run.n_iter, run.converged

    def _worker_table(self, worker_ids: pd.Index, worker_links, state: _State) -> pd.DataFrame:
        columns = {}
        for name, params in (("alpha", state.alpha), ("beta", state.beta)):
            mean, sd, lower, upper, _ = dirichlet_marginal_summary(params, self.credible_level)
            columns[name] = mean[:, 0]
            columns[f"{name}_sd"] = sd[:, 0]
            columns[f"{name}_lower"] = lower[:, 0]
            columns[f"{name}_upper"] = upper[:, 0]
        columns["n_links"] = np.asarray(worker_links, dtype=np.int64)
        return pd.DataFrame(columns, index=pd.Index(worker_ids, name="worker"))
