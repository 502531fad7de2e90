r"""Wawa: worker agreement with aggregate."""

from __future__ import annotations

import numpy as np

from ..._utils import RandomState
from ...base import RANDOM_STATE, Options
from ...data import Labels
from ._skills import (
    SkillLabelModel,
    agreement,
    tie_keys,
    vote_probabilities,
    vote_winners,
    weighted_votes,
)

__all__ = ["Wawa", "TIE_OPTIONS"]

#: the tie policies of the weighted-vote models (as :class:`MajorityVote`'s)
TIE_OPTIONS = Options("random", "first")


class Wawa(SkillLabelModel):
    r"""Worker Agreement With Aggregate: a majority vote weighted by each worker's agreement
    with the plain majority vote.

    1. :math:`\hat c_i = \arg\max_k \sum_{l \in i} [x_l = k]` (majority vote);
    2. skill :math:`a_j` = the share of worker :math:`j`'s labels equal to :math:`\hat c`;
    3. :math:`V_{ki} = \sum_{l \in i} a_{j(l)} [x_l = k]`; ``labels_`` is the arg max and
       ``probas_`` the weighted vote shares :math:`V_{ki} / \sum_k V_{ki}`.

    ``skills_`` holds :math:`a_j`; ``confusion_`` is the one-coin matrix of each worker's
    agreement with the final labels. Gold tasks keep their gold class (and count as the
    majority in step 2).

    Parameters
    ----------
    ties : {"random", "first"}
        How a tied vote is broken (as :class:`MajorityVote`).
    random_state : int, Generator or None
        Seeds the random tie-breaks.

    References
    ----------
    The Toloka crowd-kit documentation (``crowdkit.aggregation.Wawa``); the idea of weighting
    votes by agreement with the aggregate is the first step of iterative weighted majority
    voting (Li & Yu, 2014, "Error rate bounds and iterative weighted majority voting for
    crowdsourcing").
    """

    _tags = {"min_workers": 1}
    parameter_constraints = {"ties": [TIE_OPTIONS], "random_state": RANDOM_STATE}

    def __init__(self, ties: str = "random", random_state: RandomState = 0) -> None:
        self.ties = ties
        self.random_state = random_state

    def _fit(self, labels: Labels) -> None:
        keys = tie_keys(labels, self.random_generator())
        known = labels.gold_codes >= 0
        majority = vote_winners(labels.vote_counts(), self.ties, keys)
        majority = np.where(known, labels.gold_codes, majority)
        skills = agreement(labels, majority)
        votes = weighted_votes(labels, skills[labels.worker_codes])
        winners = vote_winners(votes, self.ties, keys)
        final = np.where(known, labels.gold_codes, winners)
        self.n_iter_, self.converged_ = 1, True
        self._set_skill_results(
            labels, vote_probabilities(votes), skills, agreement(labels, final), winners
        )
