"""The role of a label model: class labels in, each task's class and each worker's confusion
out."""

from __future__ import annotations

from typing import Any, ClassVar

import pandas as pd

from .._capacity import check_memory
from ..base import Estimator, OptionalResult
from .questions import QuestionAsker

__all__ = ["LabelAggregator"]


class LabelAggregator(QuestionAsker, Estimator):
    """Base of every model of class labels (``tags.judgment == "labels"``).

    ``fit(labels, features=None, *, init=None)`` takes a :class:`~crowdbayes.Labels` (or a
    ``task, worker, label`` table or file); ``features`` are the tasks' features of a model with
    ``tags.features != "none"``, ``init`` a previous fit (a model or the path of its file) of a
    model with ``tags.warm_start``; a model refuses either when it has no use for it.

    Every fitted model holds, indexed by the user's ids:

    - ``classes_`` — the classes, in order;
    - ``labels_`` — Series: each task's most probable class;
    - ``probas_`` — DataFrame (tasks × classes): posterior class probabilities;
    - ``prevalence_`` — Series: the estimated share of each class;
    - ``confusion_`` — DataFrame indexed by (worker, true class), one column per observed
      class: P(worker says column | true class), the posterior mean for Bayesian models;
    - ``worker_label_counts_`` — Series: each worker's number of labels;

    and these, None where the model has none:

    - ``confusion_sd_``, ``confusion_lower_``, ``confusion_upper_`` and ``credible_level_`` —
      the posterior spread of ``confusion_`` (Bayesian models);
    - ``sensitivity_``, ``specificity_`` — per worker (two classes): ``mean`` (and ``sd``,
      ``lower``, ``upper`` for Bayesian models);
    - ``medians_`` — each task's posterior median grade (ordered classes);
    - ``consensus_``, ``quality_`` — the consensus label of each labelled task and its
      quality score (models that learn from task features);
    - ``held_out_counts_`` — each worker's labels counted against the posterior of the task
      from the other workers' labels (what :meth:`suggest` reads to choose whom to ask);
    - ``choice_``, ``scores_``, ``model_`` — a model that chooses among others (``--model
      auto``): the chosen model's name, the scores it chose by (best first) and the fitted
      chosen model, whose results are this model's.

    Its convergence facts are :meth:`~crowdbayes.base.Estimator.diagnostics`.
    """

    _abstract = True  # a role, not a model: not registered for crowdbayes.load

    _tags: ClassVar[dict[str, Any]] = {
        "judgment": "labels",
        "personal_questions": True,
        "min_workers": 2,
    }
    _diagnostics: ClassVar[dict[str, str]] = {"iterations": "n_iter_", "converged": "converged_"}

    confusion_sd_ = OptionalResult()
    confusion_lower_ = OptionalResult()
    confusion_upper_ = OptionalResult()
    credible_level_ = OptionalResult()
    sensitivity_ = OptionalResult()
    specificity_ = OptionalResult()
    medians_ = OptionalResult()
    consensus_ = OptionalResult()
    quality_ = OptionalResult()
    held_out_counts_ = OptionalResult()
    choice_ = OptionalResult()
    scores_ = OptionalResult()
    model_ = OptionalResult()

    # ------------------------------------------------------------------ the inputs
    def _refuse_unused(self, features: Any = None, init: Any = None) -> None:
        """Refuse task features or a warm start this model has no use for."""
        name = type(self).__name__
        if features is not None and self.tags.features == "none":
            raise TypeError(
                f"{name} uses no task features: fit(labels) without them (CrowdClassifier "
                "learns from features)"
            )
        if features is None and self.tags.features == "required":
            raise TypeError(f"{name}.fit needs the tasks' features: fit(labels, features)")
        if init is not None and not self.tags.warm_start:
            raise TypeError(f"{name} cannot warm-start: fit it without init")

    #: what to change when a fit is refused for its size (:meth:`_check_capacity`)
    _capacity_hint: ClassVar[str] = (
        "merge rare classes into fewer, or fit on a machine with more memory"
    )

    def _dense_arrays(self, n_tasks: int, n_workers: int, n_classes: int) -> dict[str, int]:
        """The dense float64 arrays a fit holds at once, by what they are: their numbers of
        elements, a lower bound of what the fit allocates (before any is allocated).

        Every label model holds ``probas_`` (tasks × classes) with the vote counts and the
        working posterior beside it, and ``confusion_`` (workers × classes²) with the
        statistics it is estimated from and ``held_out_counts_``: three of each. A model that
        holds more adds its own (the Gibbs sampler's chains)."""
        return {
            "tasks × classes": 3 * n_tasks * n_classes,
            "workers × classes²": 3 * n_workers * n_classes**2,
        }

    def _check_capacity(self, n_tasks: int, n_workers: int, n_classes: int) -> None:
        """Refuse (:class:`crowdbayes._capacity.CapacityError`, naming the size needed) a fit
        whose :meth:`_dense_arrays` exceed the memory bound (:mod:`crowdbayes._capacity`),
        before allocating any of them."""
        what = (
            f"{type(self).__name__} on {n_tasks:,} tasks, {n_workers:,} workers and "
            f"{n_classes:,} classes"
        )
        arrays = self._dense_arrays(n_tasks, n_workers, n_classes)
        check_memory(what, arrays, self._capacity_hint)

    # ------------------------------------------------------------------ the results
    def predict(self) -> pd.Series:
        """The fitted most probable class of each task (``labels_``)."""
        self.check_is_fitted()
        return self.labels_

    def predict_proba(self) -> pd.DataFrame:
        """The fitted posterior class probabilities of each task (``probas_``)."""
        self.check_is_fitted()
        return self.probas_

    def fit_predict(self, labels, features=None) -> pd.Series:
        """Fit, then return ``labels_``."""
        return self.fit(labels, features).labels_

    def fit_predict_proba(self, labels, features=None) -> pd.DataFrame:
        """Fit, then return ``probas_``."""
        return self.fit(labels, features).probas_

    def task_table(self) -> pd.DataFrame:
        """One row per task: ``label``, then ``median`` (ordered classes) or ``consensus`` and
        ``quality`` (models of task features) where the model has them, then ``p_<class>``
        for every class."""
        self.check_is_fitted()
        table = self.probas_.add_prefix("p_")
        table.insert(0, "label", self.labels_)
        if self.medians_ is not None:
            table.insert(1, "median", self.medians_)
        if self.consensus_ is not None:
            table.insert(1, "consensus", self.consensus_.astype(object).reindex(table.index))
            table.insert(2, "quality", self.quality_.reindex(table.index))
        return table

    def worker_table(self) -> pd.DataFrame:
        """Long table of every worker's confusion: ``worker, true, observed, mean`` (and ``sd,
        lower, upper`` for Bayesian models)."""
        self.check_is_fitted()
        table = self.confusion_.stack().rename("mean").to_frame()
        if self.confusion_sd_ is not None:
            table["sd"] = self.confusion_sd_.stack()
            table["lower"] = self.confusion_lower_.stack()
            table["upper"] = self.confusion_upper_.stack()
        return table.reset_index()

    def expected_accuracy(self, tasks=None) -> float:
        """The accuracy the model expects of its own answers, without gold: the mean over tasks
        (all, or ``tasks``) of the posterior probability of the most probable class."""
        self.check_is_fitted()
        probas = self.probas_ if tasks is None else self.probas_.reindex(pd.Index(tasks))
        return float(probas.max(axis=1).mean())
