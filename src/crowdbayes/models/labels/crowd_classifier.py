"""Learning from crowds: a classifier on task features trained jointly with Dawid–Skene
workers (Raykar et al. 2010), and a consensus of out-of-fold classifier probabilities and the
labels."""

from __future__ import annotations

import copy
import numbers
from typing import Any

import numpy as np
import pandas as pd

from ...annotators import confusion_statistics, full_confusion_map, label_log_likelihood
from ...base import NON_NEGATIVE, POSITIVE_INT, RANDOM_STATE, TOLERANCE, Interval
from ...data import Labels
from ...data.features import FeatureTable, read_features
from ...data.io import TableLike
from ...inference import run_iterations
from ...maths import safe_log, softmax_classes
from ._base import LabelModel, clamp_gold, vote_share_start
from ._softmax import SoftmaxRegression, class_probabilities, fit_soft

__all__ = ["CrowdClassifier", "HasMethods"]

#: L-BFGS steps of the built-in classifier in each EM M-step (a partial M-step, warm-started:
#: generalised EM, Dempster, Laird & Rubin 1977, §3 — each step still raises the objective).
#: Fully converged M-steps took ~80 steps each, most of them spent on a classifier that the
#: next E-step moves anyway.
_M_STEP_ITERATIONS = 10


class HasMethods:
    """Parameter constraint: an object with the named methods (a scikit-learn classifier)."""

    def __init__(self, *methods: str) -> None:
        self.methods = methods

    def accepts(self, value: Any) -> bool:
        return all(callable(getattr(value, m, None)) for m in self.methods)

    def describe(self) -> str:
        return "an object with " + " and ".join(f"{m}()" for m in self.methods)

    def invalid_value(self) -> Any:
        return "not-a-classifier"


