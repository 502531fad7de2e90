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

The bound (2020, Eq. 30 with the linearised likelihood of Eq. 11 and the mean-field
posterior of Eqs. 20–24) is

.. math:: \\mathcal L = Σ_p E_q[\\ln N(y_p; Φ(\\hat z_p) + g_p (d_p - \\hat d_p), Q_p)]
    - \\operatorname{KL}(q(t) \\| p(t)) - Σ_c [\\operatorname{KL}(q(v_c) \\| p(v_c))
    + \\operatorname{KL}(q(w_c) \\| p(w_c))] - \\operatorname{KL}(q(s) \\| p(s)),

with ``E_q[d_p] = Δt̂ + Σ_c Δv̂_c ŵ_{c,j}`` and ``Var_q[d_p] = Var[Δt] + Σ_c (E[w_{c,j}²]
Var[Δv_c] + Var[w_{c,j}] Δv̂_c²)`` (utilities are the projections ``A u`` of the inducing
values, as in the updates). With ``ρ = 1`` on all comparisons every block update above is
coordinate ascent on it at the iteration's linearisation point (tested). It is computed after
every pass through the data (costing about one SVI iteration for a few thousand items; see
:class:`_CrowdSVI`); SVI stops when it changes by less than ``tol`` per comparison between
two passes, and the final value is ``lower_bound_``. Length-scales are not optimised for
crowdGPPL: the gradient at fixed ``q`` would be as cheap as GPPL's (a sum over ``t`` and the
``v_c``), but each L-BFGS-B evaluation needs a refit of all ``2C + 1`` blocks.

Cost: one SVI iteration is ``O(C (B M² + M³))`` for mini-batch ``B`` and ``M`` inducing
points, independent of the number of comparisons. The ``(B, M)`` mini-batch products
(``Rᵀ R`` by BLAS syrk, ``diag(rows S rowsᵀ)`` by gemm) run in single precision; the factors,
their Cholesky factors and inverses (LAPACK potri) in double precision.

