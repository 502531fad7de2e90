"""Tests for crowdbayes.inference.diagnostics, checked against arviz-stats' array API."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from arviz_stats.base import array_stats
from scipy import signal

from crowdbayes.inference.diagnostics import (
    ess_bulk,
    ess_tail,
    rhat,
    rhat_from_moments,
    summarize,
)
from crowdbayes.inference.online import OnlineMoments

RTOL = 1e-6


def ar1(rng, n_chains, n_draws, phi, param_shape=()):
    """Stationary AR(1) chains x_t = phi x_{t-1} + e_t, shape (n_chains, n_draws, *param_shape)."""
    noise = rng.standard_normal((n_chains, n_draws, *param_shape))
    noise[:, 0] /= np.sqrt(1.0 - phi**2)
    return signal.lfilter([1.0], [1.0, -phi], noise, axis=1)


def reference(draws):
    """arviz-stats' rank R-hat, bulk ESS and tail ESS, chains on axis 0 and draws on axis 1."""
    kwargs = {"chain_axis": 0, "draw_axis": 1}
    return (
        array_stats.rhat(draws, method="rank", **kwargs),
        array_stats.ess(draws, method="bulk", **kwargs),
        array_stats.ess(draws, method="tail", prob=0.05, **kwargs),
    )


# --------------------------------------------------------------------------------------------
# Agreement with arviz-stats
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("phi", [-0.5, 0.0, 0.5, 0.9, 0.99])
@pytest.mark.parametrize(("n_chains", "n_draws"), [(2, 100), (4, 301), (3, 1000), (6, 5)])
def test_matches_arviz_on_ar1_chains(phi, n_chains, n_draws):
    rng = np.random.default_rng([int(100 * abs(phi)), n_chains, n_draws])
    draws = ar1(rng, n_chains, n_draws, phi, param_shape=(2, 3))
    # Non-Gaussian margins and heavy ties exercise rank normalisation and folding.
    draws[..., 0, 1] = np.exp(draws[..., 0, 1])
    draws[..., 1, 2] = np.round(draws[..., 1, 2])
    # One chain offset on one parameter so that not every R-hat is near 1.
    draws[0, :, 1, 0] += 2.0

    ref_rhat, ref_bulk, ref_tail = reference(draws)
    got_rhat, got_bulk, got_tail = rhat(draws), ess_bulk(draws), ess_tail(draws)

    assert got_rhat.shape == got_bulk.shape == got_tail.shape == (2, 3)
    np.testing.assert_allclose(got_rhat, ref_rhat, rtol=RTOL)
    np.testing.assert_allclose(got_bulk, ref_bulk, rtol=RTOL)
    np.testing.assert_allclose(got_tail, ref_tail, rtol=RTOL)


def test_scalar_parameter_returns_float_matching_arviz():
    draws = ar1(np.random.default_rng(1), 4, 500, 0.7)
    ref_rhat, ref_bulk, ref_tail = reference(draws)
    for got, ref in [(rhat(draws), ref_rhat), (ess_bulk(draws), ref_bulk)]:
        assert isinstance(got, float)
        assert got == pytest.approx(float(ref), rel=RTOL)
    assert ess_tail(draws) == pytest.approx(float(ref_tail), rel=RTOL)


def test_single_chain_split_rhat_is_computed():
    # Documented difference: ArviZ returns NaN for one chain; split-R-hat compares the halves.
    rng = np.random.default_rng(2)
    stationary = rng.standard_normal((1, 2000))
    drifting = stationary + np.linspace(0.0, 5.0, 2000)
    assert rhat(stationary) < 1.01
    assert rhat(drifting) > 1.5
    assert np.isnan(array_stats.rhat(stationary, chain_axis=0, draw_axis=1, method="rank"))
    # ESS with one chain agrees with ArviZ.
    assert ess_bulk(drifting) == pytest.approx(
        float(array_stats.ess(drifting, chain_axis=0, draw_axis=1, method="bulk")), rel=RTOL
    )


# --------------------------------------------------------------------------------------------
# Behaviour on chains with known properties
# --------------------------------------------------------------------------------------------


def test_iid_draws_have_full_ess_and_unit_rhat():
    n_chains, n_draws = 4, 1000
    draws = np.random.default_rng(3).standard_normal((n_chains, n_draws, 8))
    total = n_chains * n_draws
    bulk, tail = ess_bulk(draws), ess_tail(draws)
    assert np.all(rhat(draws) < 1.01)
    assert np.all((bulk > 0.8 * total) & (bulk < 1.25 * total))
    assert abs(bulk.mean() / total - 1.0) < 0.1
    assert np.all((tail > 0.6 * total) & (tail < 1.4 * total))


