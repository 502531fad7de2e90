"""Slice samplers: the batched coordinate-wise sampler has the one-target kernel, the
elliptical slice step and the Laplace reference leave their targets invariant."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from crowdbayes.inference.slice import (
    elliptical_slice_rows,
    gaussian_reference,
    slice_sample_coordinates,
    slice_sample_rows,
)

# a correlated 2-D Gaussian, and the same Gaussian cut at x_0 >= 0.3 (a hard edge, as the
# prior scale's lower bound)
MEAN = np.array([0.5, -1.0])
COVARIANCE = np.array([[1.0, 0.6], [0.6, 0.5]])
PRECISION = np.linalg.inv(COVARIANCE)


def gaussian_log_density(points: np.ndarray) -> np.ndarray:
    offset = points - MEAN
    return -0.5 * np.einsum("...d,de,...e->...", offset, PRECISION, offset)


def truncated_log_density(points: np.ndarray) -> np.ndarray:
    return np.where(points[..., 0] >= 0.3, gaussian_log_density(points), -np.inf)


def truncated_moments(n: int = 2_000_000) -> tuple[np.ndarray, np.ndarray]:
    draws = np.random.default_rng(123).multivariate_normal(MEAN, COVARIANCE, size=n)
    draws = draws[draws[:, 0] >= 0.3]
    return draws.mean(axis=0), draws.var(axis=0)


@pytest.mark.parametrize("batch", [1, 4])
def test_batched_rows_have_the_kernel_of_the_one_target_sampler(batch):
    """One sweep from a fixed start: the batched sampler (many rows at once, each row one
    replicate) and the one-target sampler give the same distribution of the next point."""
    start = np.array([1.5, 0.0])
    n = 3000
    rng = np.random.default_rng(0)
    batched, _ = slice_sample_rows(
        np.tile(start, (n, 1)), truncated_log_density, rng, width=0.7, batch=batch
    )
    single = np.array(
        [slice_sample_coordinates(start, truncated_log_density, rng, width=0.7) for _ in range(n)]
    )
    for d in range(2):
        assert stats.ks_2samp(batched[:, d], single[:, d]).pvalue > 1e-3


def test_batched_rows_sample_the_target():
    """Independent rows as independent chains: after 30 sweeps their states are draws from the
    truncated Gaussian (moments within 4 standard errors)."""
    n = 4000
    rng = np.random.default_rng(1)
    x = np.tile([2.0, 1.0], (n, 1))
    for _ in range(30):
        x, current = slice_sample_rows(x, truncated_log_density, rng)
    np.testing.assert_allclose(current, truncated_log_density(x))
    mean, variance = truncated_moments()
    se = np.sqrt(variance / n)
    assert np.all(np.abs(x.mean(axis=0) - mean) < 4 * se)
    assert np.all(np.abs(x.var(axis=0) / variance - 1) < 4 * np.sqrt(2 / n))


@pytest.mark.parametrize("reference_scale", [0.5, 1.0, 3.0])
def test_elliptical_slice_samples_the_target_for_any_reference(reference_scale):
    """The Gaussian reference only changes the efficiency: a narrow, a right and a wide one all
    leave the truncated Gaussian invariant."""
    n = 4000
    rng = np.random.default_rng(2)
    ref_mean = np.tile([1.0, -0.5], (n, 1))
    ref_chol = np.broadcast_to(reference_scale * np.eye(2), (n, 2, 2))
    x = np.tile([2.0, 1.0], (n, 1))

    def log_likelihood(points):
        offset = (points - ref_mean) / reference_scale
        return truncated_log_density(points) + 0.5 * (offset**2).sum(axis=-1)

    for _ in range(40):
        x, _ = elliptical_slice_rows(x, log_likelihood, ref_mean, ref_chol, rng)
    mean, variance = truncated_moments()
    se = np.sqrt(variance / n)
    assert np.all(np.abs(x.mean(axis=0) - mean) < 4 * se)
    assert np.all(np.abs(x.var(axis=0) / variance - 1) < 4 * np.sqrt(2 / n))


def test_elliptical_slice_starts_only_inside_the_support():
    with pytest.raises(ValueError, match="zero density"):
        elliptical_slice_rows(
            np.array([[0.0, 0.0]]),
            truncated_log_density,
            np.zeros((1, 2)),
            np.eye(2)[None],
            np.random.default_rng(0),
        )


def test_gaussian_reference_is_exact_for_a_gaussian():
    """One Newton step from anywhere lands on the mean; the covariance is inflate × Σ."""
    x = np.array([[3.0, 2.0], [-1.0, 0.5]])
    mean, chol = gaussian_reference(x, gaussian_log_density, inflate=2.0)
    np.testing.assert_allclose(mean, np.tile(MEAN, (2, 1)), atol=1e-5)
    covariance = chol @ chol.transpose(0, 2, 1)
    np.testing.assert_allclose(covariance, np.tile(2.0 * COVARIANCE, (2, 1, 1)), atol=1e-4)


def test_gaussian_reference_falls_back_at_the_edge_of_the_support():
    """Differences that reach outside the support give the standard normal at the point."""
    x = np.array([[0.3 + 1e-4, 0.0], [1.0, -0.5]])
    mean, chol = gaussian_reference(x, truncated_log_density)
    np.testing.assert_array_equal(mean[0], x[0])
    np.testing.assert_array_equal(chol[0], np.eye(2))
    np.testing.assert_allclose(mean[1], MEAN, atol=1e-5)
