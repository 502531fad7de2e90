"""The ``crowdbayes`` command line.

    crowdbayes labels fit INPUT [--model mv|ds|bayes-ds|hierarchical] [--gold FILE]
                                [--eval-gold FILE] [--out FILE] [--workers-out FILE] [--seed N]
    crowdbayes labels fit --dataset rte ...
    crowdbayes datasets list

Errors are reported as one line on stderr with a non-zero exit status, and no partial output
file is left behind (outputs are written to a temporary file and moved into place).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .data import Labels
from .data._io import read_table, table_writer, write_atomically
from .models.labels import (
    BayesianDawidSkene,
    CommunityDawidSkene,
    DawidSkene,
    HierarchicalAnnotation,
    MajorityVote,
)

EXIT_ERROR = 2

LABEL_MODELS = {
    "mv": "majority vote (seeded random ties)",
    "ds": "Dawid-Skene, EM",
    "bayes-ds": "Bayesian Dawid-Skene, variational Bayes",
    "community-ds": "community Dawid-Skene, learnt community priors (most accurate overall)",
    "hierarchical": "hierarchical annotation model, Gibbs (default)",
}


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crowdbayes", description="Bayesian inference from noisy human judgments."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    labels = commands.add_parser("labels", help="aggregate class labels from many workers")
    labels_commands = labels.add_subparsers(dest="action", required=True)
    fit = labels_commands.add_parser(
        "fit",
        help="infer each task's class and each worker's reliability",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="models:\n" + "\n".join(f"  {k:<13} {v}" for k, v in LABEL_MODELS.items()),
    )
    source = fit.add_mutually_exclusive_group(required=True)
    source.add_argument("input", nargs="?", help="labels file (CSV/TSV/Parquet): task,worker,label")
    source.add_argument("--dataset", help="a named data set (see `crowdbayes datasets list`)")
    fit.add_argument("--model", choices=list(LABEL_MODELS), default="hierarchical")
    fit.add_argument("--gold", help="known classes (task,label) clamped during inference")
    fit.add_argument(
        "--eval-gold", help="true classes (task,label) to score the result against (not used)"
    )
    fit.add_argument("--out", help="write task results (label and class probabilities) here")
    fit.add_argument("--workers-out", help="write per-worker confusion estimates here")
    fit.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    fit.add_argument("--classes", help="comma-separated declared classes, in order")
    fit.add_argument("--task-column", default="task")
    fit.add_argument("--worker-column", default="worker")
    fit.add_argument("--label-column", default="label")
    fit.add_argument("--duplicates", choices=["keep", "drop", "error"], default="keep")
    fit.add_argument("--max-iter", type=int, help="EM/VB iterations at most")
    fit.add_argument("--chains", type=int, help="Gibbs chains (hierarchical)")
    fit.add_argument("--warmup", type=int, help="Gibbs warm-up sweeps per chain")
    fit.add_argument("--samples", type=int, help="Gibbs recorded sweeps per chain")
    fit.add_argument(
        "--hyperprior", choices=["sample", "moment", "fixed"], help="hierarchical hyperpriors"
    )
    fit.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)

    datasets = commands.add_parser("datasets", help="bundled and CROWDBAYES_DATA data sets")
    datasets_commands = datasets.add_subparsers(dest="action", required=True)
    datasets_commands.add_parser("list", help="list the label sets found")
    return parser


def _parse_classes(text: str | None) -> list | None:
    if text is None:
        return None
    values = [v.strip() for v in text.split(",") if v.strip()]
    try:
        return [int(v) for v in values]
    except ValueError:
        return values


def _make_model(args: argparse.Namespace, progress: bool):
    options = {}
    if args.model == "mv":
        return MajorityVote(random_state=args.seed)
    if args.max_iter is not None:
        options["max_iter"] = args.max_iter
    if args.model == "ds":
        return DawidSkene(progress=progress, **options)
    if args.model == "bayes-ds":
        return BayesianDawidSkene(progress=progress, **options)
    if args.model == "community-ds":
        return CommunityDawidSkene(progress=progress, **options)
    for name, flag in (("n_chains", "chains"), ("n_warmup", "warmup"), ("n_samples", "samples")):
        if getattr(args, flag) is not None:
            options[name] = getattr(args, flag)
    options.pop("max_iter", None)
    if args.hyperprior is not None:
        options["hyperprior"] = args.hyperprior
    return HierarchicalAnnotation(random_state=args.seed, progress=progress, **options)


def _load_inputs(args: argparse.Namespace) -> tuple[Labels, pd.Series | None, str]:
    columns = {"task": args.task_column, "worker": args.worker_column, "label": args.label_column}
    options = dict(columns, classes=_parse_classes(args.classes), duplicates=args.duplicates)
    eval_gold = None
    if args.dataset is not None:
        from .datasets import load_labels

        dataset = load_labels(args.dataset)
        data, eval_gold, name = dataset.labels, dataset.gold, f"data set {dataset.name!r}"
        options.update(task="task", worker="worker", label="label")
    else:
        data, name = args.input, str(args.input)
    labels = Labels(data, gold=args.gold, **options)
    if args.eval_gold is not None:
        table = read_table(args.eval_gold, what="eval-gold", id_columns=(args.task_column,))
        for column in (args.task_column, args.label_column):
            if column not in table.columns:
                raise ValueError(
                    f"eval-gold: column {column!r} is missing; got {list(map(str, table.columns))}"
                )
        eval_gold = table.set_index(args.task_column)[args.label_column]
    return labels, eval_gold, name


def _summary(model, labels: Labels, eval_gold: pd.Series | None, name: str, seconds: float) -> str:
    lines = [
        f"{type(model).__name__} on {name}: {labels.n_labels} labels, {labels.n_tasks} tasks, "
        f"{labels.n_workers} workers, classes {list(labels.classes)}",
    ]
    if isinstance(model, HierarchicalAnnotation):
        status = (
            f"{model.n_chains} chains x {model.n_samples} sweeps (+{model.n_warmup} warm-up), "
            f"max R-hat {model.max_rhat_:.3f}"
        )
    else:
        converged = "converged" if model.converged_ else "not converged"
        status = f"{model.n_iter_} iterations, {converged}"
    lines.append(f"fit in {seconds:.2f} s: {status}")
    prevalence = ", ".join(f"{k}: {v:.3f}" for k, v in model.prevalence_.items())
    lines.append(f"prevalence  {prevalence}")
    confidence = model.probas_.max(axis=1)
    lines.append(
        f"confidence  mean {confidence.mean():.3f}; tasks below 0.9: {(confidence < 0.9).sum()}"
    )
    if hasattr(model, "sensitivity_"):
        sens, spec = model.sensitivity_["mean"], model.specificity_["mean"]
        lines.append(
            f"workers     sensitivity median {sens.median():.3f}, "
            f"specificity median {spec.median():.3f}"
        )
    if eval_gold is not None:
        lines.append(_score_line(model, eval_gold))
    return "\n".join(lines)


def _score_line(model, gold: pd.Series) -> str:
    from .metrics import accuracy, log_loss

    known = gold.index.isin(model.labels_.index)
    missing = int((~known).sum())
    gold = gold[known]
    note = f" ({missing} gold tasks without labels not scored)" if missing else ""
    return (
        f"against gold on {len(gold)} tasks: accuracy {accuracy(gold, model.labels_):.4f}, "
        f"log-loss {log_loss(gold, model.probas_):.4f}{note}"
    )


def _task_table(model) -> pd.DataFrame:
    table = model.probas_.add_prefix("p_")
    table.insert(0, "label", model.labels_)
    return table


def _labels_fit(args: argparse.Namespace) -> None:
    import time

    labels, eval_gold, name = _load_inputs(args)
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    model = _make_model(args, progress)
    start = time.perf_counter()
    model.fit(labels)
    seconds = time.perf_counter() - start
    outputs = []
    if args.out:
        outputs.append((args.out, table_writer(_task_table(model))))
    if args.workers_out:
        outputs.append((args.workers_out, table_writer(model.worker_table(), index=False)))
    write_atomically(outputs)
    print(_summary(model, labels, eval_gold, name, seconds))


def _datasets_list(_: argparse.Namespace) -> None:
    from .datasets import list_datasets

    table = list_datasets()
    if table.empty:
        print("no data sets found; set CROWDBAYES_DATA to the data directory")
        return
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.drop(columns=["location"]).to_string(index=False))


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"crowdbayes: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crowdbayes`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    handlers = {("labels", "fit"): _labels_fit, ("datasets", "list"): _datasets_list}
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        np.seterr(all="ignore")
        try:
            handlers[(args.command, args.action)](args)
        except (ValueError, TypeError, OSError, ImportError, CommandError) as err:
            message = str(err).splitlines()[0] if str(err) else type(err).__name__
            print(f"crowdbayes: error: {message}", file=sys.stderr)
            return EXIT_ERROR
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