def test_ar1_bulk_ess_near_theoretical_value():
    # For AR(1), tau = (1 + phi) / (1 - phi); phi = 0.8 gives ESS = total / 9.
    phi, n_chains, n_draws = 0.8, 4, 5000
    draws = ar1(np.random.default_rng(4), n_chains, n_draws, phi, param_shape=(4,))
    expected = n_chains * n_draws * (1 - phi) / (1 + phi)
    np.testing.assert_allclose(ess_bulk(draws), expected, rtol=0.25)
    assert np.all(ess_tail(draws) < 0.5 * n_chains * n_draws)


def test_shifted_chain_means_give_large_rhat():
    draws = np.random.default_rng(5).standard_normal((4, 500, 3))
    draws[:, :, 0] += np.array([0.0, 0.0, 0.0, 3.0])[:, None]
    draws[:, :, 1] += np.array([0.0, 0.5, 1.0, 1.5])[:, None]
    r = rhat(draws)
    assert r[0] > 1.3
    assert r[1] > 1.1
    assert r[2] < 1.01


def test_scale_difference_caught_by_tail_rhat():
    # Same location, different spread: bulk R-hat ~ 1 but the folded (tail) R-hat is large.
    draws = np.random.default_rng(6).standard_normal((4, 1000))
    draws[3] *= 4.0
    bulk_only = array_stats.rhat(draws, chain_axis=0, draw_axis=1, method="z_scale")
    assert bulk_only < 1.01
    assert rhat(draws) > 1.05


def test_rank_based_ess_invariant_to_monotone_transform():
    draws = ar1(np.random.default_rng(7), 3, 400, 0.6, param_shape=(2,))
    np.testing.assert_allclose(ess_bulk(np.exp(draws)), ess_bulk(draws), rtol=1e-10)
    np.testing.assert_allclose(ess_tail(np.exp(draws)), ess_tail(draws), rtol=1e-10)


# --------------------------------------------------------------------------------------------
# rhat_from_moments
# --------------------------------------------------------------------------------------------


def direct_rhat(draws):
    """Non-split, non-ranked Gelman-Rubin from draws: sqrt((B / W + n - 1) / n)."""
    n = draws.shape[1]
    within = draws.var(axis=1, ddof=1).mean(axis=0)
    between = n * draws.mean(axis=1).var(axis=0, ddof=1)
    return np.sqrt((between / within + n - 1) / n)


def test_rhat_from_moments_matches_direct_computation():
    draws = ar1(np.random.default_rng(8), 5, 300, 0.5, param_shape=(2, 2))
    draws[2] += 0.7
    got = rhat_from_moments(draws.mean(axis=1), draws.var(axis=1, ddof=1), 300)
    assert got.shape == (2, 2)
    np.testing.assert_allclose(got, direct_rhat(draws), rtol=1e-12)
    np.testing.assert_allclose(
        got, array_stats.rhat(draws, chain_axis=0, draw_axis=1, method="identity"), rtol=RTOL
    )
    assert np.all(got > 1.02)


def test_rhat_from_moments_with_online_accumulators():
    draws = np.random.default_rng(9).standard_normal((3, 200, 4))
    accumulators = [OnlineMoments((4,)) for _ in range(3)]
    for chain, acc in zip(draws, accumulators, strict=True):
        for value in chain:
            acc.push(value)
    means = np.stack([acc.mean for acc in accumulators])
    variances = np.stack([acc.sample_variance for acc in accumulators])
    got = rhat_from_moments(means, variances, 200)
    np.testing.assert_allclose(got, direct_rhat(draws), rtol=1e-10)
    scalar = rhat_from_moments(means[:, 0], variances[:, 0], 200)
    assert isinstance(scalar, float)
    assert scalar == pytest.approx(got[0], rel=1e-12)


def test_rhat_from_moments_misses_within_chain_trend_that_split_rhat_catches():
    trend = np.linspace(-3.0, 3.0, 1000)
    draws = np.random.default_rng(10).standard_normal((4, 1000)) + trend
    classic = rhat_from_moments(draws.mean(axis=1), draws.var(axis=1, ddof=1), 1000)
    assert classic < 1.01
    assert rhat(draws) > 1.3


def test_rhat_from_moments_degenerate_variances():
    got = rhat_from_moments(np.array([[1.0, 1.0], [1.0, 2.0]]), np.zeros((2, 2)), 10)
    assert np.isnan(got[0])
    assert np.isinf(got[1])


@pytest.mark.parametrize(
    ("means", "variances", "n_draws", "match"),
    [
        (np.zeros(1), np.ones(1), 10, r"at least 2 chains.*shape \(1,\)"),
        (np.zeros((3, 2)), np.ones((3, 3)), 10, r"got \(3, 2\) and \(3, 3\)"),
        (np.zeros(()), np.ones(()), 10, r"got \(\) and \(\)"),
        (np.zeros(3), np.ones(3), 1, r"n_draws must be an integer >= 2; got 1"),
        (np.zeros(3), np.ones(3), 2.5, r"n_draws must be an integer >= 2; got 2\.5"),
        (np.zeros(3), -np.ones(3), 10, r"chain_variances must be non-negative"),
    ],
)
def test_rhat_from_moments_rejects_bad_input(means, variances, n_draws, match):
    with pytest.raises(ValueError, match=match):
        rhat_from_moments(means, variances, n_draws)


