r"""Ordinal Dawid–Skene: ordered grades, each worker an ordered-probit rater with a bias and a
precision."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.stats import beta, norm

from ...annotators.ordinal import laplace_sd
from ...base import NON_NEGATIVE, OPEN_UNIT, POSITIVE, POSITIVE_INT, TOLERANCE
from ...data import Labels
from ...exceptions import DataWarning
from ...inference.statistics import Globals, Stats
from ...maths import finite_sum, safe_log
from ._confusion import ConfusionStatsModel, with_logs
from ._ordinal_fit import (
    RANDOM_GRADE_PSEUDO_COUNT,
    probit_counts,
    random_grades,
    worker_log_confusion,
    worker_update,
)

__all__ = ["OrdinalDawidSkene", "posterior_median"]

#: prevalence of a grade above its share of the labels that :meth:`_warn_if_collapsed` reports
COLLAPSE_MARGIN = 0.4


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

    **Random answers** (``random_share_prior``): with probability
    :math:`\epsilon_j \sim \mathrm{Beta}(1, \beta)` (prior mean :math:`1/(1+\beta)`) a worker
    ignores the task and answers from its own distribution :math:`\xi_j` over the grades,
    :math:`\xi_j \sim \mathrm{Dirichlet}(2, \dots, 2)`, so its matrix is
    :math:`(1-\epsilon_j)\theta_j + \epsilon_j \mathbf{1}\xi_j^\top`: the spamming annotators
    of MACE (Hovy et al. 2013), each with its own strategy. A careless worker is then no
    longer a "very noisy" probit rater whose labels pull every task towards the middle grade,
    and a worker who gives the same grade whatever the task (on S_Rel four workers with
    2,800–7,900 labels each answer one grade only) is no longer a precise, unbiased rater
    whose thousands of identical labels pull every task into that grade. Measured on the gold
    tasks against the majority grade, at bias prior s.d. 0.5 and β = 10: S_Rel accuracy 0.300
    (uniform random answers) → 0.589 against 0.516, MAE 0.863 → 0.498 against 0.629; Web
    (5 grades) 0.669 (no random answers) → 0.822 (uniform) → 0.845 against 0.772. At the
    defaults: S_Rel 0.569, MAE 0.506; Web 0.786, MAE 0.295
    (benchmarks/labels/results/ordinal_defaults.md).

    EM: the E-step is Dawid–Skene's (posterior over each task's grade,
    :math:`r_{ic} \propto \pi_c\prod_j \theta_{j c x_{ij}}`); the M-step raises each worker's
    expected log-likelihood plus log-prior by one safeguarded Newton step in
    :math:`(b_j, \log\tau_j)` (all workers at once, 2 × 2 solves; with the random share an ECM
    step, :mod:`crowdbayes.models.labels._ordinal_fit`) and sets
    :math:`\pi \propto \sum_i r_i + a_\pi`. The monitored log-posterior
    (``log_posterior_history_``) never decreases. Worker uncertainty is the Laplace
    approximation at the mode (``worker_params_``: ``bias_sd``, the interval of the
    precision).

    **Predictive posteriors** (``predictive``, default True): EM plugs each worker's MAP
    parameters into its matrix, so a worker seen three times speaks with the authority of a
    perfectly known one and the task posteriors are over-confident (claimed confidence 0.03–0.06
    above the accuracy on simulated data). The final ``probas_`` use each worker's matrix
    averaged over the Laplace posterior of its parameters (Gauss–Hermite quadrature); the
    fitted ``confusion_`` stays the MAP one. ``partial_fit`` batches use the MAP matrices.

    Results beyond the :class:`LabelModel` ones: ``medians_`` (posterior median grade, the
    answer that minimises expected absolute error; ``labels_`` is the most probable grade),
    ``random_grades_`` (workers × grades: :math:`\xi_j`, uniform without random answers) and
    ``worker_params_`` (per worker: ``bias``, ``bias_sd``, ``bias_lower``, ``bias_upper``,
    ``precision``, ``precision_lower``, ``precision_upper``, ``noise_sd``, ``random_share``),
    intervals at ``credible_level``.

    Parameters
    ----------
    max_iter : int
        EM iterations at most.
    tol : float or None
        Stop when the objective changes by less than ``tol · max(1, |objective|)``.
    bias_prior_sd : float
        Prior s.d. of a worker's bias, in grades. The defaults of ``bias_prior_sd``,
        ``log_precision_prior_sd`` and ``random_share_prior`` are the setting that the rule of
        benchmarks/labels/ordinal_defaults.py (calibration gap ≤ 0.03 on every simulated set,
        then the most sets at least the majority grade, then the best worst-case margin)
        picks from a grid over 7 simulated and 3 shared sets
        (benchmarks/labels/results/ordinal_defaults.md). Chosen without each set in turn, it
        is at least the majority grade on that set in 9 of 10 (S_Adult: −0.018 in accuracy,
        within noise, where no setting does better than a tie). The former priors (bias s.d.
        0.5, β = 10) do better on Web (accuracy 0.845 against 0.786) but claim 0.039 more
        confidence than their accuracy on the 5-grade simulated set.
    precision_prior : float
        Prior median of a worker's precision (1 / noise variance, in grades⁻²).
    log_precision_prior_sd : float
        Prior s.d. of a worker's log-precision.
    prevalence_smoothing : float
        Pseudo-counts added to each grade's count for the prevalence.
    random_share_prior : float or None
        :math:`\beta` of the Beta(1, β) prior of a worker's share of random answers; None: no
        random answers (the plain ordered-probit worker).
    predictive : bool
        Task posteriors from the workers' predictive matrices (class docstring), not the
        plug-in MAP ones.
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
    Hovy, D., Berg-Kirkpatrick, T., Vaswani, A. & Hovy, E. (2013). Learning whom to trust
    with MACE. NAACL-HLT 2013.
    Meng, X.-L. & Rubin, D. B. (1993). Maximum likelihood estimation via the ECM algorithm.
    Biometrika 80(2).
    MacKay, D. J. C. (1992). The evidence framework applied to classification networks.
    Neural Computation 4(5).
    """

    _tags = {"ordered_classes": True}
    parameter_constraints = {
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "bias_prior_sd": [POSITIVE],
        "precision_prior": [POSITIVE],
        "log_precision_prior_sd": [POSITIVE],
        "prevalence_smoothing": [NON_NEGATIVE],
        "random_share_prior": [POSITIVE, None],
        "predictive": [bool],
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
        bias_prior_sd: float = 0.3,
        precision_prior: float = 4.0,
        log_precision_prior_sd: float = 0.7,
        prevalence_smoothing: float = 0.01,
        random_share_prior: float | None = 30.0,
        predictive: bool = True,
        credible_level: float = 0.9,
        progress: bool = False,
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.bias_prior_sd = bias_prior_sd
        self.precision_prior = precision_prior
        self.log_precision_prior_sd = log_precision_prior_sd
        self.prevalence_smoothing = prevalence_smoothing
        self.random_share_prior = random_share_prior
        self.predictive = predictive
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
        row = self.new_worker_rows(counts.shape[1])
        if start is None or start.shape[0] != counts.shape[0]:
            start = np.tile(row, (counts.shape[0], 1))
        elif start.shape[1] != len(row):  # a warm start saved with the random share on or off
            start = np.column_stack([start[:, :2], np.tile(row[2:], (len(start), 1))])
        params = worker_update(counts, start, self._prior, self._share_prior)
        self._last_params = params
        class_counts = stats["classes"] + self.prevalence_smoothing
        return self.from_primary(params, class_counts / class_counts.sum())

    def from_primary(self, worker_params: np.ndarray, prevalence: np.ndarray) -> Globals:
        log_confusion = worker_log_confusion(worker_params, len(prevalence))
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
        if self._share_prior is not None:
            log_prior += beta.logpdf(before["worker_params"][:, 2], *self._share_prior).sum()
            spam = before["worker_params"][:, 3:]
            log_prior += RANDOM_GRADE_PSEUDO_COUNT * finite_sum(safe_log(spam))
        prevalence_term = self.prevalence_smoothing * finite_sum(before["log_prevalence"])
        return float(stats["log_evidence"] + log_prior + prevalence_term)

    @property
    def _share_prior(self) -> tuple[float, float] | None:
        """Beta(1, b) prior of a worker's random share, None without the random component."""
        if self.random_share_prior is None:
            return None
        return 1.0, float(self.random_share_prior)

    def new_worker_rows(self, n_classes: int) -> np.ndarray:
        """The prior's centre: no bias, the prior median precision (and the prior mean random
        share)."""
        row = [0.0, np.log(self.precision_prior)]
        if self._share_prior is not None:
            row.append(1.0 / (1.0 + self._share_prior[1]))
            row += [1.0 / n_classes] * n_classes
        return np.array(row)

    # ------------------------------------------------------------------ results
    def _fit_with(self, labels: Labels, initial_globals, callback=None) -> None:
        self._last_params = None if initial_globals is None else initial_globals["worker_params"]
        try:
            super()._fit_with(labels, initial_globals, callback)
        finally:
            del self._last_params
        if self.predictive:
            self._moderate(labels)
        self._warn_if_collapsed(labels)
        probas = self.probas_.to_numpy().T
        self.medians_ = pd.Series(
            labels.classes[posterior_median(probas)], index=labels.tasks, name="median"
        )

    def _warn_if_collapsed(self, labels: Labels) -> None:
        """Warn when the fit puts far more tasks in one grade than the workers' labels do (by
        more than :data:`COLLAPSE_MARGIN` of the tasks): ordered-probit workers can explain
        wide disagreement as noise around a middle grade, or read a worker who gives one grade
        to every task as a precise rater (on S_Rel without random answers: 97% of the tasks in
        grade 1, where 36% of the labels are; accuracy 0.28 against the majority grade's
        0.52)."""
        votes = labels.vote_counts().astype(float)
        label_share = (votes / np.maximum(votes.sum(axis=0), 1)).mean(axis=1)
        prevalence = self.prevalence_.to_numpy()
        grade = int(np.argmax(prevalence - label_share))
        if prevalence[grade] - label_share[grade] > COLLAPSE_MARGIN:
            warnings.warn(
                f"{type(self).__name__}: the fit puts {prevalence[grade]:.0%} of the tasks in "
                f"grade {labels.classes[grade]}, where {label_share[grade]:.0%} of each task's "
                "labels are on average: the ordered-probit workers read the disagreement as "
                "noise around one grade, a sign that equally spaced grades do not fit these "
                "workers or that some give one grade whatever the task (see random_share_prior); "
                "compare with DawidSkene on unordered labels or the majority grade",
                DataWarning,
                stacklevel=4,
            )

    def _set_state(self, state: dict) -> None:
        """Restore a saved fit. A file saved before the random answers had a distribution of
        their own (three columns of worker parameters: uniform random answers) gets uniform
        :math:`\\xi_j`, which is the model it was fitted as."""
        super()._set_state(state)
        params = (vars(self).get("globals_") or {}).get("worker_params")
        if params is None or params.ndim != 2 or params.shape[1] != 3:
            return
        k = len(self.classes_)
        params = np.column_stack([params, np.full((len(params), k), 1.0 / k)])
        self.globals_["worker_params"] = params
        self._set_random_grades(params, self.workers_, self.classes_)

    def _moderate(self, labels: Labels) -> None:
        """Task posteriors from each worker's predictive confusion matrix (the MAP worker's,
        averaged over the Laplace posterior of its bias and log-precision:
        :func:`~crowdbayes.models.labels._ordinal_fit.predictive_log_confusion`)."""
        moderated = dict(self.globals_)
        moderated["log_confusion"] = worker_log_confusion(
            self.globals_["worker_params"], len(labels.classes), self.globals_["worker_sd"]
        )
        tasks: dict = {}
        self.local_stats(labels, moderated, tasks)
        self._set_task_results(labels, tasks["probas"])

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
        sd = globals_.get("worker_sd")
        if sd is None:
            counts = probit_counts(params, self.stats_["confusion"])
            sd = laplace_sd(params[:, :2], counts, self._prior)
            globals_["worker_sd"] = sd
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
                "random_share": params[:, 2] if params.shape[1] > 2 else np.zeros(len(params)),
            },
            index=pd.Index(ids.workers, name="worker"),
        )
        self._set_random_grades(params, ids.workers, ids.classes)

    def _set_random_grades(self, params: np.ndarray, workers, classes) -> None:
        """``random_grades_``: each worker's ξ_j from its parameters (workers × grades)."""
        self.random_grades_ = pd.DataFrame(
            random_grades(params, len(classes))[:, 0],
            index=pd.Index(workers, name="worker"),
            columns=pd.Index(classes, name="grade"),
        )
