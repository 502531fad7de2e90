"""``crowdbayes values fit``: aggregate numeric answers (continuous labels)."""

from __future__ import annotations

import argparse
import time

import numpy as np

from ..data.io import read_table, table_writer, write_atomically
from ..data.values import Values
from ._common import show_progress
from ._models import TABLES, ModelSpec, ModelTable, Option, positive_float, positive_int
from ._outputs import add_output

VALUES = ModelTable(
    "values",
    [
        ModelSpec(
            "bias-noise",
            "crowdbayes.models.labels:ContinuousAggregation",
            "true value per task, bias and noise per worker (Gaussian or Student-t), VB",
            ("--noise", "--df", "--max-iter", "--tol"),
        ),
    ],
    [
        Option("--noise", "noise", "noise around truth plus bias", choices=("gaussian", "student")),
        Option("--df", "df", "degrees of freedom of Student-t noise", positive_float("--df")),
        Option("--max-iter", "max_iter", "VB sweeps at most", positive_int("--max-iter")),
        Option("--tol", "tol", "convergence tolerance", positive_float("--tol")),
    ],
    default="bias-noise",
)
TABLES["values"] = VALUES


def register(commands) -> None:
    """Add the ``values`` command to the top-level sub-parsers."""
    values = commands.add_parser("values", help="aggregate numeric answers from many workers")
    actions = values.add_subparsers(dest="action", required=True)
    fit = actions.add_parser(
        "fit",
        help="infer each task's value and each worker's bias and noise",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=VALUES.epilog(),
    )
    fit.add_argument("input", help="answers file (CSV/TSV/Parquet): task,worker,value")
    fit.add_argument("--task-column", default="task")
    fit.add_argument("--worker-column", default="worker")
    fit.add_argument("--value-column", default="value")
    fit.add_argument("--duplicates", choices=["keep", "drop", "error"], default="keep")
    fit.add_argument(
        "--eval-truth", help="true values (task,value) to score the result against (not used)"
    )
    add_output(fit, "--out", "write task results (mean, sd, lower, upper) here")
    add_output(fit, "--workers-out", "write per-worker bias and noise estimates here")
    VALUES.add_arguments(fit)
    fit.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    fit.set_defaults(handler=_values_fit)


def _values_fit(args: argparse.Namespace) -> None:
    values = Values(
        args.input,
        task=args.task_column,
        worker=args.worker_column,
        value=args.value_column,
        duplicates=args.duplicates,
    )
    model = VALUES.make(args, progress=show_progress(args.progress))
    start = time.perf_counter()
    model.fit(values)
    seconds = time.perf_counter() - start
    outputs = []
    if args.out:
        outputs.append((args.out, table_writer(model.values_)))
    if args.workers_out:
        outputs.append((args.workers_out, table_writer(model.worker_params_)))
    write_atomically(outputs)
    workers = model.worker_params_
    converged = "converged" if model.converged_ else "not converged"
    lines = [
        f"{type(model).__name__} ({model.noise} noise) on {args.input}: {values.n_values} "
        f"values, {values.n_tasks} tasks, {values.n_workers} workers",
        f"fit in {seconds:.2f} s: {model.n_iter_} iterations, {converged}",
        f"workers     bias median {workers['bias'].median():.4g} "
        f"(range {workers['bias'].min():.4g} to {workers['bias'].max():.4g}), "
        f"noise s.d. median {workers['noise_sd'].median():.4g}",
        f"tasks       mean {model.credible_level:.0%} interval width "
        f"{(model.values_['upper'] - model.values_['lower']).mean():.4g}",
    ]
    if args.eval_truth is not None:
        lines.append(_score_line(model, args))
    print("\n".join(lines))


def _score_line(model, args: argparse.Namespace) -> str:
    """Error and interval coverage against known true values."""
    table = read_table(args.eval_truth, what="eval-truth", id_columns=(args.task_column,))
    truth = Values(
        table.assign(_worker="truth"),
        task=args.task_column,
        worker="_worker",
        value=args.value_column,
    )
    known = truth.tasks.isin(model.values_.index)
    if not known.any():
        raise ValueError("eval-truth: none of its tasks have answers")
    true = truth.values[truth.task_codes][known[truth.task_codes]]
    rows = model.values_.loc[truth.tasks[truth.task_codes][known[truth.task_codes]]]
    error = rows["mean"].to_numpy() - true
    covered = (rows["lower"].to_numpy() <= true) & (true <= rows["upper"].to_numpy())
    return (
        f"against truth on {len(true)} tasks: RMSE {np.sqrt(np.mean(error**2)):.4g}, "
        f"MAE {np.mean(np.abs(error)):.4g}, interval coverage {covered.mean():.3f}"
    )
