"""GLAD: the likelihood against a naive loop, the M-step gradient and Laplace curvature against
finite differences, the EM objective, recovery of simulated abilities, and crowd-kit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from crowdbayes import GLAD, Labels, MajorityVote
from crowdbayes.metrics import accuracy
from crowdbayes.models.labels.glad import glad_log_likelihood, glad_m_objective


def simulate_glad(n_tasks=300, n_workers=20, per_task=5, n_classes=3, seed=0):
    """Labels drawn from the GLAD model itself, with the true abilities and log-easiness."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(n_classes, size=n_tasks)
    ability = rng.normal(1.0, 1.0, size=n_workers)
    log_easiness = rng.normal(0.5, 0.5, size=n_tasks)
    rows = []
    for i in range(n_tasks):
        for j in rng.choice(n_workers, size=per_task, replace=False):
            right = rng.random() < expit(ability[j] * np.exp(log_easiness[i]))
            if right:
                label = truth[i]
            else:
                label = rng.choice([k for k in range(n_classes) if k != truth[i]])
            rows.append((f"t{i}", f"w{j}", int(label)))
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    truth = pd.Series(truth, index=[f"t{i}" for i in range(n_tasks)])
    return frame, truth, ability, log_easiness


@pytest.fixture(scope="module")
def sim():
    return simulate_glad()


def test_log_likelihood_matches_a_naive_loop(sim):
    labels = Labels(sim[0].iloc[:200])
    rng = np.random.default_rng(1)
    ability = rng.normal(size=labels.n_workers)
    log_easiness = rng.normal(size=labels.n_tasks)
    log_lik, _ = glad_log_likelihood(labels, ability, log_easiness)
    k = labels.n_classes
    naive = np.zeros((k, labels.n_tasks))
    for t, w, x in zip(labels.task_codes, labels.worker_codes, labels.label_codes, strict=True):
        right = expit(ability[w] * np.exp(log_easiness[t]))
        for c in range(k):
            naive[c, t] += np.log(right) if x == c else np.log((1 - right) / (k - 1))
    np.testing.assert_allclose(log_lik, naive, rtol=1e-10, atol=1e-10)


def test_m_step_gradient_matches_finite_differences(sim):
    labels = Labels(sim[0])
    rng = np.random.default_rng(2)
    params = rng.normal(0.5, 0.5, size=labels.n_workers + labels.n_tasks)
    p_right = rng.random(labels.n_labels)
    prior = (1.0, 1.5, 0.5, 0.8)
    _, grad = glad_m_objective(params, labels, p_right, prior)
    h = 1e-6
    for index in [0, 3, labels.n_workers - 1, labels.n_workers, labels.n_workers + 7, -1]:
        step = np.zeros_like(params)
        step[index] = h
        up = glad_m_objective(params + step, labels, p_right, prior)[0]
        down = glad_m_objective(params - step, labels, p_right, prior)[0]
        assert grad[index] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-6)


def test_laplace_sd_is_the_curvature_of_the_m_step_objective(sim):
    model = GLAD(max_iter=30).fit(sim[0])
    labels = Labels(sim[0])
    m = labels.n_workers
    params = np.concatenate([model.ability_["mean"], np.log(model.easiness_["mean"])])
    resp = model.probas_.to_numpy().T
    p_right = resp[labels.label_codes, labels.task_codes]
    prior = (*model.ability_prior, *model.easiness_prior)
    h = 1e-4
    for index, sd in [
        (0, model.ability_["sd"].iloc[0]),
        (m + 5, model.easiness_["log_sd"].iloc[5]),
    ]:
        step = np.zeros_like(params)
        step[index] = h
        values = [
            glad_m_objective(params + s * step, labels, p_right, prior)[0] for s in (-1, 0, 1)
        ]
        curvature = (values[0] - 2 * values[1] + values[2]) / h**2
        assert sd == pytest.approx(1 / np.sqrt(curvature), rel=1e-3)


def test_em_objective_never_decreases(sim):
    model = GLAD(max_iter=60, tol=None).fit(sim[0])
    history = model.log_posterior_history_
    assert len(history) == 60
    assert np.all(np.diff(history) >= -1e-9 * np.abs(history[1:]))


def test_recovers_simulated_abilities_and_beats_majority_vote(sim):
    frame, truth, ability, log_easiness = sim
    model = GLAD().fit(frame)
    assert model.converged_
    order = [int(w[1:]) for w in model.ability_.index]
    assert np.corrcoef(model.ability_["mean"], ability[order])[0, 1] > 0.85
    tasks = [int(t[1:]) for t in model.easiness_.index]
    assert np.corrcoef(np.log(model.easiness_["mean"]), log_easiness[tasks])[0, 1] > 0.3
    mv = MajorityVote(random_state=0).fit(frame)
    assert accuracy(truth, model.labels_) > accuracy(truth, mv.labels_)
    assert np.all(model.ability_["lower"] < model.ability_["mean"])
    covered = (model.ability_["lower"] <= ability[order]) & (
        ability[order] <= model.ability_["upper"]
    )
    assert covered.mean() > 0.5  # the conditional Laplace interval understates the spread
    np.testing.assert_allclose(model.probas_.sum(axis=1), 1.0)
    assert list(model.skills_.index) == list(model.ability_.index)


def test_gold_tasks_are_clamped(sim):
    frame, truth, *_ = sim
    wrong = (truth.iloc[:5] + 1) % 3
    model = GLAD().fit(Labels(frame, gold=wrong))
    pd.testing.assert_series_equal(
        model.labels_.loc[wrong.index], wrong, check_names=False, check_dtype=False
    )


@pytest.mark.slow  # crowd-kit's pandas loops: 10-25 s
@pytest.mark.filterwarnings("ignore")
def test_agrees_with_crowdkit_glad():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    frame, truth, *_ = simulate_glad(n_tasks=150, n_workers=12, per_task=4, n_classes=2, seed=3)
    ours = GLAD().fit(frame)
    theirs = crowdkit.GLAD().fit(frame)
    same = (ours.labels_ == theirs.labels_.reindex(ours.labels_.index)).mean()
    assert same >= 0.97
    assert accuracy(truth, ours.labels_) >= accuracy(truth, theirs.labels_) - 0.01
