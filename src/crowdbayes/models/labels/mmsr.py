r"""M-MSR: worker skills by robust rank-one completion of the agreement matrix."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..._utils import RandomState
from ...base import NON_NEGATIVE, POSITIVE_INT, RANDOM_STATE, TOLERANCE
from ...data import Labels
from ...inference.driver import run_iterations
from ...maths import softmax_classes
from ._base import clamp_gold
from ._skills import SkillLabelModel, agreement, weighted_votes

__all__ = ["MMSR"]


class MMSR(SkillLabelModel):
    r"""Ma & Olshevsky (2020): one-coin worker skills from the workers' pairwise agreement, by
    robust rank-one matrix completion (median-based Mean-Subsequence-Reduced, M-MSR).

    A one-coin worker is right with probability :math:`p_j`; with
    :math:`s_j = (K p_j - 1)/(K - 1)` two workers agree on a task with probability
    :math:`((K-1) s_i s_j + 1)/K`, so the agreement rates :math:`a_{ij}` (over the tasks both
    labelled) give :math:`C_{ij} = (K a_{ij} - 1)/(K - 1) \approx s_i s_j`: an incomplete
    rank-one matrix, observed where two workers share tasks. Each rate is estimated with :math:`t`
    = ``prior_tasks`` pseudo-tasks at the pooled rate :math:`\bar a` (all agreements over all
    shared label pairs): :math:`a_{ij} = (m_{ij} + t\,\bar a)/(n_{ij} + t)` for
    :math:`m_{ij}` agreements on :math:`n_{ij}` shared tasks (the posterior mean under a beta
    prior centred on the pooled rate; ``prior_tasks=0`` is the plain rate of the paper).
    M-MSR recovers :math:`|s|` from :math:`|C|` by the robust fixed point
    :math:`x_i = \mathrm{median}_{j \sim i} |C_{ij}| / x_j` (MSR's trimming of the :math:`F`
    largest and smallest neighbour values leaves the median unchanged whenever both sides
    hold :math:`F` values, so it is implicit here), iterated as
    :math:`x_i \leftarrow \sqrt{x_i \cdot \mathrm{median}_j |C_{ij}|/x_j}` (the geometric mean
    of the old and new values removes the scale's back-and-forth of the plain update; on an
    exactly rank-one matrix it lands on the fixed point in one step). Signs follow from the
    signed :math:`C` (each worker takes the sign of its neighbours' weighted agreement, and
    the whole vector the sign that makes the label-weighted mean skill positive), and
    :math:`s` is clipped to :math:`[-1/(K-1) + 1/\sqrt{n},\ 1 - 1/\sqrt{n}]` (``n`` tasks).

    The labels are then the one-coin posterior with a uniform class prior: a vote weighted
    by :math:`w_j = \log\frac{(K-1)p_j}{1-p_j}`, ``probas_`` its softmax. ``skills_`` holds
    :math:`p_j`; a worker who shares no task with another gets the label-weighted mean skill.

    **Sparse data.** With one label per task no worker shares a task, every worker gets the
    same skill and the answer is majority vote's. With two, each agreement rate comes from
    one or two shared tasks, and the plain rates make the completed matrix mostly noise:
    below majority vote on bluebird, dog and WSD (0.620, 0.705, 0.968 against 0.639, 0.713,
    0.974; mean of 3 random starts, ``tests/models/labels/test_sparse_start.py``). Two
    pseudo-tasks (the default; 1, 2 and 4 tried) lift bluebird and dog above majority vote
    (0.654, 0.717), leave WSD at 0.968 and move no other set below it; with every label
    they raise the mean accuracy over the 12 shared sets with gold from 0.807 to 0.814
    (S_Adult 0.718 to 0.763, web 0.694 to 0.732, where many pairs of workers share few
    tasks; TREC 0.653 to 0.640), ``benchmarks/labels/results/labels_accuracy_issue18.md``.

    Parameters
    ----------
    prior_tasks : float
        Pseudo-tasks at the pooled agreement rate added to every pair's rate (0: none).
    max_iter : int
    tol : float or None
        Largest change of :math:`|s|` that counts as converged.
    random_state : int, Generator or None
        Seeds the starting point (uniform on (0, 1)).

    References
    ----------
    Ma, Q. & Olshevsky, A. (2020). Adversarial crowdsourcing through robust rank-one matrix
    completion. NeurIPS 33.
    """

    _traces = {"change_history_": "largest change per iteration"}
    parameter_constraints = {
        "prior_tasks": [NON_NEGATIVE],
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        prior_tasks: float = 2.0,
        max_iter: int = 1000,
        tol: float | None = 1e-10,
        random_state: RandomState = 0,
    ) -> None:
        self.prior_tasks = prior_tasks
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def _fit(self, labels: Labels) -> None:
        k, n_workers = labels.n_classes, labels.n_workers
        covariance, observed = agreement_covariance(labels, self.prior_tasks)
        magnitude = np.abs(covariance)
        state = {"x": self.random_generator().uniform(size=n_workers)}
        has_pairs = observed.any(axis=1)
        rows = np.flatnonzero(has_pairs)
        mask = observed[rows]
        target = magnitude[rows]

        def step(iteration: int) -> float:
            x = state["x"]
            ratios = np.where(mask, target / np.maximum(x, 1e-12)[None, :], np.nan)
            new = x.copy()
            new[rows] = np.sqrt(x[rows] * np.nanmedian(ratios, axis=1))
            state["x"] = new
            return float(np.abs(new - x).max())

        fit = run_iterations(
            step, max_iter=self.max_iter, tol=self.tol, monitor="change", desc="M-MSR"
        )
        self.n_iter_, self.converged_ = fit.n_iter, fit.converged
        self.change_history_ = np.array(fit.history)
        counts = np.bincount(labels.worker_codes, minlength=n_workers).astype(np.float64)
        skill = _signed(covariance, observed, state["x"], counts)
        low = -1.0 / (k - 1) + 1.0 / np.sqrt(labels.n_tasks)
        high = 1.0 - 1.0 / np.sqrt(labels.n_tasks)
        skill = np.clip(skill, low, high)
        if (~has_pairs).any() and has_pairs.any():
            skill[~has_pairs] = np.average(skill[has_pairs], weights=counts[has_pairs])
        accuracy = skill * (k - 1) / k + 1.0 / k
        weights = np.log((k - 1) * accuracy / (1.0 - accuracy))
        log_joint = clamp_gold(
            weighted_votes(labels, weights[labels.worker_codes]), labels.gold_codes
        )
        probas, _ = softmax_classes(log_joint)
        self.covariance_ = covariance
        self._set_skill_results(
            labels, probas, accuracy, agreement(labels, np.argmax(probas, axis=0))
        )


def agreement_covariance(labels: Labels, prior_tasks: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    r"""Dense (workers × workers) :math:`C_{ij} = (K a_{ij} - 1)/(K-1)` from the agreement
    rates :math:`a_{ij}` over shared tasks (label pairs, so repeated labels count as such),
    each with ``prior_tasks`` pseudo-tasks at the pooled rate (:class:`MMSR`), and the mask
    of the pairs that share a task (diagonal excluded)."""
    k = labels.n_classes
    ones = np.ones(labels.n_labels)
    shape = (labels.n_workers, labels.n_tasks)
    said = sp.csr_matrix(
        (ones, (labels.worker_codes, labels.task_codes * k + labels.label_codes)),
        shape=(labels.n_workers, labels.n_tasks * k),
    )
    saw = sp.csr_matrix((ones, (labels.worker_codes, labels.task_codes)), shape=shape)
    agree = (said @ said.T).toarray()
    common = (saw @ saw.T).toarray()
    np.fill_diagonal(agree, 0.0)
    np.fill_diagonal(common, 0.0)
    observed = common > 0
    pooled = agree.sum() / common.sum() if observed.any() else 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(observed, (agree + prior_tasks * pooled) / (common + prior_tasks), 0.0)
    return np.where(observed, (k * rate - 1.0) / (k - 1), 0.0), observed


def _signed(covariance: np.ndarray, observed: np.ndarray, magnitude: np.ndarray, counts):
    """Signs for the magnitudes: each worker takes the sign of its neighbours' agreement
    weighted by their signed magnitude (a few sweeps from all positive), then the vector the
    sign whose label-weighted mean is positive (most labels come from better-than-chance
    workers)."""
    signs = np.ones_like(magnitude)
    for _ in range(10):
        support = np.where(observed, covariance, 0.0) @ (signs * magnitude)
        new = np.where(support < 0, -1.0, 1.0)
        if np.array_equal(new, signs):
            break
        signs = new
    skill = signs * magnitude
    return -skill if counts @ skill < 0 else skill
