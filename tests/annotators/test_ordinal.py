"""Ordered-probit workers: stable log Φ differences, gradients, the MAP M-step."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from crowdbayes.annotators.ordinal import (
    laplace_sd,
    log_ndtr_diff,
    ordinal_log_confusion,
    ordinal_worker_log_posterior,
    ordinal_worker_map,
)

PRIOR = (1.0, np.log(4.0), 1.5)


def test_log_ndtr_diff_matches_direct_and_stays_finite_in_the_tails():
    high = np.array([1.0, 0.3, 2.0, 40.0, -30.0])
    low = np.array([-1.0, 0.1, 1.5, 39.0, -31.0])
    direct = np.log(norm.cdf(high[:3]) - norm.cdf(low[:3]))
    np.testing.assert_allclose(log_ndtr_diff(high, low)[:3], direct, rtol=1e-12)
    tails = log_ndtr_diff(high, low)[3:]
    assert np.all(np.isfinite(tails))
    # far upper tail: Φ(40) − Φ(39) = Φ(−39) − Φ(−40) ≈ Φ(−39)
    np.testing.assert_allclose(tails[0], norm.logcdf(-39.0), rtol=1e-6)
    np.testing.assert_allclose(log_ndtr_diff(np.inf, -np.inf), 0.0)


def test_confusion_rows_are_distributions_and_an_exact_worker_is_the_identity():
    rng = np.random.default_rng(0)
    params = np.column_stack([rng.normal(0, 0.7, 6), rng.normal(1, 1.5, 6)])
    conf = np.exp(ordinal_log_confusion(params, 5))
    np.testing.assert_allclose(conf.sum(axis=-1), 1.0, atol=1e-12)
    exact = np.exp(ordinal_log_confusion(np.array([[0.0, np.log(1e4)]]), 4))[0]
    np.testing.assert_allclose(exact, np.eye(4), atol=1e-6)
    # a worker biased up by one grade reports c + 1 (the top grade stays the top grade)
    shifted = np.exp(ordinal_log_confusion(np.array([[1.0, np.log(1e4)]]), 4))[0]
    np.testing.assert_allclose(np.diag(shifted, 1), 1.0, atol=1e-6)
    np.testing.assert_allclose(shifted[3, 3], 1.0, atol=1e-6)
    on_cut = np.exp(ordinal_log_confusion(np.array([[0.5, np.log(1e4)]]), 4))[0]
    np.testing.assert_allclose(on_cut[0, :2], 0.5, atol=1e-12)  # on the cut: half and half


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    params = np.column_stack([rng.normal(0, 0.5, 5), rng.normal(1, 1, 5)])
    counts = rng.poisson(3, (5, 4, 4)).astype(float)
    _, gradient = ordinal_worker_log_posterior(params, counts, PRIOR)
    step = 1e-6
    for d in range(2):
        shift = np.zeros(2)
        shift[d] = step
        up = ordinal_worker_log_posterior(params + shift, counts, PRIOR)[0]
        down = ordinal_worker_log_posterior(params - shift, counts, PRIOR)[0]
        np.testing.assert_allclose(gradient[:, d], (up - down) / (2 * step), atol=1e-5)


def test_map_is_a_maximum_and_never_worse_than_its_start():
    rng = np.random.default_rng(2)
    truth = np.array([[0.4, np.log(9.0)], [-0.3, np.log(2.0)], [0.0, np.log(30.0)]])
    conf = np.exp(ordinal_log_confusion(truth, 4))
    counts = np.stack([rng.multinomial(400, row) for row in conf.reshape(-1, 4)]).reshape(3, 4, 4)
    start = np.zeros((3, 2))
    params, sd = ordinal_worker_map(counts.astype(float), start, PRIOR)
    value = ordinal_worker_log_posterior(params, counts, PRIOR)[0]
    assert np.all(value >= ordinal_worker_log_posterior(start, counts, PRIOR)[0])
    _, gradient = ordinal_worker_log_posterior(params, counts, PRIOR)
    assert np.abs(gradient).max() < 1e-3
    for d in range(2):  # a small step any way lowers each worker's objective
        for sign in (-1, 1):
            moved = params.copy()
            moved[:, d] += sign * 1e-3
            assert np.all(ordinal_worker_log_posterior(moved, counts, PRIOR)[0] <= value + 1e-9)
    # 1,600 labels per worker pin the parameters down: the truth lies within 4 sd
    assert np.all(np.abs(params - truth) < 4 * sd)
    np.testing.assert_allclose(laplace_sd(params, counts, PRIOR), sd)


def test_laplace_sd_of_the_prior_alone_is_the_prior_sd():
    counts = np.zeros((2, 3, 3))
    params = np.array([[0.0, PRIOR[1]], [0.0, PRIOR[1]]])
    np.testing.assert_allclose(laplace_sd(params, counts, PRIOR), [[1.0, 1.5]] * 2, rtol=1e-5)


@pytest.mark.parametrize("bad", [np.nan])
def test_nan_parameters_give_nan_not_an_exception(bad):
    value, _ = ordinal_worker_log_posterior(np.array([[bad, 0.0]]), np.ones((1, 3, 3)), PRIOR)
    assert np.isnan(value).all()
