"""Bayesian Dawid–Skene by mean-field variational Bayes."""

from __future__ import annotations

import numpy as np

from ...base import OPEN_UNIT, POSITIVE, POSITIVE_INT, TOLERANCE, Options
from ...inference.statistics import Globals, Stats
from ...maths import dirichlet_expected_log, dirichlet_kl, dirichlet_marginal_summary
from ._base import fit_with_prevalence_rule
from ._calibration import calibration_exponent, temper
from ._confusion import ConfusionStatsModel, with_logs

__all__ = ["BayesianDawidSkene", "confusion_prior"]


def confusion_prior(n_classes: int, diagonal: float, off_diagonal: float) -> np.ndarray:
    """(K, K) Dirichlet concentrations: ``diagonal`` on the diagonal, ``off_diagonal`` elsewhere."""
    eye = np.eye(n_classes)
    return diagonal * eye + off_diagonal * (1.0 - eye)


class BayesianDawidSkene(ConfusionStatsModel):
    r"""Dawid–Skene with Dirichlet priors, by mean-field variational Bayes.

    Model: :math:`\pi \sim \mathrm{Dir}(\beta)`, :math:`\theta_{jk:} \sim \mathrm{Dir}(\alpha_k)`,
    :math:`c_i \sim \mathrm{Cat}(\pi)`, :math:`x_{ij} \sim \mathrm{Cat}(\theta_{j c_i :})`.
    The posterior is approximated by :math:`q(c)\,q(\pi)\,q(\theta)` with updates

    .. math::
        \log r_{ik} &= \mathbb{E}\log\pi_k + \textstyle\sum_{j,x} A_{i,jx}\,
                       \mathbb{E}\log\theta_{jkx} + \text{const}, \\
        q(\theta_{jk:}) &= \mathrm{Dir}(\alpha_k + n_{jk:}), \quad
        q(\pi) = \mathrm{Dir}(\beta + \textstyle\sum_i r_i),

    where :math:`\mathbb{E}\log` of a Dirichlet is :math:`\psi(a_k) - \psi(\sum a)`. The evidence
    lower bound (``elbo_history_``) is computed after every sweep and never decreases:

    .. math::
        \mathcal{L} = \textstyle\sum_{i,k} r_{ik}(\mathbb{E}\log\pi_k + \ell_{ik})
        + H[q(c)] - \mathrm{KL}(q(\pi)\|p(\pi))
        - \textstyle\sum_{jk}\mathrm{KL}(q(\theta_{jk})\|p(\theta_{jk})).

    Results add the posterior spread of every confusion cell (``confusion_sd_``, and the
    ``credible_level`` interval ``confusion_lower_``/``confusion_upper_`` from the exact Beta
    marginals of the Dirichlet posterior) and ``confusion_posterior_`` (the concentrations).

    Both updates and the ELBO need only sums over tasks (:math:`n_{jkx}`, :math:`\sum_i r_i` and
    the entropy of q(c)), so the fit is a map of :meth:`local_stats` over partitions of the
    tasks and a :meth:`global_update`, in memory or on a Dask cluster
    (:mod:`crowdbayes.distributed`).

    **Sparse data: tasks seen by one worker do not feed back.** A task labelled by a single
    worker ``j`` (``x``) has likelihood :math:`\sum_k \pi_k\theta_{jkx}`: it says how often ``j``
    gives ``x``, nothing about which rows of :math:`\theta_j` the label belongs to. Counted at
    its own posterior :math:`r_i` (the mean-field update), it adds to :math:`n_{jkx}` the
    model's current guess, which the next sweep reads back as evidence: with one label per task
    the fixed point puts every task in one class (RTE, one random label per task: accuracy 0.500
    claiming 0.996; majority vote 0.757). Such tasks (without gold) are therefore *cut* from the
    statistics of :math:`\theta` and :math:`\pi` (Plummer, 2015: the inference on the workers
    uses the tasks with two or more workers; the cut tasks get their posterior from it) and from
    the ELBO, which is that of the uncut tasks. With one label per task this gives the prior's
    answer (follow the label, with the prior's confidence); when every task has two or more
    workers nothing changes.

    **Prevalence prior.** With two labels per task the data say little about the workers (two
    workers of accuracy 0.7 agree 58% of the time against 50% by chance), and a flat
    Dirichlet(1) prior on :math:`\pi` lets the fit slide to one class holding every task
    (bluebird, dog, s_rel, web at two random labels per task: 0.05–0.22 below majority
    vote). The default Dirichlet(100) says the classes' shares are not extreme unless the
    data show it (worth 100 tasks per class): at two labels per task it ends that collapse on
    those four sets, and on the 12 shared sets with every label it moves accuracy by −0.013
    to +0.009 (``benchmarks/active/active_sparse.py``).
    That prior has a price where the data do identify the classes: it pulls imbalanced classes
    towards equal shares, and on simulated data with ten per cent positives and three labels
    per task (the model's own) a balanced mode a few nats of likelihood from the truth wins:
    0.708 against majority vote's 0.837 and a flat prior's 0.916
    (``tests/models/labels/test_imbalanced_classes.py``). ``prior_prevalence="auto"`` fits
    with the flat prior and refits with Dirichlet(100) only when that fit empties a class the
    labels support (:func:`~crowdbayes.models.labels._base.vanished_classes`, as
    :class:`CommunityDawidSkene`'s default); ``prior_prevalence_`` says which was used, and
    ``partial_fit`` keeps it. It is not the default: at two random labels per task on the
    shared sets it is more than 0.01 below the constant prior on s_adult, trec, d_possent and
    wsd (wsd below majority vote; 5 seeds, ``benchmarks/active/results/active_sparse_bds_auto.md``;
    on seeds 10–14 also bluebird at three labels: 0.657 against 0.694, below majority vote's
    0.698, ``benchmarks/labels/results/bds_prevalence_guarded.md``), and a variant that keeps
    the constant at two labels per task loses on dog's three-label start (0.744 against 0.759;
    ``benchmarks/labels/results/bds_prevalence_candidate.md``).
    The constant's price on classes far from equal shares is large: 0.664 against majority
    vote's 0.819 with 5% positives and four labels per task, 0.717 against 0.865 with three
    classes at 0.80 / 0.15 / 0.05, where ``"auto"`` gets 0.952 and 0.922 (same report; every
    task there has three or more workers, so the variant is ``"auto"`` itself), and it shows
    at moderate imbalance too: 0.722 against 0.738 with 20% positives and two labels per
    task, 0.816 against 0.824 with 30% positives and three (``"auto"`` 0.850 and 0.854;
    ``benchmarks/labels/results/bds_prevalence_guarded.md``, which also refuses keeping the
    flat fit only where its answers follow the plurality vote more often: a right fit departs
    from the votes where it corrects them). Pass ``"auto"`` where the classes may be
    imbalanced (20–30% positives already cost accuracy). On balanced classes it costs a little
    (three labels per task: 0.843 against 0.849).

    Parameters
    ----------
    prior_diagonal, prior_off_diagonal : float
        Dirichlet prior concentrations of each confusion row on and off the diagonal. The default
        (2, 1) gives the right label a prior mean of 2/(K + 1) with K classes: 2/3 for two
        classes, weakly "more often right than wrong", but only even odds with three and 0.4
        with four. Keeping 2/3 for every K (off-diagonal 1/(K − 1)) was measured on the five
        shared sets with more than two classes (the starts of
        ``tests/models/labels/test_sparse_start.py``): at two random labels per task S_Adult
        0.651 → 0.721 and S_Rel 0.410 → 0.518 (majority vote 0.682, 0.455), but web 0.619 →
        0.565, and with every label web 0.809 → 0.781 and a higher log-loss on four of the
        five; the default is kept. Part of that S_Adult and S_Rel gap is the gold, not the
        fit: their gold tasks (3% and 22% of the tasks) have another class mix than the tasks
        the prevalence is learnt on, and the default fits with the prevalence divided out of
        each posterior score 0.726 and 0.506 (``tests/models/labels/test_sparse_start.py``).
    prior_prevalence : float or "auto"
        Symmetric Dirichlet concentration of the class prevalence; ``"auto"``: flat, or 100
        after a collapse (see above).
    calibrate : bool
        Report the posterior raised to the power ``calibration_exponent_`` ≤ 1, the smaller
        of the exponent under which held-out labels are best predicted (scored with
        :math:`\mathbb{E}\log\theta`, the factor VB's posterior multiplies per label) and
        the one of a task-difficulty model (:mod:`crowdbayes.models.labels._calibration`;
        answers unchanged). Off by default: a fit on Dask (:mod:`crowdbayes.distributed`)
        and :meth:`partial_fit` report the posterior itself, and the in-memory fit is kept
        equal to them. On simulated GLAD-difficulty data it takes claimed minus actual
        accuracy from +0.070 to -0.012 (binary, five labels a task) and from +0.084 to
        -0.005 (three classes, three labels a task; two draws each)
        (``benchmarks/defaults/results/calibration.md``).
    max_iter, tol, progress : see :class:`DawidSkene`.
    credible_level : float
        Mass of the reported central credible intervals.

    References
    ----------
    Simpson, E., Roberts, S., Psorakis, I. & Smith, A. (2013). Dynamic Bayesian combination of
    multiple imperfect classifiers. (Variational IBCC.)
    Plummer, M. (2015). Cuts in Bayesian graphical models. Statistics and Computing 25, 37–43.
    """

    _added_params = {"calibrate": False}  # files written before it: fitted without
    parameter_constraints = {
        "prior_diagonal": [POSITIVE],
        "prior_off_diagonal": [POSITIVE],
        "prior_prevalence": [POSITIVE, Options("auto")],
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "credible_level": [OPEN_UNIT],
        "calibrate": [bool],
        "progress": [bool],
    }
    needs_entropy = True
    cut_single_worker_tasks = True
    primary = ("alpha", "beta")
    history_name = "elbo_history_"
    _tags = {"warm_start": True, "partial_fit": True, "dask": True, "posterior": "approximate"}
    _traces = {"elbo_history_": "ELBO"}
    algorithm = "Bayesian Dawid-Skene VB"
    #: questions to whoever answers next (``strategy="auto"`` without ``available``): the
    #: entropy in bins, the likeliest answer changes within a bin. Chosen leave one set out
    #: (fewest sets lost) among seven rules when this model chooses and scores: 0.0015 above the
    #: plain entropy over 20 seeds on the twelve shared label sets, below it by more than a
    #: paired standard error on none (benchmarks/active/results/active_labels_taskonly_20seeds.md)
    task_question_strategy = "uncertainty_changes"

    def __init__(
        self,
        prior_diagonal: float = 2.0,
        prior_off_diagonal: float = 1.0,
        prior_prevalence: float | str = 100.0,
        max_iter: int = 500,
        tol: float | None = 1e-9,
        credible_level: float = 0.9,
        calibrate: bool = False,
        progress: bool = False,
    ) -> None:
        self.prior_diagonal = prior_diagonal
        self.prior_off_diagonal = prior_off_diagonal
        self.prior_prevalence = prior_prevalence
        self.max_iter = max_iter
        self.tol = tol
        self.credible_level = credible_level
        self.calibrate = calibrate
        self.progress = progress

    # ------------------------------------------------------------------ sufficient statistics
    #: ``prior_prevalence="auto"``: the concentration of the refit after a collapse
    collapse_prevalence = 100.0

    def _priors(self, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
        alpha = confusion_prior(n_classes, self.prior_diagonal, self.prior_off_diagonal)
        return alpha, np.full(n_classes, self._prevalence_concentration())

    def _prevalence_concentration(self) -> float:
        if self.prior_prevalence != "auto":
            return float(self.prior_prevalence)
        if not hasattr(self, "prior_prevalence_"):
            raise ValueError(
                "BayesianDawidSkene(prior_prevalence='auto') chooses its prior by refitting in "
                "memory (fit); this fit cannot (the distributed fit): pass a number"
            )
        return self.prior_prevalence_

    def _fit_with(self, labels, initial_globals, callback=None) -> None:
        """The in-memory fit; with ``prior_prevalence="auto"`` first under a flat prior, and
        again under ``collapse_prevalence`` when that fit empties a class (see above)."""
        fit_once = super()._fit_with

        def fit(concentration: float) -> np.ndarray:
            self.prior_prevalence_ = concentration  # read by _priors
            fit_once(labels, initial_globals, callback)
            return np.argmax(self.probas_.to_numpy(), axis=1)

        fit_with_prevalence_rule(labels, self.prior_prevalence, self.collapse_prevalence, fit)
        if self.calibrate:
            k = labels.n_classes
            probas = self.probas_.to_numpy().T
            alpha = self.confusion_posterior_.to_numpy().reshape(-1, k, k)
            self.calibration_exponent_ = calibration_exponent(
                labels, probas, alpha, expected_log=True
            )
            self.probas_[:] = temper(probas, self.calibration_exponent_).T

    def _set_fit(self, fit, ids) -> None:
        """See :meth:`StatsLabelModel._set_fit`. Every fit reports its posterior as it is
        (``calibration_exponent_`` = 1) — a distributed fit and ``partial_fit`` always, an
        in-memory fit until ``calibrate`` tempers it."""
        super()._set_fit(fit, ids)
        self.calibration_exponent_ = 1.0

    def global_update(self, stats: Stats) -> Globals:
        """q(θ) and q(π): prior concentrations plus the expected counts."""
        alpha_prior, beta_prior = self._priors(stats["classes"].shape[0])
        return self.from_primary(alpha_prior + stats["confusion"], beta_prior + stats["classes"])

    def from_primary(self, alpha: np.ndarray, beta: np.ndarray) -> Globals:
        return with_logs(
            {"alpha": alpha, "beta": beta},
            dirichlet_expected_log(alpha),
            dirichlet_expected_log(beta),
        )

    def objective(self, stats: Stats, before: Globals, after: Globals) -> float:
        r"""ELBO at q(c) of this sweep and the updated q(θ), q(π): the expected log joint is
        :math:`\sum_{jkx} n_{jkx}\,\mathbb{E}\log\theta_{jkx} + \sum_k (\sum_i r_{ik})
        \mathbb{E}\log\pi_k`, a function of the summed statistics only."""
        alpha_prior, beta_prior = self._priors(stats["classes"].shape[0])
        expected = float((stats["confusion"] * after["log_confusion"]).sum())
        expected += float(stats["classes"] @ after["log_prevalence"])
        return (
            expected
            + stats["entropy"]
            - dirichlet_kl(after["beta"], beta_prior)
            - dirichlet_kl(after["alpha"], alpha_prior).sum()
        )

    def new_worker_rows(self, n_classes: int) -> np.ndarray:
        """The prior q(θ_j) = p(θ_j) for a worker first seen in a warm start."""
        return self._priors(n_classes)[0]

    def _set_global_results(self, ids, globals_: Globals) -> None:
        beta, alpha = globals_["beta"], globals_["alpha"]
        self._set_prevalence(ids, beta / beta.sum())
        self.confusion_posterior_ = self._confusion_frame(ids, alpha)
        self._set_confusion(ids, *dirichlet_marginal_summary(alpha, self.credible_level))
