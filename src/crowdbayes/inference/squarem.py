"""SQUAREM: squared extrapolation for fixed-point iterations such as EM and MM.

For a monotone map F (each application increases an objective), one cycle computes
x₁ = F(x₀), x₂ = F(x₁), r = x₁ − x₀, v = x₂ − 2x₁ + x₀, the step length α = −‖r‖/‖v‖ (capped at
−1, where the update reduces to x₂), the extrapolation x′ = x₀ − 2αr + α²v, and a stabilising
F(x′). If the objective is given and the extrapolated point is worse than x₂, the cycle returns
x₂, so monotonicity is kept. Scheme S3 of Varadhan & Roland, "Simple and globally convergent
methods for accelerating the convergence of any EM algorithm", Scand. J. Stat. 2008.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["squarem_cycle"]


def squarem_cycle(
    fixed_point: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    objective: Callable[[np.ndarray], float] | None = None,
) -> np.ndarray:
    """One SQUAREM cycle from ``x`` (three applications of ``fixed_point``)."""
    x1 = fixed_point(x)
    x2 = fixed_point(x1)
    r = x1 - x
    v = x2 - x1 - r
    v_norm = np.linalg.norm(v)
    if v_norm == 0 or not np.isfinite(v_norm):
        return x2
    alpha = min(-np.linalg.norm(r) / v_norm, -1.0)
    extrapolated = fixed_point(x - 2 * alpha * r + alpha**2 * v)
    if not np.all(np.isfinite(extrapolated)):
        return x2
    if objective is not None and not objective(extrapolated) >= objective(x2):
        return x2
    return extrapolated
