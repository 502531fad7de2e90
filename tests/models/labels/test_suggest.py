"""``suggest`` on the label models: which task (and worker) to ask next, and the gold-free
accuracy estimate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes import (
    BayesianDawidSkene,
    DawidSkene,
    Estimator,
    MajorityVote,
    NotFittedError,
)
from crowdbayes.annotators.questions import held_out_confusion, label_question_values
from crowdbayes.datasets import simulate_labels


@pytest.fixture(scope="module")
def data():
    sim = simulate_labels(200, 12, 3, 2, accuracy_mean=0.75, random_state=3)
    frame = sim.labels.assign(task="t" + sim.labels["task"].astype(str))
    frame["worker"] = "w" + frame["worker"].astype(str)
    return frame


@pytest.mark.parametrize("cls", [MajorityVote, DawidSkene, BayesianDawidSkene])
def test_suggest_returns_the_most_valuable_tasks_best_first(cls, data):
    model = cls().fit(data)
    table = model.suggest(10, strategy="information", random_state=0)
    assert list(table.columns) == ["task", "score"] and len(table) == 10
    assert table["task"].is_unique and table["score"].is_monotonic_decreasing
    assert set(table["task"]) <= set(model.probas_.index)
    # information gain is largest where the class is most uncertain, with the same workers
    everything = model.suggest(len(model.probas_), strategy="uncertainty", random_state=0)
    entropy = everything.set_index("task")["score"]
    assert entropy.loc[table["task"]].mean() > entropy.mean()


@pytest.mark.parametrize(
    ("cls", "task_only"),
    [(BayesianDawidSkene, "uncertainty_changes"), (DawidSkene, "uncertainty")],
)
def test_auto_asks_by_the_models_task_rule_for_anyone_and_by_information_for_a_named_worker(
    cls, task_only, data
):
    """``auto``: the model's task-only rule (BayesianDawidSkene's was chosen leave one set out
    when it chooses; the others keep the entropy), the information gain with a named worker."""
    model = cls().fit(data)

    def same(strategy, **where):
        auto = model.suggest(8, random_state=0, **where)
        pd.testing.assert_frame_equal(
            auto, model.suggest(8, strategy=strategy, random_state=0, **where)
        )

    same(task_only)
    same(task_only, candidates=list(model.probas_.index[:30]))
    same("information", available=["w0", "w1"])
    same("information", candidates=pd.DataFrame({"task": model.probas_.index[:9], "worker": "w2"}))


def test_same_seed_same_suggestions_and_random_baseline(data):
    model = BayesianDawidSkene().fit(data)
    a = model.suggest(15, strategy="random", random_state=1)
    b = model.suggest(15, strategy="random", random_state=1)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(model.suggest(15, strategy="random", random_state=2))


def test_confidence_leaves_decided_tasks_out(data):
    model = BayesianDawidSkene().fit(data)
    confident = model.probas_.max(axis=1) >= 0.9
    table = model.suggest(len(model.probas_), confidence=0.9)
    assert set(table["task"]) == set(model.probas_.index[~confident])


def test_new_tasks_and_available_workers(data):
    model = BayesianDawidSkene().fit(data)
    tasks = ["t0", "t1", "brand-new"]
    table = model.suggest(6, candidates=tasks, available=["w0", "w1", "stranger"])
    assert len(table) == 6 and set(table.columns) == {"task", "worker", "score"}
    # every task once before any task twice
    assert table["task"].iloc[:3].is_unique
    # a task never labelled has the prevalence as posterior: worth asking
    assert "brand-new" in set(table["task"])
    pairs = pd.DataFrame({"task": ["t0", "t0"], "worker": ["w0", "w5"]})
    only = model.suggest(5, candidates=pairs)
    assert len(only) == 2 and set(only["worker"]) == {"w0", "w5"}


def test_whom_to_ask_follows_the_held_out_confusion_not_the_fitted_one(data):
    """For a pair of workers whom the fitted and the held-out matrices order differently, the
    one the held-out matrices value more is suggested (and it is not a tie)."""
    model = BayesianDawidSkene().fit(data)
    task = "t0"
    p = model.probas_.loc[[task]].to_numpy()
    workers = model.held_out_counts_.index.get_level_values(0)[::2]
    held_out, _ = held_out_confusion(model.held_out_counts_.to_numpy().reshape(-1, 2, 2))
    fitted = model.confusion_.to_numpy().reshape(-1, 2, 2)
    value_held_out = label_question_values(np.repeat(p, len(workers), 0), held_out, "information")
    value_fitted = label_question_values(np.repeat(p, len(workers), 0), fitted, "information")
    disagreeing = [
        (a, b)
        for a in range(len(workers))
        for b in range(len(workers))
        if value_fitted[a] > value_fitted[b] and value_held_out[b] > value_held_out[a] + 1e-6
    ]
    assert disagreeing, "the fixture should have workers the two rankings order differently"
    for a, b in disagreeing[:5]:
        table = model.suggest(
            1, candidates=[task], available=[workers[a], workers[b]], strategy="information"
        )
        assert table["worker"].iloc[0] == workers[b]


def test_expected_accuracy_is_the_mean_posterior_of_the_answer(data):
    model = BayesianDawidSkene().fit(data)
    assert model.expected_accuracy() == pytest.approx(model.probas_.max(axis=1).mean())
    tasks = model.probas_.index[:5]
    assert model.expected_accuracy(tasks) == pytest.approx(
        model.probas_.loc[tasks].max(axis=1).mean()
    )


def test_bad_requests_are_refused_by_name(data):
    model = BayesianDawidSkene()
    with pytest.raises(NotFittedError):
        model.suggest(3)
    model.fit(data)
    with pytest.raises(ValueError, match="n must be a positive integer; got 0"):
        model.suggest(0)
    with pytest.raises(ValueError, match="strategy must be one of 'auto', 'information'"):
        model.suggest(3, strategy="psychic")
    with pytest.raises(ValueError, match=r"confidence must be a number in \(0, 1\)"):
        model.suggest(3, confidence=1.5)
    with pytest.raises(ValueError, match="a table needs a 'task' column"):
        model.suggest(3, candidates=pd.DataFrame({"item": ["t0"]}))
    with pytest.raises(ValueError, match="available: no worker given"):
        model.suggest(3, available=[])


def test_a_model_without_question_strategies_cannot_suggest():
    class Plain(Estimator):
        _abstract = True

        def __init__(self) -> None:
            pass

    plain = Plain()
    plain.fitted_ = True
    # suggesting is a capability of the roles that choose questions (crowdbayes.roles)
    assert not Plain.tags.suggest and not hasattr(plain, "suggest")


def test_held_out_counts_follow_partial_fit_and_survive_save(data, tmp_path):
    tasks = data["task"].unique()
    first = data[data["task"].isin(tasks[:150])]
    # the batch brings workers the first fit has not seen
    first = first[~first["worker"].isin(["w10", "w11"])]
    model = BayesianDawidSkene().fit(first)
    before = model.held_out_counts_.copy()
    assert before.index.equals(model.confusion_.index)
    # every label of a task with two or more workers counts once
    counted = first.groupby("task")["worker"].transform("nunique") >= 2
    assert before.to_numpy().sum() == pytest.approx(counted.sum())
    batch = data[data["task"].isin(tasks[150:])]
    model.partial_fit(batch)
    assert model.held_out_counts_.index.equals(model.confusion_.index)
    assert {"w10", "w11"} <= set(model.held_out_counts_.index.get_level_values(0))
    assert model.held_out_counts_.notna().all().all()
    assert model.held_out_counts_.to_numpy().sum() == pytest.approx(counted.sum() + len(batch))
    assert (model.held_out_counts_.reindex(before.index) >= before - 1e-12).all().all()
    model.save(tmp_path / "m.crowdbayes")
    loaded = BayesianDawidSkene.load(tmp_path / "m.crowdbayes")
    pd.testing.assert_frame_equal(loaded.held_out_counts_, model.held_out_counts_)
