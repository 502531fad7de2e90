"""The replay simulator on a pool of class labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes import GPPL, BayesianDawidSkene, CommunityDawidSkene, MajorityVote
from crowdbayes.active import LabelPool, WarmRefit, simulate
from crowdbayes.active.replay import takes_init
from crowdbayes.datasets import simulate_labels
from crowdbayes.models.gp_preference import GPPLLaplace


@pytest.fixture(scope="module")
def sim():
    return simulate_labels(150, 15, 6, 2, accuracy_mean=0.7, random_state=5)


def test_the_pool_starts_with_the_asked_number_of_labels_per_task(sim):
    pool = LabelPool(sim.labels, sim.truth, start=2, random_state=0)
    seen = pool.observed()
    assert (seen.groupby("task").size() == 2).all()
    assert pool.n_observed + pool.n_remaining == len(sim.labels)
    assert pool.fit_args()[0].n_labels == pool.n_observed


def test_reveal_matches_tasks_and_workers(sim):
    pool = LabelPool(sim.labels, sim.truth, start=1, random_state=0)
    rng = np.random.default_rng(0)
    task = pool.candidates(False)[0]
    before = pool.n_observed
    assert pool.reveal(pd.DataFrame({"task": [task, task]}), rng) == 2
    assert pool.n_observed == before + 2
    rest = pool.candidates(True)
    pair = rest.iloc[[0]]
    assert pool.reveal(pair, rng) == 1
    assert pool.reveal(pair, rng) == 0  # that worker's label is used up
    assert pool.reveal(pd.DataFrame({"task": ["nope"]}), rng) == 0


@pytest.mark.parametrize("strategy", ["auto", "uncertainty", "round_robin", "random"])
def test_simulate_records_every_round_until_the_budget(sim, strategy):
    pool = LabelPool(sim.labels, sim.truth, start=1, random_state=1)
    budget = pool.n_observed + 100
    record = simulate(
        BayesianDawidSkene(), pool, batch=25, budget=budget, strategy=strategy, random_state=0
    )
    assert list(record["n_answers"]) == [150, 175, 200, 225, 250]
    assert record["accuracy"].between(0, 1).all()
    assert record["estimated_accuracy"].between(0.5, 1).all()
    assert record["n_revealed"].iloc[1:].eq(25).all()


def test_active_selection_beats_round_robin_on_simulated_workers(sim):
    curves = {}
    for strategy in ("auto", "round_robin"):
        accuracy = []
        for seed in range(3):
            pool = LabelPool(sim.labels, sim.truth, start=1, random_state=seed)
            record = simulate(
                BayesianDawidSkene(), pool, batch=30, strategy=strategy, random_state=seed
            )
            accuracy.append(record.set_index("n_answers")["accuracy"].iloc[:12].to_numpy())
        curves[strategy] = np.mean(accuracy, axis=0)
    assert curves["auto"].mean() >= curves["round_robin"].mean()


def test_the_whole_pool_is_used_and_worker_aware_replay_works(sim):
    pool = LabelPool(sim.labels, sim.truth, start=1, random_state=2)
    record = simulate(MajorityVote(), pool, batch=200, worker_aware=True, random_state=0)
    assert record["n_answers"].iloc[-1] == len(sim.labels)
    assert pool.n_remaining == 0
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        simulate(MajorityVote(), pool, batch=0)
    with pytest.raises(ValueError, match="start must be at least 1"):
        LabelPool(sim.labels, sim.truth, start=0)


def _spammer_pool(seed):
    """200 binary tasks: two prolific workers answering at random on 90% of them (like RTE's
    busiest workers, whose labels are 50-58% right), 40 workers 80% right filling the rest."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, 200)
    rows = []
    for t in range(200):
        spammers = ["spam0", "spam1"] if rng.random() < 0.9 else []
        rows += [(t, w, int(rng.integers(0, 2))) for w in spammers]
        for g in rng.choice(40, 10 - len(spammers), replace=False):
            rows.append((t, f"g{g}", int(truth[t] if rng.random() < 0.8 else 1 - truth[t])))
    return pd.DataFrame(rows, columns=["task", "worker", "label"]), pd.Series(truth)


