"""Log-space helpers shared by every model.

All probabilities are carried as logarithms inside the engines and exponentiated only at the
edge, when results are handed back to the user.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import digamma, gammaln

__all__ = [
    "log_normalize",
    "lean_logsumexp",
    "softmax_classes",
    "categorical_sample",
    "dirichlet_expected_log",
    "dirichlet_log_normalizer",
    "dirichlet_kl",
    "safe_log",
    "gumbel_max_sample",
    "log_dirichlet_sample",
    "beta_interval",
    "dirichlet_marginal_summary",
]


def safe_log(x: np.ndarray) -> np.ndarray:
    """``log(x)`` with ``log(0) = -inf`` and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(x)


def log_normalize(log_weights: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Normalise log-weights along ``axis`` (default 0, the class axis of class-major arrays).

    Returns ``(log_probs, log_norm)`` where ``log_probs = log_weights - log_norm`` and
    ``log_norm = logsumexp(log_weights, axis)`` (the reduced axis dropped).
    """
    log_norm = lean_logsumexp(log_weights, axis=axis)
    return log_weights - log_norm, np.squeeze(log_norm, axis=axis)


def lean_logsumexp(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """``log Σ exp(values)`` along ``axis`` (kept, of length 1), shifted by the maximum.

    The same values as :func:`scipy.special.logsumexp` (``-inf`` when all terms are ``-inf``,
    ``inf`` when one is ``inf``, NaN propagates) without its argument handling, whose cost
    dominates on the small arrays of samplers' inner loops.
    """
    shift = values.max(axis=axis, keepdims=True)
    shift[~np.isfinite(shift)] = 0.0
    with np.errstate(divide="ignore"):
        return np.log(np.exp(values - shift).sum(axis=axis, keepdims=True)) + shift


def softmax_classes(log_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities over the classes of a class-major (K, n) array of log-weights, and the
    logsumexp of each column.

    Per-task arrays are kept class-major (one contiguous row per class) because reductions over
    a short trailing axis are slow in numpy; here every operation runs over contiguous rows.
    Columns that are all ``-inf`` get a shift of 0 (and come out as NaN).
    """
    shift = log_weights.max(axis=0)
    shift[~np.isfinite(shift)] = 0.0
    weights = log_weights - shift
    np.exp(weights, out=weights)
    totals = weights.sum(axis=0)
    weights /= totals
    with np.errstate(divide="ignore"):
        return weights, shift + np.log(totals)


def categorical_sample(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per column of a class-major (K, n) array of probabilities, by inverse CDF."""
    uniform = rng.random(probs.shape[1])
    cumulative = probs[0].copy()
    draws = np.zeros(probs.shape[1], dtype=np.int64)
    for row in probs[1:]:
        draws += uniform >= cumulative
        cumulative += row
    return draws


def dirichlet_expected_log(concentration: np.ndarray) -> np.ndarray:
    """E[log p] under Dirichlet(concentration) along the last axis: ψ(a_k) − ψ(Σ a)."""
    return digamma(concentration) - digamma(concentration.sum(axis=-1, keepdims=True))


def dirichlet_log_normalizer(concentration: np.ndarray) -> np.ndarray:
    """log B(a) = Σ log Γ(a_k) − log Γ(Σ a_k) along the last axis."""
    return gammaln(concentration).sum(axis=-1) - gammaln(concentration.sum(axis=-1))


def dirichlet_kl(posterior: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """KL(Dir(posterior) ‖ Dir(prior)) along the last axis (broadcasting over the rest)."""
    prior = np.broadcast_to(prior, posterior.shape)
    return (
        dirichlet_log_normalizer(prior)
        - dirichlet_log_normalizer(posterior)
        + ((posterior - prior) * dirichlet_expected_log(posterior)).sum(axis=-1)
    )


def gumbel_max_sample(log_probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per column of class-major (unnormalised) ``log_probs`` (Gumbel-max)."""
    gumbel = rng.gumbel(size=log_probs.shape)
    return np.argmax(log_probs + gumbel, axis=0)


def log_dirichlet_sample(concentration: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """log of one Dirichlet draw per row (last axis), finite even for tiny concentrations.

    Normalised log gamma draws; where a concentration is below 0.1 (a gamma draw could underflow
    to 0) every component uses ``Gamma(a) = Gamma(a + 1) · U^{1/a}`` in log space instead, so
    such components keep a finite (very negative) log.
    """
    if concentration.min() >= 0.1:
        log_gamma = np.log(rng.standard_gamma(concentration))
    else:
        log_gamma = np.log(rng.gamma(concentration + 1.0)) + np.log(
            rng.random(concentration.shape)
        ) / (concentration)
    return log_normalize(log_gamma, axis=-1)[0]


def beta_interval(mean: np.ndarray, variance: np.ndarray, level: float):
    """Central interval of the Beta distribution with the given mean and variance."""
    mean = np.clip(mean, 1e-12, 1 - 1e-12)
    limit = mean * (1 - mean)
    variance = np.clip(variance, 1e-300, limit * (1 - 1e-9))
    concentration = limit / variance - 1
    a, b = mean * concentration, (1 - mean) * concentration
    tail = (1 - level) / 2
    return stats.beta.ppf(tail, a, b), stats.beta.ppf(1 - tail, a, b)


def dirichlet_marginal_summary(concentration: np.ndarray, level: float):
    """Mean, sd and central ``level`` interval of each cell of Dirichlet rows (last axis).

    Each cell of a Dirichlet(a) row is Beta(a_x, Σa − a_x)-distributed, so the intervals are exact.
    Returns ``(mean, sd, lower, upper, level)``.
    """
    total = concentration.sum(axis=-1, keepdims=True)
    rest = total - concentration
    mean = concentration / total
    sd = np.sqrt(mean * (1 - mean) / (total + 1))
    tail = (1 - level) / 2
    lower = stats.beta.ppf(tail, concentration, rest)
    upper = stats.beta.ppf(1 - tail, concentration, rest)
    return mean, sd, lower, upper, level
