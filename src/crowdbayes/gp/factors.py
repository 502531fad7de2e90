"""Variational factors of the GP preference engines and their natural-gradient updates.

``q(u) = N(m, S)`` over the values of a GP at ``M`` inducing inputs is kept in natural
parameters ``(S⁻¹, S⁻¹ m)`` (:class:`GaussianFactor`) and the inverse function scale ``s`` of
the prior ``u ~ N(0, K/s)`` has ``q(s) = Gamma(a, b)`` with prior ``Gamma(a₀, b₀)``
(:class:`GammaFactor`; Simpson & Gurevych, 2020, Eq. 15). Under observations that are linear
and Gaussian in ``u`` (the linearised likelihood of :mod:`.linearised`) the optimal ``q(u)``
given a mini-batch is conjugate, and one stochastic variational step moves the natural
parameters a fraction ``ρ_n`` of the way there (Hoffman et al., 2013; Hensman et al., 2013;
Simpson & Gurevych, 2020, Eqs. 17–18):

.. math::
    S_n^{-1} &= (1 - ρ_n) S_{n-1}^{-1} + ρ_n (ŝ K^{-1} + π J^T Q^{-1} J), \\\\
    S_n^{-1} m_n &= (1 - ρ_n) S_{n-1}^{-1} m_{n-1} + ρ_n π J^T Q^{-1} t,

with ``ρ_n = (n + delay)^{-forgetting_rate}`` (:func:`learning_rate`). The KL terms of the
bound and the gradient of ``-KL`` in the kernel parameters at fixed ``q`` (the corrected draft
Eq. 11 of Simpson & Gurevych, 2018) are here too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..linalg import cholesky_logdet, cholesky_solve, safe_cholesky
from ..persistence import persistable

__all__ = [
    "GaussianFactor",
    "GammaFactor",
    "cholesky_inverse",
    "natural_gradient_step",
    "natural_step",
    "learning_rate",
    "prior_quadratic",
    "gaussian_prior_kl",
    "prior_gradient_weights",
    "quadratic_rows",
]


def learning_rate(iteration: int, delay: float, forgetting_rate: float) -> float:
    """``ρ_n = (n + delay)^{-forgetting_rate}`` (Hoffman et al., 2013), ``n = 1, 2, ...``.

    ``forgetting_rate`` in (0.5, 1] and ``delay ≥ 0`` satisfy the Robbins–Monro conditions;
    ``forgetting_rate = 0`` gives ``ρ = 1`` (plain fixed-point iteration, full-batch VI).
    """
    return float((iteration + delay) ** (-forgetting_rate))


@persistable
@dataclass
class GaussianFactor:
    """``q(u) = N(mean, cov)`` in natural parameters ``(precision, linear = precision @ mean)``."""

    precision: np.ndarray
    linear: np.ndarray
    #: skip the symmetrisation (the caller built ``precision`` exactly symmetric)
    symmetric: bool = field(default=False, repr=False, compare=False)
    #: the relative jitter of the first Cholesky attempt (:func:`safe_cholesky`; None: its
    #: default; 0 for a precision positive definite by construction, whose mean and covariance
    #: a jitter would shift)
    jitter: float | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.symmetric:
            self.precision = 0.5 * (self.precision + self.precision.T)
        self._chol = safe_cholesky(
            self.precision, jitter=self.jitter, what="variational precision S⁻¹"
        )
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
    from scipy.linalg import lapack

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
    *,
    scratch: np.ndarray | None = None,
) -> GaussianFactor:
    """One natural-gradient SVI step for a Gaussian factor under linear-Gaussian observations.

    The (scaled) observations say ``targets_p ≈ c_p rowsᵀ_p u`` with effective precision
    ``precision_weights_p`` (``π E[c_p²]/Q_p``) and ``linear_weights_p`` (``π E[c_p]/Q_p``);
    the optimum given this batch has precision ``P₀ + rowsᵀ diag(w) rows`` and linear term
    ``rowsᵀ (linear_weights · targets)``, and the step moves a fraction ``ρ`` of the way
    there in natural parameters (Hensman et al., 2013; 2020, Eqs. 17–18, 32–37).
    ``prior_precision`` must be exactly symmetric (as ``s · InducingProjection.K_inv`` is).
    ``scratch``, an array of ``rows``' shape and dtype, holds ``diag(√w) rows`` (a loop that
    passes the same one every time allocates nothing of the mini-batch's size).
    """
    # Rᵀ R with R = diag(√w) rows: the same array twice, so numpy calls BLAS syrk (half a gemm);
    # rows may be single precision (the mini-batch products), the factor stays double
    root = np.sqrt(np.maximum(precision_weights, 0.0)).astype(rows.dtype)[:, None]
    weighted = np.multiply(rows, root, out=scratch)
    # syrk's product is exactly symmetric, as natural_step needs
    return natural_step(
        previous,
        prior_precision,
        weighted.T @ weighted,
        (rows.T @ (linear_weights * targets).astype(rows.dtype)).astype(np.float64),
        rho,
    )


def natural_step(
    previous: GaussianFactor,
    prior_precision: np.ndarray,
    data_precision: np.ndarray,
    data_linear: np.ndarray,
    rho: float,
) -> GaussianFactor:
    """The step of :func:`natural_gradient_step` from the observations' terms already summed:
    ``S⁻¹ = (1 - ρ) S_prev⁻¹ + ρ (P₀ + data_precision)``,
    ``S⁻¹ m = (1 - ρ) S_prev⁻¹ m_prev + ρ data_linear``. ``prior_precision`` and
    ``data_precision`` must be exactly symmetric (the result is then symmetric without
    symmetrising: a previous factor's precision is symmetrised on construction)."""
    precision = np.add(prior_precision, data_precision, dtype=np.float64)
    linear = data_linear
    if rho < 1.0:
        precision *= rho
        precision += (1.0 - rho) * previous.precision
        linear = (1.0 - rho) * previous.linear + rho * linear
    return GaussianFactor(precision, linear, symmetric=True)


@persistable
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
        from scipy.special import digamma

        return float(digamma(self.shape) - math.log(self.rate))

    def update(self, K_inv: np.ndarray, factor: GaussianFactor) -> GammaFactor:
        """``a = a₀ + M/2``, ``b = b₀ + ½ tr(K⁻¹ (S + m mᵀ))`` (2020, Eq. 15)."""
        return GammaFactor(
            self.shape0,
            self.rate0,
            self.shape0 + 0.5 * len(factor.mean),
            self.rate0 + 0.5 * prior_quadratic(K_inv, factor),
        )

    def kl(self) -> float:
        """``KL(q(s) ‖ p(s))``."""
        from scipy.special import digamma, gammaln

        a, b, a0, b0 = self.shape, self.rate, self.shape0, self.rate0
        return float(
            (a - a0) * digamma(a)
            - gammaln(a)
            + gammaln(a0)
            + a0 * (math.log(b) - math.log(b0))
            + a * (b0 - b) / b
        )


def prior_quadratic(K_inv: np.ndarray, factor: GaussianFactor) -> float:
    """``tr(K⁻¹ (S + m mᵀ))``."""
    return float(np.vdot(K_inv, factor.cov) + factor.mean @ K_inv @ factor.mean)


def gaussian_prior_kl(
    chol_prior: np.ndarray, K_inv: np.ndarray, factor: GaussianFactor, scale: GammaFactor
) -> float:
    """``E_q(s)[KL(q(u) ‖ N(0, K/s))]`` for ``K = L Lᵀ`` (``K_inv = K⁻¹``)."""
    m = len(factor.mean)
    return 0.5 * (
        scale.mean * prior_quadratic(K_inv, factor)
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
