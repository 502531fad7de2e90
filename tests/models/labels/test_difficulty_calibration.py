"""The task-difficulty half of the calibration exponent (``crowdbayes.models.labels._difficulty``,
:func:`difficulty_exponent`): GLAD's easiness on the odds of a correct label, its spread by
marginal likelihood, the projection on the tempered family, and issue 40's target on three
classes with three labels a task."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit, logsumexp, softmax

from crowdbayes import HierarchicalAnnotation, Labels
from crowdbayes.models.labels import _difficulty
from crowdbayes.models.labels._calibration import (
    calibration_exponent,
    fit_exponent,
    held_out_labels,
    temper,
)
from crowdbayes.models.labels._difficulty import (
    LOG_EASINESS,
    difficulty_exponent,
    easiness_log_likelihood,
    eligible_tasks,
    fit_spread,
    project_exponent,
)
from crowdbayes.models.labels._held_out import best_exponent


def glad_labels(seed, *, n_classes=3, per_task=3, n_tasks=500, n_workers=50, sd=1.2, rows=None):
    """Labels of ``n_classes`` classes, ``per_task`` a task from distinct workers; the task's
    easiness a ~ LogNormal(0, sd²). Without ``rows``: worker j is right with probability
    σ(logit(u_j) a), u_j ~ U(0.6, 0.9), otherwise a uniform other class (the simulation of
    ``benchmarks/defaults/_label_scenarios.py``). With ``rows`` (workers, K, K): the worker's
    row with the odds of a correct label raised to a (the model of the module). Returns the
    labels and the truth."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(n_classes, size=n_tasks)
    easiness = np.exp(rng.normal(0.0, sd, n_tasks))
    task = np.repeat(np.arange(n_tasks), per_task)
    worker = np.concatenate([rng.choice(n_workers, per_task, replace=False) for _ in truth])
    true = truth[task]
    if rows is None:
        accuracy = rng.uniform(0.6, 0.9, n_workers)
        right = rng.random(len(task)) < expit(logit(accuracy[worker]) * easiness[task])
        other = (true + rng.integers(1, n_classes, len(task))) % n_classes
        label = np.where(right, true, other)
    else:
        row = rows[worker, true].copy()  # n, K
        diagonal = row[np.arange(len(task)), true]
        correct = expit(easiness[task] * logit(diagonal))
        row *= ((1 - correct) / (1 - diagonal))[:, None]
        row[np.arange(len(task)), true] = correct
        label = (rng.random(len(task))[:, None] > np.cumsum(row, axis=1)).sum(axis=1)
    frame = pd.DataFrame(
        {"task": [f"t{i}" for i in task], "worker": [f"w{j}" for j in worker], "label": label}
    )
    truth = pd.Series(truth, index=[f"t{i}" for i in range(n_tasks)])
    return Labels(frame, classes=list(range(n_classes))), truth


def known_rows(n_workers: int, n_classes: int, seed: int = 0) -> np.ndarray:
    """Confusion rows with diagonals in [0.6, 0.9] and random off-diagonals."""
    rng = np.random.default_rng(seed)
    rows = rng.dirichlet(np.ones(n_classes - 1), (n_workers, n_classes))
    diagonal = rng.uniform(0.6, 0.9, (n_workers, n_classes))
    out = np.empty((n_workers, n_classes, n_classes))
    for k in range(n_classes):
        others = [x for x in range(n_classes) if x != k]
        out[:, k, others] = rows[:, k] * (1 - diagonal[:, k, None])
        out[:, k, k] = diagonal[:, k]
    return out