Predictions (2020, Eq. 25, App. D): ``E[f(x, j)] = t̂(x) + Σ_c v̂_c(x) ŵ_{c,j}`` and
``Var[f(a, j) - f(b, j)] = Var[Δt] + Σ_c (ŵ_{c,j}² + ω_{c,j}) Var[Δv_c] + ω_{c,j} Δv̂_c²``.
"""

from __future__ import annotations

import math
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
from ._base import make_item_kernel
from ._likelihood import difference_scale
from .ep import pair_probabilities
from .svi import (
    _LOG_2PI,
    GPPL,
    GammaFactor,
    GaussianFactor,
    InducingProjection,
    encode_pairs,
    gaussian_prior_kl,
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
        if workers is None:
            return self.mean, self.var
        precision = self.precision[:, workers]
        return self.linear[:, workers] / precision, 1.0 / precision

    def component_moments(self, c: int, workers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        precision = self.precision[c, workers]
        return self.linear[c, workers] / precision, 1.0 / precision

    def update(self, c, workers, prec_w, lin_w, targets, rho, counts, prior: GammaFactor) -> None:
        n = self.precision.shape[1]
        seen_batch = np.bincount(workers, minlength=n)
        present = seen_batch > 0
        scale = counts[present] / seen_batch[present]
        prec = self.scales[c].mean + scale * np.bincount(workers, prec_w, minlength=n)[present]
        lin = scale * np.bincount(workers, lin_w * targets, minlength=n)[present]
        self.precision[c, present] = (1 - rho) * self.precision[c, present] + rho * prec
        self.linear[c, present] = (1 - rho) * self.linear[c, present] + rho * lin
        second = self.linear[c] ** 2 / self.precision[c] ** 2 + 1.0 / self.precision[c]
        self.scales[c] = GammaFactor(
            prior.shape0,
            prior.rate0,
            prior.shape0 + 0.5 * n,
            prior.rate0 + 0.5 * float(np.sum(second)),
        )

    def kl(self) -> float:
        """``Σ_c E_q(s_c)[KL(q(w_c) ‖ N(0, I/s_c))] + KL(q(s_c) ‖ p(s_c))``."""
        mean, var = self.mean, self.var
        total = 0.0
        for c, s in enumerate(self.scales):
            total += 0.5 * float(
                np.sum(s.mean * (mean[c] ** 2 + var[c]) - 1.0 - s.mean_log - np.log(var[c]))
            )
            total += s.kl()
        return total


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

    def kl(self) -> float:
        p = self.projection
        return sum(
            gaussian_prior_kl(p.chol, p.K_inv, f, s) + s.kl()
            for f, s in zip(self.factors, self.scales, strict=True)
        )


class _CrowdSVI:
    """The SVI state of crowdGPPL and its updates (module docstring).

    All mini-batch products with the ``(B, M)`` rows ``A_a - A_b`` run in single precision
    (``R = diag(√w) rows`` once per block, then ``Rᵀ R`` by BLAS syrk; ``diag(rows S rowsᵀ)``
    by one gemm); the factors, their Cholesky factors and inverses (LAPACK potri) stay in
    double precision. Each SVI iteration costs ``O(C (B M² + M³))``, independent of the
    number of comparisons ``P``; the bound costs ``O(C (N M² + N² M + P))`` for up to
    ``max_items_dense`` compared items, else ``O(C (N M² + P M))`` with the pairs in chunks,
    so memory stays ``O(C M² + N M + min(N², chunk·M) + P)``.
    """

    fast_dtype = np.float32
    #: up to this many compared items the bound uses the (N, N) matrices A S Aᵀ
    max_items_dense = 2048

    def __init__(self, model: CrowdGPPL, projection: InducingProjection, train, rng) -> None:
        pairs, C = model._pairs, model.n_components
        self.pairs, self.C, self.projection = pairs, C, projection
        self.alpha = difference_scale(model.noise)
        self.prior_t = GammaFactor.prior(model.shape_s0, model.rate_s0)
        self.prior_v = GammaFactor.prior(model.shape_sv, model.rate_sv)
        self.prior_w = GammaFactor.prior(model.shape_sw, model.rate_sw)
        M = projection.n_inducing
        self.t = GaussianFactor(self.prior_t.mean * projection.K_inv, np.zeros(M))
        self.V = [
            GaussianFactor(self.prior_v.mean * projection.K_inv, np.zeros(M)) for _ in range(C)
        ]
        self.scale_t = self.prior_t
        self.scales_v = [self.prior_v] * C
        self.workers = model._make_workers(rng)
        self.diagonal = isinstance(self.workers, _DiagonalWorkers)
        self.worker_counts = model._worker_counts
        self.A = projection.weights(model._X[train])
        self.A_fast = self.A.astype(self.fast_dtype)
        self.left = np.searchsorted(train, pairs.left)
        self.right = np.searchsorted(train, pairs.right)
        # the prior variance of a personal utility: consensus plus C components
        spread = 1.0 / self.prior_t.mean + C / (self.prior_v.mean * self.prior_w.mean)
        self.noise_var = model._noise_var(projection.kernel, spread)
        self.chunk = max(1000, model.batch_size or 0)

    # ---------------------------------------------------------------- helpers
    def v_means(self) -> np.ndarray:
        return np.stack([v.mean for v in self.V])

    def consensus(self) -> np.ndarray:
        """Consensus utilities at the training items."""
        return self.A @ self.t.mean

    def _pair_means(self, rows: np.ndarray, who: np.ndarray):
        """``(Δt̂, Δv̂ (C, B), E[w] (C, B), Var[w] (C, B))`` for mini-batch rows."""
        dt = rows @ self.t.mean.astype(rows.dtype)
        dv = (rows @ self.v_means().T.astype(rows.dtype)).T
        w_mean, w_var = self.workers.moments(who)
        return dt.astype(np.float64), dv.astype(np.float64), w_mean, w_var

    @staticmethod
    def _pair_var(rows: np.ndarray, factor: GaussianFactor) -> np.ndarray:
        return np.maximum(quadratic_rows(rows, factor.cov.astype(rows.dtype)), 0.0)

    # ---------------------------------------------------------------- one SVI step
    def update(self, rho: float, idx, weight: float) -> None:
        """One natural-gradient step on the comparisons ``idx`` (weight ``P / P_n``),
        block by block (``t``, then ``v_c`` and ``w_c`` for each ``c``), each block's
        pseudo-observation taking the other blocks at their current means."""
        pairs, K_inv = self.pairs, self.projection.K_inv
        rows = self.A_fast[self.left[idx]] - self.A_fast[self.right[idx]]
        who, y, q = pairs.worker[idx], pairs.y[idx], self.noise_var[idx]
        dt, dv, w_mean, w_var = self._pair_means(rows, who)
        d_cur = dt + np.sum(dv * w_mean, axis=0)
        p, g = probit_linearisation(d_cur, self.alpha)
        base = y - p + g * d_cur  # the target of the whole difference d
        g_q = g / q
        gg_q = g * g_q
        # consensus t (2020, Eqs. 34–35)
        self.t = natural_gradient_step(
            self.t,
            self.scale_t.mean * K_inv,
            rows,
            weight * gg_q,
            weight * g_q,
            base - g * (d_cur - dt),
            rho,
        )
        new = (rows @ self.t.mean.astype(rows.dtype)).astype(np.float64)
        d_cur += new - dt
        counts = self.worker_counts if self.diagonal else weight
        for c in range(self.C):
            # item component v_c (Eqs. 32–33)
            own = dv[c] * w_mean[c]
            second_w = w_mean[c] ** 2 + w_var[c]
            self.V[c] = natural_gradient_step(
                self.V[c],
                self.scales_v[c].mean * K_inv,
                rows,
                weight * gg_q * second_w,
                weight * g_q * w_mean[c],
                base - g * (d_cur - own),
                rho,
            )
            self.scales_v[c] = self.prior_v.update(K_inv, self.V[c])
            dv_c = (rows @ self.V[c].mean.astype(rows.dtype)).astype(np.float64)
            d_cur += dv_c * w_mean[c] - own
            own = dv_c * w_mean[c]
            # worker component w_c (Eqs. 36–37)
            second_v = dv_c**2 + self._pair_var(rows, self.V[c])
            self.workers.update(
                c,
                who,
                gg_q * second_v,
                g_q * dv_c,
                base - g * (d_cur - own),
                rho,
                counts,
                self.prior_w,
            )
            w_mean[c], w_var[c] = self.workers.component_moments(c, who)
            d_cur += dv_c * w_mean[c] - own
        self.scale_t = self.prior_t.update(K_inv, self.t)

    # ---------------------------------------------------------------- the bound
    def difference_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of every comparison's ``d_p = f(a_p, j_p) - f(b_p, j_p)``
        under ``q`` (projected-process utilities ``A u``, as in the updates), computed
        per item and then per chunk of pairs."""
        A, left, right, who = self.A, self.left, self.right, self.pairs.worker
        factors = [self.t, *self.V]
        means = A @ np.stack([f.mean for f in factors]).T  # (N, 1 + C)
        mean = means[left, 0] - means[right, 0]
        var = np.zeros(len(left))
        # few items: the (N, N) matrix A S Aᵀ per factor, then one look-up per pair;
        # many items: (chunk, M) differences of the rows of A and of A S
        small = len(A) <= self.max_items_dense
        for k, factor in enumerate(factors):
            AS = A @ factor.cov  # (N, M), one factor at a time
            cross = AS @ A.T if small else None
            for lo in range(0, len(left), self.chunk):
                sl = slice(lo, min(len(left), lo + self.chunk))
                li, ri = left[sl], right[sl]
                if small:
                    dvar = cross[li, li] + cross[ri, ri] - cross[li, ri] - cross[ri, li]
                else:
                    dvar = np.sum((AS[li] - AS[ri]) * (A[li] - A[ri]), axis=1)
                dvar = np.maximum(dvar, 0.0)
                if k == 0:
                    var[sl] += dvar
                    continue
                w_mean, w_var = self.workers.component_moments(k - 1, who[sl])
                d = means[li, k] - means[ri, k]
                mean[sl] += d * w_mean
                var[sl] += dvar * (w_mean**2 + w_var) + d * d * w_var
        return mean, var

    def bound(self, linearisation: np.ndarray | None = None) -> float:
        """The evidence lower bound with the linearised likelihood (2020, Eq. 30 with
        Eqs. 11, 20–24): ``Σ_p E_q[ln N(y_p; Φ(ẑ_p) + g_p (d_p - d̃_p), Q_p)] - KL(q(t)‖p(t))
        - Σ_c [KL(q(v_c)‖p(v_c)) + KL(q(w_c)‖p(w_c))] - KL(scales)``, linearised at
        ``d̃`` (default: the current means, ``d̃ = E[d]``)."""
        mean, var = self.difference_moments()
        lin = mean if linearisation is None else linearisation
        p, g = probit_linearisation(lin, self.alpha)
        q, y = self.noise_var, self.pairs.y
        loglik = float(
            np.sum(
                -0.5 * (_LOG_2PI + np.log(q))
                - 0.5 * ((y - p - g * (mean - lin)) ** 2 + g * g * var) / q
            )
        )
        proj = self.projection
        kl = gaussian_prior_kl(proj.chol, proj.K_inv, self.t, self.scale_t) + self.scale_t.kl()
        for v, s in zip(self.V, self.scales_v, strict=True):
            kl += gaussian_prior_kl(proj.chol, proj.K_inv, v, s) + s.kl()
        return loglik - kl - self.workers.kl()


