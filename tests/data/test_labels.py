"""The ``Labels`` container: reading, encoding, gold, and every documented bad-input error."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from crowdbayes import (
    BayesianDawidSkene,
    DataWarning,
    DawidSkene,
    HierarchicalAnnotation,
    Labels,
    MajorityVote,
)
from crowdbayes.data import as_labels


def small_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "task": ["a", "a", "b", "b", "c", "c", "c"],
            "worker": ["w1", "w2", "w1", "w3", "w2", "w3", "w1"],
            "label": ["pos", "neg", "neg", "neg", "pos", "pos", "neg"],
        }
    )


def decode(labels: Labels) -> pd.DataFrame:
    """The rows as the user's ids, rebuilt from the integer codes."""
    return pd.DataFrame(
        {
            "task": np.asarray(labels.tasks)[labels.task_codes],
            "worker": np.asarray(labels.workers)[labels.worker_codes],
            "label": np.asarray(labels.classes)[labels.label_codes],
        }
    )


def task_major(array: np.ndarray, n_tasks: int, n_classes: int) -> np.ndarray:
    """(n_tasks, n_classes) view of a per-task, per-class array in either layout.

    The engines may keep such arrays class-major (K, n_tasks) for speed; tests compare values,
    so they accept both orientations (the test data never has n_tasks == n_classes).
    """
    array = np.asarray(array)
    assert n_tasks != n_classes
    if array.shape == (n_classes, n_tasks):
        return array.T
    assert array.shape == (n_tasks, n_classes), array.shape
    return array


def assert_same_rows(labels: Labels, frame: pd.DataFrame) -> None:
    got = decode(labels)
    expected = frame[["task", "worker", "label"]].reset_index(drop=True)
    assert got.astype(str).values.tolist() == expected.astype(str).values.tolist()


# ---------------------------------------------------------------------------- construction


def test_from_dataframe_encodes_every_row():
    frame = small_frame()
    labels = Labels(frame)
    assert (labels.n_labels, labels.n_tasks, labels.n_workers, labels.n_classes) == (7, 3, 3, 2)
    assert list(labels.tasks) == ["a", "b", "c"]  # order of first appearance
    assert list(labels.workers) == ["w1", "w2", "w3"]
    assert list(labels.classes) == ["neg", "pos"]  # sorted when not declared
    assert labels.task_codes.dtype.kind == "i" and labels.label_codes.dtype.kind == "i"
    assert_same_rows(labels, frame)
    assert_same_rows(labels, labels.to_frame())
    assert not labels.has_gold
    assert (labels.gold_codes == -1).all()
    assert "7 labels, 3 tasks, 3 workers" in repr(labels)


def test_from_csv_and_parquet_paths_match_dataframe(tmp_path):
    frame = small_frame()
    csv = tmp_path / "labels.csv"
    parquet = tmp_path / "labels.parquet"
    frame.to_csv(csv, index=False)
    frame.to_parquet(parquet, index=False)
    tsv = tmp_path / "labels.tsv"
    frame.to_csv(tsv, index=False, sep="\t")
    reference = Labels(frame)
    for source in (csv, str(csv), parquet, tsv):
        labels = Labels(source)
        assert list(labels.tasks) == list(reference.tasks)
        assert list(labels.workers) == list(reference.workers)
        assert list(labels.classes) == list(reference.classes)
        np.testing.assert_array_equal(labels.label_codes, reference.label_codes)
        np.testing.assert_array_equal(labels.task_codes, reference.task_codes)
        np.testing.assert_array_equal(labels.worker_codes, reference.worker_codes)


def test_custom_column_names():
    frame = small_frame().rename(columns={"task": "item", "worker": "rater", "label": "answer"})
    frame["extra"] = 1.0  # unused columns are ignored
    labels = Labels(frame, task="item", worker="rater", label="answer")
    assert list(labels.tasks) == ["a", "b", "c"]
    assert labels.n_labels == 7
    with pytest.raises(ValueError, match=r"labels: column 'task' is missing"):
        Labels(frame)


