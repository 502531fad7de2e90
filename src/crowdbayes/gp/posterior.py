"""Gaussian posteriors over latent utilities with pairwise-difference site precisions.

EP and the Laplace approximation both end in

.. math:: q(f) = N(f; μ, Σ), \\quad Σ = (K^{-1} + W)^{-1}, \\quad W = A^T \\operatorname{diag}(τ) A,

where row ``k`` of ``A`` is ``e_{l_k} - e_{r_k}`` (the comparison's difference operator) and
``τ_k ≥ 0``. With ``K = L Lᵀ`` and ``B = I + Lᵀ W L = L_B L_Bᵀ`` (eigenvalues ≥ 1, so well
conditioned), ``Σ = L B^{-1} Lᵀ`` and ``log|I + K W| = log|B|``. Cost O(N³ + P), memory
O(N²), whatever the number ``P`` of comparisons. ``W`` is the weighted Laplacian of the
comparison graph (``P + N`` non-zeros), so from :data:`SPARSE_FROM` items on ``Lᵀ W L`` is
formed by sparse products and one triangular one (:class:`WhitenedPrecision`,
:meth:`~.item_gram.ItemGram.triangular_gram`), about a third of the work of two dense products.

Predictions at new inputs with cross-covariance ``K_{*}`` (N × M) follow Rasmussen & Williams
(2006, Eqs. 3.60–3.61): with ``V = L^{-1} K_{*}``,
``mean_* = Vᵀ L^{-1} μ`` and ``cov_* = K_{**} - VᵀV + (L_B^{-1} V)ᵀ (L_B^{-1} V)``.
"""

from __future__ import annotations

import numpy as np

from ..linalg import cholesky_logdet, safe_cholesky, triangular_solve
from ..persistence import persistable
from .item_gram import ItemGram
from .likelihood import PairCounts, difference_scale

__all__ = [
    "LatentPosterior",
    "WhitenedPrecision",
    "SPARSE_FROM",
    "difference_precision_matrix",
    "difference_vector",
    "prepare_problem",
]


def prepare_problem(
    K: np.ndarray, pairs: PairCounts, noise: float, chol_prior: np.ndarray | None
) -> tuple[float, np.ndarray]:
    """Check the engines' inputs; return ``(α, L)`` with ``K = L Lᵀ``."""
    if not isinstance(pairs, PairCounts):
        raise TypeError(
            "pairs must be a PairCounts (PairCounts.from_comparisons(left, right, outcome))"
        )
    n = np.shape(K)[0]
    if pairs.n_pairs and (pairs.left.min() < 0 or pairs.right.max() >= n):
        raise ValueError(f"item codes must lie in [0, {n}) for a {n}×{n} prior covariance")
    alpha = difference_scale(noise)
    L = safe_cholesky(K, what="prior covariance K") if chol_prior is None else chol_prior
    return alpha, L


def difference_precision_matrix(
    left: np.ndarray, right: np.ndarray, weights: np.ndarray, n: int
) -> np.ndarray:
    """Dense ``Aᵀ diag(weights) A`` (n × n) for difference rows ``e_left - e_right``."""
    rows = np.concatenate([left, right, left, right])
    cols = np.concatenate([left, right, right, left])
    values = np.concatenate([weights, weights, -weights, -weights])
    return np.bincount(rows * n + cols, weights=values, minlength=n * n).reshape(n, n)


def difference_vector(
    left: np.ndarray, right: np.ndarray, values: np.ndarray, n: int
) -> np.ndarray:
    """``Aᵀ values`` (length n)."""
    return np.bincount(left, weights=values, minlength=n) - np.bincount(
        right, weights=values, minlength=n
    )


#: items from which :class:`WhitenedPrecision` goes through the comparison graph (below, one
#: dense product costs less than building the sparse Laplacian)
SPARSE_FROM = 256


