"""The values family of the defaults report: ``values fit`` at its defaults
(``ContinuousAggregation()``, ``bounds="auto"``) against the per-task mean and median, on the
simulated scenarios of :mod:`crowdbayes.models.labels._continuous_scenarios` (and the Gaussian
sets of ``benchmarks/values/values_defaults.py``), plus two that break the story in other
ways: many answers per task with lazy zeros, and a crowd of workers with about two answers
each (their bias and noise are barely identified). The shared data hold no numeric set with a
reference, so every row is simulated. Per-task absolute errors are pooled over the seeds.

The ``bounds`` setting's leave-one-set-out table compares ``bounds=None`` (every answer exact,
the model before issue 40) with ``bounds="auto"`` (shipped), scored by minus the MAE, with
the per-task mean as the baseline.
"""

from __future__ import annotations

from values_defaults import GAUSSIAN, baseline_errors, draw, errors

from crowdbayes.models.labels import ContinuousAggregation
from crowdbayes.models.labels._continuous_scenarios import (
    VALUE_SCENARIOS,
    ValueScenario,
    simulate_value_scenario,
)

__all__ = ["EXTRA_VALUE_SCENARIOS", "BOUNDS", "draw_values", "value_scenario_names"]

#: scenarios beyond the library's, built for this report
EXTRA_VALUE_SCENARIOS = (
    ValueScenario(
        "many answers per task (15–20), 20% lazy answers at 0",
        answers_per_task=(15, 20),
        inflation=0.2,
    ),
    ValueScenario("600 workers with about 2 answers each, censored at 0 and 100", n_workers=600),
)

#: the candidates of the ``bounds`` choice
BOUNDS = {"bounds=None": None, "bounds=auto": "auto"}


def value_scenario_names() -> list[str]:
    return [s.name for s in (*VALUE_SCENARIOS, *EXTRA_VALUE_SCENARIOS)] + list(GAUSSIAN)


def draw_values(name: str, seed: int):
    """One draw of the scenario ``name`` (a library, extra or Gaussian scenario)."""
    for scenario in EXTRA_VALUE_SCENARIOS:
        if scenario.name == name:
            return simulate_value_scenario(scenario, seed)
    return draw(name, seed)


def evaluate_value_set(datasets) -> dict:
    """Pooled per-task absolute errors of the mean, the median and each ``bounds`` candidate
    (with its interval hits and mean fit time)."""
    out = {"mean": baseline_errors(datasets, "mean"), "median": baseline_errors(datasets, "median")}
    for label, bounds in BOUNDS.items():
        error, hit, seconds = errors(datasets, lambda b=bounds: ContinuousAggregation(bounds=b))
        out[label] = error
        out[label + " hits"] = hit
        out[label + " seconds"] = seconds
    return out
