"""Log-space helpers shared by every model.

All probabilities are carried as logarithms inside the engines and exponentiated only at the
edge, when results are handed back to the user.

SciPy is imported by the functions that use it, not with this module: most models (and the
command line) need none of it.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "beta_binomial_rates",
    "log_normalize",
    "lean_logsumexp",
    "softmax_classes",
    "categorical_sample",
    "dirichlet_expected_log",
    "dirichlet_log_normalizer",
    "dirichlet_kl",
    "safe_log",
    "finite_sum",
    "gumbel_max_sample",
    "log_dirichlet_sample",
    "beta_interval",
    "beta_central_interval",
    "beta_hpd_interval",
    "beta_credible_interval",
    "dirichlet_marginal_summary",
]


def finite_sum(values: np.ndarray) -> float:
    """The sum of the finite entries (``log 0 = -inf`` terms of a log-prior left out)."""
    return float(values[np.isfinite(values)].sum())


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
    from scipy.special import digamma

    return digamma(concentration) - digamma(concentration.sum(axis=-1, keepdims=True))


def dirichlet_log_normalizer(concentration: np.ndarray) -> np.ndarray:
    """log B(a) = Σ log Γ(a_k) − log Γ(Σ a_k) along the last axis."""
    from scipy.special import gammaln

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
    return beta_central_interval(mean * concentration, (1 - mean) * concentration, level)


def dirichlet_marginal_summary(concentration: np.ndarray, level: float):
    """Mean, sd and central ``level`` interval of each cell of Dirichlet rows (last axis).

    Each cell of a Dirichlet(a) row is Beta(a_x, Σa − a_x)-distributed, so the intervals are exact.
    Returns ``(mean, sd, lower, upper, level)``.
    """
    total = concentration.sum(axis=-1, keepdims=True)
    rest = total - concentration
    mean = concentration / total
    sd = np.sqrt(mean * (1 - mean) / (total + 1))
    lower, upper = beta_central_interval(concentration, rest, level)
    return mean, sd, lower, upper, level


def beta_central_interval(a, b, level: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Equal-tailed ``level`` interval :math:`[F^{-1}(\tfrac{1-p}{2}), F^{-1}(\tfrac{1+p}{2})]`
    of Beta(a, b) (elementwise over broadcast ``a``, ``b``).

    It leaves mass :math:`(1-p)/2` on each side, so it never reaches 0 or 1, even when the
    density is highest there (e.g. Beta(n + 1, 1) after n successes in n trials).
    """
    from scipy import stats

    tail = (1 - level) / 2
    return stats.beta.ppf(tail, a, b), stats.beta.ppf(1 - tail, a, b)


