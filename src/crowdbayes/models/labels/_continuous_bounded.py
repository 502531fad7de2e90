r"""Numbers on a bounded scale: answers at a bound are censored or "inflated", fitted by EM.

On a scale :math:`[L, U]` (a rating slider, a percentage) an answer at a bound says less than
one inside: the worker may have *perceived* a value beyond the bound (censoring: the Tobit
model, Tobin 1958), or answered the bound whatever the truth (a lazy or "none" answer:
inflation, Lambert 1992's zero-inflated model). The Gaussian bias–noise model
(:mod:`crowdbayes.annotators.continuous`) reads both as exact answers and pulls every task
towards the bound.

Model (standardised units; task :math:`i`, worker :math:`j`, answer :math:`n`): perceived value
:math:`y_n = \mu_i + b_j + \varepsilon_n/\sqrt{\tau_j}` with Gaussian or Student-t
:math:`\varepsilon_n` (``df``; t inside the scale only, the censored tails are Gaussian); with
probability :math:`\pi^L_j` (:math:`\pi^U_j`) the worker reports :math:`L` (:math:`U`)
regardless, otherwise the perceived value clipped to :math:`[L, U]`. So

.. math::
    p(x_n = L) = \pi^L_j + (1 - \pi^L_j - \pi^U_j)\,\Phi(z^L_n),\quad
    p(x_n = U) = \pi^U_j + (1 - \pi^L_j - \pi^U_j)\,\Phi(-z^U_n),\quad
    p(x_n) = (1 - \pi^L_j - \pi^U_j)\,f(x_n) \text{ inside},

:math:`z^B_n = \sqrt{\tau_j}(B - \mu_i - b_j)`. Priors: :math:`\mu_i \sim N(0, 1/p_0)`,
:math:`b_j \sim N(0, 1/p_b)` (:math:`p_b` learned, as in the VB model),
:math:`\tau_j \sim \mathrm{Gamma}(a_0, r_0)` and
:math:`(\pi^L_j, \pi^U_j, 1 - \pi^L_j - \pi^U_j) \sim \mathrm{Dirichlet}(1, 1, \beta_\pi)`
(a bound only where the data have one: ``lower``/``upper`` None switches it off).

EM (Dempster et al. 1977) with latent component and perceived value: the E-step gives each
bound answer its inflation responsibility :math:`\rho_n` and, if censored, the truncated-normal
moments :math:`E[y_n]`, :math:`\mathrm{Var}[y_n]` (Johnson, Kotz & Balakrishnan 1994, ch. 13);
each inside answer its t weight :math:`\lambda_n = (\nu+1)/(\nu + \tau_j r_n^2)`. The M-step is
one pass of weighted least squares for :math:`\mu`, :math:`b` (weights
:math:`w_n = (1-\rho_n)\lambda_n\tau_j`), the closed-form shift along the direction the answers
cannot see, then :math:`\tau_j`, :math:`\pi_j` in closed form (an ECM, Meng & Rubin 1993);
:math:`p_b` is updated as in the VB model, :math:`W/\sum_j (c_j^2 + 1/Q_j)`. The log-posterior
(:func:`log_posterior`) is monitored for convergence; it is not guaranteed to rise at every
sweep, because the noise update counts REML-style degrees of freedom.

The noise precision uses REML-style degrees of freedom (an answer that alone fixes its task's
value says nothing about the noise; :func:`bounded_sweep`), and each task value lies on the
scale (the M-step clips it). The reported task values are not the EM point estimates but each
task's posterior given the fitted workers, on a grid over the scale
(:func:`task_posterior_grid`), under a prior for the values learned from all tasks
(:func:`_learned_prior_posterior`): with answers that may be lazy ones at a bound the posterior
is skewed or two-humped, which no normal approximation captures, and the interval must say so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr, ndtr

__all__ = [
    "BOUNDED_TOL",
    "BoundedPrior",
    "BoundedState",
    "ScaleBounds",
    "answer_weights",
    "bounded_start",
    "bounded_sweep",
    "detect_bounds",
    "log_posterior",
    "task_posterior_grid",
]

_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)
#: the learned prior's smoothing: a Gaussian kernel of s.d. SMOOTH times the grid's span at
#: each EM sweep (Silverman et al. 1990's EMS) and a FLAT share of a flat prior; chosen leave one
#: scenario out (benchmarks/values/results/values_defaults.md)
SMOOTH, FLAT = 0.005, 0.2
#: the smallest relative change of the log-posterior that counts as progress (EM creeps
#: geometrically where a worker's lazy share heads to 0; the task values stop moving first)
BOUNDED_TOL = 1e-6
#: the biases' prior s.d. is at least 1% of the answers' s.d.
_MAX_BIAS_PRECISION = 1e4


@dataclass(frozen=True)
class BoundedPrior:
    """Priors and bounds of the bounded model (standardised units; module docstring)."""

    lower: float | None
    upper: float | None
    df: float | None = None
    value_precision: float = 0.01
    noise_shape: float = 2.0
    noise_rate: float = 0.1
    inflation_b: float = 4.0
    #: learn the biases' prior precision (else keep the state's start value)
    learn_bias_precision: bool = True


@dataclass
class BoundedState:
    """Point estimates: per task ``m``, per worker ``c`` (bias), ``tau``, ``low_share``,
    ``high_share``, and the biases' prior precision."""

    m: np.ndarray
    c: np.ndarray
    tau: np.ndarray
    low_share: np.ndarray
    high_share: np.ndarray
    bias_precision: float = 1.0
    #: each bias's precision given the rest (its Laplace precision), set by a sweep
    Q: np.ndarray | None = None
    #: each worker's answers that inform its noise (REML degrees of freedom), set by a sweep
    n_eff: np.ndarray | None = None


