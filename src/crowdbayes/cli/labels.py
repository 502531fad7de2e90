"""``crowdbayes labels fit``: aggregate class labels."""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

from ..data import Labels
from ..data.io import read_table, table_writer, write_atomically
from ..exceptions import DataWarning
from ..models.labels import HierarchicalAnnotation, LabelModel
from ._common import CommandError, show_progress
from ._models import (
    TABLES,
    ModelSpec,
    ModelTable,
    Option,
    non_negative_int,
    positive_float,
    positive_int,
)
from ._outputs import add_output

_MODELS = "crowdbayes.models.labels"

LABELS = ModelTable(
    "labels",
    [
        ModelSpec("mv", f"{_MODELS}:MajorityVote", "majority vote (seeded random ties)"),
        ModelSpec("ds", f"{_MODELS}:DawidSkene", "Dawid-Skene, EM", ("--max-iter", "--tol")),
        ModelSpec(
            "bayes-ds",
            f"{_MODELS}:BayesianDawidSkene",
            "Bayesian Dawid-Skene, variational Bayes",
            ("--max-iter", "--tol"),
        ),
        ModelSpec(
            "community-ds",
            f"{_MODELS}:CommunityDawidSkene",
            "community Dawid-Skene, learnt community priors (most accurate overall)",
            ("--max-iter", "--tol"),
        ),
        ModelSpec(
            "ordinal-ds",
            f"{_MODELS}:OrdinalDawidSkene",
            "ordinal Dawid-Skene for ordered grades (needs --ordered), EM",
            ("--max-iter", "--tol"),
        ),
        ModelSpec(
            "crowd-classifier",
            f"{_MODELS}:CrowdClassifier",
            "classifier of task features trained with Dawid-Skene workers (needs --features), "
            "EM; consensus and quality scores",
            ("--max-iter", "--tol"),
        ),
        ModelSpec(
            "hierarchical",
            f"{_MODELS}:HierarchicalAnnotation",
            "hierarchical annotation model, Gibbs",
            ("--chains", "--warmup", "--samples", "--hyperprior"),
        ),
        ModelSpec(
            "glad",
            f"{_MODELS}:GLAD",
            "GLAD: worker ability and task difficulty, EM",
            ("--max-iter", "--tol"),
        ),
        ModelSpec(
            "mace",
            f"{_MODELS}:MACE",
            "MACE: per-worker spamming probability, EM or variational Bayes",
            ("--max-iter", "--tol", "--variational"),
        ),
        ModelSpec(
            "kos",
            f"{_MODELS}:KOS",
            "Karger-Oh-Shah message passing (two classes only)",
            ("--max-iter", "--tol"),
        ),
        ModelSpec(
            "mmsr",
            f"{_MODELS}:MMSR",
            "M-MSR: one-coin skills by robust rank-one completion",
            ("--max-iter", "--tol"),
        ),
        ModelSpec("wawa", f"{_MODELS}:Wawa", "vote weighted by agreement with the majority"),
        ModelSpec(
            "zbs",
            f"{_MODELS}:ZeroBasedSkill",
            "zero-based skill: iteratively weighted vote",
            ("--max-iter", "--tol"),
        ),
        ModelSpec(
            "gold-mv",
            f"{_MODELS}:GoldMajorityVote",
            "vote weighted by accuracy on the --gold tasks (needs --gold)",
        ),
    ],
    [
        Option("--max-iter", "max_iter", "EM/VB iterations at most", positive_int("--max-iter")),
        Option("--tol", "tol", "convergence tolerance", positive_float("--tol")),
        Option("--chains", "n_chains", "Gibbs chains", positive_int("--chains")),
        Option(
            "--warmup", "n_warmup", "Gibbs warm-up sweeps per chain", non_negative_int("--warmup")
        ),
        Option(
            "--samples", "n_samples", "Gibbs recorded sweeps per chain", positive_int("--samples")
        ),
        Option(
            "--hyperprior",
            "hyperprior",
            "hierarchical hyperpriors",
            choices=("sample", "moment", "fixed"),
        ),
        Option(
            "--variational",
            "variational",
            "variational Bayes (yes) or EM (no)",
            read=lambda text: text == "yes",
            choices=("yes", "no"),
        ),
    ],
    default="hierarchical",
)
TABLES["labels"] = LABELS


