r"""The fused E-step + M-step pass of the confusion-matrix label models, compiled and threaded.

With the count matrix ``A`` of :class:`~crowdbayes.Labels` (``A[i, jK+x]``: how often worker
``j`` said ``x`` on task ``i``), log-confusions :math:`L_{jkx}` and log-prevalences :math:`l_k`,
one pass computes for every task

.. math::
    p_{ik} = e^{l_k} \prod_{j,x} \big(e^{L_{jkx}}\big)^{A_{i,jx}}, \qquad
    r_{ik} = p_{ik} / \textstyle\sum_k p_{ik}

(gold tasks clamped to their class) and the sums :math:`n_{jkx} = \sum_i w_i A_{i,jx} r_{ik}`,
:math:`\sum_i w_i r_{ik}` and :math:`\sum_i \log\sum_k p_{ik}` — the same quantities as
:func:`~crowdbayes.annotators.label_log_likelihood`, a softmax and
:func:`~crowdbayes.annotators.confusion_statistics`, in one sweep over the labels. Products of
probabilities replace sums of logs (no ``exp``/``log`` per task; tasks whose product could
underflow are rescaled by exact powers of two, or redone in log space: see the C source), so
the results agree with the numpy path to rounding (about 1e-15 relative per pass). A pass
asked for no posteriors (``probas=False``: EM's passes before the last, whose posteriors are
overwritten) computes them all the same but does not write them.

Threads: the tasks are cut into chunks that depend only on the data (never on the number of
threads); each chunk has its own count buffers, and the buffers are added in chunk order, so
the results are bit-for-bit the same for any number of threads. The threads (the caller and
pthreads started by the kernel, the GIL released) claim chunks as they go, so a helper that
gets its core late delays nothing but its own chunk. The number of threads is
``CROWDBAYES_NUM_THREADS``, else ``OMP_NUM_THREADS``, else the CPUs that look free
(:func:`n_threads`).

:func:`vote_share_statistics` gives the statistics of EM's usual start (each task's vote
shares, gold tasks one-hot) in one more compiled pass: the same sums as
:func:`~crowdbayes.annotators.confusion_statistics` of those responsibilities. The pass's
layout (row pointers, int32 columns, labels per column) comes from the codes in one compiled
pass too (:func:`prepare_layout` builds it ahead: its labels per task are the workers per task
that the models' test for cut tasks reads), and :func:`confusion_map` is the M-step's
:func:`~crowdbayes.annotators.full_confusion_map` compiled (the same operations in the same
order, so the same numbers).

The kernel is a C extension built when the package is installed (``setup.py``); where it could
not be built, :func:`confusion_pass` and :func:`vote_share_statistics` return None and the
models use the numpy path.
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass

import numpy as np

from ..data import Labels
from ..data.labels import LabelBlock

try:
    from . import _confusion_kernel as _kernel
except ImportError:  # no compiler at install time: the numpy path
    _kernel = None

__all__ = [
    "PassResult",
    "confusion_map",
    "confusion_pass",
    "most_probable_classes",
    "kernel_available",
    "prepare_layout",
    "n_threads",
    "vote_share_statistics",
]

#: labels per chunk of tasks (chunks are the unit of threading; their number depends on the
#: data only, so the results do not depend on the number of threads)
LABELS_PER_CHUNK = 125_000
MAX_CHUNKS = 8
#: at most this many doubles in all the chunks' count buffers together
MAX_BUFFER_DOUBLES = 4_000_000
#: the C kernel keeps a task's K probabilities on the stack
MAX_CLASSES = 64


@dataclass
class PassResult:
    """What one pass returns: class-major (K, n_tasks) responsibilities, the expected counts
    ``confusion[j, k, x]``, the weighted class totals (K,) and the summed log evidence."""

    resp: np.ndarray | None
    confusion: np.ndarray
    classes: np.ndarray
    log_evidence: float


def kernel_available() -> bool:
    """Whether the compiled kernel was built (else :func:`confusion_pass` returns None)."""
    return _kernel is not None


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_CPUS = _available_cpus()


def n_threads() -> int:
    """Threads for a pass: ``CROWDBAYES_NUM_THREADS``, else ``OMP_NUM_THREADS``, else the CPUs
    that look free: the CPUs available to this process (as at import) plus one (this process)
    minus the 1-minute load average, rounded, at least 1.

    Why not simply every CPU: a pass waits for the chunks its helper threads claimed, and on a
    machine whose other cores are busy a helper may wait several milliseconds for a core, once
    per pass (measured on 2 shared cores at load 3: 100 passes in 0.8–1.1 s with 2 threads
    against 0.38 s with 1). The results never depend on the number of threads.
    """
    for name in ("CROWDBAYES_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on Unix
        return _CPUS
    return max(1, min(_CPUS, round(_CPUS + 1 - load)))


def chunk_bounds(indptr: np.ndarray, n_columns: int, n_classes: int) -> np.ndarray:
    """Task boundaries of the chunks: about equal numbers of labels, at most ``MAX_CHUNKS``
    chunks and ``MAX_BUFFER_DOUBLES`` buffered counts; a function of the data alone."""
    n_labels = int(indptr[-1])
    n_chunks = min(MAX_CHUNKS, max(1, n_labels // LABELS_PER_CHUNK))
    n_chunks = max(1, min(n_chunks, MAX_BUFFER_DOUBLES // max(1, n_columns * n_classes)))
    targets = np.linspace(0, n_labels, n_chunks + 1)[1:-1]
    inner = np.searchsorted(indptr, targets, side="left")
    return np.unique(np.concatenate([[0], inner, [len(indptr) - 1]])).astype(np.int64)


def row_stride(n_classes: int) -> int:
    """Row length of the kernel's table and count buffers: K padded to 2, 4 or 8 (a row then
    never straddles two cache lines); K itself above 8. The C kernel has the same rule."""
    if n_classes <= 8:
        return 2 if n_classes <= 2 else 4 if n_classes <= 4 else 8
    return n_classes


def _aligned_empty(shape: tuple[int, ...]) -> np.ndarray:
    """An array whose first element sits on a 64-byte boundary (padded rows are cache lines)."""
    size = int(np.prod(shape))
    raw = np.empty(size + 8)
    offset = (-raw.ctypes.data % 64) // 8
    return raw[offset : offset + size].reshape(shape)


@dataclass(frozen=True)
class _Layout:
    """What a pass needs from the count matrix, prepared once per table of labels."""

    indptr: np.ndarray  # int64
    indices: np.ndarray  # int32
    data: np.ndarray | None  # float64; None: every count is 1
    unit_counts: bool  # every count is 1: the vector passes apply
    bounds: np.ndarray  # chunk boundaries (tasks)
    gold: np.ndarray | None  # int64 gold codes, None when no task has one
    totals: np.ndarray | None  # labels per column (float64), None: ``labels.column_totals``


#: id(labels) -> (weak reference to them, their code arrays and gold codes, settings, layout
#: or None where none comes from the codes and only that was asked);
#: an entry goes when its labels do
_layouts: dict[int, tuple] = {}


def _rows_from_codes(labels: LabelBlock) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The count matrix's CSR arrays straight from the codes, in one compiled pass and without
    SciPy, for labels grouped by task with no repeated task–worker pair (the usual table): the
    row pointers are the cumulated labels per task and the columns ``j·K + x`` in the table's
    order, every count 1 (the kernel then needs no array of ones) — the arrays
    :attr:`~crowdbayes.Labels.count_matrix` holds for such labels — and the labels per column
    (its ``column_totals``). None for other labels (or a compacted block), which go through
    the matrix."""
    tasks = labels.task_codes
    if labels.label_codes is None or not labels.pairs_distinct or len(tasks) == 0:
        return None
    n_columns = labels.n_workers * labels.n_classes
    if n_columns >= 2**31:
        return None
    indptr = np.empty(labels.n_tasks + 1, dtype=np.int64)
    columns = np.empty(len(tasks), dtype=np.int32)
    totals = np.empty(n_columns)
    codes = (np.ascontiguousarray(x, dtype=np.int64) for x in (tasks, labels.worker_codes))
    ordered = _kernel.label_layout(
        *codes,
        np.ascontiguousarray(labels.label_codes, dtype=np.int64),
        *(labels.n_tasks, labels.n_classes, indptr, columns, totals),
    )
    return (indptr, columns, totals) if ordered else None


