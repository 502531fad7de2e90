r"""Zero-Based Skill: skills learned by a decaying step towards agreement."""

from __future__ import annotations

import numpy as np

from ..._utils import RandomState
from ...base import OPEN_UNIT, POSITIVE_INT, RANDOM_STATE, TOLERANCE, Interval, Real
from ...data import Labels
from ...inference.driver import run_iterations
from ._skills import (
    SkillLabelModel,
    agreement,
    tie_keys,
    vote_probabilities,
    vote_winners,
    weighted_votes,
)
from .wawa import TIE_OPTIONS

__all__ = ["ZeroBasedSkill"]


class ZeroBasedSkill(SkillLabelModel):
    r"""Zero-Based Skill: every worker starts with skill 0 and moves towards its agreement with
    the skill-weighted vote, with a learning rate that decays in steps.

    With skills :math:`s^{(t)}` (all zero at first, when the vote is the plain majority):

    .. math::
        \hat c^{(t)}_i = \arg\max_k \textstyle\sum_{l \in i} s^{(t)}_{j(l)} [x_l = k], \qquad
        s^{(t+1)}_j = s^{(t)}_j + \eta_t\,(a_j(\hat c^{(t)}) - s^{(t)}_j),

    where :math:`a_j(\hat c)` is worker :math:`j`'s share of labels equal to :math:`\hat c`, and
    :math:`\eta_t` = ``lr_init`` times ``lr_reduce_factor`` for every ``lr_steps_to_reduce``
    iterations done. Stops when no skill moves by more than ``tol``. ``probas_`` are the
    final weighted vote shares; ``skills_`` the skills; ``confusion_`` the one-coin matrix of
    each worker's agreement with the final labels. Gold tasks keep their gold class.

    Parameters
    ----------
    max_iter : int
    lr_init : float
        First learning rate (1 makes the first step Wawa's skills).
    lr_steps_to_reduce : int
    lr_reduce_factor : float in (0, 1)
    tol : float or None
        Largest change of a skill that counts as converged.
    ties, random_state : see :class:`Wawa`.

    References
    ----------
    The Toloka crowd-kit documentation (``crowdkit.aggregation.ZeroBasedSkill``).
    """

    _tags = {"min_workers": 1}
    _traces = {"change_history_": "largest change per iteration"}
    parameter_constraints = {
        "max_iter": [POSITIVE_INT],
        "lr_init": [Interval(Real, 0, 1, "right")],
        "lr_steps_to_reduce": [POSITIVE_INT],
        "lr_reduce_factor": [OPEN_UNIT],
        "tol": TOLERANCE,
        "ties": [TIE_OPTIONS],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        max_iter: int = 100,
        lr_init: float = 1.0,
        lr_steps_to_reduce: int = 20,
        lr_reduce_factor: float = 0.5,
        tol: float | None = 1e-5,
        ties: str = "random",
        random_state: RandomState = 0,
    ) -> None:
        self.max_iter = max_iter
        self.lr_init = lr_init
        self.lr_steps_to_reduce = lr_steps_to_reduce
        self.lr_reduce_factor = lr_reduce_factor
        self.tol = tol
        self.ties = ties
        self.random_state = random_state

    def _fit(self, labels: Labels) -> None:
        keys = tie_keys(labels, self.random_generator())
        known = labels.gold_codes >= 0
        state = {"skills": np.zeros(labels.n_workers)}

        def winners_of(skills: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            weights = skills if skills.any() else np.ones_like(skills)
            votes = weighted_votes(labels, weights[labels.worker_codes])
            return votes, np.where(known, labels.gold_codes, vote_winners(votes, self.ties, keys))

        def step(iteration: int) -> float:
            rate = self.lr_init * self.lr_reduce_factor ** (iteration // self.lr_steps_to_reduce)
            skills = state["skills"]
            _, winners = winners_of(skills)
            moved = rate * (agreement(labels, winners) - skills)
            state["skills"] = skills + moved
            return float(np.abs(moved).max())

        fit = run_iterations(
            step,
            max_iter=self.max_iter,
            tol=self.tol,
            monitor="change",
            desc="Zero-Based Skill",
            warn_name="ZeroBasedSkill",
        )
        self.n_iter_, self.converged_ = fit.n_iter, fit.converged
        self.change_history_ = np.array(fit.history)
        skills = state["skills"]
        votes, winners = winners_of(skills)
        self._set_skill_results(
            labels, vote_probabilities(votes), skills, agreement(labels, winners), winners
        )
