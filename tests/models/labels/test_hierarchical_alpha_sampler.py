"""The α update of HierarchicalAnnotation draws exactly what the plain batched samplers draw.

``slice_sample_rows`` and ``elliptical_slice_rows`` save density calls (the current point and
the first step out evaluated with other points, proposals made before stepping out) and keep
their bookkeeping in Python floats. Here they are checked, bit for bit, against a plain
vectorised statement of the same kernels: one call per batch of points in the order the
algorithm needs them. This is what makes a fit's draws unchanged, together with the property
the merged calls rely on: a point's log density does not depend on the other points of the
call.
"""

from __future__ import annotations

import numpy as np
import pytest

from crowdbayes.annotators.hierarchical import CountRows
from crowdbayes.inference.slice import elliptical_slice_rows, slice_sample_rows

MEAN = np.array([0.5, -1.0])
PRECISION = np.linalg.inv(np.array([[1.0, 0.6], [0.6, 0.5]]))


def truncated_log_density(points: np.ndarray) -> np.ndarray:
    """A correlated Gaussian cut at x_0 >= 0.3 (a hard edge, as the prior scale's bound)."""
    offset = points - MEAN
    log_density = -0.5 * np.einsum("...d,de,...e->...", offset, PRECISION, offset)
    return np.where(points[..., 0] >= 0.3, log_density, -np.inf)


def plain_slice_rows(x, log_density, rng, *, current=None, width=1.0, max_steps=32, batch=4):
    """Batched coordinate-wise slice sampling (Neal 2003), stated plainly: the current point,
    then one step out a side, then ``batch`` a side while needed, then shrinkage proposals
    drawn from the stepped-out interval, each batch in its own call."""
    x = np.array(x, dtype=float)
    current = log_density(x[None])[0] if current is None else np.array(current, dtype=float)
    n_rows, n_dims = x.shape
    for d in range(n_dims):
        level = current - rng.exponential(size=n_rows)
        origin = x[:, d].copy()
        left = origin - width * rng.random(n_rows)
        right = left + width
        steps = np.zeros((2, n_rows), dtype=np.int64)
        done = np.zeros((2, n_rows), dtype=bool)
        first, count = 0, 1
        while first < max_steps:
            count = min(count, max_steps - first)
            step = first + np.arange(count)[:, None]
            trial = np.broadcast_to(x, (2 * count, n_rows, n_dims)).copy()
            trial[:count, :, d] = left - width * step
            trial[count:, :, d] = right + width * step
            below = log_density(trial).reshape(2, count, n_rows) <= level
            hit = below.any(axis=1)
            steps = np.where(
                done, steps, np.where(hit, first + below.argmax(axis=1), first + count)
            )
            done |= hit
            if done.all():
                break
            first, count = first + count, batch
        left = left - width * steps[0]
        right = right + width * steps[1]
        waiting = np.ones(n_rows, dtype=bool)
        trial = np.broadcast_to(x, (batch, n_rows, n_dims)).copy()
        while waiting.any():
            proposals = left + (right - left) * rng.random((batch, n_rows))
            trial[:, :, d] = proposals
            for proposal, value in zip(proposals, log_density(trial), strict=True):
                used = waiting & (proposal > left) & (proposal < right)
                accept = used & (value > level)
                x[accept, d] = proposal[accept]
                current[accept] = value[accept]
                reject = used & ~accept
                below = reject & (proposal < origin)
                left = np.where(below, proposal, left)
                right = np.where(reject & ~below, proposal, right)
                waiting &= ~accept & (right - left >= 1e-12)
    return x, current


def plain_elliptical_rows(x, log_likelihood, mean, chol, rng, *, batch=4):
    """Batched elliptical slice sampling (Murray, Adams & MacKay 2010), stated plainly: the
    current point in a call of its own, then each batch of angles in its own call."""
    x = np.array(x, dtype=float)
    current = log_likelihood(x[None])[0]
    n_rows, n_dims = x.shape
    nu = np.einsum("bde,be->bd", chol, rng.standard_normal((n_rows, n_dims)))
    offset = x - mean
    level = current - rng.exponential(size=n_rows)
    upper = 2 * np.pi * rng.random(n_rows)
    lower = upper - 2 * np.pi
    waiting = np.ones(n_rows, dtype=bool)
    angle = np.zeros(n_rows)
    while waiting.any():
        angles = lower + (upper - lower) * rng.random((batch, n_rows))
        points = mean + offset * np.cos(angles)[:, :, None] + nu * np.sin(angles)[:, :, None]
        for trial, value in zip(angles, log_likelihood(points), strict=True):
            used = waiting & (trial > lower) & (trial < upper)
            accept = used & (value > level)
            angle[accept] = trial[accept]
            current[accept] = value[accept]
            reject = used & ~accept
            negative = reject & (trial < 0)
            lower = np.where(negative, trial, lower)
            upper = np.where(reject & ~negative, trial, upper)
            waiting &= ~accept & (upper - lower >= 1e-12)
    x = mean + offset * np.cos(angle)[:, None] + nu * np.sin(angle)[:, None]
    return x, current


