"""Which choice sets to show a Plackett–Luce model next (:mod:`crowdbayes.active.rankings`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from boundary_problem import untested_feature_problem
from choice_sets import sets_of, simulated
from crowdbayes import PlackettLuceMAP, PlackettLuceVI
from crowdbayes.active.rankings import (
    boundary_design,
    boundary_weight,
    choice_fisher_factors,
    choice_information,
    replay_choice_sets,
    suggest_sets,
    top_membership,
    utility_draws,
)


# ------------------------------------------------------------------------------ the maths
def test_information_gain_matches_quadrature():
    """Î = H(p̄) − E H(p(·|θ)) from Monte Carlo draws against a tensor Gauss–Hermite
    quadrature of both expectations (a brute-force integral) on a 3-item set, θ ∈ R²."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-0.5, 0.8]])
    mean, cov = np.array([0.3, -0.2]), np.array([[0.8, 0.3], [0.3, 0.5]])

    def probs(theta):  # (n, 2) -> (n, 3)
        u = theta @ X.T
        p = np.exp(u - u.max(axis=1, keepdims=True))
        return p / p.sum(axis=1, keepdims=True)

    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    z = np.stack(np.meshgrid(nodes, nodes, indexing="ij"), axis=-1).reshape(-1, 2)
    w = np.outer(weights, weights).ravel() / weights.sum() ** 2
    theta = mean + z @ np.linalg.cholesky(cov).T
    p = probs(theta)
    p_bar = w @ p
    exact = -(p_bar * np.log(p_bar)).sum() - w @ -(p * np.log(p)).sum(axis=1)

    rng = np.random.default_rng(1)
    draws = rng.multivariate_normal(mean, cov, size=200_000) @ X.T  # (S, 3)
    info, entropy, p_mc = choice_information(draws.T, np.array([0, 3]))
    assert exact > 0.05  # a case where the answer is worth something
    assert info[0] == pytest.approx(exact, abs=3e-3)
    assert entropy[0] == pytest.approx(-(p_bar * np.log(p_bar)).sum(), abs=3e-3)
    np.testing.assert_allclose(p_mc, p_bar, atol=3e-3)


def test_information_is_zero_without_uncertainty_and_for_equal_items():
    rng = np.random.default_rng(0)
    fixed = np.repeat(rng.normal(size=(4, 1)), 50, axis=1)  # every draw the same
    same = np.repeat(rng.normal(size=(1, 50)), 3, axis=0)  # three items, always equal
    info, entropy, _ = choice_information(np.vstack([fixed, same]), np.array([0, 4, 7]))
    np.testing.assert_allclose(info, 0.0, atol=1e-12)
    assert entropy[1] == pytest.approx(np.log(3))  # a known coin flip: uncertain, no info


def test_sets_of_different_sizes_are_valued_separately():
    rng = np.random.default_rng(2)
    draws = rng.normal(size=(5, 400)) * 2
    both, _, _ = choice_information(draws, np.array([0, 2, 5]))
    first, _, _ = choice_information(draws[:2], np.array([0, 2]))
    second, _, _ = choice_information(draws[2:], np.array([0, 3]))
    np.testing.assert_allclose(both, [first[0], second[0]])


def test_utility_draws_follow_the_feature_posterior():
    rankings, items = simulated()
    model = PlackettLuceVI(eta=1.0).fit(rankings, items=items)
    ids = pd.Index(["i0", "i5", "i7"])
    draws = utility_draws(model, ids, 20_000, 0, features=items)
    X = items.loc[ids].to_numpy()
    mean = X @ model.coef_.to_numpy()
    cov = X @ model.coef_cov_.to_numpy() @ X.T
    np.testing.assert_allclose(draws.mean(axis=1), mean, atol=0.03)
    np.testing.assert_allclose(np.cov(draws), cov, atol=0.03)


# ------------------------------------------------------------------------------ the choice
@pytest.fixture(scope="module")
def fitted():
    rankings, items = simulated()
    return PlackettLuceVI(eta=1.0).fit(rankings, items=items), rankings, items


def test_cold_start_shows_never_shown_items_first_and_spreads_a_batch(fitted):
    model, _, items = fitted
    new = pd.DataFrame(rng_features(3), columns=["a", "b"], index=["n0", "n1", "n2"])
    features = pd.concat([items, new])
    candidates = sets_of(
        [("old", "i0"), ("old", "i1"), ("old", "i2")]
        + [("a", "n0"), ("a", "i3")]
        + [("b", "n0"), ("b", "i4")]
        + [("c", "n1"), ("c", "n2"), ("c", "i5")]
        + [("d", "n1"), ("d", "i6")]
    )
    chosen = suggest_sets(model, candidates, 5, features=features, random_state=0)
    # c shows two new items; then one of a, b (n0), not d (n1 is covered by c); then the rest
    assert list(chosen.index[:2]) in (["c", "a"], ["c", "b"])
    assert list(chosen["new_items"]) == [2, 1, 0, 0, 0]
    # without coverage the order is the information gain's alone
    plain = suggest_sets(model, candidates, 5, features=features, coverage=False, random_state=0)
    assert plain["score"].is_monotonic_decreasing


