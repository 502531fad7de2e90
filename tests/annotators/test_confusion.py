"""Confusion statistics: the whole counts of hard assignments without the sparse product."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes.annotators.confusion import confusion_counts, confusion_statistics
from crowdbayes.data import Labels


@pytest.mark.parametrize("duplicates", ["keep", "drop"])
@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_counts_of_hard_assignments_are_the_statistics_of_one_hot_ones(n_classes, duplicates):
    rng = np.random.default_rng(n_classes)
    n = 600
    frame = pd.DataFrame(
        {
            "task": rng.integers(0, 80, n),
            "worker": rng.integers(0, 12, n),
            "label": rng.integers(0, n_classes, n),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # repeated task-worker pairs
        labels = Labels(frame, duplicates=duplicates, classes=list(range(n_classes)))
    classes = rng.integers(0, n_classes, labels.n_tasks)
    expected = confusion_statistics(labels, np.eye(n_classes)[:, classes])
    counts = confusion_counts(labels, classes)
    assert counts.dtype == expected.dtype and counts.shape == expected.shape
    np.testing.assert_array_equal(counts, expected)  # the same numbers, exactly
    np.testing.assert_array_equal(confusion_counts(labels.compact(), classes), expected)
