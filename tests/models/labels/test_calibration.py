"""The exponent learnt from held-out labels (``crowdbayes.models.labels._calibration``): exact
leave-one-label-out pieces, answers kept, and the calibration target of issue 40 on simulated
task-difficulty data (GLAD)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit, softmax

from crowdbayes import BayesianDawidSkene, HierarchicalAnnotation, Labels, load

# the defaults protocol's simulated label scenarios (``dynamic_overlap``)
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks" / "defaults"))
from crowdbayes.models.labels._calibration import (
    MIN_EXPONENT,
    HeldOutLabels,
    fit_exponent,
    held_out_labels,
    temper,
)


def glad_labels(seed: int, n_tasks: int = 500, n_workers: int = 50, per_task: int = 5):
    """Binary labels of GLAD's form (Whitehill et al. 2009): worker j is right with probability
    σ(logit(a_j) β_i), a_j ~ U(0.6, 0.9), easiness β_i ~ LogNormal(0, 1); and the truth."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(2, size=n_tasks)
    easiness = np.exp(rng.normal(0.0, 1.0, n_tasks))
    accuracy = rng.uniform(0.6, 0.9, n_workers)
    task = np.repeat(np.arange(n_tasks), per_task)
    worker = np.concatenate([rng.choice(n_workers, per_task, replace=False) for _ in truth])
    right = rng.random(len(task)) < expit(logit(accuracy[worker]) * easiness[task])
    label = np.where(right, truth[task], 1 - truth[task])
    frame = pd.DataFrame(
        {"task": [f"t{i}" for i in task], "worker": [f"w{j}" for j in worker], "label": label}
    )
    return Labels(frame, classes=[0, 1]), pd.Series(truth, index=[f"t{i}" for i in range(n_tasks)])


def gap(model, truth: pd.Series) -> float:
    """Mean claimed probability of the answer minus accuracy."""
    claimed = model.probas_.max(axis=1).reindex(truth.index).mean()
    return float(claimed - (model.labels_.reindex(truth.index) == truth).mean())


def _ds_posterior(labels: Labels, theta: np.ndarray, prior: np.ndarray, keep) -> np.ndarray:
    """Dawid–Skene's posterior (K, n_tasks) from the labels ``keep`` with fixed θ."""
    log_post = np.tile(np.log(prior)[:, None], (1, labels.n_tasks))
    t, w, x = (
        codes[keep] for codes in (labels.task_codes, labels.worker_codes, labels.label_codes)
    )
    np.add.at(log_post.T, t, np.log(theta[w, :, x]))
    return softmax(log_post, axis=0)


def test_held_out_pieces_are_exact_for_fixed_worker_parameters():
    """Dividing a label's factor out of the posterior is the posterior of the other labels; the
    worker's row without the label is the row of its concentrations minus the label's count."""
    labels, _ = glad_labels(0, n_tasks=40, n_workers=6, per_task=4)
    rng = np.random.default_rng(1)
    concentration = rng.uniform(0.5, 8.0, (labels.n_workers, 2, 2))
    theta = concentration / concentration.sum(axis=2, keepdims=True)
    prior = np.array([0.3, 0.7])
    every = np.ones(labels.n_labels, dtype=bool)
    probas = _ds_posterior(labels, theta, prior, every)
    held = held_out_labels(labels, probas, concentration, expected_log=False)
    assert held.log_posterior.shape == (2, labels.n_labels)  # every label can be held out here
    for position, row in enumerate(held.rows):
        keep = every.copy()
        keep[row] = False
        task, worker, label = (
            codes[row] for codes in (labels.task_codes, labels.worker_codes, labels.label_codes)
        )
        without = _ds_posterior(labels, theta, prior, keep)[:, task]
        np.testing.assert_allclose(np.exp(held.log_posterior[:, position]), without, atol=1e-12)
        counts = concentration[worker].copy()
        counts[:, label] -= probas[:, task]
        expected = counts[:, label] / counts.sum(axis=1)
        np.testing.assert_allclose(held.likelihood[:, position], expected, atol=1e-12)


def _uneven(labels: Labels) -> Labels:
    """``labels`` without its first row, so that the tasks' counts differ."""
    rows = pd.DataFrame(
        {"task": labels.task_codes, "worker": labels.worker_codes, "label": labels.label_codes}
    ).drop(index=[0])
    return Labels(rows, classes=[0, 1])