def test_int_labels_are_sorted_numerically():
    frame = pd.DataFrame({"task": [1, 1, 2, 2], "worker": [7, 8, 7, 8], "label": [10, 2, 2, 2]})
    labels = Labels(frame)
    assert list(labels.classes) == [2, 10]  # numeric order, not text order
    np.testing.assert_array_equal(labels.label_codes, [1, 0, 0, 0])
    assert list(labels.tasks) == [1, 2]


def test_declared_classes_keep_their_order_and_unused_classes():
    labels = Labels(small_frame(), classes=["pos", "neg", "unsure", "skip"])
    assert list(labels.classes) == ["pos", "neg", "unsure", "skip"]
    assert labels.n_classes == 4
    np.testing.assert_array_equal(labels.label_codes, [0, 1, 1, 1, 0, 0, 1])
    votes = task_major(labels.vote_counts(), 3, 4)
    np.testing.assert_array_equal(votes, [[1, 1, 0, 0], [0, 2, 0, 0], [2, 1, 0, 0]])


def test_label_outside_declared_classes_is_an_error():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "labels: 4 label(s) are not among the declared classes ['pos', 'maybe']: ['neg']"
            " (first at row 1)"
        ),
    ):
        Labels(small_frame(), classes=["pos", "maybe"])


def test_declared_classes_repeating_or_too_few():
    with pytest.raises(ValueError, match=r"classes: declared classes repeat a value"):
        Labels(small_frame(), classes=["pos", "neg", "pos"])
    with pytest.raises(ValueError, match=r"classes: need at least 2 classes; got \['pos'\]"):
        Labels(small_frame().assign(label="pos"))


# ---------------------------------------------------------------------------- gold


@pytest.mark.parametrize("kind", ["series", "dataframe", "csv", "mapping"])
def test_gold_from_series_frame_path_or_mapping(kind, tmp_path):
    gold_frame = pd.DataFrame({"task": ["c", "a"], "label": ["pos", "neg"]})
    if kind == "series":
        gold = gold_frame.set_index("task")["label"]
    elif kind == "dataframe":
        gold = gold_frame
    elif kind == "mapping":
        gold = {"c": "pos", "a": "neg"}
    else:
        gold = tmp_path / "gold.csv"
        gold_frame.to_csv(gold, index=False)
    labels = Labels(small_frame(), gold=gold)
    assert labels.has_gold
    # tasks a, b, c; classes neg=0, pos=1
    np.testing.assert_array_equal(labels.gold_codes, [0, -1, 1])
    assert "gold for 2 tasks" in repr(labels)


def test_gold_with_custom_column_names():
    frame = small_frame().rename(columns={"task": "item", "label": "answer"})
    gold = pd.DataFrame({"item": ["b"], "answer": ["pos"]})
    labels = Labels(frame, task="item", label="answer", gold=gold)
    np.testing.assert_array_equal(labels.gold_codes, [-1, 1, -1])


def test_gold_adds_a_class_when_classes_are_inferred():
    labels = Labels(small_frame(), gold=pd.Series({"a": "unsure"}))
    assert list(labels.classes) == ["neg", "pos", "unsure"]
    assert labels.gold_codes[0] == 2


def test_gold_for_unknown_task_is_an_error():
    with pytest.raises(ValueError, match=re.escape("gold: 1 task(s) have no labels: ['zzz']")):
        Labels(small_frame(), gold=pd.Series({"a": "pos", "zzz": "neg"}))


def test_gold_label_outside_declared_classes_is_an_error():
    with pytest.raises(
        ValueError,
        match=re.escape("gold: 1 gold label(s) are not among the classes ['neg', 'pos']: ['meh']"),
    ):
        Labels(small_frame(), classes=["neg", "pos"], gold=pd.Series({"a": "meh", "b": "pos"}))


