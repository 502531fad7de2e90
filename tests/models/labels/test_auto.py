"""The automatic label-model choice: hidden folds, the predictive score against brute force,
the task-information gain (its identities and its blindness to one-button workers), the
fall-back on majority vote, recovery on simulated crowds (spammer-heavy ones included),
persistence, and majority vote as the floor on every shared set."""

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
from crowdbayes.models.labels._mace_scenarios import simulate_spammer_crowd
from crowdbayes.models.labels.auto import (
    _predictive_log_scores,
    choose_candidate,
    held_out_folds,
    held_out_label_scores,
    task_information_gains,
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


def _hidden_rows(labels, n_rows, seed):
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(labels.n_labels, n_rows, replace=False))
    predictive = rng.dirichlet(np.ones(labels.n_classes), size=n_rows)
    return rows, predictive


def test_the_gain_is_the_log_score_of_guessing_the_task_among_the_workers_hidden_ones(simulated):
    """g_ij = log n_j + log r_j(i | x_ij), r_j(i | l) = p_i(l) / sum over j's rows of p(l)."""
    labels = simulated.to_labels()
    rows, predictive = _hidden_rows(labels, 400, 0)
    gains = task_information_gains(labels, rows, predictive)
    workers, observed = labels.worker_codes[rows], labels.label_codes[rows]
    for position in range(0, len(rows), 13):
        same = workers == workers[position]
        x = observed[position]
        r = predictive[position, x] / predictive[same, x].sum()
        assert gains[position] == pytest.approx(np.log(same.sum()) + np.log(r), abs=1e-12)


def test_the_gain_ignores_worker_label_frequencies_and_uninformative_models(simulated):
    labels = simulated.to_labels()
    rows, predictive = _hidden_rows(labels, 400, 1)
    gains = task_information_gains(labels, rows, predictive)
    # rescaling every p_i(l) of a worker by c_j(l) changes the worker's label frequencies only
    scale = np.random.default_rng(2).uniform(0.1, 3.0, size=(labels.n_workers, labels.n_classes))
    rescaled = predictive * scale[labels.worker_codes[rows]]
    np.testing.assert_allclose(task_information_gains(labels, rows, rescaled), gains, atol=1e-12)
    # a model whose tasks all look alike to each worker gains nothing, however it sees workers
    # (so do the labels of a one-button worker under any model whose confusion rows for it agree)
    alike = scale[labels.worker_codes[rows]] / scale.sum(axis=1)[labels.worker_codes[rows], None]
    np.testing.assert_allclose(task_information_gains(labels, rows, alike), 0.0, atol=1e-12)


def test_the_choice_falls_back_on_majority_vote_unless_beaten_beyond_noise():
    def table(rows):
        frame = pd.DataFrame(rows, columns=["model", "score", "over_baseline", "over_baseline_se"])
        return frame.set_index("model").sort_values("score", ascending=False)

    close = table(
        [("one-coin", 0.10, 0.01, 0.01), ("mv", 0.09, 0.0, 0.0), ("ds", 0.0, -0.09, 0.02)]
    )
    assert choose_candidate(close) == "mv"
    # the best-scoring candidate is noisy; the second beats majority vote beyond noise
    noisy = table([("ds", 0.20, 0.10, 0.06), ("bayes-ds", 0.18, 0.08, 0.01), ("mv", 0.10, 0, 0)])
    assert choose_candidate(noisy) == "bayes-ds"
    assert choose_candidate(noisy.drop(index="mv"), baseline="mv") == "ds"


def test_auto_does_not_follow_one_button_workers_below_majority_vote():
    """A crowd of 70% spammers, half of them always pressing one button: the plain held-out
    log score prefers one-coin Dawid-Skene, which puts every task in one class (reading the
    pressers of that class as always right, the others as always wrong) and loses to
    majority vote; the task-information gain does not follow it (issue 40,
    ``benchmarks/defaults/results/defaults_report.md``)."""
    for seed in range(3):
        crowd = simulate_spammer_crowd(
            n_tasks=400, n_workers=100, spammer_kind="mixed", random_state=seed
        )
        labels = Labels(crowd.labels, classes=[0, 1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            auto = AutoLabelModel().fit(labels)
            vote = MajorityVote(random_state=0).fit(labels)
            one_coin = DawidSkene(one_coin=True).fit(labels)

        def hits(model, truth=crowd.truth):
            return (model.labels_.reindex(truth.index) == truth).to_numpy(float)

        # the failure the gain avoids is present: the plain log score's pick loses to the vote
        assert auto.scores_["log_score"].idxmax() == "one-coin"
        assert hits(one_coin).mean() < hits(vote).mean() - 0.1
        diff = hits(auto) - hits(vote)
        se = diff.std(ddof=1) / np.sqrt(len(diff)) if diff.any() else 0.0
        assert diff.mean() >= -2 * se, (seed, auto.choice_, diff.mean(), se)


def test_worker_confusions_are_preferred_when_workers_differ(simulated):
    scores = held_out_label_scores(simulated.to_labels(), ("mv", "ds", "bayes-ds"))
    assert scores.index[0] in {"ds", "bayes-ds"}
    assert (scores["hidden"] == 3 * 300).all()
    assert scores["score"].is_monotonic_decreasing


def test_auto_holds_the_chosen_models_results_and_round_trips(simulated, tmp_path):
    labels = simulated.to_labels()
    model = AutoLabelModel(candidates=("mv", "ds"), random_state=0).fit(labels)
    assert model.choice_ == choose_candidate(model.scores_)
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
    assert "choice      " in printed and "held-out" in printed
    assert len(pd.read_csv(out)) == 300
