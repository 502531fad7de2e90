"""``crowdbayes values fit``: numeric answers (continuous labels) from many workers (the record
of the values family)."""

from __future__ import annotations

import argparse

from ._models import TABLES, ModelTable, Option, positive_float, positive_int
from ._parser import Parser
from ._record import Family, Inputs

__all__ = ["FAMILY", "VALUES", "register"]

VALUES = ModelTable(
    "values",
    [
        Option("--noise", "noise", "noise around truth plus bias", choices=("gaussian", "student")),
        Option("--df", "df", "degrees of freedom of Student-t noise", positive_float("--df")),
        Option("--max-iter", "max_iter", "VB sweeps at most", positive_int("--max-iter")),
        Option("--tol", "tol", "convergence tolerance", positive_float("--tol")),
    ],
    default="bias-noise",
)
TABLES["values"] = VALUES


def add_input_options(parser: Parser) -> None:
    parser.add_argument("--task-column", default="task")
    parser.add_argument("--worker-column", default="worker")
    parser.add_argument("--value-column", default="value")
    parser.add_argument("--duplicates", choices=["keep", "drop", "error"], default="keep")
    parser.add_argument(
        "--eval-truth", help="true values (task,value) to score the result against (not used)"
    )


def read(args: argparse.Namespace, model) -> Inputs:
    from ..data.values import Values

    values = Values(
        args.input,
        task=args.task_column,
        worker=args.worker_column,
        value=args.value_column,
        duplicates=args.duplicates,
    )
    return Inputs(values, str(args.input))


def summary(model, inputs: Inputs, seconds: float, args: argparse.Namespace, table) -> list[str]:
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
    ]
    if args.eval_truth is not None:
        lines.append(_score_line(model, args))
    return lines


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
    item_table=lambda model, args: model.task_table(),
    summary=summary,
    worker_table=lambda model: model.worker_table().reset_index(),
)


def register(commands) -> None:
    """Add the ``values`` command to the top-level sub-parsers."""
    FAMILY.register(commands)
