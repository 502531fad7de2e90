r"""Simulated numeric answers built to break the Gaussian bias–noise model: a bounded scale
with many answers at a bound (censored or inflated), heavy-tailed worker noise, few answers per
task.

True values lie in ``[low, high]`` (default [0, 100]): a share ``small_share`` near the lower
bound (:math:`100\,\mathrm{Beta}(1, 6)`), the rest uniform. Worker :math:`j` has a bias
:math:`b_j \sim N(0, s_b^2)`, a noise scale :math:`\sigma_j` (log-normal around
``noise_median``) and answers

.. math::
    x = \mathrm{clip}(\mu_i + b_j + \sigma_j\varepsilon,\ \text{low},\ \text{high}),
    \qquad \varepsilon \sim t_\nu \text{ (``df``; Gaussian when None)},

except that with probability :math:`\pi_j` (``inflation``: the mean of a Beta share per worker)
it answers the lower bound whatever the truth (a lazy or "none" answer). The answer count per
task is uniform on ``answers_per_task``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["ValueScenario", "ScenarioValues", "VALUE_SCENARIOS", "simulate_value_scenario"]


@dataclass(frozen=True)
class ValueScenario:
    """The knobs of :func:`simulate_value_scenario` (module docstring)."""

    name: str
    n_tasks: int = 300
    n_workers: int = 40
    answers_per_task: tuple[int, int] = (3, 5)
    low: float = 0.0
    high: float = 100.0
    small_share: float = 0.5
    bias_sd: float = 4.0
    noise_median: float = 8.0
    df: float | None = None
    inflation: float = 0.0
    clip: bool = True


@dataclass
class ScenarioValues:
    values: pd.DataFrame
    truth: pd.Series


VALUE_SCENARIOS = (
    ValueScenario("zero-inflated: 30% lazy answers at 0, censored at 0 and 100", inflation=0.3),
    ValueScenario("censored at both bounds, noisy workers", small_share=0.3, noise_median=15.0),
    ValueScenario("heavy tails: Student-t noise, 2.5 dof", df=2.5, clip=False, small_share=0.0),
    ValueScenario(
        "zero-inflated + heavy tails (t, 3 dof)", inflation=0.25, df=3.0, noise_median=6.0
    ),
    ValueScenario(
        "mostly at the bound: 50% lazy answers, 3 answers per task",
        inflation=0.5,
        answers_per_task=(3, 3),
    ),
)


def simulate_value_scenario(scenario: ValueScenario, seed: int) -> ScenarioValues:
    """Draw one data set of ``scenario`` (module docstring) with ``seed``."""
    rng = np.random.default_rng(seed)
    s = scenario
    width = s.high - s.low
    small = rng.random(s.n_tasks) < s.small_share
    truth = np.where(
        small,
        s.low + width * rng.beta(1.0, 6.0, s.n_tasks),
        rng.uniform(s.low, s.high, s.n_tasks),
    )
    bias = rng.normal(0.0, s.bias_sd, s.n_workers)
    noise = s.noise_median * np.exp(rng.normal(0.0, 0.4, s.n_workers))
    lazy = rng.beta(2.0, 2.0 * (1 - s.inflation) / s.inflation, s.n_workers) if s.inflation else 0
    counts = rng.integers(s.answers_per_task[0], s.answers_per_task[1] + 1, s.n_tasks)
    tasks = np.repeat(np.arange(s.n_tasks), counts)
    workers = np.concatenate([rng.choice(s.n_workers, c, replace=False) for c in counts])
    shock = rng.normal(size=len(tasks)) if s.df is None else rng.standard_t(s.df, len(tasks))
    answers = truth[tasks] + bias[workers] + noise[workers] * shock
    if s.clip:
        answers = np.clip(answers, s.low, s.high)
    if s.inflation:
        answers = np.where(rng.random(len(tasks)) < lazy[workers], s.low, answers)
    task_ids = np.array([f"t{t}" for t in range(s.n_tasks)])
    return ScenarioValues(
        values=pd.DataFrame(
            {"task": task_ids[tasks], "worker": [f"w{w}" for w in workers], "value": answers}
        ),
        truth=pd.Series(truth, index=pd.Index(task_ids, name="task")),
    )
