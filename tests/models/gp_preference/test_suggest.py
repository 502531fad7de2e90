"""What to ask next with the GP preference models (``suggest``, one implementation for all
five), the gold-free accuracy estimate, and warm starts (``fit(..., init=model)``)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes.base import load
from crowdbayes.exceptions import ConvergenceWarning, NotFittedError
from crowdbayes.gp import probit_information_gain
from crowdbayes.models.communities import CommunityPreferences, simulate_community_preferences
from crowdbayes.models.gp_preference import GPPL, GPPLVI, CrowdGPPL, GPPLLaplace, GPPreferenceEP

FAST = {
    "GPPL": lambda: GPPL(n_inducing=20, random_state=0),
    "GPPLVI": lambda: GPPLVI(),
    "GPPLLaplace": lambda: GPPLLaplace(),
    "GPPreferenceEP": lambda: GPPreferenceEP(),
    "CrowdGPPL": lambda: CrowdGPPL(n_components=2, n_inducing=20, random_state=0),
}
#: fixed-point settings (ρ = 1, full batches) under which SVI converges exactly
EXACT_SVI = {"forgetting_rate": 0.0, "batch_size": None, "tol": 1e-9, "max_iter": 3000}


@pytest.fixture(scope="module")
def sim():
    return simulate_community_preferences(
        n_users=20, n_items=30, n_communities=1, pairs_per_user=15, random_state=0
    )


@pytest.fixture(scope="module")
def fitted(sim):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return {name: make().fit(sim.comparisons, sim.items) for name, make in FAST.items()}


def probability(model, frame: pd.DataFrame) -> np.ndarray:
    return model.predict_proba(frame["left"], frame["right"]).to_numpy()


# ---------------------------------------------------------------------- the questions
@pytest.mark.parametrize("name", list(FAST))
def test_default_candidates_are_every_pair_once_best_first(fitted, name):
    model = fitted[name]
    asked = model.suggest(1000, strategy="information", random_state=0)
    assert list(asked.columns) == ["left", "right", "score"]
    assert len(asked) == 30 * 29 // 2  # every unordered pair of the 30 items, once
    keys = {frozenset(p) for p in zip(asked["left"], asked["right"], strict=True)}
    assert len(keys) == len(asked)
    assert np.all(np.diff(asked["score"].to_numpy()) <= 0)
    assert set(asked["left"]) | set(asked["right"]) <= set(model.item_ids_)


@pytest.mark.parametrize("name", list(FAST))
def test_uncertainty_is_the_least_confident_prediction(fitted, name):
    """Pooled models (and crowdGPPL without a worker) value by the consensus prediction."""
    model = fitted[name]
    asked = model.suggest(40, strategy="uncertainty", random_state=0)
    if name == "CrowdGPPL":  # a question nobody is named for goes to a new worker
        return
    p = probability(model, asked)
    assert np.allclose(asked["score"], 1 - np.maximum(p, 1 - p))


@pytest.mark.parametrize("name", list(FAST))
def test_power_draws_pairs_valued_by_their_information(fitted, name):
    """``power``: the same questions and values as ``information``, in the order of a draw,
    not best first."""
    model = fitted[name]
    drawn = model.suggest(1000, strategy="power", random_state=0)
    best_first = model.suggest(1000, strategy="information", random_state=0)
    key = ["left", "right"]
    same = drawn.merge(best_first, on=key, suffixes=("", "_best"))
    assert len(same) == len(drawn) == len(best_first)
    assert np.allclose(same["score"], same["score_best"])
    assert not np.all(np.diff(drawn["score"].to_numpy()) <= 0)  # a draw, not a sort


@pytest.mark.parametrize("name", list(FAST))
def test_mixed_asks_half_best_first_half_drawn(fitted, name):
    """``mixed`` (``auto``, but for CrowdGPPL): information-valued, and its first 2k questions
    hold the k best."""
    model = fitted[name]
    default = "information" if name == "CrowdGPPL" else "mixed"
    assert model.default_question_strategy == default
    mixed = model.suggest(40, strategy="mixed", random_state=0)
    by_default = model.suggest(40, strategy=default, random_state=0)
    assert by_default.equals(model.suggest(40, random_state=0))
    best_first = model.suggest(1000, strategy="information", random_state=0)
    key = ["left", "right"]
    same = mixed.merge(best_first, on=key, suffixes=("", "_best"))
    assert len(same) == len(mixed) == 40
    assert np.allclose(same["score"], same["score_best"])
    top = best_first.head(20)[key].apply(tuple, axis=1)
    assert set(top) <= set(mixed[key].apply(tuple, axis=1))
    # and the other half is not the next twenty best
    assert set(best_first.head(40)[key].apply(tuple, axis=1)) != set(
        mixed[key].apply(tuple, axis=1)
    )


def test_information_is_bald_of_the_predicted_difference(fitted):
    model = fitted["GPPLVI"]
    asked = model.suggest(20, strategy="information", random_state=0)
    li = model.item_ids_.get_indexer(asked["left"])
    ri = model.item_ids_.get_indexer(asked["right"])
    mean, var = model._projection.pair_moments(model._X, li, ri, model._factor, model.scale_)
    expected = probit_information_gain(mean, var, 2 * model.noise**2)
    assert np.allclose(asked["score"], expected)


def test_information_with_fewer_inducing_points_than_items(sim):
    """SVI with K-means inducing points learns ``d = (A_a - A_b) u`` only: a question is
    worth what it says about ``u``, whatever the rest of the predictive variance."""
    model = GPPL(n_inducing=8, random_state=0).fit(sim.comparisons, sim.items)
    assert model._inducing_only()
    assert not GPPL(n_inducing=30, random_state=0).fit(sim.comparisons, sim.items)._inducing_only()
    assert not GPPLVI().fit(sim.comparisons, sim.items)._inducing_only()
    asked = model.suggest(30, random_state=0)
    li = model.item_ids_.get_indexer(asked["left"])
    ri = model.item_ids_.get_indexer(asked["right"])
    D = model._projection.weights(model._X[li]) - model._projection.weights(model._X[ri])
    mean = D @ model._factor.mean
    var_u = np.sum((D @ model._factor.cov) * D, axis=1)
    assert np.allclose(asked["score"], probit_information_gain(mean, var_u, 2.0))
    full = model._projection.pair_moments(model._X, li, ri, model._factor, model.scale_)[1]
    assert np.all(var_u <= full + 1e-12)
    # uncertainty sampling still ranks by the predicted answer
    least = model.suggest(10, strategy="uncertainty", random_state=0)
    p = probability(model, least)
    assert np.allclose(least["score"], 1 - np.maximum(p, 1 - p))


@pytest.mark.parametrize("name", ["GPPL", "GPPreferenceEP", "CrowdGPPL"])
def test_orientation_does_not_matter(fitted, name):
    model = fitted[name]
    candidates = pd.DataFrame({"left": ["item1", "item5"], "right": ["item5", "item1"]})
    for strategy in ("information", "uncertainty"):
        asked = model.suggest(2, candidates=candidates, strategy=strategy, random_state=0)
        assert asked["score"].iloc[0] == pytest.approx(asked["score"].iloc[1])


def test_each_pair_once_before_a_repeat(fitted):
    model = fitted["GPPL"]
    candidates = pd.DataFrame(
        {
            "left": ["item1", "item5", "item1", "item2"],
            "right": ["item5", "item1", "item2", "item7"],
        }
    )
    asked = model.suggest(4, candidates=candidates, random_state=0)
    first = [frozenset(p) for p in zip(asked["left"][:3], asked["right"][:3], strict=True)]
    assert len(set(first)) == 3 and frozenset(("item1", "item5")) == frozenset(
        (asked["left"].iloc[3], asked["right"].iloc[3])
    )


def test_seeds_and_the_random_baseline(fitted):
    model = fitted["GPPL"]
    a = model.suggest(10, strategy="random", random_state=1)
    b = model.suggest(10, strategy="random", random_state=1)
    c = model.suggest(10, strategy="random", random_state=2)
    assert a.equals(b) and not a.equals(c)
    assert model.suggest(5, random_state=1).equals(model.suggest(5, random_state=1))


def test_sampled_candidates_when_there_are_many_pairs(fitted, monkeypatch):
    model = fitted["GPPL"]
    monkeypatch.setattr(GPPL, "max_candidate_pairs", 50)
    a = model.suggest(500, strategy="random", random_state=0)
    b = model.suggest(500, strategy="random", random_state=0)
    c = model.suggest(500, strategy="random", random_state=1)
    assert len(a) == 50 and len({frozenset(p) for p in zip(a.left, a.right, strict=True)}) == 50
    assert set(zip(a.left, a.right, strict=True)) == set(zip(b.left, b.right, strict=True))
    assert set(zip(a.left, a.right, strict=True)) != set(zip(c.left, c.right, strict=True))


@pytest.mark.parametrize("name", ["GPPL", "GPPreferenceEP"])
def test_decided_pairs_are_never_suggested(fitted, name):
    model = fitted[name]
    everything = model.suggest(1000, random_state=0)
    confident = np.maximum(probability(model, everything), 1 - probability(model, everything))
    threshold = float(np.quantile(confident, 0.5))
    asked = model.suggest(1000, confidence=threshold, random_state=0)
    assert len(asked) == int(np.sum(confident < threshold))
    p = probability(model, asked)
    assert np.all(np.maximum(p, 1 - p) < threshold)
    assert model.suggest(5, confidence=0.5, random_state=0).empty  # everything is decided


# ---------------------------------------------------------------------- crowdGPPL: whom to ask
def test_crowdgppl_asks_workers(fitted):
    model = fitted["CrowdGPPL"]
    asked = model.suggest(12, available=["user1", "user2", "somebody-new"], random_state=0)
    assert list(asked.columns) == ["left", "right", "worker", "score"]
    assert set(asked["worker"]) <= {"user1", "user2", "somebody-new"}
    candidates = pd.DataFrame(
        {"left": ["item1"] * 3, "right": ["item4"] * 3, "worker": ["user1", "user3", "user4"]}
    )
    limited = model.suggest(5, candidates=candidates, available=["user3", "user4"])
    assert set(limited["worker"]) <= {"user3", "user4"}


def test_crowdgppl_values_the_workers_own_answer(fitted):
    """Uncertainty: a named worker's answer is predicted as in ``predict_proba(workers=...)``.
    Information: every worker's tastes are taken at their prior, as a new worker's, so
    without ties a question is worth the same whoever is named (and as much as unnamed)."""
    model = fitted["CrowdGPPL"]
    candidates = pd.DataFrame(
        {"left": ["item1", "item2", "item3"], "right": ["item4", "item9", "item0"]}
    ).merge(pd.DataFrame({"worker": ["user1", "user7"]}), how="cross")
    asked = model.suggest(6, candidates=candidates, strategy="uncertainty", random_state=0)
    p = model.predict_proba(asked["left"], asked["right"], workers=asked["worker"]).to_numpy()
    assert np.allclose(asked["score"], 1 - np.maximum(p, 1 - p))
    assert model.tie_rate_ == 0.0
    one = pd.DataFrame({"left": ["item1"], "right": ["item4"], "worker": ["user1"]})
    unnamed = model.suggest(1, candidates=one[["left", "right"]])["score"][0]
    for strategy in ("information", "mixed", "power"):
        for worker in ("user1", "user7", "never-seen"):
            named = one.assign(worker=worker)
            score = model.suggest(1, candidates=named, strategy=strategy)["score"].iloc[0]
            assert score == pytest.approx(unnamed, rel=1e-12)
    # the fitted q(w) of a known worker would value them differently
    mean, var = model._question_worker_moments(one, at_prior=False)
    prior_mean, prior_var = model._question_worker_moments(one, at_prior=True)
    assert not np.allclose(mean, prior_mean) and (var < prior_var).all()


def test_crowdgppl_counts_a_tie_as_no_answer(sim):
    """A question to a worker is worth ``1 - τ_j`` of a decisive answer, ``τ_j`` their shrunk
    rate of answering "equal" (counted whatever the tie policy); worker-blind questions all
    get the pooled rate, so their order does not change."""
    frame = sim.comparisons.copy()
    frame.loc[frame["worker"] == "user1", "label"] = "equal"
    frame.loc[frame.index[::10], "label"] = "equal"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kept = FAST["CrowdGPPL"]().set_params(ties="half").fit(frame, sim.items)
        dropped = FAST["CrowdGPPL"]().fit(frame, sim.items)
    ties = frame["label"].eq("equal").groupby(frame["worker"]).mean()
    for model in (kept, dropped):
        assert model.tie_rate_ == pytest.approx(frame["label"].eq("equal").mean())
        rates = model.worker_tie_rates_
        assert rates.idxmax() == "user1" and rates["user1"] > model.tie_rate_
        assert np.corrcoef(rates.loc[ties.index], ties)[0, 1] > 0.9
    one = pd.DataFrame({"left": ["item1"], "right": ["item4"]})
    asked = one.merge(pd.DataFrame({"worker": ["user1", "user2", "never-seen"]}), how="cross")
    score = kept.suggest(3, candidates=asked).set_index("worker")["score"]
    rates = kept.worker_tie_rates_
    without = kept.suggest(3, candidates=asked.assign(worker="user2"))["score"].iloc[0]
    assert score["user2"] == pytest.approx(without)
    kept.worker_tie_rates_ = rates * 0.0
    kept.tie_rate_ = 0.0
    decisive = kept.suggest(3, candidates=asked).set_index("worker")["score"]
    kept.worker_tie_rates_, kept.tie_rate_ = rates, frame["label"].eq("equal").mean()
    assert score["user1"] == pytest.approx((1 - rates["user1"]) * decisive["user1"])
    assert score["never-seen"] == pytest.approx((1 - kept.tie_rate_) * decisive["never-seen"])
    blind = kept.suggest(10, random_state=0)
    kept.tie_rate_ = 0.0
    assert blind[["left", "right"]].equals(kept.suggest(10, random_state=0)[["left", "right"]])


# ---------------------------------------------------------------------- gold-free estimate
@pytest.mark.parametrize("name", list(FAST))
def test_expected_accuracy(fitted, sim, name):
    model = fitted[name]
    pairs = sim.comparisons.iloc[:50]
    p = probability(model, pairs)
    value = model.expected_accuracy(pairs["left"], pairs["right"])
    assert value == pytest.approx(np.mean(np.maximum(p, 1 - p)))
    assert 0.5 <= model.expected_accuracy() <= 1.0
    with pytest.raises(ValueError, match="expected_accuracy: give both left and right"):
        model.expected_accuracy(pairs["left"])


# ---------------------------------------------------------------------- bad input
def test_bad_input(fitted):
    model = fitted["GPPL"]
    for n in (0, -1, 1.5, True):
        with pytest.raises(
            ValueError, match=f"GPPL.suggest: n must be a positive integer; got {n!r}"
        ):
            model.suggest(n)
    with pytest.raises(ValueError, match="strategy must be one of 'auto', 'information', "):
        model.suggest(3, strategy="entropy")
    with pytest.raises(ValueError, match=r"confidence must be a number in \(0, 1\) or None"):
        model.suggest(3, confidence=1.5)
    with pytest.raises(ValueError, match=r"candidates: column\(s\) \['right'\] missing"):
        model.suggest(3, candidates=pd.DataFrame({"left": ["item1"]}))
    unknown = pd.DataFrame({"left": ["item1", "nope"], "right": ["zilch", "item2"]})
    message = "candidates: 2 item id(s) were not seen in fit: ['nope', 'zilch']"
    with pytest.raises(ValueError, match=re.escape(message)):
        model.suggest(3, candidates=unknown)
    with pytest.raises(ValueError, match="candidates: 1 pair.s. compare an item with itself"):
        model.suggest(3, candidates=pd.DataFrame({"left": ["item1"], "right": ["item1"]}))
    with pytest.raises(ValueError, match="candidates: expected a table with 'left' and 'right'"):
        model.suggest(3, candidates=[("item1", "item2")])
    with pytest.raises(ValueError, match="GPPL pools all workers, so it cannot say whom to ask"):
        model.suggest(3, available=["user1"])
    with pytest.raises(ValueError, match="available: no worker given"):
        fitted["CrowdGPPL"].suggest(3, available=[])
    with pytest.raises(NotFittedError, match="GPPL is not fitted yet"):
        GPPL().suggest(3)


def test_a_model_that_cannot_suggest(sim):
    model = CommunityPreferences(n_sweeps=2, burn_in=1, n_chains=1, random_state=0)
    model.fit(sim.comparisons.iloc[:60], sim.items)
    # its role has no question selection: its tags say so, and it has no suggest
    assert not model.tags.suggest and not hasattr(model, "suggest")


def test_pooled_models_keep_a_worker_column(fitted):
    candidates = pd.DataFrame({"left": ["item1", "item1"], "right": ["item2", "item2"]})
    candidates["worker"] = ["user1", "user2"]
    asked = fitted["GPPL"].suggest(2, candidates=candidates, random_state=0)
    assert list(asked.columns) == ["left", "right", "worker", "score"]
    assert asked["score"].iloc[0] == pytest.approx(asked["score"].iloc[1])


def test_a_loaded_model_suggests_the_same(fitted, tmp_path):
    model = fitted["GPPL"]
    model.save(tmp_path / "m.npz")
    again = load(tmp_path / "m.npz")
    assert again.suggest(10, random_state=0).equals(model.suggest(10, random_state=0))


# ---------------------------------------------------------------------- warm starts
def utilities(model) -> np.ndarray:
    return model.utility_["mean"].to_numpy()


@pytest.mark.parametrize(
    "make",
    [
        lambda: GPPL(n_inducing=20, random_state=0, **EXACT_SVI),
        lambda: GPPLVI(tol=1e-10, max_iter=1000),
        lambda: GPPreferenceEP(tol=1e-9, max_iter=1000),
        lambda: CrowdGPPL(n_components=2, n_inducing=20, random_state=0, **EXACT_SVI),
    ],
    ids=["GPPL", "GPPLVI", "GPPreferenceEP", "CrowdGPPL"],
)
def test_warm_start_on_the_same_data_is_the_cold_fit(sim, make):
    cold = make().fit(sim.comparisons, sim.items)
    reference = utilities(cold).copy()
    warm = make().fit(sim.comparisons, sim.items, init=cold)
    assert np.abs(utilities(warm) - reference).max() < 1e-4
    assert warm.n_iter_ < cold.n_iter_ / 3
    again = cold.fit(sim.comparisons, sim.items, init=cold)  # the model itself as init
    assert np.abs(utilities(again) - reference).max() < 1e-4


def test_warm_start_with_new_comparisons_and_items(sim):
    """Full-batch VI has one fixed point: a warm fit on more data (new items included) finds
    the cold fit's, with features and without (items matched by id)."""
    first = sim.comparisons.iloc[:150]
    first = first[
        ~first["left"].isin(["item3", "item4"]) & ~first["right"].isin(["item3", "item4"])
    ]
    for items in (sim.items, None):
        previous = GPPLVI(tol=1e-10, max_iter=1000).fit(first, items)
        warm = GPPLVI(tol=1e-10, max_iter=1000).fit(sim.comparisons, items, init=previous)
        cold = GPPLVI(tol=1e-10, max_iter=1000).fit(sim.comparisons, items)
        assert warm.utility_.index.equals(cold.utility_.index)
        assert np.abs(utilities(warm) - utilities(cold)).max() < 1e-4
        # with the scale Anderson-accelerated both are set by the linearisation's own
        # convergence (13 iterations each without features): the warm start must not cost more
        assert warm.n_iter_ <= cold.n_iter_


