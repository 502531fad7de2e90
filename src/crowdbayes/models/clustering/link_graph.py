r"""The signed link graph of :class:`~crowdbayes.models.clustering.LinkClustering`, in the
item order of its variational sweeps.

A link :math:`l = (m_l, i, j, L_l)` is an edge between items :math:`i` and :math:`j`; under
the two-coin model (:mod:`crowdbayes.annotators.two_coin`) it enters the mean-field update of
:math:`q(z_i)` only through the message :math:`\mathbb{E}[w_l]\, r_j` (Luo et al. 2018,
Eq. 14), so the update of an item depends on its link partners alone. Two items that share no
link can therefore be updated at once without changing the result of a sequential coordinate
ascent. A *colouring* of the graph, in which linked items never share a colour, splits the
items into such independent *colour classes*: a sweep updates one class at a time, each class
by one sparse product, and the evidence lower bound still cannot decrease.

:func:`greedy_colouring` colours the graph (Welsh & Powell 1967: most-linked items first, each
taking the smallest colour its neighbours lack); :class:`LinkGraph` renumbers the items so that
every colour class is a contiguous range and holds both directions of every link in compressed
sparse rows, whose values (the message weights) change every sweep. The sums of the VB over
these links are in :mod:`crowdbayes.models.clustering.link_vb`, the searches over hard
partitions in :mod:`crowdbayes.models.clustering.link_search`.

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS.
Welsh, D. J. A. & Powell, M. B. (1967). An upper bound for the chromatic number of a graph and
its application to timetabling problems. The Computer Journal 10(1).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from ...data.links import Links

#: links per block of :meth:`LinkGraph.agreement` (two gathered blocks of K doubles in cache)
AGREEMENT_BLOCK = 32_768

__all__ = ["LinkGraph", "greedy_colouring", "colour_order"]


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
    def from_links(cls, links: Links) -> tuple[LinkGraph, np.ndarray]:
        """The graph of ``links`` over its linked items only (:meth:`build`; items that appear
        in no link are left out). Returns the graph and ``items``: the code in ``links`` of
        every internal item (internal code → ``links.item_ids`` position)."""
        linked = links.linked_codes
        compact = np.full(links.n_items, -1, dtype=np.int64)
        compact[linked] = np.arange(linked.size)
        graph, order = cls.build(
            linked.size,
            links.n_workers,
            compact[links.left_codes],
            compact[links.right_codes],
            links.worker_codes,
            links.labels,
        )
        return graph, linked[order]

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

    @cached_property
    def kernel_arrays(self) -> tuple[np.ndarray, ...]:
        """The graph as the compiled VB loop (``_link_kernel.c``) reads it: ``indptr`` and
        ``bounds`` (int64), ``indices``, every entry's link code, ``left``, ``right`` and every
        link's code (int32), where a link's code is ``2 · worker + label``: its weight and
        constant depend on nothing else."""
        if self.n_items >= 2**31 or 2 * self.n_workers >= 2**31:
            raise ValueError("kernel_arrays: more than 2**31 items or workers")
        code = (2 * np.asarray(self.worker, dtype=np.int64) + self.labels).astype(np.int32)
        return (
            np.ascontiguousarray(self.indptr, dtype=np.int64),
            np.ascontiguousarray(self.indices, dtype=np.int32),
            np.ascontiguousarray(code[self.link_of_entry]),
            np.ascontiguousarray(self.left, dtype=np.int32),
            np.ascontiguousarray(self.right, dtype=np.int32),
            code,
            np.ascontiguousarray(self.bounds, dtype=np.int64),
        )

    def entries(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Both directions of every link as entries ``(row, column, weight)``, ``weights``
        given per link."""
        rows = np.repeat(np.arange(self.n_items), np.diff(self.indptr))
        return rows, self.indices, weights[self.link_of_entry]

    def agreement(self, resp: np.ndarray) -> np.ndarray:
        """s̄_l = r_i · r_j for every link, in blocks of :data:`AGREEMENT_BLOCK` links: the two
        gathered blocks stay in cache instead of two links × K copies in memory (on 1M links
        and K = 10, 1.3–2.4× faster; ``benchmarks/roofline/results/roofline.md``)."""
        out = np.empty(len(self.left))
        for start in range(0, len(out), AGREEMENT_BLOCK):
            part = slice(start, start + AGREEMENT_BLOCK)
            np.einsum("lk,lk->l", resp[self.left[part]], resp[self.right[part]], out=out[part])
        return out
