"""Community Dawid–Skene: workers in latent communities whose confusion priors are learnt."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...annotators import confusion_statistics, label_log_likelihood
from ...annotators.hierarchical import dirichlet_multinomial_log_likelihoods, fit_dirichlet_rows
from ...base import OPEN_UNIT, POSITIVE, POSITIVE_INT, TOLERANCE, Options
from ...data import Labels
from ...inference import run_iterations
from ...maths import beta_interval, softmax_classes
from ._base import (
    LabelModel,
    clamp_gold,
    feedback_tasks,
    fit_with_prevalence_rule,
    vote_share_start,
)

__all__ = ["CommunityDawidSkene"]


class CommunityDawidSkene(LabelModel):
    r"""Dawid–Skene with workers grouped in latent communities, each with a learnt Dirichlet prior
    over its members' confusion matrices (a Dirichlet form of CommunityBCC, Venanzi et al. 2014).

    Model:

    .. math::
        \pi &\sim \mathrm{Dir}(\beta), \quad c_i \sim \mathrm{Cat}(\pi), \quad
        z_j \sim \mathrm{Cat}(\rho), \\
        \theta_{jk:} \mid z_j = m &\sim \mathrm{Dir}(\alpha_{mk:}), \quad
        x_{ij} \sim \mathrm{Cat}(\theta_{j c_i :}).

    Inference iterates to a fixed point, with expected counts
    :math:`n_{jkx} = \sum_i r_{ik} A_{i,jx}`:

    - communities, exact given the counts (θ integrated out):
      :math:`q(z_j = m) \propto \rho_m \prod_k \mathrm{DirMult}(n_{jk:} \mid \alpha_{mk:})`;
    - each worker's posterior predictive confusion (a mixture of Dirichlet posteriors)
      :math:`\bar\theta_{jkx} = \sum_m q(z_j=m)\,(\alpha_{mkx} + n_{jkx}) / (S_{mk} + N_{jk})`;
    - tasks: :math:`\log r_{ik} = \log \mathbb{E}[\pi_k] + \sum_{j,x} A_{i,jx}
      \log\bar\theta_{jkx}` + const — the predictive :math:`\log\mathbb{E}[\theta]`, not
      mean-field VB's :math:`\mathbb{E}[\log\theta]`, whose digamma makes workers with few labels
      look sharper than they are;
    - empirical Bayes: :math:`\alpha_m` by Minka's fixed point on the
      :math:`q(z)`-weighted Dirichlet-multinomial likelihood, each row's total capped at
      ``max_prior_scale · K`` (without a cap one class's prior can run away and absorb others);
      :math:`\rho_m \propto \sum_j q(z_j = m) + 1`.

    Communities start from the workers' agreement with majority vote, split into
    ``n_communities`` equal groups (low to high), and every community prior from
    ``initial_concentration`` off the diagonal and twice that on it (workers better than
    chance), fitted to those counts.

    Tasks that one worker labelled (and that have no gold) are labelled but cut from the
    counts, the communities and the prevalence, as in :class:`BayesianDawidSkene`: such a
    label only agrees with itself, so letting it feed back makes every worker look perfect
    and can put every task in one class (RTE with one label per task: accuracy 0.500 claiming
    0.976). With no evidence left, a community prior stays at its start and a task follows
    its label, as majority vote does.

    **Prevalence prior.** With two random labels per task a flat Dirichlet(1) prior on
    :math:`\pi` lets the fit slide towards fewer classes than the labels support (bluebird
    0.556, web 0.505 against majority vote's 0.639 and 0.553, mean of three starts: every task
    in one class, or three of five classes used); a Dirichlet(30) (the classes' shares are
    not extreme unless the data show it) ends that (0.679 and 0.642). But kept everywhere,
    that prior pulls imbalanced classes towards equal shares: on simulated data with ten per
    cent positives and three labels per task it scored 0.765 against majority vote's 0.837
    (flat: 0.907). The default ``prior_prevalence="auto"`` therefore fits with the flat prior
    and refits with Dirichlet(30) only when that fit empties a class the labels support
    (:func:`~crowdbayes.models.labels._base.vanished_classes`: one that majority vote gives
    at least 5% of the tasks ends with at most a tenth of that); ``prior_prevalence_`` says
    which was used. No shared set is more than 0.005 below majority vote at one or two labels
    per task (``tests/models/labels/test_sparse_start.py``), the simulated imbalanced data
    score 0.907 (``tests/models/labels/test_imbalanced_classes.py``), and with every label
    the mean over the 12 shared sets is 0.852 (0.851 with Dirichlet(30) throughout; duchenne
    +0.006, s_rel +0.005, web −0.010; ``benchmarks/active/results/active_sparse_community.md``).

    Parameters
    ----------
    n_communities : int
    prior_prevalence : float or "auto"
        Symmetric Dirichlet concentration β of the prevalence; ``"auto"``: flat, or 30 after a
        collapse (see above).
    max_prior_scale : float
        Cap on each community prior row's total concentration, per class.
    initial_concentration : float
        Starting off-diagonal prior concentration (the diagonal starts at twice it) before
        the first empirical-Bayes fit.
    max_iter, tol : int, float
        Stop when no task probability changes by more than ``tol`` in an iteration.
    prior_steps : int
        Fixed-point steps of the prior update per iteration.
    credible_level : float
        Mass of the reported intervals (Beta with the mixture's mean and variance).
    progress : bool

    References
    ----------
    Venanzi, M., Guiver, J., Kazai, G., Kohli, P. & Shokouhi, M. (2014). Community-based
    Bayesian aggregation models for crowdsourcing. WWW 2014.
    Minka, T. (2000). Estimating a Dirichlet distribution.
    """

    _tags = {"posterior": "approximate"}
    _traces = {"change_history_": "largest change per iteration"}
    parameter_constraints = {
        "n_communities": [POSITIVE_INT],
        "prior_prevalence": [POSITIVE, Options("auto")],
        "max_prior_scale": [POSITIVE],
        "initial_concentration": [POSITIVE],
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "prior_steps": [POSITIVE_INT],
        "credible_level": [OPEN_UNIT],
        "progress": [bool],
    }

    def __init__(
        self,
        n_communities: int = 3,
        prior_prevalence: float | str = "auto",
        max_prior_scale: float = 4.0,
        initial_concentration: float = 1.0,
        max_iter: int = 1000,
        tol: float | None = 1e-6,
        prior_steps: int = 5,
        credible_level: float = 0.9,
        progress: bool = False,
    ) -> None:
        self.n_communities = n_communities
        self.prior_prevalence = prior_prevalence
        self.max_prior_scale = max_prior_scale
        self.initial_concentration = initial_concentration
        self.max_iter = max_iter
        self.tol = tol
        self.prior_steps = prior_steps
        self.credible_level = credible_level
        self.progress = progress

    #: ``prior_prevalence="auto"``: the concentration of the refit after a collapse
    collapse_prevalence = 30.0

    def _fit(self, labels: Labels) -> None:
        last = {}

        def fit(concentration: float) -> np.ndarray:
            last["state"], last["result"] = self._run(labels, concentration)
            return np.argmax(last["state"]["resp"], axis=0)

        self.prior_prevalence_ = fit_with_prevalence_rule(
            labels, self.prior_prevalence, self.collapse_prevalence, fit
        )
        state, result = last["state"], last["result"]
        self.n_iter_, self.converged_ = result.n_iter, result.converged
        self.change_history_ = np.array(result.history)
        self._summarise(labels, state)

    def _run(self, labels: Labels, prior_prevalence: float) -> tuple[dict, object]:
        """The fixed-point iterations with a Dirichlet(``prior_prevalence``) on π: the final
        state and the iterations' summary."""
        n_classes, n_groups = labels.n_classes, self.n_communities
        cap = self.max_prior_scale * n_classes
        counted = feedback_tasks(labels)

        def statistics(resp: np.ndarray) -> np.ndarray:
            return confusion_statistics(labels, resp * counted, sums_to_one=counted.all())

        state = {"resp": vote_share_start(labels)}
        stats = statistics(state["resp"])
        membership = _initial_communities(stats, n_groups)
        start = float(self.initial_concentration) * (1.0 + np.eye(n_classes))
        state["alpha"] = np.stack(
            [
                fit_dirichlet_rows(start, stats, membership[:, m], steps=20, max_scale=cap)
                for m in range(n_groups)
            ]
        )
        state["membership"], state["weights"] = membership, membership.mean(axis=0)
        state["counted"] = counted
        state["prior_prevalence"] = prior_prevalence

        def update_communities(stats: np.ndarray) -> None:
            log_member = np.log(state["weights"]) + dirichlet_multinomial_log_likelihoods(
                stats[:, None], state["alpha"][None]
            ).sum(axis=-1)  # (workers, communities)
            state["membership"] = softmax_classes(log_member.T)[0].T
            state["weights"] = (state["membership"].sum(axis=0) + 1) / (len(stats) + n_groups)
            state["alpha"] = np.stack(
                [
                    fit_dirichlet_rows(
                        state["alpha"][m],
                        stats,
                        state["membership"][:, m],
                        steps=self.prior_steps,
                        max_scale=cap,
                    )
                    for m in range(n_groups)
                ]
            )

        def step(_: int) -> float:
            stats = statistics(state["resp"])
            update_communities(stats)
            state["stats"] = stats
            mean, _ = _predictive_moments(stats, state["alpha"], state["membership"])
            log_lik, _ = label_log_likelihood(labels, np.log(mean))
            prevalence = prior_prevalence + (state["resp"] * counted).sum(axis=1)
            log_joint = clamp_gold(np.log(prevalence)[:, None] + log_lik, labels.gold_codes)
            resp = softmax_classes(log_joint)[0]
            change = float(np.abs(resp - state["resp"]).max())
            state["resp"] = resp
            return change

        result = run_iterations(
            step,
            max_iter=self.max_iter,
            tol=self.tol,
            monitor="change",
            progress=self.progress,
            desc="community Dawid-Skene",
            warn_name="CommunityDawidSkene",
        )
        return state, result

    def _summarise(self, labels: Labels, state: dict) -> None:
        resp = state["resp"]
        self._set_task_results(labels, resp)
        prevalence = state["prior_prevalence"] + (resp * state["counted"]).sum(axis=1)
        self._set_prevalence(labels, prevalence / prevalence.sum())
        mean, variance = _predictive_moments(state["stats"], state["alpha"], state["membership"])
        lower, upper = beta_interval(mean, variance, self.credible_level)
        self._set_confusion(labels, mean, np.sqrt(variance), lower, upper, self.credible_level)
        communities = pd.RangeIndex(self.n_communities, name="community")
        self.communities_ = pd.DataFrame(
            state["membership"], index=labels.workers, columns=communities
        )
        self.community_weights_ = pd.Series(state["weights"], index=communities, name="weight")
        index = pd.MultiIndex.from_product(
            [communities, labels.classes], names=["community", "true"]
        )
        self.community_prior_ = pd.DataFrame(
            state["alpha"].reshape(-1, labels.n_classes),
            index=index,
            columns=pd.Index(labels.classes, name="observed"),
        )


def _initial_communities(stats: np.ndarray, n_groups: int) -> np.ndarray:
    """Soft memberships from ranking workers by agreement with the starting labels."""
    n_workers = len(stats)
    agreement = np.trace(stats, axis1=1, axis2=2) / np.maximum(stats.sum(axis=(1, 2)), 1e-12)
    group = np.argsort(np.argsort(agreement, kind="stable"), kind="stable") * n_groups // n_workers
    membership = np.full((n_workers, n_groups), 0.1 / n_groups)
    membership[np.arange(n_workers), group] += 0.9
    return membership


def _predictive_moments(stats, alpha, membership) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of every confusion cell under the mixture of Dirichlet posteriors.

    Component m of worker j, row k is Dir(α_mk + n_jk); its cells have Beta marginals, and the
    mixture over communities (weights q(z_j = m)) has the law-of-total-variance moments.
    """
    posterior = alpha[None] + stats[:, None]  # (workers, communities, K, K)
    total = posterior.sum(axis=-1, keepdims=True)
    component_mean = posterior / total
    component_second = component_mean * (1 - component_mean) / (total + 1) + component_mean**2
    weights = membership[:, :, None, None]
    mean = (weights * component_mean).sum(axis=1)
    variance = np.maximum((weights * component_second).sum(axis=1) - mean**2, 0.0)
    return mean, variance
