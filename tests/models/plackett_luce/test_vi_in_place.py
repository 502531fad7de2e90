"""PlackettLuceVI's in-place hot loop gives the same bits as the plain numpy expressions.

The per-member arithmetic of the MAXIMIZATION step and of the sets' statistics runs in the
design's work arrays and reduces equal-sized sets by columns (``vi._Scratch``,
``_stages.segment_sum(size=…)``); these tests hold it to the expressions it replaced (the
docstring formulas as plain numpy: fresh temporaries, ``np.repeat``, ``reduceat``) exactly.
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_expit

from crowdbayes import Rankings
from crowdbayes.models.plackett_luce import vi
from crowdbayes.models.plackett_luce._bounds import jj_lambda, jj_lambda_and_derivative
from crowdbayes.models.plackett_luce._stages import (
    column_size,
    segment_max,
    segment_min,
    segment_sum,
)
from crowdbayes.models.plackett_luce.item_effects import ItemEffectPrior


def _design(sizes, n_items: int = 40, seed: int = 0) -> vi._Design:
    """A design of top-1 choices from sets of the given ``sizes`` (3 features)."""
    rng = np.random.default_rng(seed)
    rows = []
    for query, size in enumerate(sizes):
        members = rng.choice(n_items, size, replace=False)
        rows += [(query, f"i{k}", 1.0 if j == 0 else np.nan) for j, k in enumerate(members)]
    table = pd.DataFrame(rows, columns=["query", "item", "rank"])
    items = pd.DataFrame(
        rng.normal(size=(n_items, 3)), index=[f"i{k}" for k in range(n_items)], columns=list("abc")
    )
    rankings = Rankings(table, items)
    return vi._Design.from_rankings(rankings, rankings.X, pairs_as_sets=True)


def _reference_derivatives(design, m_j, v_j, alpha):
    """F′(α), F″(α) of vi._newton as plain numpy (the formulas of its docstring)."""
    residual = m_j - np.repeat(alpha, design.set_sizes)
    xi = np.sqrt(v_j + residual**2)
    lam, lam_derivative = jj_lambda_and_derivative(xi)
    offsets = design.set_offsets
    gradient = (design.set_sizes - 2) / 2.0 + 2.0 * np.add.reduceat(lam * residual, offsets[:-1])
    terms = lam + lam_derivative * residual**2 / np.maximum(xi, 1e-300)
    return gradient, -2.0 * np.add.reduceat(terms, offsets[:-1])


def _reference_item_stats(design, xi, alpha):
    """vi.item_level_stats as plain numpy (the formulas of its docstring)."""
    n_items = design.X.shape[0]
    lam = jj_lambda(xi)
    per_member = np.repeat(alpha, design.set_sizes)
    weight = 2.0 * np.bincount(design.set_items, lam, minlength=n_items)
    shift = np.bincount(design.set_chosen, minlength=n_items) + np.bincount(
        design.set_items, 2.0 * lam * per_member - 0.5, minlength=n_items
    )
    member_terms = log_expit(xi) - xi / 2.0 + lam * (xi**2 - per_member**2)
    set_terms = (design.set_sizes - 2) * alpha / 2.0 + np.add.reduceat(
        member_terms, design.set_offsets[:-1]
    )
    return weight, shift, float(set_terms.sum())


@pytest.mark.parametrize("size", range(1, 9))
def test_column_reductions_equal_reduceat_to_the_bit(size):
    rng = np.random.default_rng(size)
    values = rng.normal(size=600 * size) * rng.choice([1e-8, 1e-3, 1.0, 7.0, 1e5], 600 * size)
    offsets = np.arange(0, len(values) + 1, size)
    assert column_size(offsets) == size
    for reduce, ufunc in ((segment_sum, np.add), (segment_max, np.maximum)):
        assert np.array_equal(reduce(values, offsets, size), ufunc.reduceat(values, offsets[:-1]))
    assert np.array_equal(
        segment_min(values, offsets, size), np.minimum.reduceat(values, offsets[:-1])
    )


def test_column_size_only_for_equal_sets_up_to_eight():
    assert column_size(np.array([0, 3, 5])) is None
    assert column_size(np.arange(0, 91, 9)) is None
    assert column_size(np.array([0])) is None
    assert column_size(np.arange(0, 41, 4)) == 4


@pytest.mark.parametrize("sizes", [[5] * 60, [2, 3, 4, 5, 6, 3] * 10, [9] * 20])
def test_derivatives_and_item_statistics_match_the_plain_expressions(sizes):
    design = _design(sizes)
    rng = np.random.default_rng(1)
    n_members = len(design.set_items)
    m_j = rng.normal(scale=2.0, size=n_members)
    v_j = rng.uniform(0.0, 1.5, n_members)
    alpha = rng.normal(size=len(sizes))
    for curvature in (True, False):
        got = vi._profiled_derivatives(design, m_j, v_j, alpha, curvature=curvature)
        want = _reference_derivatives(design, m_j, v_j, alpha)
        assert np.array_equal(got[0], want[0])
        assert (got[1] is None) if not curvature else np.array_equal(got[1], want[1])
    # the series branch of λ′ (ξ < 1e-3): a member with no variance and no residual
    v_j[0], m_j[0] = 0.0, alpha[0]
    got, want = (
        vi._profiled_derivatives(design, m_j, v_j, alpha),
        _reference_derivatives(design, m_j, v_j, alpha),
    )
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    xi = vi._xi_update(design, m_j, v_j, alpha)
    assert np.array_equal(xi, np.sqrt(v_j + (m_j - np.repeat(alpha, design.set_sizes)) ** 2))
    for bounds in (vi._Bounds(np.zeros(0), xi, alpha), vi._Bounds(np.zeros(0), xi + 0.5, alpha)):
        for _ in range(2):  # the second call reuses λ(ξ) and log σ(ξ) − ξ/2 of the same ξ
            stats = vi.item_level_stats(design, bounds)
            weight, shift, bound = _reference_item_stats(design, bounds.xi, bounds.alpha)
            assert np.array_equal(stats["weight"], weight)
            assert np.array_equal(stats["shift"], shift)
            assert stats["bound"] == bound


def test_item_effect_posterior_matches_the_plain_expressions():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 4))
    weight, shift = rng.uniform(0, 2, 50), rng.normal(size=50)
    prior = ItemEffectPrior(0.5, X)
    for sigma2 in (1e-4, 0.3, 4.0):  # the work array is reused across calls
        mean, cov, link, value, slope = prior.posterior(weight, shift, sigma2)
        scale = 1.0 / (1.0 + sigma2 * weight)
        precision = 0.5 * np.eye(4) + (X * (scale * weight)[:, None]).T @ X
        assert np.array_equal(cov, np.linalg.inv(precision))
        assert np.array_equal(mean, cov @ (X.T @ (scale * shift)))
        q = ((X @ cov) * X).sum(axis=1)
        want = 0.5 * np.sum(
            scale**2
            * ((shift - weight * (X @ mean)) ** 2 + weight**2 * q - weight - sigma2 * weight**2)
        )
        assert slope == float(sigma2 * want)


def test_a_pickled_design_leaves_its_work_arrays_behind_and_fits_alike():
    design = _design([4] * 30)
    rng = np.random.default_rng(2)
    mean, cov = rng.normal(size=3), np.eye(3) * 0.3
    _, first = vi.BoundPartition(design).step(mean, cov, vi._Inner())
    copy = pickle.loads(pickle.dumps(design))
    assert "scratch" in design.__dict__ and "scratch" not in copy.__dict__
    _, again = vi.BoundPartition(copy).step(mean, cov, vi._Inner())
    assert np.array_equal(first["precision"], again["precision"])
    assert first["bound"] == again["bound"]
