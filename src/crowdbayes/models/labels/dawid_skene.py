"""Dawid–Skene by expectation–maximisation."""

from __future__ import annotations

import numpy as np

from ...annotators import (
    full_confusion_log_prior,
    full_confusion_map,
    one_coin_log_prior,
    one_coin_map,
)
from ...annotators.confusion_pass import vote_share_statistics
from ...base import NON_NEGATIVE, POSITIVE_INT, TOLERANCE
from ...data.labels import LabelBlock
from ...inference.statistics import Globals, Stats
from ...maths import finite_sum, safe_log
from ._confusion import ConfusionStatsModel, with_logs

__all__ = ["DawidSkene"]


class DawidSkene(ConfusionStatsModel):
    r"""Dawid & Skene (1979): each worker has a confusion matrix, fitted by EM.

    Model: :math:`c_i \sim \mathrm{Cat}(\pi)`, and worker :math:`j`'s label on task :math:`i` is
    :math:`x_{ij} \sim \mathrm{Cat}(\theta_{j, c_i, :})`. EM alternates

    - E-step: :math:`r_{ik} \propto \pi_k \prod_{j,x} \theta_{jkx}^{A_{i,jx}}` (one sparse product);
    - M-step: :math:`\theta_{jk:} \propto n_{jk:} + a`, :math:`\pi \propto \sum_i r_i + a_\pi`.

    With ``smoothing`` :math:`a > 0` this is MAP under Dirichlet(a + 1) priors, and the monitored
    objective (``log_posterior_history_``: log-likelihood plus log-prior) never decreases.
    ``one_coin=True`` ties each worker's matrix to a single accuracy.

    **Sparse data: tasks seen by one worker do not feed back.** A task labelled by one worker
    only (and without gold) is labelled but cut from the statistics of θ and π, as in
    :class:`~crowdbayes.models.labels.BayesianDawidSkene` (Plummer 2015): its label can only
    agree with itself, and counted at its own posterior it makes the next M-step read the
    model's guess back as evidence. With one random label per task EM without the cut ended far
    below majority vote (RTE 0.586, web 0.540, wsd 0.812 against 0.740, 0.559, 0.974; mean of 3
    starts, ``benchmarks/active/active_sparse.py``). The objective is then that of the tasks that
    feed back, which EM still never decreases.

    **Diagonal pseudo-counts.** A worker whose labels are all on cut tasks has no counts, and
    under the symmetric prior its rows would be uniform: its labels would say nothing and such
    tasks would all take the most prevalent class. ``diagonal_smoothing`` :math:`d` adds
    :math:`d` to each diagonal cell, a Dirichlet(a + 1 + d [x = k]) prior: a worker without
    evidence is right with probability :math:`(a + d) / (K a + d)` (2/3 for two classes at the
    defaults), so a task with one label follows it, as majority vote does, with that
    confidence. With counts the default 0.01 is negligible.

    **Two labels per task** barely identify the workers: each has a handful of labels, each
    paired with one other worker's, and the maximum-likelihood matrices fit them exactly. On
    bluebird (39 workers, about 5.5 labels each) the fit claims 0.89 and scores 0.593 against
    majority vote's 0.639; on S_Adult 0.672 against 0.682 (mean of 3 starts; there the gold
    tasks, 3% of the set's, have another class mix than the tasks the prevalence is learnt on,
    and the same fits with that prior divided out score 0.701). Priors are the
    remedy (``smoothing=1, diagonal_smoothing=1, prevalence_smoothing=100`` scores 0.701 on
    bluebird, claiming 0.706), i.e. :class:`~crowdbayes.models.labels.BayesianDawidSkene`;
    the defaults stay near maximum likelihood, Dawid & Skene's estimator.

    The E-step is per task and the M-step needs only the sums :math:`n_{jkx}` and
    :math:`\sum_i r_i`, so the fit is a map of :meth:`local_stats` over partitions of the tasks
    and a :meth:`global_update`; :mod:`crowdbayes.distributed` runs the same two functions on a
    Dask cluster (see :mod:`crowdbayes.inference.statistics`).

    Parameters
    ----------
    max_iter : int
        EM iterations at most.
    tol : float or None
        Stop when the objective changes by less than ``tol · max(1, |objective|)``;
        None runs exactly ``max_iter`` iterations.
    smoothing : float
        Dirichlet pseudo-counts added to every confusion cell (0 is plain maximum likelihood).
    diagonal_smoothing : float
        Pseudo-counts added to the diagonal cells on top of ``smoothing`` (see above).
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
    Plummer, M. (2015). Cuts in Bayesian graphical models. Statistics and Computing 25, 37–43.
    """

    parameter_constraints = {
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "smoothing": [NON_NEGATIVE],
        "diagonal_smoothing": [NON_NEGATIVE],
        "prevalence_smoothing": [NON_NEGATIVE],
        "one_coin": [bool],
        "progress": [bool],
    }
    primary = ("confusion", "prevalence")
    history_name = "log_posterior_history_"
    _tags = {"warm_start": True, "partial_fit": True, "dask": True}
    _traces = {"log_posterior_history_": "log posterior"}
    algorithm = "Dawid-Skene EM"
    cut_single_worker_tasks = True
    confusion_global = "confusion"

    def __init__(
        self,
        max_iter: int = 100,
        tol: float | None = 1e-7,
        smoothing: float = 0.01,
        diagonal_smoothing: float = 0.01,
        prevalence_smoothing: float = 0.01,
        one_coin: bool = False,
        progress: bool = False,
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.diagonal_smoothing = diagonal_smoothing
        self.prevalence_smoothing = prevalence_smoothing
        self.one_coin = one_coin
        self.progress = progress

    # ------------------------------------------------------------------ sufficient statistics
    def initial_stats(self, block: LabelBlock) -> Stats:
        """Statistics of the vote shares (gold tasks one-hot), in one compiled pass over the
        labels where the kernel applies and no task is cut (the same sums), else numpy."""
        fused = vote_share_statistics(block) if self._cut_tasks(block) is None else None
        if fused is None:
            return super().initial_stats(block)
        return {"confusion": fused.confusion, "classes": fused.classes, "log_evidence": 0.0}

    def global_update(self, stats: Stats) -> Globals:
        """M-step: MAP confusion rows and prevalence from the expected counts."""
        if self.one_coin:
            diagonal = self.diagonal_smoothing * np.eye(stats["confusion"].shape[-1])
            confusion = one_coin_map(stats["confusion"] + diagonal, self.smoothing)
        else:
            confusion = full_confusion_map(
                stats["confusion"], self.smoothing, diagonal=self.diagonal_smoothing
            )
        class_counts = stats["classes"] + self.prevalence_smoothing
        return self.from_primary(confusion, class_counts / class_counts.sum())

    def from_primary(self, confusion: np.ndarray, prevalence: np.ndarray) -> Globals:
        return with_logs(
            {"confusion": confusion, "prevalence": prevalence},
            safe_log(confusion),
            safe_log(prevalence),
        )

    def objective(self, stats: Stats, before: Globals, after: Globals) -> float:
        """Log-posterior of the globals ``before`` (the ones the E-step used)."""
        if self.one_coin:
            confusion_prior = one_coin_log_prior(before["confusion"], self.smoothing)
            diagonal = np.diagonal(before["log_confusion"], axis1=1, axis2=2)
            confusion_prior += self.diagonal_smoothing * finite_sum(diagonal)
        else:
            confusion_prior = full_confusion_log_prior(
                before["log_confusion"], self.smoothing, self.diagonal_smoothing
            )
        prevalence_prior = self.prevalence_smoothing * finite_sum(before["log_prevalence"])
        return stats["log_evidence"] + confusion_prior + prevalence_prior

    def new_worker_rows(self, n_classes: int) -> np.ndarray:
        """Uniform confusion rows for a worker first seen in a warm start: no weight in the first
        E-step, its own estimate from the first M-step on."""
        return np.full((n_classes, n_classes), 1.0 / n_classes)

    def _set_global_results(self, ids, globals_: Globals) -> None:
        self._set_prevalence(ids, globals_["prevalence"])
        self._set_confusion(ids, globals_["confusion"])
