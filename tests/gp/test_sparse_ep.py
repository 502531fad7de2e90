"""EP on inducing items (projected process / DTC): with every item inducing it is the exact EP,
with a few well-spread ones it approximates it; predictions use the projected-process
predictive."""

from __future__ import annotations

import numpy as np
import pytest

from crowdbayes.gp import (
    EP,
    InducingBasis,
    PairCounts,
    choose_inducing,
    expectation_propagation,
    sparse_ep,
)
from crowdbayes.kernels import Matern32

NOISE = 0.5


def random_problem(rng, n_items, n_pairs, p_left=0.5):
    """Items uniform on the unit square, random pairs, each won by its left item with
    probability ``p_left``; one comparison per pair entry."""
    X = rng.uniform(size=(n_items, 2))
    left = rng.integers(n_items, size=n_pairs)
    right = (left + rng.integers(1, n_items, size=n_pairs)) % n_items
    won = (rng.random(n_pairs) < p_left).astype(float)
    return X, PairCounts(left, right, won, 1.0 - won, np.arange(n_pairs))


def test_inducing_items_at_all_items_equal_the_exact_ep_and_few_approximate_it():
    rng = np.random.default_rng(0)
    X, pairs = random_problem(rng, 25, 70, p_left=0.6)
    K = Matern32(0.4)(X)
    exact = expectation_propagation(K, pairs, noise=NOISE, tol=1e-9, max_iter=500)
    full = sparse_ep(InducingBasis.build(K, np.arange(25)), pairs, noise=NOISE, tol=1e-9)
    np.testing.assert_allclose(full.posterior.mean, exact.posterior.mean, atol=1e-5)
    np.testing.assert_allclose(full.posterior.cov, exact.posterior.cov, atol=1e-5)
    np.testing.assert_allclose(full.site_precision, exact.site_precision, atol=1e-4)
    assert full.log_marginal == pytest.approx(exact.log_marginal, abs=1e-5)
    items = np.array([3, 7, 11])
    mean, cov = full.posterior.block(items)
    np.testing.assert_allclose(cov, exact.posterior.cov[np.ix_(items, items)], atol=1e-5)
    # predictions at new inputs: the projected-process predictive equals the exact one
    X_new = rng.uniform(size=(6, 2))
    got = full.posterior.predict(Matern32(0.4)(X, X_new), np.ones(6))
    want = exact.posterior.predict(Matern32(0.4)(X, X_new), np.ones(6))
    np.testing.assert_allclose(got, want, atol=1e-5)
    # 15 inducing items spread over the square approximate the posterior mean closely,
    # 2 do not
    corr = {}
    for m in (2, 15):
        chosen = choose_inducing(X, m)
        assert len(np.unique(chosen)) == m
        fit = sparse_ep(InducingBasis.build(K[chosen], chosen), pairs, noise=NOISE, tol=1e-8)
        corr[m] = np.corrcoef(fit.posterior.mean, exact.posterior.mean)[0, 1]
    assert corr[15] > 0.95 > corr[2]


def test_the_ep_strategy_runs_sparse_ep():
    X, pairs = random_problem(np.random.default_rng(1), 12, 30)
    K = Matern32(0.5)(X)
    chosen = choose_inducing(X, 5)
    np.testing.assert_array_equal(chosen, np.sort(chosen))
    basis = InducingBasis.build(K[chosen], chosen)
    direct = sparse_ep(basis, pairs, noise=NOISE, damping=0.7, max_iter=50, tol=1e-7)
    given = EP(damping=0.7, max_iter=50, tol=1e-7).run_sparse(basis, pairs, noise=NOISE)
    np.testing.assert_array_equal(given.site_precision, direct.site_precision)
    assert given.log_marginal == direct.log_marginal
