"""``crowdbayes labels fit --backend dask``: a label model fitted on a Dask cluster from Parquet
(:func:`crowdbayes.distributed.fit_distributed`), its per-task results written as
per-partition Parquet files in the ``-o`` directory.

The directory, the per-worker table and the model file are one output set, committed together
(all or nothing, :func:`._record.write_outputs`). An input that is not Parquet is refused before
a cluster starts, and the local cluster's workers keep their logs to themselves, so an error is
the one line of :func:`crowdbayes.cli.main`."""

from __future__ import annotations

import argparse
import logging
import sys
import time

from ._common import CommandError, parse_classes, show_progress
from ._record import Family, model_writer, say, table_output, write_outputs

#: the first bytes of every Parquet file
_PARQUET_MAGIC = b"PAR1"

__all__ = ["fit_on_dask"]


def check_options(args: argparse.Namespace, family: Family) -> None:
    """Refuse what the Dask backend cannot do, by the model's tags and the input."""
    if not family.table.spec(args.model).tags().dask:
        users = family.table.users(lambda t: t.dask)
        raise CommandError(
            f"--backend dask works with --model {', '.join(users)}; got {args.model}"
        )
    if args.dataset is not None:
        raise CommandError("--backend dask reads a Parquet INPUT, not --dataset")
    if args.out is None:
        raise CommandError("--backend dask needs -o DIRECTORY for the per-task results")
    if args.eval_gold is not None:
        raise CommandError("--eval-gold needs --backend memory (dask keeps tasks on disk)")
    if args.duplicates != "keep":
        raise CommandError("--backend dask counts repeated task-worker pairs as votes (keep)")
    if args.partial:
        raise CommandError("--partial needs --backend memory")
    if args.out_of_core and not args.grouped:
        raise CommandError("--out-of-core needs --grouped (a shuffle would repeat every pass)")
    if args.dask_workers < 1:
        raise CommandError(f"--dask-workers must be at least 1; got {args.dask_workers}")
    if args.input is not None:
        check_parquet(args.input)


def check_parquet(source: str, what: str = "labels") -> None:
    """Refuse an input file that is not Parquet (a CSV file, say) by its first bytes, before
    any worker tries to read it; ``what`` starts the messages."""
    from ..distributed._partitions import parquet_files

    for path in parquet_files(source, what):
        with open(path, "rb") as handle:
            start = handle.read(len(_PARQUET_MAGIC))
        if start != _PARQUET_MAGIC:
            raise CommandError(
                f"{what}: file {path} is not a readable Parquet file (it does not start with "
                "PAR1); --backend dask reads Parquet: for a CSV or TSV file use --backend memory"
            )


def fit_on_dask(args: argparse.Namespace, family: Family) -> None:
    """Fit ``family``'s model on Dask, write the per-worker results and the model, print the
    summary."""
    from .._atomic import OutputSet
    from ..distributed import fit_distributed
    from ._inputs import task_labels

    check_options(args, family)
    model = family.make_model(args, progress=False)
    gold = None
    if args.gold is not None:
        gold = task_labels(args.gold, "gold", args.task_column, args.label_column)

    def report(iteration: int, objective: float | None, seconds: float) -> None:
        value = "" if objective is None else f" objective {objective:.10g}"
        print(f"iteration {iteration}:{value} ({seconds:.2f} s)", file=sys.stderr, flush=True)

    # a local cluster's workers would print the traceback of a failed task on stderr
    quiet = None if args.scheduler else {"silence_logs": logging.CRITICAL}
    start = time.perf_counter()
    with OutputSet(overwrite=bool(args.force)) as outputs:
        result = fit_distributed(
            model,
            args.input,
            out=args.out,
            scheduler=args.scheduler,
            n_workers=args.dask_workers,
            task=args.task_column,
            worker=args.worker_column,
            label=args.label_column,
            classes=parse_classes(args.classes),
            gold=gold,
            grouped=args.grouped,
            persist=not args.out_of_core,
            init=args.init_model,
            on_iteration=report if show_progress(args.progress) else None,
            cluster_options=quiet,
            outputs=outputs,
        )
        seconds = time.perf_counter() - start
        files = []
        if args.workers_out:
            workers = model.worker_table()
            files.append((args.workers_out, table_output(args, workers, args.workers_out)))
        if args.save_model:
            files.append((args.save_model, model_writer(model)))
        write_outputs(args, files, outputs)
    say(args, _summary(result, args.input, seconds))


def _summary(result, name: str, seconds: float) -> list[str]:
    model = result.model
    converged = "converged" if model.converged_ else "not converged"
    return [
        f"{type(model).__name__} on {name} (dask, {result.n_partitions} partitions): "
        f"{result.n_labels} labels, {result.n_tasks} tasks, {result.n_workers} workers, "
        f"classes {list(model.classes_)}",
        f"fit in {seconds:.2f} s: {model.n_iter_} iterations, {converged}",
        "prevalence  " + ", ".join(f"{k}: {v:.3f}" for k, v in model.prevalence_.items()),
        f"tasks       written to {result.out}",
    ]