def register(commands) -> None:
    """Add the ``labels`` command to the top-level sub-parsers."""
    labels = commands.add_parser("labels", help="aggregate class labels from many workers")
    labels_commands = labels.add_subparsers(dest="action", required=True)
    fit = labels_commands.add_parser(
        "fit",
        help="infer each task's class and each worker's reliability",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=LABELS.epilog(),
    )
    add_input_arguments(fit)
    fit.add_argument(
        "--eval-gold", help="true classes (task,label) to score the result against (not used)"
    )
    add_output(
        fit,
        "--out",
        "write task results (label and class probabilities) here (--backend dask: a directory)",
        directory_ok=True,
    )
    add_output(fit, "--workers-out", "write per-worker confusion estimates here")
    LABELS.add_arguments(fit)
    fit.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    scale = fit.add_argument_group("scale (mv, ds, bayes-ds)")
    scale.add_argument(
        "--backend",
        choices=["memory", "dask"],
        default="memory",
        help="memory (default), or dask: INPUT is a Parquet file, directory or glob, fitted on "
        "a Dask cluster; --out is a directory of per-partition Parquet files",
    )
    scale.add_argument("--scheduler", help="address of a running Dask scheduler (tcp://host:port)")
    scale.add_argument(
        "--workers", type=int, default=2, help="local Dask worker processes (default 2)"
    )
    scale.add_argument(
        "--grouped",
        action="store_true",
        help="dask: each task's labels are in one file already (skip the shuffle by task)",
    )
    scale.add_argument(
        "--out-of-core",
        action="store_true",
        help="dask: re-read the input every iteration instead of keeping it in worker memory "
        "(needs --grouped)",
    )
    add_output(
        fit,
        "--save-model",
        "save the fitted model here (.npz, no pickle; any model)",
        replaces="init_model",  # the daily update: --init-model M --save-model M
        group=scale,
    )
    scale.add_argument(
        "--init-model",
        help="continue from a model saved with --save-model: a warm start on INPUT (all labels)",
    )
    scale.add_argument(
        "--partial",
        action="store_true",
        help="with --init-model: INPUT holds only new tasks' labels; update the saved model "
        "without revisiting the old labels (memory backend)",
    )
    fit.set_defaults(handler=_labels_fit)

    ask = labels_commands.add_parser(
        "next",
        help="which tasks (and workers) to ask for a label next",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=LABELS.epilog()
        + "\n\nstrategies: "
        + ", ".join(("auto", *LabelModel.question_strategies))
        + f" (auto: {LabelModel.default_question_strategy})",
    )
    add_input_arguments(ask)
    ask.add_argument("--n", type=int, required=True, help="how many questions to suggest")
    add_output(ask, "--out", "write task[,worker],score here (best first)", required=True)
    ask.add_argument(
        "--tasks",
        help="every task to consider (a table with a task column), "
        "including tasks with no label yet (default: the labelled tasks)",
    )
    ask.add_argument(
        "--available",
        help="the workers who can be asked now (a table with a "
        "worker column): each suggestion then names the worker to ask",
    )
    ask.add_argument(
        "--confidence",
        type=float,
        help="a task whose most probable class has "
        "reached this probability is done and never suggested",
    )
    ask.add_argument(
        "--strategy", default="auto", choices=["auto", *LabelModel.question_strategies]
    )
    LABELS.add_arguments(ask)
    ask.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    ask.set_defaults(handler=_labels_next)


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The labels input of ``fit`` and ``next`` (and the options that read it)."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("input", nargs="?", help="labels file (CSV/TSV/Parquet): task,worker,label")
    source.add_argument("--dataset", help="a named data set (see `crowdbayes datasets list`)")
    parser.add_argument("--gold", help="known classes (task,label) clamped during inference")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--classes", help="comma-separated declared classes, in order")
    parser.add_argument("--task-column", default="task")
    parser.add_argument("--worker-column", default="worker")
    parser.add_argument("--label-column", default="label")
    parser.add_argument("--duplicates", choices=["keep", "drop", "error"], default="keep")
    parser.add_argument(
        "--features",
        help="task features (a table with a task column and numeric feature columns; tasks "
        "without labels are predicted too): for --model crowd-classifier",
    )
    parser.add_argument(
        "--ordered",
        action="store_true",
        help="the classes are ordered grades (--classes lowest first, or numbers): for "
        "--model ordinal-ds",
    )


