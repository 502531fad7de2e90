"""Univariate slice sampling with stepping out (Neal 2003), applied one coordinate at a time."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["slice_sample_coordinates"]


def slice_sample_coordinates(
    x: np.ndarray,
    log_density: Callable[[np.ndarray], float],
    rng: np.random.Generator,
    *,
    width: float = 1.0,
    max_steps: int = 32,
) -> np.ndarray:
    """One sweep of coordinate-wise slice sampling; returns a new point (``x`` is not modified).

    For each coordinate: draw the slice level ``log u = f(x) − Exp(1)``, step out an interval of
    ``width`` until both ends fall below the level (at most ``max_steps`` steps each side), then
    sample uniformly from it, shrinking towards the current point on rejection. Leaves the
    distribution with log-density ``log_density`` invariant (Neal 2003, Ann. Statist. 31(3)).
    """
    x = np.array(x, dtype=float)
    current = log_density(x)
    if not np.isfinite(current):
        raise ValueError(f"slice sampler started at a point of zero density: {x}")
    for d in range(x.size):
        level = current - rng.exponential()
        origin = x.flat[d]
        left = origin - width * rng.random()
        right = left + width

        def at(value: float, d: int = d) -> float:
            trial = x.copy()
            trial.flat[d] = value
            return log_density(trial)

        for _ in range(max_steps):
            if at(left) <= level:
                break
            left -= width
        for _ in range(max_steps):
            if at(right) <= level:
                break
            right += width
        while True:
            proposal = left + (right - left) * rng.random()
            value = at(proposal)
            if value > level:
                x.flat[d] = proposal
                current = value
                break
            if proposal < origin:
                left = proposal
            else:
                right = proposal
            if right - left < 1e-12:  # numerically collapsed onto the current point
                break
    return x
