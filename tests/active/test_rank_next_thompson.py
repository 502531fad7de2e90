"""Top-two Thompson sampling of the top-k set (``strategy="thompson"``,
:mod:`crowdbayes.active.rankings`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from boundary_problem import untested_feature_problem
from crowdbayes import PlackettLuceMAP
from crowdbayes.active.rankings import (
    ChoiceSets,
    boundary_design,
    contested_weights,
    suggest_sets,
)


def test_contested_weights_contrast_the_two_drawn_top_sets():
    """k = 2 of 4 items: the draws put {0, 1} or {0, 2} on top, so every slot contrasts items
    1 and 2 (W = d dᵀ, d = x₁ − x₂); with every draw agreeing, the weight is the top-k
    boundary's, zero."""
    X = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.5]])
    u_a, u_b = [3.0, 2.0, 1.0, 0.0], [3.0, 1.0, 2.0, 0.0]
    draws = np.array([u_a, u_b] * 5).T  # items × 10 draws
    rng = np.random.default_rng(0)
    weights = contested_weights(draws, X, 2, 6, rng)
    d = X[1] - X[2]
    np.testing.assert_allclose(weights, np.broadcast_to(np.outer(d, d), (6, 3, 3)))
    agreeing = np.array([u_a] * 10).T
    np.testing.assert_allclose(contested_weights(agreeing, X, 2, 3, rng), 0.0)
    with pytest.raises(ValueError, match="top_k must be between 1 and 3"):
        contested_weights(draws, X, 4, 1, rng)


def test_contested_weights_average_over_every_contested_pair():
    """Top sets {0, 1} and {2, 3} (k = 2): W is the mean of the four (x_i − x_j)(x_i − x_j)ᵀ."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 2))
    draws = np.array([[5.0, 4.0, 1.0, 0.0, -1.0], [1.0, 0.0, 5.0, 4.0, -1.0]]).T
    weights = contested_weights(draws, X, 2, 4, rng)
    diffs = [X[i] - X[j] for i in (0, 1) for j in (2, 3)]
    expected = sum(np.outer(d, d) for d in diffs) / 4
    np.testing.assert_allclose(weights, np.broadcast_to(expected, (4, 2, 2)))


def test_boundary_design_takes_one_weight_per_slot():
    """A stack of equal weights is the single weight; different weights steer each slot."""
    rng = np.random.default_rng(2)
    G = rng.normal(size=(10, 3, 2))
    cov, first, second = np.eye(2), np.diag([1.0, 0.0]), np.diag([0.0, 1.0])
    single = boundary_design(G, cov, first, 3)
    stacked = boundary_design(G, cov, np.stack([first] * 3), 3)
    np.testing.assert_array_equal(single[0], stacked[0])
    np.testing.assert_allclose(single[1], stacked[1])
    picked, _ = boundary_design(G, cov, np.stack([second, first]), 2)
    alone, _ = boundary_design(G, cov, second, 1)
    assert picked[0] == alone[0]


@pytest.fixture(scope="module")
def contested():
    """Two features (``untested_feature_problem``); candidates: five pairs varying ``a`` and
    one pair varying ``b``."""
    model, rankings, items = untested_feature_problem(third_feature=False)
    pairs = [(f"c{k}", f"i{6 + 2 * k + j}") for k in range(5) for j in range(2)]
    pairs += [("b-varies", "i4"), ("b-varies", "i5")]  # last: not first by accident
    candidates = ChoiceSets.from_table(
        pd.DataFrame(pairs, columns=["query", "item"]), set_column="query", item_column="item"
    )
    return model, rankings, items, candidates


def thompson(contested, n, seed, **options):
    model, _, items, candidates = contested
    return suggest_sets(
        model,
        candidates,
        n,
        features=items,
        strategy="thompson",
        top_k=2,
        coverage=False,  # b-varies shows items never fitted: coverage alone would put it first
        random_state=seed,
        **options,
    )


def test_thompson_asks_the_set_that_separates_the_contested_items(contested):
    """The set contrasting ``b`` is asked first; the choice is seeded; a point estimate is
    refused."""
    for seed in range(3):
        chosen = thompson(contested, 3, seed)
        assert chosen.index[0] == "b-varies"
        assert chosen["score"].iloc[0] > chosen["score"].iloc[1:].max()
    pd.testing.assert_frame_equal(chosen, thompson(contested, 3, 2))
    _, rankings, items, candidates = contested
    with pytest.raises(ValueError, match="strategy 'thompson' needs a posterior over feature"):
        suggest_sets(
            PlackettLuceMAP().fit(rankings, items=items),
            candidates,
            1,
            features=items,
            strategy="thompson",
        )


def test_explore_draws_a_share_of_the_batch_uniformly(contested):
    """explore = ε: (1 − ε)n sets by the design (positive fall of tr(W Σ)), then εn drawn
    uniformly from the rest (score 0, different draws for different seeds)."""
    half = thompson(contested, 4, 0, explore=0.5)
    assert half.index[0] == "b-varies" and (half["score"].iloc[:2] > 0).all()
    np.testing.assert_array_equal(half["score"].iloc[2:], 0.0)
    drawn = {tuple(sorted(thompson(contested, 4, s, explore=1.0).index)) for s in range(8)}
    assert len(drawn) > 1
    assert all((thompson(contested, 4, s, explore=1.0)["score"] == 0).all() for s in range(3))
    with pytest.raises(ValueError, match="explore must be between 0 and 1; got 1.5"):
        thompson(contested, 4, 0, explore=1.5)
