"""Clustering metrics against scikit-learn, and worker accuracy against a naive count."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as sk

from crowdbayes.metrics.clustering import (
    adjusted_mutual_info,
    adjusted_rand_index,
    contingency_table,
    link_worker_accuracy,
    links_between_items_seen_by,
    mutual_information,
    normalized_mutual_info,
    unsupervised_accuracy,
    worker_interval_coverage,
    workers_per_item,
)


def labelings():
    rng = np.random.default_rng(0)
    for n, k_true, k_pred in [(50, 3, 3), (200, 5, 8), (120, 10, 4), (30, 2, 6)]:
        true = rng.integers(k_true, size=n)
        pred = rng.integers(k_pred, size=n)
        pred[: n // 2] = true[: n // 2] % k_pred  # partly informative
        yield true, pred


@pytest.mark.parametrize(("true", "pred"), list(labelings()))
def test_match_scikit_learn(true, pred):
    assert mutual_information(true, pred) == pytest.approx(sk.mutual_info_score(true, pred))
    assert normalized_mutual_info(true, pred) == pytest.approx(
        sk.normalized_mutual_info_score(true, pred)
    )
    assert adjusted_mutual_info(true, pred) == pytest.approx(
        sk.adjusted_mutual_info_score(true, pred), abs=1e-10
    )
    assert adjusted_rand_index(true, pred) == pytest.approx(sk.adjusted_rand_score(true, pred))


def test_degenerate_partitions_match_scikit_learn():
    one, split = np.zeros(6, dtype=int), np.arange(6)
    for true, pred in [(one, one), (one, split), (split, split), (split, one)]:
        assert normalized_mutual_info(true, pred) == pytest.approx(
            sk.normalized_mutual_info_score(true, pred)
        )
        assert adjusted_mutual_info(true, pred) == pytest.approx(
            sk.adjusted_mutual_info_score(true, pred)
        )
        assert adjusted_rand_index(true, pred) == pytest.approx(sk.adjusted_rand_score(true, pred))


def test_invariant_to_relabelling_and_ids_of_any_type():
    true = np.array(["a", "a", "b", "b", "c", "c"])
    pred = np.array([7, 7, 3, 3, 3, 1])
    renamed = np.array([0, 0, 9, 9, 9, 5])
    for f in (normalized_mutual_info, adjusted_mutual_info, adjusted_rand_index):
        assert f(true, pred) == pytest.approx(f(true, renamed))


def test_unsupervised_accuracy_by_brute_force():
    from itertools import permutations

    rng = np.random.default_rng(5)
    true = rng.integers(4, size=80)
    pred = np.where(rng.random(80) < 0.7, (true + 1) % 4, rng.integers(4, size=80))
    best = max(np.mean(np.array(p)[pred] == true) for p in permutations(range(4)))
    assert unsupervised_accuracy(true, pred) == pytest.approx(best)
    # more clusters than classes: unmatched clusters count as errors
    assert unsupervised_accuracy([0, 0, 1, 1], [0, 1, 2, 3]) == pytest.approx(0.5)


def test_series_are_matched_by_index():
    true = pd.Series([0, 0, 1, 1], index=["a", "b", "c", "d"])
    pred = pd.Series([5, 1, 1, 5, 5], index=["d", "c", "b", "a", "z"])  # 'z' is ignored
    assert unsupervised_accuracy(true, pred) == 0.5
    assert contingency_table(true, pred).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.raises(ValueError, match=r"1 item\(s\) of labels_true have no prediction"):
        unsupervised_accuracy(true, pred.drop("a"))


def test_bad_input():
    with pytest.raises(ValueError, match="equal length"):
        adjusted_rand_index([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="empty"):
        normalized_mutual_info([], [])
    with pytest.raises(ValueError, match="missing values"):
        normalized_mutual_info([0, None], [0, 1])


def test_link_worker_accuracy_counts():
    truth = pd.Series({"a": 0, "b": 0, "c": 1, "d": 1})
    links = pd.DataFrame(
        {
            "worker": ["u", "u", "u", "u", "v"],
            "left": ["a", "c", "a", "b", "a"],
            "right": ["b", "d", "c", "d", "b"],
            "label": [1, 0, 0, 1, 1],
        }
    )
    out = link_worker_accuracy(links, truth)
    # u: same pairs (a,b) must, (c,d) cannot -> α = 1/2; different (a,c) cannot, (b,d) must
    assert out.loc["u", "alpha"] == 0.5 and out.loc["u", "beta"] == 0.5
    assert out.loc["v", "alpha"] == 1.0 and np.isnan(out.loc["v", "beta"])
    assert out.loc["v", "n_different"] == 0 and out.loc["u", "n_same"] == 2
    with pytest.raises(ValueError, match=r"1 linked item\(s\) have no true cluster"):
        link_worker_accuracy(links, truth.drop("d"))


def test_links_between_items_seen_by_two_workers():
    # u sees a, b, c; v sees b, c, d (twice: repeats count once); w sees c, e
    links = pd.DataFrame(
        {
            "who": ["u", "u", "u", "v", "v", "v", "w"],
            "left": ["a", "a", "b", "b", "c", "d", "c"],
            "right": ["b", "c", "c", "c", "d", "c", "e"],
            "label": [1, 0, 0, 1, 1, 1, 0],
        }
    )
    counts = workers_per_item(links, worker="who")
    assert counts.to_dict() == {"a": 1, "b": 2, "c": 3, "d": 1, "e": 1}
    mask = links_between_items_seen_by(links, worker="who")
    # only the pair (b, c) has both items seen by two workers or more
    assert mask.tolist() == [False, False, True, True, False, False, False]
    three = links_between_items_seen_by(links, 3, worker="who")
    assert not three.any()
    assert links_between_items_seen_by(links, 1, worker="who").all()


def test_worker_interval_coverage_includes_the_ends_and_refuses_nan():
    measured = pd.DataFrame({"alpha": [1.0, 0.5, np.nan], "beta": [0.9, 0.3, 1.0]}, index=[3, 1, 2])
    intervals = pd.DataFrame(
        {
            "alpha_lower": [0.6, 0.8, 0.9],
            "alpha_upper": [1.0, 1.0, 1.0],
            "beta_lower": [0.3, 0.5, 0.0],
            "beta_upper": [0.9, 0.6, 0.9],
        },
        index=[1, 2, 3],
    )
    covered = worker_interval_coverage(measured, intervals)
    assert list(covered.index) == [3, 1, 2]
    # worker 3: both at an upper end; worker 1: α below, β at the lower end of its own row
    # (not of the second row); worker 2: α not measured, β above
    assert covered["alpha"].tolist() == [True, False, False]
    assert covered["beta"].tolist() == [True, True, False]


def test_per_task_nmi_scores_each_task_on_its_own_items():
    from crowdbayes.metrics.clustering import normalized_mutual_info, per_task_nmi

    index = pd.MultiIndex.from_tuples(
        [("t1", "a"), ("t1", "b"), ("t1", "c"), ("t1", "d"), ("t2", "c"), ("t2", "e")],
        names=["task", "item"],
    )
    groupings = pd.Series([0, 0, 1, 1, 0, 0], index=index)
    truth = pd.Series({"a": 1, "b": 1, "c": 2, "d": 3, "e": 3})
    inferred = pd.Series({"a": 5, "b": 5, "c": 6, "d": 7, "e": 7, "unused": 0})
    scores = per_task_nmi(groupings, truth, inferred)
    assert list(scores.index) == ["t1", "t2"] and scores.index.name == "task"
    assert scores.loc["t1", "worker"] == pytest.approx(
        normalized_mutual_info([1, 1, 2, 3], [0, 0, 1, 1])
    )
    assert scores.loc["t1", "inferred"] == pytest.approx(1.0)
    assert scores.loc["t2", "inferred"] == pytest.approx(1.0)  # c, e apart as in the truth
    assert scores.loc["t2", "worker"] == pytest.approx(0.0)  # one group for two clusters


def test_misgrouped_items_flags_items_put_wrongly_within_their_task():
    from crowdbayes.metrics.clustering import misgrouped_items

    index = pd.MultiIndex.from_tuples(
        [("t1", i) for i in "abcdef"] + [("t2", i) for i in "abcd"], names=["task", "item"]
    )
    truth = pd.Series({"a": 1, "b": 1, "c": 1, "d": 2, "e": 2, "f": 3})
    # t1: f (digit 3) put with the 1s; t2: c split off from the other 1s
    groupings = pd.Series([0, 0, 0, 1, 1, 0] + [0, 0, 1, 2], index=index)
    wrong = misgrouped_items(groupings, truth)
    assert wrong.index.equals(index)
    assert wrong[wrong].index.tolist() == [("t1", "f"), ("t2", "c")]
    # the 2s merged into the group of the 1s: the smaller cluster's items are flagged
    merged = misgrouped_items(pd.Series([0, 0, 0, 0, 0, 1] + [0, 0, 0, 1], index=index), truth)
    assert merged[merged].index.tolist() == [("t1", "d"), ("t1", "e")]
    assert not misgrouped_items(
        pd.Series([5, 5, 5, 7, 7, 6] + [0, 0, 0, 1], index=index), truth
    ).any()