def _parse_classes(text: str | None) -> list | None:
    if text is None:
        return None
    values = [v.strip() for v in text.split(",") if v.strip()]
    try:
        return [int(v) for v in values]
    except ValueError:
        return values


def _make_model(args: argparse.Namespace, progress: bool):
    return LABELS.make(args, random_state=args.seed, progress=progress)


def _load_inputs(args: argparse.Namespace) -> tuple[Labels, pd.Series | None, str]:
    columns = {"task": args.task_column, "worker": args.worker_column, "label": args.label_column}
    options = dict(
        columns,
        classes=_parse_classes(args.classes),
        duplicates=args.duplicates,
        ordered=bool(getattr(args, "ordered", False)),
    )
    eval_gold = None
    if args.dataset is not None:
        from ..datasets import load_labels

        dataset = load_labels(args.dataset)
        data, eval_gold, name = dataset.labels, dataset.gold, f"data set {dataset.name!r}"
        options.update(task="task", worker="worker", label="label")
    else:
        data, name = args.input, str(args.input)
    labels = Labels(data, gold=args.gold, **options)
    if getattr(args, "eval_gold", None) is not None:
        eval_gold = _task_labels(args.eval_gold, "eval-gold", args)
    return labels, _without_clamped(eval_gold, labels), name


def _without_clamped(eval_gold: pd.Series | None, labels: Labels) -> pd.Series | None:
    """The scoring gold less the tasks that ``--gold`` clamps (their class is given, not
    inferred: scoring them would count the gold itself), with a warning saying so."""
    if eval_gold is None or not (labels.gold_codes >= 0).any():
        return eval_gold
    clamped = eval_gold.index.isin(labels.tasks[labels.gold_codes >= 0])
    if not clamped.any():
        return eval_gold
    kept = eval_gold[~clamped]
    left = f"{len(kept)} scored" if len(kept) else "nothing left to score"
    warnings.warn(
        f"{int(clamped.sum())} task(s) of the scoring gold are also clamped by --gold (their "
        f"class is given, not inferred): left out of the score ({left})",
        DataWarning,
        stacklevel=2,
    )
    return kept if len(kept) else None


def _task_labels(path: str, what: str, args: argparse.Namespace) -> pd.Series:
    """A ``task, label`` table as a Series of labels indexed by task."""
    table = read_table(path, what=what, id_columns=(args.task_column,))
    for column in (args.task_column, args.label_column):
        if column not in table.columns:
            raise ValueError(
                f"{what}: column {column!r} is missing; got {list(map(str, table.columns))}"
            )
    return table.set_index(args.task_column)[args.label_column]


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
        f"confidence  mean {confidence.mean():.3f} (the accuracy the model expects, no gold); "
        f"tasks below 0.9: {(confidence < 0.9).sum()}"
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
    from ..metrics import accuracy, log_loss, mean_absolute_error

    known = gold.index.isin(model.labels_.index)
    missing = int((~known).sum())
    gold = gold[known]
    note = f" ({missing} gold tasks without labels not scored)" if missing else ""
    mae = ""
    if getattr(model, "ordinal", False):
        classes = list(model.classes_)
        mae = (
            f", mean absolute error {mean_absolute_error(gold, model.labels_, classes):.4f} "
            f"(median grade: {mean_absolute_error(gold, model.medians_, classes):.4f})"
        )
    if hasattr(model, "consensus_"):
        labelled = gold[gold.index.isin(model.consensus_.index)]
        if len(labelled):
            mae += (
                f"; consensus accuracy on its {len(labelled)} labelled tasks "
                f"{accuracy(labelled, model.consensus_):.4f}"
            )
    return (
        f"against gold on {len(gold)} tasks: accuracy {accuracy(gold, model.labels_):.4f}, "
        f"log-loss {log_loss(gold, model.probas_):.4f}{mae}{note}"
    )


def _task_table(model) -> pd.DataFrame:
    table = model.probas_.add_prefix("p_")
    table.insert(0, "label", model.labels_)
    if hasattr(model, "medians_"):
        table.insert(1, "median", model.medians_)
    if hasattr(model, "consensus_"):
        table.insert(1, "consensus", model.consensus_.astype(object).reindex(table.index))
        table.insert(2, "quality", model.quality_.reindex(table.index))
    return table


