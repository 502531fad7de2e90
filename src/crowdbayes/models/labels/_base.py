"""What every label-aggregation model shares: fit on :class:`~crowdbayes.Labels`, task and worker
results indexed by the user's ids, and the gold-clamping and vote-share starting points."""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
import pandas as pd

from ...base import Estimator
from ...data import Labels, as_labels
from ...data.io import TableLike

__all__ = ["LabelModel", "clamp_gold", "vote_share_start"]


def clamp_gold(log_weights: np.ndarray, gold_codes: np.ndarray) -> np.ndarray:
    """Put all mass of tasks with a gold label on that label (``-inf`` elsewhere), for
    class-major (K, n_tasks) log-weights."""
    known = gold_codes >= 0
    if not known.any():
        return log_weights
    clamped = log_weights.copy()
    tasks = np.flatnonzero(known)
    keep = clamped[gold_codes[tasks], tasks]
    clamped[:, tasks] = -np.inf
    clamped[gold_codes[tasks], tasks] = keep
    return clamped


def vote_share_start(labels: Labels) -> np.ndarray:
    """Class-major starting responsibilities: each task's vote shares, gold tasks one-hot."""
    votes = labels.vote_counts()
    resp = votes / votes.sum(axis=0)
    known = labels.gold_codes >= 0
    resp[:, known] = np.eye(labels.n_classes)[:, labels.gold_codes[known]]
    return resp


class LabelModel(Estimator):
    """Base class: ``fit(labels) -> self``; results in attributes ending in ``_``.

    Every model sets at least

    - ``labels_`` — Series: the most probable class of each task (index: the user's task ids);
    - ``probas_`` — DataFrame (tasks × classes): posterior class probabilities;
    - ``prevalence_`` — Series: the estimated share of each class;
    - ``confusion_`` — DataFrame indexed by (worker, true class), one column per observed class:
      P(worker says column | true class), the posterior mean for Bayesian models;
    - ``n_iter_``, ``converged_`` and a history of the monitored objective.
    """

    _abstract = True
    #: minimum number of distinct workers the model needs (worker models need two)
    min_workers = 2

    def fit(self, labels: Labels | TableLike) -> LabelModel:
        """Fit the model to ``labels`` (a :class:`~crowdbayes.Labels`, DataFrame or path)."""
        self.check_params()
        labels = as_labels(labels)
        labels.require_workers(self.min_workers, type(self).__name__)
        self._fit(labels)
        return self

    @abstractmethod
    def _fit(self, labels: Labels) -> None:
        """Run inference on encoded labels and set the result attributes."""

    def fit_predict(self, labels: Labels | TableLike) -> pd.Series:
        """Fit, then return ``labels_``."""
        return self.fit(labels).labels_

    def fit_predict_proba(self, labels: Labels | TableLike) -> pd.DataFrame:
        """Fit, then return ``probas_``."""
        return self.fit(labels).probas_

    def predict(self) -> pd.Series:
        """The fitted most probable class of each task."""
        self.check_is_fitted()
        return self.labels_

    def predict_proba(self) -> pd.DataFrame:
        """The fitted posterior class probabilities of each task."""
        self.check_is_fitted()
        return self.probas_

    # ------------------------------------------------------------------ result formatting
    def _set_task_results(self, labels: Labels, probas: np.ndarray) -> None:
        """Store class-major (K, n_tasks) probabilities as ``probas_`` and ``labels_``."""
        self.classes_ = labels.classes
        self.probas_ = pd.DataFrame(probas.T, index=labels.tasks, columns=labels.classes)
        self.labels_ = pd.Series(
            labels.classes[np.argmax(probas, axis=0)], index=labels.tasks, name="label"
        )

    def _set_prevalence(self, labels: Labels, prevalence: np.ndarray) -> None:
        self.prevalence_ = pd.Series(prevalence, index=labels.classes, name="prevalence")

    def _confusion_frame(self, labels: Labels, values: np.ndarray) -> pd.DataFrame:
        index = pd.MultiIndex.from_product(
            [labels.workers, labels.classes], names=["worker", "true"]
        )
        return pd.DataFrame(
            values.reshape(-1, labels.n_classes),
            index=index,
            columns=pd.Index(labels.classes, name="observed"),
        )

    def _set_confusion(
        self,
        labels: Labels,
        mean: np.ndarray,
        sd: np.ndarray | None = None,
        lower: np.ndarray | None = None,
        upper: np.ndarray | None = None,
        credible_level: float | None = None,
    ) -> None:
        """Store per-worker confusion matrices (and their posterior spread, if Bayesian)."""
        self.confusion_ = self._confusion_frame(labels, mean)
        if sd is not None:
            self.confusion_sd_ = self._confusion_frame(labels, sd)
            self.confusion_lower_ = self._confusion_frame(labels, lower)
            self.confusion_upper_ = self._confusion_frame(labels, upper)
            self.credible_level_ = credible_level
        if labels.n_classes == 2:
            self.specificity_ = self._diagonal_summary(labels, mean, sd, lower, upper, 0)
            self.sensitivity_ = self._diagonal_summary(labels, mean, sd, lower, upper, 1)

    @staticmethod
    def _diagonal_summary(labels, mean, sd, lower, upper, k) -> pd.DataFrame:
        columns = {"mean": mean[:, k, k]}
        if sd is not None:
            columns.update(sd=sd[:, k, k], lower=lower[:, k, k], upper=upper[:, k, k])
        return pd.DataFrame(columns, index=labels.workers)

    def worker_table(self) -> pd.DataFrame:
        """Long table of every worker's confusion: worker, true, observed, mean (and sd, lower,
        upper for Bayesian models)."""
        self.check_is_fitted()
        table = self.confusion_.stack().rename("mean").to_frame()
        if hasattr(self, "confusion_sd_"):
            table["sd"] = self.confusion_sd_.stack()
            table["lower"] = self.confusion_lower_.stack()
            table["upper"] = self.confusion_upper_.stack()
        return table.reset_index()