def test_prequential_pieces_are_exact_for_fixed_worker_parameters():
    """Where the counts differ, each label with two or more earlier labels of its task is read
    against the posterior of those earlier labels alone (with the fit's mean class shares as
    the prior); a fixed overlap keeps every label, each against all the others."""
    from crowdbayes.models.labels._held_out import fixed_overlap, held_out_rows

    labels, _ = glad_labels(0, n_tasks=40, n_workers=6, per_task=4)
    assert fixed_overlap(labels)
    uneven = _uneven(labels)
    assert not fixed_overlap(uneven)
    rng = np.random.default_rng(1)
    concentration = rng.uniform(0.5, 8.0, (uneven.n_workers, 2, 2))
    theta = concentration / concentration.sum(axis=2, keepdims=True)
    every = np.ones(uneven.n_labels, dtype=bool)
    probas = _ds_posterior(uneven, theta, np.array([0.3, 0.7]), every)
    held = held_out_labels(uneven, probas, concentration, expected_log=False)
    place = pd.Series(np.arange(uneven.n_labels)).groupby(uneven.task_codes).cumcount()
    np.testing.assert_array_equal(held.rows, np.flatnonzero(place.to_numpy() >= 2))
    assert len(held.rows) < len(held_out_rows(uneven))
    for position, row in enumerate(held.rows):
        task = uneven.task_codes[row]
        earlier = (uneven.task_codes == task) & (np.arange(uneven.n_labels) < row)
        expected = _ds_posterior(uneven, theta, probas.mean(axis=1), earlier)[:, task]
        np.testing.assert_allclose(np.exp(held.log_posterior[:, position]), expected, atol=1e-12)


def test_exponent_recovers_the_tempering_that_generated_the_labels():
    """Labels drawn from the posterior p^0.5 (one class per task, then the label through a
    known row): the held-out score is best near a = 0.5, and a = 1 when drawn from p."""
    rng = np.random.default_rng(0)
    n = 20_000
    log_posterior = np.log(rng.dirichlet([0.3, 0.3], n))
    row = np.array([[0.85, 0.15], [0.2, 0.8]])
    for true_exponent, low, high in ((0.5, 0.45, 0.55), (1.0, 0.95, 1.0)):
        classes = (rng.random(n) < softmax(true_exponent * log_posterior, axis=1)[:, 1]).astype(int)
        observed = (rng.random(n) < row[classes, 1]).astype(int)
        held = HeldOutLabels(log_posterior.T, row[:, observed])
        assert low <= fit_exponent(held) <= high


def test_temper_keeps_answers_and_certain_tasks():
    probas = np.array([[0.9, 0.5, 1.0, 0.3], [0.1, 0.5, 0.0, 0.7]])
    tempered = temper(probas, 0.5)
    np.testing.assert_allclose(tempered.sum(axis=0), 1.0)
    np.testing.assert_array_equal(np.argmax(tempered, axis=0), np.argmax(probas, axis=0))
    np.testing.assert_array_equal(tempered[:, 2], [1.0, 0.0])  # a gold task stays certain
    assert tempered[0, 0] == pytest.approx(3 / 4)  # √0.9 / (√0.9 + √0.1)
    assert temper(probas, 1.0) is probas
    assert fit_exponent(None) == 1.0


def claimed_gap(probas: pd.DataFrame, truth: pd.Series) -> float:
    """Mean claimed probability of the answer minus accuracy, from probabilities alone."""
    probas = probas.reindex(truth.index)
    return float(probas.max(axis=1).mean() - (probas.idxmax(axis=1) == truth).mean())


def test_calibration_leaves_the_chains_and_the_answers_alone():
    """The same seed with and without: the same answers, and the plain posterior is the
    calibrated one raised to 1 / a (the exponent acts after the chains)."""
    labels, _ = glad_labels(2, n_tasks=150, n_workers=20)
    options = {"random_state": 0, "n_chains": 2, "n_warmup": 60, "n_samples": 60}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = HierarchicalAnnotation(calibrate=False, **options).fit(labels)
        calibrated = HierarchicalAnnotation(**options).fit(labels)
    assert plain.calibration_exponent_ == 1.0
    exponent = calibrated.calibration_exponent_
    assert MIN_EXPONENT < exponent < 1.0
    pd.testing.assert_series_equal(plain.labels_, calibrated.labels_)
    undone = temper(calibrated.probas_.to_numpy().T, 1 / exponent).T
    np.testing.assert_allclose(undone, plain.probas_.to_numpy(), atol=1e-9)


