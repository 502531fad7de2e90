r"""Ordinal Dawid–Skene: ordered grades, each worker an ordered-probit rater with a bias and a
precision."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from ...annotators.ordinal import ordinal_log_confusion, ordinal_worker_map
from ...base import NON_NEGATIVE, OPEN_UNIT, POSITIVE, POSITIVE_INT, TOLERANCE
from ...data import Labels
from ...inference.statistics import Globals, Stats
from ...maths import finite_sum, safe_log
from ._confusion import ConfusionStatsModel, with_logs

__all__ = ["OrdinalDawidSkene", "posterior_median"]


def posterior_median(probas: np.ndarray) -> np.ndarray:
    """The median grade code of each column of class-major (K, n_tasks) probabilities: the
    prediction that minimises the expected absolute error in grade steps."""
    return np.argmax(np.cumsum(probas, axis=0) >= 0.5 - 1e-12, axis=0)


class OrdinalDawidSkene(ConfusionStatsModel):
    r"""Dawid–Skene for ordered grades: each worker's confusion matrix is an ordered-probit
    rater's (:mod:`crowdbayes.annotators.ordinal`), fitted by EM with MAP worker parameters.

    Model: the true grade :math:`c_i \sim \mathrm{Cat}(\pi)` over the ordered classes
    (``Labels(..., ordered=True)``, coded :math:`0, \dots, K-1`); worker :math:`j` reports the
    grade whose bin :math:`(x - \tfrac12, x + \tfrac12]` holds
    :math:`c_i + b_j + \varepsilon/\sqrt{\tau_j}`, :math:`\varepsilon \sim N(0, 1)`, i.e.

    .. math::
        P(x_{ij} = x \mid c_i = c) = \Phi\big(\sqrt{\tau_j}(x + \tfrac12 - c - b_j)\big)
        - \Phi\big(\sqrt{\tau_j}(x - \tfrac12 - c - b_j)\big),

    with priors :math:`b_j \sim N(0, s_b^2)` (``bias_prior_sd``) and
    :math:`\log\tau_j \sim N(\log \tau_0, s_\eta^2)` (``precision_prior``,
    ``log_precision_prior_sd``). This is a cumulative-link rater model (McCullagh 1980; Johnson
    & Albert 1999 ch. 5; Lakshminarayanan & Teh 2013 for crowds) written as a Dawid–Skene
    confusion matrix with two parameters per worker instead of :math:`K(K-1)`, so a worker seen
    on few tasks still has a sensible matrix, and errors by one grade are likelier than errors
    by three.

    EM: the E-step is Dawid–Skene's (posterior over each task's grade,
    :math:`r_{ic} \propto \pi_c\prod_j \theta_{j c x_{ij}}`); the M-step maximises each worker's
    expected log-likelihood plus log-prior in :math:`(b_j, \log\tau_j)` (L-BFGS, warm-started)
    and sets :math:`\pi \propto \sum_i r_i + a_\pi`. The monitored log-posterior
    (``log_posterior_history_``) never decreases. Worker uncertainty is the Laplace
    approximation at the mode (``worker_params_``: ``bias_sd``, the interval of the
    precision).

    Results beyond the :class:`LabelModel` ones: ``medians_`` (posterior median grade, the
    answer that minimises expected absolute error; ``labels_`` is the most probable grade) and
    ``worker_params_`` (per worker: ``bias``, ``bias_sd``, ``bias_lower``, ``bias_upper``,
    ``precision``, ``precision_lower``, ``precision_upper``, ``noise_sd``), intervals at
    ``credible_level``.

    Parameters
    ----------
    max_iter : int
        EM iterations at most.
    tol : float or None
        Stop when the objective changes by less than ``tol · max(1, |objective|)``.
    bias_prior_sd : float
        Prior s.d. of a worker's bias, in grades.
    precision_prior : float
        Prior median of a worker's precision (1 / noise variance, in grades⁻²).
    log_precision_prior_sd : float
        Prior s.d. of a worker's log-precision.
    prevalence_smoothing : float
        Pseudo-counts added to each grade's count for the prevalence.
    credible_level : float
        Level of the worker intervals.
    progress : bool
        Show a progress bar.

    References
    ----------
    McCullagh, P. (1980). Regression models for ordinal data. JRSS B 42(2).
    Johnson, V. E. & Albert, J. H. (1999). Ordinal Data Modeling, ch. 5 (multirater data).
    Lakshminarayanan, B. & Teh, Y. W. (2013). Inferring ground truth from multi-annotator
    ordinal data: a probabilistic approach. arXiv:1305.0015.
    Dawid, A. P. & Skene, A. M. (1979). JRSS C 28(1).
    """

    _tags = {"ordered_classes": True}
    parameter_constraints = {
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "bias_prior_sd": [POSITIVE],
        "precision_prior": [POSITIVE],
        "log_precision_prior_sd": [POSITIVE],
        "prevalence_smoothing": [NON_NEGATIVE],
        "credible_level": [OPEN_UNIT],
        "progress": [bool],
    }
    primary = ("worker_params", "prevalence")
    worker_stats = ("confusion",)
    history_name = "log_posterior_history_"
    _traces = {"log_posterior_history_": "log posterior"}
    algorithm = "ordinal Dawid-Skene EM"

    def __init__(
        self,
        max_iter: int = 100,
        tol: float | None = 1e-7,
        bias_prior_sd: float = 1.0,
        precision_prior: float = 4.0,
        log_precision_prior_sd: float = 1.5,
        prevalence_smoothing: float = 0.01,
        credible_level: float = 0.9,
        progress: bool = False,
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.bias_prior_sd = bias_prior_sd
        self.precision_prior = precision_prior
        self.log_precision_prior_sd = log_precision_prior_sd
        self.prevalence_smoothing = prevalence_smoothing
        self.credible_level = credible_level
        self.progress = progress

    @property
    def _prior(self) -> tuple[float, float, float]:
        return (
            float(self.bias_prior_sd),
            float(np.log(self.precision_prior)),
            float(self.log_precision_prior_sd),
        )

    # ------------------------------------------------------------------ sufficient statistics
    def global_update(self, stats: Stats, start: np.ndarray | None = None) -> Globals:
        """M-step: each worker's MAP (bias, log-precision) from the expected counts
        (warm-started at the previous values), and the prevalence."""
        counts = stats["confusion"]
        if start is None:
            start = getattr(self, "_last_params", None)
        if start is None or start.shape[0] != counts.shape[0]:
            start = np.tile(self.new_worker_rows(counts.shape[1]), (counts.shape[0], 1))
        params, sd = ordinal_worker_map(counts, start, self._prior)
        self._last_params = params
        class_counts = stats["classes"] + self.prevalence_smoothing
        globals_ = self.from_primary(params, class_counts / class_counts.sum())
        globals_["worker_sd"] = sd
        return globals_

    def from_primary(self, worker_params: np.ndarray, prevalence: np.ndarray) -> Globals:
        log_confusion = ordinal_log_confusion(worker_params, len(prevalence))
        return with_logs(
            {"worker_params": worker_params, "prevalence": prevalence},
            log_confusion,
            safe_log(prevalence),
        )

    def objective(self, stats: Stats, before: Globals, after: Globals) -> float:
        """Log-posterior of the globals ``before`` (the ones the E-step used)."""
        bias_sd, eta_mean, eta_sd = self._prior
        bias, eta = before["worker_params"][:, 0], before["worker_params"][:, 1]
        log_prior = norm.logpdf(bias, 0.0, bias_sd).sum() + norm.logpdf(eta, eta_mean, eta_sd).sum()
        prevalence_term = self.prevalence_smoothing * finite_sum(before["log_prevalence"])
        return float(stats["log_evidence"] + log_prior + prevalence_term)

    def new_worker_rows(self, n_classes: int) -> np.ndarray:
        """The prior's centre: no bias, the prior median precision."""
        return np.array([0.0, np.log(self.precision_prior)])

    # ------------------------------------------------------------------ results
    def _fit_with(self, labels: Labels, initial_globals, callback=None) -> None:
        self._last_params = None if initial_globals is None else initial_globals["worker_params"]
        try:
            super()._fit_with(labels, initial_globals, callback)
        finally:
            del self._last_params
        probas = self.probas_.to_numpy().T
        self.medians_ = pd.Series(
            labels.classes[posterior_median(probas)], index=labels.tasks, name="median"
        )

    def partial_fit(self, new_labels):
        self._last_params = None
        try:
            return super().partial_fit(new_labels)
        finally:
            del self._last_params

    def _set_global_results(self, ids, globals_: Globals) -> None:
        self._set_prevalence(ids, globals_["prevalence"])
        self._set_confusion(ids, np.exp(globals_["log_confusion"]))
        params = globals_["worker_params"]
        sd = globals_.get("worker_sd", np.full_like(params, np.nan))
        z = norm.ppf(0.5 + self.credible_level / 2)
        bias, eta = params[:, 0], params[:, 1]
        self.worker_params_ = pd.DataFrame(
            {
                "bias": bias,
                "bias_sd": sd[:, 0],
                "bias_lower": bias - z * sd[:, 0],
                "bias_upper": bias + z * sd[:, 0],
                "precision": np.exp(eta),
                "precision_lower": np.exp(eta - z * sd[:, 1]),
                "precision_upper": np.exp(eta + z * sd[:, 1]),
                "noise_sd": np.exp(-0.5 * eta),
            },
            index=pd.Index(ids.workers, name="worker"),
        )
