"""Dawid–Skene by expectation–maximisation."""

from __future__ import annotations

import numpy as np

from ..._math import safe_log, softmax_classes
from ...annotators import (
    confusion_statistics,
    full_confusion_log_prior,
    full_confusion_map,
    label_log_likelihood,
    one_coin_log_prior,
    one_coin_map,
)
from ...data import Labels
from ...inference import run_iterations
from ._base import LabelModel, clamp_gold, vote_share_start

__all__ = ["DawidSkene"]


class DawidSkene(LabelModel):
    r"""Dawid & Skene (1979): each worker has a confusion matrix, fitted by EM.

    Model: :math:`c_i \sim \mathrm{Cat}(\pi)`, and worker :math:`j`'s label on task :math:`i` is
    :math:`x_{ij} \sim \mathrm{Cat}(\theta_{j, c_i, :})`. EM alternates

    - E-step: :math:`r_{ik} \propto \pi_k \prod_{j,x} \theta_{jkx}^{A_{i,jx}}` (one sparse product);
    - M-step: :math:`\theta_{jk:} \propto n_{jk:} + a`, :math:`\pi \propto \sum_i r_i + a_\pi`.

    With ``smoothing`` :math:`a > 0` this is MAP under Dirichlet(a + 1) priors, and the monitored
    objective (``log_posterior_history_``: log-likelihood plus log-prior) never decreases.
    ``one_coin=True`` ties each worker's matrix to a single accuracy.

    Parameters
    ----------
    max_iter : int
        EM iterations at most.
    tol : float or None
        Stop when the objective changes by less than ``tol · max(1, |objective|)``;
        None runs exactly ``max_iter`` iterations.
    smoothing : float
        Dirichlet pseudo-counts added to every confusion cell (0 is plain maximum likelihood).
    prevalence_smoothing : float
        Pseudo-counts added to each class count for the prevalence.
    one_coin : bool
        One accuracy per worker, errors spread evenly over the other classes.
    progress : bool
        Show a progress bar.

    References
    ----------
    Dawid, A. P. & Skene, A. M. (1979). Maximum likelihood estimation of observer error-rates
    using the EM algorithm. JRSS C 28(1).
    """

    def __init__(
        self,
        max_iter: int = 100,
        tol: float | None = 1e-7,
        smoothing: float = 0.01,
        prevalence_smoothing: float = 0.01,
        one_coin: bool = False,
        progress: bool = False,
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.prevalence_smoothing = prevalence_smoothing
        self.one_coin = one_coin
        self.progress = progress

    def _fit(self, labels: Labels) -> None:
        if self.smoothing < 0 or self.prevalence_smoothing < 0:
            raise ValueError("smoothing and prevalence_smoothing must be non-negative")
        update_confusion = one_coin_map if self.one_coin else full_confusion_map
        confusion_log_prior = one_coin_log_prior if self.one_coin else full_confusion_log_prior
        resp = vote_share_start(labels)
        state = {}

        def m_step(resp: np.ndarray) -> None:
            stats = confusion_statistics(labels, resp)
            state["confusion"] = update_confusion(stats, self.smoothing)
            class_counts = resp.sum(axis=1) + self.prevalence_smoothing
            state["prevalence"] = class_counts / class_counts.sum()

        def step(_: int) -> float:
            log_conf = safe_log(state["confusion"])
            log_prior = safe_log(state["prevalence"])
            log_lik, log_lik_offset = label_log_likelihood(labels, log_conf)
            log_joint = clamp_gold(log_prior[:, None] + log_lik, labels.gold_codes)
            state["resp"], log_evidence = softmax_classes(log_joint)
            objective = log_evidence.sum() + log_lik_offset
            objective += confusion_log_prior(state["confusion"], self.smoothing)
            objective += self.prevalence_smoothing * float(log_prior[np.isfinite(log_prior)].sum())
            m_step(state["resp"])
            return objective

        m_step(resp)
        result = run_iterations(
            step,
            max_iter=self.max_iter,
            tol=self.tol,
            progress=self.progress,
            desc="Dawid-Skene EM",
            warn_name="DawidSkene",
        )
        self.n_iter_, self.converged_ = result.n_iter, result.converged
        self.log_posterior_history_ = np.array(result.history)
        self._set_task_results(labels, state["resp"])
        self._set_prevalence(labels, state["prevalence"])
        self._set_confusion(labels, state["confusion"])