def rng_features(n):
    return np.random.default_rng(7).normal(size=(n, 2))


def test_the_most_informative_set_comes_first_and_decided_sets_are_left_out(fitted):
    model, _, items = fitted
    candidates = sets_of([(f"s{k}", f"i{k + j}") for k in range(0, 24, 3) for j in range(3)])
    chosen = suggest_sets(model, candidates, 8, features=items, random_state=0)
    assert chosen["score"].is_monotonic_decreasing and (chosen["new_items"] == 0).all()
    sure = suggest_sets(model, candidates, 8, features=items, confidence=0.6, random_state=0)
    assert (sure["p_max"] < 0.6).all() and set(sure.index) < set(chosen.index)


def test_random_order_is_not_the_information_order(fitted):
    model, _, items = fitted
    candidates = sets_of([(f"s{k}", f"i{k + j}") for k in range(0, 27, 3) for j in range(3)])
    best = suggest_sets(model, candidates, 9, features=items, random_state=0)
    orders = {
        tuple(suggest_sets(model, candidates, 9, features=items, strategy="random",
                           random_state=seed).index)
        for seed in range(5)
    }  # fmt: skip
    assert len(orders) > 1 and tuple(best.index) not in orders


def test_the_choice_is_seeded(fitted):
    model, _, items = fitted
    candidates = sets_of([(f"s{k}", f"i{k + j}") for k in range(0, 27, 3) for j in range(3)])
    first = suggest_sets(model, candidates, 4, features=items, random_state=3)
    pd.testing.assert_frame_equal(
        first, suggest_sets(model, candidates, 4, features=items, random_state=3)
    )
    other = suggest_sets(model, candidates, 4, features=items, random_state=4)
    assert not np.allclose(first["score"], other.loc[first.index, "score"])  # other draws


def test_a_small_replay_reveals_sets_and_refits():
    rankings, items = simulated(n_sets=40)
    seen = []

    def score(model):
        seen.append(len(model.item_ids_))
        return float(model.coef_.iloc[0])

    record = replay_choice_sets(
        PlackettLuceVI(eta=1.0), rankings, items, start=5, batch=10, score=score,
        random_state=0,
    )  # fmt: skip
    assert list(record["n_sets"]) == [5, 15, 25, 35, 40]
    assert record["score"].iloc[-1] == pytest.approx(
        PlackettLuceVI(eta=1.0).fit(rankings, items=items).coef_.iloc[0]
    )
    again = replay_choice_sets(
        PlackettLuceVI(eta=1.0), rankings, items, start=5, batch=10, score=score,
        random_state=0,
    )  # fmt: skip
    pd.testing.assert_series_equal(record["score"], again["score"])


def test_a_replay_by_the_top_boundary_reveals_every_set_once():
    rankings, items = simulated(n_sets=30)
    record = replay_choice_sets(
        PlackettLuceVI(eta=1.0), rankings, items, start=5, batch=10, strategy="top", top_k=3,
        score=lambda model: float(model.coef_.iloc[0]), random_state=0,
    )  # fmt: skip
    assert list(record["n_sets"]) == [5, 15, 25, 30]
    assert record["score"].iloc[-1] == pytest.approx(
        PlackettLuceVI(eta=1.0).fit(rankings, items=items).coef_.iloc[0]
    )


# ------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize(
    "rows, message",
    [
        ([], "no choice set"),
        ([("s", "a")], "hold a single item"),
        ([("s", "a"), ("s", "a"), ("s", "b")], "lists item 'a' twice"),
        ([("s", None), ("s", "b")], "have no query or no item"),
    ],
)
def test_bad_candidates_are_refused(rows, message):
    with pytest.raises(ValueError, match=message):
        sets_of(rows)


def test_bad_requests_are_refused(fitted):
    model, rankings, items = fitted
    candidates = sets_of([("s", "i0"), ("s", "i1")])
    for n in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="n must be a positive integer"):
            suggest_sets(model, candidates, n, features=items)
    with pytest.raises(ValueError, match="strategy must be one of"):
        suggest_sets(model, candidates, 1, features=items, strategy="best")
    with pytest.raises(ValueError, match="have no row in the feature table"):
        suggest_sets(model, sets_of([("s", "i0"), ("s", "zz")]), 1, features=items)
    point = PlackettLuceMAP().fit(rankings, items=items)
    with pytest.raises(ValueError, match="point estimate"):
        suggest_sets(point, candidates, 1, features=items)


