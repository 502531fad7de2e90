r"""Workers with a bias and a noise level, answering numbers: mean-field variational Bayes.

Model (answers standardised by the caller): task :math:`i` has a true value
:math:`\mu_i \sim N(m_0, 1/p_0)`; worker :math:`j` has a bias :math:`b_j \sim N(0, 1/p_b)` and a
noise precision :math:`\tau_j \sim \mathrm{Gamma}(a_0, r_0)`; answer :math:`n` (task :math:`i`,
worker :math:`j`) is

.. math::
    x_n \mid \mu, b, \tau, \lambda \sim N\big(\mu_i + b_j,\ 1/(\tau_j\lambda_n)\big),

with :math:`\lambda_n = 1` (Gaussian noise) or :math:`\lambda_n \sim \mathrm{Gamma}(\nu/2,
\nu/2)` (Student-t noise with :math:`\nu` degrees of freedom, as a scale mixture of normals:
an answer far from the others gets a small :math:`\lambda_n` and little weight). This is the
bias–variance worker model of continuous crowdsourcing (Raykar et al. 2010, sec. 5, for
regression; Welinder & Perona 2010; Li et al. 2014's CATD weights are its precision part); the
robust variant follows the variational Student-t of Tipping & Lawrence (2005) / Archambeau &
Verleysen (2007).

With :math:`q = \prod_i N(\mu_i; m_i, 1/P_i)\prod_j N(b_j; c_j, 1/Q_j)\,
\mathrm{Gamma}(\tau_j; A_j, R_j)\prod_n \mathrm{Gamma}(\lambda_n; \alpha_n, \beta_n)` every
coordinate update is conjugate (:math:`w_n = E\tau_j E\lambda_n`,
:math:`e_n = E(x_n - \mu_i - b_j)^2 = (x_n - m_i - c_j)^2 + 1/P_i + 1/Q_j`):

- :math:`P_i = p_0 + \sum_{n\in i} w_n`,
  :math:`m_i = (p_0 m_0 + \sum_{n \in i} w_n(x_n - c_j))/P_i`;
- :math:`Q_j = p_b + \sum_{n\in j} w_n`, :math:`c_j = \sum_{n\in j} w_n (x_n - m_i) / Q_j`;
- :math:`A_j = a_0 + n_j/2`, :math:`R_j = r_0 + \tfrac12\sum_{n\in j} E\lambda_n e_n`;
- :math:`\alpha_n = (\nu+1)/2`, :math:`\beta_n = \nu/2 + \tfrac12 E\tau_j e_n`;

plus one move along the direction the answers cannot see (every :math:`m_i + \delta`, every
:math:`c_j - \delta`: only the priors change, and the best :math:`\delta` is closed-form), so
the evidence lower bound (:func:`elbo`) never decreases from one sweep to the next.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "BiasNoisePrior",
    "BiasNoiseState",
    "bias_noise_start",
    "bias_noise_sweep",
    "elbo",
    "shift_precision",
]

_LOG_2PI = np.log(2 * np.pi)


@dataclass(frozen=True)
class BiasNoisePrior:
    r"""Prior of :mod:`crowdbayes.annotators.continuous` (standardised units); ``df`` None:
    Gaussian noise, else Student-t with ``df`` degrees of freedom. With
    ``learn_bias_precision`` the biases' prior precision :math:`p_b` is a variational
    parameter too (type-II maximum of the ELBO, :math:`p_b = W / \sum_j (c_j^2 + 1/Q_j)`)."""

    value_mean: float = 0.0
    value_precision: float = 0.01
    bias_precision: float = 1.0
    #: learn the biases' prior precision (empirical Bayes; ``bias_precision`` is the start)
    learn_bias_precision: bool = False
    noise_shape: float = 1.0
    noise_rate: float = 0.1
    df: float | None = None


@dataclass
class BiasNoiseState:
    """The variational parameters (module docstring): per task ``m, P``, per worker ``c, Q,
    A, R``, per answer ``alpha, beta`` (None for Gaussian noise), and the biases' prior
    precision :math:`p_b` in use."""

    m: np.ndarray
    P: np.ndarray
    c: np.ndarray
    Q: np.ndarray
    A: np.ndarray
    R: np.ndarray
    bias_precision: float = 1.0
    alpha: np.ndarray | None = None
    beta: np.ndarray | None = None

    def expected_scale(self) -> np.ndarray:
        r""":math:`E\lambda_n` (1 for Gaussian noise)."""
        return 1.0 if self.alpha is None else self.alpha / self.beta


def bias_noise_start(
    tasks: np.ndarray,
    workers: np.ndarray,
    x: np.ndarray,
    n_tasks: int,
    n_workers: int,
    prior: BiasNoisePrior,
) -> BiasNoiseState:
    """A start: task means, no bias, each worker's spread around the task means."""
    counts = np.bincount(tasks, minlength=n_tasks)
    m = np.bincount(tasks, x, n_tasks) / np.maximum(counts, 1)
    n_j = np.bincount(workers, minlength=n_workers)
    residual = np.bincount(workers, (x - m[tasks]) ** 2, n_workers)
    state = BiasNoiseState(
        m=m,
        P=np.full(n_tasks, prior.value_precision) + counts,
        c=np.zeros(n_workers),
        Q=np.full(n_workers, prior.bias_precision) + n_j,
        A=prior.noise_shape + 0.5 * n_j,
        R=prior.noise_rate + 0.5 * residual,
        bias_precision=prior.bias_precision,
    )
    if prior.df is not None:
        state.alpha = np.full(len(x), 0.5 * (prior.df + 1))
        state.beta = state.alpha.copy()
    return state


