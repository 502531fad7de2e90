"""MACE's restarts (issue 40): the collapse they fix on a spammer-heavy crowd, the choice by
objective, and the bar against crowd-kit's MACE on the simulated and the shared sets.

crowd-kit's MACE() takes 5 s to 13 min a set (pandas group-bys, 10 × 50 iterations), so the
shared-set test compares with its accuracies recorded by
``benchmarks/labels/mace_vs_crowdkit.py`` (``results/mace_vs_crowdkit_crowdkit.csv``), and a
slow test refits crowd-kit on the small sets to check that the record still holds."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from crowdbayes import MACE, MajorityVote
from crowdbayes.datasets import load_labels
from crowdbayes.metrics import accuracy
from crowdbayes.models.labels._mace_scenarios import simulate_spammer_crowd

#: crowd-kit 1.4.2 MACE() accuracy on the gold tasks of each shared set
#: (benchmarks/labels/results/mace_vs_crowdkit_crowdkit.csv)
CROWDKIT = {
    "bluebird": 0.731481,
    "wsd": 0.994350,
    "temp": 0.939394,
    "rte": 0.925000,
    "dog": 0.830235,
    "duchenne": 0.786164,
    "web": 0.826611,
    "d_possent": 0.950000,
    "d_product": 0.929044,
    "s_adult": 0.762763,
    "trec": 0.597363,
    "s_rel": 0.500897,
}
#: sets where the default is still more than 0.005 below crowd-kit (MACE() at the time of
#: writing: duchenne 0.7799, web 0.8153, s_adult 0.7538); strict, so a fix shows up
BELOW_THE_BAR = {"duchenne", "web", "s_adult"}
BAR = 0.005


def fit(model, frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(frame)


@pytest.fixture(scope="module")
def one_class_spammers():
    """Binary, 2,000 tasks, 200 workers, 5 labels a task, 80% spammers who always give one
    class: a single run from the vote shares collapses the class prior onto one class."""
    return simulate_spammer_crowd(n_classes=2, spammer_share=0.8, spammer_kind="one-class")


def test_restarts_escape_the_collapsed_mode(one_class_spammers):
    crowd = one_class_spammers
    single = fit(MACE(n_restarts=0), crowd.labels)
    default = fit(MACE(), crowd.labels)
    vote = fit(MajorityVote(ties="random", random_state=0), crowd.labels)
    # the single run puts (almost) every task in one class: below majority vote (0.52, 0.62)
    assert single.prevalence_.min() < 0.01
    assert accuracy(crowd.truth, single.labels_) < accuracy(crowd.truth, vote.labels_)
    # the restart kept has the best objective, and a higher one than the single run's
    assert default.best_restart_ == int(np.argmax(default.restart_objectives_))
    assert default.objective_history_[-1] > single.objective_history_[-1]
    # 0.7335; crowd-kit's MACE() 0.546 on this set (benchmarks/labels/results/mace_vs_crowdkit.md)
    assert accuracy(crowd.truth, default.labels_) >= 0.72
    spam = default.spamming_["mean"]
    assert spam[crowd.spammers].mean() > spam.drop(crowd.spammers).mean() + 0.3


def test_restarts_are_reproducible_and_keep_the_vote_share_start(one_class_spammers):
    frame = one_class_spammers.labels
    first, second = fit(MACE(), frame), fit(MACE(), frame)
    np.testing.assert_array_equal(first.restart_objectives_, second.restart_objectives_)
    assert len(first.restart_objectives_) == 11  # the vote-share start and 10 random ones
    single = fit(MACE(n_restarts=0, restart_iter=50), frame)
    assert first.restart_objectives_[0] == pytest.approx(single.objective_history_[49])


def test_em_refuses_a_strategy_prior_below_its_smoothing():
    frame = simulate_spammer_crowd(n_tasks=20, n_workers=10, labels_per_task=3).labels
    with pytest.raises(ValueError, match="smoothing \\+ strategy_prior >= 1"):
        MACE(strategy_prior=0.5).fit(frame)


@pytest.mark.slow  # crowd-kit's MACE: 20-60 s on 10,000 labels
def test_at_least_crowdkit_on_a_spammer_heavy_crowd(one_class_spammers):
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    crowd = one_class_spammers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = crowdkit.MACE().fit_predict(crowd.labels)
    ours = fit(MACE(), crowd.labels)
    assert accuracy(crowd.truth, ours.labels_) >= accuracy(crowd.truth, theirs) - BAR


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name,
            marks=pytest.mark.xfail(strict=True, reason="issue 40: still below crowd-kit")
            if name in BELOW_THE_BAR
            else (),
        )
        for name in CROWDKIT
    ],
)
def test_at_least_crowdkit_on_the_shared_sets(data_root, name):
    data = load_labels(name)
    ours = fit(MACE(), data.labels)
    assert accuracy(data.gold, ours.labels_) >= CROWDKIT[name] - BAR


@pytest.mark.parametrize("name", ["bluebird", "wsd"])
def test_the_recorded_crowdkit_accuracies_hold(data_root, name):
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    data = load_labels(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = crowdkit.MACE().fit_predict(data.labels)
    assert accuracy(data.gold, theirs) == pytest.approx(CROWDKIT[name], abs=1e-6)
