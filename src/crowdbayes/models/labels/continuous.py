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
from ._continuous_bounded import (
    BOUNDED_TOL,
    BoundedPrior,
    ScaleBounds,
    answer_weights,
    bounded_start,
    bounded_sweep,
    detect_bounds,
    log_posterior,
    task_posterior_grid,
)

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

    **Bounded scales** (``bounds``): on a scale :math:`[L, U]` an answer at a bound may be a
    perceived value beyond it (censored) or a lazy answer given whatever the truth (inflated);
    read as exact answers they pull every task towards the bound and make the intervals too
    narrow. When the answers have a bound (given, or found: ``"auto"`` takes the smallest or
    largest answer as one when at least 2% of the answers, and 3, equal it exactly) the fit is
    the censored/inflated model of :mod:`crowdbayes.models.labels._continuous_bounded`: EM for
    the workers (bias, noise, share of lazy answers at each bound, ``worker_params_``
    ``low_share`` / ``high_share``), then each task's exact posterior given them on a grid over
    the scale, under a prior for the values learned from all tasks; ``values_`` reports its
    mean, s.d. and central interval, and ``elbo_history_`` holds the EM's log-posterior (its
    tolerance is at least ``BOUNDED_TOL`` = 1e-6: EM creeps where a worker's lazy share heads
    to 0, and a 3,000-sweep fit moved no task value by more than 0.07 posterior s.d.). On
    simulated zero-inflated sets (benchmarks/values/results/values_defaults.md) this halves the
    error of the Gaussian reading and of the per-task mean, and the 90% intervals cover 86–89%.

    Results: ``values_`` (per task: ``mean``, ``sd``, ``lower``, ``upper``, ``n_answers``),
    ``bounds_`` (the scale's ends used, None where there is none),
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
    bounds : "auto", (low, high) or None
        The ends of the answers' scale: ``"auto"`` (default) finds them from piles of answers
        at the extremes (class docstring), a pair declares them (every answer must lie
        within; the true values are taken to lie within too), None reads every answer as
        exact (the Gaussian or Student-t model on the real line).
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
    Tobin, J. (1958). Estimation of relationships for limited dependent variables.
    Econometrica 26(1).
    Lambert, D. (1992). Zero-inflated Poisson regression. Technometrics 34(1).
    Efron, B. (2016). Empirical Bayes deconvolution estimates. Biometrika 103(1).
    """

    _tags = {"posterior": "approximate"}
    _traces = {"elbo_history_": "ELBO"}
    parameter_constraints = {
        "noise": [Options("gaussian", "student")],
        "df": [POSITIVE],
        "bias_prior_sd": [POSITIVE, Options("auto")],
        "bounds": [Options("auto"), ScaleBounds(), None],
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
        bounds: str | tuple[float, float] | None = "auto",
        max_iter: int = 500,
        tol: float | None = 1e-9,
        credible_level: float = 0.9,
        progress: bool = False,
    ) -> None:
        self.noise = noise
        self.df = df
        self.bias_prior_sd = bias_prior_sd
        self.bounds = bounds
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
        lower, upper = self._scale_bounds(values.values)
        self.bounds_ = (lower, upper)
        if lower is not None or upper is not None:
            self._fit_bounded(values, centre, spread, lower, upper)
            return self
        prior = BiasNoisePrior(
            bias_precision=1.0 if self.bias_prior_sd == "auto" else 1.0 / self.bias_prior_sd**2,
            learn_bias_precision=self.bias_prior_sd == "auto",
            df=float(self.df) if self.noise == "student" else None,
        )
        state = bias_noise_start(tasks, workers, x, values.n_tasks, values.n_workers, prior)

        def step(_: int) -> float:
            bias_noise_sweep(state, tasks, workers, x, prior)
            return elbo(state, tasks, workers, x, prior)

        self._iterate(step, self.tol, "continuous VB")
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
        # noise s.d. 1/√τ: its posterior mean, and the interval from τ's Gamma quantiles
        spread_of_noise = self._noise_units(spread)
        noise_mean = np.exp(gammaln(state.A - 0.5) - gammaln(state.A)) * np.sqrt(state.R)
        noise_mean = spread_of_noise * noise_mean
        tau_high = gamma.ppf(1 - tail, state.A, scale=1 / state.R)
        tau_low = gamma.ppf(tail, state.A, scale=1 / state.R)
        self.worker_params_ = _worker_frame(
            values,
            bias,
            bias_sd,
            z,
            noise_mean,
            spread_of_noise / np.sqrt(tau_high),
            spread_of_noise / np.sqrt(tau_low),
        )
        self.answer_weights_ = (
            np.ones(values.n_values) if state.alpha is None else state.alpha / state.beta
        )
        self.tasks_, self.workers_ = values.tasks, values.workers

    def _iterate(self, step, tol: float | None, desc: str) -> None:
        """Run ``step`` (one sweep, returning the objective) to convergence; sets
        ``elbo_history_``, ``n_iter_`` and ``converged_``."""
        result = run_iterations(
            step,
            max_iter=self.max_iter,
            tol=tol,
            progress=self.progress,
            desc=desc,
            warn_name=type(self).__name__,
        )
        self.elbo_history_ = np.array(result.history)
        self.n_iter_, self.converged_ = result.n_iter, result.converged

    def _scale_bounds(self, answers: np.ndarray) -> tuple[float | None, float | None]:
        """The scale's ends in the answers' units: given, detected (``"auto"``), or none."""
        if self.bounds is None:
            return None, None
        if isinstance(self.bounds, str):
            return detect_bounds(answers)
        low, high = (float(v) for v in self.bounds)
        outside = int(np.sum((answers < low) | (answers > high)))
        if outside:
            raise ValueError(
                f"{type(self).__name__}: {outside} answer(s) lie outside bounds=({low:g}, "
                f"{high:g}) (range {answers.min():g} to {answers.max():g}): widen the bounds or "
                "pass bounds=None"
            )
        return low, high

    def _fit_bounded(self, values: Values, centre: float, spread: float, lower, upper) -> None:
        """The censored/inflated fit (:mod:`._continuous_bounded`) and its results."""
        x = (values.values - centre) / spread
        tasks, workers = values.task_codes, values.worker_codes
        prior = BoundedPrior(
            lower=None if lower is None else (lower - centre) / spread,
            upper=None if upper is None else (upper - centre) / spread,
            df=float(self.df) if self.noise == "student" else None,
            learn_bias_precision=self.bias_prior_sd == "auto",
        )
        bias_precision = 1.0 if self.bias_prior_sd == "auto" else 1.0 / self.bias_prior_sd**2
        state = bounded_start(
            tasks, workers, x, values.n_tasks, values.n_workers, prior, bias_precision
        )

        def step(_: int) -> float:
            bounded_sweep(state, tasks, workers, x, prior)
            return log_posterior(state, tasks, workers, x, prior)

        tol = None if self.tol is None else max(self.tol, BOUNDED_TOL)
        self._iterate(step, tol, "bounded continuous EM")
        mean, sd, low, high = task_posterior_grid(
            state, tasks, workers, x, prior, 1 / state.Q, self.credible_level
        )
        self.values_ = pd.DataFrame(
            {
                "mean": centre + spread * mean,
                "sd": spread * sd,
                "lower": centre + spread * low,
                "upper": centre + spread * high,
                "n_answers": np.bincount(tasks, minlength=values.n_tasks),
            },
            index=values.tasks,
        )
        z = norm.ppf(0.5 + self.credible_level / 2)
        bias, bias_sd = spread * state.c, spread / np.sqrt(state.Q)
        noise = self._noise_units(spread) / np.sqrt(state.tau)
        # Laplace on log σ: s.d. 1/√(2 n_eff)
        log_noise_sd = 1 / np.sqrt(2 * np.maximum(state.n_eff, 1e-9))
        self.worker_params_ = _worker_frame(
            values,
            bias,
            bias_sd,
            z,
            noise,
            noise * np.exp(-z * log_noise_sd),
            noise * np.exp(z * log_noise_sd),
            low_share=state.low_share,
            high_share=state.high_share,
        )
        self.bias_prior_sd_ = spread / np.sqrt(state.bias_precision)
        self.answer_weights_ = answer_weights(state, tasks, workers, x, prior)
        self.tasks_, self.workers_ = values.tasks, values.workers

    def _noise_units(self, spread: float) -> float:
        r"""Standardised noise scale to the answers' s.d. units: a Student-t of scale
        :math:`1/\sqrt\tau` has s.d. :math:`\sqrt{\nu/(\nu-2)}/\sqrt\tau` (its scale
        when :math:`\nu \le 2`)."""
        if self.noise == "student" and self.df > 2:
            return spread * np.sqrt(self.df / (self.df - 2))
        return spread

    def predict_interval(self) -> pd.DataFrame:
        """The ``lower`` and ``upper`` ends of each task's credible interval."""
        self.check_is_fitted()
        return self.values_[["lower", "upper"]]

    def fit_predict(self, values: Values | TableLike) -> pd.Series:
        """Fit, then return each task's posterior mean value."""
        return self.fit(values).predict()


def _worker_frame(values: Values, bias, bias_sd, z, noise, noise_lower, noise_upper, **more):
    """``worker_params_``: bias with its s.d. and interval (``z`` s.d. either side), noise s.d.
    with its interval, ``more`` columns, and each worker's number of answers."""
    return pd.DataFrame(
        {
            "bias": bias,
            "bias_sd": bias_sd,
            "bias_lower": bias - z * bias_sd,
            "bias_upper": bias + z * bias_sd,
            "noise_sd": noise,
            "noise_lower": noise_lower,
            "noise_upper": noise_upper,
            **more,
            "n_answers": np.bincount(values.worker_codes, minlength=values.n_workers),
        },
        index=values.workers,
    )
