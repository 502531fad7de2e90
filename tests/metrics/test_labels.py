"""Label metrics against scikit-learn and brute force, and their error messages."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm

from crowdbayes.metrics import accuracy, brier_score, log_loss, worker_recovery_error


def sk_log_loss(y_true, proba, labels):
    # scikit-learn 1.9 renamed y_pred to y_proba; support both.
    if "y_proba" in inspect.signature(skm.log_loss).parameters:
        return skm.log_loss(y_true, y_proba=proba, labels=labels)
    return skm.log_loss(y_true, proba, labels=labels)


def random_case(seed, n_gold=60, n_extra=15, classes=("a", "b", "c", "d")):
    """Gold on some tasks; predictions on those plus extra tasks, in a shuffled order."""
    rng = np.random.default_rng(seed)
    tasks = [f"t{i:03d}" for i in range(n_gold + n_extra)]
    k = len(classes)
    gold_tasks = rng.choice(tasks, size=n_gold, replace=False)
    gold = pd.Series(np.asarray(classes, dtype=object)[rng.integers(0, k, n_gold)], gold_tasks)
    probas = pd.DataFrame(rng.dirichlet(np.ones(k), size=len(tasks)), index=tasks, columns=classes)
    probas = probas.iloc[rng.permutation(len(tasks))]
    return gold, probas


# ---------------------------------------------------------------------------- references


@pytest.mark.parametrize("seed", range(5))
def test_accuracy_matches_sklearn(seed):
    gold, probas = random_case(seed)
    predicted = probas.idxmax(axis=1)
    ours = accuracy(gold, predicted)
    ref = skm.accuracy_score(gold.to_numpy(), predicted.loc[gold.index].to_numpy())
    assert ours == pytest.approx(ref)


@pytest.mark.parametrize("seed", range(5))
def test_log_loss_matches_sklearn(seed):
    gold, probas = random_case(seed)
    columns = sorted(probas.columns)
    ref = sk_log_loss(gold.to_numpy(), probas.loc[gold.index, columns].to_numpy(), columns)
    # our column order differs from scikit-learn's sorted one: classes are matched by name
    shuffled = probas[["c", "a", "d", "b"]]
    assert log_loss(gold, shuffled) == pytest.approx(ref, rel=1e-12)


def test_log_loss_clipping_matches_sklearn():
    gold, probas = random_case(7)
    # certain, and wrong, on some gold tasks: the gold class gets probability 0
    wrong = gold.index[:5]
    for task in wrong:
        row = np.zeros(4)
        row[(probas.columns.get_loc(gold[task]) + 1) % 4] = 1.0
        probas.loc[task] = row
    eps = np.finfo(np.float64).eps  # scikit-learn clips to machine epsilon
    columns = list(probas.columns)
    ref = sk_log_loss(gold.to_numpy(), probas.loc[gold.index, columns].to_numpy(), columns)
    assert log_loss(gold, probas, eps=eps) == pytest.approx(ref, rel=1e-9)
    # the default eps=1e-15: each such task costs exactly -log(1e-15)
    p_gold = np.array([probas.at[t, c] for t, c in gold.items()])
    manual = -np.mean(np.log(np.clip(p_gold, 1e-15, 1.0)))
    assert log_loss(gold, probas) == pytest.approx(manual, rel=1e-12)
    assert np.isfinite(log_loss(gold, probas))


@pytest.mark.parametrize("seed", range(5))
def test_brier_matches_brute_force(seed):
    gold, probas = random_case(seed)
    total = 0.0
    for task, label in gold.items():
        for cls in probas.columns:
            target = 1.0 if cls == label else 0.0
            total += (probas.at[task, cls] - target) ** 2
    assert brier_score(gold, probas) == pytest.approx(total / len(gold), rel=1e-12)


def test_perfect_and_integer_classes():
    gold = pd.Series([0, 1, 1, 0], index=[10, 11, 12, 13])
    probas = pd.DataFrame(np.eye(2)[[0, 1, 1, 0]], index=[10, 11, 12, 13], columns=[0, 1])
    probas = probas.iloc[::-1]  # order does not matter: rows are matched by task id
    assert accuracy(gold, probas.idxmax(axis=1)) == 1.0
    assert brier_score(gold, probas) == 0.0
    assert log_loss(gold, probas) == pytest.approx(0.0, abs=1e-15)
    # all wrong with certainty: Brier's worst value is 2
    assert brier_score(gold, 1.0 - probas) == 2.0


def test_worker_recovery_error_arrays():
    rng = np.random.default_rng(0)
    true = rng.dirichlet(np.ones(3), size=(8, 3))
    est = rng.dirichlet(np.ones(3), size=(8, 3))
    manual = sum(
        abs(true[j, k, x] - est[j, k, x]) for j in range(8) for k in range(3) for x in range(3)
    )
    assert worker_recovery_error(true, est) == pytest.approx(manual / 72)
    assert worker_recovery_error(true, true) == 0.0


def test_worker_recovery_error_dataframes_align():
    rng = np.random.default_rng(1)
    index = pd.Index(["w1", "w2", "w3", "w4"], name="worker")
    true = pd.DataFrame(rng.random((4, 2)), index=index, columns=["sensitivity", "specificity"])
    est = pd.DataFrame(rng.random((5, 2)), index=[*index, "w9"], columns=true.columns)
    shuffled = est.iloc[::-1, ::-1]
    expected = np.mean(np.abs(true.to_numpy() - est.loc[index].to_numpy()))
    assert worker_recovery_error(true, shuffled) == pytest.approx(expected)


# ---------------------------------------------------------------------------- errors


def test_missing_predictions_named():
    gold, probas = random_case(0)
    dropped = probas.drop(index=gold.index[:3])
    with pytest.raises(
        ValueError, match=r"probas: 3 of 60 gold task\(s\) have no prediction: \['t"
    ):
        log_loss(gold, dropped)
    with pytest.raises(ValueError, match=r"predicted: 3 of 60 gold task\(s\) have no prediction"):
        accuracy(gold, dropped.idxmax(axis=1))
    with pytest.raises(ValueError, match=r"probas: 3 of 60 gold task"):
        brier_score(gold, dropped)


def test_id_type_mismatch_is_explained_not_coerced():
    gold = pd.Series([0, 1, 1], index=[1, 2, 3])
    predicted = pd.Series([0, 1, 1], index=["1", "2", "3"])
    with pytest.raises(ValueError, match=r"3 of 3 gold task\(s\).*differ only in type"):
        accuracy(gold, predicted)
    probas = pd.DataFrame(np.eye(2)[[0, 1, 1]], index=["1", "2", "3"], columns=[0, 1])
    with pytest.raises(ValueError, match="differ only in type .*astype"):
        log_loss(gold, probas)
    # unrelated ids get no type hint
    with pytest.raises(ValueError, match=r"have no prediction: \[1, 2, 3\]$"):
        accuracy(gold, pd.Series([0], index=["x"]))


def test_gold_label_not_a_column():
    gold = pd.Series(["a", "b", "z"], index=["t1", "t2", "t3"])
    probas = pd.DataFrame(np.full((3, 2), 0.5), index=["t1", "t2", "t3"], columns=["a", "b"])
    with pytest.raises(
        ValueError, match=r"gold: 1 gold label\(s\) are not among the probas columns \['a', 'b'\]"
    ):
        log_loss(gold, probas)
    with pytest.raises(ValueError, match="not among the probas columns"):
        brier_score(gold, probas)


@pytest.mark.parametrize(
    ("gold", "match"),
    [
        (pd.Series([], dtype=float), "no gold labels"),
        (pd.Series([0, None], index=["t1", "t2"]), r"1 task\(s\) have a missing gold label"),
        (pd.Series([0, 1], index=["t1", "t1"]), r"listed more than once: \['t1'\]"),
    ],
)
def test_bad_gold(gold, match):
    predicted = pd.Series([0, 1], index=["t1", "t2"])
    with pytest.raises(ValueError, match=match):
        accuracy(gold, predicted)


def test_bad_types_and_values():
    gold = pd.Series([0, 1], index=["t1", "t2"])
    probas = pd.DataFrame([[0.5, 0.5], [0.2, 0.8]], index=["t1", "t2"], columns=[0, 1])
    with pytest.raises(TypeError, match="gold must be a pandas Series"):
        accuracy([0, 1], gold)
    with pytest.raises(TypeError, match="predicted must be a pandas Series"):
        accuracy(gold, np.array([0, 1]))
    with pytest.raises(TypeError, match="probas must be a pandas DataFrame"):
        log_loss(gold, probas.to_numpy())
    with pytest.raises(ValueError, match="eps must lie strictly between 0 and 1"):
        log_loss(gold, probas, eps=0.0)
    with pytest.raises(ValueError, match=r"predicted: task\(s\) listed more than once"):
        accuracy(gold, pd.Series([0, 1, 1], index=["t1", "t2", "t2"]))
    nan = probas.astype(float)
    nan.iloc[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        brier_score(gold, nan)
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        log_loss(gold, probas * 2)


def test_worker_recovery_error_errors():
    with pytest.raises(ValueError, match=r"shape \(2, 2, 2\) but estimated_confusion has shape"):
        worker_recovery_error(np.zeros((2, 2, 2)), np.zeros((3, 2, 2)))
    true = pd.DataFrame(np.zeros((2, 2)), index=["w1", "w2"], columns=[0, 1])
    est = pd.DataFrame(np.zeros((1, 2)), index=["w1"], columns=[0, 1])
    with pytest.raises(ValueError, match=r"lacks rows or columns.*1 row\(s\) \['w2'\]"):
        worker_recovery_error(true, est)
    with pytest.raises(ValueError, match="NaN"):
        worker_recovery_error(np.array([np.nan]), np.array([0.0]))


# ------------------------------------------------------------------------------- ordinal
def test_mean_absolute_error_hard_and_expected():
    from crowdbayes.metrics import mean_absolute_error

    gold = pd.Series([0, 1, 3, 2], index=["a", "b", "c", "d"])
    predicted = pd.Series([0, 3, 2, 2, 1], index=["a", "b", "c", "d", "extra"])
    assert mean_absolute_error(gold, predicted) == pytest.approx((0 + 2 + 1 + 0) / 4)
    probas = pd.DataFrame(
        [[1, 0, 0, 0], [0.5, 0.5, 0, 0], [0, 0, 0, 1], [0.25, 0.25, 0.25, 0.25]],
        index=["a", "b", "c", "d"],
        columns=[0, 1, 2, 3],
    )
    # expected |grade - gold|: 0, 0.5, 0, (2 + 1 + 0 + 1) / 4
    assert mean_absolute_error(gold, probas) == pytest.approx((0 + 0.5 + 0 + 1) / 4)
    # columns in another order are reordered by classes
    shuffled = probas[[3, 1, 0, 2]]
    assert mean_absolute_error(gold, shuffled, classes=[0, 1, 2, 3]) == pytest.approx(0.375)


def test_mean_absolute_error_text_grades_use_the_declared_order():
    from crowdbayes.metrics import mean_absolute_error

    gold = pd.Series(["low", "high"], index=[1, 2])
    predicted = pd.Series(["mid", "low"], index=[1, 2])
    assert mean_absolute_error(gold, predicted, ["low", "mid", "high"]) == pytest.approx(1.5)
    with pytest.raises(ValueError, match=r"the grades are not numbers; pass classes=\[\.\.\.\]"):
        mean_absolute_error(gold, predicted)
    with pytest.raises(ValueError, match=r"predicted: 1 grade\(s\) are not among the classes"):
        mean_absolute_error(gold, predicted, ["low", "high"])
    with pytest.raises(TypeError, match="predicted must be a pandas Series of grades"):
        mean_absolute_error(gold, ["mid", "low"])
