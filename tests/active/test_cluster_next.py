"""``suggest_links``: the information of a link question against brute-force enumeration,
coverage at a cold start, the batch cap, seeded reproducibility and refusals."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes.active.links import (
    capped_batch,
    link_information,
    link_posterior,
    same_cluster_probability,
    suggest_links,
)
from crowdbayes.data.links import Links
from crowdbayes.datasets.clustering import simulate_pair_links
from crowdbayes.models.clustering import LinkClustering


def entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def brute_force_gain(q_i, q_j, alpha, beta) -> float:
    """``H(z_i, z_j) − E_y H(z_i, z_j | y)`` by enumerating every ``(z_i, z_j, y)``."""
    k = len(q_i)
    prior = np.outer(q_i, q_j)
    gain = entropy(prior.ravel())
    for y in (0, 1):
        like = np.empty((k, k))
        for a, b in itertools.product(range(k), range(k)):
            p_must = alpha if a == b else 1 - beta
            like[a, b] = p_must if y == 1 else 1 - p_must
        joint = prior * like
        p_y = joint.sum()
        gain -= p_y * entropy((joint / p_y).ravel())
    return gain


@pytest.fixture(scope="module")
def fitted():
    truth = pd.Series(np.repeat(np.arange(3), 10), index=[f"i{n}" for n in range(30)])
    sim = simulate_pair_links(
        truth, n_workers=3, pairs_per_worker=40, alpha=0.9, beta=0.85, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        links = Links(sim.links)
        model = LinkClustering(n_clusters=4, n_init=1, random_state=0).fit(links)
    # an informative posterior that has not decided everything (not collapsed to one cluster)
    assert model.n_clusters_used_ >= 3
    return model, links, truth


def test_information_equals_brute_force_enumeration():
    rng = np.random.default_rng(0)
    for _ in range(20):
        k = rng.integers(2, 5)
        q_i, q_j = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        alpha, beta = rng.uniform(0.55, 0.99, 2)
        same = same_cluster_probability(q_i[None], q_j[None])
        got = link_information(same, alpha, beta)[0]
        assert got == pytest.approx(brute_force_gain(q_i, q_j, alpha, beta), abs=1e-12)


def test_scores_are_the_information_under_the_fitted_posterior(fitted):
    model, links, _ = fitted
    pairs = suggest_links(model, links, 8, random_state=0)
    proba = model.predict_proba()
    workers = model.workers_
    alpha = np.average(workers["alpha"], weights=workers["n_links"])
    beta = np.average(workers["beta"], weights=workers["n_links"])
    for row in pairs.itertuples():
        q_i, q_j = proba.loc[row.left].to_numpy(), proba.loc[row.right].to_numpy()
        assert row.score == pytest.approx(brute_force_gain(q_i, q_j, alpha, beta), abs=1e-9)
        assert row.p_same == pytest.approx(q_i @ q_j)
    # best first, and no better pair left out: the top score is the best of every pair
    assert np.all(np.diff(pairs["score"].to_numpy()) <= 1e-12)
    every = suggest_links(model, links, 435, per_item=30, random_state=0)
    assert len(every) == 435  # C(30, 2)
    assert every["score"].max() > 10 * every["score"].median()  # the posterior tells pairs apart
    assert pairs["score"].iloc[0] == pytest.approx(every["score"].max())


def test_each_item_at_most_per_item_times_in_a_batch(fitted):
    model, links, _ = fitted
    pairs = suggest_links(model, links, 15, random_state=1)
    counts = pd.concat([pairs["left"], pairs["right"]]).value_counts()
    assert len(pairs) == 15 and counts.max() == 1
    twice = suggest_links(model, links, 25, per_item=2, random_state=1)
    assert pd.concat([twice["left"], twice["right"]]).value_counts().max() <= 2
    # the cap rises when it leaves fewer than n: 20 pairs of 30 items need some item twice
    more = suggest_links(model, links, 20, random_state=1)
    assert len(more) == 20
    assert pd.concat([more["left"], more["right"]]).value_counts().max() == 2


def test_capped_batch_keeps_rank_order_and_raises_the_cap():
    left, right = np.array([0, 0, 1, 2, 0]), np.array([1, 2, 2, 3, 3])
    assert capped_batch(left, right, 2, 1, 4).tolist() == [0, 3]
    assert capped_batch(left, right, 3, 1, 4).tolist() == [0, 1, 3]
    assert capped_batch(left, right, 9, 1, 4).tolist() == [0, 1, 2, 3, 4]


def test_cold_start_covers_unlinked_items_first(fitted):
    model, links, _ = fitted
    new = [f"new{n}" for n in range(6)]
    known = list(links.item_ids[:6])
    candidates = pd.DataFrame(
        list(itertools.combinations(known, 2)) + list(itertools.product(new, known)),
        columns=["left", "right"],
    )
    candidates = pd.concat(
        [candidates, pd.DataFrame(list(itertools.combinations(new, 2)), columns=["left", "right"])]
    )
    pairs = suggest_links(model, links, 6, candidates=candidates, items=new, random_state=0)
    # three pairs of two new items cover the six, then pairs with one new item at cap 2
    assert pairs["unlinked"].tolist()[:3] == [2, 2, 2]
    assert set(pairs.iloc[:3][["left", "right"]].to_numpy().ravel()) == set(new)
    # a new item has the prior predictive q(z): the mean of the fitted q(z)
    posterior = link_posterior(model, links, new)
    prior = model.predict_proba().to_numpy().mean(axis=0)
    np.testing.assert_allclose(posterior.probas[posterior.item_ids.get_loc("new0")], prior)
    assert posterior.links_per_item[posterior.item_ids.get_indexer(new)].sum() == 0


def test_seeded_reproducibility_and_the_sampled_pool(fitted):
    model, links, _ = fitted
    first = suggest_links(model, links, 5, max_candidates=50, random_state=3)
    again = suggest_links(model, links, 5, max_candidates=50, random_state=3)
    pd.testing.assert_frame_equal(first, again)
    other = [suggest_links(model, links, 5, max_candidates=50, random_state=s) for s in range(4)]
    assert any(not o.equals(first) for o in other)  # the sample of 50 of 435 pairs differs


def test_confidence_leaves_decided_pairs_out(fitted):
    model, links, _ = fitted
    pairs = suggest_links(model, links, 435, per_item=30, confidence=0.9, random_state=0)
    assert np.all(np.maximum(pairs["p_same"], 1 - pairs["p_same"]) < 0.9)
    assert len(pairs) < 435


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0}, "n must be a positive integer"),
        ({"n": 2, "per_item": 0}, "per_item must be a positive integer"),
        ({"n": 2, "confidence": 0.3}, r"confidence must lie in \(0.5, 1\)"),
        (
            {"n": 2, "candidates": pd.DataFrame({"left": ["i0"], "right": ["zz"]})},
            r"1 item\(s\) unknown.*'zz'",
        ),
        (
            {"n": 2, "candidates": pd.DataFrame({"left": ["i0"], "right": ["i0"]})},
            "pair an item with itself",
        ),
        ({"n": 2, "candidates": pd.DataFrame({"left": ["i0"]})}, r"\['right'\] missing"),
    ],
)
def test_refusals(fitted, kwargs, message):
    model, links, _ = fitted
    n = kwargs.pop("n")
    with pytest.raises(ValueError, match=message):
        suggest_links(model, links, n, **kwargs)
