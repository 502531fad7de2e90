"""Simulated continuous answers with known true values and known worker bias and noise.

The generative model is :class:`~crowdbayes.models.labels.ContinuousAggregation`'s, plus an
optional share of workers who ignore the task and answer uniformly at random::

    mu_i   ~ N(value_mean, value_sd²)            true value of task i
    b_j    ~ N(0, bias_sd²)                      worker j's bias
    s_j    ~ LogNormal(log noise_median, noise_spread²)   worker j's noise s.d.
    x_ij   = mu_i + b_j + s_j · e,  e ~ N(0, 1)  (random workers: x_ij ~ U(low, high))

Each task is answered by ``answers_per_task`` distinct workers chosen uniformly at random.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._utils import RandomState, as_generator

__all__ = ["SyntheticValues", "simulate_values"]


@dataclass(eq=False)
class SyntheticValues:
    """Simulated answers and the parameters that generated them.

    Attributes
    ----------
    values : DataFrame
        Columns ``task, worker, value``; task ids ``t0, t1, ...``, worker ids ``w0, w1, ...``.
    truth : Series
        The true value of each task, indexed by task id.
    workers : DataFrame
        Per worker (index: worker id): ``bias``, ``noise`` (s.d.) and ``random`` (answers
        uniformly at random).
    """

    values: pd.DataFrame = field(repr=False)
    truth: pd.Series = field(repr=False)
    workers: pd.DataFrame = field(repr=False)


def simulate_values(
    n_tasks: int = 400,
    n_workers: int = 40,
    answers_per_task: int = 6,
    *,
    value_mean: float = 50.0,
    value_sd: float = 10.0,
    bias_sd: float = 3.0,
    noise_median: float = 3.0,
    noise_spread: float = 0.5,
    random_share: float = 0.0,
    random_range: tuple[float, float] = (0.0, 100.0),
    random_state: RandomState = 0,
) -> SyntheticValues:
    """Simulate continuous answers (module docstring); ``random_share`` of the workers (rounded)
    answer uniformly on ``random_range``."""
    if not 1 <= answers_per_task <= n_workers:
        raise ValueError(
            f"answers_per_task must be between 1 and n_workers={n_workers}; got {answers_per_task}"
        )
    if not 0.0 <= random_share <= 1.0:
        raise ValueError(f"random_share must lie in [0, 1]; got {random_share}")
    rng = as_generator(random_state)
    truth = rng.normal(value_mean, value_sd, n_tasks)
    bias = rng.normal(0.0, bias_sd, n_workers)
    noise = np.exp(rng.normal(np.log(noise_median), noise_spread, n_workers))
    random = np.zeros(n_workers, dtype=bool)
    random[rng.permutation(n_workers)[: int(round(random_share * n_workers))]] = True
    tasks = np.repeat(np.arange(n_tasks), answers_per_task)
    workers = np.concatenate(
        [rng.choice(n_workers, answers_per_task, replace=False) for _ in range(n_tasks)]
    )
    answers = truth[tasks] + bias[workers] + noise[workers] * rng.normal(size=len(tasks))
    uniform = rng.uniform(*random_range, size=len(tasks))
    answers = np.where(random[workers], uniform, answers)
    task_ids = np.array([f"t{t}" for t in range(n_tasks)])
    worker_ids = np.array([f"w{w}" for w in range(n_workers)])
    return SyntheticValues(
        values=pd.DataFrame(
            {"task": task_ids[tasks], "worker": worker_ids[workers], "value": answers}
        ),
        truth=pd.Series(truth, index=pd.Index(task_ids, name="task"), name="value"),
        workers=pd.DataFrame(
            {"bias": bias, "noise": noise, "random": random},
            index=pd.Index(worker_ids, name="worker"),
        ),
    )