def prepare_layout(labels: LabelBlock) -> None:
    """Build the pass's layout of ``labels`` now where it comes straight from the codes (the
    usual table; nothing otherwise, and nothing without the kernel): on the way it counts each
    task's labels, which are its workers there, and leaves them as ``workers_per_task`` (the
    test for tasks that only one worker labelled reads them: one count of the task codes
    fewer). The count matrix is not built."""
    if _kernel is not None and labels.n_classes <= MAX_CLASSES:
        _layout(labels, row_stride(labels.n_classes), codes_only=True)


def _layout(labels: LabelBlock, stride: int, codes_only: bool = False) -> _Layout | None:
    """The layout of ``labels`` for rows of ``stride`` (cached while the labels live); with
    ``codes_only`` None where it does not come straight from the codes (remembered too, so
    that the codes are not read again for nothing)."""
    arrays = (labels.task_codes, labels.worker_codes, labels.label_codes, labels.gold_codes)
    settings = (stride, LABELS_PER_CHUNK, MAX_CHUNKS)
    cached = _layouts.get(id(labels))
    known = (
        cached is not None
        and cached[0]() is labels
        and all(x is y for x, y in zip(cached[1], arrays, strict=True))
        and cached[2] == settings
    )
    if known and (cached[3] is not None or codes_only):
        return cached[3]
    rows = None if known else _rows_from_codes(labels)  # known: not from the codes
    if rows is None and codes_only:
        _remember(labels, arrays, settings, None)
        return None
    if rows is not None and isinstance(labels, Labels):
        # the layout counted each column's labels and each task's (all of distinct workers):
        # what Labels.column_totals and workers_per_task would count again
        vars(labels).setdefault("column_totals", rows[2])
        vars(labels).setdefault("workers_per_task", np.diff(rows[0]))
    data = None
    if rows is None:
        matrix = labels.count_matrix
        data = np.ascontiguousarray(matrix.data, dtype=np.float64)
        rows = (matrix.indptr, matrix.indices, None)
    indptr = np.ascontiguousarray(rows[0], dtype=np.int64)
    layout = _Layout(
        indptr=indptr,
        indices=np.ascontiguousarray(rows[1], dtype=np.int32),  # < n_columns (CSR)
        data=data,
        unit_counts=data is None or bool((data == 1.0).all()),
        bounds=chunk_bounds(indptr, labels.n_workers * labels.n_classes, stride),
        gold=np.ascontiguousarray(labels.gold_codes, dtype=np.int64) if labels.has_gold else None,
        totals=rows[2],
    )
    _remember(labels, arrays, settings, layout)
    return layout


