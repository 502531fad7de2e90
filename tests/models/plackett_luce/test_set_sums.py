"""The sums of the feature-less Plackett–Luce algorithms: the compiled pair kernel against numpy,
the remembered totals, and the pair fast path of ``Rankings.from_pairs``."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes import PlackettLuceMM, Rankings
from crowdbayes.data._codes import factorize_first_seen, first_seen
from crowdbayes.models.plackett_luce import _set_sums
from crowdbayes.models.plackett_luce._set_sums import SetSums, kernel_available

needs_kernel = pytest.mark.skipif(not kernel_available(), reason="pair kernel not built")


def _pairs(n_items=40, n_pairs=3000, seed=0):
    rng = np.random.default_rng(seed)
    left = rng.integers(0, n_items, n_pairs)
    right = (left + rng.integers(1, n_items, n_pairs)) % n_items
    strength = rng.normal(size=n_items)
    left_wins = rng.random(n_pairs) < 1 / (1 + np.exp(strength[right] - strength[left]))
    label = np.where(left_wins, left, right)
    return pd.DataFrame({"left": left, "right": right, "label": label})


def _direct_sums(rankings, log_s):
    """The MM denominator and Σ log T by a plain loop over the top-queries."""
    s = np.exp(log_s)
    den, log_total = np.zeros(rankings.n_items), 0.0
    for lo, hi in zip(rankings.stage_offsets[:-1], rankings.stage_offsets[1:], strict=True):
        members = rankings.stage_items[lo:hi]
        total = s[members].sum()
        den[members] += 1.0 / total
        log_total += np.log(total)
    return den, log_total


@pytest.mark.parametrize("use_kernel", [False, pytest.param(True, marks=needs_kernel)])
@pytest.mark.parametrize("kind", ["pairs", "sets"])
def test_mm_sums_match_a_direct_loop(use_kernel, kind):
    if kind == "pairs":
        rankings = Rankings.from_pairs(_pairs(n_pairs=500))
    else:
        rankings = Rankings(
            pd.DataFrame(
                {
                    "query": [0, 0, 0, 1, 1, 2, 2, 2, 2],
                    "item": ["a", "b", "c", "a", "d", "b", "c", "d", "e"],
                    "rank": [1, 2, np.nan, 1, np.nan, 2, 1, 3, np.nan],
                }
            )
        )
    sums = SetSums(rankings, use_kernel=use_kernel)
    log_s = np.random.default_rng(3).normal(size=rankings.n_items)
    den, log_total = _direct_sums(rankings, log_s)
    np.testing.assert_allclose(sums.inverse_totals_per_item(log_s), den, rtol=1e-13)
    assert sums.log_totals(log_s) == pytest.approx(log_total, rel=1e-13)
    # now from the remembered totals
    np.testing.assert_allclose(sums.inverse_totals_per_item(log_s), den, rtol=1e-13)


def test_totals_are_remembered_for_the_last_two_points_only():
    sums = SetSums(Rankings.from_pairs(_pairs(n_pairs=200)), use_kernel=False)
    points = [np.full(sums.n_items, float(k)) for k in range(3)]
    for point in points:
        sums.log_totals(point)
    assert sums._recall(points[0]) is None
    assert sums._recall(points[1]) is not None and sums._recall(points[2]) is not None
    # an equal array that is not the same object is not taken for it
    assert sums._recall(points[2].copy()) is None


@needs_kernel
def test_kernel_log_totals_survive_extreme_scores():
    """The product of the totals is renormalised: no overflow or underflow over many pairs."""
    rankings = Rankings.from_pairs(_pairs(n_items=6, n_pairs=5000))
    log_s = np.array([300.0, 290.0, -300.0, -310.0, 0.0, 5.0])
    log_s -= log_s.mean()
    _, expected = _direct_sums(rankings, log_s)
    assert SetSums(rankings).log_totals(log_s) == pytest.approx(expected, rel=1e-12)


@needs_kernel
def test_mm_fit_is_the_same_with_and_without_the_kernel(monkeypatch):
    rankings = Rankings.from_pairs(_pairs(n_items=60, n_pairs=6000, seed=4))
    with_kernel = PlackettLuceMM().fit(rankings)
    monkeypatch.setattr(_set_sums, "_kernel", None)
    without = PlackettLuceMM().fit(rankings)
    np.testing.assert_allclose(with_kernel.log_scores_, without.log_scores_, atol=1e-9)
    assert abs(with_kernel.n_iter_ - without.n_iter_) <= 2


@pytest.mark.parametrize(
    "values",
    [
        np.array([5, 3, 5, 9, 3, 0, 7]),
        np.array([-4, 10, -4, 2]),
        np.array([10**15, 3, 10**15]),  # too wide a range: hashed
        np.array([2.5, 1.0, 2.5]),  # not integers: hashed
        np.array(["b", "a", "b"], dtype=object),
        np.array([], dtype=np.int64),
    ],
)
def test_factorize_first_seen_is_pandas_factorize(values):
    codes, uniques = factorize_first_seen(values)
    expected_codes, expected_uniques = pd.factorize(values, sort=False)
    np.testing.assert_array_equal(codes, expected_codes)
    np.testing.assert_array_equal(uniques, expected_uniques)
    assert codes.dtype == np.int64


def test_first_seen_over_parts_is_that_of_their_concatenation():
    rng = np.random.default_rng(5)
    parts = [rng.integers(-50, 50, size) for size in (70_000, 0, 100_000)]  # several chunks
    seen = first_seen(parts)
    expected_codes, expected_uniques = pd.factorize(np.concatenate(parts), sort=False)
    np.testing.assert_array_equal(seen.uniques, expected_uniques)
    np.testing.assert_array_equal(seen.codes(np.concatenate(parts)), expected_codes)
    assert first_seen([np.array([1.0, 2.0])]) is None
    assert first_seen([np.array([], dtype=np.int64)]) is None


def test_from_pairs_builds_what_the_long_table_builds():
    """The pair fast path gives the containers ``Rankings`` builds from the long table."""
    for frame in (
        _pairs(),
        _pairs().astype(str),
        _pairs().assign(worker=lambda d: (d.left % 3).map({0: " w0", 1: "w1", 2: "w2"})),
    ):
        fast, fast_warned = _built(Rankings.from_pairs, frame)
        left_wins = frame.label.astype(str) == frame.left.astype(str)
        winner = np.where(left_wins, frame.left, frame.right)
        loser = np.where(left_wins, frame.right, frame.left)
        n = len(frame)
        long = pd.DataFrame(
            {
                "query": np.r_[np.arange(n), np.arange(n)],
                "item": np.r_[winner, loser],
                "rank": np.r_[np.ones(n), np.full(n, 2.0)],
            }
        )
        if "worker" in frame:
            long["worker"] = np.r_[frame.worker.to_numpy(), frame.worker.to_numpy()]
        slow, slow_warned = _built(Rankings, long)
        assert fast_warned == slow_warned
        for name in ("query_ids", "item_ids", "worker_ids"):
            pd.testing.assert_index_equal(getattr(fast, name), getattr(slow, name), exact=True)
        for name in (
            "stage_items",
            "stage_offsets",
            "stage_query",
            "query_sizes",
            "query_n_ranked",
            "query_worker",
            "chosen",
            "stage_sizes",
        ):
            np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name))
        assert fast.only_pairs and slow.only_pairs
        assert [c.kind for c in fast.data_checks] == [c.kind for c in slow.data_checks]


def _built(build, frame):
    """What ``build(frame)`` returns, and the messages it warned."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        return build(frame), [str(w.message) for w in caught]