def _check_scale_options(args: argparse.Namespace) -> None:
    statistics_models, iterative = ("mv", "ds", "bayes-ds"), ("ds", "bayes-ds")
    if args.backend == "dask" and args.model not in statistics_models:
        raise CommandError(
            f"--backend dask works with --model {', '.join(statistics_models)}; got {args.model}"
        )
    if args.init_model and args.model not in iterative:
        raise CommandError(
            f"--init-model works with --model {', '.join(iterative)} (a warm start of their "
            f"iterations); got {args.model}"
        )
    if args.partial and not args.init_model:
        raise CommandError("--partial needs --init-model (the model to update)")
    if args.backend == "memory":
        for flag in ("scheduler", "grouped", "out_of_core"):
            if getattr(args, flag):
                option = "--" + flag.replace("_", "-")
                raise CommandError(f"{option} needs --backend dask")
        return
    if args.dataset is not None:
        raise CommandError("--backend dask reads a Parquet INPUT, not --dataset")
    if args.out is None:
        raise CommandError("--backend dask needs --out DIRECTORY for the per-task results")
    if args.eval_gold is not None:
        raise CommandError("--eval-gold needs --backend memory (dask keeps tasks on disk)")
    if args.duplicates != "keep":
        raise CommandError("--backend dask counts repeated task-worker pairs as votes (keep)")
    if args.partial:
        raise CommandError("--partial needs --backend memory")
    if args.out_of_core and not args.grouped:
        raise CommandError("--out-of-core needs --grouped (a shuffle would repeat every pass)")
    if args.workers < 1:
        raise CommandError(f"--workers must be at least 1; got {args.workers}")


def _labels_fit(args: argparse.Namespace) -> None:
    import time

    _check_scale_options(args)
    if args.backend == "dask":
        _labels_fit_dask(args)
        return
    labels, eval_gold, name = _load_inputs(args)
    progress = show_progress(args.progress)
    model = _make_model(args, progress)
    features = _features(args, model)
    start = time.perf_counter()
    if args.partial:
        from ..base import load

        saved = load(args.init_model)
        if type(saved) is not type(model):
            raise CommandError(
                f"--init-model holds a {type(saved).__name__}; --model {args.model} differs"
            )
        # the command line's settings apply to the update: progress, and --max-iter if given
        updates = {"progress": progress}
        if "--max-iter" in LABELS.given(args):
            updates["max_iter"] = model.max_iter
        model = saved.set_params(**updates)
        model.partial_fit(labels)
    elif args.init_model:
        model.fit(labels, init=args.init_model)
    elif features is not None:
        model.fit(labels, features)
    else:
        model.fit(labels)
    seconds = time.perf_counter() - start
    outputs = []
    if args.out:
        outputs.append((args.out, table_writer(_task_table(model))))
    if args.workers_out:
        outputs.append((args.workers_out, table_writer(model.worker_table(), index=False)))
    if args.save_model:
        outputs.append((args.save_model, model.save))
    write_atomically(outputs)
    print(_summary(model, labels, eval_gold, name, seconds))


def _features(args: argparse.Namespace, model):
    """The ``--features`` table of a model that uses features (refused for the others)."""
    uses = getattr(model, "uses_features", False)
    if args.features is None:
        if uses:
            raise CommandError(f"--model {args.model} needs --features FILE (one row per task)")
        return None
    if not uses:
        users = [n for n, s in LABELS.models.items() if getattr(s.load_class(), "uses_features", 0)]
        raise CommandError(f"--features applies to --model {', '.join(users)}, not {args.model}")
    from ..data.features import read_features

    return read_features(args.features, id_column=args.task_column, what="features")


