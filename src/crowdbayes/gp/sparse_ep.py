"""EP on ``M`` inducing items (projected process / DTC), for large item sets.

With inducing items ``m`` (a subset of the training items) and ``K_mm = L_m L_mᵀ``, the
deterministic-training-conditional (DTC, "projected process") approximation of Seeger,
Williams & Lawrence (2003; Quiñonero-Candela & Rasmussen, 2005, Sec. 5) writes the utilities
of all ``N`` items as a linear function of ``M`` whitened inducing values ``v ~ N(0, I_M)``:

.. math:: f = Φᵀ v, \\qquad Φ = L_m^{-1} K_{mn} \\; (M × N), \\qquad
   \\operatorname{Cov}(f) = Q = K_{nm} K_{mm}^{-1} K_{mn} = ΦᵀΦ.

A comparison's difference is ``d_k = f_{l_k} - f_{r_k} = w_kᵀ v`` with ``w_k = Φ_{:,l_k} -
Φ_{:,r_k}``, so the rank-one difference sites of the exact engine
(:mod:`crowdbayes.gp.ep`, the same cavity / tilted-moment / site update of
Abbasnejad et al., 2013, Eqs. 6–15) act on ``v``; the posterior is
``q(v) = N(μ_v, Σ_v)``, ``Σ_v = (I + Wᵀ diag(τ̃) W)^{-1}``, ``μ_v = Σ_v Wᵀ ν̃``. One EP sweep
costs ``O(P M² + M³)`` for ``P`` comparisons instead of ``O(N³)``, and

.. math:: \\log Z_{EP} = Σ_k s_k - \\tfrac12 \\log|I + Wᵀ diag(τ̃) W| + \\tfrac12 (Wᵀν̃)ᵀ μ_v

is the exact engine's estimate with ``K`` replaced by ``Q`` (Sylvester's determinant identity).
Predictions at any items with prior cross-covariance ``K_{n*}`` use the projected-process
predictive: ``Φ_* = L_m^{-1} K_{m*}``, mean ``Φ_*ᵀ μ_v``, variance
``k_{**} - ‖Φ_*‖² + Φ_*ᵀ Σ_v Φ_*``. With every training item inducing, ``Q = K`` and all of
this equals the exact EP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..linalg import cholesky_logdet, safe_cholesky, triangular_solve
from ..persistence import persistable
from .ep import initial_sites, parallel_ep, site_log_normalisers
from .likelihood import PairCounts, difference_scale

__all__ = [
    "InducingBasis",
    "SparsePosterior",
    "SparseEPResult",
    "sparse_ep",
    "sparse_log_marginal",
    "choose_inducing",
]


def choose_inducing(X: np.ndarray, n_inducing: int) -> np.ndarray:
    """Indices of ``n_inducing`` rows of ``X`` spread over feature space: greedy farthest-point
    selection (Gonzalez, 1985) from the row nearest the centroid. Deterministic; all rows
    (in order) when ``n_inducing ≥ len(X)``."""
    n = len(X)
    if n_inducing >= n:
        return np.arange(n)
    X = np.asarray(X, dtype=np.float64)
    first = int(np.argmin(((X - X.mean(axis=0)) ** 2).sum(axis=1)))
    chosen = [first]
    dist = ((X - X[first]) ** 2).sum(axis=1)
    for _ in range(n_inducing - 1):
        nxt = int(np.argmax(dist))
        chosen.append(nxt)
        dist = np.minimum(dist, ((X - X[nxt]) ** 2).sum(axis=1))
    return np.sort(np.array(chosen, dtype=np.int64))


@persistable
@dataclass
class InducingBasis:
    """``Φ = L_m⁻¹ K_mn`` for inducing items ``inducing`` (codes among the ``N`` training
    items) of a prior covariance ``K`` (only its ``inducing`` rows are needed)."""

    inducing: np.ndarray
    chol: np.ndarray
    phi: np.ndarray

    @classmethod
    def build(cls, K_mn: np.ndarray, inducing: np.ndarray) -> InducingBasis:
        inducing = np.asarray(inducing, dtype=np.int64)
        chol = safe_cholesky(K_mn[:, inducing], what="inducing-item covariance K_mm")
        return cls(inducing, chol, triangular_solve(chol, K_mn))

    @property
    def prior_cov(self) -> np.ndarray:
        """``Q = ΦᵀΦ`` (N × N), the DTC prior covariance of the utilities."""
        return self.phi.T @ self.phi


class SparsePosterior:
    """``q(v) = N(μ_v, (I + Wᵀ diag(τ) W)⁻¹)`` and the implied posterior of ``f = Φᵀv``.

    The interface of :class:`~crowdbayes.gp.LatentPosterior` (``mean``, ``cov``, ``var``,
    ``difference_moments``, ``predict``, ``log_det_inner``), plus :meth:`block` for the
    marginal over a few items without the ``N × N`` covariance.
    """

    def __init__(
        self,
        basis: InducingBasis,
        left: np.ndarray,
        right: np.ndarray,
        precision: np.ndarray,
        linear: np.ndarray,
    ) -> None:
        self.basis = basis
        W = basis.phi[:, left] - basis.phi[:, right]  # (M, P)
        B = (W * precision) @ W.T
        B[np.diag_indices_from(B)] += 1.0
        self.chol_inner = safe_cholesky(B, jitter=0.0, what="sparse EP inner matrix")
        self.linear_term = W @ linear
        half = triangular_solve(self.chol_inner, self.linear_term)
        self.mean_v = triangular_solve(self.chol_inner, half, transpose=True)
        self._mean: np.ndarray | None = None
        self._cov: np.ndarray | None = None

    @property
    def n_items(self) -> int:
        return self.basis.phi.shape[1]

    @property
    def mean(self) -> np.ndarray:
        if self._mean is None:
            self._mean = self.basis.phi.T @ self.mean_v
        return self._mean

    def _whiten(self, phi: np.ndarray) -> np.ndarray:
        return triangular_solve(self.chol_inner, phi)

    @property
    def cov(self) -> np.ndarray:
        if self._cov is None:
            V = self._whiten(self.basis.phi)
            self._cov = V.T @ V
        return self._cov

    @property
    def var(self) -> np.ndarray:
        V = self._whiten(self.basis.phi)
        return (V * V).sum(axis=0)

    def block(self, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance of ``f`` over ``items`` (``O(M² s)``)."""
        phi = self.basis.phi[:, items]
        V = self._whiten(phi)
        return phi.T @ self.mean_v, V.T @ V

    def log_det_inner(self) -> float:
        return cholesky_logdet(self.chol_inner)

    def difference_moments(
        self, left: np.ndarray, right: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        W = self.basis.phi[:, left] - self.basis.phi[:, right]
        V = self._whiten(W)
        return W.T @ self.mean_v, (V * V).sum(axis=0)

    def predict(self, K_cross: np.ndarray, k_diag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Projected-process predictive at new inputs; ``K_cross`` is the (N, M*) prior
        covariance between the training items and them (only the inducing rows are used)."""
        K_cross = np.asarray(K_cross, dtype=np.float64)
        phi = triangular_solve(self.basis.chol, K_cross[self.basis.inducing])
        V = self._whiten(phi)
        var = np.asarray(k_diag, dtype=np.float64) - (phi * phi).sum(axis=0)
        return phi.T @ self.mean_v, np.maximum(var + (V * V).sum(axis=0), 0.0)


@dataclass
class SparseEPResult:
    """As :class:`~crowdbayes.gp.EPResult`, for :func:`sparse_ep`."""

    posterior: SparsePosterior
    site_precision: np.ndarray
    site_linear: np.ndarray
    log_marginal: float
    n_iter: int
    converged: bool


def sparse_ep(
    basis: InducingBasis,
    pairs: PairCounts,
    *,
    noise: float = 1.0,
    damping: float = 0.5,
    max_iter: int = 200,
    tol: float = 1e-6,
    sites: tuple[np.ndarray, np.ndarray] | None = None,
) -> SparseEPResult:
    """Parallel damped EP on the inducing values (module docstring); arguments as in
    :func:`~crowdbayes.gp.expectation_propagation`, with the prior given by
    ``basis`` instead of ``K``."""
    alpha = difference_scale(noise)
    tau, nu = initial_sites(sites, pairs.n_pairs)
    post, tau, nu, result = parallel_ep(
        lambda tau, nu: SparsePosterior(basis, pairs.left, pairs.right, tau, nu),
        pairs,
        tau,
        nu,
        alpha=alpha,
        damping=damping,
        max_iter=max_iter,
        tol=tol,
        desc="sparse EP sweeps",
        warn_name="sparse expectation propagation",
    )
    return SparseEPResult(
        post,
        tau,
        nu,
        sparse_log_marginal(post, pairs, tau, nu, alpha),
        result.n_iter,
        result.converged,
    )


def sparse_log_marginal(
    post: SparsePosterior, pairs: PairCounts, tau: np.ndarray, nu: np.ndarray, alpha: float
) -> float:
    """``log Z_EP`` of the sites under the DTC prior (module docstring; the site scales ``s_k``
    as in :func:`~crowdbayes.gp.ep_log_marginal`)."""
    return (
        site_log_normalisers(post, pairs, tau, nu, alpha)
        - 0.5 * post.log_det_inner()
        + 0.5 * post.linear_term @ post.mean_v
    )