# --------------------------------------------------------------------------------------------
# Degenerate parameters and input validation
# --------------------------------------------------------------------------------------------


def test_constant_and_nonfinite_parameters_give_nan_without_warnings():
    draws = np.random.default_rng(11).standard_normal((4, 100, 4))
    draws[..., 1] = 2.5
    draws[1, 7, 2] = np.nan
    draws[0, 3, 3] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = {f.__name__: f(draws) for f in (rhat, ess_bulk, ess_tail)}
        scalar = rhat(np.full((2, 10), 3.0))
    assert np.isnan(scalar)
    for name, values in results.items():
        assert np.isfinite(values[0]), name
        assert np.all(np.isnan(values[1:])), name
    # Untouched parameter agrees with the reference computed on its own.
    ref_rhat, ref_bulk, ref_tail = reference(draws[..., 0])
    assert results["rhat"][0] == pytest.approx(float(ref_rhat), rel=RTOL)
    assert results["ess_bulk"][0] == pytest.approx(float(ref_bulk), rel=RTOL)
    assert results["ess_tail"][0] == pytest.approx(float(ref_tail), rel=RTOL)


def test_constant_within_chains_but_different_between_gives_inf():
    draws = np.repeat(np.array([0.0, 0.0, 1.0, 1.0])[:, None], 20, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rhat(draws) == np.inf


@pytest.mark.parametrize("func", [rhat, ess_bulk, ess_tail, summarize])
@pytest.mark.parametrize(
    ("shape", "match"),
    [
        ((10,), r"at least 2 dimensions; got an array with shape \(10,\) \(ndim=1\)"),
        ((), r"got an array with shape \(\) \(ndim=0\)"),
        ((2, 3), r"at least 4 draws per chain; got n_draws=3 \(draws shape \(2, 3\)\)"),
        ((4, 2, 5), r"got n_draws=2 \(draws shape \(4, 2, 5\)\)"),
        ((0, 10), r"at least 1 chain; got shape \(0, 10\)"),
    ],
)
def test_bad_shapes_raise(func, shape, match):
    with pytest.raises(ValueError, match=match):
        func(np.zeros(shape))


# --------------------------------------------------------------------------------------------
# summarize
# --------------------------------------------------------------------------------------------


def test_summarize_columns_and_values():
    draws = ar1(np.random.default_rng(12), 4, 400, 0.5, param_shape=(2, 3))
    table = summarize(draws)
    assert list(table.columns) == ["mean", "sd", "q05", "q95", "rhat", "ess_bulk", "ess_tail"]
    assert list(table.index) == [f"theta[{i},{j}]" for i in range(2) for j in range(3)]
    pooled = draws.reshape(-1, 6)
    np.testing.assert_allclose(table["mean"], pooled.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(table["sd"], pooled.std(axis=0, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(table["q05"], np.quantile(pooled, 0.05, axis=0), rtol=1e-12)
    np.testing.assert_allclose(table["q95"], np.quantile(pooled, 0.95, axis=0), rtol=1e-12)
    np.testing.assert_allclose(table["rhat"], rhat(draws).ravel(), rtol=1e-12)
    np.testing.assert_allclose(table["ess_bulk"], ess_bulk(draws).ravel(), rtol=1e-12)
    np.testing.assert_allclose(table["ess_tail"], ess_tail(draws).ravel(), rtol=1e-12)


def test_summarize_names():
    draws = np.random.default_rng(13).standard_normal((2, 50, 2))
    assert list(summarize(draws, names=["a", "b"]).index) == ["a", "b"]
    assert list(summarize(draws, names="beta").index) == ["beta[0]", "beta[1]"]
    scalar = summarize(draws[..., 0])
    assert isinstance(scalar, pd.DataFrame)
    assert list(scalar.index) == ["theta"]
    with pytest.raises(ValueError, match=r"got 3 names for 2 parameters \(draws shape"):
        summarize(draws, names=["a", "b", "c"])


def test_tail_ess_with_constant_quantile_indicator():
    # Binary draws: q95 is the maximum, so I(x <= q95) is constant and its ESS is taken to be the
    # number of draws (ArviZ's convention); I(x <= q05) is an affine map of the rank-normalised
    # draws, so the tail ESS equals min(bulk ESS, number of draws).
    draws = (ar1(np.random.default_rng(14), 4, 200, 0.3, param_shape=(3,)) > 0).astype(float)
    expected = np.minimum(ess_bulk(draws), draws.shape[0] * draws.shape[1])
    np.testing.assert_allclose(ess_tail(draws), expected, rtol=1e-10)
    np.testing.assert_allclose(ess_tail(draws), reference(draws)[2], rtol=RTOL)
