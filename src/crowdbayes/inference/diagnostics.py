"""MCMC convergence diagnostics: rank-normalised split-R-hat, bulk and tail ESS.

All functions take ``draws`` of shape ``(n_chains, n_draws, *param_shape)`` and are vectorised over
the trailing parameter dimensions. The definitions follow

    Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and Bürkner, P.-C. (2021).
    Rank-normalization, folding, and localization: an improved R-hat for assessing convergence
    of MCMC. *Bayesian Analysis* 16(2), 667–718. https://doi.org/10.1214/20-BA1221

and the reference implementation in Stan (autocorrelations by FFT, Geyer's initial monotone
sequence). :func:`rhat_from_moments` gives the classic (non-split) Gelman–Rubin statistic for
quantities that are only tracked through per-chain running means and variances (see
:class:`crowdbayes.inference.OnlineMoments`).

Conventions shared by every function here:

* A parameter whose draws are all identical, or that has a non-finite draw, gets ``NaN``: the
  diagnostics are undefined for it (ArviZ returns the number of draws as the ESS of a constant
  parameter instead; Stan and the ``posterior`` R package return ``NA``, as here).
* Splitting a chain of odd length drops its middle draw, as in Stan.
* Split-R-hat is computed for a single chain too (its two halves are compared); ArviZ returns
  ``NaN`` for fewer than two chains.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = ["rhat", "ess_bulk", "ess_tail", "rhat_from_moments", "summarize"]

_MIN_DRAWS = 4
_TAIL_PROBS = (0.05, 0.95)
_BLOM_OFFSET = 3.0 / 8.0


# --------------------------------------------------------------------------------------------
# Input handling
# --------------------------------------------------------------------------------------------


def _as_draws(draws: ArrayLike, func: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """Validate ``draws`` and reshape it to ``(n_chains, n_draws, n_params)``."""
    arr = np.asarray(draws, dtype=float)
    if arr.ndim < 2:
        raise ValueError(
            f"{func}: draws must have shape (n_chains, n_draws, *param_shape), i.e. at least 2 "
            f"dimensions; got an array with shape {arr.shape} (ndim={arr.ndim}). For a single "
            "chain use draws[np.newaxis]."
        )
    n_chains, n_draws = arr.shape[:2]
    if n_chains < 1:
        raise ValueError(f"{func}: draws must contain at least 1 chain; got shape {arr.shape}.")
    if n_draws < _MIN_DRAWS:
        raise ValueError(
            f"{func}: need at least {_MIN_DRAWS} draws per chain; got n_draws={n_draws} "
            f"(draws shape {arr.shape})."
        )
    param_shape = arr.shape[2:]
    return arr.reshape(n_chains, n_draws, -1), param_shape


def _usable(x: np.ndarray) -> np.ndarray:
    """Boolean mask over parameters: all draws finite and not all equal."""
    usable = np.isfinite(x).all(axis=(0, 1))
    if usable.any():
        finite = x[:, :, usable]
        usable[usable] = np.ptp(finite.reshape(-1, finite.shape[2]), axis=0) > 0
    return usable


def _per_param(x: np.ndarray, param_shape: tuple[int, ...], func, *args) -> np.ndarray | float:
    """Apply ``func`` to the usable parameters of ``x``, NaN elsewhere; reshape the result."""
    out = np.full(x.shape[2], np.nan)
    usable = _usable(x)
    if usable.any():
        out[usable] = func(x[:, :, usable], *args)
    out = out.reshape(param_shape)
    return float(out) if out.ndim == 0 else out


def _split_chains(x: np.ndarray) -> np.ndarray:
    """``(M, N, P)`` -> ``(2M, N // 2, P)``: first and last halves (middle draw dropped if odd)."""
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)


