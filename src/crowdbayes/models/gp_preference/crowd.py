"""crowdGPPL: consensus and personal preferences from crowds (Simpson & Gurevych, 2020).

Worker ``j``'s utility for item ``x`` is (2020, Eq. 5)

.. math:: f(x, j) = t(x) + Σ_{c=1}^{C} v_c(x) \\, w_c(j),

with GP priors ``t ~ GP(0, k/s^{(t)})``, ``v_c ~ GP(0, k/s_c^{(v)})`` over item features and
``w_c ~ GP(0, k_w/s_c^{(w)})`` over worker features, or ``w_{c,j} ~ N(0, 1/s_c^{(w)})``
independently when there are none, each inverse scale with a gamma prior. A comparison by
worker ``j`` prefers ``a`` over ``b`` with probability ``Φ((f(a, j) - f(b, j)) / α)``.

Inference is the SVI of :mod:`.svi` with a mean-field posterior over ``t``, each ``v_c`` and
each ``w_c`` (2020, Eqs. 20–24, 32–38): the likelihood is linearised about the current mean
difference ``d̂`` (slope ``g``) and every block receives the linear-Gaussian message of the
comparisons given the others' current means, e.g. for ``v_c`` the coefficient is
``g ŵ_{c,j}`` with second moment ``g² E[w_{c,j}²]`` (Eqs. 32–33), for ``w_c`` it is
``g (v̂_c(a) - v̂_c(b))`` with second moment ``g² E[(v_c(a) - v_c(b))²]`` (Eqs. 36–37). Each
block then takes a natural-gradient step of size ``ρ_n`` (:func:`.svi.natural_gradient_step`)
and its inverse scale is updated (Eq. 15).

Deviation, for workers without features: each worker's ``w_{·,j}`` is a local parameter. Its
mini-batch message is scaled by ``n_j / n_j^{batch}`` (its own comparisons in all and in the
batch) and only workers in the batch move, rather than scaling by ``P / P_n`` and pulling
every absent worker toward the prior, which with thousands of workers would keep most of them
at the prior. With worker features the inducing workers are global, as in the paper.

Predictions (2020, Eq. 25, App. D): ``E[f(x, j)] = t̂(x) + Σ_c v̂_c(x) ŵ_{c,j}`` and
``Var[f(a, j) - f(b, j)] = Var[Δt] + Σ_c (ŵ_{c,j}² + ω_{c,j}) Var[Δv_c] + ω_{c,j} Δv̂_c²``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..._persist import load_arrays, save_arrays
from ..._utils import as_generator
from ...data._validate import show_values
from ...data.comparisons import Comparisons, as_comparisons
from ...exceptions import DataWarning
from ...kernels import Kernel, kmeans_inducing_points, make_kernel
from ._likelihood import difference_scale
from .ep import pair_probabilities
from .estimator import GPPreferenceEP
from .svi import (
    GPPL,
    GammaFactor,
    GaussianFactor,
    InducingProjection,
    encode_pairs,
    natural_gradient_step,
    probit_linearisation,
    quadratic_rows,
)

__all__ = ["CrowdGPPL"]


class _DiagonalWorkers:
    """``q(w_{c,j}) = N(mean, 1/precision)`` independently per component and worker."""

    def __init__(self, n_components: int, n_workers: int, prior: GammaFactor, rng) -> None:
        self.scales = [prior] * n_components
        # random means break the symmetry between V = 0 and W = 0
        mean = rng.standard_normal((n_components, n_workers)) / np.sqrt(prior.mean)
        self.precision = np.full((n_components, n_workers), prior.mean)
        self.linear = self.precision * mean

    @property
    def mean(self) -> np.ndarray:
        return self.linear / self.precision

    @property
    def var(self) -> np.ndarray:
        return 1.0 / self.precision

    def moments(self, workers: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(E[w], Var[w])`` (C, n) for worker codes (None: all)."""
        mean, var = self.mean, self.var
        return (mean, var) if workers is None else (mean[:, workers], var[:, workers])

    def component_moments(self, c: int, workers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.linear[c, workers] / self.precision[c, workers], 1.0 / self.precision[
            c, workers
        ]

    def update(self, c, workers, prec_w, lin_w, targets, rho, counts, prior: GammaFactor) -> None:
        n = self.precision.shape[1]
        seen_batch = np.bincount(workers, minlength=n)
        present = seen_batch > 0
        scale = np.where(present, counts / np.maximum(seen_batch, 1), 0.0)
        prec = self.scales[c].mean + scale * np.bincount(workers, prec_w, minlength=n)
        lin = scale * np.bincount(workers, lin_w * targets, minlength=n)
        self.precision[c, present] = (1 - rho) * self.precision[c, present] + rho * prec[present]
        self.linear[c, present] = (1 - rho) * self.linear[c, present] + rho * lin[present]
        mean, var = self.mean[c], self.var[c]
        self.scales[c] = GammaFactor(
            prior.shape0,
            prior.rate0,
            prior.shape0 + 0.5 * n,
            prior.rate0 + 0.5 * float(np.sum(mean * mean + var)),
        )


class _InducingWorkers:
    """``q(w_c(u))`` through inducing workers with features (2020, Eqs. 36–37, 41)."""

    def __init__(self, projection: InducingProjection, W: np.ndarray, n_components, prior, rng):
        self.projection = projection
        self.A = projection.weights(W)
        self.scales = [prior] * n_components
        m = projection.n_inducing
        self.factors = [
            GaussianFactor(
                prior.mean * projection.K_inv,
                prior.mean
                * projection.K_inv
                @ (projection.chol @ rng.standard_normal(m) / np.sqrt(prior.mean)),
            )
            for _ in range(n_components)
        ]

    def _component(self, c: int, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        prior_var = self.projection.kernel.variance - quadratic_rows(A, self.projection.K_mm)
        f, s = self.factors[c], self.scales[c]
        var = prior_var / s.mean + quadratic_rows(A, f.cov)
        return A @ f.mean, np.maximum(var, 0.0)

    def component_moments(self, c: int, workers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._component(c, self.A[workers])

    def moments(self, workers: np.ndarray | None = None, A: np.ndarray | None = None):
        A = (self.A if workers is None else self.A[workers]) if A is None else A
        parts = [self._component(c, A) for c in range(len(self.factors))]
        return np.stack([m for m, _ in parts]), np.stack([v for _, v in parts])

    def update(self, c, workers, prec_w, lin_w, targets, rho, weight, prior) -> None:
        rows = self.A[workers]
        self.factors[c] = natural_gradient_step(
            self.factors[c],
            self.scales[c].mean * self.projection.K_inv,
            rows,
            weight * prec_w,
            weight * lin_w,
            targets,
            rho,
        )
        self.scales[c] = prior.update(self.projection.K_inv, self.factors[c])


class CrowdGPPL(GPPL):
    """crowdGPPL (Simpson & Gurevych, 2020, Secs. 3.2, 4.3): a consensus utility ``t`` plus
    ``C`` latent item components ``v_c`` weighted per worker by ``w_c``; see the module
    docstring for the model and the SVI updates.

    Parameters
    ----------
    n_components : int
        ``C``; unneeded components shrink toward zero through their inverse scales.
    kernel, lengthscale, n_inducing, batch_size, forgetting_rate, delay, noise, ties,
    max_iter, tol, random_state, progress
        As for :class:`GPPL`.
    shape_s0, rate_s0 : float
        Gamma prior of the consensus inverse scale ``s^{(t)}``.
    shape_sv, rate_sv, shape_sw, rate_sw : float
        Gamma priors of the inverse scales of ``v_c`` and ``w_c``.
    worker_kernel, worker_lengthscale, n_inducing_workers
        Kernel over worker features (when ``fit`` gets a worker table) and its inducing workers.

    Attributes
    ----------
    consensus_ : DataFrame (items × [mean, sd])
        Posterior of the consensus utility ``t`` (also ``utility_``).
    item_factors_ : DataFrame (items × C)
        Posterior means of ``v_c`` at every item.
    worker_factors_ : DataFrame (workers × C)
        Posterior means of the workers' latent vectors ``w_{·,j}``.
    component_scale_ : Series
        ``1/(E[s_c^{(v)}] E[s_c^{(w)}])``: the prior variance each component keeps (ARD).
    """

    def __init__(
        self,
        n_components: int = 20,
        kernel: str | Kernel = "matern32",
        lengthscale: str | float | np.ndarray = "median",
        *,
        n_inducing: int = 200,
        batch_size: int | None = 1000,
        forgetting_rate: float = 0.9,
        delay: float = 1.0,
        shape_s0: float = 2.0,
        rate_s0: float = 2.0,
        shape_sv: float = 2.0,
        rate_sv: float = 2.0,
        shape_sw: float = 2.0,
        rate_sw: float = 2.0,
        worker_kernel: str | Kernel = "matern32",
        worker_lengthscale: str | float | np.ndarray = "median",
        n_inducing_workers: int = 100,
        noise: float = 1.0,
        ties: str = "drop",
        max_iter: int = 1000,
        tol: float = 1e-2,
        random_state=None,
        progress: bool = False,
    ) -> None:
        super().__init__(
            kernel,
            lengthscale,
            n_inducing=n_inducing,
            batch_size=batch_size,
            forgetting_rate=forgetting_rate,
            delay=delay,
            shape_s0=shape_s0,
            rate_s0=rate_s0,
            noise=noise,
            ties=ties,
            max_iter=max_iter,
            tol=tol,
            random_state=random_state,
            progress=progress,
        )
        self.n_components = n_components
        self.shape_sv = shape_sv
        self.rate_sv = rate_sv
        self.shape_sw = shape_sw
        self.rate_sw = rate_sw
        self.worker_kernel = worker_kernel
        self.worker_lengthscale = worker_lengthscale
        self.n_inducing_workers = n_inducing_workers

    def fit(
        self,
        comparisons: Comparisons | pd.DataFrame,
        items: pd.DataFrame | None = None,
        workers: pd.DataFrame | None = None,
    ) -> CrowdGPPL:
        """Fit to comparisons with a ``worker`` column; ``items``/``workers`` are the feature
        tables when passing a DataFrame or path."""
        self._check_params()
        if not (isinstance(self.n_components, (int, np.integer)) and self.n_components >= 1):
            raise ValueError(f"n_components must be a positive integer; got {self.n_components!r}")
        name = type(self).__name__
        data = as_comparisons(comparisons, items=items, workers=workers)
        pairs = encode_pairs(data, self.ties, name)
        self.n_ties_dropped_ = pairs.n_ties_dropped
        rng = as_generator(self.random_state)
        train = np.unique(np.concatenate([pairs.left, pairs.right]))
        kernel, Z = self._setup_items(data, train, rng)
        self._pairs = pairs
        self.worker_ids_ = data.worker_ids
        self.worker_feature_names_ = data.worker_feature_names
        self._W = data.W
        self._worker_counts = np.bincount(pairs.worker, minlength=data.n_workers)
        projection = InducingProjection(kernel, Z)
        self._fit_svi(projection, train, rng)
        self.lower_bound_ = float("nan")
        return self

    # ------------------------------------------------------------------ inference
    def _make_workers(self, rng):
        prior = GammaFactor.prior(self.shape_sw, self.rate_sw)
        C = self.n_components
        if self._W is None:
            return _DiagonalWorkers(C, len(self.worker_ids_), prior, rng)
        if isinstance(self.worker_kernel, Kernel):
            kernel = self.worker_kernel
        else:
            kernel = GPPreferenceEP(self.worker_kernel, self.worker_lengthscale, 1.0)._make_kernel(
                self._W
            )
        Zw = kmeans_inducing_points(self._W, self.n_inducing_workers, random_state=rng)
        return _InducingWorkers(InducingProjection(kernel, Zw), self._W, C, prior, rng)

    def _fit_svi(self, projection: InducingProjection, train: np.ndarray, rng) -> None:
        pairs, C = self._pairs, self.n_components
        alpha = difference_scale(self.noise)
        prior_t = GammaFactor.prior(self.shape_s0, self.rate_s0)
        prior_v = GammaFactor.prior(self.shape_sv, self.rate_sv)
        prior_w = GammaFactor.prior(self.shape_sw, self.rate_sw)
        M = projection.n_inducing
        t = GaussianFactor(prior_t.mean * projection.K_inv, np.zeros(M))
        V = [GaussianFactor(prior_v.mean * projection.K_inv, np.zeros(M)) for _ in range(C)]
        scales = {"t": prior_t, "v": [prior_v] * C}
        workers = self._make_workers(rng)
        A = projection.weights(self._X[train])
        left, right = np.searchsorted(train, pairs.left), np.searchsorted(train, pairs.right)
        # the prior variance of a personal utility: consensus plus C components
        spread = 1.0 / prior_t.mean + C / (prior_v.mean * prior_w.mean)
        noise_var = self._noise_var(projection.kernel, spread)
        diagonal = isinstance(workers, _DiagonalWorkers)
        state = {"t": t, "V": V}

        def update(rho: float, idx, weight: float) -> None:
            rows = A[left[idx]] - A[right[idx]]
            who, y, q = pairs.worker[idx], pairs.y[idx], noise_var[idx]
            t, V = state["t"], list(state["V"])
            w_mean, w_var = workers.moments(who)
            dv = np.stack([rows @ v.mean for v in V])
            d_cur = rows @ t.mean + np.sum(dv * w_mean, axis=0)
            p, g = probit_linearisation(d_cur, alpha)
            base = y - p + g * d_cur

            def target(own):  # the pseudo-observation of one block given the others' means
                return base - g * (d_cur - own)

            # consensus t (2020, Eqs. 34–35)
            own = rows @ t.mean
            t = natural_gradient_step(
                t,
                scales["t"].mean * projection.K_inv,
                rows,
                weight * g * g / q,
                weight * g / q,
                target(own),
                rho,
            )
            d_cur = d_cur + rows @ t.mean - own
            for c in range(C):
                # item component v_c (Eqs. 32–33)
                own = dv[c] * w_mean[c]
                second_w = w_mean[c] ** 2 + w_var[c]
                V[c] = natural_gradient_step(
                    V[c],
                    scales["v"][c].mean * projection.K_inv,
                    rows,
                    weight * g * g * second_w / q,
                    weight * g * w_mean[c] / q,
                    target(own),
                    rho,
                )
                scales["v"][c] = prior_v.update(projection.K_inv, V[c])
                dv_c = rows @ V[c].mean
                d_cur = d_cur + dv_c * w_mean[c] - own
                own = dv_c * w_mean[c]
                # worker component w_c (Eqs. 36–37)
                second_v = dv_c**2 + quadratic_rows(rows, V[c].cov)
                workers.update(
                    c,
                    who,
                    g * g * second_v / q,
                    g * dv_c / q,
                    target(own),
                    rho,
                    self._worker_counts if diagonal else weight,
                    prior_w,
                )
                w_mean[c], w_var[c] = workers.component_moments(c, who)
                d_cur = d_cur + dv_c * w_mean[c] - own
            scales["t"] = prior_t.update(projection.K_inv, t)
            state["t"], state["V"] = t, V

        # convergence: the consensus mean's change over one pass through the data
        result = self._svi_loop(
            update, lambda: state["t"].mean, rng, self.progress, "crowdGPPL SVI"
        )
        self.n_iter_, self.converged_, self.history_ = (
            result.n_iter,
            result.converged,
            result.history,
        )
        self._components = state["V"]
        self._component_scales = scales["v"]
        self._workers = workers
        self._set_results(projection, state["t"], scales["t"])
        self._set_crowd_results()

    def _set_crowd_results(self) -> None:
        self.consensus_ = self.utility_
        columns = [f"c{c}" for c in range(self.n_components)]
        A = self._projection.weights(self._X)
        self.item_factors_ = pd.DataFrame(
            np.stack([A @ v.mean for v in self._components], axis=1),
            index=self.item_ids_,
            columns=columns,
        )
        w_mean, _ = self._workers.moments()
        self.worker_factors_ = pd.DataFrame(w_mean.T, index=self.worker_ids_, columns=columns)
        self.component_scale_ = pd.Series(
            [
                1.0 / (sv.mean * sw.mean)
                for sv, sw in zip(self._component_scales, self._workers.scales, strict=True)
            ],
            index=columns,
            name="scale",
        )

    # ------------------------------------------------------------------ prediction
    def _worker_moments(
        self, workers: Sequence, what: str, worker_features: pd.DataFrame | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(E[w], Var[w], known)`` (C × n) for worker ids; unknown workers without features
        fall back to the consensus (``E[w] = Var[w] = 0``, ``known`` False) with a
        :class:`DataWarning` giving their number."""
        ids = pd.Index(list(workers))
        codes = self.worker_ids_.get_indexer(ids)
        known = codes >= 0
        C = self.n_components
        mean, var = np.zeros((C, len(ids))), np.zeros((C, len(ids)))
        if known.any():
            m, v = self._workers.moments(codes[known])
            mean[:, known], var[:, known] = m, v
        unknown = ~known
        if (
            unknown.any()
            and worker_features is not None
            and isinstance(self._workers, _InducingWorkers)
        ):
            names = list(self.worker_feature_names_)
            rows = worker_features.reindex(ids[unknown])
            describable = rows.notna().all(axis=1).to_numpy()
            if describable.any():
                W = rows.loc[:, names].to_numpy(dtype=np.float64)[describable]
                m, v = self._workers.moments(A=self._workers.projection.weights(W))
                where = np.flatnonzero(unknown)[describable]
                mean[:, where], var[:, where] = m, v
                known[where] = True
                unknown = ~known
        if unknown.any():
            warnings.warn(
                f"{what}: {int(unknown.sum())} row(s) name worker(s) not seen in fit "
                f"({show_values(ids[unknown].unique())}); using the consensus for them",
                DataWarning,
                stacklevel=3,
            )
        return mean, var, known

    def predict_utility(
        self,
        items: Sequence | pd.DataFrame | None = None,
        worker=None,
        worker_features: pd.DataFrame | None = None,
    ) -> pd.DataFrame:
        """Consensus utilities (``worker=None``), or worker ``worker``'s personal utilities
        ``t̂ + Σ_c v̂_c ŵ_{c,j}`` with their sd (items as for :meth:`GPPL.predict_utility`;
        also for items nobody compared, given their features)."""
        self._check_fitted()
        consensus = super().predict_utility(items)
        if worker is None:
            return consensus
        ids = consensus.index
        X = self._X if items is None else self._resolve(items, "predict_utility")[1]
        w_mean, w_var, _ = self._worker_moments([worker], "predict_utility", worker_features)
        mean = consensus["mean"].to_numpy().copy()
        var = consensus["sd"].to_numpy() ** 2
        for c, (v, s) in enumerate(zip(self._components, self._component_scales, strict=True)):
            m_c, var_c = self._projection.predict(X, v, s)
            mean += m_c * w_mean[c, 0]
            var += (w_mean[c, 0] ** 2 + w_var[c, 0]) * var_c + w_var[c, 0] * m_c**2
        return pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=ids)

    def predict_proba(
        self,
        left: Sequence,
        right: Sequence,
        items: pd.DataFrame | None = None,
        workers: Sequence | None = None,
        worker_features: pd.DataFrame | None = None,
    ) -> pd.Series:
        """``P(left ≻ right)``: the consensus (``workers=None``) or each row's worker's personal
        probability ``Φ(E[Δf] / √(α² + Var[Δf]))`` (2020, Eqs. 3, 25). Workers not seen in fit
        (and not described by ``worker_features``) get the consensus, with a warning."""
        self._check_fitted()
        if workers is None:
            return super().predict_proba(left, right, items)
        left, right, Xl, Xr = self._pair_rows(left, right, items, "predict_proba")
        workers = list(workers)
        if len(workers) != len(left):
            raise ValueError(f"predict_proba: {len(workers)} workers for {len(left)} pairs")
        mean, var = self._projection.difference_moments(Xl, Xr, self._factor, self.scale_)
        w_mean, w_var, _ = self._worker_moments(workers, "predict_proba", worker_features)
        for c, (v, s) in enumerate(zip(self._components, self._component_scales, strict=True)):
            m_c, var_c = self._projection.difference_moments(Xl, Xr, v, s)
            mean = mean + m_c * w_mean[c]
            var = var + (w_mean[c] ** 2 + w_var[c]) * var_c + w_var[c] * m_c**2
        index = pd.MultiIndex.from_arrays([left, right], names=["left", "right"])
        return pd.Series(pair_probabilities(mean, var, self.noise), index=index, name="p_left")

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted model (safe ``.npz``, no pickle)."""
        self._check_fitted()
        arrays, meta = self._kernel_arrays()
        workers = self._workers
        arrays.update(
            precision=self._factor.precision,
            linear=self._factor.linear,
            v_precision=np.stack([v.precision for v in self._components]),
            v_linear=np.stack([v.linear for v in self._components]),
            v_scale=np.array([[s.shape, s.rate] for s in self._component_scales]),
            w_scale=np.array([[s.shape, s.rate] for s in workers.scales]),
            worker_ids=np.asarray(self.worker_ids_),
        )
        if isinstance(workers, _DiagonalWorkers):
            arrays.update(w_precision=workers.precision, w_linear=workers.linear)
        else:
            arrays.update(
                W=self._W,
                Zw=workers.projection.Z,
                worker_lengthscale=workers.projection.kernel.lengthscale,
                w_precision=np.stack([f.precision for f in workers.factors]),
                w_linear=np.stack([f.linear for f in workers.factors]),
                worker_feature_names=np.asarray(self.worker_feature_names_, dtype=str),
            )
            meta["worker_kernel"] = type(workers.projection.kernel).__name__
        meta.update(
            shape=self.scale_.shape,
            rate=self.scale_.rate,
            n_components=self.n_components,
            priors=[self.shape_sv, self.rate_sv, self.shape_sw, self.rate_sw],
        )
        save_arrays(path, type(self).__name__, arrays, meta)

    @classmethod
    def load(cls, path: str | os.PathLike) -> CrowdGPPL:
        """Read a model written by :meth:`save`."""
        _, arrays, meta = load_arrays(path, cls.__name__)
        sv0, rv0, sw0, rw0 = meta["priors"]
        model = cls(
            meta["n_components"],
            noise=meta["noise"],
            ties=meta["ties"],
            shape_s0=meta["shape_s0"],
            rate_s0=meta["rate_s0"],
            shape_sv=sv0,
            rate_sv=rv0,
            shape_sw=sw0,
            rate_sw=rw0,
        )
        kernel = cls._restore_items(model, arrays, meta)
        model.worker_ids_ = pd.Index(arrays["worker_ids"], name="worker")
        model._components = [
            GaussianFactor(p, lin)
            for p, lin in zip(arrays["v_precision"], arrays["v_linear"], strict=True)
        ]
        model._component_scales = [GammaFactor(sv0, rv0, a, b) for a, b in arrays["v_scale"]]
        w_scales = [GammaFactor(sw0, rw0, a, b) for a, b in arrays["w_scale"]]
        if "Zw" in arrays:
            model._W = arrays["W"]
            model.worker_feature_names_ = pd.Index(arrays["worker_feature_names"].tolist())
            wk = make_kernel(meta["worker_kernel"].lower(), arrays["worker_lengthscale"], 1.0)
            workers = _InducingWorkers.__new__(_InducingWorkers)
            workers.projection = InducingProjection(wk, arrays["Zw"])
            workers.A = workers.projection.weights(model._W)
            workers.factors = [
                GaussianFactor(p, lin)
                for p, lin in zip(arrays["w_precision"], arrays["w_linear"], strict=True)
            ]
        else:
            model._W, model.worker_feature_names_ = None, None
            workers = _DiagonalWorkers.__new__(_DiagonalWorkers)
            workers.precision, workers.linear = arrays["w_precision"], arrays["w_linear"]
        workers.scales = w_scales
        model._workers = workers
        scale = GammaFactor(meta["shape_s0"], meta["rate_s0"], meta["shape"], meta["rate"])
        factor = GaussianFactor(arrays["precision"], arrays["linear"])
        model._set_results(InducingProjection(kernel, arrays["Z"]), factor, scale)
        model._set_crowd_results()
        return model
