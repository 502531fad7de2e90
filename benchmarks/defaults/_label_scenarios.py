r"""Simulated class labels built to break the label models' assumptions (issue 40's defaults
protocol): task difficulty, spammers and adversaries, workers with two or three labels each,
class imbalance, many workers per task.

Each task's true class is drawn from ``prevalence`` (uniform when None). An honest worker
:math:`j` has an accuracy :math:`a_j \sim U(\text{accuracy})` and task :math:`i` an easiness
:math:`\beta_i \sim \text{LogNormal}(0, s_d^2)` (``difficulty_sd``; all 1 when 0); the worker
is right with probability

.. math::
    p_{ij} = \sigma(\operatorname{logit}(a_j)\, \beta_i),

GLAD's form (Whitehill et al. 2009), otherwise a uniformly drawn other class. On an easy task
(:math:`\beta_i \gg 1`) every honest worker is right; on a hard one (:math:`\beta_i \to 0`) a
coin. No confusion-matrix model has a task effect, so ``difficulty_sd > 0`` is the
misspecification the calibration target of the issue names. A share ``spammers`` of the
workers answer a uniformly random class, a share ``adversaries`` the class after the true one
(:math:`(c + 1) \bmod K`) with probability :math:`a_j` (a consistent liar: majority vote
suffers, a confusion matrix can read it).

Each task gets ``per_task`` labels from distinct workers drawn uniformly among
``n_workers``; with ``per_worker = (lo, hi)`` the workers are instead made up as the labels
come: the task slots are shuffled and cut into workers of ``lo``–``hi`` labels (a crowd of
one-off workers; a task a worker would see twice keeps one label). With ``dynamic_overlap``
the labels are collected adaptively, as a platform's dynamic overlap (or ``labels next``)
does: a task's labels arrive in order and stop once the most given class leads the next by 2,
so that at most ``per_task`` and at least 2 are kept, and a task gets a third label *because*
its first two disagreed (the rows keep the order of arrival).

Whitehill, J., Ruvolo, P., Wu, T., Bergsma, J. & Movellan, J. (2009). Whose vote should
count more. NIPS.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from crowdbayes.data import Labels
from crowdbayes.models.labels._mace_scenarios import simulate_spammer_crowd

__all__ = ["LabelScenario", "SimulatedSet", "LABEL_SCENARIOS", "simulate_label_scenario"]


@dataclass(frozen=True)
class LabelScenario:
    """The knobs of :func:`simulate_label_scenario` (module docstring). ``spammer_crowd``
    draws :func:`~crowdbayes.models.labels._mace_scenarios.simulate_spammer_crowd` instead
    (70% spammers, half of them always giving one class)."""

    name: str
    n_tasks: int = 500
    n_workers: int = 50
    per_task: int = 5
    n_classes: int = 2
    prevalence: tuple[float, ...] | None = None
    accuracy: tuple[float, float] = (0.6, 0.9)
    difficulty_sd: float = 0.0
    spammers: float = 0.0
    adversaries: float = 0.0
    per_worker: tuple[int, int] | None = None
    spammer_crowd: bool = False
    dynamic_overlap: bool = False


@dataclass
class SimulatedSet:
    """A simulated set in the shape of a shared one: ``labels`` and the ``truth`` (gold) of
    every task."""

    labels: Labels
    truth: pd.Series


LABEL_SCENARIOS = (
    LabelScenario("honest workers, 3 classes", n_classes=3, accuracy=(0.5, 0.9)),
    LabelScenario("task difficulty (GLAD), binary", difficulty_sd=1.0),
    LabelScenario(
        "task difficulty, 3 classes, 3 labels per task", n_classes=3, per_task=3, difficulty_sd=1.2
    ),
    LabelScenario("30% spammers + 10% adversaries, binary", spammers=0.3, adversaries=0.1),
    LabelScenario("workers with 2–3 labels each, binary", per_worker=(2, 3)),
    LabelScenario(
        "dynamic overlap: until a lead of 2, at most 5, binary",
        accuracy=(0.65, 0.9),
        dynamic_overlap=True,
    ),
    LabelScenario("class imbalance 90/10, binary", prevalence=(0.9, 0.1)),
    LabelScenario(
        "class imbalance, 4 classes (70/20/7/3)", n_classes=4, prevalence=(0.7, 0.2, 0.07, 0.03)
    ),
    LabelScenario(
        "many workers per task: 25 of 300, 40% spammers",
        n_tasks=300,
        n_workers=300,
        per_task=25,
        spammers=0.4,
        accuracy=(0.55, 0.8),
    ),
    LabelScenario(
        "70% spammers (half one-class), 5 of 200 per task",
        n_tasks=1000,
        n_workers=200,
        spammer_crowd=True,
    ),
)


def _assignment(s: LabelScenario, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """(task, worker) of every label, and the number of workers."""
    if s.per_worker is None:
        task = np.repeat(np.arange(s.n_tasks), s.per_task)
        worker = np.concatenate(
            [rng.choice(s.n_workers, s.per_task, replace=False) for _ in range(s.n_tasks)]
        )
        return task, worker, s.n_workers
    task = rng.permutation(np.repeat(np.arange(s.n_tasks), s.per_task))
    sizes = rng.integers(s.per_worker[0], s.per_worker[1] + 1, size=len(task))
    ends = np.cumsum(sizes)
    n_workers = int(np.searchsorted(ends, len(task)) + 1)
    worker = np.repeat(np.arange(n_workers), sizes[:n_workers])[: len(task)]
    keep = ~pd.DataFrame({"t": task, "w": worker}).duplicated().to_numpy()
    return task[keep], worker[keep], n_workers


def simulate_label_scenario(scenario: LabelScenario, seed: int) -> SimulatedSet:
    """Draw one set of ``scenario`` (module docstring) with ``seed``."""
    s = scenario
    if s.spammer_crowd:
        crowd = simulate_spammer_crowd(
            n_tasks=s.n_tasks,
            n_workers=s.n_workers,
            labels_per_task=s.per_task,
            spammer_kind="mixed",
            random_state=seed,
        )
        return SimulatedSet(Labels(crowd.labels, classes=[0, 1]), crowd.truth)
    rng = np.random.default_rng(seed)
    k = s.n_classes
    prevalence = np.full(k, 1 / k) if s.prevalence is None else np.asarray(s.prevalence)
    truth = rng.choice(k, size=s.n_tasks, p=prevalence / prevalence.sum())
    easiness = np.exp(rng.normal(0.0, s.difficulty_sd, s.n_tasks))
    task, worker, n_workers = _assignment(s, rng)
    accuracy = rng.uniform(*s.accuracy, n_workers)
    shares = [1 - s.spammers - s.adversaries, s.spammers, s.adversaries]
    kind = rng.choice(3, size=n_workers, p=shares)  # honest, spammer, adversary
    true = truth[task]
    right = rng.random(len(task)) < expit(logit(accuracy[worker]) * easiness[task])
    other = (true + rng.integers(1, k, size=len(task))) % k
    label = np.where(right, true, other)
    label = np.where(kind[worker] == 1, rng.integers(k, size=len(task)), label)
    lie = np.where(rng.random(len(task)) < accuracy[worker], (true + 1) % k, other)
    label = np.where(kind[worker] == 2, lie, label)
    if s.dynamic_overlap:
        if s.per_worker is not None:
            raise ValueError(f"{s.name}: dynamic_overlap needs the rows grouped by task")
        keep = _until_a_lead_of_two(task, label, k)
        task, worker, label = task[keep], worker[keep], label[keep]
    ids = np.array([f"t{i}" for i in range(s.n_tasks)])
    frame = pd.DataFrame({"task": ids[task], "worker": [f"w{j}" for j in worker], "label": label})
    seen = np.unique(task)
    truth_series = pd.Series(truth[seen], index=pd.Index(ids[seen], name="task"), name="truth")
    return SimulatedSet(Labels(frame, classes=list(range(k))), truth_series)


def _until_a_lead_of_two(task: np.ndarray, label: np.ndarray, k: int) -> np.ndarray:
    """Which labels a task keeps when they arrive in row order (rows grouped by task) and
    stop once the most given class leads the next by 2 (module docstring)."""
    keep = np.zeros(len(task), dtype=bool)
    counts = np.zeros(k, dtype=int)
    for row in range(len(task)):
        if row == 0 or task[row] != task[row - 1]:
            counts[:] = 0
        elif np.diff(np.sort(counts)[-2:])[0] >= 2:
            continue  # this task has stopped
        counts[label[row]] += 1
        keep[row] = True
    return keep


def scaled(scenario: LabelScenario, **changes) -> LabelScenario:
    """``scenario`` with some knobs changed (a smaller draw for a quick run or a test)."""
    return dataclasses.replace(scenario, **changes)
