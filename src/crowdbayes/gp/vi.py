"""Full-batch variational inference for GPPL (Simpson & Gurevych, 2018, App. A; 2020, App. A).

The same linearised likelihood (:mod:`.linearised`) and gamma scale as SVI (:mod:`.svi`), but
``q(f) = N(f̂, C)`` over all ``N`` compared items, updated to its optimum at every iteration (no
inducing points, no mini-batches, ``ρ = 1``):

.. math:: C = (ŝ K^{-1} + A^T \\operatorname{diag}(g^2 / Q) A)^{-1}, \\qquad
    f̂ = C A^T \\big(g (y - Φ(\\hat z) + g \\hat d) / Q\\big),

with ``A`` the comparisons' difference rows, computed in the well-conditioned form of
:class:`~.posterior.LatentPosterior` (``O(N³)``); then ``q(s)`` as in SVI. The fixed point is
the one SVI reaches with inducing points at every item and full batches, which the tests
check; use it for small data.
"""

from __future__ import annotations

import math

import numpy as np

from ..inference.driver import run_iterations
from .factors import GammaFactor, GaussianFactor
from .inducing import InducingProjection
from .linearised import probit_linearisation, relative_change
from .posterior import LatentPosterior

__all__ = ["variational_inference"]


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
    state = {
        "mean": np.zeros(n) if start is None else start[0].mean,
        "scale": prior_scale if start is None else start[1],
        "post": None,
    }

    def step(_: int) -> float:
        mean, scale = state["mean"], state["scale"]
        d_hat = mean[left] - mean[right]
        p, g = probit_linearisation(d_hat, alpha)
        post = LatentPosterior(
            projection.chol / math.sqrt(scale.mean),
            left,
            right,
            g * g / noise_var,
            linear=g * (y - p + g * d_hat) / noise_var,
        )
        factor = GaussianFactor.from_moments(post.mean, post.cov)
        state["scale"] = prior_scale.update(projection.K_inv, factor)
        state["mean"], state["factor"] = post.mean, factor
        return relative_change(post.mean, mean)

    result = run_iterations(
        step,
        max_iter=max_iter,
        tol=tol,
        monitor="change",
        progress=progress,
        desc="GPPL VI",
        warn_name=warn_name,
    )
    return state["factor"], state["scale"], result