@pytest.mark.parametrize(
    ("width", "max_steps", "batch", "given"),
    [(1.0, 32, 4, False), (0.05, 32, 4, True), (0.05, 3, 1, False), (3.0, 32, 2, True)],
)
def test_slice_rows_draw_what_the_plain_sampler_draws(width, max_steps, batch, given):
    """Narrow widths step out far (past a chunk, and up to ``max_steps``), wide ones shrink
    much; the points, log-densities and generator state all agree exactly."""
    start = np.random.default_rng(5).normal([1.5, -1.0], 0.5, size=(40, 2))
    start[:, 0] = np.maximum(start[:, 0], 0.31)
    fast_rng, plain_rng = np.random.default_rng(9), np.random.default_rng(9)
    x = plain = start
    current = plain_current = truncated_log_density(start) if given else None
    for _ in range(5):
        options = {"width": width, "max_steps": max_steps, "batch": batch}
        x, current = slice_sample_rows(
            x, truncated_log_density, fast_rng, current=current, **options
        )
        plain, plain_current = plain_slice_rows(
            plain, truncated_log_density, plain_rng, current=plain_current, **options
        )
        np.testing.assert_array_equal(x, plain)
        np.testing.assert_array_equal(current, plain_current)
    assert fast_rng.random() == plain_rng.random()


@pytest.mark.parametrize("batch", [1, 4])
def test_elliptical_rows_draw_what_the_plain_sampler_draws(batch):
    rng = np.random.default_rng(3)
    n = 40
    x = np.column_stack([rng.uniform(0.4, 2.0, n), rng.normal(-1.0, 0.5, n)])
    mean = np.tile([1.0, -0.5], (n, 1))
    chol = np.broadcast_to(0.7 * np.eye(2), (n, 2, 2))

    def log_likelihood(points):
        return truncated_log_density(points) + 0.5 * (((points - mean) / 0.7) ** 2).sum(axis=-1)

    fast_rng, plain_rng = np.random.default_rng(4), np.random.default_rng(4)
    plain = x
    for _ in range(5):
        x, current = elliptical_slice_rows(x, log_likelihood, mean, chol, fast_rng, batch=batch)
        plain, plain_current = plain_elliptical_rows(
            plain, log_likelihood, mean, chol, plain_rng, batch=batch
        )
        np.testing.assert_array_equal(x, plain)
        np.testing.assert_array_equal(current, plain_current)
    assert fast_rng.random() == plain_rng.random()


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_alpha_log_density_of_a_point_does_not_depend_on_the_call(n_classes):
    """The α conditional (distinct-count marginal plus hyperprior, and the elliptical update's
    Gaussian term) gives each point the same value alone or among other points."""
    rng = np.random.default_rng(n_classes)
    k = n_classes
    counts = rng.integers(0, 12, size=(30, k, k)) * (rng.random((30, k, 1)) < 0.7)
    summary = CountRows(counts.astype(float))
    mean, precision = rng.normal(size=(k, k)), rng.normal(size=(k, k, k))
    points = rng.normal(size=(15, k, k))
    points[..., 0] = 2 * np.abs(points[..., 0]) - 0.3  # some below log s_min = 0

    def log_density(coords):
        with np.errstate(over="ignore", invalid="ignore"):
            value = summary.log_posterior(coords, 1.5, 1.0, 3.0)
        offset = coords - mean
        return value + 0.5 * np.einsum("...bd,bde,...be->...b", offset, precision, offset)

    together = log_density(points)
    for m in range(len(points)):
        np.testing.assert_array_equal(log_density(points[m : m + 1])[0], together[m])
        np.testing.assert_array_equal(log_density(points[m:])[0], together[m])