def test_gold_bad_tables():
    with pytest.raises(ValueError, match=r"gold: column 'label' is missing; got \['task', 'y'\]"):
        Labels(small_frame(), gold=pd.DataFrame({"task": ["a"], "y": ["pos"]}))
    with pytest.raises(ValueError, match=r"gold: column 'label' has 1 missing value\(s\)"):
        Labels(small_frame(), gold=pd.DataFrame({"task": ["a", "b"], "label": ["pos", None]}))
    with pytest.raises(ValueError, match=r"gold: 1 task\(s\) have a missing gold label"):
        Labels(small_frame(), gold=pd.Series({"a": "pos", "b": None}))
    with pytest.raises(ValueError, match=r"gold: task\(s\) listed more than once: \['a'\]"):
        Labels(small_frame(), gold=pd.Series(["pos", "neg"], index=["a", "a"]))


def test_empty_gold_is_no_gold():
    labels = Labels(small_frame(), gold=pd.Series([], dtype=object))
    assert not labels.has_gold


# ---------------------------------------------------------------------------- bad input


def test_missing_column_message_names_column_and_columns():
    frame = small_frame().drop(columns="worker")
    with pytest.raises(
        ValueError, match=re.escape("labels: column 'worker' is missing; got ['task', 'label']")
    ):
        Labels(frame)


def test_empty_table():
    with pytest.raises(ValueError, match=re.escape("labels: the table is empty (0 rows)")):
        Labels(small_frame().iloc[:0])


def test_empty_files(tmp_path):
    header_only = tmp_path / "header.csv"
    header_only.write_text("task,worker,label\n")
    with pytest.raises(ValueError, match=r"labels: \S*header\.csv has a header but no rows"):
        Labels(header_only)
    nothing = tmp_path / "nothing.csv"
    nothing.write_text("")
    with pytest.raises(ValueError, match=r"labels: \S*nothing\.csv is empty"):
        Labels(nothing)


def test_missing_file_and_wrong_type(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"labels: file not found: .*absent\.csv"):
        Labels(tmp_path / "absent.csv")
    with pytest.raises(TypeError, match=r"labels: expected a pandas DataFrame .*; got list"):
        Labels([("a", "w", 1)])


@pytest.mark.parametrize("column", ["task", "worker", "label"])
def test_nan_in_each_column(column):
    frame = small_frame()
    frame.loc[2, column] = None
    frame.loc[5, column] = np.nan
    with pytest.raises(
        ValueError,
        match=re.escape(f"labels: column '{column}' has 2 missing value(s) (row(s) [2, 5])"),
    ):
        Labels(frame)


@pytest.mark.parametrize("column", ["task", "worker", "label"])
def test_empty_field_in_csv_is_missing(column, tmp_path):
    """A file's rows are named by their line (the header is line 1), a Parquet file's (which
    has no lines) by their position."""
    frame = small_frame()
    frame.loc[3, column] = None
    path = tmp_path / "labels.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(
        ValueError, match=rf"column '{column}' has 1 missing value\(s\) \(line\(s\) \[5\]\)"
    ):
        Labels(path)
    frame.to_parquet(tmp_path / "labels.parquet")
    with pytest.raises(ValueError, match=r"1 missing value\(s\) \(row\(s\) \[3\]\)"):
        Labels(tmp_path / "labels.parquet")


SINGLE_WORKER = pd.DataFrame({"task": ["a", "b", "c"], "worker": "solo", "label": [0, 1, 1]})


@pytest.mark.parametrize(
    "model",
    [DawidSkene(), DawidSkene(one_coin=True), BayesianDawidSkene(), HierarchicalAnnotation()],
    ids=lambda m: type(m).__name__,
)
def test_single_worker_rejected_by_worker_models(model):
    name = type(model).__name__
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"{name} learns each worker's reliability and needs labels from at least 2 workers;"
            " got 1 (['solo'])"
        ),
    ):
        model.fit(SINGLE_WORKER)


