"""``crowdbayes labels fit --backend dask``: a label model fitted on a Dask cluster from Parquet
(:func:`crowdbayes.distributed.fit_distributed`), its per-task results written as
per-partition Parquet files in the ``-o`` directory."""

from __future__ import annotations

import argparse
import sys
import time

from ._common import CommandError, parse_classes, show_progress
from ._record import Family, say

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


def fit_on_dask(args: argparse.Namespace, family: Family) -> None:
    """Fit ``family``'s model on Dask, write the per-worker results and the model, print the
    summary."""
    from ..data.io import table_writer, write_atomically
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

    start = time.perf_counter()
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
    )
    seconds = time.perf_counter() - start
    outputs = []
    if args.workers_out:
        outputs.append((args.workers_out, table_writer(model.worker_table(), index=False)))
    if args.save_model:
        outputs.append((args.save_model, model.save))
    write_atomically(outputs)
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