class CrowdClassifier(LabelModel):
    r"""A classifier of task features and Dawid–Skene workers, fitted together by EM, plus a
    consensus of the labels with the classifier's out-of-fold probabilities.

    Model (Raykar et al. 2010): the true class of task :math:`i` follows the classifier,
    :math:`P(c_i = k \mid x_i) = f_k(x_i)`, and each worker's label follows its confusion
    matrix, :math:`P(y_{ij} = l \mid c_i = k) = \theta_{jkl}`. EM alternates

    - E-step: :math:`r_{ik} \propto f_k(x_i) \prod_j \theta_{jky_{ij}}` (gold tasks clamped);
    - M-step: :math:`\theta_{jk:} \propto \sum_i r_{ik} [y_{ij} = \cdot] + a` and the classifier
      refitted to the soft targets :math:`r_i` (for a scikit-learn classifier: each task
      repeated once per class with weight :math:`r_{ik}`); the built-in classifier takes 10
      warm-started L-BFGS steps per M-step (generalised EM: the objective still rises), and
      its last M-step is completed, followed by one more E-step, when EM stops,

    from majority-vote shares. The monitored objective (``log_likelihood_history_``) is
    :math:`\sum_i \log\sum_k f_k(x_i)\prod_j\theta_{jky_{ij}}`; it rises as long as the
    classifier's fit maximises its (regularised) weighted likelihood. A task that no worker
    labelled is answered by the classifier alone, :math:`f(x_i)`.

    **Consensus** (the CROWDLAB idea of Goh, Tkachenko & Mueller 2022: judge each labelled task
    with a model that did not train on it): the classifier is refitted on ``n_folds`` − 1 folds
    of the labelled tasks' posteriors and predicts the held-out fold, giving out-of-fold
    probabilities :math:`\tilde f(x_i)`; the consensus is the posterior with that prior,
    :math:`\propto \tilde f_k(x_i)\prod_j\theta_{jky_{ij}}` (a Bayesian product where CROWDLAB
    uses a weighted average), and each task's quality score is the consensus probability of its
    consensus class.

    ``fit(labels, features)``: ``features`` is a table with one row per task (a DataFrame
    indexed by task id or with a ``task`` column, a CSV/Parquet path with a ``task`` column, or
    a :class:`~crowdbayes.data.features.FeatureTable`); every labelled task needs a row, and
    rows of tasks without labels are predicted too.

    Results: ``probas_`` / ``labels_`` (every task of the features: the EM posterior where
    labelled, the classifier elsewhere), ``classifier_probas_`` (the classifier alone),
    ``consensus_probas_`` / ``consensus_`` / ``quality_`` (labelled tasks), ``confusion_``,
    ``prevalence_``, ``classifier_`` (the fitted classifier), ``n_iter_``, ``converged_``.
    ``predict_proba(features)`` gives the classifier's probabilities for new feature rows.

    Parameters
    ----------
    classifier : object or None
        Any classifier with scikit-learn's ``fit(X, y, sample_weight=...)`` and
        ``predict_proba``; None (default) is the built-in L2 multinomial logistic regression
        (:class:`~crowdbayes.models.labels._softmax.SoftmaxRegression`, ``C=1``). Saving a model
        works with the built-in one.
    max_iter : int
        EM iterations at most.
    tol : float or None
        Stop when the objective changes by less than ``tol · max(1, |objective|)``.
    smoothing : float
        Dirichlet pseudo-counts added to every confusion cell.
    n_folds : int
        Folds of the out-of-fold probabilities of the consensus.
    random_state : int, Generator or None
        Seeds the fold split.
    progress : bool
        Show a progress bar.

    References
    ----------
    Raykar, V. C., Yu, S., Zhao, L. H., Valadez, G. H., Florin, C., Bogoni, L. & Moy, L. (2010).
    Learning from crowds. JMLR 11, 1297–1322.
    Goh, H. W., Tkachenko, U. & Mueller, J. (2022). CROWDLAB: supervised learning to infer
    consensus labels and quality scores for data with multiple annotators. arXiv:2210.06812.
    Dawid, A. P. & Skene, A. M. (1979). JRSS C 28(1).
    """

    _tags = {"features": "required", "new_items": True}
    _traces = {"log_likelihood_history_": "log-likelihood"}
    parameter_constraints = {
        "classifier": [None, HasMethods("fit", "predict_proba")],
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "smoothing": [NON_NEGATIVE],
        "n_folds": [Interval(numbers.Integral, 2, None)],
        "random_state": RANDOM_STATE,
        "progress": [bool],
    }

    def __init__(
        self,
        classifier: Any = None,
        max_iter: int = 100,
        tol: float | None = 1e-6,
        smoothing: float = 0.01,
        n_folds: int = 5,
        random_state: Any = 0,
        progress: bool = False,
    ) -> None:
        self.classifier = classifier
        self.max_iter = max_iter
        self.tol = tol
        self.smoothing = smoothing
        self.n_folds = n_folds
        self.random_state = random_state
        self.progress = progress

    def _new_classifier(self, warm_start=None):
        """A fresh copy of the classifier; the built-in one starts from ``warm_start``'s
        coefficients when given (the out-of-fold fits start at the full fit's optimum: the
        same optimum of a convex loss, about a tenth fewer L-BFGS steps on 1,000 × 100)."""
        if self.classifier is not None:
            return copy.deepcopy(self.classifier)
        classifier = SoftmaxRegression()
        if warm_start is not None:
            classifier.coef_ = warm_start.coef_.copy()
        return classifier

    # ------------------------------------------------------------------ fit
    def fit(
        self, labels: Labels | TableLike, features: TableLike | FeatureTable = None, *, init=None
    ):
        """Fit to ``labels`` and the tasks' ``features`` (class docstring)."""
        self.check_params()
        self._refuse_unused(features, init)
        labels = self._check_labels(labels)
        table = read_features(features, id_column="task", what="features")
        X = table.take(list(labels.tasks), needed_by="labels")
        others = table.ids[~table.ids.isin(labels.tasks)]
        X_other = table.values[table.ids.get_indexer(others)]
        n_classes = labels.n_classes
        if labels.n_tasks < self.n_folds:
            raise ValueError(
                f"{type(self).__name__}: n_folds={self.n_folds} needs at least as many labelled "
                f"tasks; got {labels.n_tasks}"
            )
        rng = self.random_generator()
        classifier = self._new_classifier()
        full_iterations = getattr(classifier, "max_iter", None)
        if self.classifier is None:
            classifier.max_iter = _M_STEP_ITERATIONS
        resp = vote_share_start(labels)
        state: dict = {}

        def e_step(confusion: np.ndarray) -> float:
            """The posterior of every task under the classifier and ``confusion``; returns
            the objective."""
            prior = class_probabilities(classifier, X, n_classes)
            log_lik, offset = label_log_likelihood(labels, safe_log(confusion))
            log_joint = clamp_gold(np.log(prior).T + log_lik, labels.gold_codes)
            new_resp, log_evidence = softmax_classes(log_joint)
            resp[:] = new_resp
            state.update(confusion=confusion, log_lik=log_lik)
            return float(log_evidence.sum()) + offset

        def step(_: int) -> float:
            confusion = full_confusion_map(confusion_statistics(labels, resp), self.smoothing)
            fit_soft(classifier, X, resp.T)
            return e_step(confusion)

        result = run_iterations(
            step,
            max_iter=self.max_iter,
            tol=self.tol,
            progress=self.progress,
            desc="crowd classifier EM",
            warn_name=type(self).__name__,
        )
        self.log_likelihood_history_ = np.array(result.history)
        self.n_iter_, self.converged_ = result.n_iter, result.converged
        if self.classifier is None:  # complete the last (partial) M-step, then its E-step
            classifier.max_iter = full_iterations
            fit_soft(classifier, X, resp.T)
            e_step(state["confusion"])
        self.classifier_ = classifier
        self.features_ = table.names

        # consensus: the posterior with out-of-fold classifier probabilities as the prior
        out_of_fold = np.empty((labels.n_tasks, n_classes))
        folds = rng.permutation(labels.n_tasks) % self.n_folds
        for fold in range(self.n_folds):
            held = folds == fold
            model = fit_soft(self._new_classifier(classifier), X[~held], resp.T[~held])
            out_of_fold[held] = class_probabilities(model, X[held], n_classes)
        log_joint = clamp_gold(np.log(out_of_fold).T + state["log_lik"], labels.gold_codes)
        consensus, _ = softmax_classes(log_joint)

        self._set_task_results(labels, resp)
        self._set_confusion(labels, state["confusion"])
        self._set_prevalence(labels, resp.mean(axis=1))
        other_probas = (
            class_probabilities(classifier, X_other, n_classes)
            if len(X_other)
            else np.empty((0, n_classes))  # every task labelled (scikit-learn refuses 0 rows)
        )
        all_tasks = labels.tasks.append(pd.Index(others))
        columns = labels.classes
        self.probas_ = pd.DataFrame(
            np.vstack([resp.T, other_probas]), index=all_tasks, columns=columns
        )
        self.labels_ = pd.Series(
            columns[self.probas_.to_numpy().argmax(axis=1)], index=all_tasks, name="label"
        )
        self.classifier_probas_ = pd.DataFrame(
            np.vstack([class_probabilities(classifier, X, n_classes), other_probas]),
            index=all_tasks,
            columns=columns,
        )
        self.consensus_probas_ = pd.DataFrame(consensus.T, index=labels.tasks, columns=columns)
        self.consensus_ = pd.Series(
            columns[consensus.argmax(axis=0)], index=labels.tasks, name="consensus"
        )
        self.quality_ = pd.Series(consensus.max(axis=0), index=labels.tasks, name="quality")
        self._set_held_out_counts(labels)
        return self

    def _fit(self, labels: Labels) -> None:  # fit(labels, features) is the entry point
        raise TypeError(f"{type(self).__name__}.fit needs the tasks' features")

    # ------------------------------------------------------------------ prediction
    def predict_proba(self, features: TableLike | FeatureTable | None = None) -> pd.DataFrame:
        """The fitted tasks' probabilities (no argument), or the classifier's for new feature
        rows (the same feature columns as at fit time)."""
        self.check_is_fitted()
        if features is None:
            return self.probas_
        table = read_features(features, id_column="task", what="features")
        table = table.require_names(self.features_)
        probas = class_probabilities(self.classifier_, table.values, len(self.classes_))
        return pd.DataFrame(probas, index=table.ids, columns=self.classes_)

    def predict(self, features: TableLike | FeatureTable | None = None) -> pd.Series:
        """The most probable class of the fitted tasks, or of new feature rows."""
        probas = self.predict_proba(features)
        return pd.Series(
            self.classes_[probas.to_numpy().argmax(axis=1)], index=probas.index, name="label"
        )