def _squared_error(state: BiasNoiseState, tasks, workers, x) -> np.ndarray:
    return (x - state.m[tasks] - state.c[workers]) ** 2 + 1 / state.P[tasks] + 1 / state.Q[workers]


def bias_noise_sweep(
    state: BiasNoiseState,
    tasks: np.ndarray,
    workers: np.ndarray,
    x: np.ndarray,
    prior: BiasNoisePrior,
) -> BiasNoiseState:
    """One sweep of the coordinate updates (module docstring), in place; returns ``state``."""
    n_tasks, n_workers = len(state.m), len(state.c)
    weight = (state.A / state.R)[workers] * state.expected_scale()
    state.P = prior.value_precision + np.bincount(tasks, weight, n_tasks)
    state.m = (
        prior.value_precision * prior.value_mean
        + np.bincount(tasks, weight * (x - state.c[workers]), n_tasks)
    ) / state.P
    state.Q = state.bias_precision + np.bincount(workers, weight, n_workers)
    state.c = np.bincount(workers, weight * (x - state.m[tasks]), n_workers) / state.Q
    # Move every task value by δ and every bias by −δ: the answers' fit is unchanged, only the
    # two priors see it, and the best δ is closed-form. Without this step the sweeps crawl
    # along that shared direction (thousands of sweeps to converge on small problems).
    shift = (
        state.bias_precision * state.c.sum()
        - prior.value_precision * (state.m - prior.value_mean).sum()
    ) / shift_precision(state, prior)
    state.m = state.m + shift
    state.c = state.c - shift
    if prior.learn_bias_precision:
        state.bias_precision = n_workers / float(np.sum(state.c**2 + 1 / state.Q))
    error = _squared_error(state, tasks, workers, x)
    n_j = np.bincount(workers, minlength=n_workers)
    state.A = prior.noise_shape + 0.5 * n_j
    state.R = prior.noise_rate + 0.5 * np.bincount(
        workers, state.expected_scale() * error, n_workers
    )
    if prior.df is not None:
        state.alpha = np.full(len(x), 0.5 * (prior.df + 1))
        state.beta = 0.5 * prior.df + 0.5 * (state.A / state.R)[workers] * error
    return state


def shift_precision(state: BiasNoiseState, prior: BiasNoisePrior) -> float:
    r"""Precision of a common shift of all task values against all biases,
    :math:`p_0 T + p_b W`: the answers do not see it, so only the priors pin it down. The
    factorised posterior cannot express this shared uncertainty; :class:`ContinuousAggregation`
    adds its variance :math:`1/(p_0 T + p_b W)` to each task value's."""
    return prior.value_precision * len(state.m) + state.bias_precision * len(state.c)


def _gamma_terms(shape, rate, prior_shape, prior_rate) -> np.ndarray:
    """E_q[log Gamma(v; prior)] + entropy of q = Gamma(shape, rate), element-wise."""
    from scipy.special import digamma, gammaln

    mean, log_mean = shape / rate, digamma(shape) - np.log(rate)
    cross = (
        prior_shape * np.log(prior_rate)
        - gammaln(prior_shape)
        + (prior_shape - 1) * log_mean
        - prior_rate * mean
    )
    entropy = shape - np.log(rate) + gammaln(shape) + (1 - shape) * digamma(shape)
    return cross + entropy


def _gaussian_terms(mean, precision, prior_mean, prior_precision) -> np.ndarray:
    """E_q[log N(v; prior)] + entropy of q = N(mean, 1/precision), element-wise."""
    return 0.5 * (
        np.log(prior_precision / precision)
        - prior_precision * ((mean - prior_mean) ** 2 + 1 / precision)
        + 1.0
    )


def elbo(
    state: BiasNoiseState,
    tasks: np.ndarray,
    workers: np.ndarray,
    x: np.ndarray,
    prior: BiasNoisePrior,
) -> float:
    """The evidence lower bound of ``state`` (standardised data)."""
    from scipy.special import digamma

    log_tau = digamma(state.A) - np.log(state.R)
    tau = state.A / state.R
    error = _squared_error(state, tasks, workers, x)
    if prior.df is None:
        scale, log_scale, scale_terms = 1.0, 0.0, 0.0
    else:
        scale = state.alpha / state.beta
        log_scale = digamma(state.alpha) - np.log(state.beta)
        half = 0.5 * prior.df
        scale_terms = float(_gamma_terms(state.alpha, state.beta, half, half).sum())
    likelihood = 0.5 * (-_LOG_2PI + log_tau[workers] + log_scale - tau[workers] * scale * error)
    total = float(likelihood.sum()) + scale_terms
    total += float(_gaussian_terms(state.m, state.P, prior.value_mean, prior.value_precision).sum())
    total += float(_gaussian_terms(state.c, state.Q, 0.0, state.bias_precision).sum())
    total += float(_gamma_terms(state.A, state.R, prior.noise_shape, prior.noise_rate).sum())
    return total
