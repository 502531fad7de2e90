"""The Davidson likelihood of a comparison with ties (crowdbayes.models.comparisons._davidson)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdbayes.models.comparisons._davidson import outcome_log_probs, weighted_terms


@pytest.mark.parametrize("theta", [-np.inf, np.log(0.3), 1.2])
def test_davidson_probabilities_sum_to_one_and_reduce_to_bradley_terry(theta):
    d = np.linspace(-30, 30, 61)
    probs = np.exp(outcome_log_probs(d, theta))
    np.testing.assert_allclose(probs.sum(axis=0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(probs[0] / (probs[0] + probs[1]), 1 / (1 + np.exp(-d)), rtol=1e-9)
    if np.isneginf(theta):
        assert np.all(probs[2] == 0)


@pytest.mark.parametrize("theta", [-np.inf, np.log(0.4)])
def test_weighted_terms_match_finite_differences(theta):
    rng = np.random.default_rng(0)
    d = rng.normal(0, 2, 40)
    weights = rng.random((3, 40))
    if np.isneginf(theta):
        weights[2] = 0.0
    value, grad_d, curv_d, grad_t, curv_t, cross = weighted_terms(d, theta, weights)
    kinds = 2 if np.isneginf(theta) else 3  # no tie term without ties (0 · log 0)

    def per_pair(dd, tt):
        return (weights[:kinds] * outcome_log_probs(dd, tt)[:kinds]).sum(axis=0)

    assert value == pytest.approx(per_pair(d, theta).sum(), rel=1e-12)
    h = 1e-5

    numeric_grad = (per_pair(d + h, theta) - per_pair(d - h, theta)) / (2 * h)
    np.testing.assert_allclose(grad_d, numeric_grad, rtol=1e-6, atol=1e-8)
    numeric_curv = -(per_pair(d + h, theta) - 2 * per_pair(d, theta) + per_pair(d - h, theta))
    np.testing.assert_allclose(curv_d, numeric_curv / h**2, rtol=1e-3, atol=1e-5)
    assert np.all(curv_d >= 0)
    if not np.isneginf(theta):
        up, down = per_pair(d, theta + h).sum(), per_pair(d, theta - h).sum()
        assert grad_t == pytest.approx((up - down) / (2 * h), rel=1e-6)
        mid = per_pair(d, theta).sum()
        assert curv_t == pytest.approx(-(up - 2 * mid + down) / h**2, rel=1e-3)
        mixed = (
            per_pair(d + h, theta + h)
            - per_pair(d + h, theta - h)
            - per_pair(d - h, theta + h)
            + per_pair(d - h, theta - h)
        ) / (4 * h * h)
        np.testing.assert_allclose(cross, -mixed, rtol=1e-3, atol=1e-6)
