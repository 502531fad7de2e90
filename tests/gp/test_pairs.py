"""Comparisons made ready for the engines: soft labels, the tie policy and its messages."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes.data.comparisons import Comparisons
from crowdbayes.exceptions import DataWarning
from crowdbayes.gp import encode_pairs, kept_comparisons

TABLE = pd.DataFrame(
    {
        "worker": ["u", "u", "v", "v"],
        "left": ["a", "b", "c", "a"],
        "right": ["b", "c", "a", "c"],
        "label": ["a", "c", "equal", "a"],
    }
)


def test_soft_labels_and_ties_kept_as_half():
    data = Comparisons(TABLE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pairs = encode_pairs(data, "half", "M")
    np.testing.assert_array_equal(pairs.y, [1.0, 0.0, 0.5, 1.0])
    assert pairs.n_ties_dropped == 0
    np.testing.assert_array_equal(pairs.items, np.unique(np.r_[pairs.left, pairs.right]))
    np.testing.assert_array_equal(pairs.worker, data.worker_codes)


def test_ties_dropped_with_a_warning_at_the_user_of_fit():
    """``encode_pairs`` is called by a model's ``fit``: the warning points at fit's caller."""
    data = Comparisons(TABLE)

    def fit():
        return encode_pairs(data, "drop", "M")

    with pytest.warns(DataWarning, match=r"M: dropped 1 tie\(s\) of 4 comparisons") as caught:
        pairs = fit()
    assert caught[0].filename == __file__
    np.testing.assert_array_equal(pairs.y, [1.0, 0.0, 1.0])
    assert pairs.n_ties_dropped == 1
    with pytest.warns(DataWarning) as caught:
        keep, dropped = kept_comparisons(data, "drop", "M", stacklevel=1)
    assert caught[0].filename == __file__ and dropped == 1
    np.testing.assert_array_equal(keep, [True, True, False, True])


def test_a_table_of_ties_only_and_unknown_policies_are_refused():
    ties = Comparisons(TABLE.assign(label="equal"))
    with pytest.raises(ValueError, match="M: all 4 comparisons are ties; pass ties='half'"):
        kept_comparisons(ties, "drop", "M")
    with pytest.raises(ValueError, match=r"ties must be one of \('drop', 'half'\)"):
        kept_comparisons(ties, "keep", "M")
