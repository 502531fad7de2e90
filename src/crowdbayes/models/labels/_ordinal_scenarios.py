r"""Simulated ordered grades built to test the ordinal defaults where they may break: good
workers, few labels per task, workers whose errors do *not* follow the ordered-probit story.

Each scenario draws true grades from a prevalence, a pool of workers, and for each task a number
of labels uniform on ``labels_per_task`` (so 1-label tasks exist: the model can only copy that
worker or the prior there). A worker is one of

- ``"probit"``: the model's own story, :math:`y = c + b + \varepsilon/\sqrt\tau` rounded to the
  nearest grade (bias :math:`b \sim N(0, s_b^2)`, noise s.d. ``noise_sd`` on average);
- ``"adjacent"``: right with probability :math:`a` (accuracy drawn from ``accuracy``), otherwise
  one grade up or down (at random, within the scale): the nominal crowd error, not a probit one;
- ``"spammer"``: a uniform random grade;
- ``"one-grade"``: always the same grade (drawn uniformly per worker), whatever the task: the
  workers of S_Rel who gave one grade to thousands of tasks.

Returned as :class:`ScenarioGrades` (``labels`` ordered, ``truth`` per task).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...data import Labels

__all__ = ["GradeScenario", "ScenarioGrades", "GRADE_SCENARIOS", "simulate_grade_scenario"]


@dataclass(frozen=True)
class GradeScenario:
    """The knobs of :func:`simulate_grade_scenario` (module docstring)."""

    name: str
    n_grades: int = 3
    n_tasks: int = 300
    n_workers: int = 60
    labels_per_task: tuple[int, int] = (1, 5)
    prevalence: tuple[float, ...] | None = None
    #: (kind, share) pairs
    kinds: tuple[tuple[str, float], ...] = (("probit", 1.0),)
    bias_sd: float = 0.2
    noise_sd: float = 0.4
    accuracy: tuple[float, float] = (0.75, 0.95)


@dataclass
class ScenarioGrades:
    labels: Labels
    truth: pd.Series
    worker_kind: pd.Series


GRADE_SCENARIOS = (
    GradeScenario("probit, 3 grades", n_grades=3),
    GradeScenario("probit, 5 grades", n_grades=5, noise_sd=0.5),
    GradeScenario(
        "sentiment-like: 3 grades, neutral-heavy, biased workers",
        n_grades=3,
        prevalence=(0.2, 0.6, 0.2),
        bias_sd=0.35,
        noise_sd=0.35,
    ),
    GradeScenario("adjacent errors, 3 grades", n_grades=3, kinds=(("adjacent", 1.0),)),
    GradeScenario(
        "adjacent errors, 5 grades, many workers",
        n_grades=5,
        n_workers=200,
        kinds=(("adjacent", 1.0),),
    ),
    GradeScenario(
        "probit + 15% spammers, 4 grades",
        n_grades=4,
        kinds=(("probit", 0.85), ("spammer", 0.15)),
    ),
    GradeScenario(
        "probit + 15% one-grade workers, 4 grades",
        n_grades=4,
        kinds=(("probit", 0.85), ("one-grade", 0.15)),
    ),
)


def simulate_grade_scenario(scenario: GradeScenario, seed: int) -> ScenarioGrades:
    """Draw one data set of ``scenario`` (module docstring) with ``seed``."""
    rng = np.random.default_rng(seed)
    k = scenario.n_grades
    prevalence = np.full(k, 1 / k) if scenario.prevalence is None else np.array(scenario.prevalence)
    truth = rng.choice(k, size=scenario.n_tasks, p=prevalence / prevalence.sum())
    kinds = [kind for kind, _ in scenario.kinds]
    shares = np.array([share for _, share in scenario.kinds])
    kind = np.array(kinds)[rng.choice(len(kinds), size=scenario.n_workers, p=shares / shares.sum())]
    bias = rng.normal(0.0, scenario.bias_sd, scenario.n_workers)
    noise = scenario.noise_sd * np.exp(rng.normal(0.0, 0.3, scenario.n_workers))
    accuracy = rng.uniform(*scenario.accuracy, scenario.n_workers)
    # the one-grade workers' grades, drawn only where there are any (the other scenarios'
    # draws stay those of the scenarios before this kind existed)
    fixed = rng.integers(k, size=scenario.n_workers) if "one-grade" in kinds else None
    low, high = scenario.labels_per_task
    tasks, workers, grades = [], [], []
    for task in range(scenario.n_tasks):
        chosen = rng.choice(scenario.n_workers, size=rng.integers(low, high + 1), replace=False)
        for worker in chosen:
            c = truth[task]
            if kind[worker] == "probit":
                y = c + bias[worker] + noise[worker] * rng.normal()
                grade = int(np.clip(np.floor(y + 0.5), 0, k - 1))
            elif kind[worker] == "adjacent":
                grade = c
                if rng.random() > accuracy[worker]:
                    grade = int(np.clip(c + rng.choice([-1, 1]), 0, k - 1))
                    grade = grade if grade != c else c + (1 if c == 0 else -1)
            elif kind[worker] == "one-grade":
                grade = int(fixed[worker])
            else:
                grade = int(rng.integers(k))
            tasks.append(f"t{task}")
            workers.append(f"w{worker}")
            grades.append(grade)
    table = pd.DataFrame({"task": tasks, "worker": workers, "label": grades})
    labels = Labels(table, classes=list(range(k)), ordered=True)
    return ScenarioGrades(
        labels=labels,
        truth=pd.Series(truth, index=[f"t{t}" for t in range(scenario.n_tasks)]),
        worker_kind=pd.Series(kind, index=[f"w{w}" for w in range(scenario.n_workers)]),
    )


def majority_grade(labels: Labels) -> pd.Series:
    """The majority grade of each task: the most frequent grade; a tie goes to the tied grade
    nearest the task's mean answer (then the lower one), so a 1–2 split of ``[0, 2]`` does not
    depend on the order of the classes."""
    votes = labels.vote_counts().astype(float)  # (K, n_tasks)
    grades = np.arange(votes.shape[0], dtype=float)[:, None]
    mean = (votes * grades).sum(axis=0) / votes.sum(axis=0)
    tied = votes == votes.max(axis=0)
    distance = np.where(tied, np.abs(grades - mean) + 1e-9 * grades, np.inf)
    return pd.Series(labels.classes[np.argmin(distance, axis=0)], index=labels.tasks)