def _at_bounds(x: np.ndarray, prior: BoundedPrior) -> tuple[np.ndarray, np.ndarray]:
    low = np.zeros(len(x), bool) if prior.lower is None else x <= prior.lower
    high = np.zeros(len(x), bool) if prior.upper is None else x >= prior.upper
    return low, high


def _mills(z: np.ndarray) -> np.ndarray:
    """:math:`\\phi(z)/\\Phi(z)`, stable for very negative z."""
    return np.exp(-0.5 * z * z - _LOG_SQRT_2PI - log_ndtr(z))


def bounded_start(
    tasks, workers, x, n_tasks, n_workers, prior: BoundedPrior, bias_precision: float = 1.0
) -> BoundedState:
    """Task means, no bias, each worker's spread around the task means, small shares."""
    counts = np.bincount(tasks, minlength=n_tasks)
    m = np.bincount(tasks, x, n_tasks) / np.maximum(counts, 1)
    n_j = np.bincount(workers, minlength=n_workers)
    residual = np.bincount(workers, (x - m[tasks]) ** 2, n_workers)
    tau = (prior.noise_shape - 1 + 0.5 * n_j + 1) / (prior.noise_rate + 0.5 * residual)
    share = lambda on: np.full(n_workers, 0.05 if on is not None else 0.0)  # noqa: E731
    return BoundedState(
        m, np.zeros(n_workers), tau, share(prior.lower), share(prior.upper), bias_precision
    )


def _components(state: BoundedState, tasks, workers, x, prior: BoundedPrior):
    """The E-step: per answer (imputed perceived value, its variance, weight of the noise
    model, inflation responsibility) and the masks of the answers at each bound."""
    low, high = _at_bounds(x, prior)
    mean = state.m[tasks] + state.c[workers]
    sd = 1 / np.sqrt(state.tau[workers])
    keep = 1 - state.low_share - state.high_share
    y, var = x.astype(float).copy(), np.zeros(len(x))
    rho = np.zeros(len(x))
    scale = np.ones(len(x))
    for mask, bound, share, sign in (
        (low, prior.lower, state.low_share, 1.0),
        (high, prior.upper, state.high_share, -1.0),
    ):
        if not mask.any():
            continue
        z = sign * (bound - mean[mask]) / sd[mask]  # the censored side is Φ(z)
        w = workers[mask]
        censored = keep[w] * ndtr(z)
        rho[mask] = share[w] / np.maximum(share[w] + censored, 1e-300)
        ratio = _mills(z)
        y[mask] = mean[mask] - sign * sd[mask] * ratio
        var[mask] = sd[mask] ** 2 * np.clip(1 - z * ratio - ratio**2, 1e-12, 1)
    inside = ~(low | high)
    if prior.df is not None:
        r2 = state.tau[workers[inside]] * (x[inside] - mean[inside]) ** 2
        scale[inside] = (prior.df + 1) / (prior.df + r2)
    return y, var, scale, rho, low, high