def _labels_fit_dask(args: argparse.Namespace) -> None:
    import sys
    import time

    from ..distributed import fit_distributed

    model = _make_model(args, progress=False)
    gold = None if args.gold is None else _task_labels(args.gold, "gold", args)

    def report(iteration: int, objective: float | None, seconds: float) -> None:
        value = "" if objective is None else f" objective {objective:.10g}"
        print(f"iteration {iteration}:{value} ({seconds:.2f} s)", file=sys.stderr, flush=True)

    start = time.perf_counter()
    result = fit_distributed(
        model,
        args.input,
        out=args.out,
        scheduler=args.scheduler,
        n_workers=args.workers,
        task=args.task_column,
        worker=args.worker_column,
        label=args.label_column,
        classes=_parse_classes(args.classes),
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
    print(_dask_summary(result, args.input, seconds))


def _dask_summary(result, name: str, seconds: float) -> str:
    model = result.model
    converged = "converged" if model.converged_ else "not converged"
    lines = [
        f"{type(model).__name__} on {name} (dask, {result.n_partitions} partitions): "
        f"{result.n_labels} labels, {result.n_tasks} tasks, {result.n_workers} workers, "
        f"classes {list(model.classes_)}",
        f"fit in {seconds:.2f} s: {model.n_iter_} iterations, {converged}",
        "prevalence  " + ", ".join(f"{k}: {v:.3f}" for k, v in model.prevalence_.items()),
        f"tasks       written to {result.out}",
    ]
    return "\n".join(lines)


def _id_column(path: str, column: str, what: str) -> pd.Index:
    """The ids in ``column`` of the table at ``path`` (read as text), in order, once each."""
    table = read_table(path, what=what, id_columns=(column,))
    if column not in table.columns:
        raise ValueError(
            f"{what}: column {column!r} is missing; got {list(map(str, table.columns))}"
        )
    values = table[column]
    if values.isna().any():
        raise ValueError(f"{what}: {int(values.isna().sum())} row(s) have no {column}")
    return pd.Index(values.unique(), name=column)


def _labels_next(args: argparse.Namespace) -> None:
    if args.n < 1:
        raise CommandError(f"--n must be at least 1; got {args.n}")
    labels, _, name = _load_inputs(args)
    model = _make_model(args, show_progress(args.progress))
    if getattr(model, "uses_features", False) or args.features is not None:
        raise CommandError("--features and --model crowd-classifier work with labels fit only")
    model.fit(labels)
    tasks = None
    if args.tasks is not None:
        tasks = _id_column(args.tasks, args.task_column, "tasks")
        tasks = _ids_like_labels(tasks, labels.tasks)
    available = None
    if args.available is not None:
        available = _id_column(args.available, args.worker_column, "available")
        available = _ids_like_labels(available, labels.workers)
    if available is not None:  # every (task, worker) pair but those already labelled
        pairs = pd.MultiIndex.from_product(
            [tasks if tasks is not None else labels.tasks, available], names=["task", "worker"]
        )
        done = pd.MultiIndex.from_arrays(
            [labels.tasks[labels.task_codes], labels.workers[labels.worker_codes]]
        )
        tasks, available = pairs[~pairs.isin(done)].to_frame(index=False), None
    questions = model.suggest(
        args.n,
        candidates=tasks,
        available=available,
        strategy=args.strategy,
        confidence=args.confidence,
        random_state=args.seed,
    )
    if len(questions) == 0:
        raise CommandError(
            "nothing left to ask: every candidate task has reached --confidence"
            if args.confidence is not None
            else "nothing left to ask"
        )
    table = questions.rename(columns={"task": args.task_column, "worker": args.worker_column})
    write_atomically([(args.out, table_writer(table, index=False))])
    done = (
        ""
        if args.confidence is None
        else (
            f"; {int((model.probas_.max(axis=1) >= args.confidence).sum())} tasks done at "
            f"confidence {args.confidence:g}"
        )
    )
    print(
        f"{type(model).__name__} on {name}: expected accuracy (no gold) "
        f"{model.expected_accuracy():.4f}{done}\n"
        f"wrote {len(table)} suggestion(s) to {args.out}"
    )


def _ids_like_labels(ids: pd.Index, known: pd.Index) -> pd.Index:
    """Ids read as text match the labels' ids when those are integers (as the labels file's are
    read); unknown ids stay as given (a task with no label yet, a new worker)."""
    if pd.api.types.is_integer_dtype(known):
        converted = pd.to_numeric(pd.Series(ids), errors="coerce")
        if converted.notna().all() and (converted == converted.round()).all():
            return pd.Index(converted.astype(np.int64), name=ids.name)
    return ids
