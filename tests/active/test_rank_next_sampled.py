"""``suggest_sets(strategy="sampled")``: sets drawn in proportion to the information gain, with
importance weights that make the weighted fit answer for every candidate."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from choice_sets import sets_of, simulated
from crowdbayes import PlackettLuceVI
from crowdbayes.active.rankings import (
    SAMPLED_UNIFORM_SHARE,
    _coverage_first,
    _draw_weights,
    lure_weights,
    replay_choice_sets,
    sampling_proposal,
    sequential_draws,
    suggest_sets,
)


def test_the_proposal_mixes_the_gain_with_a_uniform_share():
    q = sampling_proposal(np.array([3.0, 1.0, 0.0, -0.01]), 0.2)
    np.testing.assert_allclose(q, 0.8 * np.array([0.75, 0.25, 0.0, 0.0]) + 0.05)
    np.testing.assert_allclose(sampling_proposal(np.zeros(4), 0.2), 0.25)


def test_sequential_draws_follow_the_proposal_without_replacement():
    """First and second draws by the Gumbel-top-k trick have the probabilities of drawing one at
    a time in proportion to the proposal among those left (8,000 seeded orders)."""
    q = np.array([0.5, 0.3, 0.15, 0.05])
    rng = np.random.default_rng(0)
    orders = np.array([sequential_draws(q, rng)[:2] for _ in range(8000)])
    first = np.bincount(orders[:, 0], minlength=4) / len(orders)
    np.testing.assert_allclose(first, q, atol=0.02)
    pair = np.mean((orders[:, 0] == 0) & (orders[:, 1] == 2))
    assert pair == pytest.approx(0.5 * 0.15 / 0.5, abs=0.015)


def test_lure_weights_are_unbiased_for_the_pool_mean():
    """Brute force over every ordered draw of M = 3 of N = 5 (one at a time, in proportion to a
    proposal among those left): E[(1/M) Σ v_m f(i_m)] is the pool's mean of f exactly, where the
    plain ratios are biased."""
    rng = np.random.default_rng(1)
    f, proposal = rng.normal(size=5), rng.dirichlet(np.ones(5))
    N, M = 5, 3
    lure = plain = 0.0
    for order in itertools.permutations(range(N), M):
        probability, mass, ratios = 1.0, 1.0, []
        for m, i in enumerate(order):
            q = proposal[i] / mass
            probability *= q
            ratios.append(1.0 / ((N - m) * q))
            mass -= proposal[i]
        values = f[list(order)]
        lure += probability * np.mean(lure_weights(np.array(ratios), N) * values)
        plain += probability * np.mean(np.array(ratios) * values)
    assert lure == pytest.approx(f.mean(), abs=1e-12)
    assert abs(plain - f.mean()) > 1e-3
    np.testing.assert_array_equal(lure_weights(np.array([2.0, 0.5, 3.0]), 3), 1.0)
    with pytest.raises(ValueError, match="4 draws from a pool of 3"):
        lure_weights(np.ones(4), 3)


@pytest.fixture(scope="module")
def fitted():
    rankings, items = simulated()
    return PlackettLuceVI(eta=1.0).fit(rankings, items=items), items


def test_a_sampled_batch_carries_importance_weights(fitted):
    model, items = fitted
    candidates = sets_of([(f"s{k}", f"i{k + j}") for k in range(0, 27, 3) for j in range(3)])
    chosen = suggest_sets(model, candidates, 5, features=items, strategy="sampled", random_state=0)
    assert list(chosen.columns) == ["score", "new_items", "p_max", "weight"]
    assert len(chosen) == 5 and chosen.index.is_unique
    # r_m = mass_m / (N_m p_i) with p_i ≥ ε / N and mass_m ≤ 1: at most N / (N_m ε)
    bound = 9 / ((9 - np.arange(5)) * SAMPLED_UNIFORM_SHARE)
    assert (chosen["weight"] > 0).all() and (chosen["weight"].to_numpy() <= bound + 1e-12).all()
    # the first draw's weight is the ratio of a uniform draw to the proposal
    gain = suggest_sets(model, candidates, 9, features=items, random_state=0)["score"]
    q = sampling_proposal(gain.loc[candidates.ids].to_numpy(), SAMPLED_UNIFORM_SHARE)
    first = candidates.ids.get_loc(chosen.index[0])
    assert chosen["weight"].iloc[0] == pytest.approx(1.0 / (9 * q[first]))
    pd.testing.assert_frame_equal(
        chosen,
        suggest_sets(model, candidates, 5, features=items, strategy="sampled", random_state=0),
    )
    others = {
        tuple(
            suggest_sets(
                model, candidates, 3, features=items, strategy="sampled", random_state=seed
            ).index
        )
        for seed in range(8)
    }
    assert len(others) > 1  # drawn, not a fixed order


def test_sets_taken_for_their_new_items_weigh_one(fitted):
    model, items = fitted
    new = pd.DataFrame([[0.3, -0.2]], columns=["a", "b"], index=["n0"])
    candidates = sets_of([("new", "n0"), ("new", "i1")] + [("s", "i2"), ("s", "i3"), ("t", "i4"),
                                                           ("t", "i5")])  # fmt: skip
    chosen = suggest_sets(
        model, candidates, 2, features=pd.concat([items, new]), strategy="sampled", random_state=0
    )
    assert chosen.index[0] == "new" and chosen["weight"].iloc[0] == 1.0
    assert list(chosen["new_items"]) == [1, 0]


def test_where_every_set_shows_only_new_items_the_draws_decide(fitted):
    """Sets of items unique to them (as the car choices): coverage ties everywhere, so the
    sampled order picks and every set carries its importance weight."""
    model, items = fitted
    new = pd.DataFrame(
        np.random.default_rng(3).normal(size=(12, 2)), columns=["a", "b"],
        index=[f"n{k}" for k in range(12)],
    )  # fmt: skip
    candidates = sets_of([(f"s{k}", f"n{k + j}") for k in range(0, 12, 3) for j in range(3)])
    chosen = suggest_sets(
        model, candidates, 3, features=pd.concat([items, new]), strategy="sampled",
        random_state=1,
    )  # fmt: skip
    assert list(chosen["new_items"]) == [3, 3, 3]
    assert not np.allclose(chosen["weight"], 1.0)


def _weighted_frequencies(rows, new_items, proposal, n, slot, runs=20000):
    """E[r_slot · 1(set at ``slot`` = s)] per candidate s over seeded batches of ``n``: each
    is 1/N (a uniform draw's chance of s) when the weights are right."""
    sets = sets_of(rows)
    new = np.asarray(sets.items.isin(new_items))
    keep = np.arange(len(sets))
    rng = np.random.default_rng(0)
    total = np.zeros(len(sets))
    for _ in range(runs):
        order = keep[sequential_draws(proposal, rng)]
        chosen, _, forced = _coverage_first(sets, order, new, n, tie_rng=rng)
        total[chosen[slot]] += _draw_weights(proposal, keep, chosen, forced)[slot]
    return total / runs, sets


def test_weights_after_a_tie_broken_by_coverage_are_right():
    """A and B share the one never-shown item: coverage takes one of them (uniformly, weight
    1); the second set is a draw among the three left, so E[r · 1(second = s)] is 1/3 for C
    and D and 1/6 for each of A and B (left with probability ½)."""
    rows = [("A", "x"), ("A", "a"), ("B", "x"), ("B", "b"), ("C", "c"), ("C", "c2"),
            ("D", "d"), ("D", "d2")]  # fmt: skip
    freq, _ = _weighted_frequencies(rows, ["x"], np.array([0.4, 0.4, 0.1, 0.1]), 2, 1)
    np.testing.assert_allclose(freq, [1 / 6, 1 / 6, 1 / 3, 1 / 3], atol=0.02)


def test_a_draw_before_a_forced_pick_is_weighed_among_all():
    """A, B share new item x, C has new item y: all three show one new item, so the first pick
    is a draw (weight 1/(3 q)); only then may C be forced."""
    rows = [("A", "x"), ("A", "a"), ("B", "x"), ("B", "b"), ("C", "y"), ("C", "c")]
    freq, _ = _weighted_frequencies(rows, ["x", "y"], np.array([0.5, 0.3, 0.2]), 2, 0)
    np.testing.assert_allclose(freq, 1 / 3, atol=0.02)


def test_nothing_left_to_sample_when_every_set_is_decided(fitted):
    model, items = fitted
    candidates = sets_of([("s", "i0"), ("s", "i1"), ("t", "i2"), ("t", "i3")])
    chosen = suggest_sets(model, candidates, 2, features=items, strategy="sampled", confidence=0.01)
    assert len(chosen) == 0 and "weight" in chosen


def test_sampling_needs_a_uniform_share(fitted):
    model, items = fitted
    candidates = sets_of([("s", "i0"), ("s", "i1"), ("t", "i2"), ("t", "i3")])
    with pytest.raises(ValueError, match="explore > 0"):
        suggest_sets(model, candidates, 1, features=items, strategy="sampled", explore=0.0)


def test_a_weighted_replay_ends_at_the_unweighted_full_fit():
    """LURE weights are 1 once every recorded set is revealed: the last refit is the plain fit
    to all of them; the plain ratios are not."""
    rankings, items = simulated(n_sets=30)

    def replay(weights):
        return replay_choice_sets(
            PlackettLuceVI(eta=1.0), rankings, items, start=5, batch=10, strategy="sampled",
            weights=weights, score=lambda model: float(model.coef_.iloc[0]), random_state=0,
        )  # fmt: skip

    full = PlackettLuceVI(eta=1.0).fit(rankings, items=items).coef_.iloc[0]
    lure = replay("lure")
    assert list(lure["n_sets"]) == [5, 15, 25, 30]
    assert lure["score"].iloc[-1] == pytest.approx(full, rel=1e-9)
    assert replay("ratio")["score"].iloc[-1] != pytest.approx(full, rel=1e-6)
    assert replay("none")["score"].iloc[-1] == pytest.approx(full, rel=1e-9)
    with pytest.raises(ValueError, match="weights must be"):
        replay("uniform")
