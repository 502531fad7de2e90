"""Bradley–Terry with Davidson ties (crowdbayes.models.comparisons.bradley_terry): predictions,
questions and bad input; the solver is tests/models/comparisons/test_solver.py, the workers'
model test_crowd_bt.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from comparison_tables import tiny_table
from crowdbayes.models.comparisons import BradleyTerry, CrowdBT, simulate_crowd_comparisons


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
    # candidates: each unordered pair once before a repeat, the given orientation kept (the
    # question selection every pairwise model shares: crowdbayes.roles.PairQuestions)
    candidates = pd.DataFrame({"left": ["i1", "i2", "i3"], "right": ["i2", "i1", "i4"]})
    chosen = model.suggest(2, candidates=candidates, random_state=0)
    pairs = sorted(map(frozenset, chosen[["left", "right"]].to_numpy()))
    assert pairs == sorted([frozenset(("i1", "i2")), frozenset(("i3", "i4"))])
    with pytest.raises(ValueError, match="compare an item with itself"):
        model.suggest(2, candidates=pd.DataFrame({"left": ["i1"], "right": ["i1"]}))
    same = model.suggest(4, strategy="random", random_state=7)
    assert same.equals(model.suggest(4, strategy="random", random_state=7))
    assert 0.5 < model.expected_accuracy() < 1.0


def test_suggest_refuses_what_it_cannot_do():
    model = CrowdBT().fit(tiny_table())
    with pytest.raises(ValueError, match="CrowdBT pools all workers, so it cannot say whom"):
        model.suggest(2, available=["u"])
    with pytest.raises(ValueError, match=r"candidates: column\(s\) \['left', 'right'\] missing"):
        model.suggest(2, candidates=pd.DataFrame({"item": ["a"]}))
    with pytest.raises(ValueError, match=r"candidates: 1 item id\(s\) were not seen in fit"):
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
        cls(tie_model="none").fit(tiny_table())
    table = tiny_table()
    cls(tie_model="none").fit(table[table.label != "equal"])


def test_unknown_items_and_item_features_are_refused():
    model = BradleyTerry().fit(tiny_table())
    with pytest.raises(ValueError, match=r"left: 1 item id\(s\) were not in the fitted "):
        model.predict_proba(["zzz"], ["a"])
    with pytest.raises(ValueError, match="BradleyTerry has no item features"):
        model.predict_proba(["a"], ["b"], items=pd.DataFrame({"x": [1.0]}))
    with pytest.raises(ValueError, match="predict_proba: 2 left and 1 right items"):
        model.predict_proba(["a", "b"], ["c"])


def test_simulation_checks_the_reliability_length():
    with pytest.raises(ValueError, match=r"reliability: need 3 values; got shape \(2,\)"):
        simulate_crowd_comparisons(5, 3, 10, reliability=[0.9, 0.9])
