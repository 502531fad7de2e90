"""Chinese-restaurant-process pieces: the partition prior, the concentration update, and the
posterior summaries of sampled partitions (co-membership, least-squares point partition)."""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

__all__ = [
    "canonical_labels",
    "crp_log_prior",
    "sample_concentration",
    "co_membership",
    "least_squares_partition",
]


def canonical_labels(z: np.ndarray) -> np.ndarray:
    """Relabel a partition ``0, 1, ...`` in order of first appearance (so equal partitions
    compare equal whatever their community labels)."""
    z = np.asarray(z)
    _, first, inverse = np.unique(z, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def crp_log_prior(z: np.ndarray, concentration: float) -> float:
    """``log p(z | λ)`` of a partition under the Chinese restaurant process (Aldous, 1985):

    .. math:: p(z | λ) = \\frac{Γ(λ)}{Γ(λ + N)} λ^{K} \\prod_{c=1}^{K} (n_c - 1)!,

    the product over users of the sequential conditionals of Abbasnejad et al. (2013, Eqs.
    20–21), ``n_c/(N-1+λ)`` for an existing community and ``λ/(N-1+λ)`` for a new one.
    """
    sizes = np.bincount(canonical_labels(z))
    n = int(sizes.sum())
    lam = float(concentration)
    return float(len(sizes) * np.log(lam) + gammaln(sizes).sum() + gammaln(lam) - gammaln(lam + n))


def sample_concentration(
    concentration: float,
    n_communities: int,
    n_users: int,
    shape: float,
    rate: float,
    rng: np.random.Generator,
) -> float:
    """One Gibbs update of the CRP concentration ``λ ~ Gamma(shape, rate)`` given the number of
    communities ``k`` among ``n`` users (Escobar & West, 1995, Sec. 6).

    ``p(λ | k, n) ∝ Gamma(λ; a, b) λ^k Γ(λ)/Γ(λ+n)``; with the auxiliary ``η | λ ~ Beta(λ+1, n)``
    the conditional of ``λ`` is the two-component mixture
    ``π Gamma(a+k, b-log η) + (1-π) Gamma(a+k-1, b-log η)``, ``π/(1-π) = (a+k-1)/(n(b-log η))``.
    """
    eta = rng.beta(concentration + 1.0, n_users)
    scale_rate = rate - np.log(eta)
    odds = (shape + n_communities - 1.0) / (n_users * scale_rate)
    extra = 1.0 if rng.random() < odds / (1.0 + odds) else 0.0
    return float(rng.gamma(shape + n_communities - 1.0 + extra, 1.0 / scale_rate))


def _one_hot(z: np.ndarray) -> np.ndarray:
    labels = canonical_labels(z)
    onehot = np.zeros((len(labels), labels.max(initial=-1) + 1), dtype=np.float32)
    onehot[np.arange(len(labels)), labels] = 1.0
    return onehot


def co_membership(samples: np.ndarray) -> np.ndarray:
    """Posterior probability that users ``u`` and ``v`` share a community: the mean over
    sampled partitions (rows of ``samples``) of ``[z_u = z_v]``."""
    samples = np.asarray(samples)
    n = samples.shape[1]
    total = np.zeros((n, n), dtype=np.float64)
    for z in samples:
        onehot = _one_hot(z)
        total += onehot @ onehot.T
    return total / max(len(samples), 1)


def least_squares_partition(samples: np.ndarray, similarity: np.ndarray) -> int:
    """Index of the sampled partition closest to the co-membership matrix ``P``.

    Dahl's (2006) least-squares clustering: minimise ``Σ_{uv} ([z_u = z_v] - P_uv)²`` over the
    sampled partitions, which estimates the partition maximising the expected (Rand-type)
    pairwise agreement with the posterior. With one-hot ``Z``,
    ``Σ [z_u = z_v]² = Σ_c n_c²`` and ``Σ [z_u = z_v] P_uv = tr(Zᵀ P Z)``.
    """
    samples = np.asarray(samples)
    canonical = np.array([canonical_labels(z) for z in samples])
    unique, first = np.unique(canonical, axis=0, return_index=True)
    similarity = np.asarray(similarity, dtype=np.float32)
    losses = []
    for z in unique:
        onehot = _one_hot(z)
        sizes = onehot.sum(axis=0)
        losses.append(float((sizes**2).sum() - 2.0 * np.sum(onehot * (similarity @ onehot))))
    return int(first[int(np.argmin(losses))])