def test_worker_aware_selection_avoids_prolific_spammers():
    """With one label per task a prolific worker agrees with a posterior it largely made; the
    held-out counts see through it. Measured (5 seeds): spammers get 7.8% of the questions and
    the mean accuracy is 0.829, against 16.4% and 0.808 worker-blind; choosing by the fitted
    confusion matrices instead (the code before the held-out counts) gave 23.5% and 0.770."""
    accuracy, spam = {}, {}
    for aware in (True, False):
        runs = []
        for seed in range(5):
            labels, truth = _spammer_pool(seed)
            pool = LabelPool(labels, truth, start=1, random_state=seed)
            record = simulate(
                BayesianDawidSkene(),
                pool,
                batch=20,
                budget=pool.n_observed + 400,
                strategy="information",  # auto's choice with a worker named, for both arms
                worker_aware=aware,
                random_state=seed,
            )
            seen = pool.observed()
            runs.append((record["accuracy"].mean(), seen["worker"].str.startswith("spam").mean()))
        accuracy[aware], spam[aware] = np.mean(runs, axis=0)
    assert spam[True] < 0.12 < spam[False]
    assert accuracy[True] >= accuracy[False] + 0.01


def _flipped(model):
    """``model`` with its classes' confusion rows swapped: a label-switched mode to start from."""
    model.globals_ = model.from_primary(
        model.globals_["alpha"][:, ::-1, :].copy(), model.globals_["beta"][::-1].copy()
    )
    return model


def test_warm_refit_replaces_a_stuck_warm_fit_by_a_better_cold_one(sim):
    pool = LabelPool(sim.labels, sim.truth, start=3, random_state=0)
    scores = {}
    for growth in (None, 0.25):
        refit = WarmRefit(growth)
        model = refit(BayesianDawidSkene(), pool)  # the first fit is cold
        assert pool.score(model) > 0.8
        _flipped(model)
        pool.reveal(pd.DataFrame({"task": pool.candidates(False)[:120]}), np.random.default_rng(0))
        refit(model, pool)  # 570 labels after 450: a cold fit is due
        scores[growth] = pool.score(model), refit.n_restarts
        pool.seen[:] = False  # back to the same start for the next run
        pool.seen[LabelPool(sim.labels, sim.truth, start=3, random_state=0).seen] = True
    assert scores[None][0] < 0.5 and scores[None][1] == 0  # the warm fit keeps the switched mode
    assert scores[0.25][0] > 0.8 and scores[0.25][1] == 1


def test_warm_refit_runs_cold_fits_on_a_geometric_schedule(sim, monkeypatch):
    calls = []
    fit = BayesianDawidSkene.fit

    def counting_fit(self, labels, *, init=None):
        calls.append(("warm" if init is not None else "cold", labels.n_labels))
        return fit(self, labels, init=init)

    # patched, not subclassed: a subclass would join the registry of public models
    monkeypatch.setattr(BayesianDawidSkene, "fit", counting_fit)
    pool = LabelPool(sim.labels, sim.truth, start=1, random_state=0)
    simulate(
        BayesianDawidSkene(), pool, batch=30, budget=360, strategy="random", refit=WarmRefit(0.5)
    )
    cold = [n for kind, n in calls if kind == "cold"]
    # the start, then each time the labels reach 1.5 × those of the last cold fit
    assert cold == [150, 240, 360]
    assert sum(kind == "warm" for kind, _ in calls) == 7  # every round after the first fit
    with pytest.raises(ValueError, match="restart_growth"):
        WarmRefit(0)


def test_warm_refit_refits_cold_a_model_that_cannot_continue(sim, monkeypatch):
    """CommunityDawidSkene's fit takes no ``init``: every round is a cold fit (it raised a
    TypeError, and ``benchmarks/active/active_labels.py --model community-ds`` with it)."""
    calls = []
    fit = CommunityDawidSkene.fit

    def counting_fit(self, labels):
        calls.append(labels.n_labels)
        return fit(self, labels)

    monkeypatch.setattr(CommunityDawidSkene, "fit", counting_fit)
    pool = LabelPool(sim.labels, sim.truth, start=1, random_state=0)
    record = simulate(
        CommunityDawidSkene(), pool, batch=30, budget=240, strategy="auto", refit=WarmRefit()
    )
    assert calls == [150, 180, 210, 240]
    assert list(record["n_answers"]) == calls


@pytest.mark.parametrize(
    ("make", "warm"),
    [
        (BayesianDawidSkene, True),
        (CommunityDawidSkene, False),  # fit takes no init
        (GPPL, True),
        (GPPLLaplace, False),  # fit takes init but refuses it (warm_starts = False)
    ],
)
def test_takes_init_says_which_models_warm_refit_can_continue(make, warm):
    assert takes_init(make()) is warm


def test_a_pair_baseline_is_refused_by_name(sim):
    pool = LabelPool(sim.labels, sim.truth, start=1, random_state=0)
    with pytest.raises(ValueError, match="'item_coverage': a label pool plays 'round_robin'"):
        pool.baseline("item_coverage", 3, np.random.default_rng(0))
