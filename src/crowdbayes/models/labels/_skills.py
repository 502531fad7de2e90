r"""What the worker-skill models share (Wawa, Zero-Based Skill, Gold Majority Vote, M-MSR, KOS,
GLAD, MACE): per-label sums by ``np.bincount``, weighted votes, agreement with a labelling, and
the one-coin confusion matrix that turns a worker's accuracy into ``confusion_``.

Notation: label :math:`l` was given by worker :math:`j(l)` to task :math:`i(l)` with class
:math:`x_l`. A worker weight :math:`w_j` gives the weighted votes
:math:`V_{ki} = \sum_{l: i(l)=i} w_{j(l)} [x_l = k]`; a labelling :math:`\hat c` gives each
worker's agreement :math:`a_j = \frac{1}{n_j}\sum_{l: j(l)=j} [x_l = \hat c_{i(l)}]`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...data import Labels
from ._base import LabelModel

__all__ = [
    "SkillLabelModel",
    "weighted_votes",
    "agreement",
    "one_coin_confusion",
    "per_task_sum",
    "per_worker_sum",
    "require_gold",
]


def per_task_sum(labels: Labels, values: np.ndarray) -> np.ndarray:
    """Sum of per-label ``values`` over each task's labels, shape (n_tasks,)."""
    return np.bincount(labels.task_codes, weights=values, minlength=labels.n_tasks)


def per_worker_sum(labels: Labels, values: np.ndarray) -> np.ndarray:
    """Sum of per-label ``values`` over each worker's labels, shape (n_workers,)."""
    return np.bincount(labels.worker_codes, weights=values, minlength=labels.n_workers)


def weighted_votes(labels: Labels, label_weights: np.ndarray) -> np.ndarray:
    """Class-major (K, n_tasks) sums of per-label weights by (class, task)."""
    flat = np.bincount(
        labels.label_codes * labels.n_tasks + labels.task_codes,
        weights=label_weights,
        minlength=labels.n_classes * labels.n_tasks,
    )
    return flat.reshape(labels.n_classes, labels.n_tasks)


def agreement(labels: Labels, task_classes: np.ndarray) -> np.ndarray:
    """Each worker's share of labels equal to ``task_classes`` (class codes per task); a worker
    with no labels gets NaN."""
    hits = (labels.label_codes == task_classes[labels.task_codes]).astype(np.float64)
    counts = np.bincount(labels.worker_codes, minlength=labels.n_workers)
    with np.errstate(invalid="ignore", divide="ignore"):
        return per_worker_sum(labels, hits) / counts


def one_coin_confusion(accuracy: np.ndarray, n_classes: int) -> np.ndarray:
    """(workers, K, K) confusion matrices of one-coin workers: right with probability
    ``accuracy``, otherwise one of the other classes uniformly."""
    eye = np.eye(n_classes)
    off = (1.0 - accuracy) / (n_classes - 1)
    return accuracy[:, None, None] * eye + off[:, None, None] * (1.0 - eye)


def require_gold(labels: Labels, model: str) -> np.ndarray:
    """The tasks with a gold label (a boolean mask); raise if there are none."""
    known = labels.gold_codes >= 0
    if not known.any():
        raise ValueError(
            f"{model} learns each worker's skill from gold labels and got none: pass "
            "fit(labels, gold=...) or Labels(..., gold=...) (CLI: --gold FILE)"
        )
    return known


class SkillLabelModel(LabelModel):
    """A label model whose workers are summarised by one skill each (``skills_``).

    Sets the usual results from class-major probabilities, a per-worker accuracy (for the
    one-coin ``confusion_``) and the prevalence as the mean posterior.
    """

    _abstract = True

    def _set_skill_results(
        self,
        labels: Labels,
        probas: np.ndarray,
        skills: np.ndarray,
        accuracy: np.ndarray,
        winners: np.ndarray | None = None,
    ) -> None:
        """Store task results, ``skills_`` (Series by worker), the one-coin ``confusion_`` of
        ``accuracy`` and ``prevalence_``; ``winners`` overrides the argmax labels (ties)."""
        known = labels.gold_codes >= 0
        if known.any():
            probas = probas.copy()
            probas[:, known] = np.eye(labels.n_classes)[:, labels.gold_codes[known]]
            if winners is not None:
                winners = np.where(known, labels.gold_codes, winners)
        self._set_task_results(labels, probas)
        if winners is not None:
            self.labels_[:] = labels.classes[winners]
        self.skills_ = pd.Series(
            skills, index=pd.Index(labels.workers, name="worker"), name="skill"
        )
        accuracy = np.clip(np.nan_to_num(accuracy, nan=1.0 / labels.n_classes), 0.0, 1.0)
        self._set_confusion(labels, one_coin_confusion(accuracy, labels.n_classes))
        self._set_prevalence(labels, probas.mean(axis=1))


def vote_probabilities(votes: np.ndarray) -> np.ndarray:
    """Vote shares per task (columns of class-major ``votes``); a task whose votes sum to zero
    gets uniform probabilities."""
    totals = votes.sum(axis=0)
    uniform = totals <= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        probas = votes / totals
    probas[:, uniform] = 1.0 / votes.shape[0]
    return probas


def vote_winners(votes: np.ndarray, ties: str, keys: np.ndarray) -> np.ndarray:
    """Most-voted class of each task of class-major ``votes``: ties broken by the fixed random
    ``keys`` (K, n_tasks) for ``ties="random"`` (the same keys every iteration, so an iterative
    model does not flip a tie back and forth), or to the first class for ``"first"``."""
    if ties == "first":
        return np.argmax(votes, axis=0)
    return np.argmax(np.where(votes == votes.max(axis=0), keys, -1.0), axis=0)


def tie_keys(labels: Labels, rng: np.random.Generator) -> np.ndarray:
    """Random tie-break keys for :func:`vote_winners`."""
    return rng.random((labels.n_classes, labels.n_tasks))
