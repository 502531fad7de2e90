r"""Hierarchical priors over confusion rows (Carpenter 2008), shared by the Gibbs samplers.

Each worker's confusion row for true class ``k`` is :math:`\theta_{jk:} \sim \mathrm{Dir}(\alpha_k)`
with :math:`\alpha_k = s_k m_k`: a prior *mean* :math:`m_k \sim \mathrm{Dir}(1, \dots, 1)` and a
prior *scale* :math:`s_k \sim \mathrm{Pareto}(\text{shape}=1.5, s_{\min})`. For two classes this is
the paper's Beta(α, β) priors on sensitivity and specificity with Beta(1,1) means and Pareto(1.5)
scales.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "dirichlet_multinomial_log_likelihoods",
    "dirichlet_multinomial_log_marginal",
    "fit_dirichlet_rows",
    "row_hyperprior_log_density",
    "row_hyperprior_to_alpha",
    "alpha_to_row_hyperprior",
    "moment_match_dirichlet",
    "rows_to_alpha",
    "rows_hyperprior_log_density",
    "CountRows",
]


def dirichlet_multinomial_log_likelihoods(counts: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    r"""Elementwise :math:`\log \int \prod_x \theta_x^{n_x}\,\mathrm{Dir}(\theta;\alpha)\,d\theta`
    over the leading axes of ``counts`` and ``alpha`` (last axis: categories; broadcasting).

    :math:`= \log\Gamma(S) - \log\Gamma(S + N) + \sum_x [\log\Gamma(\alpha_x + n_x) -
    \log\Gamma(\alpha_x)]` with :math:`S = \sum_x\alpha_x`, :math:`N = \sum_x n_x` (the
    multinomial coefficient is left out: it does not depend on α).
    """
    from scipy.special import gammaln

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
    without it the scale of a class can run away and absorb other classes). A row that no
    table with positive weight has counts in carries no evidence and keeps its α.
    """
    from scipy.special import digamma

    alpha = alpha.copy()
    row_totals = counts.sum(axis=-1)
    for _ in range(steps):
        scale = alpha.sum(axis=-1)
        numerator = np.einsum("j,jkx->kx", weights, digamma(counts + alpha) - digamma(alpha))
        denominator = np.einsum("j,jk->k", weights, digamma(row_totals + scale) - digamma(scale))
        evidence = denominator > 0
        ratio = np.where(
            evidence[:, None], numerator / np.where(evidence, denominator, 1.0)[:, None], 1.0
        )
        alpha = np.maximum(alpha * ratio, min_alpha)
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
    coords: np.ndarray,
    scale_shape: float = 1.5,
    scale_min: float = 1.0,
    diagonal: float = 0.0,
    row: int | None = None,
) -> float:
    r"""Log prior density of the unconstrained coordinates ``(log s, z)`` of one row, up to a
    constant, where :math:`m = \mathrm{softmax}(z, 0) \sim \mathrm{Dir}(1 + d\,e_k)` (the
    row of true class ``k = row`` leaning by ``d = diagonal`` towards its own class; ``d = 0``
    or no ``row``: the symmetric Dir(1)) and :math:`s \sim \mathrm{Pareto}(\text{shape},
    s_{\min})`.

    Sampling the scale and the mean on separate axes mixes far better than sampling
    :math:`\log\alpha` (the two are nearly independent a posteriori). Jacobians: :math:`s` for
    :math:`\log s` and :math:`\prod_x m_x` for the additive log-ratio :math:`z`, so
    :math:`\log p = -\text{shape}\cdot\log s + \sum_x \log m_x + d \log m_k` for
    :math:`s \ge s_{\min}`.
    """
    from scipy.special import logsumexp

    log_scale = coords[0]
    if not np.isfinite(log_scale) or log_scale < np.log(scale_min):
        return -np.inf
    logits = np.append(coords[1:], 0.0)
    log_mean = logits - logsumexp(logits)
    lean = diagonal * log_mean[row] if diagonal and row is not None else 0.0
    return float(-scale_shape * log_scale + log_mean.sum() + lean)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-softmax over the last axis: a lean log-sum-exp (max shift, no argument checking)."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _mean_logits(coords: np.ndarray) -> np.ndarray:
    """The logits ``(z_1..z_{K-1}, 0)`` of the prior means from coordinates ``(..., K)``."""
    logits = np.zeros(coords.shape)
    logits[..., :-1] = coords[..., 1:]
    return logits