class WhitenedPrecision:
    """``Lᵀ W L`` (N × N) for a fixed factor ``L`` (lower triangular, ``K = L Lᵀ``) and
    comparisons ``left``, ``right``, given any non-negative weights ``τ`` per comparison
    (``W = Aᵀ diag(τ) A``): dense products below :data:`SPARSE_FROM` items, the comparison
    graph's Laplacian and a triangular product from there on (same values up to rounding)."""

    def __init__(self, chol_prior: np.ndarray, left: np.ndarray, right: np.ndarray) -> None:
        self.chol_prior, self.left, self.right = chol_prior, left, right
        n = len(chol_prior)
        self._gram = ItemGram(chol_prior, left, right) if n >= SPARSE_FROM else None

    def __call__(self, weights: np.ndarray) -> np.ndarray:
        if self._gram is not None:
            return self._gram.triangular_gram(weights)
        L = self.chol_prior
        W = difference_precision_matrix(self.left, self.right, weights, len(L))
        return L.T @ W @ L


@persistable
class LatentPosterior:
    """``N(μ, (K⁻¹ + Aᵀ diag(τ) A)⁻¹)`` over the utilities of the ``N`` training items.

    Parameters
    ----------
    chol_prior : ndarray (N, N)
        Lower Cholesky factor of the prior covariance ``K`` (from :func:`safe_cholesky`).
    left, right : ndarray of int
        Item codes of each comparison (rows of ``A``).
    precision : ndarray (P,)
        Non-negative site precisions ``τ_k`` on the differences.
    mean : ndarray (N,), optional
        The posterior mean (Laplace: the mode). If omitted, ``linear`` must be given.
    linear : ndarray (P,), optional
        Site natural means ``ν_k``; then ``μ = Σ Aᵀ ν`` (EP).
    """

    def __init__(
        self,
        chol_prior: np.ndarray,
        left: np.ndarray,
        right: np.ndarray,
        precision: np.ndarray,
        *,
        mean: np.ndarray | None = None,
        linear: np.ndarray | None = None,
    ) -> None:
        n = chol_prior.shape[0]
        L = chol_prior
        B = WhitenedPrecision(L, left, right)(precision)
        B[np.diag_indices(n)] += 1.0
        self.chol_prior = L
        # eigenvalues ≥ 1: no jitter (one relative to its large diagonal would bias Σ)
        self.chol_inner = safe_cholesky(B, jitter=0.0, what="EP/Laplace inner matrix I + LᵀWL")
        # V = L_B⁻¹ Lᵀ, so Σ = Vᵀ V
        self._V = triangular_solve(self.chol_inner, L.T)
        self.cov = self._V.T @ self._V
        if mean is None:
            if linear is None:
                raise TypeError("LatentPosterior needs mean= or linear=")
            self.linear_term = difference_vector(left, right, linear, n)
            mean = self.cov @ self.linear_term
        else:
            self.linear_term = None
        self.mean = np.asarray(mean, dtype=np.float64)
        #: ``L⁻¹ μ``, what predictions need
        self.whitened_mean = triangular_solve(L, self.mean)

    @property
    def n_items(self) -> int:
        return len(self.mean)

    @property
    def var(self) -> np.ndarray:
        return np.diag(self.cov).copy()

    def log_det_inner(self) -> float:
        """``log |I + K W|``."""
        return cholesky_logdet(self.chol_inner)

    def difference_moments(
        self, left: np.ndarray, right: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of ``f_left - f_right`` for each pair of training items."""
        mean = self.mean[left] - self.mean[right]
        cov = self.cov
        var = cov[left, left] + cov[right, right] - 2.0 * cov[left, right]
        return mean, np.maximum(var, 0.0)

    def _project(self, K_cross: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        V = triangular_solve(self.chol_prior, np.asarray(K_cross, dtype=np.float64))
        U = triangular_solve(self.chol_inner, V)
        return V.T @ self.whitened_mean, V, U

    def predict(self, K_cross: np.ndarray, k_diag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and variance of ``f`` at M new inputs.

        ``K_cross`` is the (N, M) prior covariance between training items and new inputs,
        ``k_diag`` the (M,) prior variances of the new inputs.
        """
        mean, V, U = self._project(K_cross)
        var = np.asarray(k_diag, dtype=np.float64) - (V * V).sum(axis=0) + (U * U).sum(axis=0)
        return mean, np.maximum(var, 0.0)

    def predict_cov(self, K_cross: np.ndarray, K_new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and full (M, M) covariance of ``f`` at M new inputs."""
        mean, V, U = self._project(K_cross)
        return mean, np.asarray(K_new, dtype=np.float64) - V.T @ V + U.T @ U