def _remember(labels: LabelBlock, arrays: tuple, settings: tuple, layout: _Layout | None) -> None:
    """Cache ``layout`` (None: none from the codes) for ``labels`` while they live."""
    ident = id(labels)
    ref = weakref.ref(labels, lambda _, ident=ident: _layouts.pop(ident, None))
    _layouts[ident] = (ref, arrays, settings, layout)


def confusion_pass(
    labels: Labels,
    log_confusion: np.ndarray,
    log_prevalence: np.ndarray,
    weight: np.ndarray | None = None,
    threads: int | None = None,
    confusion: np.ndarray | None = None,
    probas: bool = True,
) -> PassResult | None:
    """One fused pass (module docstring), or None where the compiled kernel is missing or the
    problem is outside its range (more than ``MAX_CLASSES`` classes, or 2³¹ count columns).

    ``log_confusion`` is (workers, K, K) (true class, observed class), ``log_prevalence`` (K,);
    ``weight`` (n_tasks,) multiplies each task's contribution to the counts and class totals
    (None: all 1); ``threads`` overrides :func:`n_threads`; ``confusion``: ``exp(log_confusion)``
    where the caller holds it (EM's θ itself), which spares the pass an ``exp`` per cell;
    ``probas=False`` leaves the responsibilities out (``resp`` None: the statistics only, for a
    pass whose posteriors nobody keeps).
    """
    n_workers, n_classes, _ = log_confusion.shape
    n_tasks, n_columns = labels.n_tasks, labels.n_workers * labels.n_classes
    if _kernel is None or n_classes > MAX_CLASSES or n_columns >= 2**31:
        return None
    if n_columns != n_workers * n_classes:
        raise ValueError(f"confusion_pass: {n_columns} count columns for {n_workers} workers")
    stride = row_stride(n_classes)
    layout = _layout(labels, stride)
    theta = np.exp(log_confusion) if confusion is None else confusion
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    if theta.shape != log_confusion.shape:  # the kernel would read past a smaller table
        raise ValueError(
            f"confusion_pass: confusion of shape {theta.shape} for log_confusion of shape "
            f"{log_confusion.shape}"
        )
    prior = np.ascontiguousarray(np.exp(log_prevalence), dtype=np.float64)
    if weight is not None:
        weight = np.ascontiguousarray(weight, dtype=np.float64)
    n_chunks = len(layout.bounds) - 1
    resp = np.empty((n_classes, n_tasks)) if probas else None
    # K = 5 on whole counts rows of 4: the last class from the label totals (every task's
    # responsibilities sum to one), half the count updates of rows padded to 8
    last_from_totals = n_classes == 5 and stride == 8 and layout.unit_counts and weight is None
    counts_stride = 4 if last_from_totals else stride
    totals = None
    if last_from_totals:
        totals = labels.column_totals if layout.totals is None else layout.totals
    threads = min(n_threads() if threads is None else threads, n_chunks)
    # one count buffer per chunk for threads; on one thread the chunks run in order on two
    n_buffers = n_chunks if threads > 1 else min(n_chunks, 2)
    counts = _aligned_empty((n_buffers, n_columns * counts_stride))  # the kernel zeroes them
    classes = np.empty((n_chunks, n_classes))
    parts = np.empty((n_chunks, 3))
    expected = np.empty((n_workers, n_classes, n_classes))
    # the kernel writes the padded table of theta, runs the chunks, adds their counts in
    # chunk order (the same for any number of threads) and writes the expected counts
    _kernel.confusion_pass(
        *(layout.indptr, layout.indices, layout.data, theta, _aligned_empty((n_columns * stride,))),
        *(prior, layout.gold, weight, n_classes, stride, counts_stride, n_tasks, layout.bounds),
        *(layout.unit_counts, threads, resp, counts, classes, parts, totals, expected),
    )
    log2_evidence = -np.inf if parts[:, 2].any() else parts[:, 0].sum() + parts[:, 1].sum()
    return PassResult(
        resp=resp,
        confusion=expected,
        classes=classes.sum(axis=0),
        log_evidence=float(log2_evidence * np.log(2.0)),
    )


