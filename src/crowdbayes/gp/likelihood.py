"""The pairwise probit likelihood on utility differences, grouped by pair, and what every GP
preference inference needs from it: its derivatives (Laplace), the moments of its tilted
distributions (EP, ADF) and the predictive probability of a comparison.

A comparison of items ``i`` and ``j`` with utility difference ``d = f(i) - f(j)`` and judgment
noise ``δ ~ N(0, σ²)`` on each item (Thurstone case V; Chu & Ghahramani, 2005; Simpson &
Gurevych, 2020, Eq. 2) prefers ``i`` with probability ``Φ(d / α)``, ``α = √2 σ``. A tie counts
as half a win for each side, ``Φ(d/α)^½ Φ(-d/α)^½``. All comparisons of the same unordered pair
multiply into one factor

.. math:: ℓ(d) = Φ(d/α)^{a} \\, Φ(-d/α)^{b},

with ``a`` the (weighted) wins of the lower-coded item, ``b`` those of the other, ties adding ½
to each. Grouping makes one EP site per distinct pair: repeated judgments of a pair (several
workers, or the members of a community) are then matched exactly rather than as many identical
sites, which parallel EP updates in lock-step and makes oscillate. ``ℓ`` is log-concave, so site
precisions stay non-negative and the Laplace Hessian is negative definite.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "PairCounts",
    "difference_scale",
    "probit_terms",
    "log_likelihood_terms",
    "tilted_moments",
    "pair_probabilities",
]

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(48)
#: the quadrature covers where the tilted density is within e^-36 of its peak
_LOG_RANGE = 36.0


@dataclass(frozen=True)
class PairCounts:
    """Comparisons grouped by unordered pair of items.

    Attributes
    ----------
    left, right : ndarray of int (n_pairs,)
        Item codes with ``left < right``.
    wins, losses : ndarray of float (n_pairs,)
        Weighted number of times ``left`` (``wins``) and ``right`` (``losses``) was preferred,
        each tie adding ½ to both.
    index : ndarray of int (n_comparisons,)
        The pair of each input comparison.
    """

    left: np.ndarray
    right: np.ndarray
    wins: np.ndarray
    losses: np.ndarray
    index: np.ndarray

    @classmethod
    def from_comparisons(
        cls,
        left: np.ndarray,
        right: np.ndarray,
        outcome: np.ndarray,
        weights: np.ndarray | None = None,
    ) -> PairCounts:
        """Group comparisons (``outcome`` +1 left preferred, -1 right, 0 tie), optionally
        weighted (e.g. soft community memberships or mini-batch weights)."""
        left = np.asarray(left, dtype=np.int64)
        right = np.asarray(right, dtype=np.int64)
        outcome = np.asarray(outcome)
        if not (left.shape == right.shape == outcome.shape) or left.ndim != 1:
            raise ValueError(
                f"left, right and outcome must be 1-d and equally long; got shapes {left.shape}, "
                f"{right.shape}, {outcome.shape}"
            )
        if not np.isin(outcome, (-1, 0, 1)).all():
            raise ValueError("outcome must hold +1 (left preferred), -1 (right) or 0 (tie)")
        if (left == right).any():
            raise ValueError("a comparison has the same item on both sides")
        w = np.ones(len(left)) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != left.shape or (w < 0).any() or not np.isfinite(w).all():
            raise ValueError("weights must be finite, non-negative and one per comparison")
        low, high = np.minimum(left, right), np.maximum(left, right)
        # the outcome seen from the lower-coded item
        seen = np.where(left == low, outcome, -outcome)
        size = int(high.max(initial=0)) + 1
        keys, index = np.unique(low * size + high, return_inverse=True)
        n = len(keys)
        wins = np.bincount(index, w * ((seen == 1) + 0.5 * (seen == 0)), minlength=n)
        losses = np.bincount(index, w * ((seen == -1) + 0.5 * (seen == 0)), minlength=n)
        return cls(keys // size, keys % size, wins, losses, index.reshape(-1))

    @property
    def n_pairs(self) -> int:
        return len(self.left)


def difference_scale(noise: float) -> float:
    """``α = √2 σ``: the sd of the difference of two items' judgment noise."""
    if not (np.isfinite(noise) and noise > 0):
        raise ValueError(f"noise must be a positive number; got {noise}")
    return float(np.sqrt(2.0) * noise)


