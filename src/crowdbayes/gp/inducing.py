"""Sparse GP utilities through inducing points: the map from ``M`` inducing values to the
utilities of any items (projected process, deterministic training conditional).

With inducing inputs ``Z``, ``K_mm = k(Z, Z)`` and ``q(u) = N(m, S)`` over the inducing values,
the utilities at inputs ``X`` follow ``q(f) = N(A m, K_xx/ŝ + A (S - K_mm/ŝ) Aᵀ)`` with
``A = K_xm K_mm⁻¹`` (Simpson & Gurevych, 2020, Eqs. 14, 19, 39–40; Hensman et al., 2013), the
prior scale ``1/ŝ`` coming from ``q(s)``. A comparison's difference ``d = f(x_l) - f(x_r)``
then has mean ``(A_l - A_r) m`` and a variance computed per item and then per chunk of pairs,
so memory stays ``O(N M)`` whatever the number of comparisons.
"""

from __future__ import annotations

import copy

import numpy as np

from ..kernels import Kernel
from ..linalg import cholesky_solve, safe_cholesky
from ..persistence import persistable
from .factors import GammaFactor, GaussianFactor, prior_gradient_weights, quadratic_rows

__all__ = ["InducingProjection", "chunks", "prior_difference_variance", "PAIR_CHUNK"]

#: comparisons per chunk where all of them are visited (Q_p, the bound)
PAIR_CHUNK = 8192


def chunks(n: int, size: int = PAIR_CHUNK):
    """Slices covering ``range(n)`` in pieces of ``size``."""
    for lo in range(0, n, size):
        yield slice(lo, min(n, lo + size))


def prior_difference_variance(
    kernel: Kernel, X: np.ndarray, left: np.ndarray, right: np.ndarray
) -> np.ndarray:
    """The prior variance of a difference, ``Var[f(x_l) - f(x_r)] = k(x_l, x_l) + k(x_r, x_r) -
    2 k(x_l, x_r)`` under ``f ~ GP(0, k)``, for the rows ``left``, ``right`` of ``X``, in chunks
    of pairs (never a (P, D) feature array)."""
    prior = np.empty(len(left))
    for rows in chunks(len(prior)):
        Xl, Xr = X[left[rows]], X[right[rows]]
        prior[rows] = kernel.diag(Xl) + kernel.diag(Xr) - 2.0 * kernel.paired(Xl, Xr)
    return prior


@persistable
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

    def copy(self) -> InducingProjection:
        """A projection of its own with this one's kernel and arrays (shared: none is written
        in place), so that a fit lending its ``kernel`` attribute for a while changes no
        other estimator's projection."""
        return copy.copy(self)

    def shares(self, other: InducingProjection) -> bool:
        """Whether this is ``other`` or a :meth:`copy` of it (the same inducing inputs and
        factorised prior, as objects)."""
        return self is other or (self.Z is other.Z and self.chol is other.chol)

    def weights(self, X: np.ndarray) -> np.ndarray:
        """``A = K_xm K_mm⁻¹`` (n, M)."""
        return self._cross_and_weights(X)[1]

    def _cross_and_weights(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``K_mx`` (M, n) and the weights ``A = K_xm K_mm⁻¹`` (n, M) at the rows of ``X``."""
        K_mx = self.kernel(self.Z, X)
        return K_mx, cholesky_solve(self.chol, K_mx).T

    def predict(
        self, X: np.ndarray, factor: GaussianFactor, scale: GammaFactor
    ) -> tuple[np.ndarray, np.ndarray]:
        """Marginal mean and variance at the rows of ``X``."""
        K_mx, A = self._cross_and_weights(X)
        var = (self.kernel.diag(X) - np.einsum("nm,mn->n", A, K_mx)) / scale.mean
        var = var + quadratic_rows(A, factor.cov)
        return A @ factor.mean, np.maximum(var, 0.0)

    def predict_cov(
        self, X: np.ndarray, factor: GaussianFactor, scale: GammaFactor
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and full covariance at the rows of ``X`` (draft Eqs. 9–10, corrected)."""
        K_mx, A = self._cross_and_weights(X)
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
        K_mx, A = self._cross_and_weights(X)
        AS = A @ factor.cov
        n = len(left)
        mean, var = np.empty(n), np.empty(n)
        for rows in chunks(n):
            li, ri = left[rows], right[rows]
            D = A[li] - A[ri]
            KD = K_mx[:, li] - K_mx[:, ri]
            prior = prior_difference_variance(self.kernel, X, li, ri)
            v = (prior - np.einsum("nm,mn->n", D, KD)) / scale.mean
            var[rows] = np.maximum(v + np.sum((AS[li] - AS[ri]) * D, axis=1), 0.0)
            mean[rows] = D @ factor.mean
        return mean, var

    def item_pair_moments(
        self,
        X: np.ndarray,
        left: np.ndarray,
        right: np.ndarray,
        factor: GaussianFactor,
        scale: GammaFactor,
    ) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`pair_moments` (the same values up to rounding), through the item matrices
        ``Q = A K_mx`` and ``R = A S Aᵀ`` (``len(X)`` square): ``Var[d_p] = (k_ll + k_rr -
        2 k_lr - (Q_ll + Q_rr - 2 Q_lr)) / ŝ + R_ll + R_rr - 2 R_lr``. Three products of
        ``O(len(X)² M)`` and ``O(P)`` gathers, where :meth:`pair_moments` moves ``O(P M)``
        numbers through memory several times: cheaper when the pairs outnumber the rows of
        ``X`` (full-batch VI, whose inducing inputs are its items), and memory
        ``O(len(X)²)``."""
        K_mx, A = self._cross_and_weights(X)
        explained = A @ K_mx
        learnt = (A @ factor.cov) @ A.T
        var = np.empty(len(left))
        for rows in chunks(len(left)):
            li, ri = left[rows], right[rows]
            prior = prior_difference_variance(self.kernel, X, li, ri)
            v = (prior - _pair_form(explained, li, ri)) / scale.mean
            var[rows] = np.maximum(v + _pair_form(learnt, li, ri), 0.0)
        at_items = A @ factor.mean
        return at_items[left] - at_items[right], var

    def bound_gradient(self, factor: GaussianFactor, scale: GammaFactor) -> np.ndarray:
        """Gradient of ``-KL`` in the log length-scales at fixed ``q``."""
        weights = prior_gradient_weights(self.K_inv, factor, scale)
        return self.kernel.gradient_contract(weights, self.Z)


def _pair_form(M: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``(e_l - e_r)ᵀ M (e_l - e_r)`` for each pair, ``M`` symmetric in exact arithmetic
    (both off-diagonal entries are taken, so a rounding asymmetry averages out)."""
    return M[left, left] + M[right, right] - M[left, right] - M[right, left]
