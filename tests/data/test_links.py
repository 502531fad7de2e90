"""The Links container: encoding, observations, and every documented error path."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes.data.links import Links, as_links
from crowdbayes.exceptions import DataWarning


def frame(rows, columns=("worker", "left", "right", "label")) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))


GOOD = frame([("w1", "a", "b", 1), ("w1", "a", "c", 0), ("w2", "b", "c", 0), ("w2", "d", "a", 1)])


def test_encodes_once_and_round_trips():
    links = Links(GOOD)
    assert links.n_links == 4 and links.n_workers == 2 and links.n_items == 4
    assert list(links.item_ids) == ["a", "b", "c", "d"]
    assert list(links.worker_ids) == ["w1", "w2"]
    np.testing.assert_array_equal(links.labels, [1, 0, 0, 1])
    assert links.labels.dtype == np.int8
    pd.testing.assert_frame_equal(links.to_frame(), GOOD)
    assert "4 links (2 must-link), 4 linked items, 2 workers" in repr(links)


def test_column_mapping_and_booleans():
    df = GOOD.rename(columns={"worker": "annotator", "left": "i", "right": "j", "label": "same"})
    df["same"] = df["same"].astype(bool)
    links = Links(df, worker="annotator", left="i", right="j", label="same")
    np.testing.assert_array_equal(links.labels, [1, 0, 0, 1])


def test_as_links_passes_through_and_refuses_options():
    links = Links(GOOD)
    assert as_links(links) is links
    with pytest.raises(TypeError, match="go to Links"):
        as_links(links, duplicates="keep")
    assert as_links(GOOD).n_links == 4


def test_observation_array_defines_the_item_codes():
    obs = np.arange(5 * 3, dtype=float).reshape(5, 3)
    df = frame([("w", 0, 3, 1), ("w", 3, 4, 0)])
    links = Links(df, obs)
    assert links.n_items == 5  # observed items, linked or not
    np.testing.assert_array_equal(links.linked_codes, [0, 3, 4])
    np.testing.assert_array_equal(links.observations[links.left_codes], obs[[0, 3]])


def test_observation_array_with_ids_and_table():
    images = np.zeros((3, 2, 2))
    links = Links(frame([("w", "y", "x", 0)]), images, item_ids=["x", "y", "z"])
    assert links.left_codes[0] == 1 and links.right_codes[0] == 0
    table = pd.DataFrame({"item": ["z", "x", "y"], "f1": [1.0, 2.0, 3.0]})
    links = Links(frame([("w", "y", "x", 0)]), table)
    assert list(links.item_ids) == ["z", "x", "y"]
    assert links.observations[links.left_codes[0], 0] == 3.0
    assert links.observation_names == ["f1"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([("w", "a", "a", 1)], r"1 row\(s\) link an item to itself \(first: item 'a' at row 0\)"),
        (
            [("w", "a", "b", 2), ("w", "a", "c", 1), ("w", "b", "c", "yes")],
            r"column 'label' must hold 1 \(must-link\) or 0 \(cannot-link\); 2 row\(s\) hold "
            r"other values: \[2, 'yes'\] \(first at row 0\)",
        ),
        (
            [("w", "a", "b", 1), ("w", None, "b", 1)],
            r"column 'left' has 1 missing value\(s\) \(row\(s\) \[1\]\)",
        ),
        (
            [("w", "a", "b", 1), ("w", "a", "c", np.nan)],
            r"column 'label' has 1 missing value\(s\)",
        ),
    ],
)
def test_bad_rows_are_refused_with_the_row(rows, message):
    with pytest.raises(ValueError, match=message):
        Links(frame(rows))


def test_missing_column_and_empty_table():
    with pytest.raises(ValueError, match=r"links: column 'label' is missing; got \['worker'"):
        Links(GOOD.drop(columns="label"))
    with pytest.raises(ValueError, match="the table is empty"):
        Links(GOOD.iloc[:0])


def test_link_to_an_unobserved_item():
    obs = np.zeros((3, 2))
    with pytest.raises(
        ValueError,
        match=r"1 row\(s\) link an item that has no observation \(first: item 7 at row 1",
    ):
        Links(frame([("w", 0, 1, 1), ("w", 2, 7, 0)]), obs)


def test_bad_observation_ids():
    with pytest.raises(ValueError, match="2 rows but 3 item_ids"):
        Links(GOOD, np.zeros((2, 1)), item_ids=["a", "b", "c"])
    with pytest.raises(ValueError, match="item_ids repeat 1 id"):
        Links(GOOD, np.zeros((2, 1)), item_ids=["a", "a"])
    with pytest.raises(ValueError, match="item_ids goes with an observations array"):
        Links(GOOD, pd.DataFrame({"item": ["a"], "f": [1.0]}), item_ids=["a"])


REPEATS = frame(
    [
        ("w1", "a", "b", 1),
        ("w1", "b", "a", 0),  # contradicts row 0 (unordered pair)
        ("w1", "a", "c", 0),
        ("w1", "c", "a", 0),  # agrees with row 2
        ("w2", "a", "b", 0),  # another worker: not a repeat
    ]
)


def test_repeats_refused_on_request():
    with pytest.raises(
        ValueError,
        match=r"2 row\(s\) repeat a pair already judged by the same worker \(first at row 0\); "
        r"1 pair\(s\) got contradictory labels from one worker\. Pass duplicates='keep'",
    ):
        Links(REPEATS, duplicates="error")


def test_repeats_kept_with_a_warning_by_default():
    """Issue 19: the default policy is the labels' one, keep every row and warn."""
    with pytest.warns(DataWarning, match=r"2 row\(s\) repeat.*every row is kept"):
        links = Links(REPEATS)
    assert links.n_links == 5


def test_repeats_kept_with_a_warning():
    with pytest.warns(DataWarning, match="every row is kept as a separate judgment"):
        links = Links(REPEATS, duplicates="keep")
    assert links.n_links == 5


def test_repeats_dropped_with_a_warning():
    with pytest.warns(DataWarning, match=r"dropped 3 row\(s\)"):
        links = Links(REPEATS, duplicates="drop")
    kept = links.to_frame()
    assert len(kept) == 2  # w1's agreeing (a, c) once, w2's (a, b); the contradicted pair gone
    assert set(map(tuple, kept[["worker", "left", "right"]].to_numpy())) == {
        ("w1", "a", "c"),
        ("w2", "a", "b"),
    }


def test_dropping_every_link_of_a_worker_renumbers_workers():
    df = frame([("w1", "a", "b", 1), ("w1", "b", "a", 0), ("w2", "a", "c", 1)])
    with pytest.warns(DataWarning):
        links = Links(df, duplicates="drop")
    assert list(links.worker_ids) == ["w2"] and links.worker_codes.tolist() == [0]
    with pytest.warns(DataWarning), pytest.raises(ValueError, match="no link is left"):
        Links(df.iloc[:2], duplicates="drop")


def test_unknown_policy():
    with pytest.raises(ValueError, match="duplicates must be one of"):
        Links(GOOD, duplicates="first")


def test_no_warning_without_repeats():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Links(GOOD)


def test_ids_of_different_types_stay_apart():
    df = pd.DataFrame({"worker": [0, 0], "left": [1, 2], "right": ["1", "3"], "label": [0, 1]})
    links = Links(df)  # int64 left, text right: 1 and "1" are different items
    assert list(links.item_ids) == [1, "1", 2, "3"]