def answer_weights(state: BoundedState, tasks, workers, x, prior: BoundedPrior) -> np.ndarray:
    r"""Each answer's weight in the fit, :math:`(1-\rho_n)\lambda_n`: near 0 for an answer at
    a bound that is probably a lazy one, or an outlier under Student-t noise."""
    _, _, scale, rho, _, _ = _components(state, tasks, workers, x, prior)
    return (1 - rho) * scale


def bounded_sweep(state: BoundedState, tasks, workers, x, prior: BoundedPrior) -> BoundedState:
    """One ECM sweep (module docstring), in place."""
    n_tasks, n_workers = len(state.m), len(state.c)
    y, var, scale, rho, low, high = _components(state, tasks, workers, x, prior)
    w = (1 - rho) * scale * state.tau[workers]
    precision = prior.value_precision + np.bincount(tasks, w, n_tasks)
    state.m = np.bincount(tasks, w * (y - state.c[workers]), n_tasks) / precision
    q = state.bias_precision + np.bincount(workers, w, n_workers)
    state.c = np.bincount(workers, w * (y - state.m[tasks]), n_workers) / q
    state.Q = q
    shift = (state.bias_precision * state.c.sum() - prior.value_precision * state.m.sum()) / (
        prior.value_precision * n_tasks + state.bias_precision * n_workers
    )
    state.m, state.c = state.m + shift, state.c - shift
    # the true values lie on the scale: the constrained maximum of a quadratic in one task's
    # value is the clipped one (else a task answered only at a bound drifts far beyond it and
    # every lazy answer there reads as censored)
    state.m = np.clip(
        state.m,
        -np.inf if prior.lower is None else prior.lower,
        np.inf if prior.upper is None else prior.upper,
    )
    # (capped: when the data show no bias the update creeps towards infinity by one data
    # precision per sweep, the slow EM approach to a boundary maximum)
    if prior.learn_bias_precision:
        learned = n_workers / float(np.sum(state.c**2 + 1 / q))
        state.bias_precision = min(learned, _MAX_BIAS_PRECISION)
    # the perceived values' spread (re-imputed at the new centre)
    y, var, scale, rho, low, high = _components(state, tasks, workers, x, prior)
    # REML-style degrees of freedom (Patterson & Thompson 1971): an answer that alone fixes its
    # task's value (leverage w/P near 1) or its worker's bias (w/Q) says nothing about the
    # noise, so each answer counts 1 − w/P − w/Q; plugging in values fitted to three answers
    # would otherwise shrink the noise, and adding their posterior variance instead (as mean-
    # field VB does) inflates it where the answers are probably lazy.
    w = (1 - rho) * scale * state.tau[workers]
    leverage = w / precision[tasks] + w / q[workers]
    residual = (1 - rho) * (scale * (y - state.m[tasks] - state.c[workers]) ** 2 + var)
    n_eff = np.bincount(workers, (1 - rho) * np.clip(1 - leverage, 0.0, 1.0), n_workers)
    state.n_eff = n_eff
    state.tau = (prior.noise_shape - 1 + 0.5 * n_eff) / (
        prior.noise_rate + 0.5 * np.bincount(workers, residual, n_workers)
    )
    n_j = np.bincount(workers, minlength=n_workers)
    denominator = n_j + prior.inflation_b - 1
    if prior.lower is not None:
        state.low_share = np.bincount(workers, rho * low, n_workers) / denominator
    if prior.upper is not None:
        state.high_share = np.bincount(workers, rho * high, n_workers) / denominator
    return state


