"""Bradley–Terry with Davidson ties and unreliable workers (crowdbayes.models.comparisons)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy.stats import spearmanr

from crowdbayes import Comparisons
from crowdbayes.models.comparisons import (
    BradleyTerry,
    CrowdBT,
    bradley_terry,
    simulate_crowd_comparisons,
)
from crowdbayes.models.comparisons._davidson import outcome_log_probs, weighted_terms
from crowdbayes.models.comparisons.bradley_terry import (
    TIE_PRIOR_MEAN,
    TIE_PRIOR_SD,
    _Design,
    _observed_weights,
    _ScoreProblem,
)


# ------------------------------------------------------------------------------ the likelihood
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


def _tiny_table():
    return pd.DataFrame(
        {
            "worker": ["u", "v", "u", "v", "u", "v", "u"],
            "left": ["a", "b", "c", "a", "b", "c", "a"],
            "right": ["b", "c", "a", "c", "a", "b", "b"],
            "label": ["a", "b", "equal", "a", "a", "equal", "b"],
        }
    )


@pytest.mark.parametrize("tie_model", ["davidson", "none"])
def test_newton_mode_matches_a_generic_optimiser(tie_model):
    table = _tiny_table()
    if tie_model == "none":
        table = table[table.label != "equal"]
    data = Comparisons(table)
    design = _Design.of(data)
    fit_theta = tie_model == "davidson"
    model = BradleyTerry(tie_model=tie_model, prior_scale=1.5, tol=1e-12).fit(data)
    weights = _observed_weights(design, np.ones(len(design.outcome)), flip=False)
    problem = _ScoreProblem(design, 1.5**2, fit_theta)

    def negative(x):
        theta = x[-1] if fit_theta else -np.inf
        return -problem.value(x[: data.n_items], theta, weights)

    start = np.zeros(data.n_items + fit_theta)
    best = optimize.minimize(negative, start, method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(model.utility_["mean"].to_numpy(), best.x[:3], atol=1e-5)
    if fit_theta:
        assert np.log(model.tie_strength_) == pytest.approx(best.x[-1], abs=1e-5)
        # the tie prior is part of the objective
        assert TIE_PRIOR_SD > 0 and np.isfinite(TIE_PRIOR_MEAN)
    history = model.objective_history_
    assert np.all(np.diff(history) >= -1e-12 * abs(history[-1]))
    assert model.objective_history_[-1] == pytest.approx(-best.fun, abs=1e-8)


def test_laplace_variances_are_the_inverse_hessian_diagonal():
    data = Comparisons(_tiny_table())
    model = BradleyTerry(prior_scale=1.0, tol=1e-12).fit(data)
    design = _Design.of(data)
    problem = _ScoreProblem(design, 1.0, True)
    s = model.utility_["mean"].to_numpy()
    theta = np.log(model.tie_strength_)
    weights = _observed_weights(design, np.ones(len(design.outcome)), flip=False)

    def negative(x):
        return -problem.value(x[:3], x[3], weights)

    x0, h = np.append(s, theta), 1e-4
    hessian = np.empty((4, 4))
    for i, j in itertools.product(range(4), repeat=2):
        e_i, e_j = np.eye(4)[i] * h, np.eye(4)[j] * h
        hessian[i, j] = (
            negative(x0 + e_i + e_j)
            - negative(x0 + e_i - e_j)
            - negative(x0 - e_i + e_j)
            + negative(x0 - e_i - e_j)
        ) / (4 * h * h)
    expected = np.diag(np.linalg.inv(hessian))[:3]
    np.testing.assert_allclose(model.utility_["sd"].to_numpy() ** 2, expected, rtol=1e-4)


# ------------------------------------------------------------------------------ recovery
def _random_problem(n_items=300, n_comparisons=3000, seed=0):
    """A random comparison graph with ties, the shape on which sparse LU fills in."""
    rng = np.random.default_rng(seed)
    left = rng.integers(0, n_items, n_comparisons)
    right = (left + rng.integers(1, n_items, n_comparisons)) % n_items
    s = rng.normal(size=n_items)
    won = rng.random(n_comparisons) < 1 / (1 + np.exp(-(s[left] - s[right])))
    tie = rng.random(n_comparisons) < 0.15
    names = np.array([f"i{k}" for k in range(n_items)])
    label = np.where(tie, "equal", np.where(won, names[left], names[right]))
    table = pd.DataFrame({"worker": "w", "left": names[left], "right": names[right]})
    data = Comparisons(table.assign(label=label))
    design = _Design.of(data)
    problem = _ScoreProblem(design, 1.5**2, True)
    weights = _observed_weights(design, np.ones(len(design.outcome)), flip=False)
    return problem, rng.normal(size=n_items), -0.5, weights


def test_newton_systems_by_conjugate_gradients_match_a_direct_solve():
    problem, s, theta, weights = _random_problem()
    grad, matrix = problem.hessian(s, theta, weights)
    step = bradley_terry._solve_positive_definite(matrix, grad)
    np.testing.assert_allclose(step, np.linalg.solve(matrix.toarray(), grad), rtol=1e-8, atol=1e-10)


def test_dense_and_sparse_variance_paths_agree(monkeypatch):
    problem, s, theta, weights = _random_problem()
    dense = problem.variances(s, theta, weights)
    monkeypatch.setattr(bradley_terry, "_DENSE_VARIANCE_LIMIT", 0)
    sparse = problem.variances(s, theta, weights)
    _, matrix = problem.hessian(s, theta, weights)
    exact = np.diag(np.linalg.inv(matrix.toarray()))[: len(s)]
    np.testing.assert_allclose(dense, exact, rtol=1e-10)
    np.testing.assert_allclose(sparse, exact, rtol=1e-10)


def test_crowd_bt_objective_never_decreases_and_finds_the_planted_spammer():
    reliability = np.full(12, 0.9)
    reliability[3] = 0.0  # answers at random
    sim = simulate_crowd_comparisons(
        30, 12, 150, reliability=reliability, tie_strength=0.3, random_state=1
    )
    for noise in ("random", "flip"):
        model = CrowdBT(noise=noise).fit(sim.comparisons)
        history = model.objective_history_
        assert np.all(np.diff(history) >= -1e-9 * abs(history[-1])), noise
        table = model.reliability_
        assert table["mean"].idxmin() == "w3", noise
        others = table.drop(index="w3")
        # the spammer's interval lies below every other worker's
        assert table.loc["w3", "upper"] < others["lower"].min(), noise
        faithful = pd.Series(model.faithful_proba_).groupby(sim.comparisons.worker).mean()
        assert faithful.idxmin() == "w3"
    random_model = CrowdBT(noise="random").fit(sim.comparisons)
    assert random_model.reliability_.loc["w3", "mean"] < 0.25
    assert (random_model.reliability_.drop(index="w3")["mean"] > 0.7).all()


def test_random_noise_model_ranks_workers_by_reliability():
    rhos, errors = [], []
    for seed in range(3):
        reliability = np.random.default_rng(seed).uniform(0.3, 1.0, 15)
        sim = simulate_crowd_comparisons(
            30, 15, 150, reliability=reliability, tie_strength=0.3, random_state=seed
        )
        table = CrowdBT(noise="random").fit(sim.comparisons).reliability_
        estimate = table["mean"].reindex(sim.reliability.index)
        rhos.append(spearmanr(estimate, sim.reliability)[0])
        errors.append(float((estimate - sim.reliability).abs().mean()))
    # measured: Spearman 0.94, 0.85, 0.62; mean absolute error 0.08, 0.09, 0.13
    assert np.mean(rhos) > 0.7 and min(rhos) > 0.5, rhos
    assert max(errors) < 0.16, errors


def test_a_spammer_hurts_plain_bradley_terry_more_than_crowd_bt():
    reliability = np.array([0.95, 0.95, 0.95, 0.0, 0.0, 0.0])
    rhos = {"plain": [], "crowd": []}
    for seed in range(3):
        sim = simulate_crowd_comparisons(40, 6, 300, reliability=reliability, random_state=seed)
        truth = sim.scores
        plain = BradleyTerry().fit(sim.comparisons).utility_["mean"].reindex(truth.index)
        crowd = CrowdBT().fit(sim.comparisons).utility_["mean"].reindex(truth.index)
        rhos["plain"].append(spearmanr(plain, truth)[0])
        rhos["crowd"].append(spearmanr(crowd, truth)[0])
    assert np.mean(rhos["crowd"]) > np.mean(rhos["plain"]) + 0.01, rhos
    assert np.mean(rhos["crowd"]) > 0.9, rhos


def test_score_intervals_cover_the_truth_at_about_their_level():
    hits, total = 0, 0
    for seed in range(8):
        sim = simulate_crowd_comparisons(25, 5, 120, random_state=10 + seed, tie_strength=0.2)
        model = CrowdBT(prior_scale=1.0, credible_level=0.9).fit(sim.comparisons)
        table = model.utility_.reindex(sim.scores.index)
        # the scores are identified up to a shift: compare centred values
        shift = table["mean"].mean() - sim.scores.mean()
        inside = (sim.scores + shift >= table["lower"]) & (sim.scores + shift <= table["upper"])
        hits, total = hits + int(inside.sum()), total + len(inside)
    coverage = hits / total
    assert 0.8 <= coverage <= 0.98, coverage


def test_predictions_follow_the_scores():
    sim = simulate_crowd_comparisons(10, 4, 100, random_state=5, tie_strength=0.5)
    model = CrowdBT().fit(sim.comparisons)
    ranked = model.utility_["mean"].sort_values()
    low, high = ranked.index[0], ranked.index[-1]
    p = model.predict_proba([high, low], [low, high])
    assert p.iloc[0] > 0.5 > p.iloc[1]
    assert p.iloc[0] + p.iloc[1] == pytest.approx(1.0)
    outcomes = model.predict_outcome_proba([high], [low])
    assert list(outcomes.columns) == ["left", "right", "tie"]
    assert outcomes.to_numpy().sum() == pytest.approx(1.0)
    assert model.predict_utility([low]).index[0] == low


# ------------------------------------------------------------------------------ what to ask next
def test_suggest_prefers_the_pair_it_knows_least_about():
    sim = simulate_crowd_comparisons(8, 3, 120, random_state=2)
    table = sim.comparisons
    # one new item compared once: every pair with it is far more uncertain
    extra = pd.DataFrame({"worker": ["w0"], "left": ["new"], "right": ["i0"], "label": ["new"]})
    model = BradleyTerry().fit(pd.concat([table, extra], ignore_index=True))
    best = model.suggest(3, random_state=0)
    assert list(best.columns) == ["left", "right", "score"]
    assert all("new" in (row.left, row.right) for row in best.itertuples())
    assert best["score"].is_monotonic_decreasing
    every = model.suggest(10_000, random_state=0)
    assert len(every) == 9 * 8 // 2  # each unordered pair once
    # decided pairs are left out
    decided = model.suggest(10_000, strategy="uncertainty", confidence=0.6, random_state=0)
    p = model.predict_proba(decided["left"], decided["right"])
    assert len(decided) < len(every) and (np.maximum(p, 1 - p) < 0.6 + 1e-9).all()
    # candidates: duplicates and self-pairs dropped, the given orientation kept
    candidates = pd.DataFrame({"left": ["i1", "i2", "i1", "i3"], "right": ["i2", "i1", "i1", "i4"]})
    chosen = model.suggest(5, candidates=candidates, random_state=0)
    assert sorted(map(tuple, chosen[["left", "right"]].to_numpy())) == [("i1", "i2"), ("i3", "i4")]
    same = model.suggest(4, strategy="random", random_state=7)
    assert same.equals(model.suggest(4, strategy="random", random_state=7))
    assert 0.5 < model.expected_accuracy() < 1.0


def test_suggest_refuses_what_it_cannot_do():
    model = CrowdBT().fit(_tiny_table())
    with pytest.raises(ValueError, match="CrowdBT pools all workers, so it cannot say whom"):
        model.suggest(2, available=["u"])
    with pytest.raises(ValueError, match="candidates: a table with 'left' and 'right' columns"):
        model.suggest(2, candidates=pd.DataFrame({"item": ["a"]}))
    with pytest.raises(ValueError, match=r"candidates: 1 item id\(s\) were not in the fitted"):
        model.suggest(2, candidates=pd.DataFrame({"left": ["a"], "right": ["zz"]}))


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("cls", [BradleyTerry, CrowdBT])
def test_a_model_without_ties_refuses_them(cls):
    with pytest.raises(
        ValueError,
        match=rf"{cls.__name__}\(tie_model='none'\) cannot take ties: 2 of 7 comparisons are "
        r"'equal'; fit with tie_model='davidson', or drop them when reading: "
        r"Comparisons\(data, ties='drop'\)",
    ):
        cls(tie_model="none").fit(_tiny_table())
    table = _tiny_table()
    cls(tie_model="none").fit(table[table.label != "equal"])


def test_unknown_items_and_item_features_are_refused():
    model = BradleyTerry().fit(_tiny_table())
    with pytest.raises(ValueError, match=r"left: 1 item id\(s\) were not in the fitted "):
        model.predict_proba(["zzz"], ["a"])
    with pytest.raises(ValueError, match="BradleyTerry has no item features"):
        model.predict_proba(["a"], ["b"], items=pd.DataFrame({"x": [1.0]}))
    with pytest.raises(ValueError, match="left and right differ in length: 2 vs 1"):
        model.predict_proba(["a", "b"], ["c"])


def test_simulation_checks_the_reliability_length():
    with pytest.raises(ValueError, match=r"reliability: need 3 values; got shape \(2,\)"):
        simulate_crowd_comparisons(5, 3, 10, reliability=[0.9, 0.9])