def beta_hpd_interval(a, b, level: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Highest-posterior-density ``level`` interval of Beta(a, b) (elementwise over broadcast
    ``a``, ``b``): the shortest interval of mass ``level``, the set :math:`\{x : f(x) \ge c\}`
    of a unimodal density f.

    * :math:`a > 1, b > 1` (mode inside): :math:`[l, u]` with :math:`F(u) - F(l) = p` and
      :math:`f(l) = f(u)`. Writing :math:`l = F^{-1}(t)`, :math:`u = F^{-1}(t + p)`,
      :math:`g(t) = f(l) - f(u)` is :math:`-f(u) < 0` at :math:`t = 0` (:math:`f(0) = 0`) and
      :math:`f(l) > 0` at :math:`t = 1 - p` (:math:`f(1) = 0`), and changes sign once (negative
      while :math:`u` is left of the mode, positive once :math:`l` is right of it, increasing in
      between), so Brent's method finds the unique root.
    * :math:`a \ge 1 \ge b`, not both 1 (f non-decreasing, mode at 1):
      :math:`[F^{-1}(1 - p), 1]`.
    * :math:`a \le 1 \le b`, not both 1 (f non-increasing, mode at 0): :math:`[0, F^{-1}(p)]`.
    * :math:`a = b = 1` (uniform): every interval of length p is one; the central one is
      returned.
    * :math:`a < 1, b < 1` (U-shaped): the HPD set is two intervals, one at each end, not an
      interval: NaN.
    """
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    lower, upper = np.empty(a.shape), np.empty(a.shape)
    for index in np.ndindex(a.shape):
        lower[index], upper[index] = _beta_hpd_scalar(float(a[index]), float(b[index]), level)
    return lower, upper


def _beta_hpd_scalar(a: float, b: float, level: float) -> tuple[float, float]:
    """:func:`beta_hpd_interval` of one Beta(a, b)."""
    from scipy import optimize, stats

    dist = stats.beta(a, b)
    if a == 1 and b == 1:
        return (1 - level) / 2, (1 + level) / 2
    if a < 1 and b < 1:
        return np.nan, np.nan
    if a >= 1 and b <= 1:
        return float(dist.ppf(1 - level)), 1.0
    if a <= 1 and b >= 1:
        return 0.0, float(dist.ppf(level))

    def gap(t: float) -> float:
        return float(dist.pdf(dist.ppf(t)) - dist.pdf(dist.ppf(min(t + level, 1.0))))

    t = optimize.brentq(gap, 0.0, 1.0 - level, xtol=1e-14, rtol=1e-12)
    return float(dist.ppf(t)), float(dist.ppf(min(t + level, 1.0)))


def beta_credible_interval(a, b, level: float, kind: str = "hpd"):
    """The ``level`` credible interval of Beta(a, b) of ``kind`` ``"hpd"``
    (:func:`beta_hpd_interval`) or ``"central"`` (:func:`beta_central_interval`)."""
    intervals = {"hpd": beta_hpd_interval, "central": beta_central_interval}
    if kind not in intervals:
        raise ValueError(f"kind must be one of {sorted(intervals)}; got {kind!r}")
    return intervals[kind](a, b, level)


def beta_binomial_rates(events: np.ndarray, trials: np.ndarray) -> np.ndarray:
    r"""Each unit's posterior mean rate of an event (``events[j]`` of ``trials[j]``) under a
    beta prior fitted to all units (empirical Bayes, beta-binomial): units with few trials are
    pulled to the pooled rate, units with many keep their own.

    The prior ``Beta(κμ, κ(1 - μ))`` has the pooled mean ``μ = Σx / N`` (``N = Σn``) and
    ``κ = 1/ρ - 1`` from the intra-unit correlation ``ρ``, estimated by moments (Kleinman 1973,
    "Proportions with extraneous variance", JASA 68): with
    ``S = Σ_j n_j (x_j/n_j - μ)²`` over the ``J`` units with trials,

    .. math:: E[S] = μ(1 - μ)\,[(J - 1) + ρ\,(N - Σn_j^2/N - J + 1)],

    so ``ρ̂ = (S/(μ(1-μ)) - (J-1)) / (N - Σn²/N - J + 1)``, clipped to ``[10⁻⁶, 1 - 10⁻⁶]``
    (no spread beyond the binomial's: every unit at ``μ``). The posterior mean is
    ``(x_j + κμ) / (n_j + κ)``; a unit without trials gets ``μ``. No trials at all: NaN.
    """
    events = np.asarray(events, dtype=np.float64)
    trials = np.asarray(trials, dtype=np.float64)
    total = trials.sum()
    if total <= 0:
        return np.full(trials.shape, np.nan)
    mean = events.sum() / total
    if mean <= 0.0 or mean >= 1.0:
        return np.full(trials.shape, mean)
    seen = trials > 0
    n, x = trials[seen], events[seen]
    units = len(n)
    spread = float(np.sum(n * (x / n - mean) ** 2)) / (mean * (1.0 - mean))
    room = total - float(np.sum(n**2)) / total - (units - 1)
    rho = (spread - (units - 1)) / room if room > 0 else 0.0
    rho = float(np.clip(rho, 1e-6, 1.0 - 1e-6))
    strength = 1.0 / rho - 1.0
    return (events + strength * mean) / (trials + strength)
