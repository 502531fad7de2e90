"""The Dask driver: the models' own ``local_stats`` mapped over partitions, tree-reduced."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from .._atomic import OutputSet
from ..inference.statistics import add_stats, iterate_statistics
from ..models.labels.statistics import StatsLabelModel
from ._partitions import (
    Columns,
    EncodedPartition,
    check_partition,
    disjoint_task_ranges,
    encode_partition,
    merge_vocabularies,
    parquet_files,
    partition_task_results,
    partition_vocabulary,
    read_parquet_partition,
)

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["fit_distributed", "DistributedFit", "cluster_client"]

_PART = "part-{:05d}.parquet"


@dataclass
class DistributedFit:
    """What :func:`fit_distributed` did.

    ``model`` carries the global results (``confusion_``, ``prevalence_``, ``n_iter_``, the
    objective history); the per-task results are the Parquet files under ``out`` (one per
    partition, indexed by task, columns ``label`` and ``p_<class>``), never collected here.
    """

    model: StatsLabelModel
    out: Path
    n_labels: int
    n_tasks: int
    n_workers: int
    n_partitions: int
    iteration_seconds: list[float] = field(default_factory=list)

    def read_tasks(self) -> pd.DataFrame:
        """Load the task table (for small results and tests; large ones stay on disk)."""
        return pd.read_parquet(self.out)


@contextlib.contextmanager
def cluster_client(
    client: Client | None = None,
    scheduler: str | None = None,
    n_workers: int = 2,
    **cluster_options,
) -> Iterator[Client]:
    """Yield ``client``, a client of the scheduler at ``scheduler`` (``tcp://host:port``), or
    one of a new ``LocalCluster`` of ``n_workers`` single-threaded worker processes; whatever
    this opened is closed on exit."""
    from distributed import Client, LocalCluster

    if client is not None:
        yield client
        return
    if scheduler is not None:
        with Client(scheduler) as opened:
            yield opened
        return
    options = {"threads_per_worker": 1, "processes": True, "dashboard_address": None}
    options.update(cluster_options)
    with LocalCluster(n_workers=n_workers, **options) as cluster, Client(cluster) as opened:
        yield opened


def _partition_stats(model, part: EncodedPartition, globals_, index: int):
    return model.local_stats(part.block, model.partition_globals(globals_, index))


def _initial_stats(model, part: EncodedPartition):
    return model.initial_stats(part.block)


def _write_partition(model, part, globals_, index: int, classes, path: str) -> int:
    table = partition_task_results(part, model, globals_, index, classes)
    table.to_parquet(path, index=True)
    return len(table)


def _load_parquet(path, name: str, columns: Columns):
    return check_partition(read_parquet_partition(path, columns), name, columns)


def _encode_file(path, name: str, columns: Columns, vocabulary) -> EncodedPartition:
    """Read and encode one Parquet file in one task: the rows never wait in worker memory as a
    task result (a worker may run reads ahead of the slower encodings, and at 65 MB a file
    those rows outgrew the encoded data)."""
    return encode_partition(_load_parquet(path, name, columns), name, columns, vocabulary)


def _tree_sum(items: list, fan_in: int):
    """Sum statistics in a tree of ``add_stats`` tasks (depth log_fan_in of the partitions)."""
    from dask import delayed

    while len(items) > 1:
        items = [
            delayed(add_stats, pure=True)(*items[i : i + fan_in])
            for i in range(0, len(items), fan_in)
        ]
    return items[0]


def _sources(source, columns: Columns) -> list[tuple[str, object]]:
    """(name, delayed checked DataFrame) per partition of a Dask DataFrame or Parquet files
    (for files, the task's first argument is the path: :func:`_file_paths`)."""
    import dask.dataframe as dd
    from dask import delayed

    if isinstance(source, dd.DataFrame):
        parts = source.to_delayed()
        names = [f"partition {i}" for i in range(len(parts))]
        return [
            (name, delayed(check_partition, pure=True)(part, name, columns))
            for name, part in zip(names, parts, strict=True)
        ]
    if isinstance(source, pd.DataFrame):
        raise TypeError(
            "fit_distributed takes a Dask DataFrame or a Parquet path/glob; for a pandas "
            "DataFrame call model.fit(frame) (or dask.dataframe.from_pandas)"
        )
    return [
        (f"file {path}", delayed(_load_parquet, pure=True)(str(path), f"file {path}", columns))
        for path in parquet_files(source)
    ]


def _file_paths(source) -> list[str] | None:
    """The Parquet paths behind :func:`_sources`' partitions, None for a Dask DataFrame."""
    import dask.dataframe as dd

    if isinstance(source, dd.DataFrame):
        return None
    return [str(path) for path in parquet_files(source)]


def _share(name: str, value):
    """``value`` as one key of the task graph (not scattered data): Dask ships it to the workers
    that need it and, if the worker holding it dies, recomputes it like any other task."""
    from dask import delayed

    return delayed(value, name=f"{name}-{uuid.uuid4().hex}", traverse=False)


def _compute(client: Client, tasks):
    """Compute on the cluster; on the first error cancel the rest and re-raise it."""
    futures = client.compute(tasks)
    try:
        return client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise


def _unique_tasks(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.Series(pd.unique(frame[column]), name=column)


def _check_grouped(
    client: Client,
    frames: list,
    column: str,
    fan_in: int,
    what: str = "labels",
    unit: str = "task",
) -> None:
    """Refuse ``grouped=True`` when a ``unit`` (task, query) has rows in two partitions: count
    every id's partitions with a distributed ``value_counts`` of the per-partition distinct ids
    (used when the partitions' id ranges overlap, e.g. hash-partitioned files)."""
    import dask.dataframe as dd
    from dask import delayed

    ids = dd.from_delayed(
        [delayed(_unique_tasks, pure=True)(f, column) for f in frames],
        meta=pd.Series([], dtype=object, name=column),
        verify_meta=False,
    )
    counts = ids.value_counts(split_every=fan_in)
    split = counts[counts > 1]
    found = _compute(client, [split.head(3, npartitions=-1), split.size])
    if found[1]:
        raise ValueError(
            f"{what}: grouped=True (--grouped) but {found[1]} {unit}(s) have {what} in more than "
            f"one partition (e.g. {list(found[0].index)}); drop it to shuffle the rows by {unit}"
        )


def _check_out(out: Path) -> None:
    if out.exists() and not (out.is_dir() and _is_our_output(out)):
        raise FileExistsError(
            f"--out {out} exists and is not a crowdbayes task-results directory; "
            "choose a new path or remove it"
        )


def _is_our_output(path: Path) -> bool:
    return all(p.name.startswith("part-") and p.suffix == ".parquet" for p in path.iterdir())


def fit_distributed(
    model: StatsLabelModel,
    source,
    *,
    out: str | os.PathLike,
    client: Client | None = None,
    scheduler: str | None = None,
    n_workers: int = 2,
    task: str = "task",
    worker: str = "worker",
    label: str = "label",
    classes: Sequence | None = None,
    gold: pd.Series | None = None,
    grouped: bool = False,
    persist: bool = True,
    init=None,
    on_iteration: Callable[[int, float | None, float], None] | None = None,
    fan_in: int = 8,
    cluster_options: dict | None = None,
    outputs: OutputSet | None = None,
) -> DistributedFit:
    r"""Fit a statistics model (:class:`~crowdbayes.MajorityVote`,
    :class:`~crowdbayes.DawidSkene`, :class:`~crowdbayes.BayesianDawidSkene`) on a Dask cluster.

    The fit is the in-memory one with the sum over partitions done by Dask:

    1. *vocabulary pass* — every partition is read and validated (missing columns, missing
       values, labels outside the declared ``classes``: the error names the file or partition)
       and reports its distinct workers and labels; the client merges them into the global
       worker and class codes, known up front before any encoding;
    2. unless ``grouped`` (the caller promises every task's labels lie in one partition, e.g.
       files written by task), the rows are hash-shuffled by task (``DataFrame.shuffle``);
    3. each partition is encoded with the global codes into a compact count matrix (kept in
       worker memory when ``persist``, else re-read and re-encoded every pass: out-of-core).
       What is kept is about 4.5 bytes per label at 10 labels per task (int32 column indices
       and row pointers, the workers per task in a byte, no float counts when every count is
       1, consecutive task ids as a range: :class:`~._partitions.EncodedPartition`), so a
       billion labels need about 2.3 GB of worker memory in all; each pass rebuilds one
       partition's block at a time, with the same count matrix (the same statistics, bit for
       bit);
    4. every iteration broadcasts the globals, maps ``model.local_stats`` over the partitions,
       sums the statistics in a tree of fan-in ``fan_in`` and runs ``model.global_update`` on
       the client, under the same driver and stopping rule as ``model.fit``;
    5. each partition writes its tasks' posteriors (the same pass that the in-memory fit's last
       E-step is) to ``out/part-NNNNN.parquet``. The files go to a staging directory beside
       ``out`` that replaces it, as one rename, only once every partition succeeded: a failed
       or interrupted fit leaves no partial output (:class:`crowdbayes._atomic.OutputSet`).
       (On a remote cluster ``out`` must be on storage every worker sees.)

    Posteriors equal the in-memory fit's up to floating-point summation order (and majority
    vote's random tie-breaks, drawn per partition). Lost workers are survived: Dask recomputes a
    lost partition from its lineage (the Parquet read) and the globals are broadcast to every
    worker.

    Parameters
    ----------
    model : StatsLabelModel
        An unfitted model; its hyper-parameters (``max_iter``, ``tol``) apply.
    source : dask.dataframe.DataFrame, or str / path
        A Dask DataFrame, or a Parquet file, a directory of Parquet files or a glob.
    out : path
        Directory for the per-task results (created or replaced).
    client, scheduler, n_workers, cluster_options
        An existing ``Client``; else the address of a running scheduler; else a
        ``LocalCluster`` of ``n_workers`` single-threaded processes (``cluster_options`` go to
        it, e.g. ``memory_limit``).
    task, worker, label : str
        Column names.
    classes : sequence, optional
        Declared classes in order (default: the sorted distinct labels).
    gold : Series, optional
        Known classes of some tasks (indexed by task id), clamped during inference.
    grouped : bool
        Skip the shuffle: each task's labels are already in a single partition.
    persist : bool
        Keep the encoded partitions in worker memory between iterations.
    init : fitted model or path, optional
        Warm start from saved globals (see :meth:`StatsLabelModel.warm_start`).
    on_iteration : callable, optional
        ``on_iteration(iteration, objective, seconds)`` after each pass (1-based), the last
        one included (progress reports, tests).
    outputs : OutputSet, optional
        Stage the directory in this output set and leave it there, for the caller to commit
        together with its other outputs (the command line's per-worker table and model file);
        ``result.out`` exists only after that commit. By default the directory is moved into
        place here, replacing an earlier result directory.
    """
    from dask import delayed

    if not isinstance(model, StatsLabelModel):
        raise TypeError(
            f"{type(model).__name__} has no sufficient-statistics form; the distributed backend "
            "fits MajorityVote, DawidSkene and BayesianDawidSkene"
        )
    model.check_params()
    if getattr(model, "prior_prevalence", None) == "auto":
        raise ValueError(
            f"fit_distributed: {type(model).__name__}(prior_prevalence='auto') chooses its prior "
            "by refitting in memory; pass a number"
        )
    columns = Columns(task, worker, label)
    out = Path(out)
    _check_out(out)
    declared = None if classes is None else pd.Index(list(classes), name="class")
    sources = _sources(source, columns)
    with cluster_client(client, scheduler, n_workers, **(cluster_options or {})) as client:
        parts = _compute(
            client,
            [
                delayed(partition_vocabulary, pure=True)(frame, name, columns, declared)
                for name, frame in sources
            ],
        )
        vocabulary = merge_vocabularies(parts, declared, gold)
        if vocabulary.n_workers < model.tags.min_workers:
            raise ValueError(
                f"{type(model).__name__} learns each worker's reliability and needs labels from "
                f"at least {model.tags.min_workers} workers; got {vocabulary.n_workers}"
            )
        frames = [frame for _, frame in sources]
        names = [name for name, _ in sources]
        paths = _file_paths(source) if grouped else None
        if grouped:  # the promise is checked, exactly where the task-id ranges overlap
            if not disjoint_task_ranges([p[4] for p in parts]):
                _check_grouped(client, frames, columns.task, fan_in)
        else:
            import dask.dataframe as dd

            meta = parts[0][3]
            shuffled = dd.from_delayed(frames, meta=meta, verify_meta=False).shuffle(
                on=columns.task, npartitions=len(frames), shuffle_method="tasks"
            )
            frames = shuffled.to_delayed()
            names = [f"shuffled partition {i}" for i in range(len(frames))]
        shared_vocabulary = _share("vocabulary", vocabulary)
        if paths is not None:  # files: read and encoded in one task
            encoded = [
                delayed(_encode_file, pure=True)(path, name, columns, shared_vocabulary)
                for path, name in zip(paths, names, strict=True)
            ]
        else:
            encoded = [
                delayed(encode_partition, pure=True)(frame, name, columns, shared_vocabulary)
                for name, frame in zip(names, frames, strict=True)
            ]
        if persist:
            encoded = client.persist(encoded)
        shared_model = _share("model", _clone(model))

        def pass_stats(globals_):
            shared = _share("globals", globals_)
            stats = [
                delayed(_partition_stats, pure=True)(shared_model, part, shared, i)
                for i, part in enumerate(encoded)
            ]
            return client.compute(_tree_sum(stats, fan_in)).result()

        def initial():
            stats = [delayed(_initial_stats, pure=True)(shared_model, p) for p in encoded]
            return client.compute(_tree_sum(stats, fan_in)).result()

        seconds: list[float] = []
        clock = [time.perf_counter()]

        def callback(iteration: int, value: float | None) -> None:
            now = time.perf_counter()
            seconds.append(now - clock[0])
            clock[0] = now
            if on_iteration is not None:
                on_iteration(iteration + 1, value, seconds[-1])

        start = None
        if init is not None:
            start = model.warm_start(init, vocabulary.workers, vocabulary.classes)
        if model.iterative:
            first = start if start is not None else model.global_update(initial())
            clock[0] = time.perf_counter()
            fit = iterate_statistics(
                model,
                initial=initial,
                pass_stats=pass_stats,
                initial_globals=first,
                callback=callback,
            )
        else:
            fit = iterate_statistics(model, initial=initial, pass_stats=pass_stats)
            callback(0, None)

        own = outputs is None
        staged = OutputSet(overwrite=True, make_parents=True) if own else outputs
        with staged if own else contextlib.nullcontext():
            staging = staged.directory(out)
            shared_before = _share("globals", fit.before)
            counts = _compute(
                client,
                [
                    delayed(_write_partition, pure=False)(
                        shared_model,
                        part,
                        shared_before,
                        i,
                        vocabulary.classes,
                        str(staging / _PART.format(i)),
                    )
                    for i, part in enumerate(encoded)
                ],
            )
            if own:
                staged.commit()
    model._set_fit(fit, vocabulary)
    # the tasks' posteriors stay on disk: no held-out counts (suggest uses the fitted matrices)
    vars(model).pop("held_out_counts_", None)
    model.tasks_path_ = out
    model.n_tasks_ = int(sum(counts))
    return DistributedFit(
        model=model,
        out=out,
        n_labels=int(sum(p[2] for p in parts)),
        n_tasks=model.n_tasks_,
        n_workers=vocabulary.n_workers,
        n_partitions=len(encoded),
        iteration_seconds=seconds,
    )


def _clone(model: StatsLabelModel) -> StatsLabelModel:
    """An unfitted copy with the same hyper-parameters (what the workers need)."""
    return type(model)(**model.get_params())
