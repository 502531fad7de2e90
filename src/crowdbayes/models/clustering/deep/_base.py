r"""What SCDC and BayesSCDC share: parameters and their checks, input handling (observations
and links in the user's ids), device and seeding, the restarts and epoch loop, the results, and
saving the fitted networks.

Both models (Luo et al. 2018, §2–3) pair a Gaussian mixture in a latent space,
:math:`z_i \sim \mathrm{Cat}(\pi)`, :math:`x_i \mid z_i \sim \mathcal N(\mu_{z_i},
\Sigma_{z_i})`, with a neural decoder :math:`p(o_i \mid x_i; \gamma)` of the observations
and two-coin workers judging pairs of items; they differ in how the globals and the local
posteriors are inferred (:mod:`.scdc`, :mod:`.bayes_scdc`). A fit runs ``n_init`` restarts of
``epochs`` passes over minibatches; a BayesSCDC restart ends in its best-bound state (SCDC's in
its last), the best restart by the bound is kept, and a restart whose clusters contradict the
links (:func:`collapse_report`) is followed by up to ``collapse_restarts`` more, with a
:class:`CollapseWarning` (issue 19).

A saved model (:meth:`~crowdbayes.base.Estimator.save`) stores the networks as their
``state_dict`` tensors, on the CPU; loading rebuilds them from the parameters and the stored
shape of the observations and runs them on the model's ``device`` (on the CPU, with a warning,
where CUDA is missing).

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS.
"""

from __future__ import annotations

import copy
import numbers
import warnings
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...._utils import spawn_generators
from ....base import (
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    Interval,
    Options,
)
from ....data.links import Links
from ....inference.driver import run_iterations
from ....roles import Clusterer
from .._constraints import DeviceName, LayerWidths
from ._data import LinkData, ObservedData
from ._networks import DECODERS

__all__ = ["CollapseWarning", "DeepClusteringBase", "collapse_report"]


#: a fall of the bound from its best epoch to the last by more than this share of its size is
#: reported (the best-bound state is restored in every case)
_FALL = 0.1
#: a fit has collapsed when at least this share of the item pairs that the links' majority
#: calls cannot-link end in one cluster
COLLAPSE_SHARE = 0.5


class CollapseWarning(UserWarning):
    """A deep clustering fit collapsed (its clusters contradict the links) or its bound fell;
    the message says what was done about it."""


