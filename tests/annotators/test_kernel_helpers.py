"""Issue 45: the compiled helpers around the Dawid–Skene pass give the numpy numbers exactly —
the layout from the codes (row pointers, int32 columns, labels per column), the M-step's
confusion rows, the pass's padded table and the vote-share start of large tasks."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes import DawidSkene, Labels
from crowdbayes.annotators import confusion_pass as cp
from crowdbayes.annotators import full_confusion_map
from crowdbayes.annotators.confusion import confusion_statistics
from crowdbayes.datasets import simulate_labels
from crowdbayes.models.labels._base import vote_share_start

pytestmark = pytest.mark.skipif(
    not cp.kernel_available() and os.environ.get("CI") != "true", reason="C kernel not built"
)


def labels_of(frame: pd.DataFrame, **kwargs) -> Labels:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Labels(frame, **kwargs)


@pytest.mark.parametrize("k", [2, 3, 5, 9])
def test_layout_from_codes_is_the_count_matrix(k):
    """Row pointers and columns of the CSR count matrix, and its column totals."""
    labels = simulate_labels(300, 12, 4, n_classes=k, random_state=k).to_labels()
    indptr, columns, totals = cp._rows_from_codes(labels)
    matrix = labels_of(simulate_labels(300, 12, 4, n_classes=k, random_state=k).labels)
    np.testing.assert_array_equal(indptr, matrix.count_matrix.indptr)
    np.testing.assert_array_equal(columns, matrix.count_matrix.indices)
    np.testing.assert_array_equal(totals, matrix.column_totals)
    assert columns.dtype == np.int32 and totals.dtype == np.float64


def test_layout_from_codes_refuses_tasks_out_of_order_and_codes_out_of_range():
    """Tasks not grouped, or a code out of range: False (the caller builds the count matrix)."""
    n_tasks, k = 3, 2
    buffers = (np.empty(n_tasks + 1, dtype=np.int64), np.empty(4, dtype=np.int32), np.empty(4))
    codes = np.array([0, 1, 0, 1], dtype=np.int64)
    tasks = np.array([0, 2, 1, 1], dtype=np.int64)
    assert cp._kernel.label_layout(tasks, codes, codes, n_tasks, k, *buffers) is False
    tasks = np.array([0, 0, 1, 2], dtype=np.int64)
    assert cp._kernel.label_layout(tasks, codes, codes, n_tasks, k, *buffers) is True
    np.testing.assert_array_equal(buffers[0], [0, 2, 3, 4])
    assert cp._kernel.label_layout(tasks, codes, codes + 2, n_tasks, k, *buffers) is False
    assert cp._kernel.label_layout(tasks + 1, codes, codes, n_tasks, k, *buffers) is False


def test_labels_out_of_task_order_take_the_count_matrix():
    """A table not grouped by task: the pass's layout comes from the count matrix."""
    frame = simulate_labels(200, 8, 3, n_classes=3, random_state=4).labels
    shuffled = labels_of(frame.sample(frac=1.0, random_state=0))
    assert not np.all(np.diff(shuffled.task_codes) >= 0)
    assert cp._rows_from_codes(shuffled) is None
    fused = DawidSkene(max_iter=5, tol=None).fit(shuffled)
    plain = DawidSkene(max_iter=5, tol=None).fit(labels_of(frame))
    merged = fused.probas_.loc[plain.probas_.index]
    np.testing.assert_allclose(merged.to_numpy(), plain.probas_.to_numpy(), atol=1e-12)


@pytest.mark.parametrize("k", [2, 3, 5, 7])
@pytest.mark.parametrize(("pseudo", "diagonal"), [(0.0, 0.0), (0.01, 0.01), (1.0, 0.0), (0, 2.5)])
def test_compiled_confusion_map_is_the_numpy_map_to_the_bit(k, pseudo, diagonal, monkeypatch):
    """The same operations in the same order; rows without counts (total 0) are uniform."""
    counts = np.random.default_rng(k).gamma(0.5, 3.0, size=(7, k, k))
    counts[2, 1] = 0.0  # a row with no counts at all
    compiled = full_confusion_map(counts, pseudo, diagonal)
    monkeypatch.setattr(cp, "_kernel", None)
    assert cp.confusion_map(counts, pseudo, diagonal) is None
    expected = full_confusion_map(counts, pseudo, diagonal)
    np.testing.assert_array_equal(compiled, expected)
    if pseudo == 0 and diagonal == 0:
        np.testing.assert_array_equal(compiled[2, 1], np.full(k, 1.0 / k))


def test_compiled_confusion_map_leaves_eight_classes_to_numpy():
    """numpy sums rows of 8 or more by pairs: those stay in numpy, as do rows that are not
    square blocks and other number types."""
    assert cp.confusion_map(np.ones((2, 8, 8)), 0.01, 0.0) is None
    assert cp.confusion_map(np.ones((2, 3, 5)), 0.01, 0.0) is None
    assert cp.confusion_map(np.ones((2, 3, 3), dtype=np.float32), 0.01, 0.0) is None


@pytest.mark.parametrize("k", [2, 3, 5, 9])
def test_padded_table_is_the_transposed_padded_confusion(k):
    theta = np.random.default_rng(k).dirichlet(np.ones(k), size=(4, k))
    stride = cp.row_stride(k)
    table = cp._padded_table(theta, stride)
    expected = np.zeros((4, k, stride))
    expected[:, :, :k] = theta.transpose(0, 2, 1)
    np.testing.assert_array_equal(table, expected)
    assert table.ctypes.data % 64 == 0


@pytest.mark.parametrize("k", [2, 5])
def test_vote_shares_of_tasks_above_the_shares_table(k):
    """Tasks with more labels than the table of shares (64), and gold tasks: divided one by
    one; the counts are the numpy statistics of the vote shares to the last bit."""
    rng = np.random.default_rng(k)
    rows = [(f"t{i}", f"w{j}", int(rng.integers(k))) for i in range(12) for j in range(90)]
    rows += [(f"s{i}", f"w{j}", int(rng.integers(k))) for i in range(30) for j in range(3)]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    labels = labels_of(frame, classes=list(range(k)), gold=pd.Series([0, 1], ["t3", "s4"]))
    fused = cp.vote_share_statistics(labels)
    resp = vote_share_start(labels)
    np.testing.assert_array_equal(fused.confusion, confusion_statistics(labels, resp))
    np.testing.assert_allclose(fused.classes, resp.sum(axis=1), rtol=1e-14)


@pytest.mark.parametrize("k", [1, 2, 5, 9])
def test_most_probable_classes_are_numpys_argmax(k):
    """Ties to the first class, a NaN as the largest (numpy's rule), odd task counts."""
    probas = np.random.default_rng(k).dirichlet(np.ones(k), size=1001).T.copy()
    probas[:, 5] = 1.0 / k  # a tie between every class
    probas[k - 1, 7] = np.nan
    probas[:, 8] = np.nan
    probas[0, 9] = np.nan
    probas[:, 10] = [np.inf] * k if k > 1 else [np.inf]
    np.testing.assert_array_equal(cp.most_probable_classes(probas), np.argmax(probas, axis=0))
    view = probas[:, ::2]  # not contiguous
    np.testing.assert_array_equal(cp.most_probable_classes(view), np.argmax(view, axis=0))
