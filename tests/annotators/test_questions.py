"""The value of one more label, against brute-force sums over the classes and labels."""

from __future__ import annotations

import numpy as np
import pytest

from crowdbayes.annotators.questions import (
    entropy,
    held_out_confusion,
    held_out_confusion_counts,
    label_question_values,
)


def _brute(p, theta):
    """Mutual information and knowledge gradient by explicit double loops."""
    K = len(p)
    info, best = 0.0, 0.0
    h_prior = -sum(pk * np.log(pk) for pk in p if pk > 0)
    for x in range(K):
        q = sum(p[k] * theta[k, x] for k in range(K))
        if q == 0:
            continue
        post = [p[k] * theta[k, x] / q for k in range(K)]
        info += q * -sum(v * np.log(v) for v in post if v > 0)
        best += q * max(post)
    return h_prior - info, best - max(p)


@pytest.mark.parametrize("K", [2, 3, 5])
def test_information_and_accuracy_values_match_brute_force(K):
    rng = np.random.default_rng(K)
    p = rng.dirichlet(np.ones(K), size=20)
    theta = rng.dirichlet(np.ones(K) + 3 * np.eye(K)[0], size=(20, K))
    theta = theta / theta.sum(-1, keepdims=True)
    info = label_question_values(p, theta, "information")
    gain = label_question_values(p, theta, "accuracy")
    for i in range(20):
        expected_info, expected_gain = _brute(p[i], theta[i])
        assert info[i] == pytest.approx(expected_info, abs=1e-12)
        assert gain[i] == pytest.approx(max(expected_gain, 0.0), abs=1e-12)
    np.testing.assert_allclose(label_question_values(p, theta, "uncertainty"), entropy(p))


def test_values_vanish_for_a_useless_worker_or_a_certain_task():
    p = np.array([[0.6, 0.4], [1.0, 0.0]])
    random_worker = np.full((2, 2), 0.5)
    assert np.allclose(label_question_values(p, random_worker, "information"), 0.0)
    assert np.allclose(label_question_values(p, random_worker, "accuracy"), 0.0)
    perfect = np.eye(2)
    info = label_question_values(p, perfect, "information")
    assert info[0] == pytest.approx(entropy(p[0])) and info[1] == 0.0


def test_a_better_worker_is_worth_more():
    p = np.full((1, 2), 0.5)
    good, poor = np.array([[0.9, 0.1], [0.1, 0.9]]), np.array([[0.6, 0.4], [0.4, 0.6]])
    for strategy in ("information", "accuracy"):
        assert label_question_values(p, good, strategy) > label_question_values(p, poor, strategy)


def test_random_needs_a_generator_and_unknown_strategies_are_refused():
    p = np.full((3, 2), 0.5)
    with pytest.raises(ValueError, match="needs a random generator"):
        label_question_values(p, np.eye(2), "random")
    values = label_question_values(p, np.eye(2), "random", np.random.default_rng(0))
    assert values.shape == (3,)
    with pytest.raises(ValueError, match="strategy must be one of"):
        label_question_values(p, np.eye(2), "psychic")


def test_held_out_counts_take_each_label_out_of_its_task_posterior():
    """Brute force: with a posterior of product form (prevalence times each label's confusion
    entry), the task's posterior without worker j's label is the product without j's factor;
    tasks with one label count for nothing."""
    rng = np.random.default_rng(0)
    K, n_workers, n_tasks = 3, 4, 30
    confusion = rng.dirichlet(np.ones(K) + 4 * np.eye(K)[0], size=(n_workers, K))
    prevalence = rng.dirichlet(np.ones(K))
    tasks, workers, given = [], [], []
    for t in range(n_tasks):
        for j in rng.choice(n_workers, size=1 + t % 3, replace=False):
            tasks.append(t), workers.append(j), given.append(rng.integers(K))
    tasks, workers, given = map(np.array, (tasks, workers, given))

    def posterior(rows):
        p = prevalence.copy()
        for r in rows:
            p = p * confusion[workers[r], :, given[r]]
        return p / p.sum()

    probas = np.array([posterior(np.flatnonzero(tasks == t)) for t in range(n_tasks)])
    counted = np.bincount(tasks, minlength=n_tasks) >= 2
    counts = held_out_confusion_counts(tasks, workers, given, probas, confusion, counted)
    expected = np.zeros((n_workers, K, K))
    for r in range(len(tasks)):
        if counted[tasks[r]]:
            others = [o for o in np.flatnonzero(tasks == tasks[r]) if o != r]
            expected[workers[r], :, given[r]] += posterior(others)
    np.testing.assert_allclose(counts, expected, atol=1e-12)
    assert counts.sum() == pytest.approx(counted[tasks].sum())
    matrices = held_out_confusion(counts)
    np.testing.assert_allclose(matrices.sum(-1), 1.0)
    # no counts: the prior's mean, leaning to the diagonal
    prior = held_out_confusion(np.zeros((K, K)))
    assert prior[0, 0] == pytest.approx(2 / (K + 1)) and prior[0, 1] == pytest.approx(1 / (K + 1))
