"""Issue 45: the encoding of a label table (what every label model's ``fit`` on a DataFrame
pays first) takes its fast paths without changing what it promises — categorical columns
encode as their values do, text categories are still normalised, and a repeated task–worker
pair is still found wherever it is in the table."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes import DawidSkene, Labels
from crowdbayes.datasets import simulate_labels
from crowdbayes.exceptions import DataWarning


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return simulate_labels(60, 7, 3, n_classes=3, random_state=4).labels.sample(
        frac=1.0, random_state=1
    )


def same_labels(a: Labels, b: Labels) -> None:
    for name in ("tasks", "workers", "classes"):
        assert list(getattr(a, name)) == list(getattr(b, name)), name
    for name in ("task_codes", "worker_codes", "label_codes", "gold_codes"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.pairs_distinct == b.pairs_distinct


@pytest.mark.parametrize("as_text", [False, True])
def test_categorical_columns_encode_as_their_values(frame, as_text):
    plain = frame.astype(str) if as_text else frame
    categorical = plain.astype("category")
    same_labels(Labels(categorical), Labels(plain))
    model = DawidSkene().fit(categorical)
    pd.testing.assert_frame_equal(
        model.probas_.reset_index(drop=True),
        DawidSkene().fit(plain).probas_.reset_index(drop=True),
    )


def test_text_categories_are_still_normalised():
    frame = pd.DataFrame(
        {
            "task": ["a", "a", "b", "b"],
            "worker": ["u", "v", "u", "v"],
            "label": [" dog", "dog", "cat", "cat\u200b"],
        }
    ).astype("category")
    with pytest.warns(DataWarning, match="normalised 2 value"):
        labels = Labels(frame)
    assert list(labels.classes) == ["cat", "dog"]


@pytest.mark.parametrize("where", [1, 17, -1])
def test_a_repeated_pair_is_found_anywhere_in_the_table(frame, where):
    repeated = pd.concat([frame, frame.iloc[[where]]], ignore_index=True)
    repeated = repeated.sample(frac=1.0, random_state=where % 7)
    with pytest.warns(DataWarning, match="1 row"):
        kept = Labels(repeated)
    assert not kept.pairs_distinct and kept.n_labels == len(frame) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dropped = Labels(repeated, duplicates="drop")
    assert dropped.pairs_distinct and dropped.n_labels == len(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Labels(frame).pairs_distinct
