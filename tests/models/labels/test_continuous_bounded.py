"""ContinuousAggregation on bounded scales (issue 40): at least the per-task mean on simulated
data with many answers at a bound and with heavy-tailed noise, 90% intervals covering at least
85% of the true values there, the bounds found or refused, and unbounded data fitted as before.

Measured (benchmarks/values/results/values_defaults.md has 6 seeds with paired bootstrap
intervals; the numbers below are the seeds used here)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdbayes.datasets import simulate_values
from crowdbayes.models.labels import ContinuousAggregation
from crowdbayes.models.labels._continuous_bounded import detect_bounds
from crowdbayes.models.labels._continuous_scenarios import (
    VALUE_SCENARIOS,
    simulate_value_scenario,
)

SCENARIOS = {s.name: s for s in VALUE_SCENARIOS}


def pooled(scenario, seeds, **params):
    """Absolute errors of the model, of the per-task mean and median, and interval hits, pooled
    over ``seeds``."""
    model_error, mean_error, median_error, hits = [], [], [], []
    for seed in seeds:
        data = simulate_value_scenario(scenario, seed)
        model = ContinuousAggregation(**params).fit(data.values)
        values = model.values_.loc[data.truth.index]
        by_task = data.values.groupby("task")["value"]
        model_error.append(np.abs(values["mean"] - data.truth))
        mean_error.append(np.abs(by_task.mean().loc[data.truth.index] - data.truth))
        median_error.append(np.abs(by_task.median().loc[data.truth.index] - data.truth))
        hits.append((values["lower"] <= data.truth) & (data.truth <= values["upper"]))
    return tuple(
        float(np.concatenate(part).mean()) for part in (model_error, mean_error, median_error, hits)
    )


@pytest.mark.parametrize(
    "name",
    [s.name for s in VALUE_SCENARIOS if s.inflation or s.clip],
)
def test_bounded_answers_beat_the_task_mean_and_the_intervals_cover(name):
    """Lazy answers at 0 and clipping at 0 and 100: the default (bounds found in the data) beats
    the per-task mean, and the Gaussian reading of the same answers (``bounds=None``) does not
    cover; the 90% intervals cover at least 85% of the true values."""
    scenario = SCENARIOS[name]
    error, mean_error, _, coverage = pooled(scenario, seeds=(0, 1))
    assert error < mean_error, (error, mean_error)
    assert coverage >= 0.85, coverage
    if scenario.inflation:  # the failure, for contrast: many answers at 0
        gaussian_error, _, _, gaussian_coverage = pooled(scenario, seeds=(0, 1), bounds=None)
        assert error < 0.75 * gaussian_error, (error, gaussian_error)
        assert gaussian_coverage < 0.8, gaussian_coverage


def test_heavy_tailed_noise_beats_the_mean_and_the_robust_option_the_median():
    """Student-t noise with 2.5 degrees of freedom, no bound: the default beats the mean and
    covers; ``noise="student"`` beats the median too."""
    scenario = SCENARIOS["heavy tails: Student-t noise, 2.5 dof"]
    error, mean_error, median_error, coverage = pooled(scenario, seeds=(0, 1))
    assert error < 0.9 * mean_error and coverage >= 0.85, (error, mean_error, coverage)
    robust, _, _, robust_coverage = pooled(scenario, seeds=(0, 1), noise="student")
    assert robust < median_error and robust_coverage >= 0.85, (robust, median_error)


def test_bounds_are_found_only_at_piles_of_extreme_answers():
    rng = np.random.default_rng(0)
    smooth = rng.normal(50, 10, 500)
    assert detect_bounds(smooth) == (None, None)
    piled = np.concatenate([smooth, np.zeros(20), np.full(2, 100.0)])
    assert detect_bounds(piled) == (0.0, None)  # 20 of 522 at 0; 2 at 100 are too few
    assert detect_bounds(np.ones(10)) == (None, None)


def test_unbounded_answers_fit_exactly_as_before():
    table = simulate_values(80, 10, 4, random_state=1).values
    auto = ContinuousAggregation().fit(table)
    plain = ContinuousAggregation(bounds=None).fit(table)
    assert auto.bounds_ == (None, None)
    np.testing.assert_array_equal(auto.values_.to_numpy(), plain.values_.to_numpy())


def test_results_are_in_the_answers_units_and_lazy_answers_lose_weight():
    data = simulate_value_scenario(SCENARIOS[VALUE_SCENARIOS[0].name], 3)
    model = ContinuousAggregation().fit(data.values)
    scaled = ContinuousAggregation().fit(data.values.assign(value=data.values["value"] * 10 + 5))
    assert model.bounds_ == (0.0, None) and scaled.bounds_ == (5.0, None)
    np.testing.assert_allclose(
        scaled.values_["mean"], model.values_["mean"] * 10 + 5, rtol=1e-6, atol=1e-6
    )
    values = model.values_
    assert (values["lower"] >= 0).all() and (values["lower"] <= values["mean"]).all()
    assert (values["mean"] <= values["upper"]).all()
    at_zero = data.values["value"].to_numpy() == 0
    assert model.answer_weights_[at_zero].mean() < 0.6 < model.answer_weights_[~at_zero].mean()
    shares = model.worker_params_["low_share"]
    assert 0.15 < shares.mean() < 0.45  # the simulated workers' lazy share averages 0.3


def test_declared_bounds_must_hold_the_answers():
    table = simulate_values(20, 4, 2, random_state=2).values
    with pytest.raises(ValueError, match=r"answer\(s\) lie outside bounds=\(0, 55\).*bounds=None"):
        ContinuousAggregation(bounds=(0, 55)).fit(table)
    with pytest.raises(ValueError, match=r"bounds"):
        ContinuousAggregation(bounds=(100, 0)).fit(table)
    fitted = ContinuousAggregation(bounds=(0, 100)).fit(table)
    assert fitted.bounds_ == (0.0, 100.0) and fitted.converged_