class CrowdGPPL(GPPL):
    """crowdGPPL (Simpson & Gurevych, 2020, Secs. 3.2, 4.3): a consensus utility ``t`` plus
    ``C`` latent item components ``v_c`` weighted per worker by ``w_c``; see the module
    docstring for the model and the SVI updates.

    Parameters
    ----------
    n_components : int
        ``C``; unneeded components shrink toward zero through their inverse scales.
    kernel, lengthscale, n_inducing, batch_size, forgetting_rate, delay, noise, ties,
    max_iter, random_state, progress
        As for :class:`GPPL`.
    tol : float
        Stop when the lower bound changes by less than ``tol`` nats per comparison between
        two passes through the data (checked after every pass). With the default schedule the
        bound keeps creeping up slowly as ``ρ_n`` shrinks (on a UKPConvArgCrowdSample fold,
        C = 50, M = 500: 0.018 per comparison after 8 passes, 0.005 after 20), so the default
        0.02 stops after about 8 passes; lower it (and raise ``max_iter``) to run longer
        (held-out consensus accuracy on that fold: 0.899 after 10 passes, 0.913 after 20).
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
    lower_bound_ : float
        The bound (module docstring) at the end of the fit.
    bound_history_ : list of float
        The bound after every pass through the data.
    n_iter_, converged_, history_
        SVI iterations, whether ``tol`` was met, the per-comparison change of the bound
        after every pass (``inf`` after the first, which has no predecessor).
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
        tol: float = 2e-2,
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
        self.lower_bound_ = self._fit_svi(projection, train, rng)
        return self

    # ------------------------------------------------------------------ inference
    def _make_workers(self, rng):
        prior = GammaFactor.prior(self.shape_sw, self.rate_sw)
        C = self.n_components
        if self._W is None:
            return _DiagonalWorkers(C, len(self.worker_ids_), prior, rng)
        kernel = make_item_kernel(self.worker_kernel, self.worker_lengthscale, self._W)
        Zw = kmeans_inducing_points(self._W, self.n_inducing_workers, random_state=rng)
        return _InducingWorkers(InducingProjection(kernel, Zw), self._W, C, prior, rng)

    def _fit_svi(self, projection: InducingProjection, train: np.ndarray, rng) -> float:
        """Run SVI; set the fitted attributes and return the final lower bound."""
        svi = _CrowdSVI(self, projection, train, rng)
        n_pairs = len(self._pairs.y)
        self.bound_history_ = []

        started: list[bool] = []

        def bound() -> float:
            if not started:  # the loop's reference before the first pass: nothing to compute
                started.append(True)
                return -np.inf
            self.bound_history_.append(svi.bound())
            return self.bound_history_[-1]

        # convergence: the bound's change over one pass through the data, per comparison
        result = self._svi_loop(
            svi.update,
            bound,
            rng,
            self.progress,
            "crowdGPPL SVI",
            change=lambda new, old: abs(new - old) / n_pairs,
        )
        self.n_iter_, self.converged_, self.history_ = (
            result.n_iter,
            result.converged,
            result.history,
        )
        self._components = svi.V
        self._component_scales = svi.scales_v
        self._workers = svi.workers
        self._set_results(projection, svi.t, svi.scale_t)
        self._set_crowd_results()
        batch = n_pairs if self.batch_size is None else min(self.batch_size, n_pairs)
        if result.n_iter % math.ceil(n_pairs / batch) == 0:  # the loop's last check
            return self.bound_history_[-1]
        return svi.bound()

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