def probit_terms(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``log Φ(z)``, ``r = d/dz log Φ(z) = φ(z)/Φ(z)`` and ``-d²/dz² log Φ(z) = r (z + r)``,
    accurate in both tails (``r`` from ``log Φ``)."""
    from scipy.special import log_ndtr

    log_cdf = log_ndtr(z)
    r = np.exp(-0.5 * z * z - _LOG_SQRT_2PI - log_cdf)
    return log_cdf, r, r * (z + r)


def log_likelihood_terms(
    d: np.ndarray, wins: np.ndarray, losses: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair: ``log ℓ(d)``, its first derivative and minus its second derivative in ``d``
    (the latter ≥ 0: log-concavity)."""
    z = np.asarray(d, dtype=np.float64) / alpha
    up, r_up, c_up = probit_terms(z)
    down, r_down, c_down = probit_terms(-z)
    value = np.where(wins > 0, wins * up, 0.0) + np.where(losses > 0, losses * down, 0.0)
    grad = (wins * r_up - losses * r_down) / alpha
    hess = (wins * c_up + losses * c_down) / alpha**2
    return value, grad, hess


def tilted_moments(
    cavity_mean: np.ndarray,
    cavity_var: np.ndarray,
    wins: np.ndarray,
    losses: np.ndarray,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(log Ẑ, mean, variance)`` of the tilted distributions ``ℓ(d) N(d; m, v) / Ẑ``.

    A single win or loss has the closed form (Rasmussen & Williams, 2006, Eq. 3.58 with the
    probit scaled by ``α``; Abbasnejad et al., 2013, Eqs. 11–14): ``z = y m / √(α² + v)``,
    ``Ẑ = Φ(z)``, ``mean = m + y v r / √(α² + v)``, ``var = v - v² r (z + r) / (α² + v)``,
    ``r = φ(z)/Φ(z)``. Any other counts (repeats, ties, weights) use
    :func:`_quadrature_moments`.
    """
    m = np.asarray(cavity_mean, dtype=np.float64)
    v = np.asarray(cavity_var, dtype=np.float64)
    wins = np.asarray(wins, dtype=np.float64)
    losses = np.asarray(losses, dtype=np.float64)
    single = ((wins == 1) & (losses == 0)) | ((wins == 0) & (losses == 1))
    sign = np.where(wins > 0, 1.0, -1.0)
    scale = np.sqrt(alpha**2 + v)
    z = sign * m / scale
    log_z, r, curv = probit_terms(z)
    mean = m + sign * v * r / scale
    var = v - v * v * curv / scale**2
    other = ~single
    if other.any():
        log_z[other], mean[other], var[other] = _quadrature_moments(
            m[other], v[other], wins[other], losses[other], alpha
        )
    return log_z, mean, var


def _quadrature_moments(m, v, a, b, alpha, newton_steps: int = 40):
    """Tilted moments for ``ℓ = Φ(d/α)^a Φ(-d/α)^b`` by two-sided Gauss–Legendre quadrature.

    ``h(d) = log ℓ(d) - (d - m)² / (2v)`` is concave with ``h'' ≤ -1/v``, so the tilted
    density is unimodal and falls off at least like a Gaussian of variance ``v`` around its mode
    ``d*``. The mode is found by safeguarded Newton on ``h'`` (bracketed, bisecting when a step
    leaves the bracket); on each side the point where ``h`` has dropped by 36 is found by
    Newton from outside (monotone for a concave function, starting ``√(72 v)`` away); 48
    Gauss–Legendre nodes on each side then integrate ``e^h`` and its first two moments.
    """
    from scipy.special import logsumexp

    sd = np.sqrt(v)

    def h_terms(d):
        value, grad, hess = log_likelihood_terms(d, a, b, alpha)
        return value - 0.5 * (d - m) ** 2 / v, grad - (d - m) / v, -hess - 1.0 / v

    # bracket the mode: h' is decreasing; its root lies where the likelihood's pull balances
    # the cavity's, within m ± (pull at m) · v, and the pull is bounded on the way there
    span = np.abs(h_terms(m)[1]) * v + sd
    lo, hi = m - span, m + span
    d = m.copy()
    for _ in range(newton_steps):
        _, g, c = h_terms(d)
        lo = np.where(g > 0, d, lo)
        hi = np.where(g < 0, d, hi)
        step = d - g / c
        new = np.where((step > lo) & (step < hi), step, 0.5 * (lo + hi))
        done = np.all(np.abs(new - d) <= 1e-12 * (np.abs(d) + sd))
        d = new
        if done:
            break
    mode = d
    peak = h_terms(mode)[0]
    log_z_parts, first = [], []
    for side in (-1.0, 1.0):
        # Newton from outside towards h(e) = peak - _LOG_RANGE; stays outside by concavity,
        # and the edge need not be precise (the density there is e^-36 of its peak)
        edge = mode + side * np.sqrt(2.0 * _LOG_RANGE * v) * 1.0001
        for _ in range(newton_steps):
            value, g, _ = h_terms(edge)
            gap = value - (peak - _LOG_RANGE)
            if np.all(gap > -0.5):
                break
            edge = edge - np.where(g != 0, gap / np.where(g != 0, g, 1.0), 0.0)
        half = 0.5 * (edge - mode)
        nodes = (mode + half)[:, None] + half[:, None] * _GL_NODES[None, :]
        log_w = np.log(np.abs(half))[:, None] + np.log(_GL_WEIGHTS)[None, :]
        log_w = log_w + h_terms(nodes.T)[0].T
        log_z_parts.append(log_w)
        first.append(nodes)
    log_w = np.concatenate(log_z_parts, axis=1)
    nodes = np.concatenate(first, axis=1)
    log_total = logsumexp(log_w, axis=1)
    p = np.exp(log_w - log_total[:, None])
    mean = (p * nodes).sum(axis=1)
    var = (p * (nodes - mean[:, None]) ** 2).sum(axis=1)
    return log_total - 0.5 * np.log(2.0 * np.pi * v), mean, var


def pair_probabilities(
    mean_diff: np.ndarray, var_diff: np.ndarray, noise: float = 1.0
) -> np.ndarray:
    """``P(left ≻ right) = Φ(E[d] / √(α² + Var[d]))`` under ``d ~ N(mean_diff, var_diff)``.

    The probit likelihood integrated over the Gaussian posterior of the difference (Rasmussen &
    Williams, 2006, Eq. 3.82), so posterior uncertainty pulls probabilities toward ½.
    """
    from scipy.special import ndtr

    alpha = difference_scale(noise)
    return ndtr(np.asarray(mean_diff) / np.sqrt(alpha**2 + np.asarray(var_diff)))