def vote_share_statistics(labels: Labels) -> PassResult | None:
    """The statistics of the vote-share start (each task's vote shares, gold tasks one-hot) in
    one compiled pass over the labels: the expected counts and class totals that
    :func:`~crowdbayes.annotators.confusion_statistics` (with ``sums_to_one``) and a sum over
    the tasks give for those responsibilities, with ``resp`` None and ``log_evidence`` 0. None
    where the kernel is missing or outside its range, or a task–worker pair repeats."""
    n_tasks, n_workers, n_classes = labels.n_tasks, labels.n_workers, labels.n_classes
    n_columns = n_workers * n_classes
    if _kernel is None or n_classes > MAX_CLASSES or n_columns >= 2**31 or n_classes < 2:
        return None
    stride = row_stride(n_classes)
    layout = _layout(labels, stride)
    if not layout.unit_counts:
        return None
    # the last class comes from the label totals: K = 5 needs rows of 4 only
    counts_stride = 4 if n_classes == 5 else stride
    # the kernel zeroes them; rows on 32-byte boundaries (whole vectors, no split rows)
    counts = _aligned_empty((n_workers, n_classes, counts_stride))
    classes = np.empty(n_classes)
    _kernel.vote_share_counts(
        *(layout.indptr, layout.indices, layout.gold, n_classes, counts_stride, n_tasks),
        *(counts, classes),
    )
    expected = _expected_counts(labels, layout, counts, n_classes - 1)
    return PassResult(resp=None, confusion=expected, classes=classes, log_evidence=0.0)


