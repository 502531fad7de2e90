"""The ``Comparisons`` container: encoding, feature tables, ties, and every documented error."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes.data import Comparisons, as_comparisons
from crowdbayes.data.comparisons import ANONYMOUS_WORKER
from crowdbayes.exceptions import DataWarning


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "worker": ["w1", "w2", "w1", "w3", "w2"],
            "left": ["a", "b", "c", "a", "d"],
            "right": ["b", "c", "a", "d", "b"],
            "label": ["a", "c", "equal", "d", "d"],
        }
    )


def items() -> pd.DataFrame:
    return pd.DataFrame(
        {"x1": [0.0, 1.0, 2.0, 3.0, 4.0], "x2": [1.0, -1.0, 0.5, 0.0, 2.0]},
        index=["e", "d", "c", "b", "a"],
    )


def test_encoding_round_trips_and_outcomes():
    comps = Comparisons(frame())
    assert list(comps.item_ids) == ["a", "b", "c", "d"]
    assert list(comps.worker_ids) == ["w1", "w2", "w3"]
    np.testing.assert_array_equal(comps.outcome, [1, -1, 0, -1, 1])
    np.testing.assert_array_equal(comps.left_codes, [0, 1, 2, 0, 3])
    np.testing.assert_array_equal(comps.right_codes, [1, 2, 0, 3, 1])
    assert comps.n_ties == 1 and comps.n_comparisons == 5 and comps.n_items == 4
    pd.testing.assert_frame_equal(comps.to_frame(), frame(), check_dtype=False)
    assert comps.X is None and not comps.has_features
    assert "5 comparisons of 4 items by 3 workers, 1 ties" in repr(comps)


def test_item_features_fix_the_codes_and_keep_uncompared_items():
    comps = Comparisons(frame(), items=items())
    assert list(comps.item_ids) == ["e", "d", "c", "b", "a"]
    np.testing.assert_array_equal(comps.X, items().to_numpy())
    # codes index rows of X: the left item of row 0 is "a", the last row of the table
    assert comps.left_codes[0] == 4 and comps.right_codes[0] == 3
    np.testing.assert_array_equal(comps.compared_items(), [1, 2, 3, 4])
    assert list(comps.feature_names) == ["x1", "x2"]
    np.testing.assert_array_equal(comps.item_codes(["c", "e"]), [2, 0])
    with pytest.raises(ValueError, match=re.escape("items: 1 item id(s) are unknown: ['zz']")):
        comps.item_codes(["a", "zz"])


def test_column_mapping_and_anonymous_worker():
    renamed = (
        frame()
        .drop(columns="worker")
        .rename(columns={"left": "first", "right": "second", "label": "winner"})
    )
    comps = Comparisons(renamed, left="first", right="second", label="winner")
    assert list(comps.worker_ids) == [ANONYMOUS_WORKER] and not comps.has_workers
    np.testing.assert_array_equal(comps.worker_codes, 0)
    np.testing.assert_array_equal(comps.outcome, [1, -1, 0, -1, 1])
    # an explicitly named worker column must exist
    with pytest.raises(ValueError, match=r"comparisons: column 'annotator' is missing"):
        Comparisons(renamed, left="first", right="second", label="winner", worker="annotator")


def test_tie_policies():
    with pytest.warns(DataWarning, match=re.escape("comparisons: dropped 1 tie(s) ('equal')")):
        dropped = Comparisons(frame(), ties="drop")
    assert dropped.n_comparisons == 4 and dropped.n_ties == 0
    assert (dropped.outcome != 0).all()
    with pytest.raises(ValueError, match=re.escape("comparisons: 1 row(s) are ties")):
        Comparisons(frame(), ties="error")
    with pytest.raises(ValueError, match=r"ties must be one of"):
        Comparisons(frame(), ties="half")
    only_ties = frame().iloc[[2]]
    with pytest.raises(ValueError, match="no rows are left after dropping ties"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            Comparisons(only_ties, ties="drop")


def test_worker_features_follow_worker_codes():
    workers = pd.DataFrame({"age": [30.0, 40.0, 50.0]}, index=["w3", "w1", "w2"])
    comps = Comparisons(frame(), workers=workers)
    np.testing.assert_array_equal(comps.W[:, 0], [40.0, 50.0, 30.0])
    with pytest.raises(
        ValueError, match=re.escape("workers: 1 id(s) used in the comparisons have")
    ):
        Comparisons(frame(), workers=workers.iloc[:2])
    with pytest.raises(ValueError, match="a worker feature table needs a 'worker' column"):
        Comparisons(frame().drop(columns="worker"), workers=workers)


def test_csv_paths_read_ids_as_text(tmp_path):
    data = frame()
    data["left"] = data["left"].map({"a": "01", "b": "02", "c": "03", "d": "04"})
    data["right"] = data["right"].map({"a": "01", "b": "02", "c": "03", "d": "04"})
    data["label"] = ["01", "03", "equal", "04", "04"]
    data.to_csv(tmp_path / "c.csv", index=False)
    feats = pd.DataFrame({"item": ["01", "02", "03", "04"], "x": [1.0, 2.0, 3.0, 4.0]})
    feats.to_csv(tmp_path / "items.csv", index=False)
    comps = Comparisons(tmp_path / "c.csv", items=tmp_path / "items.csv")
    assert list(comps.item_ids) == ["01", "02", "03", "04"]
    np.testing.assert_array_equal(comps.outcome, [1, -1, 0, -1, 1])
    feats.rename(columns={"item": "id"}).to_csv(tmp_path / "ids.csv", index=False)
    by_column = Comparisons(tmp_path / "c.csv", items=tmp_path / "ids.csv", item_column="id")
    np.testing.assert_array_equal(by_column.X, comps.X)
    with pytest.raises(ValueError, match=r"items: column 'item' \(the ids\) is missing"):
        Comparisons(tmp_path / "c.csv", items=tmp_path / "ids.csv")


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.drop(columns="left"), "comparisons: column 'left' is missing; got "),
        (lambda d: d.iloc[:0], "comparisons: the table is empty (0 rows)"),
        (
            lambda d: d.assign(right=[None, "c", "a", "d", "b"]),
            "comparisons: column 'right' has 1 missing value(s) (row(s) [0])",
        ),
        (
            lambda d: d.assign(label=["a", "c", "tie", "zz", "d"]),
            "comparisons: 2 label(s) are neither the left item, the right item nor 'equal': "
            "['tie', 'zz'] (first at row 2)",
        ),
        (
            lambda d: d.assign(right=["a", "c", "a", "d", "b"]),
            "comparisons: 1 row(s) compare an item with itself (first at row 0: 'a')",
        ),
    ],
)
def test_bad_comparisons_are_named(mutate, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Comparisons(mutate(frame()))


@pytest.mark.parametrize(
    "mutate, message",
    [
        (
            lambda t: t.drop(index="b"),
            "items: 1 id(s) used in the comparisons have no row in the feature table "
            "(first: ['b'])",
        ),
        (
            lambda t: t.assign(x2=[1.0, np.nan, np.inf, 0.0, 2.0]),
            "items: feature column 'x2' has 2 missing or infinite value(s) (first: missing at "
            "id 'd')",
        ),
        (lambda t: t.assign(name="text"), "items: column(s) ['name'] are not numeric"),
        (
            lambda t: pd.concat([t, t.iloc[:1]]),
            "items: 1 id(s) appear on more than one row (first: ['e'])",
        ),
        (lambda t: t.iloc[:0], "items: the feature table is empty (0 rows)"),
    ],
)
def test_bad_item_tables_are_named(mutate, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Comparisons(frame(), items=mutate(items()))


def test_constant_feature_warns_by_name():
    with pytest.warns(DataWarning, match=re.escape("items: 1 feature column(s) are constant")):
        Comparisons(frame(), items=items().assign(flat=1.0))


def test_as_comparisons_passes_through_and_refuses_options():
    comps = Comparisons(frame())
    assert as_comparisons(comps) is comps
    assert as_comparisons(frame(), items=None).n_comparisons == 5
    with pytest.raises(TypeError, match="go to Comparisons"):
        as_comparisons(comps, items=items())
