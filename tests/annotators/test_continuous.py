"""Bias–noise workers by mean-field VB: every coordinate update maximises the ELBO."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from crowdbayes.annotators.continuous import (
    BiasNoisePrior,
    bias_noise_start,
    bias_noise_sweep,
    elbo,
)


def problem(seed=0, n_tasks=30, n_workers=6, per_task=3):
    rng = np.random.default_rng(seed)
    tasks = np.repeat(np.arange(n_tasks), per_task)
    workers = np.concatenate(
        [rng.choice(n_workers, per_task, replace=False) for _ in range(n_tasks)]
    )
    x = rng.normal(size=n_tasks)[tasks] + rng.normal(0, 0.3, n_workers)[workers]
    x = x + rng.standard_t(3, len(x)) * 0.4
    return tasks, workers, x, n_tasks, n_workers


@pytest.mark.parametrize("learn", [False, True])
@pytest.mark.parametrize("df", [None, 4.0])
def test_elbo_never_decreases(df, learn):
    tasks, workers, x, nt, nw = problem()
    prior = BiasNoisePrior(df=df, learn_bias_precision=learn)
    state = bias_noise_start(tasks, workers, x, nt, nw, prior)
    values = []
    for _ in range(40):
        bias_noise_sweep(state, tasks, workers, x, prior)
        values.append(elbo(state, tasks, workers, x, prior))
    assert np.all(np.diff(values) >= -1e-9 * np.abs(values[1:]))


@pytest.mark.parametrize(
    ("df", "field"),
    [(df, f) for df in (None, 4.0) for f in ("m", "P", "c", "Q", "A", "R")] + [(4.0, "beta")],
)
def test_the_fixed_point_is_a_maximum_in_every_coordinate(df, field):
    tasks, workers, x, nt, nw = problem(seed=1)
    prior = BiasNoisePrior(df=df)
    state = bias_noise_start(tasks, workers, x, nt, nw, prior)
    for _ in range(300):
        bias_noise_sweep(state, tasks, workers, x, prior)
    best = elbo(state, tasks, workers, x, prior)
    for factor in (0.97, 1.03):
        moved = copy.deepcopy(state)
        array = getattr(moved, field)
        array[0] = array[0] * factor + (0.01 if field in ("m", "c") else 0.0)
        assert elbo(moved, tasks, workers, x, prior) < best


def test_elbo_is_below_the_exact_log_evidence_of_a_tiny_gaussian_model():
    """One task, two known-precision answers with no bias freedom: with τ's posterior nearly a
    point mass (huge prior shape) and biases pinned (huge precision), the model is
    x ~ N(μ 1, I/τ), μ ~ N(0, 1/p0), whose evidence is a bivariate normal density."""
    from scipy.stats import multivariate_normal

    x = np.array([0.3, -0.5])
    tasks, workers = np.array([0, 0]), np.array([0, 1])
    tau = 2.0
    prior = BiasNoisePrior(
        value_precision=0.5, bias_precision=1e8, noise_shape=1e8, noise_rate=1e8 / tau
    )
    state = bias_noise_start(tasks, workers, x, 1, 2, prior)
    for _ in range(50):
        bias_noise_sweep(state, tasks, workers, x, prior)
    covariance = np.full((2, 2), 1 / 0.5) + np.eye(2) / tau
    exact = multivariate_normal(np.zeros(2), covariance).logpdf(x)
    value = elbo(state, tasks, workers, x, prior)
    assert value <= exact + 1e-6
    assert value == pytest.approx(exact, abs=1e-3)  # the mean-field family holds the posterior
