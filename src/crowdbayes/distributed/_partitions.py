"""Work done inside one partition: read, validate, learn the vocabulary, encode, write results.

These functions run on Dask workers and import no Dask themselves. Every error names the
partition (the Parquet file, or ``partition i`` of a Dask DataFrame) so that a bad row among
billions can be found.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.labels import LabelBlock
from ..data.validate import show_values as _show
from ..models.labels.statistics import LabelIds

__all__ = [
    "Columns",
    "Vocabulary",
    "EncodedPartition",
    "parquet_files",
    "read_parquet_partition",
    "check_partition",
    "partition_vocabulary",
    "merge_vocabularies",
    "disjoint_task_ranges",
    "encode_partition",
    "partition_task_results",
]


@dataclass(frozen=True)
class Columns:
    """Names of the task, worker and label columns."""

    task: str = "task"
    worker: str = "worker"
    label: str = "label"

    def all(self) -> list[str]:
        return [self.task, self.worker, self.label]


@dataclass(frozen=True)
class Vocabulary(LabelIds):
    """Worker and class ids known up front, shared by every partition (global codes), and the
    gold class code of the tasks that have one."""

    gold: pd.Series | None = None


@dataclass
class EncodedPartition:
    """One partition's encoded labels: its task ids (local task code ``i`` is ``task_ids[i]``) and
    a compact :class:`LabelBlock` (count matrix only)."""

    name: str
    task_ids: np.ndarray
    block: LabelBlock


def parquet_files(source: str | os.PathLike, what: str = "labels") -> list[Path]:
    """The Parquet files of ``source``: one file, a directory (its ``*.parquet``/``*.pq`` files)
    or a glob pattern; sorted, so partition numbers are reproducible. ``what`` starts the
    messages (what the files hold)."""
    text = os.fspath(source)
    path = Path(text)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in (".parquet", ".pq"))
        where = f"directory {path}"
    elif path.exists():
        files = [path]
        where = str(path)
    else:
        files = sorted(Path(p) for p in glob.glob(text))
        where = f"pattern {text!r}"
        if not files and not glob.has_magic(text):
            raise FileNotFoundError(f"{what}: file not found: {path}")
    if not files:
        raise FileNotFoundError(f"{what}: no Parquet files match {where}")
    return files


def read_parquet_partition(path: str | os.PathLike, columns: Columns) -> pd.DataFrame:
    """Read the label columns of one Parquet file; a corrupt or incomplete file is a ValueError
    naming it."""
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
        table = pq.read_table(path, columns=[c for c in columns.all() if c in names])
    except Exception as err:  # pyarrow's errors for truncated or corrupt files vary
        raise ValueError(
            f"labels: file {path} is not a readable Parquet file ({type(err).__name__}: {err})"
        ) from None
    missing = [c for c in columns.all() if c not in names]
    if missing:
        raise ValueError(f"labels: file {path}: column {missing[0]!r} is missing; got {names}")
    return table.to_pandas()


def check_partition(frame: pd.DataFrame, name: str, columns: Columns) -> pd.DataFrame:
    """The label columns of ``frame``, refusing missing columns and missing values (a task column
    may also be the index, as after ``set_index(task)``)."""
    if columns.task not in frame.columns and frame.index.name == columns.task:
        frame = frame.reset_index()
    for column in columns.all():
        if column not in frame.columns:
            raise ValueError(
                f"labels: {name}: column {column!r} is missing; got {list(map(str, frame.columns))}"
            )
    frame = frame[columns.all()]
    for column in columns.all():
        missing = np.flatnonzero(frame[column].isna().to_numpy())
        if missing.size:
            raise ValueError(
                f"labels: {name}: column {column!r} has {missing.size} missing value(s) "
                f"(row(s) {_show(missing.tolist())} of the partition)"
            )
    return frame


def partition_vocabulary(
    frame: pd.DataFrame, name: str, columns: Columns, classes: pd.Index | None
) -> tuple[np.ndarray, np.ndarray, int, pd.DataFrame, tuple | None]:
    """Distinct workers and labels of one partition, its row count, its (empty) schema and the
    (smallest, largest) task id (None if the ids do not sort); with declared ``classes``, a label
    outside them is an error naming the partition."""
    labels = frame[columns.label].to_numpy()
    if classes is not None:
        _check_labels(classes.get_indexer(labels), labels, classes, name)
    tasks = frame[columns.task]
    try:
        task_range = (tasks.min(), tasks.max()) if len(tasks) else None
    except TypeError:
        task_range = None
    workers = pd.unique(frame[columns.worker])
    return workers, pd.unique(labels), len(frame), frame.iloc[:0], task_range


def disjoint_task_ranges(ranges: list[tuple | None]) -> bool:
    """True when the partitions' task-id ranges do not overlap (so no task is in two of them);
    False when that cannot be shown this way."""
    if any(r is None for r in ranges):
        return False
    try:
        ordered = sorted(ranges)
        pairs = zip(ordered[:-1], ordered[1:], strict=True)
        return all(left[1] < right[0] for left, right in pairs)
    except TypeError:
        return False


def _check_labels(codes: np.ndarray, labels: np.ndarray, classes: pd.Index, name: str) -> None:
    unknown = np.flatnonzero(codes < 0)
    if unknown.size:
        raise ValueError(
            f"labels: {name}: {unknown.size} label(s) are not among the declared classes "
            f"{list(classes)}: {_show(pd.unique(labels[unknown]))} (first at row {unknown[0]} "
            "of the partition)"
        )


def _sorted_index(values: np.ndarray, name: str) -> pd.Index:
    index = pd.Index(pd.unique(values), name=name)
    try:
        return index.sort_values()
    except TypeError:  # mixed types: order by their text
        return index[np.argsort(index.astype(str), kind="stable")]


def merge_vocabularies(
    parts: list[tuple],
    classes: pd.Index | None,
    gold: pd.Series | None,
) -> Vocabulary:
    """The global vocabulary: sorted distinct workers, the declared (else sorted distinct)
    classes, gold encoded as class codes."""
    workers = _sorted_index(np.concatenate([p[0] for p in parts]), "worker")
    if classes is None:
        distinct = np.concatenate([p[1] for p in parts])
        if gold is not None:
            distinct = np.concatenate([distinct, gold.to_numpy()])
        classes = _sorted_index(distinct, "class")
    classes = pd.Index(classes, name="class")
    if classes.has_duplicates:
        raise ValueError(f"classes: declared classes repeat a value: {list(classes)}")
    if len(classes) < 2:
        raise ValueError(f"classes: need at least 2 classes; got {list(classes)}")
    gold_codes = None
    if gold is not None and len(gold):
        codes = classes.get_indexer(gold.to_numpy())
        if (codes < 0).any():
            bad = pd.unique(gold.to_numpy()[codes < 0])
            raise ValueError(f"gold: gold label(s) not among the classes {list(classes)}: {bad}")
        gold_codes = pd.Series(codes, index=gold.index)
    return Vocabulary(workers=workers, classes=classes, gold=gold_codes)


def encode_partition(
    frame: pd.DataFrame, name: str, columns: Columns, vocabulary: Vocabulary
) -> EncodedPartition:
    """Integer-encode one partition with the global vocabulary (local task codes) and keep only
    the count matrix, column totals and gold codes the statistics need."""
    task_codes, task_ids = pd.factorize(frame[columns.task], sort=False)
    worker_codes = vocabulary.workers.get_indexer(frame[columns.worker])
    labels = frame[columns.label].to_numpy()
    label_codes = vocabulary.classes.get_indexer(labels)
    _check_labels(label_codes, labels, vocabulary.classes, name)
    if (worker_codes < 0).any():  # the vocabulary pass saw every worker: data changed since
        raise ValueError(f"labels: {name}: workers changed after the vocabulary pass")
    gold_codes = None
    if vocabulary.gold is not None:
        gold_codes = vocabulary.gold.reindex(task_ids).fillna(-1).to_numpy(np.int64)
    block = LabelBlock(
        task_codes,
        worker_codes,
        label_codes,
        n_tasks=len(task_ids),
        n_workers=vocabulary.n_workers,
        n_classes=vocabulary.n_classes,
        gold_codes=gold_codes,
    )
    block.compact()
    return EncodedPartition(name=name, task_ids=np.asarray(task_ids), block=block)


def partition_task_results(
    part: EncodedPartition, model, globals_, index: int, classes: pd.Index
) -> pd.DataFrame:
    """The partition's task table (``label`` and ``p_<class>`` columns, indexed by task), from
    the same ``local_stats`` pass as the fit."""
    tasks: dict = {}
    model.local_stats(part.block, model.partition_globals(globals_, index), tasks)
    table = pd.DataFrame(
        tasks["probas"].T,
        index=pd.Index(part.task_ids, name="task"),
        columns=[f"p_{c}" for c in classes],
    )
    winners = tasks["labels"] if "labels" in tasks else np.argmax(tasks["probas"], axis=0)
    table.insert(0, "label", classes[winners])
    return table