def test_svi_keeps_its_design_while_the_items_grow_little(sim):
    many = sim.comparisons
    previous = GPPL(n_inducing=10, random_state=0).fit(many.iloc[:-20], sim.items)
    grown = GPPL(n_inducing=10, random_state=0).fit(many, sim.items, init=previous)
    assert grown._projection.shares(previous._projection)  # kernel and inducing points kept
    few = many[many["left"].isin(sim.items.index[:8]) & many["right"].isin(sim.items.index[:8])]
    small = GPPL(n_inducing=10, random_state=0).fit(few, sim.items)
    rebuilt = GPPL(n_inducing=10, random_state=0).fit(many, sim.items, init=small)
    assert not rebuilt._projection.shares(small._projection)  # 8 -> 30 compared items: rebuilt
    cold = GPPL(n_inducing=10, random_state=0).fit(many, sim.items)
    assert np.corrcoef(utilities(rebuilt), utilities(cold))[0, 1] > 0.98


def test_crowdgppl_warm_start_keeps_known_workers(sim):
    first = sim.comparisons[sim.comparisons["worker"] != "user19"]
    previous = CrowdGPPL(n_components=2, n_inducing=20, random_state=0).fit(first, sim.items)
    warm = CrowdGPPL(n_components=2, n_inducing=20, random_state=0)
    warm.fit(sim.comparisons, sim.items, init=previous)
    assert "user19" in warm.worker_ids_ and warm.worker_factors_.shape == (20, 2)
    cold = CrowdGPPL(n_components=2, n_inducing=20, random_state=0).fit(sim.comparisons, sim.items)
    assert np.corrcoef(utilities(warm), utilities(cold))[0, 1] > 0.95


def test_warm_start_bad_input(sim, fitted):
    with pytest.raises(ValueError, match="GPPLLaplace cannot warm-start; fit it without init"):
        GPPLLaplace().fit(sim.comparisons, sim.items, init=fitted["GPPLLaplace"])
    with pytest.raises(ValueError, match="GPPL.fit: init must be a fitted GPPL; got a GPPLVI"):
        GPPL().fit(sim.comparisons, sim.items, init=fitted["GPPLVI"])
    with pytest.raises(ValueError, match="init must be a fitted GPPL; got a GPPL that is not"):
        GPPL().fit(sim.comparisons, sim.items, init=GPPL())
    with pytest.raises(ValueError, match="CrowdGPPL.fit: init has 2 components; this model has 3"):
        CrowdGPPL(n_components=3).fit(sim.comparisons, sim.items, init=fitted["CrowdGPPL"])
