"""The value of one more label, against brute-force sums over the classes and labels."""

from __future__ import annotations

import numpy as np
import pytest

from crowdbayes.annotators.questions import (
    UNCERTAINTY_BIN,
    answer_change,
    entropy,
    expected_answer_changes,
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


@pytest.mark.parametrize("K", [2, 4])
def test_uncertainty_changes_orders_by_entropy_bin_then_expected_changes(K):
    """The score's order is the lexicographic order of (entropy bin, expected changes), and
    the expected changes are the best look-ahead rate of the brute-force change probability."""
    rng = np.random.default_rng(10 + K)
    p = rng.dirichlet(np.full(K, 0.7), size=300)
    theta = np.array([rng.dirichlet(np.ones(K) + 4 * np.eye(K)[k]) for k in range(K)])
    score = label_question_values(p, theta, "uncertainty_changes")
    width = UNCERTAINTY_BIN * np.log(K)
    bins = np.floor(entropy(p) / width)
    changes = expected_answer_changes(p, theta)
    assert ((0 <= changes) & (changes <= 1)).all()
    assert (np.floor(score / width + 1e-9) == bins).all()  # the score stays in its bin
    by_score = np.argsort(-score, kind="stable")
    by_pair = np.lexsort((-changes, -bins))
    np.testing.assert_array_equal(score[by_score], score[by_pair])
    rates = [answer_change(p, theta, m) / m for m in (1, 2, 3)]
    np.testing.assert_allclose(changes, np.max(rates, axis=0))


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


def test_held_out_counts_take_each_workers_labels_out_of_its_task_posterior():
    """Brute force: the Dawid–Skene posterior of each task from the other workers' labels (a
    worker's repeated labels of a task all left out; gold tasks their gold class); tasks that
    one worker labelled and that have no gold count for nothing."""
    rng = np.random.default_rng(0)
    K, n_workers, n_tasks = 3, 4, 40
    confusion = rng.dirichlet(np.ones(K) + 4 * np.eye(K)[0], size=(n_workers, K))
    prevalence = rng.dirichlet(np.ones(K))
    gold = np.where(rng.random(n_tasks) < 0.2, rng.integers(K, size=n_tasks), -1)
    tasks, workers, given = [], [], []
    for t in range(n_tasks):
        chosen = list(rng.choice(n_workers, size=1 + t % 3, replace=False))
        for j in chosen + chosen[:1] * (t % 4 == 0):  # some workers label a task twice
            tasks.append(t), workers.append(j), given.append(rng.integers(K))
    tasks, workers, given = map(np.array, (tasks, workers, given))

    def others_posterior(t, j):
        if gold[t] >= 0:
            return np.eye(K)[gold[t]]
        p = prevalence.copy()
        for r in np.flatnonzero((tasks == t) & (workers != j)):
            p = p * confusion[workers[r], :, given[r]]
        return p / p.sum()

    cross_checked = np.array(
        [len(set(workers[tasks == t])) >= 2 or gold[t] >= 0 for t in range(n_tasks)]
    )
    counts = held_out_confusion_counts(
        tasks, workers, given, np.log(confusion), np.log(prevalence), gold, cross_checked
    )
    expected = np.zeros((n_workers, K, K))
    counted = 0
    for r in range(len(tasks)):
        t = tasks[r]
        if len(set(workers[tasks == t])) >= 2 or gold[t] >= 0:
            expected[workers[r], :, given[r]] += others_posterior(t, workers[r])
            counted += 1
    np.testing.assert_allclose(counts, expected, atol=1e-12)
    assert counts.sum() == pytest.approx(counted) and counted < len(tasks)
    matrices, pooled = held_out_confusion(counts)
    np.testing.assert_allclose(matrices.sum(-1), 1.0)
    np.testing.assert_allclose(pooled.sum(-1), 1.0)
    np.testing.assert_allclose(pooled, held_out_confusion(counts.sum(0, keepdims=True))[0][0])
    # no counts: the prior's mean, leaning to the diagonal
    nothing, prior = held_out_confusion(np.zeros((2, K, K)))
    assert prior[0, 0] == pytest.approx(2 / (K + 1)) and prior[0, 1] == pytest.approx(1 / (K + 1))
    np.testing.assert_allclose(nothing, np.broadcast_to(prior, (2, K, K)))


def test_a_worker_estimated_perfect_does_not_make_disagreement_impossible():
    with np.errstate(divide="ignore"):
        log_confusion = np.log(np.array([np.eye(2), np.eye(2)]))  # two "perfect" workers
    counts = held_out_confusion_counts(
        np.array([0, 0]), np.array([0, 1]), np.array([0, 1]), log_confusion,
        np.log([0.5, 0.5]), np.array([-1]), np.array([True]),
    )  # fmt: skip
    assert np.isfinite(counts).all() and counts.sum() == pytest.approx(2.0)
    assert counts[0, 1, 0] == pytest.approx(1.0)  # worker 0 said 0 where worker 1 said 1