def rows_to_alpha(coords: np.ndarray) -> np.ndarray:
    r""":func:`row_hyperprior_to_alpha` over the last axis of ``coords`` (..., K), batched:
    :math:`\alpha = \exp(\log s + \log\mathrm{softmax}(z, 0))`."""
    return np.exp(coords[..., :1] + _log_softmax(_mean_logits(coords)))


def rows_hyperprior_log_density(
    coords: np.ndarray, scale_shape: float = 1.5, scale_min: float = 1.0, diagonal: float = 0.0
) -> np.ndarray:
    r""":func:`row_hyperprior_log_density` over the last axis of ``coords`` (..., K, K), batched,
    row ``k`` of the second-to-last axis being true class ``k``:
    :math:`-\text{shape}\cdot\log s + \sum_x \log m_x + d \log m_k` where
    :math:`s \ge s_{\min}`, :math:`-\infty` elsewhere."""
    log_scale = coords[..., 0]
    log_mean = _log_softmax(_mean_logits(coords))
    density = -scale_shape * log_scale + _mean_log_prior(log_mean, diagonal)
    inside = np.isfinite(log_scale) & (log_scale >= np.log(scale_min))
    return np.where(inside, density, -np.inf)


def _mean_log_prior(log_mean: np.ndarray, diagonal: float) -> np.ndarray:
    r"""The Dir(1 + d e_k) log density of the rows' means in their log-ratio coordinates,
    :math:`\sum_x \log m_{kx} + d \log m_{kk}` (..., K), from ``log m`` (..., K, K)."""
    density = log_mean.sum(axis=-1)
    if diagonal:
        density = density + diagonal * np.diagonal(log_mean, axis1=-2, axis2=-1)
    return density


