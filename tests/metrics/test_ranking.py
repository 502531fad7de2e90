"""Ranking metrics against scikit-learn, scipy and brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import roc_auc_score

from crowdbayes.metrics import (
    kendall_tau,
    pairwise_accuracy,
    pairwise_auc,
    rankings_to_pairs,
    top_k_metric,
)

# ---------------------------------------------------------------------------- rankings_to_pairs


def test_full_ranking_gives_m_times_m_minus_one_ordered_pairs():
    rankings = pd.DataFrame({"query": ["q"] * 4, "item": list("abcd"), "rank": [2, 1, 4, 3]})
    pairs = rankings_to_pairs(rankings)
    assert len(pairs) == 4 * 3
    assert pairs["left_wins"].sum() == 6
    order = {"b": 1, "a": 2, "d": 3, "c": 4}
    for row in pairs.itertuples():
        assert row.left_wins == (order[row.left] < order[row.right])
    one_way = rankings_to_pairs(rankings, both_orders=False)
    assert len(one_way) == 6 and one_way["left_wins"].all()
    assert set(zip(one_way["left"], one_way["right"], strict=True)) == {
        (w, l) for w in order for l in order if order[w] < order[l]
    }


def test_top_choice_beats_unranked_alternatives_which_are_not_compared():
    rankings = pd.DataFrame(
        {
            "query": [1, 1, 1, 2, 2],
            "item": ["x", "y", "z", "x", "w"],
            "rank": [np.nan, 1, np.nan, 1, np.nan],
        }
    )
    pairs = rankings_to_pairs(rankings, both_orders=False)
    assert list(zip(pairs["query"], pairs["left"], pairs["right"], strict=True)) == [
        (1, "y", "x"),
        (1, "y", "z"),
        (2, "x", "w"),
    ]
    assert len(rankings_to_pairs(rankings)) == 6


def test_partial_ranking_pairs_match_brute_force():
    rng = np.random.default_rng(3)
    rows = []
    for q in range(20):
        m = int(rng.integers(2, 7))
        n_ranked = int(rng.integers(1, m + 1))
        ranks = [float(r) for r in rng.permutation(np.arange(1, n_ranked + 1))]
        ranks += [np.nan] * (m - n_ranked)
        for j, r in enumerate(rng.permutation(ranks)):
            rows.append((f"q{q}", f"i{q}-{j}", r))
    rankings = pd.DataFrame(rows, columns=["query", "item", "rank"])
    expected = set()
    for q, group in rankings.groupby("query"):
        for a, b in itertools.permutations(group.itertuples(index=False), 2):
            ra = np.inf if np.isnan(a.rank) else a.rank
            rb = np.inf if np.isnan(b.rank) else b.rank
            if ra != rb:
                expected.add((q, a.item, b.item, ra < rb))
    pairs = rankings_to_pairs(rankings)
    got = set(pairs.itertuples(index=False, name=None))
    assert got == expected and len(pairs) == len(expected)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame({"query": [1, 1], "item": ["a", "b"]}), "column 'rank' is missing"),
        (
            pd.DataFrame({"query": [1, 2, 2], "item": list("abc"), "rank": [1, 1, 2]}),
            "fewer than two items",
        ),
        (
            pd.DataFrame({"query": [1, 1, 1], "item": list("aab"), "rank": [1, 2, 3]}),
            "repeated within a query",
        ),
        (pd.DataFrame({"query": [1, 1, 1], "item": list("abc"), "rank": [1, 1, 2]}), "same rank"),
        (
            pd.DataFrame({"query": [1, 1], "item": list("ab"), "rank": [np.nan, np.nan]}),
            "no ranked item",
        ),
    ],
)
def test_rankings_to_pairs_bad_input(frame, message):
    with pytest.raises(ValueError, match=message):
        rankings_to_pairs(frame)


# ---------------------------------------------------------------------------- AUC and accuracy


def test_pairwise_auc_matches_sklearn_on_symmetrised_pairs():
    rng = np.random.default_rng(0)
    y = rng.random(300) < 0.6
    p = np.clip(0.5 + 0.3 * (y - 0.5) + 0.25 * rng.standard_normal(300), 0, 1)
    p[:40] = np.round(p[:40], 1)  # some tied scores
    both_y = np.concatenate([y, ~y])
    both_p = np.concatenate([p, 1 - p])
    assert pairwise_auc(y, p) == pytest.approx(roc_auc_score(both_y, both_p), abs=1e-12)
    assert pairwise_auc(y, p, symmetrize=False) == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    # both orientations given already: symmetrising again changes nothing (dyadic scores, so
    # that 1 - (1 - p) == p exactly and ties stay ties)
    q = np.round(p * 64) / 64
    both_q = np.concatenate([q, 1 - q])
    assert pairwise_auc(both_y, both_q) == pytest.approx(pairwise_auc(y, q), abs=1e-12)


def test_pairwise_auc_on_rankings_broken_into_pairs():
    rankings = pd.DataFrame({"query": [0] * 3, "item": list("abc"), "rank": [1, 2, 3]})
    pairs = rankings_to_pairs(rankings)
    score = {"a": 2.0, "b": 1.0, "c": 0.0}
    diff = pairs["left"].map(score) - pairs["right"].map(score)
    p = 1 / (1 + np.exp(-diff.to_numpy()))
    assert pairwise_auc(pairs["left_wins"], p) == 1.0
    assert pairwise_auc(pairs["left_wins"], 1 - p) == 0.0
    winners_only = rankings_to_pairs(rankings, both_orders=False)
    assert pairwise_auc(winners_only["left_wins"], np.full(3, 0.7)) == 1.0
    with pytest.raises(ValueError, match="both won and lost pairs"):
        pairwise_auc(winners_only["left_wins"], np.full(3, 0.7), symmetrize=False)


def test_pairwise_accuracy_counts_predicted_ties_as_half():
    y = np.array([1, 0, 1, 0, 1])
    p = np.array([0.9, 0.2, 0.4, 0.5, 0.5])
    assert pairwise_accuracy(y, p) == pytest.approx((1 + 1 + 0 + 0.5 + 0.5) / 5)
    # orientation does not matter
    assert pairwise_accuracy(1 - y, 1 - p) == pairwise_accuracy(y, p)
    assert pairwise_accuracy(y.astype(bool), p) == pairwise_accuracy(y, p)


@pytest.mark.parametrize("metric", [pairwise_auc, pairwise_accuracy])
def test_pair_metrics_bad_input(metric):
    with pytest.raises(ValueError, match="tie is not a binary outcome"):
        metric([1, 0, 0.5], [0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match="lengths must match"):
        metric([1, 0], [0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        metric([1, 0], [1.2, 0.3])
    with pytest.raises(ValueError, match="NaN"):
        metric([1, 0], [np.nan, 0.3])
    with pytest.raises(ValueError, match="empty"):
        metric([], [])
    with pytest.raises(TypeError, match="0/1 numbers"):
        metric(["a", "b"], [0.2, 0.3])


# ---------------------------------------------------------------------------- top-K


def _top_k_brute_force(left, right, y, p, k):
    """Eqs. 27-28 by naive loops and enumeration of all K-subsets; ties in Ŵ averaged."""
    items = sorted(set(left) | set(right))
    w, w_hat = {}, {}
    for i in items:
        wins, prob, count = 0.0, 0.0, 0
        for a, b, yy, pp in zip(left, right, y, p, strict=True):
            if i == a:
                wins, prob, count = wins + yy, prob + pp, count + 1
            elif i == b:
                wins, prob, count = wins + (1 - yy), prob + (1 - pp), count + 1
        w[i], w_hat[i] = wins / count, prob / count
    subsets = list(itertools.combinations(items, k))
    best_true = max(sum(w[i] for i in s) for s in subsets)
    best_hat = max(sum(w_hat[i] for i in s) for s in subsets)
    argmax = [
        s for s in subsets if np.isclose(sum(w_hat[i] for i in s), best_hat, rtol=0, atol=1e-12)
    ]
    return np.mean([sum(w[i] for i in s) for s in argmax]) / best_true


@pytest.mark.parametrize("seed", range(6))
def test_top_k_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n_items = int(rng.integers(4, 8))
    n_pairs = int(rng.integers(10, 40))
    a = rng.integers(0, n_items, n_pairs)
    b = (a + rng.integers(1, n_items, n_pairs)) % n_items
    left, right = [f"it{x}" for x in a], [f"it{x}" for x in b]
    y = rng.random(n_pairs) < 0.5
    p = rng.random(n_pairs)
    for k in range(1, len(set(left) | set(right)) + 1):
        assert top_k_metric(left, right, y, p, k) == pytest.approx(
            _top_k_brute_force(left, right, y.astype(float), p, k), abs=1e-12
        )


def test_top_k_ties_in_estimates_are_averaged():
    # a beats b, c beats d; every estimate 0.5, so all items tie in ŵ: w = (1, 0, 1, 0)
    left, right, y, p = ["a", "c"], ["b", "d"], [1, 1], [0.5, 0.5]
    assert top_k_metric(left, right, y, p, 1) == pytest.approx(0.5)
    assert top_k_metric(left, right, y, p, 2) == pytest.approx(0.5)
    assert top_k_metric(left, right, y, p, 4) == pytest.approx(1.0)
    assert top_k_metric(left, right, y, p, 2) == pytest.approx(
        _top_k_brute_force(left, right, y, p, 2)
    )


def test_top_k_perfect_and_both_orientations():
    left, right, y, p = ["a", "a", "b"], ["b", "c", "c"], [1, 1, 1], [0.9, 0.8, 0.7]
    assert top_k_metric(left, right, y, p, 1) == 1.0
    both = top_k_metric(left + right, right + left, y + [0, 0, 0], p + [0.1, 0.2, 0.3], 2)
    assert both == top_k_metric(left, right, y, p, 2)
    assert top_k_metric(left, right, y, [0.1, 0.2, 0.3], 1) == 0.0  # picks c, which never wins


def test_top_k_bad_input():
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 2\]"):
        top_k_metric(["a"], ["b"], [1], [0.6], 3)
    with pytest.raises(ValueError, match="k must be an integer"):
        top_k_metric(["a"], ["b"], [1], [0.6], 0)
    with pytest.raises(ValueError, match="compare an item with itself"):
        top_k_metric(["a"], ["a"], [1], [0.6], 1)
    with pytest.raises(ValueError, match="same length"):
        top_k_metric(["a", "b"], ["b"], [1], [0.6], 1)


# ---------------------------------------------------------------------------- Kendall τ


def _tau_b_brute_force(x, y):
    c = d = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if sx == 0 and sy == 0:
            continue
        if sx == 0:
            tx += 1
        elif sy == 0:
            ty += 1
        elif sx == sy:
            c += 1
        else:
            d += 1
    return (c - d) / np.sqrt((c + d + tx) * (c + d + ty))


@pytest.mark.parametrize("seed", range(4))
def test_kendall_tau_matches_scipy_and_brute_force(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, 40).astype(float)  # with ties
    y = x + rng.integers(-2, 3, 40)
    assert kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
    assert kendall_tau(x, y) == pytest.approx(_tau_b_brute_force(x, y), abs=1e-12)


def test_kendall_tau_aligns_series_by_id():
    a = pd.Series([3.0, 2.0, 1.0], index=["x", "y", "z"])
    b = pd.Series([1.0, 3.0, 2.0], index=["z", "x", "y"])
    assert kendall_tau(a, b) == 1.0
    assert kendall_tau(a, -b) == -1.0
    with pytest.raises(ValueError, match="different items: 1 only in a"):
        kendall_tau(a, b.rename({"z": "w"}))
    with pytest.raises(ValueError, match="is constant"):
        kendall_tau([1.0, 1.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="same length"):
        kendall_tau([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="NaN"):
        kendall_tau([1.0, np.nan], [1.0, 2.0])
