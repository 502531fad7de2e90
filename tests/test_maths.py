"""Credible intervals of the Beta distribution: the HPD interval against brute force; the
empirical-Bayes beta-binomial rates against simulated recovery."""

import numpy as np
import pytest
from scipy import stats

from crowdbayes.maths import (
    beta_binomial_rates,
    beta_central_interval,
    beta_credible_interval,
    beta_hpd_interval,
)

LEVEL = 0.9


def brute_force_hpd(a: float, b: float, level: float, n: int = 400_000) -> tuple[float, float]:
    """The HPD set on a grid: cells taken by decreasing density until their mass reaches
    ``level``; returns the extent of the cells taken (an interval for a unimodal density)."""
    edges = np.linspace(0.0, 1.0, n + 1)
    mass = np.diff(stats.beta.cdf(edges, a, b))
    centres = (edges[:-1] + edges[1:]) / 2
    order = np.argsort(-stats.beta.pdf(centres, a, b), kind="stable")
    taken = order[: np.searchsorted(np.cumsum(mass[order]), level) + 1]
    return float(edges[taken.min()]), float(edges[taken.max() + 1])


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (5.0, 3.0),  # interior mode
        (2.0, 40.0),  # interior mode near 0, skewed
        (60.0, 1.5),  # interior mode near 1, skewed
        (21.0, 1.0),  # density rising to 1: n successes in n trials under Beta(1, 1)
        (4.0, 0.6),  # rising, unbounded at 1
        (1.0, 3.0),  # falling from 0
        (0.5, 7.0),  # falling, unbounded at 0
    ],
)
def test_hpd_matches_brute_force(a, b):
    lower, upper = beta_hpd_interval(a, b, LEVEL)
    brute_lower, brute_upper = brute_force_hpd(a, b, LEVEL)
    assert lower == pytest.approx(brute_lower, abs=2e-4)
    assert upper == pytest.approx(brute_upper, abs=2e-4)
    mass = stats.beta.cdf(upper, a, b) - stats.beta.cdf(lower, a, b)
    assert mass == pytest.approx(LEVEL, abs=1e-9)
    central = beta_central_interval(a, b, LEVEL)
    assert upper - lower <= central[1] - central[0] + 1e-12


def test_hpd_contains_a_boundary_mode_the_central_interval_misses():
    a, b = 21.0, 1.0
    lower, upper = beta_hpd_interval(a, b, LEVEL)
    assert upper == 1.0 and lower == pytest.approx(0.1 ** (1 / 21))
    assert beta_central_interval(a, b, LEVEL)[1] < 1.0


def test_hpd_interior_bounds_have_equal_density():
    a, b = np.array([5.0, 60.0]), np.array([3.0, 1.5])
    lower, upper = beta_hpd_interval(a, b, LEVEL)
    np.testing.assert_allclose(stats.beta.pdf(lower, a, b), stats.beta.pdf(upper, a, b), rtol=1e-6)


def test_hpd_special_shapes_and_broadcasting():
    lower, upper = beta_hpd_interval(np.array([[1.0], [0.5]]), np.array([1.0, 0.5]), LEVEL)
    assert lower.shape == (2, 2)
    assert (lower[0, 0], upper[0, 0]) == pytest.approx((0.05, 0.95))  # uniform: central
    assert np.isnan(lower[1, 1]) and np.isnan(upper[1, 1])  # U-shaped: two pieces


def test_credible_interval_kinds():
    np.testing.assert_allclose(
        beta_credible_interval(3.0, 2.0, LEVEL, "central"), beta_central_interval(3.0, 2.0, LEVEL)
    )
    with pytest.raises(ValueError, match="kind"):
        beta_credible_interval(3.0, 2.0, LEVEL, "equal")


# ---------------------------------------------------------------- beta-binomial shrinkage
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beta_binomial_rates_recover_the_prior_and_shrink(seed):
    """Units' rates drawn from Beta(2, 6) (κ = 8), 1-59 trials each: the fitted prior's
    strength, read off a unit without events (``κμ / (n + κ)``), is near 8, and the shrunk
    rates are closer to the true ones than the raw rates or the pooled rate (measured: about
    0.45 of the better one's mean squared error)."""
    rng = np.random.default_rng(seed)
    rates = rng.beta(2.0, 6.0, 3000)
    trials = rng.integers(1, 60, 3000)
    events = rng.binomial(trials, rates)
    pooled = events.sum() / trials.sum()
    shrunk = beta_binomial_rates(np.append(events, 0), np.append(trials, 10))
    kappa = 10 * shrunk[-1] / (pooled - shrunk[-1])
    assert 7.0 < kappa < 9.5

    def error(estimate):
        return np.mean((estimate - rates) ** 2)

    assert error(shrunk[:-1]) < 0.6 * min(error(events / trials), error(pooled))


def test_beta_binomial_rates_edge_cases():
    trials = np.array([10, 20, 0, 5])
    # no spread beyond the binomial's: (close to) the pooled rate for everyone
    even = beta_binomial_rates(np.array([3, 6, 0, 1]), trials)
    assert np.allclose(even, 10 / 35, atol=1e-4)
    # a unit without trials gets the pooled rate
    spread = beta_binomial_rates(np.array([0, 20, 0, 0]), trials)
    assert spread[2] == pytest.approx(20 / 35)
    assert spread[1] > spread[2] > spread[0]
    # no event at all, or events only: the pooled rate; no trials: NaN
    assert np.array_equal(beta_binomial_rates(np.zeros(4), trials), np.zeros(4))
    assert np.array_equal(beta_binomial_rates(trials, trials), np.ones(4))
    assert np.isnan(beta_binomial_rates(np.zeros(2), np.zeros(2))).all()
