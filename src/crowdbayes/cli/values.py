"""``crowdbayes values fit``: numeric answers (continuous labels) from many workers (the record
of the values family)."""

from __future__ import annotations

import argparse

from ._models import TABLES, ModelTable, Option, positive_float, positive_int
from ._parser import Parser, add_answer_columns
from ._record import Family, Inputs
from .convert import add_format_option

__all__ = ["FAMILY", "VALUES", "register"]

VALUES = ModelTable(
    "values",
    [
        Option("--noise", "noise", "noise around truth plus bias", choices=("gaussian", "student")),
        Option("--df", "df", "degrees of freedom of Student-t noise", positive_float("--df")),
        Option("--max-iter", "max_iter", "VB sweeps at most", positive_int("--max-iter")),
        Option("--tol", "tol", "convergence tolerance", positive_float("--tol")),
        Option(
            "--bounds",
            "bounds",
            "the scale's ends: auto (found from piles of answers at the extremes), none, or "
            "LOW,HIGH",
            read=lambda text: _read_bounds(text),
            metavar="auto|none|LOW,HIGH",
        ),
    ],
    default="bias-noise",
)
TABLES["values"] = VALUES


def _read_bounds(text: str):
    """``--bounds``: ``auto``, ``none`` or ``LOW,HIGH`` (two numbers, LOW < HIGH)."""
    from ._common import CommandError

    if text in ("auto", "none"):
        return None if text == "none" else "auto"
    parts = text.split(",")
    try:
        low, high = (float(part) for part in parts)
    except ValueError:
        low = high = float("nan")
    if not low < high:  # also refuses nan
        raise CommandError(f"--bounds must be auto, none or LOW,HIGH with LOW < HIGH; got {text!r}")
    return (low, high)


def add_input_options(parser: Parser) -> None:
    add_answer_columns(parser, "value", "OUTPUT:price")
    add_format_option(parser, "Label Studio rating/number, Toloka, MTurk, Prolific, Argilla")
    parser.add_argument("--duplicates", choices=["keep", "drop", "error"], default="keep")
    parser.add_argument(
        "--eval-truth", help="true values (task,value) to score the result against (not used)"
    )


def read(args: argparse.Namespace, model) -> Inputs:
    from ..data.values import Values
    from ._inputs import export_inputs, read_export

    columns = dict(task=args.task_column, worker=args.worker_column, value=args.value_column)
    data, export = read_export(
        args,
        kind="values",
        long_columns=tuple(columns.values()),
        answer=None if args.value_column == "value" else args.value_column,
        answer_flag="--value-column",
    )
    if export is not None:
        columns = dict(task=export.task, worker=export.worker, value=export.answer)
        args.id_names = (export.task, export.worker)
    values = Values(data, duplicates=args.duplicates, normalize=args.normalize, **columns)
    report, extra = export_inputs(export)
    return Inputs(values, str(args.input), report=report, extra=extra)


def item_table(model, args: argparse.Namespace):
    """The per-task results, the tasks named as the input names them."""
    from ._inputs import id_names

    return model.task_table().rename_axis(id_names(args, args.task_column, "worker")[0])


def summary(model, inputs: Inputs, seconds: float, args: argparse.Namespace, table) -> list[str]:
    from ._inputs import export_summary

    values = inputs.data
    workers = model.worker_params_
    converged = "converged" if model.converged_ else "not converged"
    lines = [
        f"{type(model).__name__} ({model.noise} noise) on {inputs.source}: {values.n_values} "
        f"values, {values.n_tasks} tasks, {values.n_workers} workers",
        f"fit in {seconds:.2f} s: {model.n_iter_} iterations, {converged}",
        f"workers     bias median {workers['bias'].median():.4g} "
        f"(range {workers['bias'].min():.4g} to {workers['bias'].max():.4g}), "
        f"noise s.d. median {workers['noise_sd'].median():.4g}",
        f"tasks       mean {model.credible_level:.0%} interval width "
        f"{(model.values_['upper'] - model.values_['lower']).mean():.4g}",
        *_bounds_lines(model),
    ]
    if args.eval_truth is not None:
        lines.append(_score_line(model, args))
    return [*lines, *export_summary(inputs)]


def _bounds_lines(model) -> list[str]:
    """The scale's ends the fit used and the workers' mean share of answers piled at them."""
    ends = [end for end in model.bounds_ if end is not None]
    if not ends:
        return []
    shown = " and ".join(f"{end:g}" for end in ends)
    shares = [
        f"{c[:-6]} {model.worker_params_[c].mean():.3f}"
        for c in ("low_share", "high_share")
        if c in model.worker_params_
    ]
    line = f"scale       answers at {shown} read as beyond the scale or lazy"
    return [line + (f"; mean share of lazy answers: {', '.join(shares)}" if shares else "")]


def _score_line(model, args: argparse.Namespace) -> str:
    """Error and interval coverage against known true values."""
    import numpy as np

    from ..data.io import read_table
    from ..data.values import Values

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


FAMILY = Family(
    name="values",
    judgment="values",
    help="aggregate numeric answers from many workers",
    table=VALUES,
    input_metavar="INPUT",
    input_help="answers file (CSV/TSV/Parquet): task,worker,value",
    add_input_options=add_input_options,
    read=read,
    item_table=item_table,
    summary=summary,
    worker_table=lambda model: model.worker_table().reset_index(),
)


def register(commands) -> None:
    """Add the ``values`` command to the top-level sub-parsers."""
    FAMILY.register(commands)
