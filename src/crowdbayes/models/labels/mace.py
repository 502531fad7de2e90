r"""MACE: multi-annotator competence estimation (Hovy et al. 2013), by EM or variational Bayes."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from ..._utils import RandomState
from ...base import (
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    TOLERANCE,
    Options,
    PositivePair,
)
from ...data import Labels
from ...exceptions import ConvergenceWarning
from ...inference.driver import run_iterations
from ...maths import (
    beta_interval,
    dirichlet_expected_log,
    dirichlet_kl,
    finite_sum,
    safe_log,
    softmax_classes,
)
from ._base import clamp_gold, feedback_tasks, vote_share_start
from ._skills import SkillLabelModel, per_task_sum, per_worker_sum, weighted_votes

__all__ = ["MACE", "mace_local_step"]


def mace_counts(
    labels: Labels, resp: np.ndarray, honest: np.ndarray, counted: np.ndarray | None = None
) -> dict:
    """The expected counts of MACE's updates from class-major ``resp`` and each label's
    probability ``honest`` of not being spam, over the tasks ``counted`` (a boolean mask over
    tasks; default all)."""
    k = labels.n_classes
    kept = np.ones(len(honest)) if counted is None else counted[labels.task_codes].astype(float)
    spam = np.bincount(
        labels.worker_codes * k + labels.label_codes,
        weights=(1.0 - honest) * kept,
        minlength=labels.n_workers * k,
    ).reshape(labels.n_workers, k)
    counts = np.bincount(labels.worker_codes, weights=kept, minlength=labels.n_workers)
    return {
        "honest": per_worker_sum(labels, honest * kept),
        "spam": spam,
        "n": counts,
        "classes": (resp if counted is None else resp * counted).sum(axis=1),
    }


def mace_local_step(
    labels: Labels,
    log_trust: np.ndarray,
    log_spam: np.ndarray,
    log_strategy: np.ndarray,
    log_prevalence: np.ndarray | None = None,
    *,
    cut: bool = False,
) -> tuple[np.ndarray, float, dict]:
    r"""The task posteriors and expected counts of MACE given each worker's (expected)
    :math:`\log\theta_j`, :math:`\log(1-\theta_j)` and :math:`\log\xi_{jx}`.

    A label :math:`x` of worker :math:`j` has :math:`p(x \mid c = k) = \theta_j [x = k] +
    (1-\theta_j)\xi_{jx}`, so with :math:`s_l = \log(1-\theta_j) + \log\xi_{jx_l}` the task's
    log-likelihood of class :math:`k` is :math:`\sum_l s_l + \sum_l [x_l = k]
    (\log(e^{\log\theta_j} + e^{s_l}) - s_l)`. With the class prior ``log_prevalence``
    (default uniform) this gives the posteriors :math:`r_{ik}` and the log-evidence; label
    :math:`l` was not spam with probability
    :math:`r_{i x_l}\,\theta_j / (\theta_j + (1-\theta_j)\xi_{jx_l})`.

    With ``cut`` the tasks that one worker labelled (and without gold,
    :func:`~crowdbayes.models.labels._base.feedback_tasks`) are left out of the counts and the
    log-evidence (see :class:`MACE`).

    Returns ``(resp, log_evidence, stats)``, stats holding per worker the expected number of
    honest labels ``honest`` (n_workers,), of spam labels by class ``spam`` (n_workers, K) and
    the label counts ``n``, and the expected class counts ``classes`` (K,).
    """
    k = labels.n_classes
    spam = log_spam[labels.worker_codes] + log_strategy[labels.worker_codes, labels.label_codes]
    trust = log_trust[labels.worker_codes]
    either = np.logaddexp(trust, spam)
    log_lik = per_task_sum(labels, spam)[None, :] + weighted_votes(labels, either - spam)
    if log_prevalence is None:
        log_prevalence = np.full(k, -np.log(k))
    joint = clamp_gold(log_lik + log_prevalence[:, None], labels.gold_codes)
    resp, log_evidence = softmax_classes(joint)
    honest = resp[labels.label_codes, labels.task_codes] * np.exp(trust - either)
    counted = feedback_tasks(labels) if cut else None
    if counted is None or counted.all():
        return resp, float(log_evidence.sum()), mace_counts(labels, resp, honest)
    evidence = float(log_evidence[counted].sum())
    return resp, evidence, mace_counts(labels, resp, honest, counted)


def symmetric_dirichlet_concentration(
    counts: np.ndarray, start: float, *, steps: int = 50, bounds=(1e-3, 1e3)
) -> float:
    r"""The concentration :math:`\beta` of the symmetric Dirichlet(:math:`\beta`) that maximises
    the Dirichlet-multinomial likelihood of the count rows ``counts`` (J, K) (Minka 2000),

    .. math::
        L(\beta) = \sum_j \Big[\log\Gamma(K\beta) - \log\Gamma(N_j + K\beta)
        + \sum_x \log\Gamma(n_{jx} + \beta) - \log\Gamma(\beta)\Big],

    by Newton's method on :math:`u = \log\beta` from ``start`` (a step that does not raise
    :math:`L` is halved), kept within ``bounds``. Rows without counts carry no evidence; with
    none at all ``start`` comes back. Fractional (expected) counts are allowed."""
    from scipy.special import gammaln, polygamma

    k = counts.shape[1]
    totals = counts.sum(axis=1)
    counts, totals = counts[totals > 0], totals[totals > 0]
    if not len(totals):
        return float(start)

    def objective(beta: float) -> float:
        return float(
            (gammaln(k * beta) - gammaln(totals + k * beta)).sum()
            + (gammaln(counts + beta) - gammaln(beta)).sum()
        )

    low, high = np.log(bounds[0]), np.log(bounds[1])
    u = float(np.clip(np.log(start), low, high))
    value = objective(np.exp(u))
    for _ in range(steps):
        beta = np.exp(u)
        grad = (polygamma(0, counts + beta) - polygamma(0, beta)).sum() - k * (
            polygamma(0, totals + k * beta) - polygamma(0, k * beta)
        ).sum()
        hess = (polygamma(1, counts + beta) - polygamma(1, beta)).sum() - k * k * (
            polygamma(1, totals + k * beta) - polygamma(1, k * beta)
        ).sum()
        d1, d2 = beta * grad, beta * grad + beta * beta * hess  # derivatives in u
        step = -d1 / d2 if d2 < 0 else np.sign(d1)  # Newton where concave, else a unit step
        for _ in range(30):
            new = float(np.clip(u + step, low, high))
            new_value = objective(np.exp(new))
            if new_value >= value:
                break
            step /= 2
        else:
            break
        moved, u, value = abs(new - u), new, new_value
        if moved < 1e-8:
            break
    return float(np.exp(u))


class MACE(SkillLabelModel):
    r"""MACE (Hovy et al., 2013): each worker is either honest or spamming on each label.

    Model: :math:`c_i \sim \mathrm{Cat}(\pi)`; worker :math:`j` spams a label with probability
    :math:`1-\theta_j` (``spamming_``) and then draws it from its own strategy
    :math:`\xi_j` (a distribution over the classes), otherwise gives :math:`c_i`.

    - ``variational=False``: EM for the MAP estimate under :math:`\theta_j \sim
      \mathrm{Beta}(a+1, a+1)` and :math:`\xi_j \sim \mathrm{Dir}(a+1)`, ``a`` =
      ``smoothing``: :math:`\theta_j = (h_j + a)/(n_j + 2a)`, :math:`\xi_{jx} \propto
      s_{jx} + a`, with :math:`h_j` the expected honest labels and :math:`s_{jx}` the expected
      spam labels ``x`` (:func:`mace_local_step`). The log-posterior
      (``objective_history_``) never decreases at a given strategy prior; by default that
      prior is learned (see "Strategy prior").
    - ``variational=True``: mean-field VB with priors :math:`\theta_j \sim
      \mathrm{Beta}(\text{trust\_prior})` and :math:`\xi_j \sim
      \mathrm{Dir}(\text{strategy\_prior})`; :math:`q(\theta_j) = \mathrm{Beta}(a_0 + h_j,
      b_0 + n_j - h_j)`, :math:`q(\xi_j) = \mathrm{Dir}(\gamma_0 + s_j)`, and the local step
      uses :math:`\mathbb E\log\theta_j`, :math:`\mathbb E\log(1-\theta_j)`,
      :math:`\mathbb E\log\xi_{jx}`. The ELBO (``objective_history_``: the sum of the tasks'
      log-normalisers minus the KL terms, :math:`q(c, S)` being optimal per task) never
      decreases. ``spamming_`` then holds the posterior mean, sd and a ``credible_level``
      interval of :math:`1-\theta_j` (its exact Beta marginal).

    **Class prior.** Hovy et al. take :math:`\pi` uniform (``learn_prevalence=False``). With
    skewed classes that lets the spam strategies absorb the skew: on d_product (88% of one
    class, 3 labels per task) most workers come out as spammers who favour the common class and
    accuracy falls from 0.892 after one EM step to 0.841 at convergence. With
    ``learn_prevalence=True`` :math:`\pi` is learned as in Dawid–Skene (EM: :math:`\pi \propto
    \sum_i r_i + a_\pi`, a Dirichlet (:math:`a_\pi + 1`) MAP; VB: :math:`q(\pi) =
    \mathrm{Dir}(a_\pi + \sum_i r_i)`, its KL term in the ELBO), ``a_π`` =
    ``prior_prevalence``: 0.940 on d_product. But a learned :math:`\pi` can equally absorb a
    skew that belongs to the workers: with many one-class spammers it follows the classes they
    favour (4 classes, 80% one-class spammers: 0.615 against 0.641 uniform), and on web, whose
    workers over-use the top grade (34% of the labels, 23% of the gold), it learns 0.32 for that
    grade and loses 1.5 points to the uniform prior (a skew of honest workers, which MACE can
    only read as spam or as the class prior).

    *Which prior (``learn_prevalence="auto"``, an option).* Both are fitted and the one the data
    support is kept, a Bayesian model choice: EM compares the Bayesian information criterion
    (Schwarz 1978), the log-likelihood of the labels that feed back at each fit's estimates
    less :math:`\tfrac{K-1}{2}\log N` for the learned prior's :math:`K-1` free parameters
    (:math:`N` tasks that feed back); VB compares the ELBOs, lower bounds on the two log
    marginal likelihoods. The uniform prior is kept where learning one explains little
    (bluebird, temp: criterion 1.3-1.5 lower with it; the 4-class crowd with 80% one-class
    spammers: 9.1 lower, accuracy 0.641) and a learned one where the labels ask for it
    (duchenne +70.5, web +78.3, d_product, S_Adult: so web keeps its 1.5-point loss).
    ``class_prior_`` says which was kept and ``class_prior_scores_`` holds both scores. No
    setting is tuned: the penalty is the criterion's. It costs a second fit.

    *Why both defaults learn the class prior.* The criterion can prefer the wrong model: on
    imbalanced classes (10% positives, 10 workers, 3 labels per task, three simulated sets;
    ``tests/models/labels/test_imbalanced_classes.py``) the uniform prior's fit explains the
    skew as one-class spam with a *higher* criterion on two of the three sets, and ``"auto"``
    gets 0.752 against majority vote's 0.837 and the learned prior's 0.920. Against crowd-kit's
    MACE as the issue-40 bar reads it the two have the same worst margin over the twelve shared
    sets and eight spammer simulations (−0.012, S_Adult; the learned prior is 0.025 lower only
    on the 4-class 80% one-class spammer crowd, 0.615 against 0.641, where crowd-kit as given
    gets 0.26), so the choice that never loses to majority vote is the default.

    **Sparse data: tasks seen by one worker do not feed back.** A task labelled by one worker
    (and without gold) is labelled but cut from the counts :math:`h_j, s_{jx}, n_j` and the
    class counts, as in :class:`~crowdbayes.models.labels.BayesianDawidSkene` (Plummer 2015):
    its label can only agree with itself, and counted at its own posterior it reads the model's
    guess back as evidence of honesty or of a spam strategy. Without the cut, at one random
    label per task MACE ended far below majority vote (RTE 0.615 EM, 0.500 VB; web 0.233,
    0.234; against 0.740 and 0.559; ``benchmarks/active/active_sparse.py``); with it, a worker
    with no counted labels keeps the prior (EM: :math:`\theta_j = 1/2`, a uniform strategy), so
    such a task follows its label. The objective is that of the tasks that feed back.

    **Strategy prior.** A spammer's strategy :math:`\xi_j` has a flat Dirichlet(1) prior by
    default (VB's prior, and EM's start before it learns the strength, below). Hovy et al.'s
    implementation uses Dirichlet(10), which makes a spammer label almost uniformly, so a
    worker's bias towards one class can only be read as honest labels: with a
    handful of labels per worker that drags tasks to the favoured class, and at two random
    labels per task VB ended below majority vote on bluebird, S_Adult, TREC and web (0.562,
    0.585, 0.577, 0.436 against 0.639, 0.682, 0.614, 0.553; with Dirichlet(1) 0.636, 0.678,
    0.640, 0.592, ``tests/models/labels/test_sparse_start.py``). With every label, Dirichlet(1)
    has mean accuracy 0.847 over the 12 shared sets with gold against 0.843 (bluebird +0.037,
    duchenne −0.006, web −0.011) and mean log-loss 1.138 against 1.094
    (``benchmarks/labels/results/labels_accuracy_issue18.md``). EM at two labels per task stays
    below majority vote on S_Adult, 0.666 against 0.682: its gold tasks, 3% of the set's, have
    another class mix than the tasks the class prior is learnt on, and the same fits with that
    prior divided out score 0.734 (``tests/models/labels/test_sparse_start.py``).

    *Learned strength (EM's default, issue 40).* How uniform spammers are is a property of the
    crowd: one who clicks the first button has a one-class strategy, one who clicks at random a
    uniform one, and a fixed prior suits one kind only. A flat prior lets a few spam labels that
    happen to agree make a near-uniform spammer's strategy look skewed, so their labels are
    explained as spam for the class they favour (4 classes, 200 workers, 60-80% uniform
    spammers: 0.8 to 1 point below crowd-kit's Dirichlet(10)); Dirichlet(10) makes one-class
    spammers look honest and collapses those crowds (0.52 and 0.26 accuracy where Dirichlet(1)
    has 0.73 and 0.62). With ``learn_strategy_prior`` (None: EM yes, VB no) the prior is
    :math:`\xi_j \sim \mathrm{Dir}(\beta)` symmetric, :math:`\beta` chosen by type-II maximum
    likelihood (empirical Bayes): after the restarts, EM alternates the :math:`\beta` that
    maximises the Dirichlet-multinomial likelihood (Minka 2000) of the expected spam counts
    :math:`s_{jx}` (:func:`symmetric_dirichlet_concentration`) with EM to convergence at that
    :math:`\beta`, until :math:`\beta` moves by less than 1%; the strategies are then the
    posterior means :math:`\xi_{jx} = (s_{jx} + \beta) / (\sum_x s_{jx} + K\beta)` (the MAP
    under :math:`\mathrm{Dir}(\beta + 1)`), and ``strategy_concentration_`` holds :math:`\beta`.
    The restarts are chosen at the fixed prior, where their objectives are comparable; each
    round's EM is monotone in its own objective, which moves with :math:`\beta` between rounds.
    Results against crowd-kit's MACE and the fixed priors, leave one set out:
    ``benchmarks/labels/results/mace_vs_crowdkit.md``.

    **Restarts.** MACE's likelihood has modes that a single run from the vote shares can land
    in: with many workers who always give one class, the learned class prior can collapse onto
    that class and the one-class spammers are read as honest (binary, 200 workers, 80% spammers:
    0.52 accuracy, majority vote 0.62). As in Hovy et al. (10 random restarts of 50 EM
    iterations, the best log-likelihood kept), the fit runs ``restart_iter`` iterations from the
    vote shares (read with a trust of 1/2 and uniform strategies) and from ``n_restarts`` random
    starts (one local step under :math:`\theta_j \sim U(0, 1)`, :math:`\xi_j \sim
    \mathrm{Dir}(1)`, uniform classes), keeps the run with the highest objective (EM: the
    log-posterior; VB: the ELBO) and continues it to convergence; the collapsed example then
    reaches 0.73 (with the learned class prior; EM's default keeps the uniform one there, 0.726,
    see "Class prior"). ``restart_objectives_`` holds each start's objective after its burn-in
    (in the fit kept when both class priors are fitted) (the vote-share start first) and
    ``best_restart_`` the index of the one kept. With ``n_restarts=0`` the fit is one run from
    the vote shares (the default before issue 40, and still VB's: at two labels per task its
    restarts chose modes with a higher ELBO but a lower accuracy, below majority vote on
    bluebird and S_Adult, 0.627 and 0.676 against 0.639 and 0.682,
    ``tests/models/labels/test_sparse_start.py``). Crowd-kit 1.4.2's MACE draws every restart
    from the same seed, so its 10 restarts are one, and gives each worker another worker's spam
    counts unless the ids sort in their order of appearance
    (:func:`~crowdbayes.models.labels._mace_scenarios.appearance_sorted`); the comparison on the
    shared and simulated sets is in ``benchmarks/labels/results/mace_vs_crowdkit.md``.

    ``skills_`` is :math:`\theta_j`; ``confusion_`` is
    :math:`\theta_j [x = k] + (1-\theta_j)\xi_{jx}` (posterior means for VB).

    Parameters
    ----------
    variational : bool
        Variational Bayes (True) or EM (False).
    max_iter : int
    tol : float or None
        Stop when the objective changes by less than ``tol · max(1, |value|)``.
    smoothing : float
        EM's pseudo-counts (a spam strategy gets ``smoothing + strategy_prior - 1``).
    trust_prior : (a, b)
        VB's Beta prior of :math:`\theta_j` (Hovy et al.: 0.5, 0.5).
    strategy_prior : float
        Symmetric Dirichlet concentration of :math:`\xi_j` (1: flat; Hovy et al.'s
        implementation: 10; see above). VB's prior; EM's MAP under
        :math:`\mathrm{Dir}(\text{smoothing} + \text{strategy\_prior})`, so EM needs
        ``smoothing + strategy_prior >= 1``.
    learn_prevalence : bool, "auto" or None
        Learn the class prior, keep it uniform (Hovy et al.), or (``"auto"``) fit both and keep
        the one the data support (see "Class prior"); None: True.
    learn_strategy_prior : bool or None
        EM: learn the strategies' symmetric Dirichlet concentration by empirical Bayes,
        starting from ``smoothing + strategy_prior - 1`` pseudo-counts (see "Strategy prior");
        None: True for EM, False for VB (VB does not learn it).
    prior_prevalence : float
        Pseudo-counts (EM) or Dirichlet concentration (VB) of the class prior.
    n_restarts : int or None
        Random starts besides the vote-share start (0: one run; see "Restarts"); None: 10
        for EM, 0 for VB.
    restart_iter : int
        Iterations run from every start before the best is kept and continued.
    random_state : int, Generator or None
        Seeds the random starts.
    credible_level : float
    progress : bool

    References
    ----------
    Hovy, D., Berg-Kirkpatrick, T., Vaswani, A. & Hovy, E. (2013). Learning whom to trust with
    MACE. NAACL-HLT.
    Plummer, M. (2015). Cuts in Bayesian graphical models. Statistics and Computing 25, 37–43.
    Minka, T. (2000). Estimating a Dirichlet distribution. Technical report, MIT.
    Schwarz, G. (1978). Estimating the dimension of a model. Annals of Statistics 6, 461–464.
    """

    parameter_constraints = {
        "variational": [bool],
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "smoothing": [NON_NEGATIVE],
        "trust_prior": [PositivePair()],
        "strategy_prior": [POSITIVE],
        "learn_prevalence": [bool, Options("auto"), None],
        "prior_prevalence": [POSITIVE],
        "learn_strategy_prior": [bool, None],
        "n_restarts": [NON_NEGATIVE_INT, None],
        "restart_iter": [POSITIVE_INT],
        "random_state": RANDOM_STATE,
        "credible_level": [OPEN_UNIT],
        "progress": [bool],
    }
    history_name = "objective_history_"
    _traces = {"objective_history_": "objective"}
    #: leave the tasks that one worker labelled (and without gold) out of the counts (above)
    cut_single_worker_tasks = True
    #: rounds of the strategy prior's empirical-Bayes update (see "Strategy prior")
    strategy_prior_rounds = 20
    #: the EM strategy pseudo-counts learned so far in a fit (None: from the parameters)
    _learned_alpha: np.ndarray | None = None
    #: whether the run in progress learns the class prior (see "Class prior")
    _prevalence_learned: bool = True

    def get_tags(self):
        """The class's tags, with an approximate posterior when fitted by variational Bayes."""
        tags = super().get_tags()
        return replace(tags, posterior="approximate") if self.variational else tags

    def __init__(
        self,
        variational: bool = False,
        max_iter: int = 500,
        tol: float | None = 1e-7,
        smoothing: float = 0.1,
        trust_prior: tuple[float, float] = (0.5, 0.5),
        strategy_prior: float = 1.0,
        learn_prevalence: bool | str | None = None,
        prior_prevalence: float = 1.0,
        learn_strategy_prior: bool | None = None,
        n_restarts: int | None = None,
        restart_iter: int = 50,
        random_state: RandomState = 0,
        credible_level: float = 0.9,
        progress: bool = False,
    ) -> None:
        self.variational = variational
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.trust_prior = trust_prior
        self.strategy_prior = strategy_prior
        self.learn_prevalence = learn_prevalence
        self.prior_prevalence = prior_prevalence
        self.learn_strategy_prior = learn_strategy_prior
        self.n_restarts = n_restarts
        self.restart_iter = restart_iter
        self.random_state = random_state
        self.credible_level = credible_level
        self.progress = progress

    # ------------------------------------------------------------------ the two updates
    def _update(self, stats: dict) -> dict:
        """The globals from the expected counts (EM: MAP values; VB: posterior parameters),
        with the logs the local step uses."""
        honest, spam, n = stats["honest"], stats["spam"], stats["n"]
        k = spam.shape[1]
        classes = stats["classes"] + self.prior_prevalence
        if not self._prevalence_learned:
            log_prevalence = np.full(k, -np.log(k))
        elif self.variational:
            log_prevalence = dirichlet_expected_log(classes)
        else:
            log_prevalence = safe_log(classes / classes.sum())
        if self.variational:
            a0, b0 = np.asarray(self.trust_prior, dtype=np.float64)
            trust = np.stack([a0 + honest, b0 + np.maximum(n - honest, 0.0)], axis=1)
            strategy = self.strategy_prior + spam
            expected = dirichlet_expected_log(trust)
            return {
                "trust": trust,
                "strategy": strategy,
                "prevalence": classes,
                "logs": (
                    expected[:, 0],
                    expected[:, 1],
                    dirichlet_expected_log(strategy),
                    log_prevalence,
                ),
            }
        a, b = self.smoothing, self._strategy_pseudo_counts()
        with np.errstate(invalid="ignore", divide="ignore"):
            theta = np.where(n + 2 * a > 0, (honest + a) / (n + 2 * a), 0.5)
            totals = (spam + b).sum(axis=1, keepdims=True)
            strategy = np.where(totals > 0, (spam + b) / totals, 1.0 / spam.shape[1])
        return {
            "trust": theta,
            "strategy": strategy,
            "prevalence": classes,
            "logs": (safe_log(theta), safe_log(1.0 - theta), safe_log(strategy), log_prevalence),
        }

    def _strategy_pseudo_counts(self) -> float | np.ndarray:
        """EM's pseudo-counts of a spam strategy: ``smoothing + strategy_prior - 1`` (the MAP
        under :math:`\\mathrm{Dir}(\\text{smoothing} + \\text{strategy\\_prior})`), or the
        learned :math:`\\alpha` (K,) once the fit has learned it (see "Strategy prior")."""
        if self._learned_alpha is not None:
            return self._learned_alpha
        return self.smoothing + self.strategy_prior - 1.0

    def _penalty(self, globals_: dict) -> float:
        """EM: the log-prior of the MAP globals; VB: minus the KL terms of q(θ), q(ξ)."""
        if self.variational:
            a0, b0 = self.trust_prior
            k = globals_["strategy"].shape[1]
            kl = dirichlet_kl(globals_["trust"], np.array([a0, b0], dtype=np.float64)).sum()
            kl += dirichlet_kl(globals_["strategy"], np.full(k, self.strategy_prior)).sum()
            if self._prevalence_learned:
                kl += dirichlet_kl(globals_["prevalence"], np.full(k, self.prior_prevalence))
            return -float(kl)
        log_trust, log_spam, log_strategy, log_prevalence = globals_["logs"]
        value = self.smoothing * finite_sum(np.concatenate([log_trust, log_spam]))
        value += finite_sum((self._strategy_pseudo_counts() * log_strategy).ravel())
        if self._prevalence_learned:
            value += self.prior_prevalence * finite_sum(log_prevalence)
        return value

    def _fit(self, labels: Labels) -> None:
        self._learned_alpha = None
        if self.variational and self.learn_strategy_prior:
            raise ValueError(
                "MACE: learn_strategy_prior=True is EM's (variational=False); VB keeps its "
                "strategy_prior fixed"
            )
        if not self.variational and self._strategy_pseudo_counts() < 0:
            raise ValueError(
                "MACE: EM needs smoothing + strategy_prior >= 1 (its strategies are the MAP under "
                f"Dir(smoothing + strategy_prior)); got smoothing={self.smoothing}, "
                f"strategy_prior={self.strategy_prior}. Raise one of them or pass variational=True"
            )
        cut = self.cut_single_worker_tasks
        counted = feedback_tasks(labels) if cut else None
        mode = self._prevalence_mode()
        options = (False, True) if mode == "auto" else (mode,)
        runs = {}
        for learned in options:
            self._prevalence_learned = learned
            runs[learned] = self._run(labels, counted, cut)
        scores = {
            learned: self._class_prior_score(labels, run, counted, cut)
            for learned, run in runs.items()
        }
        chosen = max(scores, key=scores.get)
        run = runs[chosen]
        self._prevalence_learned, self._learned_alpha = chosen, run["alpha"]
        self.class_prior_ = "learned" if chosen else "uniform"
        self.class_prior_scores_ = pd.Series(
            {"learned" if learned else "uniform": score for learned, score in scores.items()},
            name="score",
        )
        self.restart_objectives_, self.best_restart_ = run["restart_objectives"], run["best"]
        self.strategy_concentration_ = None if run["alpha"] is None else float(run["alpha"][0])
        fit = run["fit"]
        if not fit.converged and self.tol is not None:
            warnings.warn(
                f"MACE did not converge in {self.max_iter} iterations (tol={self.tol}); "
                "increase max_iter or tol",
                ConvergenceWarning,
                stacklevel=3,
            )
        self.n_iter_, self.converged_ = run["n_iter"], fit.converged
        self.objective_history_ = np.array(run["history"])
        resp, _, _ = mace_local_step(labels, *run["globals"]["logs"])
        self._set_mace_results(labels, resp, run["globals"])

    def _run(self, labels: Labels, counted: np.ndarray | None, cut: bool) -> dict:
        """One fit at the class prior ``_prevalence_learned``: the restarts, the best continued
        to convergence, and (EM) the strategy prior learned. Returns its globals, last run,
        history, iterations, restart objectives, best restart and learned pseudo-counts."""
        self._learned_alpha = None
        rng = self.random_generator()
        starts = [self._vote_share_start(labels, counted)]
        starts += [self._random_start(labels, rng, cut) for _ in range(self._n_restarts())]
        burn_in = self.max_iter if len(starts) == 1 else min(self.restart_iter, self.max_iter)
        runs = [self._iterate(labels, start, burn_in, cut) for start in starts]
        best = max(range(len(runs)), key=lambda r: runs[r][1].history[-1])
        globals_, fit = runs[best]
        history, n_iter = list(fit.history), fit.n_iter
        if not fit.converged and n_iter < self.max_iter:
            globals_, fit = self._iterate(labels, globals_, self.max_iter - n_iter, cut)
            history += fit.history
            n_iter += fit.n_iter
        if self._learns_strategy_prior():
            globals_, fit, more = self._learn_strategy_prior(labels, globals_, fit, n_iter, cut)
            history += more
            n_iter += len(more)
        return {
            "globals": globals_,
            "fit": fit,
            "history": history,
            "n_iter": n_iter,
            "restart_objectives": np.array([run.history[-1] for _, run in runs]),
            "best": best,
            "alpha": self._learned_alpha,
            "learned": self._prevalence_learned,
        }

    def _class_prior_score(
        self, labels: Labels, run: dict, counted: np.ndarray | None, cut: bool
    ) -> float:
        r"""How well a run's class prior is supported (see "Class prior"). VB: its ELBO, a
        lower bound on the log marginal likelihood of either prior. EM: the Bayesian
        information criterion (Schwarz 1978): the log-likelihood of the labels that feed back at
        the run's estimates, less :math:`\frac{K-1}{2}\log N` for a learned prior (:math:`N`
        tasks that feed back)."""
        if self.variational:
            return float(run["history"][-1])
        _, log_likelihood, _ = mace_local_step(labels, *run["globals"]["logs"], cut=cut)
        if not run["learned"]:
            return log_likelihood
        n = labels.n_tasks if counted is None else int(counted.sum())
        return log_likelihood - 0.5 * (labels.n_classes - 1) * np.log(max(n, 1))

    def _prevalence_mode(self) -> bool | str:
        """``learn_prevalence``, or by default True (see "Class prior")."""
        if self.learn_prevalence is not None:
            return self.learn_prevalence
        return True

    def _learns_strategy_prior(self) -> bool:
        """``learn_strategy_prior``, or by default True for EM and False for VB."""
        if self.learn_strategy_prior is not None:
            return self.learn_strategy_prior
        return not self.variational

    def _learn_strategy_prior(self, labels: Labels, globals_: dict, fit, n_iter: int, cut: bool):
        r"""Empirical Bayes for the spam strategies' symmetric Dirichlet (see "Strategy
        prior"): from the converged ``globals_`` (after ``fit``, ``n_iter`` iterations so far),
        alternate :func:`symmetric_dirichlet_concentration` on the expected spam counts and EM
        to convergence at that :math:`\beta`, until :math:`\beta` moves by less than 1% or
        ``max_iter`` is spent. Returns the globals, the last run and the objectives of the
        iterations run here."""
        beta = float(self._strategy_pseudo_counts())
        history: list[float] = []
        for _ in range(self.strategy_prior_rounds):
            _, _, stats = mace_local_step(labels, *globals_["logs"], cut=cut)
            new = symmetric_dirichlet_concentration(stats["spam"], beta)
            moved, beta = abs(np.log(new / beta)), new
            self._learned_alpha = np.full(labels.n_classes, beta)
            globals_ = self._update(stats)  # the M-step at the new β
            left = self.max_iter - n_iter - len(history)
            if moved < 1e-2 or left <= 0:
                break
            globals_, fit = self._iterate(labels, globals_, left, cut)
            history += fit.history
        return globals_, fit, history

    def _n_restarts(self) -> int:
        """``n_restarts``, or by default 10 for EM and none for VB (see "Restarts")."""
        if self.n_restarts is not None:
            return self.n_restarts
        return 0 if self.variational else 10

    def _vote_share_start(self, labels: Labels, counted: np.ndarray | None) -> dict:
        """The globals from each task's vote shares, read with a trust of 1/2 and uniform
        strategies."""
        resp = vote_share_start(labels)
        p_true = resp[labels.label_codes, labels.task_codes]
        honest = p_true * 0.5 / (0.5 + 0.5 / labels.n_classes)
        return self._update(mace_counts(labels, resp, honest, counted))

    def _random_start(self, labels: Labels, rng: np.random.Generator, cut: bool) -> dict:
        r"""The globals after one local step under random worker parameters:
        :math:`\theta_j \sim U(0, 1)`, :math:`\xi_j \sim \mathrm{Dir}(1)`, uniform classes."""
        theta = rng.uniform(0.0, 1.0, size=labels.n_workers)
        strategy = rng.dirichlet(np.ones(labels.n_classes), size=labels.n_workers)
        logs = (safe_log(theta), safe_log(1.0 - theta), safe_log(strategy))
        _, _, stats = mace_local_step(labels, *logs, cut=cut)
        return self._update(stats)

    def _iterate(self, labels: Labels, globals_: dict, max_iter: int, cut: bool):
        """Alternate the local step and the update from ``globals_`` up to ``max_iter`` times;
        returns the last globals and the :class:`~crowdbayes.inference.driver.IterationResult`
        (its history: the objective of each iteration's incoming globals)."""
        state = {"globals": globals_}

        def step(iteration: int) -> float:
            current = state["globals"]
            _, log_evidence, stats = mace_local_step(labels, *current["logs"], cut=cut)
            state["globals"] = self._update(stats)
            return log_evidence + self._penalty(current)

        fit = run_iterations(
            step,
            max_iter=max_iter,
            tol=self.tol,
            progress=self.progress,
            desc="MACE VB" if self.variational else "MACE EM",
            warn_name=None,
        )
        return state["globals"], fit

    def _set_mace_results(self, labels: Labels, resp: np.ndarray, globals_: dict) -> None:
        workers = pd.Index(labels.workers, name="worker")
        if self.variational:
            trust = globals_["trust"]
            theta = trust[:, 0] / trust.sum(axis=1)
            strategy = globals_["strategy"] / globals_["strategy"].sum(axis=1, keepdims=True)
            total = trust.sum(axis=1)
            var = theta * (1 - theta) / (total + 1)
            low, high = beta_interval(1 - theta, var, self.credible_level)
            self.spamming_ = pd.DataFrame(
                {"mean": 1 - theta, "sd": np.sqrt(var), "lower": low, "upper": high}, index=workers
            )
            self.credible_level_ = self.credible_level
        else:
            theta, strategy = globals_["trust"], globals_["strategy"]
            self.spamming_ = pd.DataFrame({"mean": 1 - theta}, index=workers)
        self.strategy_ = pd.DataFrame(
            strategy, index=workers, columns=pd.Index(labels.classes, name="class")
        )
        eye = np.eye(labels.n_classes)
        confusion = theta[:, None, None] * eye + (1 - theta)[:, None, None] * strategy[:, None, :]
        self._set_task_results(labels, resp)
        self.skills_ = pd.Series(theta, index=workers, name="skill")
        self._set_confusion(labels, confusion)
        if self._prevalence_learned:
            prevalence = globals_["prevalence"]
        else:  # the class shares of the tasks that feed back (all, when none does)
            counted = feedback_tasks(labels) if self.cut_single_worker_tasks else None
            kept = resp if counted is None or not counted.any() else resp[:, counted]
            prevalence = kept.sum(axis=1)
        self._set_prevalence(labels, prevalence / prevalence.sum())
