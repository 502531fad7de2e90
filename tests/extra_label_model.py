"""A label model written the way a new model joins the library, for tests/test_new_model.py.

Its own module holds the estimator; the family's ``__init__`` would add one
:class:`~crowdbayes._catalogue.ModelEntry` to ``COMMAND_LINE`` and the name to its lazy
exports (the test does that at run time); nothing else in the library changes. The model:
each task's class probabilities are its smoothed vote shares
``p_ik = (n_ik + α) / (n_i + K α)``, the prevalence their mean, and each worker's confusion
matrix the smoothed expected counts of their labels against those probabilities.
"""

from __future__ import annotations

import numpy as np

from crowdbayes.base import POSITIVE
from crowdbayes.models.labels import LabelModel


class SmoothedVote(LabelModel):
    """Vote shares with ``alpha`` pseudo-votes for every class (module docstring)."""

    _tags = {"min_workers": 1}
    parameter_constraints = {"alpha": [POSITIVE]}

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = alpha

    def _fit(self, labels) -> None:
        votes = labels.vote_counts() + self.alpha
        probas = votes / votes.sum(axis=0)
        known = labels.gold_codes >= 0
        probas[:, known] = np.eye(labels.n_classes)[:, labels.gold_codes[known]]
        counts = np.zeros((labels.n_workers, labels.n_classes, labels.n_classes))
        np.add.at(
            counts,
            (labels.worker_codes, slice(None), labels.label_codes),
            probas[:, labels.task_codes].T,
        )
        counts += self.alpha
        self._set_task_results(labels, probas)
        self._set_prevalence(labels, probas.mean(axis=1))
        self._set_confusion(labels, counts / counts.sum(axis=2, keepdims=True))
        self.n_iter_, self.converged_ = 1, True
