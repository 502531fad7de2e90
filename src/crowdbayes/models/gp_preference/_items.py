"""The fitted posterior at the items of a fit: one cross-kernel, the moments of utility
differences from it, and the projection of a previous posterior onto new inducing inputs.

With ``q(u) = N(m, S)`` at inducing inputs ``Z`` (:class:`~crowdbayes.gp.InducingProjection`),
every quantity the GP preference models need at the items — the engine's mini-batch rows, the
bound, the utilities, the moments of candidate pairs — goes through ``K(Z, X)`` for the item
rows ``X``. For a product kernel over hundreds of features that matrix costs far more than the
rest of a round, so :class:`ItemCross` computes it once per design (kernel and ``Z``) and
:class:`KnownCross` hands it to the engine for the item rows it was told about; a warm start
that keeps the design keeps the matrix too.

A warm start that changes the design begins from the previous posterior's predictive
distribution at the new inducing inputs (:func:`projected_factors`): the same posterior,
re-expressed, so the iterations only have to absorb what the new comparisons add.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...gp import GammaFactor, GaussianFactor, InducingProjection, quadratic_rows
from ...gp.inducing import chunks
from ...kernels import Kernel
from ...linalg import cholesky_solve

__all__ = ["ItemCross", "KnownCross", "projected_factors", "inputs_in"]


class ItemCross:
    """``K(Z, X)`` (M, N) and ``A = K_xm K_mm⁻¹`` (N, M) for the item rows ``X`` of a fit."""

    def __init__(self, projection: InducingProjection, X: np.ndarray) -> None:
        self.projection = projection
        self.kernel: Kernel = projection.kernel
        self.X = X
        self.cross = self.kernel(projection.Z, X)
        self.A = cholesky_solve(projection.chol, self.cross).T
        self.diag = self.kernel.diag(X)

    def matches(self, projection: InducingProjection, X: np.ndarray) -> bool:
        """Whether this cache serves ``projection`` at item rows equal to ``X``."""
        return projection is self.projection and (
            X is self.X or (X.shape == self.X.shape and np.array_equal(X, self.X))
        )

    def item_moments(
        self, factor: GaussianFactor, scale: GammaFactor
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of every item's utility (2020, Eqs. 14, 19)."""
        prior = self.diag - np.einsum("nm,mn->n", self.A, self.cross)
        var = prior / scale.mean + quadratic_rows(self.A, factor.cov)
        return self.A @ factor.mean, np.maximum(var, 0.0)

    def pair_prior(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """``Var[f(l) - f(r) | u]`` per unit of prior scale: ``k_ll + k_rr - 2 k_lr`` minus what
        the inducing values explain, for item codes ``left``, ``right``."""
        out = np.empty(len(left))
        for rows in chunks(len(left)):
            li, ri = left[rows], right[rows]
            k = self.diag[li] + self.diag[ri] - 2.0 * self.kernel.paired(self.X[li], self.X[ri])
            D = self.A[li] - self.A[ri]
            out[rows] = k - np.einsum("nm,mn->n", D, self.cross[:, li] - self.cross[:, ri])
        return np.maximum(out, 0.0)

    def pair_moments(
        self,
        factor: GaussianFactor,
        scale: GammaFactor,
        left: np.ndarray,
        right: np.ndarray,
        prior: np.ndarray | float | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of ``f(l) - f(r)`` under ``q`` (``prior``: :meth:`pair_prior`,
        when several factors share it; ``prior=0``: the variance of ``(A_l - A_r) u`` alone,
        what the inducing values leave uncertain)."""
        prior = self.pair_prior(left, right) if prior is None else prior
        AS = self.A @ factor.cov
        mean, var = np.empty(len(left)), np.empty(len(left))
        for rows in chunks(len(left)):
            li, ri = left[rows], right[rows]
            D = self.A[li] - self.A[ri]
            mean[rows] = D @ factor.mean
            unexplained = prior if np.ndim(prior) == 0 else prior[rows]
            var[rows] = unexplained / scale.mean + np.sum((AS[li] - AS[ri]) * D, axis=1)
        return mean, np.maximum(var, 0.0)


class KnownCross:
    """The item kernel, answering ``k(Z, ·)`` from an :class:`ItemCross` for the arrays it was
    told are item rows (by identity), and asking the kernel for anything else. Lent to the
    engine's projection for the length of one fit."""

    def __init__(self, items: ItemCross) -> None:
        self.items = items
        self.base = items.kernel
        self._known: list[tuple[np.ndarray, np.ndarray | None]] = [(items.X, None)]

    def know(self, X: np.ndarray, rows: np.ndarray) -> None:
        """Declare ``X`` to be the item rows ``rows`` (``X = items.X[rows]``)."""
        self._known.append((X, rows))

    def __call__(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        if X is self.items.projection.Z and Y is not None:
            for known, rows in self._known:
                if Y is known:
                    return self.items.cross if rows is None else self.items.cross[:, rows]
        return self.base(X, Y)

    def __getattr__(self, name: str):
        return getattr(self.base, name)


def inputs_in(previous: dict, Z: np.ndarray, item_ids: pd.Index, has_features: bool) -> np.ndarray:
    """The inducing inputs ``Z`` of a new fit in the input space of the ``previous`` model
    (its attributes): the feature rows themselves, or, without features (inputs are item
    codes), each item's code in the previous fit, and a code no previous item has for the
    others (the independent prior then gives them their prior)."""
    if has_features:
        return Z
    ids = item_ids[Z[:, 0].astype(np.int64)]
    codes = previous["item_ids_"].get_indexer(ids).astype(np.float64)
    unknown = codes < 0
    codes[unknown] = -1.0 - np.arange(unknown.sum())
    return codes[:, None]


def projected_factors(
    projection: InducingProjection,
    X: np.ndarray,
    factors: list[GaussianFactor],
    scales: list[GammaFactor],
) -> list[GaussianFactor]:
    """Each posterior ``(factor, scale)`` at ``projection``'s inducing inputs, as a Gaussian
    over the utilities at the rows ``X`` (``N(A m, (K_xx - A K_mx)/ŝ + A S Aᵀ)``, the
    cross-kernel computed once for all factors); a tiny relative jitter keeps near-duplicate
    rows factorisable."""
    K_mx = projection.kernel(projection.Z, X)
    A = cholesky_solve(projection.chol, K_mx).T
    conditional = projection.kernel(X) - A @ K_mx
    out = []
    for factor, scale in zip(factors, scales, strict=True):
        cov = conditional / scale.mean + A @ factor.cov @ A.T
        cov = 0.5 * (cov + cov.T)
        cov[np.diag_indices_from(cov)] += 1e-6 * max(float(np.mean(np.diag(cov))), 1e-12)
        out.append(GaussianFactor.from_moments(A @ factor.mean, cov))
    return out
