"""What every label-aggregation model shares: fit on :class:`~crowdbayes.Labels`, task and worker
results indexed by the user's ids, and the gold-clamping and vote-share starting points."""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...annotators.confusion_pass import most_probable_classes
from ...annotators.questions import (
    QUESTION_VALUES,
    held_out_confusion,
    held_out_confusion_counts,
    label_question_values,
)
from ...base import OptionalResult
from ...data import Labels, as_labels
from ...data.io import TableLike
from ...roles import LabelAggregator

__all__ = ["HeldOutCounts", "LabelModel", "clamp_gold", "feedback_tasks", "vote_share_start"]


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


def feedback_tasks(labels) -> np.ndarray:
    """The tasks whose posterior may feed back into the worker and prevalence estimates: every
    task but those that only one worker labelled and that have no gold (Plummer's "cut",
    Plummer 2015, Statistics and Computing 25: such a label can only agree with itself)."""
    return labels.cross_checked_tasks()


def majority_vote_codes(labels) -> np.ndarray:
    """Each task's most voted class code (the first of a tie), gold tasks their gold class."""
    codes = np.argmax(labels.vote_counts(), axis=0)
    known = labels.gold_codes >= 0
    codes[known] = labels.gold_codes[known]
    return codes


def vanished_classes(
    fitted: np.ndarray,
    majority: np.ndarray,
    n_classes: int,
    *,
    least_share: float = 0.05,
    ratio: float = 0.1,
) -> np.ndarray:
    """Boolean (n_classes,): the classes a fit has emptied although the labels support them —
    majority vote gives a class at least ``least_share`` of the tasks and the fit at most
    ``ratio`` of that share (``fitted`` and ``majority``: class codes per task).

    The symptom of the collapse of a Dawid–Skene-type fit on sparse data: every worker's
    confusion row costs the evidence an Occam factor, and with few labels per worker an
    explanation with fewer classes is cheaper (real shared sets at two or three random labels
    per task: every task in one class, or two of four classes used). An imbalanced truth is
    not mistaken for it: its minority class keeps a share of the same order as majority
    vote's (simulated, ten per cent positives, three labels per task: 6.5% of the tasks in the
    fit, 22% by majority vote)."""
    fitted_share = np.bincount(fitted, minlength=n_classes) / max(len(fitted), 1)
    majority_share = np.bincount(majority, minlength=n_classes) / max(len(majority), 1)
    return (majority_share >= least_share) & (fitted_share <= ratio * majority_share)


def empties_a_supported_class(labels, fitted: np.ndarray) -> bool:
    """Whether the fitted class codes per task (``fitted``) empty a class that majority vote
    on ``labels`` supports (:func:`vanished_classes`): the collapse that the prevalence prior's
    refit rule (:func:`fit_with_prevalence_rule`) answers with a strong prior."""
    return bool(vanished_classes(fitted, majority_vote_codes(labels), labels.n_classes).any())


def fit_with_prevalence_rule(
    labels, prior_prevalence, collapse_prevalence: float, fit: Callable[[float], np.ndarray]
) -> float:
    """Fit with a symmetric Dirichlet on the prevalence and return its concentration.

    ``fit(concentration)`` fits the model under that prior and returns the fitted class code
    per task. A number ``prior_prevalence`` is used as it is; ``"auto"`` (the refit rule of
    :class:`CommunityDawidSkene`'s default and ``BayesianDawidSkene(prior_prevalence="auto")``)
    fits with a flat prior, and again with ``collapse_prevalence`` when that fit empties a
    class the labels support (:func:`empties_a_supported_class`)."""
    if prior_prevalence != "auto":
        fit(float(prior_prevalence))
        return float(prior_prevalence)
    if empties_a_supported_class(labels, fit(1.0)):
        fit(collapse_prevalence)
        return collapse_prevalence
    return 1.0


def vote_share_start(labels: Labels) -> np.ndarray:
    """Class-major starting responsibilities: each task's vote shares, gold tasks one-hot."""
    votes = labels.vote_counts()
    resp = votes / votes.sum(axis=0)
    known = labels.gold_codes >= 0
    resp[:, known] = np.eye(labels.n_classes)[:, labels.gold_codes[known]]
    return resp


#: where a fit leaves what ``held_out_counts_`` is computed from until it is first read
_PENDING = "_held_out_pending"


