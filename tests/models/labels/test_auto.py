"""The automatic label-model choice: hidden folds, the predictive score against brute force,
recovery on simulated crowds, persistence, and majority vote as the floor on every shared set."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import crowdbayes
from crowdbayes import DataWarning
from crowdbayes.data import Labels
from crowdbayes.datasets import load_labels, simulate_labels
from crowdbayes.models.labels import AutoLabelModel, DawidSkene, MajorityVote
from crowdbayes.models.labels.auto import (
    _predictive_log_scores,
    held_out_folds,
    held_out_label_scores,
)
from label_sets import GOLD_SETS


@pytest.fixture(scope="module")
def simulated():
    return simulate_labels(300, 30, 5, 3, accuracy_mean=0.7, random_state=1)


def test_each_fold_hides_at_most_one_label_per_task_from_eligible_rows(simulated):
    labels = simulated.to_labels()
    folds = held_out_folds(labels, 3, np.random.default_rng(0))
    per_task = np.bincount(labels.task_codes, minlength=labels.n_tasks)
    per_worker = np.bincount(labels.worker_codes, minlength=labels.n_workers)
    seen = np.concatenate(folds)
    assert len(np.unique(seen)) == len(seen)  # disjoint
    for rows in folds:
        tasks = labels.task_codes[rows]
        assert len(np.unique(tasks)) == len(tasks)
        assert (per_task[tasks] >= 3).all() and (per_worker[labels.worker_codes[rows]] >= 2).all()
        assert len(rows) == labels.n_tasks  # every task has 5 labels: each fold hides one each


def test_predictive_score_matches_a_loop_over_the_hidden_labels(simulated):
    labels = simulated.to_labels()
    model = DawidSkene().fit(labels)
    rows = np.arange(0, labels.n_labels, 7)
    fast = _predictive_log_scores(model, labels, rows)
    for position, row in enumerate(rows):
        task = labels.tasks[labels.task_codes[row]]
        worker = labels.workers[labels.worker_codes[row]]
        observed = labels.classes[labels.label_codes[row]]
        p = sum(
            model.probas_.loc[task, k] * model.confusion_.loc[(worker, k), observed]
            for k in labels.classes
        )
        assert fast[position] == pytest.approx(np.log(max(p, 1e-6)), rel=1e-10, abs=1e-12)


def test_worker_confusions_are_preferred_when_workers_differ(simulated):
    scores = held_out_label_scores(simulated.to_labels(), ("mv", "ds", "bayes-ds"))
    assert scores.index[0] in {"ds", "bayes-ds"}
    assert (scores["hidden"] == 3 * 300).all()
    assert scores["score"].is_monotonic_decreasing


def test_auto_holds_the_chosen_models_results_and_round_trips(simulated, tmp_path):
    labels = simulated.to_labels()
    model = AutoLabelModel(candidates=("mv", "ds"), random_state=0).fit(labels)
    assert model.choice_ == model.scores_.index[0]
    chosen = type(model.model_)(**model.model_.get_params()).fit(labels)
    pd.testing.assert_frame_equal(model.probas_, chosen.probas_)
    assert model.labels_.equals(chosen.labels_)
    path = tmp_path / "auto.npz"
    model.save(path)
    loaded = crowdbayes.load(path)
    assert loaded.choice_ == model.choice_
    pd.testing.assert_frame_equal(loaded.scores_, model.scores_)


def test_too_few_labels_per_task_fall_back_to_majority_vote_with_a_warning():
    frame = pd.DataFrame(
        {"task": [1, 1, 2, 2, 3, 3], "worker": list("abacbc"), "label": [0, 0, 1, 1, 0, 1]}
    )
    with pytest.warns(DataWarning, match="no task has 3"):
        model = AutoLabelModel().fit(Labels(frame))
    assert model.choice_ == "mv" and model.scores_ is None
    assert isinstance(model.model_, MajorityVote)


def test_unknown_candidates_are_refused_by_name(simulated):
    with pytest.raises(ValueError, match="unknown candidate model 'nope'"):
        AutoLabelModel(candidates=("mv", "nope")).fit(simulated.to_labels())


@pytest.mark.slow
@pytest.mark.parametrize("name", GOLD_SETS)
def test_auto_is_at_least_majority_vote_within_noise_on_every_shared_set(name, data_root):
    """Paired over the gold tasks: auto minus majority vote, within two standard errors of
    zero or above (``benchmarks/labels/results/auto_choice.md`` has the table)."""
    data = load_labels(name)
    labels = data.to_labels()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = AutoLabelModel().fit(labels)
        vote = MajorityVote(random_state=0).fit(labels)
    auto_hit = (auto.labels_.reindex(data.gold.index) == data.gold).to_numpy(float)
    vote_hit = (vote.labels_.reindex(data.gold.index) == data.gold).to_numpy(float)
    diff = auto_hit - vote_hit
    se = diff.std(ddof=1) / np.sqrt(len(diff)) if diff.any() else 0.0
    assert diff.mean() >= -2 * se, (auto.choice_, diff.mean(), se)


def test_the_command_line_prints_the_choice_and_the_scores(simulated, tmp_path, capsys):
    from crowdbayes.cli import main

    path = tmp_path / "labels.csv"
    simulated.labels.to_csv(path, index=False)
    out = tmp_path / "tasks.csv"
    code = main(["labels", "fit", str(path), "--model", "auto", "-o", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "choice      " in printed and "held-out label log-likelihood" in printed
    assert len(pd.read_csv(out)) == 300
