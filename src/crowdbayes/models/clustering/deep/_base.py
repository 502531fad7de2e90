"""What SCDC and BayesSCDC share: hyperparameter checks, input handling (observations and
links in the user's ids), device and seeding, link messages, the epoch loop and the results."""

from __future__ import annotations

import numbers
import warnings
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ...._utils import as_generator, check_is_fitted, spawn_generators
from ....data.links import Links
from ....inference.driver import run_iterations
from ._networks import DECODERS

__all__ = [
    "DeepClusteringBase",
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
    obs: torch.Tensor  # (n, D) float32 on the device
    item_ids: pd.Index
    links: LinkData | None
    shape: tuple[int, ...]


def row_chunks(n: int, size: int = 1024):
    """Slices of ``size`` rows covering ``0 … n−1`` (inference over all items without
    building one large batch)."""
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


def _restart_score(history: list[float]) -> float:
    """What picks the best restart: the objective averaged over the last (up to) three
    epochs, since each epoch's value is a minibatch estimate."""
    return float(np.mean(history[-3:]))


class DeepClusteringBase:
    """Shared validation, data handling, restarts and results; subclasses implement
    ``_check_params``, ``_build`` (networks and globals of one restart), ``_epoch`` (returns the
    epoch's objective), ``_posterior`` (q(z), the embedding and the mixture weights of all
    items), ``_predict_new`` and ``_worker_table``."""

    _name = "model"

    # ------------------------------------------------------------------ hyperparameters
    def _check_common_params(self) -> None:
        def positive_int(name):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")

        for name in ("n_clusters", "latent_dim", "epochs", "batch_size", "n_init"):
            positive_int(name)
        warmup = self.warmup_epochs
        if not isinstance(warmup, numbers.Integral) or isinstance(warmup, bool) or warmup < 0:
            raise ValueError(f"warmup_epochs must be a non-negative integer; got {warmup!r}")
        if self.n_clusters < 2:
            raise ValueError(f"n_clusters must be at least 2; got {self.n_clusters}")
        hidden = self.hidden
        if isinstance(hidden, numbers.Integral):
            hidden = (hidden,)
        try:
            hidden = tuple(int(h) for h in hidden)
        except TypeError:
            raise ValueError(
                f"hidden must be a tuple of layer widths; got {self.hidden!r}"
            ) from None
        if any(h < 1 for h in hidden):
            raise ValueError(f"hidden must hold positive widths; got {self.hidden!r}")
        self._hidden = hidden
        if self.decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}; got {self.decoder!r}")
        if not (np.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise ValueError(f"learning_rate must be positive; got {self.learning_rate!r}")
        weight = self.link_weight
        if not (isinstance(weight, numbers.Real) and np.isfinite(weight) and weight > 0):
            raise ValueError(f"link_weight must be a positive number; got {weight!r}")
        self._device = self._resolve_device()
        self._warmup = min(int(warmup), self.epochs // 2)  # at most half of the epochs

    def _resolve_device(self) -> torch.device:
        try:
            device = torch.device(self.device)
        except (RuntimeError, TypeError) as error:
            raise ValueError(f"device must be 'cpu' or 'cuda'; got {self.device!r}") from error
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(
                f"device={self.device!r} was asked for but CUDA is not available in this "
                "PyTorch build or on this machine; use device='cpu'"
            )
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda'; got {self.device!r}")
        return device

    @contextmanager
    def _seeded(self, rng: np.random.Generator):
        """Seed torch from ``rng`` without touching the caller's global torch state."""
        devices = [self._device] if self._device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices, device_type=self._device.type):
            torch.manual_seed(int(rng.integers(2**62)))
            yield

    # ------------------------------------------------------------------------- inputs
    def _observations(self, X) -> np.ndarray:
        X = np.asarray(X)
        if X.ndim < 2 or len(X) == 0:
            raise ValueError(f"X must be an array of shape (n_items, ...); got shape {X.shape}")
        flat = X.reshape(len(X), -1).astype(np.float32)
        if not np.all(np.isfinite(flat)):
            raise ValueError("X holds NaN or infinite values")
        if self.decoder == "bernoulli" and (flat.min() < 0 or flat.max() > 1):
            raise ValueError(
                "decoder='bernoulli' needs observations in [0, 1] (e.g. pixels / 255); "
                f"X ranges over [{flat.min():g}, {flat.max():g}]"
            )
        if self.decoder == "gaussian":  # affine rescaling: the model is unchanged up to a constant
            if not hasattr(self, "_standardize"):
                spread = float(flat.std()) or 1.0
                self._standardize = (flat.mean(axis=0), spread)
            shift, spread = self._standardize
            flat = (flat - shift) / spread
        return flat

    def _prepare(self, X, links, item_ids) -> ObservedData:
        flat = self._observations(X)
        n = len(flat)
        if item_ids is None:
            ids = pd.RangeIndex(n, name="item")
        else:
            ids = pd.Index(item_ids, name="item")
            if len(ids) != n:
                raise ValueError(f"item_ids has {len(ids)} ids but X has {n} rows")
            if ids.has_duplicates:
                raise ValueError("item_ids repeat")
        link_data = None
        if links is not None:
            if isinstance(links, Links):
                if (
                    links.observations is not None
                    and len(links.item_ids) == n
                    and (item_ids is None or links.item_ids.equals(ids))
                ):
                    ids = pd.Index(links.item_ids, name="item")
                    codes_left, codes_right = links.left_codes, links.right_codes
                else:
                    codes_left = ids.get_indexer(links.item_ids[links.left_codes])
                    codes_right = ids.get_indexer(links.item_ids[links.right_codes])
                    missing = np.flatnonzero((codes_left < 0) | (codes_right < 0))
                    if missing.size:
                        row = int(missing[0])
                        bad = links.item_ids[
                            links.left_codes[row] if codes_left[row] < 0 else links.right_codes[row]
                        ]
                        raise ValueError(
                            f"links: {missing.size} link(s) name an item that is not a row of X "
                            f"(first: item {bad!r} at link {row}); link ids must be item_ids"
                        )
                link_data = LinkData(
                    codes_left, codes_right, links.worker_codes, links.labels, links.worker_ids, n
                )
            elif isinstance(links, pd.DataFrame):
                checked = Links(links, observations=np.zeros((n, 1)), item_ids=ids)
                link_data = LinkData(
                    checked.left_codes,
                    checked.right_codes,
                    checked.worker_codes,
                    checked.labels,
                    checked.worker_ids,
                    n,
                )
            else:
                raise TypeError(
                    f"links must be a Links, a DataFrame or None; got {type(links).__name__}"
                )
        obs = torch.as_tensor(flat, device=self._device)
        return ObservedData(obs, ids, link_data, tuple(np.asarray(X).shape[1:]))

    # -------------------------------------------------------------------------- fitting
    def fit(self, X, links=None, item_ids=None):
        """Fit to observations ``X`` (n_items, ...) and optional ``links``.

        ``links`` is a :class:`~crowdbayes.data.links.Links` built with the same observations,
        or a DataFrame ``worker, left, right, label`` whose ids are ``item_ids`` (default
        ``0 … n−1``); None fits without annotations. Returns self.
        """
        self._check_params()
        if hasattr(self, "_standardize"):
            del self._standardize
        data = self._prepare(X, links, item_ids)
        rng = as_generator(self.random_state)
        best, best_history = None, None
        for child in spawn_generators(rng, self.n_init):  # restarts: keep the best objective
            with self._seeded(child):
                self._build(data, child)
                run = run_iterations(
                    lambda epoch, child=child: self._epoch(data, child, epoch),
                    max_iter=self.epochs,
                    progress=self.progress,
                    desc=self._name,
                )
            if best is None or _restart_score(run.history) > _restart_score(best_history):
                best, best_history = dict(self.__dict__), run.history
        self.__dict__.update(best)
        with self._seeded(rng):
            resp, embedding, weights = self._posterior(data)
        self.history_ = best_history
        self._set_results(data, resp, embedding, weights)
        return self

    def _warm(self, epoch: int) -> float:
        """Weight of the latent prior terms in the networks' loss at ``epoch`` (KL annealing
        over the warm-up: 1/warmup, 2/warmup, … then 1)."""
        return min(1.0, (epoch + 1) / self._warmup) if self._warmup else 1.0

    def _minibatches(self, n: int, rng: np.random.Generator):
        order = rng.permutation(n)
        size = min(self.batch_size, n)
        n_batches = max(n // size, 1)
        return [order[i * size : (i + 1) * size] for i in range(n_batches)]

    # -------------------------------------------------------------------------- results
    def _set_results(
        self, data: ObservedData, resp: np.ndarray, embedding: np.ndarray, weights: np.ndarray
    ) -> None:
        """The fitted attributes, clusters renumbered so that cluster 0 is the largest;
        ``weights`` are the mixture weights (π or E[π]) in the internal cluster order."""
        assigned = np.bincount(resp.argmax(axis=1), minlength=resp.shape[1])
        weight = resp.sum(axis=0)
        relabel = np.lexsort((-weight, -assigned))  # cluster 0 is the largest
        self._relabel = np.argsort(relabel)  # internal cluster -> reported cluster
        resp = resp[:, relabel]
        clusters = pd.RangeIndex(resp.shape[1], name="cluster")
        index = pd.Index(data.item_ids, name="item")
        self.probas_ = pd.DataFrame(resp, index=index, columns=clusters)
        self.assignments_ = pd.Series(resp.argmax(axis=1), index=index, name="cluster")
        self.n_clusters_used_ = int(self.assignments_.nunique())
        self.weights_ = pd.Series(weights[relabel], index=clusters, name="weight")
        columns = pd.Index([f"x{j}" for j in range(embedding.shape[1])], name="latent")
        self.embedding_ = pd.DataFrame(embedding, index=index, columns=columns)
        self.workers_ = self._worker_table(data.links)
        self.n_items_, self.obs_shape_ = len(index), data.shape

    def predict_proba(self) -> pd.DataFrame:
        """Posterior cluster probabilities of the training items (rows sum to 1)."""
        check_is_fitted(self, "probas_")
        return self.probas_

    def predict(self, X_new) -> np.ndarray:
        """MAP cluster of new observations from the amortised part alone (no links)."""
        check_is_fitted(self, "probas_")
        flat = self._observations(X_new)
        if flat.shape[1] != int(np.prod(self.obs_shape_)):
            raise ValueError(
                f"X_new has {flat.shape[1]} values per item; the model was fitted on "
                f"{int(np.prod(self.obs_shape_))}"
            )
        obs = torch.as_tensor(flat, device=self._device)
        resp = self._predict_new(obs)
        return self._relabel[resp.argmax(axis=1)]