def test_single_worker_majority_vote_works():
    model = MajorityVote().fit(SINGLE_WORKER)
    assert model.labels_.to_dict() == {"a": 0, "b": 1, "c": 1}
    np.testing.assert_allclose(model.probas_.sum(axis=1), 1.0)


DUPLICATED = pd.DataFrame(
    {
        "task": ["a", "a", "a", "b", "b", "b", "b"],
        "worker": ["w1", "w2", "w1", "w1", "w2", "w2", "w2"],
        "label": [1, 0, 0, 1, 1, 0, 1],
    }
)


def test_duplicates_keep_warns_and_counts_every_row():
    with pytest.warns(
        DataWarning,
        match=re.escape(
            "labels: 3 row(s) repeat a task–worker pair (first: task 'a', worker 'w1'); each is "
            "counted as a separate vote"
        ),
    ):
        labels = Labels(DUPLICATED)
    assert labels.n_labels == 7
    # votes: task a 2×"0", 1×"1"; task b 1×"0", 3×"1" (a symmetric matrix, so either layout)
    np.testing.assert_array_equal(labels.vote_counts(), [[2, 1], [1, 3]])
    np.testing.assert_array_equal(labels.count_matrix.toarray(), [[1, 1, 1, 0], [0, 1, 1, 2]])


def test_duplicates_drop_keeps_first_row_of_each_pair():
    with pytest.warns(
        DataWarning,
        match=re.escape("labels: dropped 3 row(s) that repeat a task–worker pair (first: task 'a'"),
    ):
        labels = Labels(DUPLICATED, duplicates="drop")
    assert labels.n_labels == 4
    assert decode(labels).values.tolist() == [
        ["a", "w1", 1],
        ["a", "w2", 0],
        ["b", "w1", 1],
        ["b", "w2", 1],
    ]


def test_duplicates_error_and_bad_policy():
    with pytest.raises(
        ValueError, match=re.escape("labels: 3 row(s) repeat a task–worker pair (first: task 'a'")
    ):
        Labels(DUPLICATED, duplicates="error")
    with pytest.raises(ValueError, match=r"duplicates must be one of .*; got 'ignore'"):
        Labels(DUPLICATED, duplicates="ignore")


@pytest.mark.parametrize("grouped", [True, False])
def test_count_matrix_of_distinct_pairs_needs_no_merge(grouped):
    """Without repeated task–worker pairs the matrix is built without the merge of repeated
    entries (and its sort): the same matrix as the merged one, rows possibly unsorted."""
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {"task": rng.integers(0, 50, 500), "worker": rng.integers(0, 20, 500), "label": 0}
    )
    frame["label"] = rng.integers(0, 3, len(frame))
    frame = frame.drop_duplicates(["task", "worker"])
    if grouped:
        frame = frame.sort_values("task", kind="stable")
    labels = Labels(frame)
    assert labels.pairs_distinct
    columns = labels.worker_codes * labels.n_classes + labels.label_codes
    merged = sp.csr_matrix(
        (np.ones(labels.n_labels), (labels.task_codes, columns)),
        shape=labels.count_matrix.shape,
    )
    np.testing.assert_array_equal(labels.count_matrix.toarray(), merged.toarray())
    assert labels.count_matrix.nnz == labels.n_labels


def test_no_warning_without_duplicates():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Labels(small_frame(), duplicates="error")


def test_as_labels_refuses_options_for_a_built_container():
    labels = Labels(small_frame())
    assert as_labels(labels) is labels
    with pytest.raises(TypeError, match=r"go to Labels\(\.\.\.\), not to fit\(\)"):
        as_labels(labels, classes=["neg", "pos"])


# ---------------------------------------------------------------------------- derived matrices


