"""``crowdbayes labels fit``: aggregate class labels."""

from __future__ import annotations

import argparse

import pandas as pd

from ..data import Labels
from ..data._io import read_table, table_writer, write_atomically
from ..models.labels import (
    BayesianDawidSkene,
    CommunityDawidSkene,
    DawidSkene,
    HierarchicalAnnotation,
    MajorityVote,
)
from ._common import show_progress

LABEL_MODELS = {
    "mv": "majority vote (seeded random ties)",
    "ds": "Dawid-Skene, EM",
    "bayes-ds": "Bayesian Dawid-Skene, variational Bayes",
    "community-ds": "community Dawid-Skene, learnt community priors (most accurate overall)",
    "hierarchical": "hierarchical annotation model, Gibbs (default)",
}


def register(commands) -> None:
    """Add the ``labels`` command to the top-level sub-parsers."""
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
    fit.set_defaults(handler=_labels_fit)


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
        from ..datasets import load_labels

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
    from ..metrics import accuracy, log_loss

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
    progress = show_progress(args.progress)
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
