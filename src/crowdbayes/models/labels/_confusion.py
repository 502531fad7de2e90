r"""The E-step and statistics shared by the confusion-matrix models (Dawid–Skene EM and VB).

Given log-confusions :math:`L_{jkx}` (``log θ`` for EM, :math:`\mathbb{E}\log\theta` for VB) and
log-prevalences :math:`l_k`, every task of a partition gets

.. math::
    r_{ik} \propto \exp\big(l_k + \textstyle\sum_{j,x} A_{i,jx} L_{jkx}\big)

(gold tasks clamped to their class), and the partition contributes the sums

- ``confusion``: :math:`n_{jkx} = \sum_i r_{ik} A_{i,jx}` (workers × K × K),
- ``classes``: :math:`\sum_i r_{ik}`,
- ``log_evidence``: :math:`\sum_i \log\sum_k \exp(\ldots)` (the EM objective's data term),
- ``entropy``: :math:`-\sum_{ik} r_{ik}\log r_{ik}` (VB only, ``needs_entropy``),

all of which add over partitions that split the tasks. One pass is the compiled, threaded
:func:`~crowdbayes.annotators.confusion_pass.confusion_pass` where it is built, else numpy.
"""

from __future__ import annotations

import numpy as np

from ...annotators import confusion_statistics, label_log_likelihood
from ...annotators.confusion import label_log_likelihood_offsets
from ...annotators.confusion_pass import confusion_pass, prepare_layout
from ...data.labels import LabelBlock
from ...inference.statistics import Globals, Stats
from ...maths import softmax_classes
from ._base import clamp_gold, feedback_tasks, vote_share_start
from .statistics import StatsLabelModel

__all__ = ["ConfusionStatsModel", "with_logs"]


def with_logs(primary: Globals, log_confusion: np.ndarray, log_prevalence: np.ndarray) -> Globals:
    """Globals of a confusion model: its primary arrays plus the (expected) log-confusions and
    log-prevalences that :meth:`ConfusionStatsModel.local_stats` uses."""
    return {**primary, "log_confusion": log_confusion, "log_prevalence": log_prevalence}


class ConfusionStatsModel(StatsLabelModel):
    """Shared ``initial_stats`` / ``local_stats`` of the Dawid–Skene family.

    Subclasses put ``log_confusion`` (workers, K, K) and ``log_prevalence`` (K,) in their globals.
    """

    _abstract = True
    needs_entropy = False
    #: leave the tasks that only one worker labelled (and that have no gold) out of the worker
    #: and prevalence statistics: they are still labelled, but do not feed back (see
    #: :class:`~crowdbayes.models.labels.BayesianDawidSkene`)
    cut_single_worker_tasks = False
    #: the global that holds ``exp(log_confusion)`` itself, if the model keeps one (EM's θ):
    #: the compiled pass then needs no ``exp``
    confusion_global: str | None = None

    def initial_stats(self, block: LabelBlock) -> Stats:
        """Statistics of each task's vote shares (gold tasks one-hot): the usual EM start."""
        return self._posterior_stats(block, vote_share_start(block), 0.0, self._cut_tasks(block))

    def local_stats(self, block: LabelBlock, globals_: Globals, tasks: dict | None = None) -> Stats:
        cut = self._cut_tasks(block)
        # the compiled pass sums the evidence of every task; with a cut the objective counts
        # the tasks that feed back only, which the numpy path does
        fused = None
        if cut is None:
            confusion = globals_.get(self.confusion_global) if self.confusion_global else None
            fused = confusion_pass(
                block,
                globals_["log_confusion"],
                globals_["log_prevalence"],
                confusion=confusion,
                # the posteriors only where the caller keeps them (or the entropy needs them)
                probas=tasks is not None or self.needs_entropy,
            )
        if fused is None:
            return self._numpy_local_stats(block, globals_, tasks, cut)
        if tasks is not None:
            tasks["probas"] = fused.resp
        stats = {
            "confusion": fused.confusion,
            "classes": fused.classes,
            "log_evidence": fused.log_evidence,
        }
        if self.needs_entropy:
            stats["entropy"] = _entropy(fused.resp, fused.resp)
        return stats

    def _numpy_local_stats(
        self,
        block: LabelBlock,
        globals_: Globals,
        tasks: dict | None = None,
        cut: np.ndarray | None = None,
    ) -> Stats:
        """:meth:`local_stats` in numpy: sparse products and a softmax (the reference path);
        ``cut``: the tasks cut from the statistics (:meth:`_cut_tasks`)."""
        log_confusion = globals_["log_confusion"]
        log_lik, offset = label_log_likelihood(block, log_confusion)
        log_joint = clamp_gold(globals_["log_prevalence"][:, None] + log_lik, block.gold_codes)
        resp, log_evidence = softmax_classes(log_joint)
        if tasks is not None:
            tasks["probas"] = resp
        if cut is None:
            return self._posterior_stats(block, resp, float(log_evidence.sum()) + offset, cut)
        # the evidence of the tasks that feed back only: the cut ones do not depend on the
        # globals through the fit, and counting them would break the objective's monotonicity
        per_task = log_evidence + label_log_likelihood_offsets(block, log_confusion)
        return self._posterior_stats(block, resp, float(per_task[~cut].sum()), cut)

    def _cut_tasks(self, block: LabelBlock) -> np.ndarray | None:
        """The tasks cut from the statistics (:func:`feedback_tasks`), or None if none is."""
        if not self.cut_single_worker_tasks:
            return None
        prepare_layout(block)  # the pass's layout counts each task's workers on the way
        fed_back = feedback_tasks(block)
        return None if fed_back.all() else ~fed_back

    def _posterior_stats(
        self, block: LabelBlock, resp: np.ndarray, log_evidence: float, cut: np.ndarray | None
    ) -> Stats:
        """The statistics of responsibilities ``resp``, leaving out the tasks ``cut``."""
        counted, sums_to_one = resp, True
        if cut is not None:
            counted, sums_to_one = resp * ~cut, False
        stats = {
            "confusion": confusion_statistics(block, counted, sums_to_one=sums_to_one),
            "classes": counted.sum(axis=1),
            "log_evidence": log_evidence,
        }
        if self.needs_entropy:
            stats["entropy"] = _entropy(counted, resp)
        return stats


def _entropy(counted: np.ndarray, resp: np.ndarray) -> float:
    """``-Σ counted · log resp`` over the cells with ``counted > 0``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(-np.where(counted > 0, counted * np.log(resp), 0.0).sum())
