"""Inference strategies as a GP preference model is given them: the fixed-scale strategies are
their engines on ``K/E[s]``, SVI's mini-batch schedule, and what each refuses."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr

from crowdbayes.gp import (
    EP,
    SVI,
    VI,
    EncodedPairs,
    GammaFactor,
    InducingProjection,
    Laplace,
    PreferenceProblem,
    expectation_propagation,
    laplace_approximation,
    linearised_bound,
    maximise_bound,
)
from crowdbayes.kernels import Matern32

KERNEL = Matern32([0.8, 0.8])


@pytest.fixture(scope="module")
def problem():
    """20 items with 2 features, 120 probit comparisons (a few ties), prior Gamma(3, 2)."""
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 2, (20, 2))
    f = np.linalg.cholesky(KERNEL(X) + 1e-8 * np.eye(20)) @ rng.standard_normal(20)
    left = rng.integers(0, 20, 120)
    right = (left + rng.integers(1, 20, 120)) % 20
    y = (rng.random(120) < ndtr((f[left] - f[right]) / np.sqrt(2))).astype(float)
    y[:6] = 0.5
    pairs = EncodedPairs(left, right, y, np.zeros(120, dtype=int), 0)
    return PreferenceProblem.build(
        X, pairs, KERNEL, noise=0.8, prior=GammaFactor.prior(3.0, 2.0), prior_scale=2.0 / 3.0
    )


def test_the_problem_codes_the_compared_items(problem):
    pairs = problem.pairs
    np.testing.assert_array_equal(problem.items[problem.left], pairs.left)
    np.testing.assert_array_equal(problem.items[problem.right], pairs.right)
    np.testing.assert_array_equal(problem.X_items, problem.X[problem.items])
    assert problem.alpha == pytest.approx(np.sqrt(2) * 0.8)
    assert (problem.noise_var > 0).all() and problem.n_comparisons == 120
    counts = problem.pair_counts()
    assert counts.wins.sum() + counts.losses.sum() == 120


@pytest.mark.parametrize("strategy", [Laplace(), EP(damping=0.8)], ids=["Laplace", "EP"])
def test_fixed_scale_strategies_are_their_engines_on_the_scaled_prior(problem, strategy):
    """``s`` stays at its prior mean: the posterior at the compared items is the engine's on
    ``K/E[s]``, and the bound is the engine's log marginal likelihood."""
    rng = np.random.default_rng(0)
    Z = strategy.inducing_points(problem.X_items, rng)
    np.testing.assert_array_equal(Z, problem.X_items)
    projection = InducingProjection(KERNEL, Z)
    fit = strategy.fit(problem, projection)
    assert fit.scale is problem.prior and fit.converged
    K = KERNEL(problem.X_items) / problem.prior.mean
    if isinstance(strategy, EP):
        engine = expectation_propagation(K, problem.pair_counts(), noise=problem.noise, damping=0.8)
    else:
        engine = laplace_approximation(K, problem.pair_counts(), noise=problem.noise)
    # (up to the Cholesky jitter, relative to K_mm here and to K/E[s] there)
    np.testing.assert_allclose(fit.factor.mean, engine.posterior.mean, atol=1e-5)
    np.testing.assert_allclose(fit.factor.cov, engine.posterior.cov, atol=1e-5)
    assert strategy.bound(problem, projection, fit) == pytest.approx(engine.log_marginal, rel=1e-6)
    assert not strategy.optimises_lengthscale
    with pytest.raises(ValueError, match="does not optimise length-scales"):
        maximise_bound(strategy, problem, KERNEL, Z, rng)


def test_vi_and_full_batch_svi_reach_the_same_fixed_point(problem):
    projection = InducingProjection(KERNEL, problem.X_items)
    vi = VI(tol=1e-10, max_iter=500).fit(problem, projection)
    svi = SVI(n_inducing=len(problem.items), batch_size=None, forgetting_rate=0.5, tol=1e-9).fit(
        problem, projection, rng=np.random.default_rng(0)
    )
    assert vi.converged and svi.converged
    np.testing.assert_allclose(svi.factor.mean, vi.factor.mean, atol=1e-5)
    assert svi.scale.mean == pytest.approx(vi.scale.mean, rel=1e-6)
    assert VI().bound(problem, projection, vi) == pytest.approx(
        linearised_bound(problem, projection, vi.factor, vi.scale)
    )


def test_svi_schedule_draws_minibatches_and_checks_once_per_pass():
    """``ρ_n = (n + delay)^{-r}``, batches without replacement weighted by ``P / P_n``, the
    monitored change computed at the end of each pass only."""
    strategy = SVI(batch_size=4, delay=2.0, forgetting_rate=0.7, max_iter=9, tol=None)
    seen, checks = [], []
    state = {"value": 0.0}

    def update(rho, rows, weight):
        seen.append((rho, np.asarray(rows), weight))
        state["value"] += 1.0

    def change(new, old):
        checks.append((new, old))
        return abs(new - old)

    result = strategy.run(
        update, lambda: state["value"], 10, np.random.default_rng(1), change=change
    )
    assert result.n_iter == 9
    for n, (rho, rows, weight) in enumerate(seen, start=1):
        assert rho == pytest.approx((n + 2.0) ** -0.7)
        assert len(rows) == 4 == len(set(rows.tolist())) and weight == 2.5
    epoch = math.ceil(10 / 4)
    assert [new for new, _ in checks] == [float(k) for k in range(epoch, 10, epoch)]
    assert result.history == [float(epoch)] * len(checks)
    full = []
    SVI(batch_size=None, max_iter=2, tol=None).run(
        lambda rho, rows, weight: full.append((rows, weight)), lambda: 0.0, 7, None
    )
    assert full == [(slice(None), 1.0)] * 2


def test_strategies_refuse_bad_settings():
    with pytest.raises(ValueError, match="damping must be in"):
        EP(damping=0.0)
    with pytest.raises(ValueError, match="at least 1"):
        SVI(batch_size=0)
    with pytest.raises(ValueError, match="forgetting_rate must lie in"):
        SVI(forgetting_rate=1.5)
