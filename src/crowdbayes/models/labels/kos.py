r"""KOS: Karger, Oh & Shah's message passing for binary labels."""

from __future__ import annotations

import numpy as np

from ..._utils import RandomState
from ...base import POSITIVE_INT, RANDOM_STATE, TOLERANCE
from ...data import Labels
from ...inference.driver import run_iterations
from ._skills import SkillLabelModel, agreement, per_task_sum, per_worker_sum

__all__ = ["KOS"]


class KOS(SkillLabelModel):
    r"""Karger, Oh & Shah (2011): iterative message passing for binary tasks.

    With :math:`A_l = \pm 1` (the second class is +1) for label :math:`l` of worker
    :math:`j(l)` on task :math:`i(l)`, messages live on the labels (the edges of the
    task–worker graph). Starting from :math:`y_l \sim N(1, 1)`,

    .. math::
        x_l = \textstyle\sum_{l' \in i(l),\, l' \ne l} A_{l'} y_{l'}, \qquad
        y_l = \textstyle\sum_{l' \in j(l),\, l' \ne l} A_{l'} x_{l'},

    (task-to-worker, then worker-to-task), and the decision is
    :math:`\hat c_i = \mathrm{sign}\sum_{l \in i} A_l y_l`. Messages are rescaled to unit
    root-mean-square every iteration (the rule is scale-free); iterations stop when the
    rescaled messages move by less than ``tol``.

    KOS is a decision rule, not a probability model: ``probas_`` are 0 or 1 (1/2 on a tie,
    whose label is then drawn with ``random_state``). A task whose messages sum to zero is
    decided by its plain vote: the messages are extrinsic (a label never counts towards its
    own worker's weight), so a task that only one worker labelled, or whose workers have no
    other task in common with anyone, gets no message at all. With one random label per task
    every task was such a tie before (accuracy about 0.5 on every binary set, majority vote
    0.64–0.82; ``tests/models/labels/test_sparse_start.py``). At two labels per task each
    message passes through one other label, and KOS, whose guarantees need many labels per
    task and worker, is below majority vote on bluebird, RTE, Temp and TREC (0.549, 0.508,
    0.566, 0.568 against 0.639, 0.733, 0.768, 0.614): a worker's weight rests on a handful of
    agreements and often turns negative (RTE, first start: 47% of the workers after 100
    iterations), and a task both of whose workers are negative is answered against both
    labels (48% of the 510 tasks whose two labels agree; 4% after one iteration, which is
    still below majority vote, 0.67). ``skills_`` is each worker's final
    message :math:`\sum_{l \in j} A_l x_l` over the largest absolute value (a reliability
    score in [-1, 1]); ``confusion_`` the one-coin matrix of each worker's agreement with the
    decisions. Gold tasks keep their gold class. Binary labels only: more classes are an
    error.

    Parameters
    ----------
    max_iter : int
    tol : float or None
    random_state : int, Generator or None
        Seeds the starting messages and tie-breaks.

    References
    ----------
    Karger, D. R., Oh, S. & Shah, D. (2011). Iterative learning for reliable crowdsourcing
    systems. NeurIPS 24.
    """

    _tags = {"min_workers": 1}
    _traces = {"change_history_": "largest change per iteration"}
    parameter_constraints = {
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self, max_iter: int = 100, tol: float | None = 1e-6, random_state: RandomState = 0
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _fit(self, labels: Labels) -> None:
        if labels.n_classes != 2:
            raise ValueError(
                f"KOS is for binary labels (two classes); got {labels.n_classes} classes: "
                f"{list(labels.classes)}. Use DawidSkene, GLAD, MACE or MMSR for more classes"
            )
        rng = self.random_generator()
        sign = 2.0 * labels.label_codes - 1.0
        state = {"y": rng.normal(1.0, 1.0, size=labels.n_labels)}

        def step(iteration: int) -> float:
            y = state["y"]
            signed = sign * y
            x = per_task_sum(labels, signed)[labels.task_codes] - signed
            signed = sign * x
            new = per_worker_sum(labels, signed)[labels.worker_codes] - signed
            scale = np.sqrt(np.mean(new**2))
            new = new / scale if scale > 0 else new
            state["y"], state["x"] = new, x
            return float(np.abs(new - y).max())

        fit = run_iterations(
            step, max_iter=self.max_iter, tol=self.tol, monitor="change", desc="KOS"
        )
        self.n_iter_, self.converged_ = fit.n_iter, fit.converged
        self.change_history_ = np.array(fit.history)
        score = per_task_sum(labels, sign * state["y"])
        # no message (a worker with no other task shared with others): the plain vote decides
        score = np.where(score == 0, per_task_sum(labels, sign) * 1e-12, score)
        tie = score == 0
        winners = np.where(tie, rng.integers(2, size=labels.n_tasks), score > 0).astype(np.int64)
        probas = np.stack([score < 0, score > 0]).astype(np.float64)
        probas[:, tie] = 0.5
        worker = per_worker_sum(labels, sign * state["x"])
        top = np.abs(worker).max()
        skills = worker / top if top > 0 else worker
        known = labels.gold_codes >= 0
        final = np.where(known, labels.gold_codes, winners)
        self._set_skill_results(labels, probas, skills, agreement(labels, final), winners)
