"""Log-space helpers shared by every model.

All probabilities are carried as logarithms inside the engines and exponentiated only at the
edge, when results are handed back to the user.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln, logsumexp

__all__ = [
    "log_normalize",
    "softmax_rows",
    "categorical_sample",
    "dirichlet_expected_log",
    "dirichlet_log_normalizer",
    "dirichlet_kl",
    "safe_log",
    "gumbel_max_sample",
    "log_dirichlet_sample",
]


def safe_log(x: np.ndarray) -> np.ndarray:
    """``log(x)`` with ``log(0) = -inf`` and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(x)


def _row_softmax_parts(log_weights: np.ndarray):
    """Shifted log-weights, weights and row sums of a 2-d array, one column at a time.

    Reductions along a short last axis are slow in numpy; for the few classes of a label model
    column-wise ``maximum``/``+`` over contiguous rows are several times faster than
    ``scipy.special.logsumexp``. Rows that are all ``-inf`` get a shift of 0.
    """
    shift = log_weights[:, 0].copy()
    for column in range(1, log_weights.shape[1]):
        np.maximum(shift, log_weights[:, column], out=shift)
    shift[~np.isfinite(shift)] = 0.0
    shifted = log_weights - shift[:, None]
    weights = np.exp(shifted)
    totals = weights[:, 0].copy()
    for column in range(1, weights.shape[1]):
        totals += weights[:, column]
    return shifted, weights, totals, shift


def log_normalize(log_weights: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Normalise log-weights along ``axis``.

    Returns ``(log_probs, log_norm)`` where ``log_probs = log_weights - log_norm`` and
    ``log_norm = logsumexp(log_weights, axis)`` (the reduced axis dropped).
    """
    if log_weights.ndim == 2 and axis in (-1, 1) and log_weights.shape[1] <= 64:
        shifted, _, totals, shift = _row_softmax_parts(log_weights)
        with np.errstate(divide="ignore"):
            log_totals = np.log(totals)
        return shifted - log_totals[:, None], shift + log_totals
    log_norm = logsumexp(log_weights, axis=axis, keepdims=True)
    return log_weights - log_norm, np.squeeze(log_norm, axis=axis)


def softmax_rows(log_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-normalised probabilities of a 2-d array of log-weights, and the rows' logsumexp."""
    _, weights, totals, shift = _row_softmax_parts(log_weights)
    with np.errstate(divide="ignore"):
        return weights / totals[:, None], shift + np.log(totals)


def categorical_sample(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row of a 2-d array of probabilities, by inverse CDF (one uniform per row)."""
    uniform = rng.random(probs.shape[0])
    cumulative = probs[:, 0].copy()
    draws = np.zeros(probs.shape[0], dtype=np.int64)
    for column in range(1, probs.shape[1]):
        draws += uniform >= cumulative
        cumulative += probs[:, column]
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
    """One categorical draw per row of (unnormalised) ``log_probs``, by the Gumbel-max trick."""
    gumbel = rng.gumbel(size=log_probs.shape)
    return np.argmax(log_probs + gumbel, axis=-1)


def log_dirichlet_sample(concentration: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """log of one Dirichlet draw per row (last axis), finite even for tiny concentrations.

    Uses ``Gamma(a) = Gamma(a + 1) · U^{1/a}`` in log space, so components whose gamma draw would
    underflow to 0 keep a finite (very negative) log.
    """
    log_gamma = np.log(rng.gamma(concentration + 1.0)) + np.log(rng.random(concentration.shape)) / (
        concentration
    )
    return log_normalize(log_gamma)[0]