def answer_log_likelihood(x, mean, tau, low_share, high_share, prior: BoundedPrior):
    """Log-likelihood of answers ``x`` given their perceived values' centre ``mean`` and
    precision ``tau`` and the workers' inflation shares (module docstring). The arguments
    broadcast to a common shape whose first axis is the answers (answers × grid points in
    :func:`task_posterior_grid`); each answer's own formula is evaluated on its rows only."""
    arrays = [np.asarray(a, float) for a in (x, mean, tau, low_share, high_share)]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    answers = arrays[0].reshape(len(arrays[0]), -1)[:, 0]
    low = np.zeros(len(answers), bool) if prior.lower is None else answers <= prior.lower
    high = np.zeros(len(answers), bool) if prior.upper is None else answers >= prior.upper
    out = np.empty(shape)
    for rows, bound, sign in (
        (~(low | high), None, 0.0),
        (low, prior.lower, 1.0),
        (high, prior.upper, -1.0),
    ):
        if not rows.any():
            continue
        # index the answers' rows before broadcasting (a grid is not copied five times)
        x_, mean_, tau_, low_, high_ = (a[rows] if a.ndim else a for a in arrays)
        keep = 1 - low_ - high_
        if bound is None:
            out[rows] = _inside_log_density(x_, mean_, tau_, prior.df) + np.log(keep)
            continue
        share = low_ if sign > 0 else high_
        z = sign * np.sqrt(tau_) * (bound - mean_)
        out[rows] = np.logaddexp(np.log(np.maximum(share, 1e-300)), np.log(keep) + log_ndtr(z))
    return out


def _inside_log_density(x, mean, tau, df: float | None) -> np.ndarray:
    """Log-density of answers inside the scale: normal, or Student-t with ``df``, of precision
    ``tau`` around ``mean``."""
    r2 = tau * (x - mean) ** 2
    if df is None:
        return -0.5 * r2 - _LOG_SQRT_2PI + 0.5 * np.log(tau)
    from scipy.special import gammaln

    constant = gammaln(0.5 * (df + 1)) - gammaln(0.5 * df) - 0.5 * np.log(df * np.pi)
    return constant - 0.5 * (df + 1) * np.log1p(r2 / df) + 0.5 * np.log(tau)


def _log_likelihood(state: BoundedState, tasks, workers, x, prior: BoundedPrior) -> np.ndarray:
    return answer_log_likelihood(
        x,
        state.m[tasks] + state.c[workers],
        state.tau[workers],
        state.low_share[workers],
        state.high_share[workers],
        prior,
    )


def _learned_prior_posterior(log_likelihood: np.ndarray, sweeps: int = 200) -> np.ndarray:
    r"""Posteriors (tasks × grid) under the task values' prior :math:`g` learned from all tasks
    (the nonparametric maximum-likelihood prior on the grid, Kiefer & Wolfowitz 1956, by its EM
    :math:`g \leftarrow \frac1T\sum_i p(\mu_i \mid x_i, g)`, Laird 1978; Efron 2016's
    g-modelling), smoothed at every sweep (:data:`SMOOTH`) and mixed with a share :data:`FLAT`
    of a flat prior so that no grid point is ruled out and the posteriors are not spiky. A
    task answered only at a bound is then placed where such tasks' values usually are, not
    spread evenly over the scale."""
    n_grid = log_likelihood.shape[1]
    likelihood = np.exp(log_likelihood - log_likelihood.max(axis=1, keepdims=True))
    smooth, flat = SMOOTH, FLAT
    g = np.full(n_grid, 1.0 / n_grid)
    steps = smooth * (n_grid - 1)  # the kernel's s.d. in grid steps
    offsets = np.arange(-np.ceil(3 * steps), np.ceil(3 * steps) + 1)
    kernel = np.exp(-0.5 * (offsets / max(steps, 1e-9)) ** 2)
    kernel /= kernel.sum()
    for _ in range(sweeps):
        joint = likelihood * g
        posterior = joint / joint.sum(axis=1, keepdims=True)
        new = np.convolve(posterior.mean(axis=0), kernel, mode="same")
        new = (1 - flat) * new / new.sum() + flat / n_grid
        if np.abs(new - g).max() < 1e-7:
            g = new
            break
        g = new
    joint = likelihood * g
    return joint / joint.sum(axis=1, keepdims=True)