@dataclass(frozen=True)
class HeldOutCounts:
    """What ``held_out_counts_`` is computed from, kept by a fit (references, no copies) until
    the result is first read: the fitted ``labels``, the fit's ``confusion`` and
    ``prevalence`` (the objects the fit stored; a later fit stores new ones), and the
    ``previous`` counts to add (an update with labels on new tasks), or None.

    Computing them costs more than a Dawid–Skene fit of 20 iterations (a posterior per label
    without the label's worker), and only :meth:`LabelModel.suggest` (and a saved file) reads
    them, so a fit no longer pays for them."""

    labels: Labels
    confusion: pd.DataFrame
    prevalence: pd.Series
    previous: pd.DataFrame | None = None

    def counts(self) -> pd.DataFrame:
        """The counts (:func:`~crowdbayes.annotators.questions.held_out_confusion_counts`),
        shaped and indexed like ``confusion``; the other labels enter by ``confusion`` (the
        posterior mean for a Bayesian model: each label's predictive probability given the
        class)."""
        labels, confusion = self.labels, self.confusion
        k = labels.n_classes
        fitted = pd.Index(confusion.index.get_level_values(0)[::k])
        with np.errstate(divide="ignore"):
            log_confusion = np.log(confusion.to_numpy().reshape(-1, k, k))
            log_prevalence = np.log(self.prevalence.reindex(labels.classes).to_numpy(np.float64))
        counts = held_out_confusion_counts(
            labels.task_codes,
            fitted.get_indexer(labels.workers)[labels.worker_codes],
            labels.label_codes,
            log_confusion,
            np.maximum(log_prevalence, -700.0),
            labels.gold_codes,
            labels.cross_checked_tasks(),
            pairs_distinct=labels.pairs_distinct,
        )
        frame = pd.DataFrame(
            counts.reshape(-1, k), index=confusion.index, columns=confusion.columns
        )
        if self.previous is not None:
            frame = frame.add(self.previous, fill_value=0.0).reindex(frame.index)
        return frame


class _LazyHeldOutCounts(OptionalResult):
    """The result ``held_out_counts_`` of the role, computed on first read from what the fit
    kept (:class:`HeldOutCounts`) and stored then, so that it is computed once, saved with the
    model, and set as any result by a loaded file (an :class:`~crowdbayes.base.OptionalResult`:
    None on a fitted model that has none)."""

    def __get__(self, model, owner=None):
        if model is None:
            return self
        pending = vars(model).get(_PENDING)
        if pending is None:
            return super().__get__(model, owner)
        counts = pending.counts()
        vars(model)["held_out_counts_"] = counts
        del vars(model)[_PENDING]
        return counts


