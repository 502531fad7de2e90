"""Online (streaming) moments: mean and variance of every sampled quantity without storing draws."""

from __future__ import annotations

import numpy as np

__all__ = ["OnlineMoments"]


class OnlineMoments:
    """Welford's running mean and variance of an array-valued sequence.

    For Rao–Blackwellised estimates, ``push(value, conditional_variance)`` also accumulates the
    mean of the conditional variances, so that the posterior variance is
    ``E[Var(θ | rest)] + Var(E[θ | rest])`` (law of total variance).
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.count = 0
        self.mean = np.zeros(shape)
        self._m2 = np.zeros(shape)
        self._conditional_variance = np.zeros(shape)

    def push(self, value: np.ndarray, conditional_variance: np.ndarray | None = None) -> None:
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self._m2 += delta * (value - self.mean)
        if conditional_variance is not None:
            self._conditional_variance += (conditional_variance - self._conditional_variance) / (
                self.count
            )

    @property
    def sample_variance(self) -> np.ndarray:
        """Variance of the pushed values across iterations (denominator n − 1)."""
        if self.count < 2:
            return np.full_like(self.mean, np.nan)
        return self._m2 / (self.count - 1)

    @property
    def variance(self) -> np.ndarray:
        """Total posterior variance: mean conditional variance plus variance of the values."""
        if self.count < 2:
            return self._conditional_variance.copy()
        return self._conditional_variance + self._m2 / self.count