def random_frame(seed: int, n_rows: int = 300, n_tasks: int = 40, n_workers: int = 9, k: int = 3):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "task": rng.integers(0, n_tasks, n_rows).astype(str),
            "worker": np.char.add("w", rng.integers(0, n_workers, n_rows).astype(str)),
            "label": rng.integers(0, k, n_rows),
        }
    )


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_count_matrix_and_totals_against_double_loop(seed, grouped):
    frame = random_frame(seed)
    if grouped:  # labels grouped by task: the count matrix is built without sorting them
        frame = frame.sort_values("task", kind="stable", ignore_index=True)
    with pytest.warns(DataWarning):  # random pairs repeat
        labels = Labels(frame)
    assert bool(np.all(np.diff(labels.task_codes) >= 0)) == grouped
    tasks, workers, classes = list(labels.tasks), list(labels.workers), list(labels.classes)
    k = len(classes)
    naive = np.zeros((len(tasks), len(workers) * k))
    totals = np.zeros(len(workers) * k)
    votes = np.zeros((len(tasks), k))
    for task, worker, label in frame.itertuples(index=False):
        i, j, x = tasks.index(task), workers.index(worker), classes.index(label)
        naive[i, j * k + x] += 1
        totals[j * k + x] += 1
        votes[i, x] += 1
    matrix = labels.count_matrix
    assert matrix.shape == naive.shape
    assert matrix.has_canonical_format
    np.testing.assert_array_equal(matrix.toarray(), naive)
    assert naive.max() >= 2  # the test covers a worker labelling a task twice
    np.testing.assert_array_equal(labels.column_totals, totals)
    np.testing.assert_array_equal(task_major(labels.vote_counts(), len(tasks), k), votes)


def test_ids_with_leading_zeros_survive_csv_round_trip(tmp_path):
    frame = pd.DataFrame(
        {
            "task": ["0001", "0001", "0002", "10"],
            "worker": ["007", "08", "007", "08"],
            "label": [1, 0, 1, 1],
        }
    )
    path = tmp_path / "labels.csv"
    frame.to_csv(path, index=False)
    gold_path = tmp_path / "gold.csv"
    pd.DataFrame({"task": ["0002"], "label": [1]}).to_csv(gold_path, index=False)
    labels = Labels(path, gold=gold_path)
    assert list(labels.tasks) == ["0001", "0002", "10"]
    assert list(labels.workers) == ["007", "08"]
    assert list(labels.classes) == [0, 1]
    np.testing.assert_array_equal(labels.gold_codes, [-1, 1, -1])
    result = MajorityVote(ties="first").fit(labels)
    assert list(result.labels_.index) == ["0001", "0002", "10"]
    assert result.labels_["0001"] == 0


@pytest.mark.parametrize("duplicates", ["keep", "drop"])
@pytest.mark.parametrize("grouped", [True, False])
def test_workers_per_task_counts_distinct_workers(grouped, duplicates):
    rng = np.random.default_rng(3)
    n = 400
    frame = pd.DataFrame(
        {
            "task": rng.integers(0, 60, n),
            "worker": rng.integers(0, 15, n),
            "label": rng.integers(0, 3, n),
        }
    )
    if grouped:
        frame = frame.sort_values("task", kind="stable")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # repeated task-worker pairs: kept as votes
        labels = Labels(frame, duplicates=duplicates)
        from_matrix = Labels(frame, duplicates=duplicates)
    assert labels.pairs_distinct == (duplicates == "drop")
    expected = frame.groupby("task")["worker"].nunique()
    got = pd.Series(labels.workers_per_task, index=labels.tasks)  # from the codes
    pd.testing.assert_series_equal(got.loc[expected.index], expected, check_names=False)
    assert from_matrix.count_matrix.nnz  # built first: the counts come from the matrix
    np.testing.assert_array_equal(from_matrix.workers_per_task, labels.workers_per_task)
