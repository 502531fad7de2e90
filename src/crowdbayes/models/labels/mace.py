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
      (``objective_history_``) never decreases.
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
    accuracy falls from 0.892 after one EM step to 0.841 at convergence. By default :math:`\pi`
    is learned as in Dawid–Skene (EM: :math:`\pi \propto \sum_i r_i + a_\pi`, a Dirichlet
    (:math:`a_\pi + 1`) MAP; VB: :math:`q(\pi) = \mathrm{Dir}(a_\pi + \sum_i r_i)`, its
    KL term in the ELBO), ``a_π`` = ``prior_prevalence``: 0.940 on d_product.

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
    default. Hovy et al.'s implementation uses Dirichlet(10), which makes a spammer label almost
    uniformly, so a worker's bias towards one class can only be read as honest labels: with a
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

    **Restarts.** MACE's likelihood has modes that a single run from the vote shares can land
    in: with many workers who always give one class, the learned class prior can collapse onto
    that class and the one-class spammers are read as honest (binary, 200 workers, 80% spammers:
    0.52 accuracy, majority vote 0.62). As in Hovy et al. (10 random restarts of 50 EM
    iterations, the best log-likelihood kept), the fit runs ``restart_iter`` iterations from the
    vote shares (read with a trust of 1/2 and uniform strategies) and from ``n_restarts`` random
    starts (one local step under :math:`\theta_j \sim U(0, 1)`, :math:`\xi_j \sim
    \mathrm{Dir}(1)`, uniform classes), keeps the run with the highest objective (EM: the
    log-posterior; VB: the ELBO) and continues it to convergence; the collapsed example then
    reaches 0.73. ``restart_objectives_`` holds each start's objective after its burn-in (the
    vote-share start first) and ``best_restart_`` the index of the one kept. With
    ``n_restarts=0`` the fit is one run from the vote shares (the default before issue 40, and
    still VB's: at two labels per task its restarts chose modes with a higher ELBO but a lower
    accuracy, below majority vote on bluebird and S_Adult, 0.627 and 0.676 against 0.639 and
    0.682, ``tests/models/labels/test_sparse_start.py``).
    Crowd-kit 1.4.2's MACE draws every restart from the same seed, so its 10 restarts are one;
    the comparison on the shared and simulated sets is in
    ``benchmarks/labels/results/mace_vs_crowdkit.md``.

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
    learn_prevalence : bool
        Learn the class prior (default) or keep it uniform (Hovy et al.).
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
    """

    parameter_constraints = {
        "variational": [bool],
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "smoothing": [NON_NEGATIVE],
        "trust_prior": [PositivePair()],
        "strategy_prior": [POSITIVE],
        "learn_prevalence": [bool],
        "prior_prevalence": [POSITIVE],
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
        learn_prevalence: bool = True,
        prior_prevalence: float = 1.0,
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
        if not self.learn_prevalence:
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

    def _strategy_pseudo_counts(self) -> float:
        """EM's pseudo-counts of a spam strategy: ``smoothing + strategy_prior - 1`` (the MAP
        under :math:`\\mathrm{Dir}(\\text{smoothing} + \\text{strategy\\_prior})`)."""
        return self.smoothing + self.strategy_prior - 1.0

    def _penalty(self, globals_: dict) -> float:
        """EM: the log-prior of the MAP globals; VB: minus the KL terms of q(θ), q(ξ)."""
        if self.variational:
            a0, b0 = self.trust_prior
            k = globals_["strategy"].shape[1]
            kl = dirichlet_kl(globals_["trust"], np.array([a0, b0], dtype=np.float64)).sum()
            kl += dirichlet_kl(globals_["strategy"], np.full(k, self.strategy_prior)).sum()
            if self.learn_prevalence:
                kl += dirichlet_kl(globals_["prevalence"], np.full(k, self.prior_prevalence))
            return -float(kl)
        log_trust, log_spam, log_strategy, log_prevalence = globals_["logs"]
        value = self.smoothing * finite_sum(np.concatenate([log_trust, log_spam]))
        value += self._strategy_pseudo_counts() * finite_sum(log_strategy.ravel())
        if self.learn_prevalence:
            value += self.prior_prevalence * finite_sum(log_prevalence)
        return value

    def _fit(self, labels: Labels) -> None:
        if not self.variational and self._strategy_pseudo_counts() < 0:
            raise ValueError(
                "MACE: EM needs smoothing + strategy_prior >= 1 (its strategies are the MAP under "
                f"Dir(smoothing + strategy_prior)); got smoothing={self.smoothing}, "
                f"strategy_prior={self.strategy_prior}. Raise one of them or pass variational=True"
            )
        cut = self.cut_single_worker_tasks
        counted = feedback_tasks(labels) if cut else None
        rng = self.random_generator()
        starts = [self._vote_share_start(labels, counted)]
        starts += [self._random_start(labels, rng, cut) for _ in range(self._n_restarts())]
        burn_in = self.max_iter if len(starts) == 1 else min(self.restart_iter, self.max_iter)
        single = len(starts) == 1  # one run warns itself when it does not converge
        runs = [self._iterate(labels, start, burn_in, cut, warn=single) for start in starts]
        best = max(range(len(runs)), key=lambda r: runs[r][1].history[-1])
        self.restart_objectives_ = np.array([fit.history[-1] for _, fit in runs])
        self.best_restart_ = best
        globals_, fit = runs[best]
        history, n_iter = list(fit.history), fit.n_iter
        if not fit.converged and n_iter < self.max_iter:
            globals_, fit = self._iterate(labels, globals_, self.max_iter - n_iter, cut, warn=False)
            history += fit.history
            n_iter += fit.n_iter
        if not single and not fit.converged and self.tol is not None:
            warnings.warn(
                f"MACE did not converge in {self.max_iter} iterations (tol={self.tol}); "
                "increase max_iter or tol",
                ConvergenceWarning,
                stacklevel=3,
            )
        self.n_iter_, self.converged_ = n_iter, fit.converged
        self.objective_history_ = np.array(history)
        resp, _, _ = mace_local_step(labels, *globals_["logs"])
        self._set_mace_results(labels, resp, globals_)

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

    def _iterate(self, labels: Labels, globals_: dict, max_iter: int, cut: bool, *, warn: bool):
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
            warn_name="MACE" if warn else None,
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
        prevalence = globals_["prevalence"] if self.learn_prevalence else resp.sum(axis=1)
        self._set_prevalence(labels, prevalence / prevalence.sum())
