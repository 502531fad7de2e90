"""GPPL: GP preference learning by stochastic variational inference with inducing points.

Model (Simpson & Gurevych, 2018, Eqs. 1–2; 2020, Sec. 3.1): each item has a utility ``f(x)``
with prior ``f ~ GP(0, k_θ / s)`` over its features, ``s ~ Gamma(a₀, b₀)`` (shape, rate); the
comparison ``p`` of items ``a_p, b_p`` prefers ``a_p`` with probability ``Φ(z_p)``,
``z_p = (f(a_p) - f(b_p)) / α``, ``α = √2 σ``.

Approximation (2020, Sec. 4.1, Eqs. 7–11): the label ``y_p ∈ {0, ½, 1}`` is treated as a
Gaussian observation ``y_p ~ N(Φ(z_p), Q_p)`` of the probability, linearised about the current
mean (the extended Kalman filter of Steinberg & Bonilla, 2014):

.. math:: Φ(z_p) ≈ Φ(\\hat z_p) + g_p (d_p - \\hat d_p), \\qquad g_p = φ(\\hat z_p) / α,

with ``d_p = f(a_p) - f(b_p)`` (the exact derivative; the drafts print ``φ`` without ``1/α`` or
a logistic form, 2020 Eq. 10). ``Q_p`` is the variance of the Bernoulli predictive under a
beta posterior (2020, Eq. 8), ``Q_p = (γ + y_p)(λ + 1 - y_p) / (γ + λ + 1)²``, where
``Beta(γ, λ)`` matches the prior mean ½ and variance of ``Φ(z_p)``; for ``d ~ N(0, v)`` that
variance has the closed form ``arcsin(v / (α² + v)) / (2π)`` (Owen, 1980, the bivariate-normal
orthant), so no numerical integration is needed.

Inducing points ``Z`` (K-means centres) carry ``q(u) = N(m, S)``; item utilities follow
``q(f) = N(A m, K/ŝ + A (S - K_mm/ŝ) Aᵀ)``, ``A = K_nm K_mm⁻¹`` (2020, Eqs. 14, 19; draft
Eqs. 9–10). One SVI iteration (2020, Eqs. 17–18; draft Eqs. 4–5) draws a mini-batch of ``P_n``
of the ``P`` comparisons, weights it by ``π = P / P_n`` and moves the natural parameters a step
``ρ_n = (n + delay)^{-r}`` along the natural gradient:

.. math::
    S_n^{-1} &= (1 - ρ_n) S_{n-1}^{-1} + ρ_n (ŝ K_{mm}^{-1} + π J^T Q^{-1} J), \\\\
    S_n^{-1} m_n &= (1 - ρ_n) S_{n-1}^{-1} m_{n-1}
        + ρ_n π J^T Q^{-1} (y - Φ(\\hat z) + J m),

``J = diag(g) (A_a - A_b)``, relinearised ``n_inner`` times per mini-batch. Then ``q(s)`` is
updated (2020, Eq. 15; draft Eqs. 6–7): ``a = a₀ + M/2``,
``b = b₀ + ½ tr(K_mm⁻¹ (S + m mᵀ))``, ``ŝ = a/b``, ``E[ln s] = ψ(a) - ln b``.

The bound (2020, Eq. 30, with the linearised likelihood of Eq. 11)

.. math:: \\mathcal L = Σ_p \\big[\\ln N(y_p; Φ(\\hat z_p), Q_p)
    - \\tfrac12 g_p^2 \\operatorname{Var}_q[d_p] / Q_p\\big]
    - \\operatorname{KL}(q(u) \\| p(u | s)) - \\operatorname{KL}(q(s) \\| p(s))

is monitored, and maximised over the log length-scales by L-BFGS-B (draft Eqs. 11–13,
corrected): at fixed ``q`` its gradient through ``K_mm`` is
``Σ_ij G_ij ∂(K_mm)_ij/∂θ`` with ``G = ½ (ŝ K_mm⁻¹ (S + m mᵀ) K_mm⁻¹ - K_mm⁻¹)``. As in the
paper, the dependence of the likelihood term on ``θ`` through ``A`` is left out; it vanishes
when the inducing points are the training items (full-batch VI), where the gradient is exact.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.linalg import lapack
from scipy.optimize import minimize
from scipy.special import digamma, gammaln, ndtr

from ..._persist import load_arrays, save_arrays
from ..._utils import RandomState, as_generator, check_is_fitted
from ...data.comparisons import Comparisons, as_comparisons
from ...exceptions import ConvergenceWarning, DataWarning
from ...inference.driver import run_iterations
from ...kernels import (
    Independent,
    Kernel,
    kernel_from_saved,
    kernel_name,
    kmeans_inducing_points,
)
from ...linalg import cholesky_logdet, cholesky_solve, safe_cholesky
from ._base import GPPreferenceBase
from ._likelihood import difference_scale
from .ep import pair_probabilities

__all__ = [
    "GPPL",
    "GaussianFactor",
    "GammaFactor",
    "InducingProjection",
    "beta_noise_variance",
    "learning_rate",
    "natural_gradient_step",
    "probit_linearisation",
]

_LOG_2PI = math.log(2.0 * math.pi)
_TIE_POLICIES = ("drop", "half")


# ---------------------------------------------------------------------- pure pieces
def learning_rate(iteration: int, delay: float, forgetting_rate: float) -> float:
    """``ρ_n = (n + delay)^{-forgetting_rate}`` (Hoffman et al., 2013), ``n = 1, 2, ...``.

    ``forgetting_rate`` in (0.5, 1] and ``delay ≥ 0`` satisfy the Robbins–Monro conditions;
    ``forgetting_rate = 0`` gives ``ρ = 1`` (plain fixed-point iteration, full-batch VI).
    """
    return float((iteration + delay) ** (-forgetting_rate))


def probit_linearisation(mean_diff: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``(Φ(ẑ), g)``: the probability at the mean difference and its slope ``φ(ẑ)/α``."""
    z = np.asarray(mean_diff, dtype=np.float64) / alpha
    return ndtr(z), np.exp(-0.5 * z * z) / (math.sqrt(2.0 * math.pi) * alpha)