def test_a_sampled_model_without_features_uses_its_own_draws():
    from crowdbayes import PlackettLuceGibbs

    rankings, _ = simulated(n_items=8, n_sets=80)
    model = PlackettLuceGibbs(n_samples=200, n_jobs=1, random_state=0).fit(rankings)
    ids = pd.Index(["i1", "i4"])
    draws = utility_draws(model, ids, 4000, 0)
    np.testing.assert_allclose(
        draws.mean(axis=1), model.predict_utility(ids)["mean"].to_numpy(), atol=0.05
    )
    chosen = suggest_sets(model, sets_of([("s", "i1"), ("s", "i4"), ("t", "i2"), ("t", "i3")]), 2)
    assert len(chosen) == 2 and (chosen["score"] > 0).all()
    with pytest.raises(ValueError, match="were not in the fitted rankings"):
        suggest_sets(model, sets_of([("s", "i1"), ("s", "new")]), 1)


# ------------------------------------------------------------------------------ the top-k boundary
def test_top_membership_counts_the_draws_where_an_item_is_in_the_top_k():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(7, 300))
    brute = np.zeros(7)
    for column in draws.T:
        brute[np.argsort(-column)[:3]] += 1
    np.testing.assert_allclose(top_membership(draws, 3), brute / 300)
    assert top_membership(draws, 3).sum() == pytest.approx(3.0)
    with pytest.raises(ValueError, match="top_k must be between 1 and 6"):
        top_membership(draws, 7)


def test_boundary_weight_is_the_weighted_variance_of_utility_differences():
    """Σ_{i<j} w_i w_j Var(u_i − u_j) = (Σ w) tr(W Σ_θ) for u = Xθ, w_i = p_i(1 − p_i)."""
    rng = np.random.default_rng(1)
    X, p = rng.normal(size=(6, 3)), rng.uniform(size=6)
    A = rng.normal(size=(3, 3))
    cov = A @ A.T
    w = p * (1 - p)
    pairs = sum(
        w[i] * w[j] * (X[i] - X[j]) @ cov @ (X[i] - X[j]) for i in range(6) for j in range(i)
    )
    assert np.trace(boundary_weight(X, p) @ cov) * w.sum() == pytest.approx(pairs)
    assert not boundary_weight(X, np.ones(6)).any()  # nothing uncertain: nothing to learn


def test_fisher_factors_give_the_choice_information():
    """G_Aᵀ G_A = X_Aᵀ(diag p − p pᵀ)X_A, the Hessian of −log p(c | A, θ) (any c), for sets
    of different sizes."""
    rng = np.random.default_rng(2)
    X, theta = rng.normal(size=(5, 2)), rng.normal(size=2)
    sets = sets_of([("s", "a"), ("s", "b"), ("s", "c"), ("t", "d"), ("t", "e")])
    G = choice_fisher_factors(X, sets, theta)
    for k, members in enumerate(([0, 1, 2], [3, 4])):
        XA = X[members]
        p = np.exp(XA @ theta) / np.exp(XA @ theta).sum()
        np.testing.assert_allclose(G[k].T @ G[k], XA.T @ (np.diag(p) - np.outer(p, p)) @ XA)


def test_boundary_design_gains_are_the_falls_of_the_weighted_variance():
    """Each greedy step's gain is tr(W Σ) − tr(W (Σ⁻¹ + G_Aᵀ G_A)⁻¹), the best available."""
    rng = np.random.default_rng(3)
    G = rng.normal(size=(12, 3, 4))
    cov, weight = np.eye(4) * 2.0, np.diag([3.0, 1.0, 0.0, 0.0])
    picked, gains = boundary_design(G, cov, weight, 3)
    C = cov
    for k, a in enumerate(picked):
        after = [np.linalg.inv(np.linalg.inv(C) + g.T @ g) for g in G]
        falls = np.array([np.trace(weight @ (C - c)) for c in after])
        falls[picked[:k]] = -np.inf
        assert a == np.argmax(falls) and gains[k] == pytest.approx(falls[a])
        C = after[a]
    assert len(set(picked)) == 3


def test_top_strategy_asks_about_the_items_near_the_boundary():
    """Three features; the top items differ only in the second, which no fitted set has
    varied. The set that varies it is asked first by ``top``."""
    model, rankings, items = untested_feature_problem(third_feature=True)
    candidates = sets_of(
        [("b-varies", "i4"), ("b-varies", "i5")]
        + [(f"c{k}", f"i{6 + 2 * k}") for k in range(5)]
        + [(f"c{k}", f"i{7 + 2 * k}") for k in range(5)]
    )
    chosen = suggest_sets(
        model, candidates, 3, features=items, strategy="top", top_k=2, random_state=0
    )
    assert chosen.index[0] == "b-varies" and chosen["score"].iloc[0] > chosen["score"].iloc[1]
    unknown = sets_of([("s", "i0"), ("s", "zz")])
    with pytest.raises(ValueError, match="have no row in the feature table"):
        suggest_sets(model, unknown, 1, features=items, strategy="top")
    with pytest.raises(ValueError, match="strategy 'top' needs a posterior over feature"):
        suggest_sets(PlackettLuceMAP().fit(rankings, items=items), candidates, 1,
                     features=items, strategy="top")  # fmt: skip
