"""The Rankings container: top-query decomposition, features, and every documented error."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes import Rankings
from crowdbayes.data.features import read_features


def _table(rows):
    return pd.DataFrame(rows, columns=["query", "item", "rank"])


def _sets(rankings: Rankings) -> list[list]:
    ids = rankings.item_ids
    return [
        ids[rankings.stage_items[a:b]].tolist()
        for a, b in zip(rankings.stage_offsets[:-1], rankings.stage_offsets[1:], strict=True)
    ]


def test_rankings_break_into_top_queries():
    nan = np.nan
    rankings = Rankings(
        _table(
            [
                ("a", "x", 2), ("a", "y", 1), ("a", "z", nan), ("a", "w", 3),
                ("b", "x", 1), ("b", "y", nan), ("b", "v", nan),
                ("c", "z", 1), ("c", "v", 2),
            ]
        )
    )  # fmt: skip
    assert _sets(rankings) == [
        ["y", "x", "w", "z"],  # y best of all four
        ["x", "w", "z"],
        ["w", "z"],  # w ranked third, z unranked
        ["x", "y", "v"],  # a top-1 choice among three
        ["z", "v"],  # a full ranking of two: one top-query
    ]
    assert rankings.query_ids[rankings.stage_query].tolist() == ["a", "a", "a", "b", "c"]
    assert rankings.item_ids[rankings.chosen].tolist() == ["y", "x", "w", "x", "z"]
    pairs = rankings.pairs()
    assert len(pairs) == 3 + 2 + 1 + 2 + 1
    assert ("w", "z") in set(zip(pairs["winner"], pairs["loser"], strict=True))


def test_full_ranking_drops_only_the_certain_last_stage():
    rankings = Rankings(_table([(1, "a", 3), (1, "b", 1), (1, "c", 2)]))
    assert _sets(rankings) == [["b", "c", "a"], ["c", "a"]]


def test_features_are_aligned_with_item_codes():
    items = pd.DataFrame({"item": ["z", "y", "x", "extra"], "f": [3.0, 2.0, 1.0, 9.0]})
    rankings = Rankings(_table([(1, "x", 1), (1, "y", np.nan), (1, "z", np.nan)]), items)
    np.testing.assert_array_equal(rankings.X[:, 0], [1.0, 2.0, 3.0])
    assert rankings.features.names == ["f"]


def test_from_pairs():
    pairs = pd.DataFrame({"left": ["a", "b"], "right": ["b", "c"], "label": ["b", "b"]})
    rankings = Rankings.from_pairs(pairs)
    assert _sets(rankings) == [["b", "a"], ["b", "c"]]


@pytest.mark.parametrize(
    "rows, message",
    [
        ([(1, "a", 1)], r"1 query\(ies\) have only one item"),
        ([(1, "a", 1), (1, "b", 1)], "ties in rank are not allowed"),
        ([(1, "a", 1), (1, "b", 3)], r"ranks that are not 1, 2, \.\.\., R .*has ranks \[1, 3\]"),
        ([(1, "a", np.nan), (1, "b", np.nan)], r"have no ranked item"),
        ([(1, "a", 1), (1, "a", 2)], "repeat an item within a query"),
        ([(1, "a", 0), (1, "b", 1)], r"column 'rank' has 1 value\(s\) that are not ranks"),
        ([(1, "a", 1.5), (1, "b", 1)], "that are not ranks"),
        ([(1, None, 1), (1, "b", 2)], r"column 'item' has 1 missing value\(s\)"),
    ],
)
def test_bad_rankings_are_refused(rows, message):
    with pytest.raises(ValueError, match=message):
        Rankings(_table(rows))


def test_text_ranks_and_missing_columns_are_refused():
    with pytest.raises(ValueError, match="must hold ranks"):
        Rankings(_table([(1, "a", "best"), (1, "b", "worst")]))
    with pytest.raises(ValueError, match="column 'rank' is missing"):
        Rankings(pd.DataFrame({"query": [1], "item": ["a"]}))
    with pytest.raises(ValueError, match=r"the table is empty \(0 rows\)"):
        Rankings(_table([]))


def test_a_query_belongs_to_one_worker():
    table = _table([(1, "a", 1), (1, "b", 2)]).assign(worker=["w1", "w2"])
    with pytest.raises(ValueError, match="query 1 has rows from more than one worker"):
        Rankings(table)


@pytest.mark.parametrize(
    "items, message",
    [
        (pd.DataFrame({"item": ["a"], "f": [1.0]}), r"1 id\(s\) used in the rankings have no row"),
        (pd.DataFrame({"item": ["a", "b"], "f": [1.0, np.nan]}), "feature column 'f' has 1 miss"),
        (pd.DataFrame({"item": ["a", "b"], "f": [1.0, np.inf]}), "infinite"),
        (pd.DataFrame({"item": ["a", "b"], "f": ["x", "y"]}), r"\['f'\] are not numeric"),
        (pd.DataFrame({"item": ["a", "a"], "f": [1.0, 2.0]}), "appear on more than one row"),
        (pd.DataFrame({"item": ["a", "b"]}), "has no feature columns"),
    ],
)
def test_bad_feature_tables_are_refused(items, message):
    with pytest.raises(ValueError, match=message):
        Rankings(_table([(1, "a", 1), (1, "b", np.nan)]), items)


def test_ties_and_foreign_labels_in_pairs_are_refused():
    ties = pd.DataFrame({"left": ["a"], "right": ["b"], "label": ["equal"]})
    with pytest.raises(ValueError, match=r"1 tie\(s\)"):
        Rankings.from_pairs(ties)
    foreign = pd.DataFrame({"left": ["a"], "right": ["b"], "label": ["c"]})
    with pytest.raises(ValueError, match="name neither item of their pair"):
        Rankings.from_pairs(foreign)


def test_feature_table_from_csv_needs_the_id_column(tmp_path):
    path = tmp_path / "items.csv"
    pd.DataFrame({"name": ["a"], "f": [1.0]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match="column 'item' \\(the ids\\) is missing"):
        read_features(path)
    table = read_features(path, id_column="name")
    assert table.ids.tolist() == ["a"]
