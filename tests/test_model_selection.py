"""Cross-validation splitters for ranking data: coverage, disjointness, seeding, dropped queries."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes.model_selection import (
    Split,
    group_kfold,
    l_partition,
    leave_one_group_out,
    n_partition,
)


def _long_rankings(n_queries=30, size=4, n_items=12, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        for r, i in enumerate(rng.choice(n_items, size, replace=False), start=1):
            rows.append((f"q{q}", f"item{i}", float(r)))
    return pd.DataFrame(rows, columns=["query", "item", "rank"])


def _check_partition(splits, n_rows):
    for s in splits:
        assert isinstance(s, Split)
        for part in (s.train, s.test, s.dropped):
            assert part.dtype == np.int64 and np.all(np.diff(part) > 0)
        union = np.concatenate([s.train, s.test, s.dropped])
        assert np.array_equal(np.sort(union), np.arange(n_rows))


def test_l_partition_keeps_queries_whole_and_tests_each_once():
    df = _long_rankings()
    splits = l_partition(df["query"], n_splits=3, random_state=1)
    assert len(splits) == 3
    _check_partition(splits, len(df))
    test_rows = np.concatenate([s.test for s in splits])
    assert np.array_equal(np.sort(test_rows), np.arange(len(df)))
    for s in splits:
        assert s.n_dropped_queries == 0 and s.dropped.size == 0
        assert not set(df["query"].iloc[s.train]) & set(df["query"].iloc[s.test])
        assert df["query"].iloc[s.test].nunique() == 10  # 30 queries in 3 equal folds


def test_splitters_are_seeded():
    df = _long_rankings()
    for split in (
        lambda rs: l_partition(df["query"], 3, rs),
        lambda rs: n_partition(df, 3, rs),
        lambda rs: group_kfold(df["query"], 5, rs),
    ):
        a, b, c = split(7), split(7), split(8)
        assert all(np.array_equal(x.test, y.test) for x, y in zip(a, b, strict=True))
        assert any(not np.array_equal(x.test, y.test) for x, y in zip(a, c, strict=True))
    gen = np.random.default_rng(7)
    assert np.array_equal(
        l_partition(df["query"], 3, gen)[0].test, l_partition(df["query"], 3, 7)[0].test
    )


def test_n_partition_matches_brute_force_and_counts_dropped_queries():
    df = _long_rankings(n_queries=60, size=3, n_items=9, seed=2)
    splits = n_partition(df, n_splits=3, random_state=4)
    _check_partition(splits, len(df))
    # the item folds are disjoint and cover all items: recover them from the test queries
    # and check every query's side by brute force
    items_of = df.groupby("query")["item"].apply(set)
    rng = np.random.default_rng(4)
    uniques = pd.unique(df["item"])
    item_folds = np.array_split(rng.permutation(len(uniques)), 3)
    total_dropped = 0
    for s, fold in zip(splits, item_folds, strict=True):
        test_items = set(uniques[fold])
        side = {
            q: "test" if its <= test_items else "train" if not its & test_items else "dropped"
            for q, its in items_of.items()
        }
        for name, rows in (("train", s.train), ("test", s.test), ("dropped", s.dropped)):
            assert {side[q] for q in df["query"].iloc[rows]} <= {name}
        assert s.n_dropped_queries == sum(v == "dropped" for v in side.values())
        total_dropped += s.n_dropped_queries
    assert total_dropped > 0


def test_n_partition_on_pairs_table():
    pairs = pd.DataFrame({"left": list("aabcde"), "right": list("bcdeff")})
    splits = n_partition(pairs, n_splits=2, random_state=0)
    _check_partition(splits, len(pairs))
    for s in splits:
        test_items = set(pairs.iloc[s.test][["left", "right"]].to_numpy().ravel())
        train_items = set(pairs.iloc[s.train][["left", "right"]].to_numpy().ravel())
        assert not test_items & train_items
        assert s.n_dropped_queries == s.dropped.size  # one query per row


def test_group_kfold_and_leave_one_group_out():
    groups = np.repeat(["t1", "t2", "t3", "t4", "t5"], [3, 1, 4, 2, 2])
    splits = group_kfold(groups, n_splits=2, random_state=0)
    _check_partition(splits, groups.size)
    for s in splits:
        assert not set(groups[s.train]) & set(groups[s.test])
    logo = leave_one_group_out(pd.Series(groups))
    assert list(logo) == ["t1", "t2", "t3", "t4", "t5"]
    for g, s in logo.items():
        assert set(groups[s.test]) == {g} and g not in set(groups[s.train])
    _check_partition(logo.values(), groups.size)


@pytest.mark.parametrize("splitter", [group_kfold, leave_one_group_out])
def test_group_splitters_refuse_queries_cut_across_groups(splitter):
    groups = ["a", "a", "b", "b"]
    queries = [1, 1, 1, 2]
    with pytest.raises(
        ValueError, match=r"1 quer\(y/ies\) have rows in more than one group, .*: \[1\]"
    ):
        if splitter is group_kfold:
            splitter(groups, 2, queries=queries)
        else:
            splitter(groups, queries=queries)


def test_splitters_bad_input():
    with pytest.raises(ValueError, match="n_splits must be an integer >= 2"):
        l_partition([1, 2, 3], n_splits=1)
    with pytest.raises(ValueError, match=r"n_splits=4 is more than the number of queries \(3\)"):
        l_partition([1, 2, 3, 3], n_splits=4)
    with pytest.raises(ValueError, match="missing id"):
        l_partition(["a", None, "b"], n_splits=2)
    with pytest.raises(ValueError, match="no rows"):
        l_partition([], n_splits=2)
    with pytest.raises(ValueError, match="expected columns 'query' and 'item'"):
        n_partition(pd.DataFrame({"a": [1]}), 2)
    with pytest.raises(ValueError, match="more than the number of items"):
        n_partition(pd.DataFrame({"left": ["a"], "right": ["b"]}), 3)
    with pytest.raises(ValueError, match="at least two groups"):
        leave_one_group_out(["a", "a"])
    with pytest.raises(ValueError, match="more than the number of groups"):
        group_kfold(["a", "a", "b"], 3)