def in_codes(labels: Labels, rows: np.ndarray, truth: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` in the order of the labels' worker codes and the truth in task-code order."""
    workers = [int(name[1:]) for name in labels.workers]
    return rows[workers], truth.reindex(labels.tasks).to_numpy()


def test_easiness_evidence_is_glads_form_on_the_rows_without_the_label():
    """At a = 1 the evidence is Dawid–Skene's with each worker's row less the label's expected
    count; at any a the row's odds of a correct label are raised to a, the wrong classes keep
    their proportions."""
    labels, _ = glad_labels(0, n_tasks=30, n_workers=6, per_task=4)
    rng = np.random.default_rng(1)
    concentration = rng.uniform(1.5, 8.0, (labels.n_workers, 3, 3))
    probas = rng.dirichlet(np.ones(3), labels.n_tasks).T
    log_likelihood, chosen = easiness_log_likelihood(labels, probas, concentration)
    assert chosen.all() and log_likelihood.shape == (len(LOG_EASINESS), labels.n_tasks)
    prevalence = probas.mean(axis=1)
    for g in (0, int(np.argmin(np.abs(LOG_EASINESS))), 50):
        easiness = np.exp(LOG_EASINESS[g])
        expected = np.empty(labels.n_tasks)
        for i in range(labels.n_tasks):
            per_class = np.log(prevalence).copy()
            for row in np.flatnonzero(labels.task_codes == i):
                j, x = labels.worker_codes[row], labels.label_codes[row]
                counts = concentration[j].copy()
                counts[:, x] -= probas[:, i]
                theta = counts / counts.sum(axis=1, keepdims=True)
                for k in range(3):
                    right = expit(easiness * logit(theta[k, k]))
                    if x == k:
                        per_class[k] += np.log(right)
                    else:
                        per_class[k] += np.log(theta[k, x] * (1 - right) / (1 - theta[k, k]))
            expected[i] = logsumexp(per_class)
        np.testing.assert_allclose(log_likelihood[g], expected, rtol=1e-9)


@pytest.mark.parametrize(("spread", "low", "high"), [(0.0, 0.0, 0.15), (0.8, 0.65, 0.95)])
def test_spread_is_recovered_from_labels_of_the_model(spread, low, high):
    """Labels drawn from the difficulty model with known rows (concentrations so large that a
    label's own count is negligible): the spread of log easiness is found again, and 0 (no
    task effect) stays near 0."""
    rows = known_rows(40, 3)
    labels, truth = glad_labels(3, per_task=5, n_tasks=3000, n_workers=40, sd=spread, rows=rows)
    rows, truth = in_codes(labels, known_rows(40, 3), truth)
    probas = np.eye(3)[truth].T
    log_likelihood, _ = easiness_log_likelihood(labels, probas, rows * 1e7)
    assert low <= fit_spread(log_likelihood) <= high


def test_projection_recovers_a_power_and_keeps_one():
    rng = np.random.default_rng(0)
    probas = rng.dirichlet([0.5, 0.5, 0.5], 400).T
    assert project_exponent(probas, temper(probas, 0.6)) == pytest.approx(0.6, abs=0.01)
    assert project_exponent(probas, probas) == 1.0


def test_no_task_with_three_labels_leaves_the_exponent_at_one():
    """Two labels a task identify no spread."""
    labels, truth = glad_labels(0, per_task=2)
    probas = np.eye(3)[truth.reindex(labels.tasks).to_numpy()].T * 0.9 + 0.1 / 3
    assert difficulty_exponent(labels, probas, np.ones((labels.n_workers, 3, 3))) == 1.0


def test_labels_without_a_task_effect_stay_calibrated():
    """Labels of the model without a task effect, the exact posterior (rows known): the spread
    found is small, and the claimed probability stays within 0.03 of the accuracy (the
    posterior is calibrated to start with)."""
    labels, truth = glad_labels(1, per_task=5, sd=0.0, rows=known_rows(50, 3))
    rows, truth_codes = in_codes(labels, known_rows(50, 3), truth)
    logits = np.zeros((3, labels.n_tasks))
    np.add.at(logits.T, labels.task_codes, np.log(rows[labels.worker_codes, :, labels.label_codes]))
    probas = softmax(logits, axis=0)  # the exact posterior with the rows known
    log_likelihood, _ = easiness_log_likelihood(labels, probas, rows * 1e7)
    assert fit_spread(log_likelihood) <= 0.4
    tempered = temper(probas, difficulty_exponent(labels, probas, rows * 1e7))
    correct = np.argmax(probas, axis=0) == truth_codes
    assert abs(tempered.max(axis=0).mean() - correct.mean()) <= 0.03


def gap(probas: pd.DataFrame, labels_: pd.Series, truth: pd.Series) -> float:
    """Mean claimed probability of the answer minus accuracy."""
    claimed = probas.max(axis=1).reindex(truth.index).mean()
    return float(claimed - (labels_.reindex(truth.index) == truth).mean())


@pytest.mark.slow
def test_three_classes_three_labels_closes_most_of_the_gap():
    """The scenario the held-out exponent alone misses (three classes, three labels a task, GLAD
    difficulty; two draws pooled): the answers are kept, the plain posterior (the calibrated
    one raised to 1 / a) is over-confident by more than 0.03, and the calibrated one by at
    least 0.02 less, without turning under-confident. Issue 40's ≤ 0.03 is met on the
    benchmark's draws (``benchmarks/defaults/results/calibration.md``) but not on every pair of
    draws: on seeds 10–15 of this simulation the pooled gap went from +0.064 to +0.032."""
    before, after = [], []
    for seed in (10, 11):
        labels, truth = glad_labels(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = HierarchicalAnnotation(random_state=0).fit(labels)
        exponent = model.calibration_exponent_
        assert exponent < 0.97
        plain = temper(model.probas_.to_numpy().T, 1 / exponent)
        answers = model.probas_.columns[np.argmax(plain, axis=0)]
        np.testing.assert_array_equal(answers, model.labels_.to_numpy())
        frame = pd.DataFrame(plain.T, index=model.probas_.index, columns=model.probas_.columns)
        before.append(gap(frame, model.labels_, truth))
        after.append(gap(model.probas_, model.labels_, truth))
    assert np.mean(before) > 0.03
    assert -0.03 <= np.mean(after) <= np.mean(before) - 0.02


def exact_posterior_fit(labels: Labels, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A fit with the worker rows known up to a unit prior: the concentration 1 + 300 θ and the
    exact task posterior (class-major) under its mean rows."""
    concentration = 1.0 + 300 * rows
    theta = concentration / concentration.sum(axis=2, keepdims=True)
    logits = np.zeros((rows.shape[1], labels.n_tasks))
    np.add.at(
        logits.T, labels.task_codes, np.log(theta[labels.worker_codes, :, labels.label_codes])
    )
    return softmax(logits, axis=0), concentration


def test_difficulty_part_sees_the_task_effect_held_out_labels_miss():
    """Three classes, three labels a task: with a task effect (spread 1.2) the held-out part
    stays near 1 and the reported exponent comes from the difficulty part, well below what the
    same rows and draw without a task effect give."""
    exponents = {}
    for sd in (0.0, 1.2):
        labels, truth = glad_labels(3, n_tasks=600, n_workers=20, sd=sd, rows=known_rows(20, 3))
        rows, _ = in_codes(labels, known_rows(20, 3), truth)
        probas, concentration = exact_posterior_fit(labels, rows)
        held = held_out_labels(labels, probas, concentration, expected_log=False)
        exponents[sd] = calibration_exponent(labels, probas, concentration, expected_log=False)
    assert fit_exponent(held) >= 0.95
    assert exponents[1.2] <= 0.75
    assert exponents[1.2] <= exponents[0.0] - 0.15


def test_a_cap_on_the_tasks_thins_them_evenly_and_changes_nothing_below_it(monkeypatch):
    """At or below :data:`MAX_TASKS` eligible tasks every one enters (the same evidence and
    exponent); above it, exactly that many, evenly spaced, the same on every call."""
    labels, truth = glad_labels(4, per_task=4, n_tasks=300, n_workers=20)
    rows, _ = in_codes(labels, known_rows(20, 3), truth)
    probas, concentration = exact_posterior_fit(labels, rows)
    full, chosen = easiness_log_likelihood(labels, probas, concentration)
    exponent = difficulty_exponent(labels, probas, concentration)
    monkeypatch.setattr(_difficulty, "MAX_TASKS", 300)
    capped, same = easiness_log_likelihood(labels, probas, concentration)
    np.testing.assert_array_equal(capped, full)
    np.testing.assert_array_equal(same, chosen)
    assert difficulty_exponent(labels, probas, concentration) == exponent
    monkeypatch.setattr(_difficulty, "MAX_TASKS", 100)
    thinned = eligible_tasks(labels)
    assert thinned.sum() == 100 and np.array_equal(thinned, eligible_tasks(labels))
    assert np.diff(np.flatnonzero(thinned)).max() <= 3  # spread over all 300, not the first 100
    part, _ = easiness_log_likelihood(labels, probas, concentration)
    np.testing.assert_array_equal(part, full[:, thinned])


def test_best_exponent_finds_an_inner_minimum_and_keeps_one():
    assert best_exponent(lambda a: (a - 0.4) ** 2) == pytest.approx(0.4, abs=2e-3)
    assert best_exponent(lambda a: (a - 1.5) ** 2) == 1.0
