"""Lemma 1 of Guo et al. (2019): lower bounds on a Plackett–Luce choice probability that are
exponentials of quadratics in the utilities, so a Gaussian prior stays conjugate.

For a pair {c, c̄} with margin t = u_c − u_c̄ (Jaakkola & Jordan 1997), for any ζ:

    log σ(t) ≥ log σ(ζ) + (t − ζ)/2 − λ(ζ)(t² − ζ²),      λ(ζ) = tanh(ζ/2) / (4ζ),

with equality at ζ = ±t. For a set A with |A| > 2 (Bouchard 2007), for any α and ξ_j:

    log p(c | A) = u_c − log Σ_j e^{u_j}
                 ≥ u_c − α − Σ_j [ (u_j − α + ξ_j)/2 + λ(ξ_j)((u_j − α)² − ξ_j²) − log σ(ξ_j) ].

References: Y. Guo et al., "Variational Inference from Ranked Samples with Features", ACML 2019;
T. Jaakkola, M. Jordan, "A variational approach to Bayesian logistic regression models and their
extensions", AISTATS 1997; G. Bouchard, "Efficient bounds for the softmax function", 2007.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit

__all__ = [
    "jj_lambda",
    "jj_lambda_derivative",
    "jj_lambda_and_derivative",
    "pair_log_bound",
    "softmax_log_bound",
    "log_sigmoid",
    "sigmoid",
]

log_sigmoid = log_expit
sigmoid = expit


def jj_lambda(xi: np.ndarray) -> np.ndarray:
    """λ(ξ) = tanh(ξ/2) / (4ξ), an even function with λ(0) = 1/8 (its limit)."""
    return jj_lambda_parts(xi)[0]


def jj_lambda_parts(xi: np.ndarray, safe=None, half=None, out=None):
    """λ(ξ) = tanh(ξ/2) / (4ξ) and its pieces ``(λ, tanh(ξ/2), max(|ξ|, 1e-300))``, each
    written into the array given (None: a new one): the hot loops of :mod:`.vi` reuse work
    arrays, with the same operations and so the same numbers."""
    # tanh(ξ/2)/(4ξ) is accurate down to the smallest normal ξ, where it equals 1/8
    xi = np.asarray(xi, dtype=np.float64)
    safe = np.maximum(np.abs(xi, out=safe), 1e-300, out=safe)
    half = np.tanh(np.divide(safe, 2.0, out=half), out=half)
    return np.divide(half, np.multiply(safe, 4.0, out=out), out=out), half, safe


def jj_lambda_derivative(xi: np.ndarray) -> np.ndarray:
    """dλ/dξ = (ξ sech²(ξ/2)/2 − tanh(ξ/2)) / (4ξ²), ≤ 0 for ξ ≥ 0 (series −ξ/48 near 0)."""
    return jj_lambda_and_derivative(xi)[1]


def jj_lambda_and_derivative(xi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """λ(ξ) and dλ/dξ from one ``tanh`` (sech² = 1 − tanh²), for Newton's method."""
    xi = np.abs(np.asarray(xi, dtype=np.float64))
    half = np.tanh(np.maximum(xi, 1e-300) / 2.0)
    lam = half / (4.0 * np.maximum(xi, 1e-300))
    small = xi < 1e-3
    safe = np.where(small, 1.0, xi)
    half_safe = np.where(small, np.tanh(0.5), half)
    exact = (safe * (1.0 - half_safe**2) / 2.0 - half_safe) / (4.0 * safe**2)
    return lam, np.where(small, -xi / 48.0, exact)


def pair_log_bound(margin: np.ndarray, zeta: np.ndarray) -> np.ndarray:
    """Jaakkola–Jordan lower bound on log σ(margin) (Eq. 12, in log form)."""
    margin, zeta = np.asarray(margin, float), np.asarray(zeta, float)
    return log_sigmoid(zeta) + (margin - zeta) / 2.0 - jj_lambda(zeta) * (margin**2 - zeta**2)


def softmax_log_bound(utilities: np.ndarray, chosen: int, alpha: float, xi: np.ndarray) -> float:
    """Bouchard's lower bound on log p(chosen | set) for one set (Eq. 13, in log form)."""
    shifted = np.asarray(utilities, float) - alpha
    xi = np.asarray(xi, float)
    per_member = log_sigmoid(xi) - (shifted + xi) / 2.0 - jj_lambda(xi) * (shifted**2 - xi**2)
    return float(shifted[chosen] + per_member.sum())
