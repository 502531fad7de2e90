"""``PairPool``: a pool of real comparisons for the replay simulator, and small replays on
simulated data with GPPL and crowdGPPL (worker-aware and worker-blind)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes.active import simulate
from crowdbayes.active.pairs import PairPool
from crowdbayes.models.communities import simulate_community_preferences
from crowdbayes.models.gp_preference import GPPL, CrowdGPPL


@pytest.fixture(scope="module")
def sim():
    data = simulate_community_preferences(
        n_users=12, n_items=25, n_communities=1, pairs_per_user=20, noise=0.3, random_state=0
    )
    f = data.utility[0]
    rng = np.random.default_rng(1)
    i = rng.integers(0, 25, 200)
    j = (i + rng.integers(1, 25, 200)) % 25
    ids = data.items.index.to_numpy()
    gold = pd.DataFrame({"left": ids[i], "right": ids[j]})
    gold["label"] = np.where(f.to_numpy()[i] > f.to_numpy()[j], gold["left"], gold["right"])
    return data, gold


def warm(model, pool):
    return model.fit(*pool.fit_args(), init=model if model.is_fitted() else None)


def pair_keys(frame: pd.DataFrame) -> list:
    return [frozenset(p) for p in zip(frame["left"], frame["right"], strict=True)]


def pair_set(frame: pd.DataFrame) -> set:
    return set(pair_keys(frame))


# ---------------------------------------------------------------------- the pool
def test_start_candidates_and_reveal(sim):
    data, gold = sim
    pool = PairPool(data.comparisons, gold, data.items, start=3, random_state=0)
    assert pool.n_observed == 3 and pool.n_remaining == len(data.comparisons) - 3
    (comparisons,) = pool.fit_args()
    assert comparisons.n_comparisons == 3 and comparisons.n_items == 25  # the whole item table
    blind = pool.candidates(False)
    assert list(blind.columns) == ["left", "right"]
    assert len(pair_set(blind)) == len(blind)  # each unordered pair once
    aware = pool.candidates(True)
    assert list(aware.columns) == ["left", "right", "worker"]
    assert not aware.assign(key=pair_keys(aware)).duplicated(["key", "worker"]).any()
    # a pair asked the other way round is answered by a comparison of that pair
    row = pool.table[~pool.seen].iloc[0]
    asked = pd.DataFrame({"left": [row["right"]], "right": [row["left"]]})
    before = pool.observed()
    assert pool.reveal(asked, np.random.default_rng(0)) == 1
    new = pool.observed().drop(before.index)
    assert frozenset((new["left"].iloc[0], new["right"].iloc[0])) == frozenset(
        (row["left"], row["right"])
    )


def test_a_worker_question_is_answered_by_that_worker_only(sim):
    data, gold = sim
    pool = PairPool(data.comparisons, gold, data.items, start=1, random_state=0)
    row = pool.table[~pool.seen].iloc[0]
    asked = pd.DataFrame(
        {"left": [row["left"]], "right": [row["right"]], "worker": [row["worker"]]}
    )
    before = pool.observed().index
    assert pool.reveal(asked, np.random.default_rng(0)) == 1
    assert pool.observed().drop(before)["worker"].tolist() == [row["worker"]]
    stranger = asked.assign(worker="nobody")
    assert pool.reveal(stranger, np.random.default_rng(0)) == 0
    # asked again and again, a pair reveals each of its comparisons once, then nothing
    key = frozenset((row["left"], row["right"]))
    of_pair = np.array([k == key for k in pair_keys(pool.table)])
    waiting = int(np.sum(of_pair & ~pool.seen))
    blind = pd.concat([asked.drop(columns="worker")] * (waiting + 3))
    assert pool.reveal(blind, np.random.default_rng(0)) == waiting
    assert pool.seen[of_pair].all()


def test_baselines(sim):
    data, gold = sim
    pool = PairPool(data.comparisons, gold, data.items, start=20, random_state=0)
    rng = np.random.default_rng(0)
    random = pool.baseline("random", 5, rng)
    assert len(random) == 5 and random["score"].isna().all()
    assert pair_set(random) <= pair_set(pool.candidates(False))
    fewest = pool.baseline("round_robin", 5, rng)
    seen = pair_set(pool.observed())
    assert not (pair_set(fewest) & seen)  # pairs never compared come first
    # item coverage: the pairs whose items were compared least, in all
    covering = pool.baseline("item_coverage", 5, rng)
    observed = pool.observed()
    per_item = pd.concat([observed["left"], observed["right"]]).value_counts()

    def times_compared(pairs):
        return sum(per_item.reindex(pairs[s], fill_value=0).to_numpy() for s in ("left", "right"))

    fewest_times = np.sort(times_compared(pool.candidates(False)))[:5]
    assert list(times_compared(covering)) == list(fewest_times)
    assert pair_set(covering) <= pair_set(pool.candidates(False))
    with pytest.raises(ValueError, match="unknown pool strategy 'often': a pair pool plays"):
        pool.baseline("often", 5, rng)


def test_score_and_estimate(sim):
    data, gold = sim
    pool = PairPool(data.comparisons, gold, data.items, start=200, random_state=0)
    model = GPPL(n_inducing=25, random_state=0).fit(*pool.fit_args())
    p = model.predict_proba(gold["left"], gold["right"]).to_numpy()
    right = np.where(gold["label"] == gold["left"], p > 0.5, p < 0.5)
    assert pool.score(model) == pytest.approx(right.mean())
    assert pool.score(model) > 0.8
    assert pool.estimate(model) == pytest.approx(np.mean(np.maximum(p, 1 - p)))

    class Undecided:
        def predict_proba(self, left, right):
            return pd.Series(np.full(len(left), 0.5))

    assert pool.score(Undecided()) == 0.5  # a coin flip is half right


def test_bad_input(sim):
    data, gold = sim
    with pytest.raises(ValueError, match=r"PairPool: comparisons column\(s\) \['label'\] missing"):
        PairPool(data.comparisons.drop(columns="label"), gold)
    with pytest.raises(ValueError, match=r"PairPool: gold column\(s\) \['right'\] missing"):
        PairPool(data.comparisons, gold.drop(columns="right"))
    with pytest.raises(ValueError, match=r"PairPool: start must lie in \[1, 240\] .*; got 0"):
        PairPool(data.comparisons, gold, start=0)
    pool = PairPool(data.comparisons.drop(columns="worker"), gold, data.items, start=2)
    with pytest.raises(ValueError, match="PairPool: worker-aware questions need a 'worker'"):
        pool.candidates(True)


# ---------------------------------------------------------------------- replays
@pytest.mark.parametrize("strategy", ["information", "uncertainty", "random", "round_robin"])
def test_replay_with_gppl(sim, strategy):
    data, gold = sim
    pool = PairPool(data.comparisons, gold, data.items, start=2, random_state=0)
    record = simulate(
        GPPL(n_inducing=25, random_state=0),
        pool,
        batch=4,
        budget=30,
        strategy=strategy,
        refit=warm,
        random_state=0,
    )
    assert record["n_answers"].tolist() == [2, 6, 10, 14, 18, 22, 26, 30]
    assert record["accuracy"].between(0, 1).all()
    assert record["estimated_accuracy"].between(0.5, 1).all()
    again = simulate(
        GPPL(n_inducing=25, random_state=0),
        PairPool(data.comparisons, gold, data.items, start=2, random_state=0),
        batch=4,
        budget=30,
        strategy=strategy,
        refit=warm,
        random_state=0,
    )
    assert np.array_equal(record["accuracy"], again["accuracy"])  # seeded


@pytest.mark.parametrize("worker_aware", [False, True])
def test_replay_with_crowdgppl(sim, worker_aware):
    data, gold = sim
    pool = PairPool(data.comparisons, gold, data.items, start=2, random_state=0)
    record = simulate(
        CrowdGPPL(n_components=2, n_inducing=25, random_state=0),
        pool,
        batch=3,
        budget=20,
        strategy="information",
        worker_aware=worker_aware,
        refit=warm,
        random_state=0,
    )
    assert record["n_answers"].iloc[-1] == 20
    assert (record["n_revealed"].iloc[1:] == record["n_asked"].iloc[1:]).all()


def test_replay_stops_when_the_pool_is_used_up(sim):
    data, gold = sim
    few = data.comparisons.iloc[:12]
    pool = PairPool(few, gold, data.items, start=2, random_state=0)
    record = simulate(
        GPPL(n_inducing=25, random_state=0), pool, batch=5, strategy="information", refit=warm
    )
    assert record["n_answers"].iloc[-1] == 12 and pool.n_remaining == 0
