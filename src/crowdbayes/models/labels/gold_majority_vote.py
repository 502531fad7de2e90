r"""Gold majority vote: a vote weighted by each worker's accuracy on gold tasks."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from ..._utils import RandomState
from ...base import RANDOM_STATE
from ...data import Labels
from ...data.io import TableLike
from ._skills import (
    SkillLabelModel,
    agreement,
    per_worker_sum,
    require_gold,
    tie_keys,
    vote_probabilities,
    vote_winners,
    weighted_votes,
)
from .wawa import TIE_OPTIONS

__all__ = ["GoldMajorityVote"]


class GoldMajorityVote(SkillLabelModel):
    r"""Majority vote weighted by each worker's accuracy on the tasks with a gold label.

    Skill :math:`a_j` = the share of worker :math:`j`'s labels on gold tasks that equal the
    gold class; a worker who labelled no gold task gets the pooled accuracy of all labels on
    gold tasks. Then :math:`V_{ki} = \sum_{l \in i} a_{j(l)} [x_l = k]`, ``labels_`` is the
    arg max (gold tasks keep their gold class) and ``probas_`` the weighted vote shares.

    The gold comes with the labels (``Labels(..., gold=...)``, CLI ``--gold FILE``) or as
    ``fit(labels, gold=...)`` (crowd-kit's ``fit(data, true_labels)``): a Series indexed by
    task, a ``task, label`` table, a mapping or a path. A gold task that has no labels is an
    error (its skill evidence would be empty and its id is most likely a typo or another
    data set's); so is fitting without any gold.

    Parameters
    ----------
    ties : {"random", "first"}
    random_state : int, Generator or None
        Seeds the random tie-breaks.

    References
    ----------
    The Toloka crowd-kit documentation (``crowdkit.aggregation.GoldMajorityVote``).
    """

    _tags = {"min_workers": 1, "needs_gold": True}
    parameter_constraints = {"ties": [TIE_OPTIONS], "random_state": RANDOM_STATE}

    def __init__(self, ties: str = "random", random_state: RandomState = 0) -> None:
        self.ties = ties
        self.random_state = random_state

    def fit(
        self, labels: Labels | TableLike, features=None, *, gold=None, init=None
    ) -> GoldMajorityVote:
        """Fit to ``labels``, with the gold of ``labels`` or the ``gold`` given here."""
        self.check_params()
        self._refuse_unused(features, init)
        labels = self._check_labels(labels)
        if gold is not None:
            labels = with_gold(labels, gold, type(self).__name__)
        self._fit(labels)
        self._set_held_out_counts(labels)
        return self

    def fit_predict(self, labels: Labels | TableLike, features=None, *, gold=None) -> pd.Series:
        """Fit (with ``gold``, see :meth:`fit`), then return ``labels_``."""
        return self.fit(labels, features, gold=gold).labels_

    def fit_predict_proba(
        self, labels: Labels | TableLike, features=None, *, gold=None
    ) -> pd.DataFrame:
        """Fit (with ``gold``, see :meth:`fit`), then return ``probas_``."""
        return self.fit(labels, features, gold=gold).probas_

    def _fit(self, labels: Labels) -> None:
        known = require_gold(labels, type(self).__name__)
        on_gold = known[labels.task_codes]
        hits = (labels.label_codes == labels.gold_codes[labels.task_codes]) & on_gold
        n_gold = per_worker_sum(labels, on_gold.astype(np.float64))
        correct = per_worker_sum(labels, hits.astype(np.float64))
        pooled = correct.sum() / n_gold.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            skills = np.where(n_gold > 0, correct / n_gold, pooled)
        keys = tie_keys(labels, self.random_generator())
        votes = weighted_votes(labels, skills[labels.worker_codes])
        winners = np.where(known, labels.gold_codes, vote_winners(votes, self.ties, keys))
        self.n_iter_, self.converged_ = 1, True
        self.gold_label_counts_ = pd.Series(
            n_gold.astype(np.int64), index=pd.Index(labels.workers, name="worker"), name="gold"
        )
        self._set_skill_results(
            labels, vote_probabilities(votes), skills, agreement(labels, winners), winners
        )


def with_gold(labels: Labels, gold, model: str) -> Labels:
    """A shallow copy of ``labels`` whose gold is ``gold`` (every gold task must have labels)."""
    from ...data.hygiene import Hygiene

    series = Labels._read_gold(gold, "task", "label", Hygiene("gold"))
    positions = labels.tasks.get_indexer(series.index)
    unknown = series.index[positions < 0]
    if len(unknown):
        shown = ", ".join(repr(t) for t in list(unknown[:5]))
        raise ValueError(
            f"{model}: the gold names {len(unknown)} task(s) that have no labels "
            f"(first: {shown}); every gold task must be among the {labels.n_tasks} labelled tasks"
        )
    result = copy.copy(labels)
    result.gold_codes = labels._encode_gold(series)
    return result