class LabelModel(LabelAggregator):
    """The label family's shared machinery under the role :class:`~crowdbayes.roles.
    LabelAggregator` (which fixes the results every label model holds): ``fit(labels) ->
    self`` checks the labels and calls the model's ``_fit``, the task and worker results are
    stored in the user's ids, and :meth:`suggest` values one more label per task (and
    worker).

    The models with a confusion matrix per worker also have ``held_out_counts_`` —
    DataFrame shaped like ``confusion_``: each worker's labels counted against the posterior
    of the task from the other workers' labels, on the tasks someone else labelled too or
    that have gold (:func:`~crowdbayes.annotators.questions.held_out_confusion_counts`); what
    :meth:`suggest` reads to choose which worker to ask. It is computed when first read (or
    saved), from the labels and matrices the fit kept (:class:`HeldOutCounts`), not in every
    fit.
    """

    _abstract = True
    held_out_counts_ = _LazyHeldOutCounts()

    def fit(self, labels: Labels | TableLike, features=None, *, init=None) -> LabelModel:
        """Fit the model to ``labels`` (a :class:`~crowdbayes.Labels`, DataFrame or path);
        ``features`` and ``init`` only for the models that use them (the role's docstring)."""
        self.check_params()
        self._refuse_unused(features, init)
        labels = self._check_labels(labels)
        self._fit(labels)
        self._set_held_out_counts(labels)
        return self

    def _check_labels(self, labels: Labels | TableLike) -> Labels:
        """``labels`` as a :class:`~crowdbayes.Labels`; refuse other containers (continuous
        ``Values``), too few workers, and ordered grades given to a nominal model or unordered
        classes to an ordinal one (either would silently mean something else)."""
        name = type(self).__name__
        if not isinstance(labels, (Labels, pd.DataFrame, str, os.PathLike)):
            raise TypeError(
                f"{name} fits class labels (Labels, a DataFrame or a path); got "
                f"{type(labels).__name__}"
                + (
                    " (continuous values: use ContinuousAggregation)"
                    if type(labels).__name__ == "Values"
                    else ""
                )
            )
        labels = as_labels(labels)
        labels.require_workers(self.tags.min_workers, name)
        ordinal = self.tags.ordered_classes
        if labels.ordered and not ordinal:
            raise ValueError(
                f"{name} treats classes as unordered, but these labels are ordered grades "
                f"{list(labels.classes)}: use an ordinal model (OrdinalDawidSkene), or declare "
                "the labels with ordered=False to treat the grades as unordered classes"
            )
        if ordinal and not labels.ordered:
            raise ValueError(
                f"{name} models ordered grades, but these labels are unordered classes "
                f"{list(labels.classes)}: declare the labels with ordered=True (and classes=[...] "
                "lowest first unless the labels are numbers)"
            )
        self._check_capacity(labels.n_tasks, labels.n_workers, labels.n_classes)
        return labels

    @abstractmethod
    def _fit(self, labels: Labels) -> None:
        """Run inference on encoded labels and set the result attributes."""

    # ------------------------------------------------------------------ result formatting
    def _set_task_results(
        self, labels: Labels, probas: np.ndarray, *, add_counts: bool = False
    ) -> None:
        """Store class-major (K, n_tasks) probabilities as ``probas_`` and ``labels_``, and
        each worker's number of labels as ``worker_label_counts_`` (added to the previous
        counts with ``add_counts``, for an update with new labels)."""
        if "column_totals" in vars(labels):  # counted by the fit already
            per_worker = labels.column_totals.reshape(labels.n_workers, -1).sum(axis=1)
        else:
            per_worker = np.bincount(labels.worker_codes, minlength=labels.n_workers)
        counts = pd.Series(
            per_worker.astype(np.int64),
            index=pd.Index(labels.workers, name="worker"),
            name="labels",
        )
        if add_counts:
            counts = self.worker_label_counts_.add(counts, fill_value=0).astype(np.int64)
        self.worker_label_counts_ = counts
        self.classes_ = labels.classes
        self.probas_ = pd.DataFrame(probas.T, index=labels.tasks, columns=labels.classes)
        self.labels_ = pd.Series(
            labels.classes[most_probable_classes(probas)], index=labels.tasks, name="label"
        )

    def _set_held_out_counts(self, labels: Labels, *, add: bool = False) -> None:
        """Make ``held_out_counts_`` the counts of the fitted ``labels``, computed when first
        read (:class:`HeldOutCounts`; added to the previous counts with ``add``, for an update
        with labels on new tasks; an update of a model that has no counts gets none, rather
        than counts of the batch alone). Models without a confusion matrix per worker get
        nothing."""
        state = vars(self)
        previous = self.held_out_counts_ if add else None  # computed now, before the batch
        state.pop(_PENDING, None)  # replaces the labels that the previous counts come from
        if not add:
            state.pop("held_out_counts_", None)
        if "confusion_" not in state or (add and previous is None):
            return
        state.pop("held_out_counts_", None)
        state[_PENDING] = HeldOutCounts(labels, self.confusion_, self.prevalence_, previous)

    def _materialize(self) -> None:
        """Compute the results that are computed on first read (``held_out_counts_``), here and
        in a model kept inside (the one a chooser chose): what a saved file must hold."""
        for value in [self, *vars(self).values()]:
            if isinstance(value, LabelModel) and _PENDING in vars(value):
                _ = value.held_out_counts_

    def _get_state(self) -> dict:
        self._materialize()
        return super()._get_state()

    def _set_state(self, state: dict) -> None:
        self._forget_pending()  # the counts of the fit whose state this replaces
        super()._set_state(state)

    def _forget_pending(self) -> None:
        """Drop what a previous fit kept for the results computed on first read (a new fit
        sets its own, or none: a fit on Dask keeps no labels)."""
        vars(self).pop(_PENDING, None)

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

    # ------------------------------------------------------------------ what to ask next
    question_strategies = QUESTION_VALUES
    #: what ``strategy="auto"`` means when the questions name the worker to ask (``available``,
    #: or candidates with a ``worker`` column): the information gain with that worker's held-out
    #: confusion (benchmarks/active/results/active_labels_workers.md)
    default_question_strategy = "information"
    #: ... and when they name no worker: the posterior entropy. Replayed on the twelve shared
    #: label sets (one label per task to start, rounds of a quarter of the tasks, 2-4 labels
    #: per task), no rule held up against it under every model that might choose: the
    #: information gain with the label-weighted mean confusion scored 0.0001 below it on
    #: average (20 seeds), and ``"uncertainty_changes"`` (BayesianDawidSkene's task-only rule,
    #: +0.0015 when it chooses) is 0.0010 below it when HierarchicalAnnotation chooses, below on
    #: 3 of 12 sets (7 seeds; benchmarks/active/results/active_labels_taskonly_20seeds.md,
    #: active_labels_taskonly_hierarchical_7seeds.md; issue 43)
    task_question_strategy = "uncertainty"

    def _auto_strategy(self, candidates, available) -> str:
        """:attr:`default_question_strategy` for questions to a named worker,
        :attr:`task_question_strategy` for questions to whoever answers next."""
        named = available is not None or (
            isinstance(candidates, pd.DataFrame) and "worker" in candidates.columns
        )
        return self.default_question_strategy if named else self.task_question_strategy

    def _suggest(self, n, *, candidates, available, strategy, confidence, rng) -> pd.DataFrame:
        """Which task to label next (and by which worker): the value of one more label from
        :func:`~crowdbayes.annotators.questions.label_question_values` for every candidate
        task (default: every task fitted), or every (task, worker) pair of ``candidates`` (a
        table with ``task`` and ``worker`` columns) or of the tasks × ``available`` workers.

        A task the model has not seen has the prevalence as its posterior. A named worker is
        valued by their held-out confusion (their labels counted against each task's posterior
        without their own, ``held_out_counts_``), a worker the fit has not seen by everyone's
        pooled; a question to no one in particular by the fitted workers' mean confusion
        weighted by their number of labels (:meth:`_question_confusion`). Tasks whose most
        probable class has reached ``confidence`` are left out. Each task appears once, best
        first, before any task appears a second time.
        """
        questions = self._question_table(candidates, available)
        probas = self._question_posteriors(questions)
        if confidence is not None:
            keep = probas.max(axis=1) < confidence
            questions, probas = questions[keep].reset_index(drop=True), probas[keep]
        score = label_question_values(probas, self._question_confusion(questions), strategy, rng)
        questions = questions.assign(score=score)
        tie_break = rng.random(len(questions))
        order = np.lexsort((tie_break, -score))
        repeat = questions["task"].iloc[order].groupby(questions["task"].iloc[order]).cumcount()
        order = order[np.lexsort((np.arange(len(order)), repeat.to_numpy()))]
        return questions.iloc[order[:n]].reset_index(drop=True)

    def _question_table(self, candidates, available) -> pd.DataFrame:
        """Candidate questions as a table with a ``task`` (and maybe ``worker``) column."""
        if isinstance(candidates, pd.DataFrame):
            if "task" not in candidates.columns:
                raise ValueError(
                    f"candidates: a table needs a 'task' column; got {list(candidates.columns)}"
                )
            table = candidates[[c for c in ("task", "worker") if c in candidates.columns]]
        else:
            tasks = self.probas_.index if candidates is None else pd.Index(candidates)
            table = pd.DataFrame({"task": tasks.unique()})
        if available is not None:
            workers = pd.Index(available).unique()
            if len(workers) == 0:
                raise ValueError("available: no worker given")
            if "worker" in table.columns:
                table = table[table["worker"].isin(workers)]
            else:
                table = table.merge(pd.DataFrame({"worker": workers}), how="cross")
        return table.reset_index(drop=True)

    def _question_posteriors(self, questions: pd.DataFrame) -> np.ndarray:
        """The class posterior of each question's task, (n, K); a task the fit has not seen
        has the prevalence."""
        probas = self.probas_.reindex(questions["task"]).to_numpy(dtype=np.float64, copy=True)
        unseen = np.isnan(probas).any(axis=1)
        probas[unseen] = self.prevalence_.to_numpy()
        return probas

    def _question_confusion(self, questions: pd.DataFrame) -> np.ndarray:
        """The answering worker's confusion matrix per question (module docstring of
        :mod:`crowdbayes.annotators.questions`). A question to no one in particular: the
        label-weighted mean of the fitted matrices. A named worker: the worker's held-out
        confusion (``held_out_counts_``), and the pooled one of every worker for a worker the
        fit has not seen (:func:`~crowdbayes.annotators.questions.held_out_confusion`); the
        fitted matrices where the model has no held-out counts (updated with ``partial_fit``
        from a model saved without them)."""
        k = len(self.classes_)
        workers = pd.Index(self.confusion_.index.get_level_values(0)[::k])
        held_out = self.held_out_counts_
        if "worker" in questions.columns and held_out is not None:
            counts = held_out.reindex(self.confusion_.index).fillna(0.0).to_numpy()
            matrices, typical = held_out_confusion(counts.reshape(-1, k, k))
        else:
            matrices = self.confusion_.to_numpy().reshape(-1, k, k)
            weights = self.worker_label_counts_.reindex(workers).fillna(0).to_numpy(np.float64)
            typical = np.tensordot(weights / weights.sum(), matrices, axes=1)
        if "worker" not in questions.columns:
            return typical
        position = workers.get_indexer(questions["worker"])
        return np.where((position >= 0)[:, None, None], matrices[position], typical)