def collapse_report(resp: np.ndarray, links) -> str | None:
    """Whether the partition of ``resp`` (MAP clusters) contradicts the links' evidence.

    The evidence is the item pairs that the links call cannot-link by majority (more
    cannot-link than must-link judgments). If at least :data:`COLLAPSE_SHARE` of them are put
    in one cluster, clusters were emptied against the links (a collapse, e.g. every item in
    one cluster): returns a description, else None (also without links or such pairs)."""
    if links is None:
        return None
    left, right = np.minimum(links.left, links.right), np.maximum(links.left, links.right)
    key = left.astype(np.int64) * links.n_items + right
    votes = pd.DataFrame({"key": key, "label": 2 * links.labels.astype(int) - 1})
    balance = votes.groupby("key")["label"].sum()
    cannot = balance.index[balance.to_numpy() < 0].to_numpy()
    if cannot.size == 0:
        return None
    assigned = resp.argmax(axis=1)
    same = assigned[cannot // links.n_items] == assigned[cannot % links.n_items]
    share = float(same.mean())
    if share < COLLAPSE_SHARE:
        return None
    used = int(np.unique(assigned).size)
    return (
        f"{used} cluster(s) used; {same.sum()} of the {cannot.size} item pairs the links call "
        f"cannot-link ({share:.0%}) are in one cluster"
    )


class DeepClusteringBase(Clusterer):
    """Shared parameters, data handling, restarts, results and saving (module docstring).

    Subclasses declare their own ``parameter_constraints`` (extending
    ``_common_constraints``) and implement ``_make_networks`` (the encoder and decoder for
    observations of a given size), ``_build`` (networks and globals of one restart),
    ``_epoch`` (returns the epoch's objective), ``_posterior`` (q(z), the embedding and the
    mixture weights of all items), ``_predict_new`` and ``_worker_table``.
    """

    _abstract = True  # not an estimator of its own: not registered for crowdbayes.load
    _tags = {"features": "required", "new_items": True, "requires": ("torch",)}
    _diagnostics = {
        "best_epoch": "best_epoch_",
        "restarts": "n_restarts_",
        "collapsed_restarts": "collapsed_restarts_",
    }
    _traces = {"history_": "bound per epoch"}
    #: whether a restart ends in its best-bound state (:meth:`_train`); else in its last one
    _keep_best_bound = True
    _name = "model"
    #: rebuilt on load or only used while fitting: not saved
    _transient = ("_device", "_optimizer", "_resp_table", "_graph")
    #: the torch networks, saved as their state_dict
    _networks = ("encoder_", "decoder_")

    #: the parameters both models have
    _common_constraints: dict[str, list] = {
        "n_clusters": [Interval(numbers.Integral, 2, None)],
        "latent_dim": [POSITIVE_INT],
        "hidden": [LayerWidths()],
        "decoder": [Options(*DECODERS)],
        "epochs": [POSITIVE_INT],
        "batch_size": [POSITIVE_INT],
        "learning_rate": [POSITIVE],
        "warmup_epochs": [NON_NEGATIVE_INT],
        "n_init": [POSITIVE_INT],
        "collapse_restarts": [NON_NEGATIVE_INT],
        "link_weight": [POSITIVE],
        "device": [DeviceName()],
        "random_state": list(RANDOM_STATE),
        "progress": [bool],
    }

    # ------------------------------------------------------------------ settings of a fit
    def check_params(self) -> None:
        """The parameter constraints, then the device: CUDA asked for must be there."""
        super().check_params()
        self._resolve_device()

    def _settle(self) -> None:
        """Check the parameters and fix what a fit derives from them: the layer widths, the
        device (refused if CUDA is asked for and missing) and the warm-up length."""
        self.check_params()
        hidden = self.hidden
        self._hidden = (
            (int(hidden),)
            if isinstance(hidden, numbers.Integral)
            else tuple(int(h) for h in hidden)
        )
        self._device = self._resolve_device()
        self._warmup = min(int(self.warmup_epochs), self.epochs // 2)  # at most half the epochs

    def _resolve_device(self) -> torch.device:
        device = torch.device(self.device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(
                f"device={self.device!r} was asked for but CUDA is not available in this "
                "PyTorch build or on this machine; use device='cpu'"
            )
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
        """Fit to observations ``X`` (n_items, ...) and optional ``links``; or, as every
        :class:`~crowdbayes.roles.Clusterer`, to a :class:`~crowdbayes.data.links.Links` built
        with ``observations`` (``fit(links)``: its observations, links and item ids).

        ``links`` is a :class:`~crowdbayes.data.links.Links` built with the same observations,
        or a DataFrame ``worker, left, right, label`` whose ids are ``item_ids`` (default
        ``0 … n−1``); None fits without annotations. Returns self.

        Each restart keeps its best-bound state (:meth:`_train`); a restart whose result
        contradicts the links (:func:`collapse_report`) is followed by up to
        ``collapse_restarts`` further restarts, and the best bound among the restarts that did
        not collapse is kept, with a :class:`CollapseWarning` saying what happened.
        """
        self._settle()
        if isinstance(X, Links):
            if X.observations is None or links is not None:
                raise ValueError(
                    f"{type(self).__name__}.fit(links): the Links need the items' observations "
                    "(Links(table, observations)); or call fit(X, links)"
                )
            X, links, item_ids = X.observations, X, X.item_ids
        if hasattr(self, "_standardize"):
            del self._standardize
        data = self._prepare(X, links, item_ids)
        rng = self.random_generator()
        extra = int(self.collapse_restarts) if data.links is not None else 0
        children = spawn_generators(rng, self.n_init + extra)
        fits, notes = [], []
        for number, child in enumerate(children):
            if number >= self.n_init and any(fit["collapse"] is None for fit in fits):
                break  # a restart beyond n_init only replaces collapsed ones
            with self._seeded(child):
                self._build(data, child)
                trace, best_epoch, fell = self._train(data, child)
                resp, _, _ = self._posterior(data)
            collapse = collapse_report(resp, data.links)
            state = dict(self.__dict__)
            fits.append(
                dict(state=state, trace=trace, best=best_epoch, collapse=collapse, fell=fell)
            )
            if fell is not None:
                notes.append(f"restart {number + 1}: {fell}")
            if collapse is not None:
                notes.append(f"restart {number + 1} collapsed ({collapse})")
        sound = [i for i, fit in enumerate(fits) if fit["collapse"] is None]
        kept = max(sound or range(len(fits)), key=lambda i: self._score(fits[i]))
        chosen = fits[kept]
        self.__dict__.update(chosen["state"])
        self._warn_collapses(fits, kept, notes)
        with self._seeded(rng):
            resp, embedding, weights = self._posterior(data)
        self.history_ = chosen["trace"]
        self.best_epoch_ = int(chosen["best"])
        self.n_restarts_ = len(fits)
        self.collapsed_restarts_ = sum(fit["collapse"] is not None for fit in fits)
        self._set_results(data, resp, embedding, weights)
        return self

    def _train(self, data: ObservedData, rng: np.random.Generator):
        """``epochs`` epochs of one restart, keeping its best-bound state.

        The bound of each epoch (``_epoch``'s estimate) is tracked; from the end of the
        warm-up on (before it the latent prior terms are not yet fully weighted and the
        globals restart when it ends), the state after the epoch with the highest bound is
        snapshotted and restored at the end, so longer training never ends below the best
        earlier state. Returns the trace, the epoch kept and a note if the bound fell from it
        by more than ``_FALL`` of its magnitude by the last epoch (else None)."""
        if not self._keep_best_bound:
            run = run_iterations(
                lambda epoch: self._epoch(data, rng, epoch),
                max_iter=self.epochs,
                progress=self.progress,
                desc=self._name,
            )
            return list(run.history), len(run.history) - 1, None
        first = min(self._warmup, self.epochs - 1)
        best = {"value": -np.inf, "epoch": first, "state": None}

        def step(epoch: int) -> float:
            value = self._epoch(data, rng, epoch)
            if epoch >= first and np.isfinite(value) and value > best["value"]:
                best.update(value=value, epoch=epoch, state=self._snapshot())
            return value

        run = run_iterations(step, max_iter=self.epochs, progress=self.progress, desc=self._name)
        trace = list(run.history)
        fell = None
        if best["state"] is not None:
            last = trace[-1]
            if best["epoch"] < len(trace) - 1:
                self.__dict__.update(best["state"])
                drop = best["value"] - last
                if drop > _FALL * max(1.0, abs(best["value"])):
                    fell = (
                        f"the bound fell from {best['value']:.4g} (epoch {best['epoch'] + 1}) to "
                        f"{last:.4g} (epoch {len(trace)}); the state of epoch "
                        f"{best['epoch'] + 1} is kept"
                    )
        return trace, best["epoch"], fell

    def _score(self, fit: dict) -> float:
        """What ranks restarts: the bound of the state kept, or (without best-bound keeping)
        the bound averaged over the last three epochs, each a minibatch estimate."""
        if self._keep_best_bound:
            return fit["trace"][fit["best"]]
        return float(np.mean(fit["trace"][-3:]))

    def _snapshot(self) -> dict[str, Any]:
        """A copy of the model's state (networks, globals, tables) without the optimiser and
        the recorded CUDA graph, which are only needed while training."""
        skip = {"_optimizer", "_graph"}
        return {
            name: copy.deepcopy(value) for name, value in self.__dict__.items() if name not in skip
        }

    def _warn_collapses(self, fits: list[dict], kept: int, notes: list[str]) -> None:
        collapsed = [fit for fit in fits if fit["collapse"] is not None]
        if not notes:
            return
        if collapsed and fits[kept]["collapse"] is None:
            outcome = (
                f"kept restart {kept + 1} of {len(fits)} (best bound of those "
                "that did not collapse)"
            )
        elif collapsed:
            outcome = (
                f"every one of {len(fits)} restarts collapsed; the best bound is kept. "
                + self._collapse_advice()
            )
        else:
            outcome = "the best-bound state is kept"
        warnings.warn(
            f"{type(self).__name__}: " + "; ".join(notes) + f". {outcome}",
            CollapseWarning,
            stacklevel=3,
        )

    def _collapse_advice(self) -> str:
        """What the warning suggests when every restart collapsed."""
        return "Try more epochs, a smaller link_weight or more restarts (n_init)"

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
        # a parameter of the models whose workers have credible intervals (BayesSCDC)
        self.credible_level_ = getattr(self, "credible_level", None)
        self.n_items_, self.obs_shape_ = len(index), data.shape

    def predict(self, X_new=None) -> pd.Series | np.ndarray:
        """The most probable cluster of every item of the fit (``assignments_``); with
        ``X_new``, the MAP cluster of new observations from the amortised part alone (no
        links)."""
        self.check_is_fitted()
        if X_new is None:
            return self.assignments_
        flat = self._observations(X_new)
        if flat.shape[1] != int(np.prod(self.obs_shape_)):
            raise ValueError(
                f"X_new has {flat.shape[1]} values per item; the model was fitted on "
                f"{int(np.prod(self.obs_shape_))}"
            )
        obs = torch.as_tensor(flat, device=self._device)
        resp = self._predict_new(obs)
        return self._relabel[resp.argmax(axis=1)]

    # ------------------------------------------------------------------ saving and loading
    def _get_state(self) -> dict[str, Any]:
        """The fitted state with the networks as their ``state_dict`` and every tensor on the
        CPU (a file saved from a GPU loads anywhere)."""
        state = super()._get_state()
        for name in self._networks:
            if state.get(name) is not None:  # an optional network may be None or absent
                state[name] = state[name].state_dict()
        return _to_cpu(state)

    def _set_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`_get_state`: the networks rebuilt from the parameters and the stored
        shape of the observations, their weights loaded, every tensor on the model's device."""
        state = dict(state)
        weights = {name: state.pop(name, None) for name in self._networks}
        super()._set_state(state)
        self._device = self._loaded_device()
        with torch.random.fork_rng(devices=[]):  # the initial weights are overwritten below
            networks = self._make_networks(int(np.prod(self.obs_shape_)))
        for name, network in zip(self._networks, networks, strict=True):
            if network is not None:  # None: an optional network this fit did not use
                network.load_state_dict(weights[name])
                network = network.to(self._device)
            setattr(self, name, network)
        for name, value in list(vars(self).items()):
            if isinstance(value, torch.Tensor):
                setattr(self, name, value.to(self._device))

    def _loaded_device(self) -> torch.device:
        """The device of a loaded model: its ``device``, or the CPU where CUDA is missing."""
        try:
            return self._resolve_device()
        except ValueError:
            warnings.warn(
                f"{type(self).__name__} was fitted with device={self.device!r}, which is not "
                "available here; it runs on the CPU",
                UserWarning,
                stacklevel=4,
            )
            return torch.device("cpu")


def _to_cpu(value: Any) -> Any:
    """``value`` with every tensor in it (in dicts, lists and tuples) detached and on the CPU."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: _to_cpu(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_to_cpu(item) for item in value)
    return value