def task_posterior_grid(
    state: BoundedState,
    tasks,
    workers,
    x,
    prior: BoundedPrior,
    bias_variance: np.ndarray,
    level: float,
    n_grid: int = 201,
):
    r"""Each task value's posterior given the workers, on a grid: :math:`p(\mu_i \mid x)
    \propto N(\mu_i; 0, 1/p_0)\prod_n p(x_n \mid \mu_i)` over ``n_grid`` points of the
    scale (beyond the answers by four noise s.d. on an open side), each worker's bias
    integrated out as extra noise (:math:`1/\tau_j + \mathrm{Var}\,b_j`, exact for the
    Gaussian and censored parts). Exact where the Laplace approximation fails: a task whose
    answers may be lazy ones at a bound has a skewed, even two-humped, posterior. Returns the
    posterior mean, s.d. and central ``level`` interval per task."""
    from scipy import sparse

    noise = 1 / np.sqrt(state.tau.min())
    low = x.min() - 4 * noise if prior.lower is None else prior.lower
    high = x.max() + 4 * noise if prior.upper is None else prior.upper
    grid = np.linspace(low, high, n_grid)
    tau = 1 / (1 / state.tau[workers] + bias_variance[workers])
    n_tasks = len(state.m)
    log_post = np.zeros((n_tasks, n_grid))
    incidence = sparse.csr_matrix(
        (np.ones(len(x)), (tasks, np.arange(len(x)))), shape=(n_tasks, len(x))
    )
    chunk = max(1, 2**22 // n_grid)
    for begin in range(0, len(x), chunk):
        part = slice(begin, begin + chunk)
        answer = answer_log_likelihood(
            x[part, None],
            grid[None, :] + state.c[workers[part], None],
            tau[part, None],
            state.low_share[workers[part], None],
            state.high_share[workers[part], None],
            prior,
        )
        log_post += incidence[:, part] @ answer
    weight = _learned_prior_posterior(log_post)
    mean = weight @ grid
    sd = np.sqrt(np.clip(weight @ grid**2 - mean**2, 0.0, None))
    cumulative = np.cumsum(weight, axis=1)
    tail = (1 - level) / 2
    lower = grid[np.argmax(cumulative >= tail, axis=1)]
    upper = grid[np.argmax(cumulative >= 1 - tail, axis=1)]
    return mean, sd, lower, upper


def log_posterior(state: BoundedState, tasks, workers, x, prior: BoundedPrior) -> float:
    """Log-likelihood of the answers plus the log-priors (up to constants) at ``state``."""
    total = float(_log_likelihood(state, tasks, workers, x, prior).sum())
    total -= 0.5 * prior.value_precision * float(np.sum(state.m**2))
    total += 0.5 * len(state.c) * np.log(state.bias_precision)
    total -= 0.5 * state.bias_precision * float(np.sum(state.c**2))
    total += float(
        np.sum((prior.noise_shape - 1) * np.log(state.tau) - prior.noise_rate * state.tau)
    )
    if prior.lower is not None or prior.upper is not None:
        keep = 1 - state.low_share - state.high_share
        total += (prior.inflation_b - 1) * float(np.sum(np.log(keep)))
    return total


def detect_bounds(x: np.ndarray, share: float = 0.02, least: int = 3):
    """``(lower, upper)``: the smallest (largest) answer when at least ``share`` of the answers,
    and ``least`` of them, equal it exactly, else None. Numbers read off a continuous scale
    almost never tie; a pile at the extreme answer is a bound."""
    x = np.asarray(x, float)
    found = []
    for extreme in (x.min(), x.max()):
        count = int(np.sum(x == extreme))
        found.append(float(extreme) if count >= max(least, share * len(x)) else None)
    if found[0] is not None and found[0] == found[1]:
        return None, None  # every answer equal: nothing to censor
    return found[0], found[1]


class ScaleBounds:
    """Parameter constraint: the two ends of a scale, ``(low, high)``, finite, low < high."""

    def accepts(self, value) -> bool:
        if isinstance(value, (str, bytes)):
            return False
        try:
            pair = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return False
        return pair.shape == (2,) and bool(np.all(np.isfinite(pair)) and pair[0] < pair[1])

    def describe(self) -> str:
        return "(low, high) with low < high"

    def invalid_value(self):
        return (1.0, 0.0)
