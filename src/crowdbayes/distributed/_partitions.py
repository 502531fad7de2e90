"""Work done inside one partition: read, validate, learn the vocabulary, encode, write results.

These functions run on Dask workers and import no Dask themselves. Every error names the
partition (the Parquet file, or ``partition i`` of a Dask DataFrame) so that a bad row among
billions can be found.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from functools import cached_property
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
    "id_range",
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


class _MatrixBlock(LabelBlock):
    """A :class:`LabelBlock` known by its count matrix alone (as after
    :meth:`LabelBlock.compact`), with the workers per task given: what a pass over a stored
    partition computes with."""

    def __init__(self, matrix, workers_per_task: np.ndarray, n_labels: int, n_classes: int, gold):
        n_tasks, n_columns = matrix.shape
        super().__init__(
            None,
            None,
            None,
            n_tasks=n_tasks,
            n_workers=n_columns // n_classes,
            n_classes=n_classes,
            gold_codes=gold,
        )
        self._n_labels = n_labels
        self._matrix = matrix
        self._workers_per_task = workers_per_task

    @cached_property
    def count_matrix(self):
        return self._matrix

    @cached_property
    def column_totals(self) -> np.ndarray:
        """Labels per count-matrix column, from the matrix (the same integers as from the
        codes)."""
        matrix = self._matrix
        return np.bincount(matrix.indices, weights=matrix.data, minlength=matrix.shape[1])

    @cached_property
    def workers_per_task(self) -> np.ndarray:
        return self._workers_per_task.astype(np.int64)


#: a per-process read-only vector of ones, grown as needed: the count-matrix data of every
#: partition whose counts are all 1 (one label per task–worker pair, the usual case)
_ONES = [np.ones(0)]


def _ones(n: int) -> np.ndarray:
    if len(_ONES[0]) < n:
        ones = np.ones(n)
        ones.flags.writeable = False
        _ONES[0] = ones
    return _ONES[0][:n]


def _smallest_uint(values: np.ndarray) -> np.ndarray:
    top = int(values.max()) if len(values) else 0
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return values.astype(dtype)
    return values.astype(np.uint64)


def _workers_per_task(block: LabelBlock) -> np.ndarray:
    """:attr:`LabelBlock.workers_per_task`, in one comparison when no worker gives two
    labels to a task (two entries of a row with the same worker, adjacent as the columns
    ``j·K + x`` are sorted): then a row's entries are its workers."""
    matrix = block.count_matrix
    if not matrix.has_sorted_indices or matrix.nnz == 0:
        return block.workers_per_task
    worker = matrix.indices // block.n_classes
    repeated = worker[1:] == worker[:-1]
    starts = matrix.indptr[1:-1]
    repeated[starts[(starts > 0) & (starts < matrix.nnz)] - 1] = False  # across two rows
    if repeated.any():
        return block.workers_per_task
    return np.diff(matrix.indptr)


def _index_array(values: np.ndarray, bound: int) -> np.ndarray:
    """``values`` (CSR row pointers or column indices, all <= ``bound``) as int32 if they fit."""
    return values.astype(np.int32 if bound < 2**31 else np.int64, copy=False)


@dataclass
class EncodedPartition:
    """One partition's encoded labels, in the form kept in worker memory between passes.

    What a pass needs is the partition's count matrix ``A`` (``A[i, jK+x]``: how often worker
    ``j`` said ``x`` on local task ``i``, global worker and class codes), its workers per task
    and gold codes; the task ids are needed once, for the output. They are kept compactly:

    - the CSR column indices and row pointers as int32 (4 bytes per label, 4 per task);
    - the counts only when some count is not 1 (else a shared read-only vector of ones);
    - the workers per task in the smallest unsigned type (1 byte per task for < 256);
    - the task ids as ``(first, count)`` when they are consecutive integers (files written
      by task), else as the array;
    - the gold codes only when some task has one.

    That is about 5 bytes per label at 10 labels per task, against 15 for the
    :class:`LabelBlock`'s float64 counts, int64 row pointers, gold codes and workers per task
    (measured in ``benchmarks/scale/scale_dask.py``). :attr:`block` rebuilds a
    :class:`LabelBlock` with the same count matrix (the same arrays' values, so the same
    statistics, bit for bit) for each pass; its temporaries are one partition's.
    """

    name: str
    n_labels: int
    n_classes: int
    shape: tuple[int, int]
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None
    sorted_indices: bool
    workers_per_task: np.ndarray
    task_range: tuple[int, int] | None
    task_array: np.ndarray | None
    gold: np.ndarray | None

    @classmethod
    def from_block(cls, name: str, task_ids, block: LabelBlock) -> EncodedPartition:
        """Keep what :attr:`block` needs of a (compacted) block and its task ids."""
        matrix = block.count_matrix
        data = None if bool((matrix.data == 1.0).all()) else np.asarray(matrix.data, np.float64)
        task_ids = np.asarray(task_ids)
        task_range = None
        if task_ids.dtype.kind in "iu" and len(task_ids):
            first = int(task_ids[0])
            if bool(np.all(np.diff(task_ids) == 1)):
                task_range = (first, len(task_ids))
        gold = block.gold_codes if block.has_gold else None
        return cls(
            name=name,
            n_labels=block.n_labels,
            n_classes=block.n_classes,
            shape=matrix.shape,
            indptr=_index_array(matrix.indptr, int(matrix.nnz)),
            indices=_index_array(matrix.indices, matrix.shape[1]),
            data=data,
            sorted_indices=bool(matrix.has_sorted_indices),
            workers_per_task=_smallest_uint(_workers_per_task(block)),
            task_range=task_range,
            task_array=None if task_range is not None else task_ids,
            gold=gold,
        )

    @property
    def task_ids(self) -> np.ndarray:
        """The partition's task ids: local task code ``i`` is ``task_ids[i]``."""
        if self.task_range is None:
            return self.task_array
        first, count = self.task_range
        return np.arange(first, first + count, dtype=np.int64)

    @property
    def block(self) -> LabelBlock:
        """A :class:`LabelBlock` of the stored count matrix (a new one at each call)."""
        import scipy.sparse as sp

        data = _ones(len(self.indices)) if self.data is None else self.data
        matrix = sp.csr_matrix((data, self.indices, self.indptr), shape=self.shape, copy=False)
        matrix.has_sorted_indices = self.sorted_indices  # known when stored: no check per pass
        wpt = self.workers_per_task
        return _MatrixBlock(matrix, wpt, self.n_labels, self.n_classes, self.gold)

    def nbytes(self) -> int:
        """Bytes of the arrays kept."""
        arrays = (self.indptr, self.indices, self.data, self.workers_per_task, self.task_array)
        return sum(a.nbytes for a in (*arrays, self.gold) if a is not None)

    def __sizeof__(self) -> int:  # Dask's count of the memory it manages
        return self.nbytes() + 1024


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
    workers = pd.unique(frame[columns.worker])
    # the schema as an empty copy: a slice (``iloc[:0]``) is a view that would keep the whole
    # partition alive on the worker until every partition's vocabulary is gathered
    schema = frame.iloc[:0].copy()
    return workers, pd.unique(labels), len(frame), schema, id_range(frame[columns.task])


def id_range(ids: pd.Series) -> tuple | None:
    """(smallest, largest) of a partition's ids (tasks, queries); None when it is empty or the
    ids do not sort (input for :func:`disjoint_task_ranges`)."""
    try:
        return (ids.min(), ids.max()) if len(ids) else None
    except TypeError:
        return None


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
    return EncodedPartition.from_block(name, task_ids, block)


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
