"""Data of the deep crowd clustering models on a torch device: the items' observations, the
links as a graph whose messages are sparse products, and the host ↔ device copies.

The link message to item :math:`i` in the local mean field of BayesSCDC (Luo et al. 2018,
Eq. 14) is :math:`\\sum_{l \ni i} \\mathbb{E}[w_l]\\, r_{j(l)}`, a product of a row of the
weighted link graph with the table of every item's :math:`q(z_j)`; :class:`LinkData` holds the
graph as compressed sparse rows so that the messages of a minibatch are one sparse product
(:func:`csr_rows`), or one dense product of fixed shape (:meth:`LinkData.padded_entries`) for
the recorded CUDA graph.

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

__all__ = [
    "LinkData",
    "ObservedData",
    "csr_rows",
    "row_chunks",
    "to_device",
    "to_host",
]


def to_device(array, device: torch.device, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``array`` as a tensor on ``device``. A copy to a GPU goes through pinned memory without
    blocking: a plain copy from pageable memory makes the host wait until the GPU has run
    everything queued before it, which in a loop of small steps serialises host and GPU."""
    tensor = torch.as_tensor(array, dtype=dtype)
    if device.type != "cuda":
        return tensor
    return tensor.pin_memory().to(device, non_blocking=True)


def to_host(*tensors: torch.Tensor) -> list[np.ndarray]:
    """The ``tensors`` as float64 numpy arrays of the same shapes, fetched in one copy (each
    copy from a GPU waits for it to finish its queue)."""
    flat = torch.cat([t.detach().reshape(-1).to(torch.float64) for t in tensors])
    parts = np.split(flat.cpu().numpy(), np.cumsum([t.numel() for t in tensors])[:-1])
    return [part.reshape(t.shape) for part, t in zip(parts, tensors, strict=True)]


def csr_rows(
    indptr: np.ndarray, columns: np.ndarray, values: np.ndarray, shape, device: torch.device
) -> torch.Tensor:
    """A torch sparse CSR matrix (float64) on ``device`` from scipy-style CSR arrays."""
    with warnings.catch_warnings():  # torch flags its sparse CSR support as beta, and some
        # versions warn that invariant checks are off even when told so (check_invariants)
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly")
        return torch.sparse_csr_tensor(
            to_device(indptr, device, torch.int64),
            to_device(columns, device, torch.int64),
            to_device(values, device, torch.float64),
            size=tuple(shape),
            check_invariants=False,
        )


@dataclass
class LinkData:
    """Links in item codes (rows of the observations), with the link graph as CSR rows so
    that the message ``Σ_{l ∋ i} w_l r_{partner(l)}`` of a minibatch is one sparse product
    (:func:`csr_rows` of :meth:`batch_entries`)."""

    left: np.ndarray
    right: np.ndarray
    worker: np.ndarray
    labels: np.ndarray
    worker_ids: pd.Index
    n_items: int

    def __post_init__(self) -> None:
        rows = np.concatenate([self.left, self.right])
        cols = np.concatenate([self.right, self.left])
        order = np.argsort(rows, kind="stable")
        self._indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=self.n_items))])
        self._indices = cols[order]
        self._link_of_entry = np.concatenate([np.arange(self.n_links)] * 2)[order]

    @property
    def n_links(self) -> int:
        return len(self.labels)

    @property
    def n_workers(self) -> int:
        return len(self.worker_ids)

    def batch_entries(self, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The link-graph entries of the batch's items: ``(indptr, partner, link)``, rows in
        batch order."""
        starts, stops = self._indptr[batch], self._indptr[batch + 1]
        counts = stops - starts
        indptr = np.concatenate([[0], np.cumsum(counts)])
        entries = np.repeat(starts - indptr[:-1], counts) + np.arange(indptr[-1])
        return indptr, self._indices[entries], self._link_of_entry[entries]

    @property
    def max_degree(self) -> int:
        """Most links of any one item."""
        return int(np.diff(self._indptr).max(initial=0))

    def padded_entries(self, batch: np.ndarray, values_of_links) -> tuple[np.ndarray, np.ndarray]:
        """The batch's link-graph entries in fixed-shape form, (len(batch), max_degree) arrays
        ``(partner, value)``: row i holds item batch[i]'s partners and ``values_of_links(link
        codes)`` of their links, padded with partner 0 and value 0."""
        indptr, partner, link = self.batch_entries(batch)
        row = np.repeat(np.arange(len(batch)), np.diff(indptr))
        slot = np.arange(len(partner)) - indptr[row]
        partners = np.zeros((len(batch), self.max_degree), dtype=np.int64)
        values = np.zeros((len(batch), self.max_degree))
        partners[row, slot], values[row, slot] = partner, values_of_links(link)
        return partners, values

    def agreement(self, resp, links: np.ndarray | slice = slice(None)):
        """``s̄_l = r_left · r_right`` for the chosen links; ``resp`` (n_items, K) is a numpy
        array or a torch tensor (the result is of the same kind, on the same device)."""
        left, right = self.left[links], self.right[links]
        if isinstance(resp, torch.Tensor):
            left, right = (to_device(codes, resp.device) for codes in (left, right))
        return (resp[left] * resp[right]).sum(-1)


@dataclass
class ObservedData:
    """The inputs of one fit: the flattened observations on the device, the items' ids, the
    links (None without annotations) and the shape of one observation."""

    obs: torch.Tensor  # (n, D) float32 on the device
    item_ids: pd.Index
    links: LinkData | None
    shape: tuple[int, ...]


def row_chunks(n: int, size: int = 1024):
    """Slices of ``size`` rows covering ``0 … n−1`` (inference over all items without
    building one large batch)."""
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]