def beta_noise_variance(prior_var_diff: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    """Observation noise ``Q_p`` of the Gaussian likelihood approximation (2020, Eq. 8).

    ``Beta(γ, λ)`` matches the prior moments of ``Φ(d/α)`` for ``d ~ N(0, v)``: mean ½ and
    variance ``arcsin(v/(α² + v)) / (2π)``, so ``γ = λ = (¼ / var - 1) / 2``; then
    ``Q = (γ + y)(λ + 1 - y) / (γ + λ + 1)²``. ``γ + λ`` is floored at 0.05 so that a very
    vague prior cannot make ``Q`` vanish for a hard label.
    """
    v = np.maximum(np.asarray(prior_var_diff, dtype=np.float64), 1e-12) / alpha**2
    var = np.arcsin(v / (1.0 + v)) / (2.0 * math.pi)
    total = np.maximum(0.25 / var - 1.0, 0.05)
    half = 0.5 * total
    y = np.asarray(y, dtype=np.float64)
    return (half + y) * (half + 1.0 - y) / (total + 1.0) ** 2


@dataclass
class GaussianFactor:
    """``q(u) = N(mean, cov)`` in natural parameters ``(precision, linear = precision @ mean)``."""

    precision: np.ndarray
    linear: np.ndarray
    #: skip the symmetrisation (the caller built ``precision`` exactly symmetric)
    symmetric: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.symmetric:
            self.precision = 0.5 * (self.precision + self.precision.T)
        self._chol = safe_cholesky(self.precision, what="variational precision S⁻¹")
        self.mean = cholesky_solve(self._chol, self.linear)
        self._cov = None

    @classmethod
    def from_moments(cls, mean: np.ndarray, cov: np.ndarray) -> GaussianFactor:
        chol = safe_cholesky(cov, what="variational covariance S")
        precision = cholesky_solve(chol, np.eye(len(mean)))
        return cls(precision, precision @ mean)

    @property
    def cov(self) -> np.ndarray:
        if self._cov is None:
            self._cov = cholesky_inverse(self._chol)
        return self._cov

    def log_det_cov(self) -> float:
        return -cholesky_logdet(self._chol)


def cholesky_inverse(chol: np.ndarray) -> np.ndarray:
    """``(L Lᵀ)⁻¹`` from the lower factor ``L`` (zeros above the diagonal, as
    :func:`safe_cholesky` returns) by LAPACK ``potri``: a third of the work of solving
    against the identity."""
    inverse, info = lapack.dpotri(chol, lower=1)
    if info != 0:  # pragma: no cover - L comes from a successful factorisation
        return cholesky_solve(chol, np.eye(len(chol)))
    # potri fills the lower triangle and leaves the input's upper one, zero for a lower
    # factor from safe_cholesky (required): mirror it with one transposed add
    full = inverse + inverse.T
    full.flat[:: len(full) + 1] *= 0.5
    return full


def natural_gradient_step(
    previous: GaussianFactor,
    prior_precision: np.ndarray,
    rows: np.ndarray,
    precision_weights: np.ndarray,
    linear_weights: np.ndarray,
    targets: np.ndarray,
    rho: float,
) -> GaussianFactor:
    """One natural-gradient SVI step for a Gaussian factor under linear-Gaussian observations.

    The (scaled) observations say ``targets_p ≈ c_p rowsᵀ_p u`` with effective precision
    ``precision_weights_p`` (``π E[c_p²]/Q_p``) and ``linear_weights_p`` (``π E[c_p]/Q_p``);
    the optimum given this batch has precision ``P₀ + rowsᵀ diag(w) rows`` and linear term
    ``rowsᵀ (linear_weights · targets)``, and the step moves a fraction ``ρ`` of the way
    there in natural parameters (Hensman et al., 2013; 2020, Eqs. 17–18, 32–37).
    ``prior_precision`` must be exactly symmetric (as ``s · InducingProjection.K_inv`` is).
    """
    # Rᵀ R with R = diag(√w) rows: the same array twice, so numpy calls BLAS syrk (half a gemm);
    # rows may be single precision (the mini-batch products), the factor stays double
    weighted = rows * np.sqrt(np.maximum(precision_weights, 0.0)).astype(rows.dtype)[:, None]
    precision = np.add(prior_precision, weighted.T @ weighted, dtype=np.float64)
    linear = (rows.T @ (linear_weights * targets).astype(rows.dtype)).astype(np.float64)
    if rho < 1.0:
        precision *= rho
        precision += (1.0 - rho) * previous.precision
        linear = (1.0 - rho) * previous.linear + rho * linear
    # syrk's product is exactly symmetric, so the result is for a symmetric prior (required)
    # and a previous factor's precision (symmetrised on construction)
    return GaussianFactor(precision, linear, symmetric=True)


@dataclass
class GammaFactor:
    """``q(s) = Gamma(shape, rate)`` for an inverse function scale, prior ``Gamma(a₀, b₀)``."""

    shape0: float
    rate0: float
    shape: float
    rate: float

    @classmethod
    def prior(cls, shape0: float, rate0: float) -> GammaFactor:
        if not (shape0 > 0 and rate0 > 0):
            raise ValueError(
                f"the gamma prior needs a positive shape and rate; got {shape0}, {rate0}"
            )
        return cls(shape0, rate0, shape0, rate0)

    @property
    def mean(self) -> float:
        return self.shape / self.rate

    @property
    def mean_log(self) -> float:
        return float(digamma(self.shape) - math.log(self.rate))

    def update(self, K_inv: np.ndarray, factor: GaussianFactor) -> GammaFactor:
        """``a = a₀ + M/2``, ``b = b₀ + ½ tr(K⁻¹ (S + m mᵀ))`` (2020, Eq. 15)."""
        return GammaFactor(
            self.shape0,
            self.rate0,
            self.shape0 + 0.5 * len(factor.mean),
            self.rate0 + 0.5 * _prior_quadratic(K_inv, factor),
        )

    def kl(self) -> float:
        """``KL(q(s) ‖ p(s))``."""
        a, b, a0, b0 = self.shape, self.rate, self.shape0, self.rate0
        return float(
            (a - a0) * digamma(a)
            - gammaln(a)
            + gammaln(a0)
            + a0 * (math.log(b) - math.log(b0))
            + a * (b0 - b) / b
        )


def _prior_quadratic(K_inv: np.ndarray, factor: GaussianFactor) -> float:
    """``tr(K⁻¹ (S + m mᵀ))``."""
    return float(np.vdot(K_inv, factor.cov) + factor.mean @ K_inv @ factor.mean)


def gaussian_prior_kl(
    chol_prior: np.ndarray, K_inv: np.ndarray, factor: GaussianFactor, scale: GammaFactor
) -> float:
    """``E_q(s)[KL(q(u) ‖ N(0, K/s))]`` for ``K = L Lᵀ`` (``K_inv = K⁻¹``)."""
    m = len(factor.mean)
    return 0.5 * (
        scale.mean * _prior_quadratic(K_inv, factor)
        - m
        + cholesky_logdet(chol_prior)
        - m * scale.mean_log
        - factor.log_det_cov()
    )


def prior_gradient_weights(
    K_inv: np.ndarray, factor: GaussianFactor, scale: GammaFactor
) -> np.ndarray:
    """``G`` with ``∂(-KL)/∂θ = Σ_ij G_ij ∂K_ij/∂θ`` at fixed ``q``:
    ``G = ½ (ŝ K⁻¹ (S + m mᵀ) K⁻¹ - K⁻¹)`` (the corrected draft Eq. 11)."""
    second = factor.cov + np.outer(factor.mean, factor.mean)
    return 0.5 * (scale.mean * K_inv @ second @ K_inv - K_inv)


def quadratic_rows(A: np.ndarray, S: np.ndarray) -> np.ndarray:
    """``diag(A S Aᵀ)``: one BLAS product, then a row sum (never the n × n matrix)."""
    return np.sum((A @ S) * A, axis=1)


class InducingProjection:
    """The sparse GP map from inducing values ``u`` at ``Z`` to utilities at any inputs.

    ``A(X) = K_xm K_mm⁻¹``; means ``A m``; covariances ``K_xx/ŝ + A (S - K_mm/ŝ) Aᵀ`` (2020,
    Eqs. 14, 19, 39–40). ``K_mm`` (with the :func:`safe_cholesky` jitter) is the kernel at ``Z``.
    """

    def __init__(self, kernel: Kernel, Z: np.ndarray) -> None:
        self.kernel = kernel
        self.Z = np.asarray(Z, dtype=np.float64)
        self.K_mm = kernel(self.Z)
        self.chol = safe_cholesky(self.K_mm, what="inducing-point covariance K_mm")
        K_inv = cholesky_solve(self.chol, np.eye(len(self.Z)))
        self.K_inv = 0.5 * (K_inv + K_inv.T)  # exactly symmetric (natural_gradient_step)

    @property
    def n_inducing(self) -> int:
        return len(self.Z)

    def weights(self, X: np.ndarray) -> np.ndarray:
        """``A = K_xm K_mm⁻¹`` (n, M)."""
        return cholesky_solve(self.chol, self.kernel(self.Z, X)).T

    def predict(
        self, X: np.ndarray, factor: GaussianFactor, scale: GammaFactor
    ) -> tuple[np.ndarray, np.ndarray]:
        """Marginal mean and variance at the rows of ``X``."""
        K_mx = self.kernel(self.Z, X)
        A = cholesky_solve(self.chol, K_mx).T
        var = (self.kernel.diag(X) - np.einsum("nm,mn->n", A, K_mx)) / scale.mean
        var = var + quadratic_rows(A, factor.cov)
        return A @ factor.mean, np.maximum(var, 0.0)

    def predict_cov(
        self, X: np.ndarray, factor: GaussianFactor, scale: GammaFactor
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and full covariance at the rows of ``X`` (draft Eqs. 9–10, corrected)."""
        K_mx = self.kernel(self.Z, X)
        A = cholesky_solve(self.chol, K_mx).T
        cov = (self.kernel(X) - A @ K_mx) / scale.mean + A @ factor.cov @ A.T
        return A @ factor.mean, 0.5 * (cov + cov.T)

    def difference_moments(
        self,
        X_left: np.ndarray,
        X_right: np.ndarray,
        factor: GaussianFactor,
        scale: GammaFactor,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of ``f(x_l) - f(x_r)`` for paired rows, without an n × n matrix."""
        n = len(X_left)
        return self.pair_moments(
            np.vstack([X_left, X_right]), np.arange(n), np.arange(n, 2 * n), factor, scale
        )

    def pair_moments(
        self,
        X: np.ndarray,
        left: np.ndarray,
        right: np.ndarray,
        factor: GaussianFactor,
        scale: GammaFactor,
    ) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`difference_moments` for pairs of rows ``(left, right)`` of ``X``: the
        cross-covariances are computed once per item, not once per pair, and the pairs are
        taken in chunks (memory ``O(len(X) · M + chunk · (M + D))``, not ``O(P · M)``)."""
        K_mx = self.kernel(self.Z, X)
        A = cholesky_solve(self.chol, K_mx).T
        AS = A @ factor.cov
        n = len(left)
        mean, var = np.empty(n), np.empty(n)
        for rows in _chunks(n):
            li, ri = left[rows], right[rows]
            D = A[li] - A[ri]
            KD = K_mx[:, li] - K_mx[:, ri]
            prior = (
                self.kernel.diag(X[li])
                + self.kernel.diag(X[ri])
                - 2.0 * self.kernel.paired(X[li], X[ri])
            )
            v = (prior - np.einsum("nm,mn->n", D, KD)) / scale.mean
            var[rows] = np.maximum(v + np.sum((AS[li] - AS[ri]) * D, axis=1), 0.0)
            mean[rows] = D @ factor.mean
        return mean, var

    def bound_gradient(self, factor: GaussianFactor, scale: GammaFactor) -> np.ndarray:
        """Gradient of ``-KL`` in the log length-scales at fixed ``q``."""
        weights = prior_gradient_weights(self.K_inv, factor, scale)
        return self.kernel.gradient_contract(weights, self.Z)


def expected_linear_loglik(
    y: np.ndarray, noise_var: np.ndarray, mean_diff: np.ndarray, var_diff: np.ndarray, alpha: float
) -> float:
    """``Σ_p E_q[ln N(y_p; Φ(ẑ_p) + g_p (d_p - d̂_p), Q_p)]`` (2020, Eq. 11 under ``q``)."""
    p, g = probit_linearisation(mean_diff, alpha)
    return float(
        np.sum(
            -0.5 * (_LOG_2PI + np.log(noise_var))
            - 0.5 * ((y - p) ** 2 + g * g * var_diff) / noise_var
        )
    )


#: comparisons per chunk where all of them are visited (Q_p, the bound)
_PAIR_CHUNK = 8192


def _chunks(n: int, size: int = _PAIR_CHUNK):
    """Slices covering ``range(n)`` in pieces of ``size``."""
    for lo in range(0, n, size):
        yield slice(lo, min(n, lo + size))


def _relative_change(new: np.ndarray, old: np.ndarray) -> float:
    """Root-mean-square change of a mean vector relative to its root-mean-square size
    (floored at 1/10, so a posterior that stays near zero counts as converged)."""
    size = max(0.1, float(np.sqrt(np.mean(new * new))))
    return float(np.sqrt(np.mean((new - old) ** 2)) / size)


# ---------------------------------------------------------------------- data preparation
@dataclass
class EncodedPairs:
    """Comparisons ready for the GPPL engines: codes into ``item_rows`` and soft labels."""

    left: np.ndarray
    right: np.ndarray
    y: np.ndarray
    worker: np.ndarray
    n_ties_dropped: int


def encode_pairs(data: Comparisons, ties: str, who: str) -> EncodedPairs:
    """``y = 1`` (left preferred), ``0`` (right), ``½`` (tie, with ``ties="half"``).

    Ties are dropped with a :class:`DataWarning` giving their count under ``ties="drop"``.
    """
    if ties not in _TIE_POLICIES:
        raise ValueError(f"ties must be one of {_TIE_POLICIES}; got {ties!r}")
    keep = np.ones(data.n_comparisons, dtype=bool)
    dropped = 0
    if ties == "drop" and data.n_ties:
        keep = data.outcome != 0
        dropped = data.n_ties
        if not keep.any():
            raise ValueError(
                f"{who}: all {data.n_ties} comparisons are ties; pass ties='half' to use them"
            )
        warnings.warn(
            f"{who}: dropped {data.n_ties} tie(s) of {data.n_comparisons} comparisons "
            "(pass ties='half' to count a tie as half a win each)",
            DataWarning,
            stacklevel=3,
        )
    y = 0.5 * (data.outcome[keep].astype(np.float64) + 1.0)
    return EncodedPairs(
        data.left_codes[keep], data.right_codes[keep], y, data.worker_codes[keep], dropped
    )


# ---------------------------------------------------------------------- the estimator
class GPPL(GPPreferenceBase):
    """GP preference learning (GPPL) by stochastic variational inference (Simpson & Gurevych,
    2018; 2020, Sec. 4.2, Algorithm 1).

    Pooled over workers: every comparison is taken to come from one utility function. See the
    module docstring for the model, the likelihood approximation and the updates.

    Parameters
    ----------
    kernel : {"matern32", "rbf"} or Kernel
        Item covariance ``k_θ`` (unit variance; the scale is ``1/s``).
    lengthscale : {"median", "scaled_median"}, float or array
        As for :class:`GPPreferenceEP`.
    n_inducing : int
        Number of K-means inducing points (all distinct items if there are fewer).
    batch_size : int or None
        Comparisons per SVI iteration (None: all, i.e. full-batch natural-gradient VI).
    forgetting_rate, delay : float
        Step sizes ``ρ_n = (n + delay)^{-forgetting_rate}``.
    shape_s0, rate_s0 : float
        Gamma prior on the inverse scale ``s`` (shape, rate; ``E[s] = shape/rate``).
    noise : float
        Judgment noise sd ``σ``; the likelihood is ``Φ(d / (√2 σ))``.
    ties : {"drop", "half"}
        Ties dropped (with a warning) or observed as ``y = ½``.
    max_iter, tol : int, float
        SVI iterations (mini-batches), and the tolerance on the root-mean-square change of the
        inducing mean over one pass through the data (``⌈P / batch_size⌉`` iterations),
        relative to its root-mean-square size (checked after every pass).
    n_inner : int
        Relinearisations per mini-batch (Algorithm 1's inner loop).
    optimize_lengthscale : bool
        Maximise the bound over the log length-scales by L-BFGS-B (each evaluation refits,
        warm-started; see the module docstring for the gradient).
    random_state : seed or Generator
    progress : bool
        Progress bar over SVI iterations.

    Attributes
    ----------
    utility_ : DataFrame (items × [mean, sd])
    inducing_points_ : ndarray (M, D)
    scale_ : GammaFactor
        ``q(s)``; ``scale_.mean`` is ``E[s]``.
    lower_bound_ : float
    lengthscale_ : Series or None
    n_iter_, converged_, history_, n_ties_dropped_
    """

    def __init__(
        self,
        kernel: str | Kernel = "matern32",
        lengthscale: str | float | np.ndarray = "median",
        *,
        n_inducing: int = 200,
        batch_size: int | None = 1000,
        forgetting_rate: float = 0.9,
        delay: float = 1.0,
        shape_s0: float = 2.0,
        rate_s0: float = 2.0,
        noise: float = 1.0,
        ties: str = "drop",
        max_iter: int = 1000,
        tol: float = 1e-2,
        n_inner: int = 2,
        optimize_lengthscale: bool = False,
        random_state: RandomState = None,
        progress: bool = False,
    ) -> None:
        self.kernel = kernel
        self.lengthscale = lengthscale
        self.n_inducing = n_inducing
        self.batch_size = batch_size
        self.forgetting_rate = forgetting_rate
        self.delay = delay
        self.shape_s0 = shape_s0
        self.rate_s0 = rate_s0
        self.noise = noise
        self.ties = ties
        self.max_iter = max_iter
        self.tol = tol
        self.n_inner = n_inner
        self.optimize_lengthscale = optimize_lengthscale
        self.random_state = random_state
        self.progress = progress

    # ------------------------------------------------------------------ setup
    def _check_params(self) -> None:
        if not (isinstance(self.n_inducing, (int, np.integer)) and self.n_inducing >= 1):
            raise ValueError(f"n_inducing must be a positive integer; got {self.n_inducing!r}")
        if self.batch_size is not None and not (
            isinstance(self.batch_size, (int, np.integer)) and self.batch_size >= 1
        ):
            raise ValueError(
                f"batch_size must be a positive integer or None; got {self.batch_size!r}"
            )
        if not (0.0 <= self.forgetting_rate <= 1.0 and self.delay >= 0.0):
            raise ValueError(
                "forgetting_rate must lie in [0, 1] and delay be non-negative; got "
                f"{self.forgetting_rate}, {self.delay}"
            )
        if self.n_inner < 1:
            raise ValueError(f"n_inner must be at least 1; got {self.n_inner}")
        difference_scale(self.noise)
        GammaFactor.prior(self.shape_s0, self.rate_s0)

    def _setup_items(self, data: Comparisons, train: np.ndarray, rng: np.random.Generator):
        """Kernel and inducing points over item features (or an independent prior)."""
        self.item_ids_ = data.item_ids
        self.feature_names_ = data.feature_names
        if not data.has_features:
            self._X = np.arange(data.n_items, dtype=np.float64)[:, None]
            # without features an item is its own inducing point
            return Independent(1.0), self._X[train]
        self._X = data.X
        X_train = data.X[train]
        # unit variance (GPPreferenceBase._kernel_variance): the scale is 1/s
        return self._make_kernel(X_train), self._inducing_points(X_train, rng)

    def _inducing_points(self, X_train: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return kmeans_inducing_points(X_train, self.n_inducing, random_state=rng)

    def fit(
        self,
        comparisons: Comparisons | pd.DataFrame,
        items: pd.DataFrame | None = None,
    ) -> GPPL:
        """Fit to comparisons (a :class:`~crowdbayes.data.Comparisons`, DataFrame or path);
        ``items`` is the item feature table when passing a DataFrame or path."""
        self._check_params()
        name = type(self).__name__
        data = as_comparisons(comparisons, items=items)
        pairs = encode_pairs(data, self.ties, name)
        self.n_ties_dropped_ = pairs.n_ties_dropped
        rng = as_generator(self.random_state)
        train = np.unique(np.concatenate([pairs.left, pairs.right]))
        kernel, Z = self._setup_items(data, train, rng)
        self._pairs = pairs
        # Q is fixed for the whole fit (also across length-scale changes): it belongs to the
        # likelihood approximation, so the bound stays one function of θ for L-BFGS-B
        self._q = self._noise_var(kernel)
        if self.optimize_lengthscale:
            if not hasattr(kernel, "with_lengthscale"):
                raise ValueError(
                    f"{name}: optimize_lengthscale needs item features and a kernel with "
                    "length-scales"
                )
            kernel = self._optimise(kernel, Z, rng)
        projection = InducingProjection(kernel, Z)
        factor, scale, result = self._infer(projection, None, rng, self.progress)
        self.n_iter_, self.converged_, self.history_ = (
            result.n_iter,
            result.converged,
            result.history,
        )
        self._set_results(projection, factor, scale)
        self.lower_bound_ = self._bound(projection, factor, scale)
        return self

    def _set_results(
        self, projection: InducingProjection, factor: GaussianFactor, scale: GammaFactor
    ) -> None:
        self._projection, self._factor, self.scale_ = projection, factor, scale
        self.kernel_ = projection.kernel
        self.inducing_points_ = projection.Z
        mean, var = projection.predict(self._X, factor, scale)
        self.utility_ = pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=self.item_ids_)

    # ------------------------------------------------------------------ inference
    def _noise_var(self, kernel: Kernel, prior_scale: float | None = None) -> np.ndarray:
        """``Q_p`` from the prior variance of each comparison's difference: the kernel's
        times ``prior_scale`` (default ``1/E[s] = b₀/a₀``)."""
        pairs, X = self._pairs, self._X
        prior = np.empty(len(pairs.y))
        for rows in _chunks(len(prior)):  # never a (P, D) feature array
            Xl, Xr = X[pairs.left[rows]], X[pairs.right[rows]]
            prior[rows] = kernel.diag(Xl) + kernel.diag(Xr) - 2.0 * kernel.paired(Xl, Xr)
        prior *= self.rate_s0 / self.shape_s0 if prior_scale is None else prior_scale
        return beta_noise_variance(prior, pairs.y, difference_scale(self.noise))

    def _infer(self, projection, start, rng, progress):
        """SVI over the inducing posterior and ``q(s)``; ``start`` = (factor, scale) warm start."""
        pairs = self._pairs
        alpha = difference_scale(self.noise)
        prior_scale = GammaFactor.prior(self.shape_s0, self.rate_s0)
        scale = prior_scale if start is None else start[1]
        if start is None:
            factor = GaussianFactor(scale.mean * projection.K_inv, np.zeros(projection.n_inducing))
        else:
            factor = GaussianFactor.from_moments(start[0].mean, start[0].cov)
        noise_var = self._q
        # A for every compared item: memory O(N M), independent of the number of comparisons
        items = np.unique(np.concatenate([pairs.left, pairs.right]))
        A = projection.weights(self._X[items])
        left = np.searchsorted(items, pairs.left)
        right = np.searchsorted(items, pairs.right)
        state = {"factor": factor, "scale": scale}

        def update(rho: float, rows_idx, weight: float) -> None:
            old, scale = state["factor"], state["scale"]
            rows = A[left[rows_idx]] - A[right[rows_idx]]
            y, q = pairs.y[rows_idx], noise_var[rows_idx]
            prior_precision = scale.mean * projection.K_inv
            current = old
            for _ in range(self.n_inner):
                d_hat = rows @ current.mean
                p, g = probit_linearisation(d_hat, alpha)
                current = natural_gradient_step(
                    old,
                    prior_precision,
                    rows,
                    weight * g * g / q,
                    weight * g / q,
                    y - p + g * d_hat,
                    rho,
                )
            state["scale"] = prior_scale.update(projection.K_inv, current)
            state["factor"] = current

        result = self._svi_loop(update, lambda: state["factor"].mean, rng, progress, "GPPL SVI")
        return state["factor"], state["scale"], result

    def _svi_loop(self, update, monitored, rng, progress: bool, desc: str, change=None):
        """Drive SVI: ``update(ρ_n, batch_index, P/P_n)`` takes one natural-gradient step on
        a mini-batch drawn without replacement.

        Convergence is judged once per pass over the data (``⌈P / P_n⌉`` iterations) on
        ``change(monitored(), previous)`` between this pass and the previous one (default: the
        change of a mean vector relative to its size): single mini-batch steps keep moving by
        the sampling noise.
        """
        change = _relative_change if change is None else change
        n_obs = len(self._pairs.y)
        batch = n_obs if self.batch_size is None else min(self.batch_size, n_obs)
        epoch = math.ceil(n_obs / batch)
        snapshot = [monitored()]

        def step(iteration: int) -> float | None:
            rho = learning_rate(iteration + 1, self.delay, self.forgetting_rate)
            rows = slice(None) if batch == n_obs else rng.choice(n_obs, batch, replace=False)
            update(rho, rows, n_obs / batch)
            if (iteration + 1) % epoch:
                return None
            current = monitored()
            value = change(current, snapshot[0])
            snapshot[0] = current
            return value

        return run_iterations(
            step,
            max_iter=self.max_iter,
            tol=self.tol,
            monitor="change",
            progress=progress,
            desc=desc,
            warn_name=type(self).__name__,
        )

    def _bound(
        self, projection: InducingProjection, factor: GaussianFactor, scale: GammaFactor
    ) -> float:
        """The lower bound ``L`` (module docstring) on all comparisons."""
        pairs = self._pairs
        items, codes = np.unique(np.concatenate([pairs.left, pairs.right]), return_inverse=True)
        n = len(pairs.left)
        mean_d, var_d = projection.pair_moments(self._X[items], codes[:n], codes[n:], factor, scale)
        loglik = expected_linear_loglik(
            pairs.y, self._q, mean_d, var_d, difference_scale(self.noise)
        )
        return (
            loglik
            - gaussian_prior_kl(projection.chol, projection.K_inv, factor, scale)
            - scale.kl()
        )

    def _optimise(self, kernel, Z, rng) -> Kernel:
        """L-BFGS-B on ``-L`` over log length-scales, refitting ``q`` (warm) per evaluation."""
        start_ls = np.log(kernel.lengthscale)
        state: dict = {"start": None}

        def objective(log_ls: np.ndarray) -> tuple[float, np.ndarray]:
            projection = InducingProjection(kernel.with_lengthscale(np.exp(log_ls)), Z)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                factor, scale, _ = self._infer(projection, state["start"], rng, False)
            state["start"] = (factor, scale)
            value = self._bound(projection, factor, scale)
            return -value, -projection.bound_gradient(factor, scale)

        found = minimize(
            objective,
            start_ls,
            jac=True,
            method="L-BFGS-B",
            bounds=[(v - 5.0, v + 5.0) for v in start_ls],
            options={"maxiter": 30},
        )
        self.optimize_result_ = found
        return kernel.with_lengthscale(np.exp(found.x))

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self) -> None:
        check_is_fitted(self, "utility_")

    def predict_utility(self, items: Sequence | pd.DataFrame | None = None) -> pd.DataFrame:
        """Posterior mean and sd of utilities: every item seen in fit (None), known ids, or a
        feature DataFrame indexed by item id (new items, Eqs. 9–10)."""
        self._check_fitted()
        if items is None:
            return self.utility_.copy()
        ids, X = self._resolve(items, "predict_utility")
        mean, var = self._projection.predict(X, self._factor, self.scale_)
        return pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=ids)

    def predict_cov(self, items: Sequence | pd.DataFrame) -> pd.DataFrame:
        """Posterior covariance of the utilities of ``items`` (draft Eq. 10)."""
        self._check_fitted()
        ids, X = self._resolve(items, "predict_cov")
        _, cov = self._projection.predict_cov(X, self._factor, self.scale_)
        return pd.DataFrame(cov, index=ids, columns=ids)

    def _pair_rows(
        self, left: Sequence, right: Sequence, items: pd.DataFrame | None, what: str
    ) -> tuple[pd.Index, pd.Index, np.ndarray, np.ndarray]:
        """Feature rows of each pair's two items (known ids, or rows of ``items``)."""
        left, right = pd.Index(list(left)), pd.Index(list(right))
        if len(left) != len(right):
            raise ValueError(f"{what}: {len(left)} left and {len(right)} right items")
        wanted = left.append(right).unique()
        described = wanted.intersection(items.index, sort=False) if items is not None else []
        ids, X = self._resolve(wanted.difference(described, sort=False), what)
        if len(described):
            ids_new, X_new = self._resolve(items.loc[described], what)
            ids, X = ids.append(ids_new), np.vstack([X, X_new])
        return left, right, X[ids.get_indexer(left)], X[ids.get_indexer(right)]

    def predict_proba(
        self, left: Sequence, right: Sequence, items: pd.DataFrame | None = None
    ) -> pd.Series:
        """``P(left ≻ right) = Φ(E[d] / √(α² + Var[d]))`` with the posterior of the difference
        (2020, Eq. 3). Items not seen in fit need their features in ``items``."""
        self._check_fitted()
        left, right, Xl, Xr = self._pair_rows(left, right, items, "predict_proba")
        mean_d, var_d = self._projection.difference_moments(Xl, Xr, self._factor, self.scale_)
        index = pd.MultiIndex.from_arrays([left, right], names=["left", "right"])
        return pd.Series(pair_probabilities(mean_d, var_d, self.noise), index=index, name="p_left")

    # ------------------------------------------------------------------ persistence
    def _kernel_arrays(self) -> tuple[dict, dict]:
        kernel = kernel_name(self.kernel_)
        arrays = {
            "item_ids": np.asarray(self.item_ids_),
            "X": self._X,
            "Z": self.inducing_points_,
            "lengthscale": np.asarray(getattr(self.kernel_, "lengthscale", [])),
        }
        if self.feature_names_ is not None:
            arrays["feature_names"] = np.asarray(self.feature_names_, dtype=str)
        meta = {
            "kernel": kernel,
            "noise": self.noise,
            "ties": self.ties,
            "shape_s0": self.shape_s0,
            "rate_s0": self.rate_s0,
            "n_iter": self.n_iter_,
            "converged": self.converged_,
            "n_ties_dropped": self.n_ties_dropped_,
            "lower_bound": self.lower_bound_,
        }
        return arrays, meta

    @staticmethod
    def _restore_items(model, arrays: dict, meta: dict) -> Kernel:
        kernel = kernel_from_saved(meta["kernel"], arrays["lengthscale"], 1.0)
        model.item_ids_ = pd.Index(arrays["item_ids"], name="item")
        names = arrays.get("feature_names")
        model.feature_names_ = None if names is None else pd.Index(names.tolist())
        model._X = arrays["X"]
        model.n_iter_, model.converged_ = meta["n_iter"], meta["converged"]
        model.n_ties_dropped_ = meta["n_ties_dropped"]
        model.lower_bound_ = meta["lower_bound"]
        model.history_ = []
        return kernel

    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted model (safe ``.npz``, no pickle): features, kernel, inducing points
        and ``q(u)``, ``q(s)``."""
        self._check_fitted()
        arrays, meta = self._kernel_arrays()
        arrays.update(precision=self._factor.precision, linear=self._factor.linear)
        meta.update(shape=self.scale_.shape, rate=self.scale_.rate)
        save_arrays(path, type(self).__name__, arrays, meta)

    @classmethod
    def load(cls, path: str | os.PathLike) -> GPPL:
        """Read a model written by :meth:`save`."""
        _, arrays, meta = load_arrays(path, cls.__name__)
        model = cls(noise=meta["noise"], ties=meta["ties"])
        model.shape_s0, model.rate_s0 = meta["shape_s0"], meta["rate_s0"]
        kernel = cls._restore_items(model, arrays, meta)
        scale = GammaFactor(meta["shape_s0"], meta["rate_s0"], meta["shape"], meta["rate"])
        factor = GaussianFactor(arrays["precision"], arrays["linear"])
        model._set_results(InducingProjection(kernel, arrays["Z"]), factor, scale)
        return model
