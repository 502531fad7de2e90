r"""The label models written as sufficient statistics (:mod:`crowdbayes.inference.statistics`).

:class:`MajorityVote`, :class:`DawidSkene` and :class:`BayesianDawidSkene` implement
``local_stats(block, globals)`` over a :class:`~crowdbayes.data.labels.LabelBlock` (every label
of its tasks) and ``global_update(stats)`` (confusion matrices, prevalence), so that the
in-memory fit and :mod:`crowdbayes.distributed` run the same two functions. Per-task posteriors
never leave their partition: ``local_stats`` writes them into the optional ``tasks`` dict of the
caller. This module adds what the label models build on that: warm starts from a fitted or saved
model, and :meth:`StatsLabelModel.partial_fit` for batches of new tasks.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...base import load
from ...data.io import TableLike
from ...data.labels import LabelBlock, Labels
from ...inference.statistics import Globals, Stats, StatsFit, add_stats, iterate_statistics
from ._base import LabelModel

__all__ = ["StatsLabelModel", "LabelIds"]


class StatsLabelModel(LabelModel):
    """A label model fitted by repeated ``local_stats`` / ``global_update`` passes.

    Subclasses implement :meth:`local_stats`, :meth:`global_update`, :meth:`_set_global_results`
    and, when iterative, :meth:`initial_stats` and :meth:`objective`.
    """

    #: False for one-pass models (majority vote)
    iterative = True
    #: names of the globals that define the rest (saved; the first is per worker)
    primary: tuple[str, ...] = ()
    #: statistics with one row per worker (extended with zeros for new workers)
    worker_stats = ("confusion",)
    #: name of the objective history attribute
    history_name = "objective_history_"
    #: progress-bar / warning label
    algorithm = "iterations"

    _abstract = True

    # ------------------------------------------------------------------ the interface
    def start_globals(self) -> Globals:
        """Globals of the first pass of a one-pass model (iterative models start from
        ``global_update(initial_stats)``)."""
        return {}

    def partition_globals(self, globals_: Globals, index: int) -> Globals:
        """The globals as partition ``index`` sees them (identity except for per-partition
        random streams)."""
        return globals_

    def initial_stats(self, block: LabelBlock) -> Stats:
        """Statistics of the starting point of the iterations (e.g. vote shares)."""
        raise NotImplementedError

    def local_stats(self, block: LabelBlock, globals_: Globals, tasks: dict | None = None) -> Stats:
        """Statistics of one partition given the globals; if ``tasks`` is a dict, store the
        partition's class-major (K, n_tasks) ``"probas"`` in it, and ``"labels"`` (class codes)
        when they are not simply the most probable classes."""
        raise NotImplementedError

    def global_update(self, stats: Stats) -> Globals:
        """The new globals from statistics summed over every partition."""
        raise NotImplementedError

    def objective(self, stats: Stats, before: Globals, after: Globals) -> float | None:
        """The monitored objective of one iteration (None: not monitored)."""
        return None

    def new_worker_rows(self, n_classes: int) -> np.ndarray:
        """Per-worker global rows (K, K) for a worker first seen in a warm start."""
        raise NotImplementedError

    def from_primary(self, *arrays: np.ndarray) -> Globals:
        """Globals (with derived arrays) from the ``primary`` arrays, in that order; the first
        one is per worker."""
        raise NotImplementedError

    def _set_global_results(self, ids, globals_: Globals) -> None:
        """Set prevalence, confusion (and spread) from the globals; ``ids`` has ``workers``,
        ``classes`` and ``n_classes``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the in-memory fit
    def fit(self, labels: Labels | TableLike, features=None, *, init=None) -> StatsLabelModel:
        """Fit to ``labels``; ``init`` (a fitted model of the same class, or the path of one
        saved with ``save``; models with ``tags.warm_start``) starts the iterations from its
        globals: see :meth:`warm_start`.
        """
        self.check_params()
        self._refuse_unused(features, init)
        labels = self._check_labels(labels)
        start = None if init is None else self.warm_start(init, labels.workers, labels.classes)
        self._fit_with(labels, start)
        self._set_held_out_counts(labels)
        return self

    def _fit(self, labels: Labels) -> None:
        self._fit_with(labels, None)

    def _fit_with(
        self,
        labels: Labels,
        initial_globals: Globals | None,
        callback: Callable[[int, float | None], None] | None = None,
    ) -> None:
        """The in-memory fit: :func:`iterate_statistics` with one partition, the whole table
        (``callback(iteration, objective)`` after every iteration)."""
        tasks: dict = {}
        kept = self._kept_posteriors(tasks)
        fit = iterate_statistics(
            self,
            initial=lambda: self.initial_stats(labels),
            pass_stats=lambda g: self.local_stats(labels, g, kept()),
            initial_globals=initial_globals,
            callback=callback,
        )
        self._set_fit(fit, labels)
        self._set_task_results(labels, tasks["probas"])
        if "labels" in tasks:  # a model's own winners (majority vote's tie-breaks)
            self.labels_[:] = labels.classes[tasks["labels"]]

    def _kept_posteriors(self, tasks: dict) -> Callable[[], dict | None]:
        """The ``tasks`` argument of a fit's passes, one call per pass: None for the passes whose
        posteriors a later pass overwrites for certain (with ``tol`` None every iteration runs,
        so all but the last), for which :meth:`local_stats` need not compute them, and
        ``tasks`` for the others."""
        skip = self.max_iter - 1 if self.iterative and self.tol is None else 0
        passes = itertools.count()
        return lambda: tasks if next(passes) >= skip else None

    def _set_fit(self, fit: StatsFit, ids) -> None:
        """Store the iteration summary and every global result; ``ids`` has ``workers``,
        ``classes`` and ``n_classes`` (a :class:`Labels`, or the vocabulary of a distributed
        fit)."""
        self._forget_pending()  # held-out counts are those of the labels fitted last
        self.n_iter_, self.converged_ = fit.n_iter, fit.converged
        if self.iterative:
            setattr(self, self.history_name, np.array(fit.history))
        self.globals_ = fit.globals
        self.stats_ = fit.stats
        self.workers_ = pd.Index(ids.workers, name="worker")
        self.classes_ = pd.Index(ids.classes, name="class")
        self._set_global_results(ids, fit.globals)

    # ------------------------------------------------------------------ incremental updates
    def warm_start(self, init, workers: pd.Index, classes: pd.Index) -> Globals:
        r"""Globals to start from, taken from ``init`` (a fitted model or a saved model path).

        Workers known to ``init`` keep their rows; new workers get :meth:`new_worker_rows`. The
        classes must be the same, in the same order.

        When does a warm start equal a full refit? EM (and the VB sweeps) is a deterministic
        map :math:`g \mapsto \mathrm{update}(\mathrm{stats}(g))` on the *whole* data set given
        here (old and new labels together).

        - On the same labels, continuing a saved model *is* the rest of the full run: the
          iterates are identical, and the iteration counts add up.
        - With new labels, both runs head for a fixed point of the same map and stop when the
          objective changes by less than ``tol``; they reach the same one whenever the warm
          start lies in the basin of attraction of the optimum the full refit finds (the usual
          case when the new labels are a small share and do not change which mode the data
          support; with several local optima it is not guaranteed). "Same" is up to the
          tolerance: EM converges slowly along flat directions, so posteriors stopped by an
          objective tolerance can still differ — on a 400-task test set by up to 0.09 at
          ``tol=1e-7`` and 1e-4 at ``tol=1e-13`` for Dawid–Skene, 6e-3 and 5e-7 for the VB
          model; at the looser tolerance one borderline task in 400 changed its label. Tighten
          ``tol`` when the results must match a refit.

        Cost: the new labels move every worker's parameters and through them every old task's
        posterior, so the full passes over all labels (each as costly as an iteration of a
        refit) run until one changes the objective by less than ``tol``. On 10M labels plus 1%
        (benchmarks/scale/scale_incremental.py) that is 9 passes against 21 for a refit (about 45%
        of its time); iterating on the new tasks first, SQUAREM and Anderson extrapolation of the
        passes were tried and saved at most one pass. :meth:`partial_fit` (old tasks frozen, cost
        proportional to the batch) is the fast, approximate update.
        """
        if not self.iterative:
            raise TypeError(f"{type(self).__name__} is a single pass: there is nothing to continue")
        saved = load(init) if isinstance(init, (str, os.PathLike)) else init
        if type(saved) is not type(self):
            raise TypeError(
                f"warm start: expected a fitted {type(self).__name__}; got {type(saved).__name__}"
            )
        saved.check_is_fitted()
        if not saved.classes_.equals(pd.Index(classes)):
            raise ValueError(
                f"warm start: the saved model's classes {list(saved.classes_)} differ from the "
                f"labels' classes {list(classes)}"
            )
        saved._check_shapes("warm start")
        per_worker, *rest = (saved.globals_[key] for key in self.primary)
        positions = saved.workers_.get_indexer(workers)
        known = positions >= 0
        rows = np.empty((len(workers), *per_worker.shape[1:]))
        rows[known] = per_worker[positions[known]]
        rows[~known] = self.new_worker_rows(len(classes))
        return self.from_primary(rows, *rest)

    def partial_fit(self, new_labels: Labels | TableLike) -> StatsLabelModel:
        r"""Update a fitted model with a batch of labels on *new* tasks, without revisiting the
        old ones (an incremental update whose cost is proportional to the batch).

        The statistics of a fit are sums over tasks, :math:`S = S_\text{old} + S_\text{new}`.
        This keeps :math:`S_\text{old}` (saved with the model as ``stats_``: the old tasks'
        contribution at their final posteriors) fixed and iterates
        ``globals ← global_update(S_old + local_stats(batch, globals))`` from the saved
        globals, so every iteration touches only the batch. Workers first seen in the batch
        are added (:meth:`new_worker_rows`); ``workers_`` grows, ``stats_`` becomes
        :math:`S_\text{old} + S_\text{new}` (so batches can be chained) and ``probas_`` /
        ``labels_`` describe the batch's tasks only.

        This is *not* a full refit: the old tasks' posteriors are frozen at the old globals
        (one step of incremental EM in the sense of Neal & Hinton, 1998, where the old tasks'
        E-step is skipped). The result matches a refit when the batch hardly moves the globals
        (a small share of new labels from known workers); :meth:`fit` with ``init=`` gives the
        refit's fixed point at the cost of passes over all labels. A task already in the old
        data must not be in the batch (its labels would count twice; refit instead).

        Convergence uses ``tol`` on the whole objective (old and new statistics).
        """
        self.check_is_fitted()
        if not self.iterative or self.stats_ is None:
            raise TypeError(
                f"{type(self).__name__}: partial_fit needs an iterative model fitted (or saved) "
                "with its statistics"
            )
        batch = (
            new_labels
            if isinstance(new_labels, Labels)
            else Labels(new_labels, classes=list(self.classes_), ordered=self.tags.ordered_classes)
        )
        if not batch.classes.equals(self.classes_):
            raise ValueError(
                f"partial_fit: the batch's classes {list(batch.classes)} differ from the "
                f"model's {list(self.classes_)}"
            )
        self._check_shapes("partial_fit")
        self._materialize()  # the held-out counts of the labels fitted so far, before they go
        new_workers = batch.workers[~batch.workers.isin(self.workers_)]
        workers = self.workers_.append(pd.Index(new_workers))
        self._check_capacity(batch.n_tasks, len(workers), batch.n_classes)
        full_start = self.warm_start(self, workers, self.classes_)
        full_old = dict(self.stats_)
        for key in self.worker_stats:
            extra = np.zeros((len(new_workers), *full_old[key].shape[1:]))
            full_old[key] = np.concatenate([full_old[key], extra])
        # Only the batch's workers change: iterate on them alone (cost ∝ the batch), the others'
        # rows stay at the saved values and add a constant to the objective.
        touched = workers.get_indexer(batch.workers)
        block = LabelBlock(
            batch.task_codes,
            batch.worker_codes,
            batch.label_codes,
            n_tasks=batch.n_tasks,
            n_workers=batch.n_workers,
            n_classes=batch.n_classes,
            gold_codes=batch.gold_codes,
        )
        old = self._worker_subset(full_old, touched, self.worker_stats)
        start = self._worker_subset(full_start, touched, self.primary[:1])
        start = self.from_primary(*(start[key] for key in self.primary))
        untouched = self.objective(full_old, full_start, full_start) - self.objective(
            old, start, start
        )
        tasks: dict = {}
        kept = self._kept_posteriors(tasks)
        fit = iterate_statistics(
            self,
            initial=lambda: add_stats(old, self.initial_stats(block)),
            pass_stats=lambda g: add_stats(old, self.local_stats(block, g, kept())),
            initial_globals=start,
            objective_offset=untouched,
        )
        fit.globals = self._scatter_workers(full_start, fit.globals, touched, self.primary[:1])
        fit.globals = self.from_primary(*(fit.globals[key] for key in self.primary))
        fit.stats = self._scatter_workers(full_old, fit.stats, touched, self.worker_stats)
        self._set_fit(fit, LabelIds(workers, self.classes_))
        self._set_task_results(batch, tasks["probas"], add_counts=True)
        if "labels" in tasks:
            self.labels_[:] = batch.classes[tasks["labels"]]
        self._set_held_out_counts(batch, add=True)
        return self

    def _check_shapes(self, what: str) -> None:
        """Refuse (``ValueError`` naming the arrays and their shapes) a fitted or loaded model
        whose saved arrays disagree with its workers and classes: the per-worker arrays (the
        first of ``primary`` and the ``worker_stats``) must have one row per worker of
        ``workers_`` and the shape of :meth:`new_worker_rows` (or classes × classes) after it,
        the other ``primary`` arrays and the class totals one entry per class."""
        if not self.primary:
            return
        n_workers, k = len(self.workers_), len(self.classes_)
        first, *rest = self.primary
        expected = [("globals_", first, (n_workers, *np.shape(self.new_worker_rows(k))))]
        expected += [("globals_", key, (k,)) for key in rest]
        if self.stats_ is not None:
            expected += [("stats_", key, (n_workers, k, k)) for key in self.worker_stats]
            expected.append(("stats_", "classes", (k,)))
        wrong = []
        for where, key, shape in expected:
            value = getattr(self, where).get(key)
            if value is None or np.shape(value) != shape:
                found = "missing" if value is None else f"shape {np.shape(value)}"
                wrong.append(f"{where}[{key!r}] has {found}, expected {shape}")
        if wrong:
            raise ValueError(
                f"{what}: the {type(self).__name__} model's arrays disagree with its "
                f"{n_workers} workers and {k} classes: {'; '.join(wrong)}"
            )

    @staticmethod
    def _worker_subset(values: dict, rows: np.ndarray, keys: Sequence[str]) -> dict:
        """``values`` with the per-worker arrays ``keys`` cut down to ``rows``."""
        return {k: v[rows] if k in keys else v for k, v in values.items()}

    @staticmethod
    def _scatter_workers(full: dict, part: dict, rows: np.ndarray, keys: Sequence[str]) -> dict:
        """``part`` with the per-worker arrays ``keys`` written into ``full``'s at ``rows``."""
        merged = dict(part)
        for key in keys:
            merged[key] = full[key].copy()
            merged[key][rows] = part[key]
        return merged


@dataclass(frozen=True)
class LabelIds:
    """The worker and class ids of a fit (what the global results are indexed by)."""

    workers: pd.Index
    classes: pd.Index

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def n_workers(self) -> int:
        return len(self.workers)