def _expected_counts(
    labels: LabelBlock, layout: _Layout, counted: np.ndarray, n_counted: int
) -> np.ndarray:
    """The expected counts ``[j, k, x]`` from the kernel's ``counted[j, x, k]`` (k below
    ``n_counted``); the classes not counted (the last, where ``n_counted`` is K − 1) are the
    label totals less the counted ones, as every task's responsibilities sum to one."""
    n_workers, n_classes = labels.n_workers, labels.n_classes
    expected = np.empty((n_workers, n_classes, n_classes))
    totals = None
    if n_counted < n_classes:
        totals = labels.column_totals if layout.totals is None else layout.totals
    _kernel.expected_counts(
        counted, totals, n_workers, n_classes, counted.shape[-1], n_counted, expected
    )
    return expected


def _padded_table(confusion: np.ndarray, stride: int) -> np.ndarray:
    """The kernel's table: ``table[(j*K + x)*S + k] = θ[j, k, x]``, one row per count-matrix
    column, zero-padded to the stride S. The pass builds its own table now; this stays as the
    reference layout that ``tests/annotators/test_kernel_helpers.py`` checks the kernel's
    table builder against."""
    n_workers, n_classes, _ = confusion.shape
    table = _aligned_empty((n_workers, n_classes, stride))
    theta = np.ascontiguousarray(confusion, dtype=np.float64)
    _kernel.padded_table(theta, n_classes, stride, table)
    return table


def confusion_map(
    statistics: np.ndarray, pseudo_counts: float, diagonal: float
) -> np.ndarray | None:
    """:func:`~crowdbayes.annotators.full_confusion_map` in one compiled loop, the same
    operations in the same order (so the same numbers); None where the kernel is missing or
    the rows have 8 or more classes (numpy then sums a row by pairs, not class by class)."""
    n_classes = statistics.shape[-1]
    square = statistics.ndim >= 2 and statistics.shape[-2] == n_classes
    if _kernel is None or not square or n_classes >= 8 or statistics.dtype != np.float64:
        return None
    statistics = np.ascontiguousarray(statistics)
    out = np.empty(statistics.shape)
    _kernel.confusion_map(statistics, float(pseudo_counts), float(diagonal), n_classes, out)
    return out


def most_probable_classes(probas: np.ndarray) -> np.ndarray:
    """Each task's most probable class from class-major (K, n_tasks) probabilities: the
    numbers of ``np.argmax(probas, axis=0)`` (the first largest; a NaN counts as the largest),
    in one compiled pass where the kernel is built — numpy copies the array to task-major order
    and then calls its argmax once per task (2 ms for K = 5 and 100,000 tasks, against about
    0.6 ms)."""
    if _kernel is None or probas.ndim != 2 or probas.dtype != np.float64:
        return np.argmax(probas, axis=0)
    out = np.empty(probas.shape[1], dtype=np.int64)
    _kernel.class_argmax(np.ascontiguousarray(probas), probas.shape[0], out)
    return out.astype(np.intp, copy=False)
