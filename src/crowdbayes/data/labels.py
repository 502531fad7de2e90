"""The ``Labels`` container: workers' class labels for tasks, validated and encoded once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .hygiene import DataCheck, Hygiene, clean_text
from .io import TableLike, read_table_rows
from .validate import plain, reject_missing, show_id
from .validate import show_values as _show

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["Labels", "LabelBlock"]

_DUPLICATE_POLICIES = ("keep", "drop", "error")


def _sorted_classes(values: np.ndarray) -> list:
    try:
        return sorted(values.tolist())
    except TypeError:  # mixed types: order by their text
        return sorted(values.tolist(), key=str)


def _duplicate_policy(
    task_codes: np.ndarray,
    worker_codes: np.ndarray,
    tasks: pd.Index,
    workers: pd.Index,
    policy: str,
    hygiene: Hygiene,
) -> tuple[np.ndarray | None, bool]:
    """Apply the duplicates policy to rows repeating a task–worker pair.

    Returns the boolean mask of rows to keep (None: every row) and whether the kept rows have
    distinct task–worker pairs. Works on the integer codes, not on the user's id columns: one
    int64 key per row, sorted to learn whether any repeats (numpy's vectorised sort of a
    million keys takes a third of the time of a hash pass, whose table of a million entries
    misses the cache), and only then the hash pass that finds the first row of each pair.
    """
    what = hygiene.what
    key = task_codes.astype(np.int64, copy=False) * max(len(workers), 1) + worker_codes
    ordered = np.sort(key)
    if not (ordered[1:] == ordered[:-1]).any():
        return None, True
    repeated = pd.Series(key).duplicated(keep="first").to_numpy()
    n_repeated = int(repeated.sum())
    if n_repeated == 0:
        return None, True
    first = int(np.argmax(repeated))
    where = f"(first: task {tasks[task_codes[first]]!r}, worker {workers[worker_codes[first]]!r})"
    if policy == "error":
        raise ValueError(
            f"{what}: {n_repeated} row(s) repeat a task–worker pair {where}; "
            "pass duplicates='keep' or duplicates='drop'"
        )
    if policy == "drop":
        message = (
            f"{what}: dropped {n_repeated} row(s) that repeat a task–worker pair {where}; "
            "the first row of each pair is kept"
        )
    else:
        message = (
            f"{what}: {n_repeated} row(s) repeat a task–worker pair {where}; each is counted "
            "as a separate vote (pass duplicates='drop' to keep only the first)"
        )
    hygiene.record("duplicates", message, {"rows": n_repeated})
    return (~repeated, True) if policy == "drop" else (None, False)


#: a class seen at most this many times, and this many times less often than the commonest
#: class, is suspicious when the classes were not declared (a typo, a stray value)
RARE_CLASS_COUNT, RARE_CLASS_RATIO = 3, 500


def _check_classes(label_codes: np.ndarray, classes: pd.Index, hygiene: Hygiene) -> None:
    """Warn about near-duplicate classes (:meth:`Hygiene.classes`), and about the other
    classes much rarer than the others (see :data:`RARE_CLASS_RATIO`)."""
    counts = np.bincount(label_codes, minlength=len(classes))
    hygiene.classes(counts, classes)
    rare = np.flatnonzero(
        (counts <= RARE_CLASS_COUNT) & (counts * RARE_CLASS_RATIO <= counts.max())
    )
    if rare.size == 0:
        return
    shown = ", ".join(f"{show_id(classes[c])} ({counts[c]} of {counts.sum()})" for c in rare[:5])
    common = [classes[c] for c in np.flatnonzero(counts > RARE_CLASS_COUNT)]
    one = rare.size == 1
    hygiene.record(
        "rare_classes",
        f"{hygiene.what}: {'class' if one else 'classes'} {shown} {'is' if one else 'are'} much "
        "rarer than the others (a typo or a stray value?); fix the file, or declare the classes "
        f"to check every label against them, e.g. classes={[plain(c) for c in common]}",
        {"classes": int(rare.size), "labels": int(counts[rare].sum())},
    )


def _require_numeric_grades(classes: Sequence) -> None:
    """Ordered labels without declared classes are ordered by value: they must be numbers."""
    text = [c for c in classes if isinstance(c, (str, bytes)) or not np.isreal(c)]
    if text:
        raise ValueError(
            f"labels: ordered=True with labels that are not numbers ({_show(text)}) needs the "
            "grades in order, lowest first: pass classes=[...]"
        )


class LabelBlock:
    """Integer-encoded labels: the part of :class:`Labels` that the models compute with.

    A block holds one row per label (``task_codes``, ``worker_codes``, ``label_codes``) and the
    sizes of the code spaces. :class:`Labels` is the block of a whole validated table; the
    distributed backend (:mod:`crowdbayes.distributed`) builds one block per partition, with
    *global* worker and class codes and *local* task codes (every label of a task lies in the
    same partition). The sufficient statistics of the label models are computed from a block
    alone, so the same functions serve one table in memory and many partitions on a cluster.

    Parameters
    ----------
    task_codes, worker_codes, label_codes : ndarray of int, one entry per label
    n_tasks, n_workers, n_classes : int
        Sizes of the code spaces (codes lie in ``range(n)``).
    gold_codes : ndarray of int, shape (n_tasks,), optional
        Gold class code of each task, ``-1`` where unknown (default: none known).
    pairs_distinct : bool
        True when no task–worker pair repeats (known when the table was validated): the count
        matrix then needs no merge of repeated entries, and a task's workers are its entries.
        False (the default) makes no such assumption.
    """

    def __init__(
        self,
        task_codes: np.ndarray,
        worker_codes: np.ndarray,
        label_codes: np.ndarray,
        *,
        n_tasks: int,
        n_workers: int,
        n_classes: int,
        gold_codes: np.ndarray | None = None,
        pairs_distinct: bool = False,
    ) -> None:
        self.task_codes = task_codes
        self.worker_codes = worker_codes
        self.label_codes = label_codes
        self._n_tasks, self._n_workers, self._n_classes = n_tasks, n_workers, n_classes
        self.gold_codes = np.full(n_tasks, -1, dtype=np.int64) if gold_codes is None else gold_codes
        self.pairs_distinct = bool(pairs_distinct)

    @property
    def n_tasks(self) -> int:
        return self._n_tasks

    @property
    def n_workers(self) -> int:
        return self._n_workers

    @property
    def n_classes(self) -> int:
        return self._n_classes

    @property
    def n_labels(self) -> int:
        return len(self.label_codes) if self.label_codes is not None else self._n_labels

    def compact(self) -> LabelBlock:
        """Build the count matrix and column totals, then drop the per-label code arrays (a
        third of the memory of the encoded labels); returns ``self``."""
        self._n_labels = self.n_labels
        _ = self.count_matrix, self.column_totals
        self.task_codes = self.worker_codes = self.label_codes = None
        self.__dict__.pop("label_columns", None)
        return self

    @property
    def has_gold(self) -> bool:
        return bool((self.gold_codes >= 0).any())

    @cached_property
    def count_matrix(self) -> sp.csr_matrix:
        """Sparse (n_tasks, n_workers * n_classes) matrix: entry ``[i, j*K + x]`` counts how often
        worker ``j`` gave label ``x`` to task ``i``.

        Every sum over labels in the label models is a product with this matrix: the E-step is
        ``A @ log_confusion`` and the M-step statistics are ``A.T @ responsibilities``.
        """
        import scipy.sparse as sp  # here: a Labels (or a majority vote) needs no SciPy

        k = self.n_classes
        columns = self.worker_codes * k + self.label_codes
        data = np.ones(self.n_labels, dtype=np.float64)
        shape = (self.n_tasks, self.n_workers * k)
        tasks = self.task_codes
        if len(tasks) and shape[1] < 2**31 and bool(np.all(tasks[1:] >= tasks[:-1])):
            # labels already grouped by task (the usual table): the row pointers are the
            # cumulated task counts, with no sort of the labels (the same matrix, faster)
            indptr = np.zeros(self.n_tasks + 1, dtype=np.int64)
            np.cumsum(np.bincount(tasks, minlength=self.n_tasks), out=indptr[1:])
            index_type = np.int32 if len(tasks) < 2**31 else np.int64
            matrix = sp.csr_matrix(
                (data, columns.astype(index_type), indptr.astype(index_type)), shape=shape
            )
            if self.pairs_distinct:  # no entry repeats: nothing to merge (nor to sort for it)
                return matrix
        else:
            matrix = sp.csr_matrix((data, (tasks, columns)), shape=shape)
        matrix.sum_duplicates()
        return matrix

    @cached_property
    def label_columns(self) -> np.ndarray:
        """The count-matrix column ``j·K + x`` of each label (worker ``j`` saying ``x``), as an
        int64 vector: computed once for the statistics that count labels by column."""
        return self.worker_codes * self.n_classes + self.label_codes

    @cached_property
    def column_totals(self) -> np.ndarray:
        """How many labels ``x`` each worker gave in all, as a (n_workers * n_classes,) vector."""
        k = self.n_classes
        return np.bincount(self.label_columns, minlength=self.n_workers * k).astype(np.float64)

    @cached_property
    def workers_per_task(self) -> np.ndarray:
        """How many distinct workers labelled each task, as a (n_tasks,) integer vector.

        One pass over the count matrix's rows (its columns ``j·K + x`` sorted within a row, so
        a worker's columns are adjacent): a worker is new where the worker code changes. With
        distinct task–worker pairs (``pairs_distinct``) every entry is a worker of its own.
        Before the matrix is built (a majority vote never needs it), the same counts come from
        the codes instead, without SciPy."""
        if "count_matrix" not in self.__dict__ and self.label_codes is not None:
            tasks = self.task_codes
            if not self.pairs_distinct:
                pairs = np.unique(tasks.astype(np.int64) * self.n_workers + self.worker_codes)
                tasks = pairs // self.n_workers
            return np.bincount(tasks, minlength=self.n_tasks).astype(np.int64)
        matrix = self.count_matrix
        if self.pairs_distinct:
            return np.diff(matrix.indptr).astype(np.int64)
        if not matrix.has_sorted_indices:
            matrix = matrix.sorted_indices()
        worker = matrix.indices // self.n_classes
        indptr = matrix.indptr
        new = np.ones(len(worker), dtype=bool)
        new[1:] = worker[1:] != worker[:-1]
        new[indptr[:-1][np.diff(indptr) > 0]] = True  # the first entry of every row
        seen = np.concatenate([[0], np.cumsum(new)])
        return (seen[indptr[1:]] - seen[indptr[:-1]]).astype(np.int64)

    def cross_checked_tasks(self) -> np.ndarray:
        """Boolean (n_tasks,): the tasks that two or more distinct workers labelled or that have
        a gold label. Cached (the models read it every iteration) while ``gold_codes`` is the
        same array; read-only."""
        cached = self.__dict__.get("_cross_checked")
        if cached is not None and cached[0] is self.gold_codes:
            return cached[1]
        checked = (self.workers_per_task >= 2) | (self.gold_codes >= 0)
        checked.flags.writeable = False
        self.__dict__["_cross_checked"] = (self.gold_codes, checked)
        return checked

    def vote_counts(self) -> np.ndarray:
        """Class-major array (n_classes, n_tasks): how many votes each class got on each task."""
        k = self.n_classes
        if self.label_codes is None:  # compacted: sum the count matrix over workers
            coo = self.count_matrix.tocoo()
            flat = np.bincount(
                (coo.col % k) * self.n_tasks + coo.row, weights=coo.data, minlength=k * self.n_tasks
            )
            return flat.reshape(k, self.n_tasks)
        flat = np.bincount(
            self.label_codes * self.n_tasks + self.task_codes, minlength=k * self.n_tasks
        )
        return flat.reshape(k, self.n_tasks).astype(np.float64)


class Labels(LabelBlock):
    """Class labels given by workers to tasks, in long format.

    Each row says that ``worker`` gave ``label`` to ``task`` (crowd-kit's column names). The table
    is validated and integer-encoded once; every model works on the codes and reports results
    back in the user's own ids.

    Parameters
    ----------
    data : DataFrame or path
        The labels. A path ending in ``.parquet`` is read as Parquet, otherwise as CSV/TSV.
    task, worker, label : str
        Column names in ``data`` (defaults ``task``, ``worker``, ``label``).
    classes : sequence, optional
        The declared classes, in order. Labels outside them are an error. Defaults to the sorted
        distinct labels (and gold labels).
    gold : Series, DataFrame or path, optional
        Known true classes for some tasks (``task, label`` columns, or a Series indexed by task).
        Models clamp these tasks to their gold class during inference.
    duplicates : {"keep", "drop", "error"}
        What to do with rows that repeat a task–worker pair. ``"keep"`` (default) counts each row
        as a separate vote and warns; ``"drop"`` keeps the first row of each pair and warns how
        many were dropped; ``"error"`` raises.
    ordered : bool
        The classes are ordered grades (``classes`` lists them from lowest to highest; when
        ``classes`` is not given, the labels must be numbers and are ordered by value). Ordinal
        models (:class:`~crowdbayes.models.labels.OrdinalDawidSkene`) need ordered labels; the
        nominal models refuse them (pass ``ordered=False`` to treat grades as unordered
        classes).
    merge_classes : mapping, optional
        Classes to merge before anything else, ``{variant: class}`` (e.g. ``{"Dog": "dog",
        "dgo": "dog"}``), in the labels and the gold labels; the merge is recorded in
        ``data_checks``. Near-duplicate classes are only warned about, never merged unless
        named here (``"A"`` and ``"a"`` may be distinct classes on purpose).
    normalize : bool
        Strip the spaces (and zero-width spaces) around text ids and labels and put them in
        Unicode NFC (default), so that ``" dog"`` and ``"dog"`` are one class; the count of
        values changed is warned. ``False`` keeps every value as given.

    Attributes
    ----------
    tasks, workers, classes : pandas.Index
        The user's ids, in order of their integer codes.
    task_codes, worker_codes, label_codes : ndarray of int
        One entry per row.
    gold_codes : ndarray of int, shape (n_tasks,)
        The gold class code of each task, ``-1`` where unknown.
    data_checks : list of DataCheck
        What the checks before inference found (:mod:`crowdbayes.data.hygiene`): values
        normalised, near-duplicate and rare classes, classes merged, repeated task–worker
        pairs, columns matched but for case, the separator sniffed. Each has a ``kind``, the
        one-line ``message`` that was warned, and ``counts``.
    """

    def __init__(
        self,
        data: TableLike,
        *,
        task: str = "task",
        worker: str = "worker",
        label: str = "label",
        classes: Sequence | None = None,
        gold: pd.Series | TableLike | None = None,
        duplicates: str = "keep",
        ordered: bool = False,
        merge_classes: Mapping | None = None,
        normalize: bool = True,
    ) -> None:
        what = "labels"
        if not isinstance(ordered, (bool, np.bool_)):
            raise TypeError(f"ordered must be True or False; got {ordered!r}")
        if duplicates not in _DUPLICATE_POLICIES:
            raise ValueError(f"duplicates must be one of {_DUPLICATE_POLICIES}; got {duplicates!r}")
        df, rows = read_table_rows(data, what=what, id_columns=(task, worker))
        hygiene = Hygiene(what, normalize=normalize, rows=rows)
        df = hygiene.columns(df, {"task": task, "worker": worker, "label": label})
        if len(df) == 0:
            raise ValueError(f"{what}: the table is empty (0 rows)")
        reject_missing(df, (task, worker, label), what, rows)
        task_codes, tasks = hygiene.encode(df[task], task, rows)
        worker_codes, workers = hygiene.encode(df[worker], worker, rows)
        label_codes, label_values = hygiene.encode(df[label], label, rows)
        keep, pairs_distinct = _duplicate_policy(
            task_codes, worker_codes, tasks, workers, duplicates, hygiene
        )
        if keep is not None:
            task_codes, worker_codes = task_codes[keep], worker_codes[keep]
            label_codes = label_codes[keep]
            rows = rows.kept(keep)

        gold_series = None if gold is None else self._read_gold(gold, task, label, hygiene)
        label_values = hygiene.merge(label_values, merge_classes, label)
        if classes is not None and hygiene.normalize:
            classes = [clean_text(c) for c in classes]

        if gold_series is not None:
            gold_series = hygiene.merged(gold_series)
        declared = classes
        if classes is None:
            seen = np.bincount(label_codes, minlength=len(label_values)) > 0  # in rows kept
            distinct = pd.unique(np.asarray(label_values, dtype=object)[seen])
            if gold_series is not None:
                distinct = pd.unique(np.concatenate([distinct, gold_series.to_numpy()]))
            classes = _sorted_classes(np.asarray(distinct, dtype=object))
        if ordered and declared is None:
            _require_numeric_grades(classes)
        class_index = pd.Index(list(classes))
        if class_index.has_duplicates:
            raise ValueError(f"classes: declared classes repeat a value: {list(class_index)}")
        if len(class_index) < 2:
            raise ValueError(f"classes: need at least 2 classes; got {list(class_index)}")

        value_codes, label_codes = label_codes, class_index.get_indexer(label_values)[label_codes]
        unknown = np.flatnonzero(label_codes < 0)
        if unknown.size:
            bad = pd.unique(np.asarray(label_values, dtype=object)[value_codes[unknown]])
            raise ValueError(
                f"{what}: {unknown.size} label(s) are not among the declared classes "
                f"{list(class_index)}: {_show(bad)} (first at {rows.one(unknown[0])})"
            )
        hygiene.report_normalized()
        if declared is None:
            _check_classes(label_codes, class_index, hygiene)

        self.tasks: pd.Index = pd.Index(tasks, name="task")
        self.workers: pd.Index = pd.Index(workers, name="worker")
        self.classes: pd.Index = pd.Index(class_index, name="class")
        #: whether the classes are ordered grades (lowest first)
        self.ordered = bool(ordered)
        #: what the checks before inference found (:class:`~crowdbayes.data.hygiene.DataCheck`):
        #: values normalised, classes merged or suspicious, rows repeated, columns matched
        self.data_checks: list[DataCheck] = hygiene.checks
        super().__init__(
            task_codes.astype(np.int64, copy=False),
            worker_codes.astype(np.int64, copy=False),
            label_codes.astype(np.int64, copy=False),
            n_tasks=len(self.tasks),
            n_workers=len(self.workers),
            n_classes=len(self.classes),
            pairs_distinct=pairs_distinct,
        )
        self.gold_codes = self._encode_gold(gold_series)

    # ------------------------------------------------------------------ construction helpers
    @staticmethod
    def _read_gold(
        gold: pd.Series | TableLike | Mapping, task: str, label: str, hygiene: Hygiene
    ) -> pd.Series:
        if isinstance(gold, Mapping):
            gold = pd.Series(gold)
        if isinstance(gold, pd.Series):
            series = gold
        else:
            df, rows = read_table_rows(gold, what="gold", id_columns=(task,))
            df = Hygiene("gold", normalize=hygiene.normalize).columns(
                df, {"task": task, "label": label}
            )
            reject_missing(df, (task, label), "gold", rows)
            series = df.set_index(task)[label]
        if hygiene.normalize:
            series = pd.Series(
                [clean_text(v) for v in series.to_numpy()],
                index=pd.Index([clean_text(t) for t in series.index]),
                dtype=series.dtype,
            )
        if series.isna().any():
            raise ValueError(f"gold: {int(series.isna().sum())} task(s) have a missing gold label")
        if series.index.has_duplicates:
            dup = series.index[series.index.duplicated()].unique()
            raise ValueError(f"gold: task(s) listed more than once: {_show(dup)}")
        return series

    def _encode_gold(self, gold: pd.Series | None) -> np.ndarray:
        codes = np.full(len(self.tasks), -1, dtype=np.int64)
        if gold is None:
            return codes
        if len(gold) == 0:
            return codes
        positions = self.tasks.get_indexer(gold.index)
        unknown = np.flatnonzero(positions < 0)
        if unknown.size:
            raise ValueError(
                f"gold: {unknown.size} task(s) have no labels: {_show(gold.index[unknown])}"
            )
        class_codes = self.classes.get_indexer(gold.to_numpy())
        bad = np.flatnonzero(class_codes < 0)
        if bad.size:
            raise ValueError(
                f"gold: {bad.size} gold label(s) are not among the classes {list(self.classes)}: "
                f"{_show(pd.unique(gold.to_numpy()[bad]))}"
            )
        codes[positions] = class_codes
        return codes

    def require_workers(self, minimum: int, model: str) -> None:
        """Raise if fewer than ``minimum`` distinct workers gave labels."""
        if self.n_workers < minimum:
            raise ValueError(
                f"{model} learns each worker's reliability and needs labels from at least "
                f"{minimum} workers; got {self.n_workers} ({_show(self.workers)})"
            )

    def task_blocks(self, n_blocks: int) -> list[tuple[np.ndarray, LabelBlock]]:
        """Split into ``n_blocks`` partitions by task: each holds every label of a contiguous
        range of task codes. Returns ``(task_positions, block)`` pairs, the block's task code
        ``i`` being this table's task ``task_positions[i]``; worker and class codes are kept.

        The sufficient statistics of the label models add over such partitions (see
        :mod:`crowdbayes.inference.statistics`).
        """
        if not 1 <= n_blocks <= self.n_tasks:
            raise ValueError(f"n_blocks must be between 1 and {self.n_tasks}; got {n_blocks}")
        order = np.argsort(self.task_codes, kind="stable")
        bounds = np.linspace(0, self.n_tasks, n_blocks + 1).astype(np.int64)
        cuts = np.searchsorted(self.task_codes[order], bounds)
        blocks = []
        for b in range(n_blocks):
            rows = order[cuts[b] : cuts[b + 1]]
            first, last = bounds[b], bounds[b + 1]
            block = LabelBlock(
                self.task_codes[rows] - first,
                self.worker_codes[rows],
                self.label_codes[rows],
                n_tasks=int(last - first),
                n_workers=self.n_workers,
                n_classes=self.n_classes,
                gold_codes=self.gold_codes[first:last],
                pairs_distinct=self.pairs_distinct,
            )
            blocks.append((np.arange(first, last), block))
        return blocks

    def to_frame(self) -> pd.DataFrame:
        """The encoded labels back as a ``task, worker, label`` DataFrame in the user's ids."""
        return pd.DataFrame(
            {
                "task": self.tasks[self.task_codes],
                "worker": self.workers[self.worker_codes],
                "label": self.classes[self.label_codes],
            }
        )

    def __repr__(self) -> str:
        gold = int((self.gold_codes >= 0).sum())
        return (
            f"Labels({self.n_labels} labels, {self.n_tasks} tasks, {self.n_workers} workers, "
            f"classes={list(self.classes)}{', ordered' if self.ordered else ''}, "
            f"gold for {gold} tasks)"
        )


def as_labels(data: Labels | TableLike, **kwargs) -> Labels:
    """Pass a :class:`Labels` through; wrap a DataFrame or path in one."""
    if isinstance(data, Labels):
        if kwargs:
            raise TypeError("options such as gold= or classes= go to Labels(...), not to fit()")
        return data
    return Labels(data, **kwargs)
