"""Full-batch variational inference for GPPL (Simpson & Gurevych, 2018, App. A; 2020, App. A).

The same linearised likelihood (:mod:`.linearised`) and gamma scale as SVI (:mod:`.svi`), but
``q(f) = N(f̂, C)`` over all ``N`` compared items, updated to its optimum at every iteration (no
inducing points, no mini-batches, ``ρ = 1``):

.. math:: C = (ŝ K^{-1} + A^T \\operatorname{diag}(g^2 / Q) A)^{-1}, \\qquad
    f̂ = C A^T \\big(g (y - Φ(\\hat z) + g \\hat d) / Q\\big),

with ``A`` the comparisons' difference rows and ``(g, d̂)`` the linearisation at the current
``f̂``; then ``q(s)`` as in SVI, ``b = b₀ + ½ tr(K⁻¹ (C + f̂ f̂ᵀ))``, ``ŝ = a / b``. The fixed
point is the one SVI reaches with inducing points at every item and full batches, which the
tests check; use it for small data.

**One iteration** works in the coordinates whitened by the prior factor ``K = L Lᵀ`` (the
well-conditioned form of :class:`~.posterior.LatentPosterior`): with ``W = Aᵀ diag(g²/Q) A``,
``c = Aᵀ (g (y - Φ(ẑ) + g d̂) / Q)`` and ``H = ŝ I + Lᵀ W L = L_H L_Hᵀ`` (eigenvalues ``≥ ŝ``),

.. math:: C = L H^{-1} L^T, \\qquad f̂ = L z, \\quad z = H^{-1} L^T c, \\qquad
    \\operatorname{tr}(K^{-1} C) = \\operatorname{tr}(H^{-1}) = \\lVert L_H^{-1} \\rVert_F^2,
    \\qquad f̂^T K^{-1} f̂ = z^T z:

one Cholesky factorisation and one triangular inverse, with ``Lᵀ W L`` formed through the
comparison graph's Laplacian (:class:`~.posterior.WhitenedPrecision`); ``q(f)`` itself is built
once, at the end, in natural parameters ``(ŝ K⁻¹ + W, c)``, positive definite by construction
and so factorised without a jitter.

**The iterations** are the map ``(f̂, log b) ← g(f̂, log b)`` above, Anderson-accelerated
(:mod:`.anderson`): plainly iterated, ``f̂`` settles in a few steps but ``b`` creeps on for a
hundred or more (the slow linear convergence of an EM update of a variance), which the
acceleration removes; its fixed points are the plain iteration's. Iterations stop when the
root-mean-square change of ``f̂`` relative to its size and the relative change of ``b`` that
one plain step asks for are both below ``tol``; the posterior returned is that last step's.
"""

from __future__ import annotations

import math

import numpy as np

from ..inference.driver import run_iterations
from ..linalg import safe_cholesky, triangular_solve
from .anderson import Anderson
from .factors import GammaFactor, GaussianFactor
from .inducing import InducingProjection
from .linearised import probit_linearisation, relative_change
from .posterior import WhitenedPrecision, difference_precision_matrix, difference_vector

__all__ = ["variational_inference", "whitened_scale_terms", "ANDERSON_DEPTH"]

#: how many past iterates the Anderson acceleration of the iterations combines
ANDERSON_DEPTH = 5


def whitened_scale_terms(
    data_precision: np.ndarray, projected: np.ndarray, scale: float
) -> tuple[np.ndarray, float]:
    """``z = H⁻¹ Lᵀ c`` (so ``f̂ = L z``) and ``tr(K⁻¹ (C + f̂ f̂ᵀ)) = tr(H⁻¹) + zᵀz`` for
    ``H = ŝ I + Lᵀ W L`` (module docstring), given ``Lᵀ W L``, ``Lᵀ c`` and ``ŝ``."""
    H = data_precision.copy()
    H[np.diag_indices_from(H)] += scale
    # eigenvalues ≥ ŝ: no jitter (one relative to the diagonal would bias C)
    chol = safe_cholesky(H, jitter=0.0, what="GPPL VI whitened precision ŝI + LᵀWL")
    z = triangular_solve(chol, triangular_solve(chol, projected), transpose=True)
    return z, float(np.sum(triangular_inverse(chol) ** 2) + z @ z)


def triangular_inverse(chol: np.ndarray) -> np.ndarray:
    """``L⁻¹`` of a lower-triangular ``L`` with zeros above the diagonal, as
    :func:`safe_cholesky` returns (LAPACK ``trtri``, which leaves that triangle as it was: a
    third of the work of a solve against the identity)."""
    from scipy.linalg import lapack

    inverse, info = lapack.dtrtri(chol, lower=1)
    if info != 0:  # pragma: no cover - L comes from a successful factorisation
        return triangular_solve(chol, np.eye(len(chol)))
    return inverse


def variational_inference(
    projection: InducingProjection,
    left: np.ndarray,
    right: np.ndarray,
    y: np.ndarray,
    noise_var: np.ndarray,
    prior_scale: GammaFactor,
    *,
    alpha: float,
    max_iter: int = 200,
    tol: float = 1e-6,
    start: tuple[GaussianFactor, GammaFactor] | None = None,
    progress: bool = False,
    warn_name: str | None = "GPPL variational inference",
):
    """Full-batch VI on the items at ``projection.Z`` (``left``/``right`` index its rows).

    Returns ``(factor, scale, result)``: ``q(f)`` as a :class:`GaussianFactor`, ``q(s)``, and
    the driver's :class:`~crowdbayes.inference.driver.IterationResult`.
    """
    n = projection.n_inducing
    L = projection.chol
    data_precision = WhitenedPrecision(L, left, right)
    shape = prior_scale.shape0 + 0.5 * n
    # the rate that gives the starting ŝ (the prior mean, or the start's)
    initial = prior_scale if start is None else start[1]
    state = {"mean": np.zeros(n) if start is None else start[0].mean, "rate": shape / initial.mean}
    accelerator = Anderson(ANDERSON_DEPTH)
    root = math.sqrt(n)  # f̂ / √N: its size comparable with log b's in the accelerator

    def step(_: int) -> float:
        mean, rate = state["mean"], state["rate"]
        d_hat = mean[left] - mean[right]
        p, g = probit_linearisation(d_hat, alpha)
        weights = g * g / noise_var
        linear = difference_vector(left, right, g * (y - p + g * d_hat) / noise_var, n)
        z, quadratic = whitened_scale_terms(data_precision(weights), L.T @ linear, shape / rate)
        new_mean, new_rate = L @ z, prior_scale.rate0 + 0.5 * quadratic
        state.update(
            weights=weights,
            linear=linear,
            used=shape / rate,
            scale=GammaFactor(prior_scale.shape0, prior_scale.rate0, shape, new_rate),
        )
        following = accelerator.next(
            np.append(mean / root, math.log(rate)), np.append(new_mean / root, math.log(new_rate))
        )
        state["mean"], state["rate"] = following[:-1] * root, math.exp(following[-1])
        return max(relative_change(new_mean, mean), abs(new_rate - rate) / new_rate)

    result = run_iterations(
        step,
        max_iter=max_iter,
        tol=tol,
        monitor="change",
        progress=progress,
        desc="GPPL VI",
        warn_name=warn_name,
    )
    # the last step's q(f) in natural parameters: C⁻¹ = ŝ K⁻¹ + W, C⁻¹ f̂ = c
    precision = state["used"] * projection.K_inv + difference_precision_matrix(
        left, right, state["weights"], n
    )
    return GaussianFactor(precision, state["linear"], jitter=0.0), state["scale"], result
