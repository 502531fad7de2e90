"""The SVI state of crowdGPPL and its block updates (Simpson & Gurevych, 2020, Secs. 3.2, 4.3).

Worker ``j``'s utility for item ``x`` is ``f(x, j) = t(x) + Σ_c v_c(x) w_c(j)`` (2020, Eq. 5),
with GP priors on the consensus ``t`` and the item components ``v_c`` over item features and
on the worker components ``w_c`` over worker features (:class:`_InducingWorkers`), or
``w_{c,j} ~ N(0, 1/s_c^{(w)})`` independently without them (:class:`_DiagonalWorkers`). The
posterior is mean-field over ``t``, each ``v_c`` and each ``w_c`` (2020, Eqs. 20–24, 32–38):
the likelihood is linearised about the current mean difference ``d̂`` (slope ``g``;
:mod:`crowdbayes.gp.linearised`) and every block receives the linear-Gaussian message of the
comparisons given the others' current means, e.g. for ``v_c`` the coefficient is
``g ŵ_{c,j}`` with second moment ``g² E[w_{c,j}²]`` (Eqs. 32–33), for ``w_c`` it is
``g (v̂_c(a) - v̂_c(b))`` with second moment ``g² E[(v_c(a) - v_c(b))²]`` (Eqs. 36–37). Each
block then takes a natural-gradient step of size ``ρ_n``
(:func:`crowdbayes.gp.natural_gradient_step`) and its inverse scale is updated (Eq. 15).

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
coordinate ascent on it at the iteration's linearisation point (tested).

Cost: one SVI iteration is ``O(C (B M² + M³))`` for mini-batch ``B`` and ``M`` inducing
points, independent of the number of comparisons. The ``(B, M)`` mini-batch products
(``Rᵀ R`` by BLAS syrk, ``diag(rows S rowsᵀ)`` by gemm) run in single precision; the factors,
their Cholesky factors and inverses (LAPACK potri) in double precision.
"""

from __future__ import annotations

import numpy as np

from ...gp import (
    GammaFactor,
    GaussianFactor,
    InducingProjection,
    PreferenceProblem,
    expected_linear_loglik,
    gaussian_prior_kl,
    natural_gradient_step,
    probit_linearisation,
    quadratic_rows,
)
from ...persistence import persistable

__all__ = ["CrowdSVI"]


@persistable
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


@persistable
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


class CrowdSVI:
    """The SVI state of crowdGPPL and its updates (module docstring).

    All mini-batch products with the ``(B, M)`` rows ``A_a - A_b`` run in single precision
    (``R = diag(√w) rows`` once per block, then ``Rᵀ R`` by BLAS syrk; ``diag(rows S rowsᵀ)``
    by one gemm); the factors, their Cholesky factors and inverses (LAPACK potri) stay in
    double precision. Each SVI iteration costs ``O(C (B M² + M³))``, independent of the
    number of comparisons ``P``; the bound costs ``O(C (N M² + N² M + P))`` for up to
    ``max_items_dense`` compared items with ``N² ≤ dense_pairs_ratio · P``, else
    ``O(C (N M² + P M))`` with the pairs in chunks, so memory stays
    ``O(C M² + N M + min(N², chunk·M) + P)``.
    """

    fast_dtype = np.float32
    #: up to this many compared items the bound uses the (N, N) matrices A S Aᵀ
    max_items_dense = 2048
    #: ... and only while N² ≤ this × P: beyond, the per-pair rows cost less (M = 200, one
    #: thread: 178 against 92 ms at N = 1,000, P = 10,000; 51 against 46 ms at N = 500,
    #: P = 5,000; 12 against 18 ms at N = 200, P = 2,000; equal to 1.5e-13 relative)
    dense_pairs_ratio = 40

    def __init__(
        self,
        problem: PreferenceProblem,
        projection: InducingProjection,
        workers: _DiagonalWorkers | _InducingWorkers,
        *,
        prior_v: GammaFactor,
        prior_w: GammaFactor,
        worker_counts: np.ndarray,
        chunk: int = 1000,
    ) -> None:
        pairs, C = problem.pairs, len(workers.scales)
        self.pairs, self.C, self.projection = pairs, C, projection
        self.alpha = problem.alpha
        self.prior_t, self.prior_v, self.prior_w = problem.prior, prior_v, prior_w
        M = projection.n_inducing
        self.t = GaussianFactor(self.prior_t.mean * projection.K_inv, np.zeros(M))
        self.V = [
            GaussianFactor(self.prior_v.mean * projection.K_inv, np.zeros(M)) for _ in range(C)
        ]
        self.scale_t = self.prior_t
        self.scales_v = [self.prior_v] * C
        self.workers = workers
        self.diagonal = isinstance(self.workers, _DiagonalWorkers)
        self.worker_counts = worker_counts
        self.A = projection.weights(problem.X_items)
        self.A_fast = self.A.astype(self.fast_dtype)
        self.left, self.right = problem.left, problem.right
        self.noise_var = problem.noise_var
        self.chunk = chunk

    @staticmethod
    def prior_spread(
        prior_t: GammaFactor, prior_v: GammaFactor, prior_w: GammaFactor, n_components: int
    ) -> float:
        """The prior variance of a personal utility per unit of kernel variance: consensus
        plus ``C`` components, ``1/E[s^{(t)}] + C / (E[s^{(v)}] E[s^{(w)}])``."""
        return 1.0 / prior_t.mean + n_components / (prior_v.mean * prior_w.mean)

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
        small = len(A) <= self.max_items_dense and len(A) ** 2 <= self.dense_pairs_ratio * len(left)
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
        loglik = expected_linear_loglik(
            self.pairs.y, self.noise_var, mean, var, self.alpha, linearisation
        )
        return loglik - self.kl()

    def kl(self) -> float:
        """The bound's KL terms: ``KL(q(t)‖p(t)) + Σ_c [KL(q(v_c)‖p(v_c)) + KL(q(w_c)‖p(w_c))]
        + KL(scales)``."""
        proj = self.projection
        kl = gaussian_prior_kl(proj.chol, proj.K_inv, self.t, self.scale_t) + self.scale_t.kl()
        for v, s in zip(self.V, self.scales_v, strict=True):
            kl += gaussian_prior_kl(proj.chol, proj.K_inv, v, s) + s.kl()
        return kl + self.workers.kl()