def _rank_normalize(x: np.ndarray) -> np.ndarray:
    """Normal scores of the pooled ranks: ``Φ⁻¹((r − 3/8) / (S + 1/4))``, ties get average ranks."""
    from scipy import special, stats

    n_chains, n_draws, n_params = x.shape
    size = n_chains * n_draws
    ranks = stats.rankdata(x.reshape(size, n_params), method="average", axis=0)
    z = special.ndtri((ranks - _BLOM_OFFSET) / (size - 2.0 * _BLOM_OFFSET + 1.0))
    return z.reshape(x.shape)


# --------------------------------------------------------------------------------------------
# R-hat
# --------------------------------------------------------------------------------------------


def _psrf(chain_means: np.ndarray, chain_variances: np.ndarray, n_draws: int) -> np.ndarray:
    """``sqrt(var⁺ / W)`` from ``(M, P)`` chain means and (n − 1)-denominator variances."""
    within = chain_variances.mean(axis=0)
    between_over_n = chain_means.var(axis=0, ddof=1)  # B / n
    var_plus = (n_draws - 1.0) / n_draws * within + between_over_n
    out = np.full(within.shape, np.nan)
    positive = within > 0
    out[positive] = np.sqrt(var_plus[positive] / within[positive])
    # No within-chain spread but different chain means: the chains have not mixed at all.
    out[~positive & (var_plus > 0)] = np.inf
    return out


def _basic_rhat(x: np.ndarray) -> np.ndarray:
    return _psrf(x.mean(axis=1), x.var(axis=1, ddof=1), x.shape[1])


def _rank_rhat(x: np.ndarray) -> np.ndarray:
    split = _split_chains(x)
    bulk = _basic_rhat(_rank_normalize(split))
    folded = np.abs(split - np.median(split.reshape(-1, split.shape[2]), axis=0))
    tail = _basic_rhat(_rank_normalize(folded))
    # fmax: if the folded draws are constant (e.g. draws symmetric on two values) the tail
    # R-hat is undefined and the bulk R-hat is reported.
    return np.fmax(bulk, tail)


def rhat(draws: ArrayLike) -> np.ndarray | float:
    r"""Rank-normalised split-R-hat (Vehtari et al., 2021).

    Each chain is split in half (``M`` chains of ``N`` draws become ``2M`` chains of ``N // 2``),
    the pooled draws are replaced by their normal scores
    :math:`z = \Phi^{-1}((r - 3/8) / (S + 1/4))` (``r`` the average rank among all ``S`` draws),
    and the classic statistic is computed on them:

    .. math::

        W = \frac{1}{M}\sum_m s_m^2, \quad
        \frac{B}{N} = \operatorname{Var}_m(\bar z_m), \quad
        \widehat{\operatorname{var}}^+ = \frac{N-1}{N} W + \frac{B}{N}, \quad
        \hat R = \sqrt{\widehat{\operatorname{var}}^+ / W}.

    This *bulk* R-hat is repeated on the folded draws :math:`|\theta - \operatorname{median}|`
    (*tail* R-hat), and the larger of the two is returned. Values above 1.01 indicate that the
    chains have not mixed.

    Parameters
    ----------
    draws : array_like, shape (n_chains, n_draws, \*param_shape)
        Posterior draws; at least 4 per chain.

    Returns
    -------
    ndarray of shape ``param_shape``, or float for a scalar parameter
        ``NaN`` for a parameter that is constant or has non-finite draws; ``inf`` if every
        split chain is constant but they differ from each other.

    Notes
    -----
    The median used for folding is that of the split-chain draws (the draws actually used; it
    differs from the median of all draws only when ``n_draws`` is odd), as in ArviZ.

    References
    ----------
    Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021). Rank-normalization, folding, and
    localization: an improved R-hat for assessing convergence of MCMC. Bayesian Analysis 16(2).
    """
    x, param_shape = _as_draws(draws, "rhat")
    return _per_param(x, param_shape, _rank_rhat)