class CountRows:
    r"""Sufficient statistics of count tables ``n[j, k, x]`` (J, K, X) for the Dirichlet–
    multinomial marginal of each row ``k`` as a function of its concentration :math:`\alpha_k`.

    The marginal of row ``k`` (:func:`dirichlet_multinomial_log_marginal` of ``n[:, k, :]``) is

    .. math::
        L_k(\alpha_k) = \sum_j \Big[\log\Gamma(S_k) - \log\Gamma(S_k + N_{jk})
        + \sum_x \log\Gamma(\alpha_{kx} + n_{jkx}) - \log\Gamma(\alpha_{kx})\Big].

    A worker's term vanishes where its count is 0, and equal counts give equal terms, so only
    the distinct non-zero counts of each cell ``(k, x)`` (and of each row total) and how many
    workers have them are kept:

    .. math::
        L_k = Q_k \log\Gamma(S_k) - \sum_{u} b_{ku} \log\Gamma(S_k + u)
        + \sum_x \Big[\sum_v c_{kxv} \log\Gamma(\alpha_{kx} + v)
        - P_{kx} \log\Gamma(\alpha_{kx})\Big],

    with :math:`c_{kxv} = \#\{j : n_{jkx} = v\}`, :math:`P_{kx} = \sum_{v>0} c_{kxv}`, and
    :math:`b, Q` the same for the totals :math:`N_{jk}`. With integer counts there are at most
    :math:`\min(J, \sqrt{2 n_{kx}})` distinct values per cell, so an evaluation costs
    O(K² · distinct) rather than O(J · K²); it is vectorised over any leading axes of α.
    """

    def __init__(self, counts: np.ndarray) -> None:
        n_workers, n_rows, n_cols = counts.shape
        cells, values, multiplicity = _distinct_values(counts.reshape(n_workers, -1))
        self.n_rows, self.n_cols = n_rows, n_cols
        self.cell_index, self.cell_values, self.cell_multiplicity = cells, values, multiplicity
        self.cell_segments = _RowSegments(cells // n_cols, n_rows)
        self.cell_present = np.bincount(cells, multiplicity, minlength=n_rows * n_cols)
        rows, totals, total_multiplicity = _distinct_values(counts.sum(axis=2))
        self.total_index, self.total_values = rows, totals
        self.total_multiplicity = total_multiplicity
        self.total_segments = _RowSegments(rows, n_rows)
        self.total_present = np.bincount(rows, total_multiplicity, minlength=n_rows)

    def log_marginal(self, alpha: np.ndarray) -> np.ndarray:
        """:math:`L_k(\alpha_k)` for ``alpha`` of shape (..., K, X); returns (..., K)."""
        from scipy.special import gammaln

        flat = alpha.reshape(*alpha.shape[:-2], -1)
        scale = alpha.sum(axis=-1)
        cells = gammaln(flat[..., self.cell_index] + self.cell_values) * self.cell_multiplicity
        totals = gammaln(scale[..., self.total_index] + self.total_values)
        terms = self.cell_segments.sum(cells)
        terms -= self.total_segments.sum(totals * self.total_multiplicity)
        terms += self.total_present * gammaln(scale)
        terms -= (self.cell_present * gammaln(flat)).reshape(alpha.shape).sum(axis=-1)
        return terms

    def log_posterior(
        self,
        coords: np.ndarray,
        scale_shape: float = 1.5,
        scale_min: float = 1.0,
        diagonal: float = 0.0,
    ) -> np.ndarray:
        r"""Unnormalised log posterior of the rows' coordinates ``(log s_k, z_k)`` (..., K, X):
        :func:`rows_hyperprior_log_density` plus :meth:`log_marginal` of
        :math:`\alpha_k = s_k\,\mathrm{softmax}(z_k, 0)`, one softmax for both; returns
        (..., K), :math:`-\infty` outside the prior's support."""
        log_scale = coords[..., 0]
        log_mean = _log_softmax(_mean_logits(coords))
        inside = log_scale >= np.log(scale_min)  # False for NaN
        log_scale = np.where(inside, log_scale, np.log(scale_min))  # keeps α finite
        alpha = np.exp(log_scale[..., None] + log_mean)
        density = self.log_marginal(alpha) - scale_shape * log_scale
        density += _mean_log_prior(log_mean, diagonal)
        return np.where(inside & (density == density), density, -np.inf)


def _distinct_values(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct non-zero values of each column of ``table`` (rows × columns): returns the column,
    value and multiplicity of every (column, value) pair, sorted by column then value."""
    rows, columns = np.nonzero(table)
    values = table[rows, columns]
    integers = values.astype(np.int64)
    if values.size and np.array_equal(integers, values) and integers.min() >= 0:
        span = int(integers.max()) + 1
        keys = columns * span + integers
        if table.shape[1] * span <= 8 * keys.size + 4096:  # counting beats sorting
            tally = np.bincount(keys, minlength=table.shape[1] * span)
            keys = np.flatnonzero(tally)
            multiplicity = tally[keys]
        else:
            keys, multiplicity = np.unique(keys, return_counts=True)
        return keys // span, (keys % span).astype(float), multiplicity.astype(float)
    order = np.lexsort((values, columns))
    columns, values = columns[order], values[order]
    new = np.ones(len(values), dtype=bool)
    new[1:] = (columns[1:] != columns[:-1]) | (values[1:] != values[:-1])
    starts = np.flatnonzero(new)
    multiplicity = np.diff(np.append(starts, len(values))).astype(float)
    return columns[starts], values[starts], multiplicity


class _RowSegments:
    """Sums over the last axis of entries sorted by row, one sum per row (0 for a row without
    entries): ``np.add.reduceat`` over the contiguous runs of each row."""

    def __init__(self, rows: np.ndarray, n_rows: int) -> None:
        self.n_rows = n_rows
        self.present, self.starts = np.unique(rows, return_index=True)

    def sum(self, entries: np.ndarray) -> np.ndarray:
        out = np.zeros((*entries.shape[:-1], self.n_rows))
        if self.starts.size:
            out[..., self.present] = np.add.reduceat(entries, self.starts, axis=-1)
        return out


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
