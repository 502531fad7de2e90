r"""Hierarchical priors over confusion rows (Carpenter 2008), shared by the Gibbs samplers.

Each worker's confusion row for true class ``k`` is :math:`\theta_{jk:} \sim \mathrm{Dir}(\alpha_k)`
with :math:`\alpha_k = s_k m_k`: a prior *mean* :math:`m_k \sim \mathrm{Dir}(1, \dots, 1)` and a
prior *scale* :math:`s_k \sim \mathrm{Pareto}(\text{shape}=1.5, s_{\min})`. For two classes this is
the paper's Beta(α, β) priors on sensitivity and specificity with Beta(1,1) means and Pareto(1.5)
scales.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln, logsumexp

__all__ = [
    "dirichlet_multinomial_log_likelihoods",
    "dirichlet_multinomial_log_marginal",
    "fit_dirichlet_rows",
    "row_hyperprior_log_density",
    "row_hyperprior_to_alpha",
    "alpha_to_row_hyperprior",
    "moment_match_dirichlet",
]


def dirichlet_multinomial_log_likelihoods(counts: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    r"""Elementwise :math:`\log \int \prod_x \theta_x^{n_x}\,\mathrm{Dir}(\theta;\alpha)\,d\theta`
    over the leading axes of ``counts`` and ``alpha`` (last axis: categories; broadcasting).

    :math:`= \log\Gamma(S) - \log\Gamma(S + N) + \sum_x [\log\Gamma(\alpha_x + n_x) -
    \log\Gamma(\alpha_x)]` with :math:`S = \sum_x\alpha_x`, :math:`N = \sum_x n_x` (the
    multinomial coefficient is left out: it does not depend on α).
    """
    total = alpha.sum(axis=-1)
    return (
        gammaln(total)
        - gammaln(total + counts.sum(axis=-1))
        + (gammaln(counts + alpha) - gammaln(alpha)).sum(axis=-1)
    )


def fit_dirichlet_rows(
    alpha: np.ndarray,
    counts: np.ndarray,
    weights: np.ndarray,
    *,
    steps: int = 5,
    max_scale: float = np.inf,
    min_alpha: float = 1e-3,
) -> np.ndarray:
    r"""Empirical-Bayes update of Dirichlet rows shared by many count tables (Minka 2000).

    Increases :math:`\sum_j w_j \sum_k \log \mathrm{DirMult}(n_{jk:} \mid \alpha_k)` for
    ``counts`` (J, K, K) and ``alpha`` (K, K) by the fixed point

    .. math::
        \alpha_{kx} \leftarrow \alpha_{kx}
        \frac{\sum_j w_j [\psi(n_{jkx} + \alpha_{kx}) - \psi(\alpha_{kx})]}
             {\sum_j w_j [\psi(N_{jk} + S_k) - \psi(S_k)]},

    then caps each row's total :math:`S_k` at ``max_scale`` (a truncated prior on the scale:
    without it the scale of a class can run away and absorb other classes).
    """
    alpha = alpha.copy()
    row_totals = counts.sum(axis=-1)
    for _ in range(steps):
        scale = alpha.sum(axis=-1)
        numerator = np.einsum("j,jkx->kx", weights, digamma(counts + alpha) - digamma(alpha))
        denominator = np.einsum("j,jk->k", weights, digamma(row_totals + scale) - digamma(scale))
        alpha = np.maximum(alpha * numerator / np.maximum(denominator, 1e-300)[:, None], min_alpha)
        scale = alpha.sum(axis=-1, keepdims=True)
        alpha = np.where(scale > max_scale, alpha * max_scale / scale, alpha)
    return alpha


def dirichlet_multinomial_log_marginal(counts: np.ndarray, alpha: np.ndarray) -> float:
    r""":math:`\sum_j \log \int \prod_x \theta_x^{n_{jx}} \, \mathrm{Dir}(\theta; \alpha)\,d\theta`
    for count rows ``counts`` (workers × K) that share the concentration ``alpha`` (K,).

    Equals :math:`\sum_j [\log\Gamma(S) - \log\Gamma(S + N_j) + \sum_x \log\Gamma(\alpha_x + n_{jx})
    - \log\Gamma(\alpha_x)]` with :math:`S = \sum_x\alpha_x`; rows with no counts contribute 0.
    """
    return float(dirichlet_multinomial_log_likelihoods(counts, alpha).sum())


def row_hyperprior_to_alpha(coords: np.ndarray) -> np.ndarray:
    """Map unconstrained coordinates ``(log s, z_1..z_{K-1})`` to ``α = s · softmax(z, 0)``."""
    logits = np.append(coords[1:], 0.0)
    logits -= logits.max()
    mean = np.exp(logits) / np.exp(logits).sum()
    return np.exp(coords[0]) * mean


def alpha_to_row_hyperprior(alpha: np.ndarray) -> np.ndarray:
    """Inverse of :func:`row_hyperprior_to_alpha`."""
    return np.concatenate([[np.log(alpha.sum())], np.log(alpha[:-1]) - np.log(alpha[-1])])


def row_hyperprior_log_density(
    coords: np.ndarray, scale_shape: float = 1.5, scale_min: float = 1.0
) -> float:
    r"""Log prior density of the unconstrained coordinates ``(log s, z)`` of one row, up to a
    constant, where :math:`m = \mathrm{softmax}(z, 0) \sim \mathrm{Dir}(1)` and
    :math:`s \sim \mathrm{Pareto}(\text{shape}, s_{\min})`.

    Sampling the scale and the mean on separate axes mixes far better than sampling
    :math:`\log\alpha` (the two are nearly independent a posteriori). Jacobians: :math:`s` for
    :math:`\log s` and :math:`\prod_x m_x` for the additive log-ratio :math:`z`, so
    :math:`\log p = -\text{shape}\cdot\log s + \sum_x \log m_x` for :math:`s \ge s_{\min}`.
    """
    log_scale = coords[0]
    if not np.isfinite(log_scale) or log_scale < np.log(scale_min):
        return -np.inf
    logits = np.append(coords[1:], 0.0)
    log_mean = logits - logsumexp(logits)
    return float(-scale_shape * log_scale + log_mean.sum())


def moment_match_dirichlet(rows: np.ndarray, max_scale: float) -> tuple[np.ndarray, bool]:
    """Dirichlet concentration whose mean and total variance match the rows (workers × K).

    Mean ``m = mean(rows)``; scale from ``Σ Var(θ_x) = Σ m_x(1 − m_x) / (s + 1)`` (the moment
    matching of the paper, Gelman et al. BDA appendix). Returns ``(alpha, diverged)`` where
    ``diverged`` says the empirical variance was too small and the scale hit ``max_scale``.
    """
    mean = rows.mean(axis=0)
    variance = rows.var(axis=0, ddof=1).sum() if rows.shape[0] > 1 else 0.0
    spread = (mean * (1 - mean)).sum()
    if variance <= 0 or spread / variance - 1 >= max_scale:
        return np.maximum(mean, 1e-12) * max_scale, True
    scale = max(spread / variance - 1.0, 1e-3)
    return np.maximum(mean, 1e-12) * scale, False