@pytest.mark.slow
def test_calibrated_hierarchical_model_meets_the_target_on_task_difficulty():
    """Issue 40's target: |claimed − actual accuracy| ≤ 0.03 on GLAD-difficulty data (four
    draws pooled; single draws vary: +0.061 on seed 0, whose chains mix badly), which the
    plain posterior (the calibrated one raised to 1 / a, as the test above checks) misses."""
    before, after = [], []
    for seed in range(4):
        labels, truth = glad_labels(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = HierarchicalAnnotation(random_state=0).fit(labels)
        exponent = model.calibration_exponent_
        assert MIN_EXPONENT < exponent < 0.9
        plain = pd.DataFrame(
            temper(model.probas_.to_numpy().T, 1 / exponent).T,
            index=model.probas_.index,
            columns=model.probas_.columns,
        )
        before.append(claimed_gap(plain, truth))
        after.append(claimed_gap(model.probas_, truth))
    assert np.mean(before) > 0.03
    assert abs(np.mean(after)) <= 0.03


def test_calibrated_bayesian_dawid_skene_is_less_over_confident(tmp_path):
    labels, truth = glad_labels(0)
    plain = BayesianDawidSkene().fit(labels)
    calibrated = BayesianDawidSkene(calibrate=True).fit(labels)
    pd.testing.assert_series_equal(plain.labels_, calibrated.labels_)
    assert plain.calibration_exponent_ == 1.0 and calibrated.calibration_exponent_ < 0.9
    assert gap(plain, truth) - gap(calibrated, truth) > 0.01
    # the exponent is saved with the model
    calibrated.save(tmp_path / "model.npz")
    loaded = load(tmp_path / "model.npz")
    assert loaded.calibration_exponent_ == calibrated.calibration_exponent_
    pd.testing.assert_frame_equal(loaded.probas_, calibrated.probas_)
    # an update reports the batch's posterior as it is
    more, _ = glad_labels(5, n_tasks=50)
    more = Labels(more.to_frame().assign(task=lambda f: "new-" + f["task"]), classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert calibrated.partial_fit(more).calibration_exponent_ == 1.0


def test_no_label_to_hold_out_leaves_the_posterior_as_it_is():
    """Two labels a task: nothing can be held out, the exponent is 1."""
    labels, _ = glad_labels(0, n_tasks=60, n_workers=10, per_task=2)
    model = HierarchicalAnnotation(random_state=0, n_chains=1, n_warmup=20, n_samples=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert model.fit(labels).calibration_exponent_ == 1.0


def dynamic_overlap(seed: int, difficulty_sd: float = 0.0):
    """The defaults protocol's dynamic-overlap scenario (binary, labels in arrival order until
    one class leads by 2, at most 5; ``benchmarks/defaults/_label_scenarios.py``), with GLAD
    task difficulty of spread ``difficulty_sd``: labels and truth."""
    from _label_scenarios import LABEL_SCENARIOS, scaled, simulate_label_scenario

    scenario = next(s for s in LABEL_SCENARIOS if s.dynamic_overlap)
    draw = simulate_label_scenario(scaled(scenario, difficulty_sd=difficulty_sd), seed)
    return draw.labels, draw.truth


def test_adaptively_collected_labels_are_read_prequentially(monkeypatch):
    """A third label goes to a task *because* its first two disagreed: hiding one of those and
    keeping the third reads that selection as over-confidence. Read against the earlier labels
    only, the check is not fooled: where the model holds the exponent stays near 1 and the claim
    within 0.03; with task difficulty, where the plain posterior claims too much, it still
    tempers (on this draw too far: −0.063 against +0.039 untempered). Hiding every
    label against all the others tempers the well-specified fit to the floor."""
    import crowdbayes.models.labels._calibration as calibration

    labels, truth = dynamic_overlap(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = HierarchicalAnnotation(random_state=0, n_jobs=1).fit(labels)
        assert fit.calibration_exponent_ >= 0.9 and abs(gap(fit, truth)) <= 0.03
        hard, hard_truth = dynamic_overlap(0, difficulty_sd=1.0)
        options = {"random_state": 0, "n_jobs": 1}
        tempered = HierarchicalAnnotation(**options).fit(hard)
        plain = HierarchicalAnnotation(calibrate=False, **options).fit(hard)
    assert tempered.calibration_exponent_ < 0.9 and gap(plain, hard_truth) > 0.02
    monkeypatch.setattr(calibration, "fixed_overlap", lambda labels: True)  # every label hidden
    collapsed = BayesianDawidSkene(calibrate=True).fit(labels)
    assert collapsed.calibration_exponent_ < 0.2 and gap(collapsed, truth) < -0.2