def rhat_from_moments(
    chain_means: ArrayLike, chain_variances: ArrayLike, n_draws: int
) -> np.ndarray | float:
    r"""Classic Gelman–Rubin potential scale reduction from per-chain moments only.

    For quantities tracked by online accumulators that never store draws. With ``M`` chains of
    ``n`` draws, chain means :math:`\bar\theta_m` and sample variances :math:`s_m^2` (denominator
    ``n − 1``):

    .. math::

        W = \frac{1}{M}\sum_m s_m^2, \quad
        B = \frac{n}{M-1}\sum_m (\bar\theta_m - \bar\theta)^2, \quad
        \hat R = \sqrt{\frac{(n-1)W/n + B/n}{W}}.

    This is the non-split, non-rank-normalised statistic (Gelman et al., *Bayesian Data
    Analysis*, 3rd ed., §11.4); it cannot detect non-stationarity within a chain or differences in
    the tails, so prefer :func:`rhat` when draws are available.

    Parameters
    ----------
    chain_means, chain_variances : array_like, shape (n_chains, \*param_shape)
        Per-chain means and ``n − 1``-denominator variances; at least 2 chains.
    n_draws : int
        Number of draws per chain (at least 2).

    Returns
    -------
    ndarray of shape ``param_shape``, or float for a scalar parameter
        ``NaN`` where every chain has zero variance and the same mean (or inputs are not
        finite); ``inf`` where chains have zero variance but different means.

    References
    ----------
    Gelman, A. and Rubin, D. B. (1992). Inference from iterative simulation using multiple
    sequences. Statistical Science 7(4), 457–472.
    """
    means = np.asarray(chain_means, dtype=float)
    variances = np.asarray(chain_variances, dtype=float)
    if means.ndim < 1 or means.shape != variances.shape:
        raise ValueError(
            "rhat_from_moments: chain_means and chain_variances must both have shape "
            f"(n_chains, *param_shape); got {means.shape} and {variances.shape}."
        )
    if means.shape[0] < 2:
        raise ValueError(
            "rhat_from_moments: need at least 2 chains to compare between- and within-chain "
            f"variance; got chain_means with shape {means.shape}."
        )
    if isinstance(n_draws, bool) or int(n_draws) != n_draws or n_draws < 2:
        raise ValueError(f"rhat_from_moments: n_draws must be an integer >= 2; got {n_draws!r}.")
    if np.any(variances < 0):
        raise ValueError("rhat_from_moments: chain_variances must be non-negative.")
    param_shape = means.shape[1:]
    means = means.reshape(means.shape[0], -1)
    variances = variances.reshape(variances.shape[0], -1)
    out = np.full(means.shape[1], np.nan)
    finite = np.isfinite(means).all(axis=0) & np.isfinite(variances).all(axis=0)
    if finite.any():
        out[finite] = _psrf(means[:, finite], variances[:, finite], int(n_draws))
    out = out.reshape(param_shape)
    return float(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------------------------
# Effective sample size
# --------------------------------------------------------------------------------------------


def _autocovariance(x: np.ndarray) -> np.ndarray:
    """Biased autocovariance ``(1/N) Σ_i (x_i − x̄)(x_{i+t} − x̄)`` along axis 1, by FFT."""
    from scipy import fft

    n = x.shape[1]
    centred = x - x.mean(axis=1, keepdims=True)
    size = fft.next_fast_len(2 * n, real=True)
    spectrum = fft.rfft(centred, n=size, axis=1)
    return fft.irfft(spectrum * np.conj(spectrum), n=size, axis=1)[:, :n] / n


def _ess(x: np.ndarray) -> np.ndarray:
    """Stan's ESS of ``(M, N, P)`` (already split) chains; ``NaN`` where the draws are constant."""
    n_chains, n_draws, n_params = x.shape
    total = n_chains * n_draws
    acov = _autocovariance(x).mean(axis=0)  # (N, P), averaged over chains
    within = acov[0] * n_draws / (n_draws - 1.0)  # W: mean of n−1 variances
    var_plus = acov[0] + x.mean(axis=1).var(axis=0, ddof=1)
    out = np.full(n_params, np.nan)
    ok = var_plus > 0
    if not ok.any():
        return out
    rho = 1.0 - (within[ok] - acov[:, ok]) / var_plus[ok]  # (N, P'), rho[0] == 1
    rho[0] = 1.0

    # Pairs Γ_k = ρ_{2k} + ρ_{2k+1}. Stan evaluates pairs k = 1, 2, ... while 2k − 1 < N − 3
    # and stops at the first non-positive pair (Geyer's initial positive sequence); it sums the
    # K pairs before that one, made non-increasing (initial monotone sequence), plus ρ_{2K} when
    # positive (or when pair K was itself kept).
    n_pairs = 1 + len(range(1, n_draws - 3, 2))
    gamma = rho[0 : 2 * n_pairs : 2] + rho[1 : 2 * n_pairs : 2]  # (n_pairs, P')
    stop = gamma <= 0
    k_stop = np.where(stop.any(axis=0), stop.argmax(axis=0), n_pairs - 1)
    monotone = np.minimum.accumulate(gamma, axis=0)
    before = np.arange(n_pairs)[:, None] < k_stop
    cols = np.arange(rho.shape[1])
    rho_even = rho[2 * k_stop, cols]
    last = np.where((rho_even > 0) | (gamma[k_stop, cols] >= 0), rho_even, 0.0)
    tau = -1.0 + 2.0 * np.where(before, monotone, 0.0).sum(axis=0) + last
    tau = np.maximum(tau, 1.0 / np.log10(total))
    out[ok] = total / tau
    return out


def _ess_bulk(x: np.ndarray) -> np.ndarray:
    return _ess(_rank_normalize(_split_chains(x)))


def _ess_tail(x: np.ndarray) -> np.ndarray:
    quantiles = np.quantile(x.reshape(-1, x.shape[2]), _TAIL_PROBS, axis=0)
    low = _ess(_split_chains((x <= quantiles[0]).astype(float)))
    high = _ess(_split_chains((x <= quantiles[1]).astype(float)))
    # A constant indicator (heavy ties, or the only draws past the quantile being the middle
    # draws dropped by splitting) has zero variance: its mean is known exactly, and its ESS is
    # taken to be the number of split draws, as in ArviZ. x is finite here, so NaN means constant.
    n_split = 2 * x.shape[0] * (x.shape[1] // 2)
    return np.minimum(np.nan_to_num(low, nan=n_split), np.nan_to_num(high, nan=n_split))


def ess_bulk(draws: ArrayLike) -> np.ndarray | float:
    r"""Bulk effective sample size (Vehtari et al., 2021).

    The ESS of the rank-normalised split chains (see :func:`rhat`), estimated as in Stan: with
    biased per-chain autocovariances :math:`\hat\gamma_{t,m}` computed by FFT,

    .. math::

        \hat\rho_t = 1 - \frac{W - \frac{1}{M}\sum_m \hat\gamma_{t,m}}
        {\widehat{\operatorname{var}}^+}, \qquad
        \hat\tau = -1 + 2\sum_{t=0}^{2K-1}\hat\rho_t + \hat\rho_{2K}^{+}, \qquad
        \mathrm{ESS} = \frac{MN}{\max(\hat\tau,\, 1/\log_{10}(MN))},

    where the sum is truncated at the first non-positive pair
    :math:`\hat\rho_{2k} + \hat\rho_{2k+1}` and the pair sums are made non-increasing (Geyer's
    initial monotone sequence). Bulk ESS measures the efficiency of location summaries (mean,
    median); it should exceed about ``100 * n_chains``.

    Parameters
    ----------
    draws : array_like, shape (n_chains, n_draws, \*param_shape)
        Posterior draws; at least 4 per chain.

    Returns
    -------
    ndarray of shape ``param_shape``, or float for a scalar parameter
        ``NaN`` for a parameter that is constant or has non-finite draws.

    References
    ----------
    Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), Bayesian Analysis 16(2);
    Geyer, C. J. (1992). Practical Markov chain Monte Carlo. Statistical Science 7(4).
    """
    x, param_shape = _as_draws(draws, "ess_bulk")
    return _per_param(x, param_shape, _ess_bulk)


def ess_tail(draws: ArrayLike) -> np.ndarray | float:
    r"""Tail effective sample size (Vehtari et al., 2021).

    The minimum of the ESS of the indicators :math:`I(\theta \le \hat q_{0.05})` and
    :math:`I(\theta \le \hat q_{0.95})` over the split chains (no rank normalisation), each
    computed as in :func:`ess_bulk`. Quantiles are NumPy's default (linear, Hyndman–Fan type 7)
    over all draws. Tail ESS measures the efficiency of the 5% and 95% quantile estimates.

    Parameters
    ----------
    draws : array_like, shape (n_chains, n_draws, \*param_shape)
        Posterior draws; at least 4 per chain.

    Returns
    -------
    ndarray of shape ``param_shape``, or float for a scalar parameter
        ``NaN`` for a parameter that is constant or has non-finite draws.

    Notes
    -----
    If a quantile indicator is constant over the split chains (heavily tied draws, or the only
    draws beyond the quantile are middle draws dropped by splitting), its ESS is taken to be the
    number of split draws, as in ArviZ (the ``posterior`` R package returns ``NA`` instead).

    References
    ----------
    Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), Bayesian Analysis 16(2).
    """
    x, param_shape = _as_draws(draws, "ess_tail")
    return _per_param(x, param_shape, _ess_tail)


# --------------------------------------------------------------------------------------------
# Summary table
# --------------------------------------------------------------------------------------------


def _default_names(param_shape: tuple[int, ...], prefix: str) -> list[str]:
    if not param_shape:
        return [prefix]
    return [f"{prefix}[{','.join(map(str, idx))}]" for idx in np.ndindex(*param_shape)]


def summarize(draws: ArrayLike, names: Sequence[str] | str | None = None) -> pd.DataFrame:
    r"""Posterior summary and convergence diagnostics, one row per (flattened) parameter.

    Parameters
    ----------
    draws : array_like, shape (n_chains, n_draws, \*param_shape)
        Posterior draws; at least 4 per chain. Parameters are flattened in C order.
    names : sequence of str, or str, optional
        Row labels, one per flattened parameter; a single string is used as a prefix
        (``"beta"`` gives ``beta[0]``, ``beta[1]``, ...). Default prefix ``"theta"``.

    Returns
    -------
    pandas.DataFrame
        Columns ``mean``, ``sd`` (n − 1 denominator), ``q05``, ``q95`` (linear quantiles over
        all draws), ``rhat`` (:func:`rhat`), ``ess_bulk`` (:func:`ess_bulk`) and ``ess_tail``
        (:func:`ess_tail`).
    """
    x, param_shape = _as_draws(draws, "summarize")
    n_params = x.shape[2]
    if names is None or isinstance(names, str):
        labels = _default_names(param_shape, "theta" if names is None else names)
    else:
        labels = [str(name) for name in names]
        if len(labels) != n_params:
            raise ValueError(
                f"summarize: got {len(labels)} names for {n_params} parameters "
                f"(draws shape {(*x.shape[:2], *param_shape)})."
            )
    pooled = x.reshape(-1, n_params)
    quantiles = np.quantile(pooled, [0.05, 0.95], axis=0)
    flat_shape = (n_params,)
    return pd.DataFrame(
        {
            "mean": pooled.mean(axis=0),
            "sd": pooled.std(axis=0, ddof=1),
            "q05": quantiles[0],
            "q95": quantiles[1],
            "rhat": np.atleast_1d(_per_param(x, flat_shape, _rank_rhat)),
            "ess_bulk": np.atleast_1d(_per_param(x, flat_shape, _ess_bulk)),
            "ess_tail": np.atleast_1d(_per_param(x, flat_shape, _ess_tail)),
        },
        index=pd.Index(labels, name="parameter"),
    )
