"""Log-space helpers shared by every model.

All probabilities are carried as logarithms inside the engines and exponentiated only at the
edge, when results are handed back to the user.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln, logsumexp

__all__ = [
    "log_normalize",
    "dirichlet_expected_log",
    "dirichlet_log_normalizer",
    "dirichlet_kl",
    "safe_log",
    "gumbel_max_sample",
]


def safe_log(x: np.ndarray) -> np.ndarray:
    """``log(x)`` with ``log(0) = -inf`` and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(x)


def log_normalize(log_weights: np.ndarray, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Normalise log-weights along ``axis``.

    Returns ``(log_probs, log_norm)`` where ``log_probs = log_weights - log_norm`` and
    ``log_norm = logsumexp(log_weights, axis)`` (kept as a 1-d array of the reduced shape).
    """
    log_norm = logsumexp(log_weights, axis=axis, keepdims=True)
    return log_weights - log_norm, np.squeeze(log_norm, axis=axis)


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
    """One categorical draw per row of ``log_probs`` (unnormalised is fine) by the Gumbel-max trick."""
    gumbel = rng.gumbel(size=log_probs.shape)
    return np.argmax(log_probs + gumbel, axis=-1)
