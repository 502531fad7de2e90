"""Bayesian Dawid–Skene by mean-field variational Bayes."""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..._math import dirichlet_expected_log, dirichlet_kl, softmax_classes
from ...annotators import confusion_statistics, label_log_likelihood
from ...data import Labels
from ...inference import run_iterations
from ._base import LabelModel, clamp_gold, vote_share_start

__all__ = ["BayesianDawidSkene", "confusion_prior"]


def confusion_prior(n_classes: int, diagonal: float, off_diagonal: float) -> np.ndarray:
    """(K, K) Dirichlet concentrations: ``diagonal`` on the diagonal, ``off_diagonal`` elsewhere."""
    eye = np.eye(n_classes)
    return diagonal * eye + off_diagonal * (1.0 - eye)


class BayesianDawidSkene(LabelModel):
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

    Parameters
    ----------
    prior_diagonal, prior_off_diagonal : float
        Dirichlet prior concentrations of each confusion row on and off the diagonal. The default
        (2, 1) says, weakly, that a worker is more often right than wrong.
    prior_prevalence : float
        Symmetric Dirichlet concentration of the class prevalence.
    max_iter, tol, progress : see :class:`DawidSkene`.
    credible_level : float
        Mass of the reported central credible intervals.

    References
    ----------
    Simpson, E., Roberts, S., Psorakis, I. & Smith, A. (2013). Dynamic Bayesian combination of
    multiple imperfect classifiers. (Variational IBCC.)
    """

    def __init__(
        self,
        prior_diagonal: float = 2.0,
        prior_off_diagonal: float = 1.0,
        prior_prevalence: float = 1.0,
        max_iter: int = 500,
        tol: float | None = 1e-9,
        credible_level: float = 0.9,
        progress: bool = False,
    ) -> None:
        self.prior_diagonal = prior_diagonal
        self.prior_off_diagonal = prior_off_diagonal
        self.prior_prevalence = prior_prevalence
        self.max_iter = max_iter
        self.tol = tol
        self.credible_level = credible_level
        self.progress = progress

    def _fit(self, labels: Labels) -> None:
        if min(self.prior_diagonal, self.prior_off_diagonal, self.prior_prevalence) <= 0:
            raise ValueError("Dirichlet prior concentrations must be positive")
        n_classes = labels.n_classes
        alpha_prior = confusion_prior(n_classes, self.prior_diagonal, self.prior_off_diagonal)
        beta_prior = np.full(n_classes, float(self.prior_prevalence))
        state = {"resp": vote_share_start(labels)}

        def update_globals() -> None:
            state["alpha"] = alpha_prior + confusion_statistics(labels, state["resp"])
            state["beta"] = beta_prior + state["resp"].sum(axis=1)
            state["log_lik"], state["log_lik_offset"] = label_log_likelihood(
                labels, dirichlet_expected_log(state["alpha"])
            )
            state["e_log_pi"] = dirichlet_expected_log(state["beta"])

        def elbo() -> float:
            resp = state["resp"]
            expected = np.where(
                resp > 0, resp * (state["e_log_pi"][:, None] + state["log_lik"]), 0.0
            )
            with np.errstate(divide="ignore", invalid="ignore"):
                entropy = -np.where(resp > 0, resp * np.log(resp), 0.0).sum()
            return (
                expected.sum()
                + state["log_lik_offset"]
                + entropy
                - dirichlet_kl(state["beta"], beta_prior)
                - dirichlet_kl(state["alpha"], alpha_prior).sum()
            )

        def step(_: int) -> float:
            log_joint = clamp_gold(state["e_log_pi"][:, None] + state["log_lik"], labels.gold_codes)
            state["resp"] = softmax_classes(log_joint)[0]
            update_globals()
            return elbo()

        update_globals()
        result = run_iterations(
            step,
            max_iter=self.max_iter,
            tol=self.tol,
            progress=self.progress,
            desc="Bayesian Dawid-Skene VB",
            warn_name="BayesianDawidSkene",
        )
        self.n_iter_, self.converged_ = result.n_iter, result.converged
        self.elbo_history_ = np.array(result.history)
        self._set_task_results(labels, state["resp"])
        self._set_prevalence(labels, state["beta"] / state["beta"].sum())
        alpha = state["alpha"]
        self.confusion_posterior_ = self._confusion_frame(labels, alpha)
        self._set_confusion(labels, *dirichlet_marginal_summary(alpha, self.credible_level))


def dirichlet_marginal_summary(concentration: np.ndarray, level: float):
    """Mean, sd and central ``level`` interval of each cell of Dirichlet rows (last axis).

    Each cell of a Dirichlet(a) row is Beta(a_x, Σa − a_x)-distributed, so the intervals are exact.
    Returns ``(mean, sd, lower, upper, level)``.
    """
    total = concentration.sum(axis=-1, keepdims=True)
    rest = total - concentration
    mean = concentration / total
    sd = np.sqrt(mean * (1 - mean) / (total + 1))
    tail = (1 - level) / 2
    lower = stats.beta.ppf(tail, concentration, rest)
    upper = stats.beta.ppf(1 - tail, concentration, rest)
    return mean, sd, lower, upper, level
