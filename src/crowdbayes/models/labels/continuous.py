"""Continuous answers: a true value per task, a bias and a noise level per worker (VB)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import gammaln
from scipy.stats import gamma, norm

from ...annotators.continuous import (
    BiasNoisePrior,
    bias_noise_start,
    bias_noise_sweep,
    elbo,
    shift_precision,
)
from ...base import OPEN_UNIT, POSITIVE, POSITIVE_INT, TOLERANCE, Options
from ...data.io import TableLike
from ...data.values import Values, as_values
from ...inference import run_iterations
from ...roles import ValueAggregator

__all__ = ["ContinuousAggregation"]


class ContinuousAggregation(ValueAggregator):
    r"""Numbers from many workers: each task's true value, each worker's bias and noise, by
    mean-field variational Bayes (:mod:`crowdbayes.annotators.continuous`).

    Model: :math:`x_{ij} = \mu_i + b_j + \varepsilon_{ij}` with :math:`\mu_i \sim N(m_0, 10^2)`,
    :math:`b_j \sim N(0, s_b^2)`, and noise :math:`\varepsilon_{ij} \sim N(0, 1/\tau_j)`
    (``noise="gaussian"``) or Student-t with ``df`` degrees of freedom and scale
    :math:`1/\sqrt{\tau_j}` (``noise="student"``: robust to answers far from the rest, e.g.
    typos or random answers), :math:`\tau_j \sim \mathrm{Gamma}(1, 0.1)`. The answers are
    standardised first (mean :math:`m_0`, unit s.d.), so the priors are in units of the
    answers' spread and the model is scale-free; results are reported in the original units.
    The biases' prior mean of 0 fixes the level: the truth is what an average worker says
    without bias.

    The factorised posterior :math:`q(\mu)q(b)q(\tau)q(\lambda)` is fitted by coordinate ascent;
    the ELBO (``elbo_history_``) never decreases. Intervals are central credible intervals at
    ``credible_level``; a task value's variance is its factor's plus that of a common shift of
    all values against all biases (:func:`~crowdbayes.annotators.continuous.shift_precision`),
    the one uncertainty every task shares and a factorised posterior leaves out.

    Results: ``values_`` (per task: ``mean``, ``sd``, ``lower``, ``upper``, ``n_answers``),
    ``worker_params_`` (per worker: ``bias``, ``bias_sd``, ``bias_lower``, ``bias_upper``,
    ``noise_sd`` (posterior mean of the noise s.d., :math:`1/\sqrt{\tau_j}`, times
    :math:`\sqrt{\nu/(\nu-2)}` for Student-t noise with :math:`\nu > 2`), ``noise_lower``,
    ``noise_upper``, ``n_answers``), ``answer_weights_`` (Student-t: the posterior mean
    weight :math:`E\lambda_n` of each answer, in the order of ``Values.to_frame()``; small
    means discounted as an outlier), ``elbo_history_``, ``n_iter_``, ``converged_``.

    Parameters
    ----------
    noise : {"gaussian", "student"}
        The noise of an answer around task value plus worker bias.
    df : float
        Degrees of freedom of the Student-t noise.
    bias_prior_sd : float or "auto"
        Prior s.d. of a worker's bias, in units of the answers' s.d.; ``"auto"`` (default)
        learns it (empirical Bayes, a type-II maximum of the ELBO; ``bias_prior_sd_`` holds
        the value, in the answers' units).
    max_iter : int
        VB sweeps at most.
    tol : float or None
        Stop when the ELBO changes by less than ``tol · max(1, |ELBO|)``.
    credible_level : float
        Level of the intervals.
    progress : bool
        Show a progress bar.

    References
    ----------
    Raykar, V. C. et al. (2010). Learning from crowds. JMLR 11, sec. 5 (continuous answers).
    Welinder, P. & Perona, P. (2010). Online crowdsourcing: rating annotators and obtaining
    cost-effective labels. CVPR workshops.
    Tipping, M. E. & Lawrence, N. D. (2005). Variational inference for Student-t models.
    Neurocomputing 69.
    """

    _tags = {"posterior": "approximate"}
    _traces = {"elbo_history_": "ELBO"}
    parameter_constraints = {
        "noise": [Options("gaussian", "student")],
        "df": [POSITIVE],
        "bias_prior_sd": [POSITIVE, Options("auto")],
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "credible_level": [OPEN_UNIT],
        "progress": [bool],
    }

    def __init__(
        self,
        noise: str = "gaussian",
        df: float = 4.0,
        bias_prior_sd: float | str = "auto",
        max_iter: int = 500,
        tol: float | None = 1e-9,
        credible_level: float = 0.9,
        progress: bool = False,
    ) -> None:
        self.noise = noise
        self.df = df
        self.bias_prior_sd = bias_prior_sd
        self.max_iter = max_iter
        self.tol = tol
        self.credible_level = credible_level
        self.progress = progress

    def fit(self, values: Values | TableLike) -> ContinuousAggregation:
        """Fit to ``values`` (a :class:`~crowdbayes.data.values.Values`, DataFrame or path with
        ``task, worker, value`` columns)."""
        self.check_params()
        values = as_values(values)
        values.require_workers(self.tags.min_workers, type(self).__name__)
        centre = float(values.values.mean())
        spread = float(values.values.std())
        spread = spread if spread > 0 else 1.0
        x = (values.values - centre) / spread
        tasks, workers = values.task_codes, values.worker_codes
        prior = BiasNoisePrior(
            bias_precision=1.0 if self.bias_prior_sd == "auto" else 1.0 / self.bias_prior_sd**2,
            learn_bias_precision=self.bias_prior_sd == "auto",
            df=float(self.df) if self.noise == "student" else None,
        )
        state = bias_noise_start(tasks, workers, x, values.n_tasks, values.n_workers, prior)

        def step(_: int) -> float:
            bias_noise_sweep(state, tasks, workers, x, prior)
            return elbo(state, tasks, workers, x, prior)

        result = run_iterations(
            step,
            max_iter=self.max_iter,
            tol=self.tol,
            progress=self.progress,
            desc="continuous VB",
            warn_name=type(self).__name__,
        )
        self.elbo_history_ = np.array(result.history)
        self.n_iter_, self.converged_ = result.n_iter, result.converged
        self._set_results(values, state, centre, spread, 1.0 / shift_precision(state, prior))
        return self

    def _set_results(
        self, values: Values, state, centre: float, spread: float, shift_variance: float
    ) -> None:
        z = norm.ppf(0.5 + self.credible_level / 2)
        tail = (1 - self.credible_level) / 2
        mean = centre + spread * state.m
        sd = spread * np.sqrt(1 / state.P + shift_variance)
        self.bias_prior_sd_ = spread / np.sqrt(state.bias_precision)
        self.values_ = pd.DataFrame(
            {
                "mean": mean,
                "sd": sd,
                "lower": mean - z * sd,
                "upper": mean + z * sd,
                "n_answers": np.bincount(values.task_codes, minlength=values.n_tasks),
            },
            index=values.tasks,
        )
        bias, bias_sd = spread * state.c, spread / np.sqrt(state.Q)
        # noise s.d. 1/√τ: its posterior mean, and the interval from τ's Gamma quantiles; a
        # Student-t of scale 1/√τ has s.d. √(ν/(ν−2))/√τ (its scale when ν ≤ 2)
        if self.noise == "student" and self.df > 2:
            spread_of_noise = spread * np.sqrt(self.df / (self.df - 2))
        else:
            spread_of_noise = spread
        noise_mean = np.exp(gammaln(state.A - 0.5) - gammaln(state.A)) * np.sqrt(state.R)
        noise_mean = spread_of_noise * noise_mean
        tau_high = gamma.ppf(1 - tail, state.A, scale=1 / state.R)
        tau_low = gamma.ppf(tail, state.A, scale=1 / state.R)
        self.worker_params_ = pd.DataFrame(
            {
                "bias": bias,
                "bias_sd": bias_sd,
                "bias_lower": bias - z * bias_sd,
                "bias_upper": bias + z * bias_sd,
                "noise_sd": noise_mean,
                "noise_lower": spread_of_noise / np.sqrt(tau_high),
                "noise_upper": spread_of_noise / np.sqrt(tau_low),
                "n_answers": np.bincount(values.worker_codes, minlength=values.n_workers),
            },
            index=values.workers,
        )
        self.answer_weights_ = (
            np.ones(values.n_values) if state.alpha is None else state.alpha / state.beta
        )
        self.tasks_, self.workers_ = values.tasks, values.workers

    def predict_interval(self) -> pd.DataFrame:
        """The ``lower`` and ``upper`` ends of each task's credible interval."""
        self.check_is_fitted()
        return self.values_[["lower", "upper"]]

    def fit_predict(self, values: Values | TableLike) -> pd.Series:
        """Fit, then return each task's posterior mean value."""
        return self.fit(values).predict()
