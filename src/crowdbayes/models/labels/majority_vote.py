"""Majority vote with an explicit tie policy."""

from __future__ import annotations

import numpy as np

from ..._utils import RandomState, as_generator
from ...annotators import confusion_statistics, full_confusion_map
from ...data import Labels
from ._base import LabelModel

__all__ = ["MajorityVote"]

_TIE_POLICIES = ("random", "first")


class MajorityVote(LabelModel):
    """Each task's class is the one most workers gave it.

    ``probas_`` are the vote shares. Ties are broken by ``ties``:

    - ``"random"`` (default): uniformly among the tied classes, with a generator seeded by
      ``random_state`` (same seed, same answer);
    - ``"first"``: the tied class that comes first in ``labels.classes``.

    ``confusion_`` is each worker's agreement with the majority labels (smoothed by one
    pseudo-count per cell), a cheap reliability summary; gold tasks keep their gold label.

    Parameters
    ----------
    ties : {"random", "first"}
    random_state : int, Generator or None
    """

    min_workers = 1

    def __init__(self, ties: str = "random", random_state: RandomState = 0) -> None:
        self.ties = ties
        self.random_state = random_state

    def _fit(self, labels: Labels) -> None:
        if self.ties not in _TIE_POLICIES:
            raise ValueError(f"ties must be one of {_TIE_POLICIES}; got {self.ties!r}")
        votes = labels.vote_counts()
        shares = votes / votes.sum(axis=0)
        winners = majority_classes(votes, self.ties, as_generator(self.random_state))
        known = labels.gold_codes >= 0
        winners[known] = labels.gold_codes[known]
        shares[:, known] = np.eye(labels.n_classes)[:, labels.gold_codes[known]]
        self._set_task_results(labels, shares)
        self.labels_[:] = labels.classes[winners]
        self.n_ties_ = int((np.sum(votes == votes.max(axis=0), axis=0) > 1).sum())
        self._set_prevalence(
            labels, np.bincount(winners, minlength=labels.n_classes) / len(winners)
        )
        onehot = np.eye(labels.n_classes)[:, winners]
        stats = confusion_statistics(labels, onehot)
        self._set_confusion(labels, full_confusion_map(stats, 1.0))
        self.n_iter_, self.converged_ = 1, True


def majority_classes(votes: np.ndarray, ties: str, rng: np.random.Generator) -> np.ndarray:
    """Most-voted class of each task from class-major (K, n_tasks) ``votes``, ties broken by
    ``ties`` ("random" or "first")."""
    if ties == "first":
        return np.argmax(votes, axis=0)
    is_max = votes == votes.max(axis=0)
    keys = np.where(is_max, rng.random(votes.shape[::-1]).T, -1.0)
    return np.argmax(keys, axis=0)
