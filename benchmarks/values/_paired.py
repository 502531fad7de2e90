"""Paired bootstrap of a default against its baseline, shared by the values and ordinal
benchmarks of issue 40.

Both estimators are scored on the same units (tasks, pooled over the seeds of a simulated
scenario, or the gold tasks of a real set); the difference of their per-unit losses is resampled
with replacement (Efron & Tibshirani 1993, ch. 16: the paired bootstrap keeps the correlation
between the two estimators' errors on the same unit, which makes the interval much narrower than
comparing two separate intervals). "Loses beyond noise" means the whole 95% interval of
``mean(loss_default − loss_baseline)`` lies above zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PairedDifference:
    """Mean of ``default − baseline`` per-unit losses and its bootstrap interval."""

    mean: float
    low: float
    high: float

    @property
    def verdict(self) -> str:
        """``"better"``/``"worse"`` when the interval excludes 0, else ``"tie"`` (losses: lower
        is better)."""
        if self.high < 0:
            return "better"
        if self.low > 0:
            return "worse"
        return "tie"

    def cell(self, digits: int = 3) -> str:
        low, high = f"{self.low:+.{digits}f}", f"{self.high:+.{digits}f}"
        return f"{self.mean:+.{digits}f} [{low}, {high}] {self.verdict}"


def paired_bootstrap(
    default_loss: np.ndarray,
    baseline_loss: np.ndarray,
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """The paired bootstrap interval of ``mean(default_loss − baseline_loss)`` (module
    docstring); the arrays are per-unit losses in the same order."""
    difference = np.asarray(default_loss, float) - np.asarray(baseline_loss, float)
    if difference.shape != np.asarray(baseline_loss).shape or difference.ndim != 1:
        raise ValueError("paired_bootstrap: the two losses must be 1-d arrays of the same length")
    rng = np.random.default_rng(seed)
    picks = rng.integers(len(difference), size=(n_boot, len(difference)))
    means = difference[picks].mean(axis=1)
    tail = 100 * (1 - level) / 2
    return PairedDifference(
        float(difference.mean()),
        float(np.percentile(means, tail)),
        float(np.percentile(means, 100 - tail)),
    )
