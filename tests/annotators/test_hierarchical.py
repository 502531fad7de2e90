"""Sufficient statistics of the hierarchical rows and the batched row densities, against the
one-row functions they replace; the lean log-sum-exp against scipy's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from crowdbayes.annotators.hierarchical import (
    CountRows,
    alpha_to_row_hyperprior,
    dirichlet_multinomial_log_marginal,
    row_hyperprior_log_density,
    row_hyperprior_to_alpha,
    rows_hyperprior_log_density,
    rows_to_alpha,
)
from crowdbayes.maths import lean_logsumexp


def random_counts(rng, n_workers=30, k=3, integer=True):
    counts = rng.poisson(rng.gamma(1.0, 3.0, size=(n_workers, k, k))).astype(float)
    counts[rng.random((n_workers, k)) < 0.3] = 0.0  # workers who never saw a class
    if not integer:
        counts *= rng.random(counts.shape)  # expected counts (e.g. EM responsibilities)
    return counts


@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("k", [2, 4])
def test_count_rows_marginal_matches_the_per_row_sum(integer, k):
    rng = np.random.default_rng(k)
    counts = random_counts(rng, k=k, integer=integer)
    summary = CountRows(counts)
    alpha = rng.gamma(2.0, 1.0, size=(5, k, k))  # five points, every row at its own α
    got = summary.log_marginal(alpha)
    expected = [
        [dirichlet_multinomial_log_marginal(counts[:, row], a[row]) for row in range(k)]
        for a in alpha
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-8)


def test_count_rows_compresses_repeated_counts():
    counts = np.zeros((1000, 2, 2))
    counts[:, 0, 0] = np.arange(1000) % 3  # values 0, 1, 2 only
    summary = CountRows(counts)
    assert len(summary.cell_values) == 2  # 1 and 2 (zeros contribute nothing)
    np.testing.assert_allclose(
        summary.log_marginal(np.full((2, 2), 1.7))[0],
        dirichlet_multinomial_log_marginal(counts[:, 0], np.full(2, 1.7)),
    )


@pytest.mark.parametrize("diagonal", [0.0, 1.5])
def test_batched_row_coordinates_match_the_one_row_functions(diagonal):
    rng = np.random.default_rng(3)
    coords = rng.normal(size=(4, 3, 3))
    coords[..., 0] += 1.0
    coords[0, 1, 0] = -0.5  # a scale below s_min = 1: outside the prior's support
    alpha = rows_to_alpha(coords)
    density = rows_hyperprior_log_density(coords, 1.5, 1.0, diagonal)
    counts = random_counts(rng)
    posterior = CountRows(counts).log_posterior(coords, 1.5, 1.0, diagonal)
    for m in range(4):
        for row in range(3):
            np.testing.assert_allclose(alpha[m, row], row_hyperprior_to_alpha(coords[m, row]))
            np.testing.assert_allclose(
                alpha_to_row_hyperprior(alpha[m, row]), coords[m, row], atol=1e-12
            )
            expected = row_hyperprior_log_density(coords[m, row], 1.5, 1.0, diagonal, row)
            assert density[m, row] == pytest.approx(expected)
            if np.isfinite(expected):
                expected += dirichlet_multinomial_log_marginal(counts[:, row], alpha[m, row])
            assert posterior[m, row] == pytest.approx(expected)
    assert posterior[0, 1] == -np.inf


def test_lean_logsumexp_matches_scipy_including_infinities():
    values = np.array([[0.0, -np.inf, 3.0], [-np.inf, -np.inf, -np.inf], [1.0, np.inf, 2.0]])
    with np.errstate(invalid="ignore"):
        expected = logsumexp(values, axis=1, keepdims=True)
    np.testing.assert_array_equal(lean_logsumexp(values, axis=1), expected)
    values = np.random.default_rng(0).normal(size=(4, 7)) * 300
    np.testing.assert_allclose(lean_logsumexp(values, axis=0), logsumexp(values, 0, keepdims=True))
