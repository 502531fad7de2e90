"""``crowdbayes labels fit|next|audit|accuracy``: class labels from many workers (the record of
the labels family; the Dask backend of ``fit`` is :mod:`.labels_dask`).

``audit`` draws the tasks an expert should check (a design with exact inclusion probabilities)
and ``accuracy`` turns the checked audit into the accuracy of the current answers over all
tasks with a 90% interval (:mod:`crowdbayes.metrics.audit`); ``next --stop-when`` ends a
collection loop on the expected answer changes or on that interval's width (exit status
:data:`~._record.EXIT_STOP`)."""

from __future__ import annotations

import argparse

from ._common import CommandError, parse_classes
from ._models import (
    TABLES,
    ModelTable,
    Option,
    non_negative_int,
    open_unit,
    positive_float,
    positive_int,
)
from ._outputs import add_output
from ._parser import Parser, add_answer_columns, add_deprecated
from ._record import (
    EXIT_STOP,
    Family,
    Inputs,
    NextVerb,
    add_escape_formulas,
    say,
    write_results,
)
from .convert import add_format_option

__all__ = ["FAMILY", "LABELS", "QUESTION_STRATEGIES", "STOP_RULES", "register"]

#: the strategies of ``labels next`` (a test checks them against the label models')
QUESTION_STRATEGIES = ("information", "accuracy", "uncertainty", "uncertainty_changes", "random")

LABELS = ModelTable(
    "labels",
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

#: from this many labels, ``labels fit`` without ``--model`` fits :data:`FAST_MODEL` instead
#: of the default sampler, saying so: the hierarchical model's Gibbs sweeps project to ~180 s
#: on 5M labels where Dawid–Skene fits in seconds (issue 40)
LARGE_INPUT_LABELS = 1_000_000
FAST_MODEL = "bayes-ds"


#: the model ``labels next`` fits without ``--model``. Its questions (its ``auto`` rule) score
#: higher than the hierarchical model's under either model: by BayesianDawidSkene, 0.7918
#: against 0.7768 on average over the twelve shared label sets
#: (benchmarks/active/results/active_labels_taskonly_20seeds.md,
#: active_labels_taskonly_hierarchical_7seeds.md); by the hierarchical model, whose answers
#: ``labels fit`` gives, 0.0062 higher on average and lower by more than a paired s.e. on no set
#: (active_labels_next_model.md). Without ``--model`` the hierarchical model is fitted too, for
#: the expected accuracy and audit interval it reports (``answers_model``; issue 43).
NEXT_MODEL = "bayes-ds"


class _DefaultModel(str):
    """``args.model`` when ``--model`` was not given: the default's name, told apart from the
    same name typed on the command line (which insists on it)."""


# ------------------------------------------------------------------------------ options
def add_input_options(parser: Parser) -> None:
    """The options that read the labels (fit, next, report)."""
    parser.add_argument("--gold", help="known classes (task,label) clamped during inference")
    parser.add_argument("--classes", help="comma-separated declared classes, in order")
    parser.add_argument(
        "--merge-classes",
        metavar="VARIANT=CLASS,...",
        help='classes to merge before fitting, e.g. "Dog=dog,dgo=dog" (near-duplicate classes '
        "are warned about, never merged unless named here)",
    )
    add_answer_columns(parser, "label", "OUTPUT:result")
    add_format_option(parser, "Label Studio, Toloka, MTurk, Prolific, Argilla, wide")
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
    parser.add_argument(
        "--eval-gold", help="true classes (task,label) to score the result against (not used)"
    )


def add_fit_options(parser: Parser) -> None:
    """The options of ``labels fit`` alone: scale-out and updates of a saved model."""
    parser.set_defaults(model=_DefaultModel(LABELS.default))
    scale = parser.add_argument_group("scale and updates (mv, ds, bayes-ds: see their tags)")
    scale.add_argument(
        "--backend",
        choices=["memory", "dask"],
        default="memory",
        help="memory (default), or dask: INPUT is a Parquet file, directory or glob, fitted on "
        "a Dask cluster; -o is a directory of per-partition Parquet files",
    )
    scale.add_argument("--scheduler", help="address of a running Dask scheduler (tcp://host:port)")
    scale.add_argument(
        "--dask-workers", type=int, default=2, help="local Dask worker processes (default 2)"
    )
    add_deprecated(parser, "--workers", "--dask-workers", "dask_workers", type=int)
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


def add_next_options(parser: Parser) -> None:
    parser.set_defaults(model=_DefaultModel(NEXT_MODEL))
    parser.add_argument(
        "--tasks",
        help="every task to consider (a table with a task column), "
        "including tasks with no label yet (default: the labelled tasks)",
    )
    parser.add_argument(
        "--available",
        help="the workers who can be asked now (a table with a worker column): each "
        "suggestion then names the worker to ask",
    )
    parser.add_argument(
        "--strategy",
        default="auto",
        choices=["auto", *QUESTION_STRATEGIES],
        help="how to value a question (default auto: information with --available; without, "
        "the model's task-only rule: uncertainty_changes for bayes-ds, uncertainty otherwise)",
    )
    parser.add_argument(
        "--audit",
        help="a checked audit (`labels audit`, its label column filled in): report the "
        "accuracy of the current answers with its 90%% interval",
    )
    parser.add_argument(
        "--stop-when",
        metavar="RULE[,RULE]",
        type=parse_stop_rules,
        help="end a collection loop: changes<X (the suggested labels are expected to change "
        "fewer than X answers per 100 labels) or width<Y (the 90%% accuracy interval of "
        f"--audit is narrower than Y); when any is met, no questions are written and the exit "
        f"status is {EXIT_STOP}",
    )


#: the designs of ``labels audit`` (a test checks them against
#: :data:`crowdbayes.metrics.audit.AUDIT_DESIGNS`; the parser imports no numerical library)
AUDIT_DESIGNS = ("stratified", "uniform")

#: the quantities ``labels next --stop-when`` compares: name -> what it is
STOP_RULES = {
    "changes": "expected answer changes per 100 suggested labels",
    "width": "width of the 90% accuracy interval of --audit",
}


def parse_stop_rules(text: str) -> list[tuple[str, float]]:
    """``changes<1.5,width<0.04`` as ``[("changes", 1.5), ("width", 0.04)]`` (for argparse:
    a wrong rule is bad usage)."""
    rules = []
    for part in text.split(","):
        name, sep, value = part.strip().partition("<")
        try:
            threshold = float(value)
        except ValueError:
            threshold = float("nan")
        if not sep or name.strip() not in STOP_RULES or not threshold > 0:
            raise argparse.ArgumentTypeError(
                f"a rule is changes<X or width<Y with a positive number; got {part.strip()!r}"
            )
        rules.append((name.strip(), threshold))
    return rules


# ------------------------------------------------------------------------------ reading
def read(args: argparse.Namespace, model) -> Inputs:
    """The labels (a file or ``--dataset``), the task features of a model that uses them, and
    the scoring gold (``--eval-gold``, less the tasks ``--gold`` clamps)."""
    from ..data import Labels
    from ..data.hygiene import parse_merge_classes
    from ._inputs import export_inputs, read_export, task_labels

    options = dict(
        task=args.task_column,
        worker=args.worker_column,
        label=args.label_column,
        classes=parse_classes(args.classes),
        merge_classes=parse_merge_classes(args.merge_classes),
        normalize=args.normalize,
        duplicates=args.duplicates,
        ordered=args.ordered,
    )
    eval_gold, export = None, None
    if args.dataset is not None:
        from ..datasets import load_labels

        dataset = load_labels(args.dataset)
        data, eval_gold, source = dataset.labels, dataset.gold, f"data set {dataset.name!r}"
        options.update(task="task", worker="worker", label="label")
    else:
        source = str(args.input)
        data, export = read_export(
            args,
            kind="labels",
            long_columns=(args.task_column, args.worker_column, args.label_column),
            answer=None if args.label_column == "label" else args.label_column,
        )
    gold = args.gold
    if export is not None:
        options.update(task=export.task, worker=export.worker, label=export.answer)
        gold = _export_gold(export, args.gold)
        args.id_names = (export.task, export.worker)
    labels = Labels(data, gold=gold, **options)
    if args.eval_gold is not None and export is not None:
        eval_gold = _export_task_labels(args.eval_gold, "eval-gold", export)
    elif args.eval_gold is not None:
        eval_gold = task_labels(args.eval_gold, "eval-gold", args.task_column, args.label_column)
    eval_gold = _without_clamped(eval_gold, labels)
    report, extra = export_inputs(export)
    features = None
    audit = _audit_option(args, labels)
    if args.features is not None:
        from ..data.features import read_features

        features = read_features(args.features, id_column=args.task_column, what="features")
    return Inputs(
        labels,
        source,
        report={"eval_gold": eval_gold, **report},
        extra={"eval_gold": eval_gold, "features": features, "audit": audit, **extra},
    )


def _audit_option(args: argparse.Namespace, labels):
    """The checked audit of ``--audit`` (``next``, ``accuracy``), read and checked against the
    labels before any fit; ``--stop-when width<Y`` refused without it."""
    path = getattr(args, "audit", None)
    rules = getattr(args, "stop_when", None) or []
    if path is None and any(name == "width" for name, _ in rules):
        raise CommandError("--stop-when width<Y needs --audit FILE (a checked audit)")
    return None if path is None else read_audit(path, labels)


def _export_gold(export, path: str | None):
    """The gold an export carries (Label Studio ``ground_truth``, Toloka ``GOLDEN:*``),
    overridden task by task by a ``--gold`` file."""
    if path is None:
        return export.gold
    given = _export_task_labels(path, "gold", export)
    return given if export.gold is None else given.combine_first(export.gold)


def _export_task_labels(path: str, what: str, export):
    """A ``task, label`` file beside an export (``--gold``, ``--eval-gold``): its columns the
    export's task and answer fields, or ``task`` and ``label``; its ids matched to the
    export's (text read as integers where the export's ids are integers)."""
    import pandas as pd

    from ..data.io import read_table
    from ._inputs import ids_like

    table = read_table(path, what=what, id_columns=(export.task, "task"))
    names = (export.task, export.answer)
    if not set(names) <= set(table.columns):
        names = ("task", "label")
    missing = [c for c in names if c not in table.columns]
    if missing:
        raise ValueError(
            f"{what}: column {missing[0]!r} is missing (give {export.task!r} and "
            f"{export.answer!r}, or task and label); got {list(map(str, table.columns))}"
        )
    known = pd.Index(export.table[export.task].unique())
    index = pd.Index(ids_like(table[names[0]], known), name=export.task)
    return pd.Series(table[names[1]].to_numpy(), index=index, name=export.answer)


def _without_clamped(eval_gold, labels):
    """The scoring gold less the tasks that ``--gold`` clamps (their class is given, not
    inferred: scoring them would count the gold itself), with a warning saying so."""
    import warnings

    from ..exceptions import DataWarning

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


# ------------------------------------------------------------------------------ fit
def check_updates(args: argparse.Namespace) -> None:
    """The warm start and update options against the model's tags."""
    tags = LABELS.spec(args.model).tags()
    if args.init_model and not tags.warm_start:
        users = LABELS.users(lambda t: t.warm_start)
        raise CommandError(
            f"--init-model works with --model {', '.join(users)} (a warm start of their "
            f"iterations); got {args.model}"
        )
    if args.partial and not args.init_model:
        raise CommandError("--partial needs --init-model (the model to update)")
    if args.partial and not tags.partial_fit:
        users = LABELS.users(lambda t: t.partial_fit)
        raise CommandError(f"--partial works with --model {', '.join(users)}; got {args.model}")


def fit(model, inputs: Inputs, args: argparse.Namespace):
    """Fit ``model`` (a warm start with ``--init-model``), or with ``--partial`` update the
    saved model with the new labels; returns the fitted model."""
    if getattr(args, "partial", False):
        from ..base import load

        saved = load(args.init_model)
        if LABELS.name_of(saved) != args.model:
            raise CommandError(
                f"--init-model holds a {type(saved).__name__}; --model {args.model} differs"
            )
        # the command line's settings apply to the update: progress, and --max-iter if given
        updates = {"progress": model.progress}
        if "--max-iter" in LABELS.given(args):
            updates["max_iter"] = model.max_iter
        return saved.set_params(**updates).partial_fit(inputs.data)
    if getattr(args, "init_model", None):
        return model.fit(inputs.data, init=args.init_model)
    model = _fast_model_for_large_input(model, inputs.data, args)
    return model.fit(inputs.data, inputs.extra["features"])


def _fast_model_for_large_input(model, labels, args: argparse.Namespace):
    """:data:`FAST_MODEL` in place of the default model on :data:`LARGE_INPUT_LABELS` labels or
    more, with a one-line warning naming ``--model`` to insist; ``model`` itself when the model
    was named, the input is smaller, or an option given applies to the default model only
    (asking for its sweeps is asking for it)."""
    import warnings

    from ..exceptions import DataWarning

    if (
        not isinstance(args.model, _DefaultModel)
        or args.model == FAST_MODEL
        or labels.n_labels < LARGE_INPUT_LABELS
    ):
        return model
    fast = LABELS.spec(FAST_MODEL)
    if not _takes_every_option(FAST_MODEL, args):
        return model
    default = args.model
    args.model = FAST_MODEL
    warnings.warn(
        f"{labels.n_labels:,} labels: fitting --model {FAST_MODEL} ({fast.help}; seconds) "
        f"instead of the default --model {default} (its Gibbs sweeps take minutes at this "
        f"size); give --model {default} to insist",
        DataWarning,
        stacklevel=2,
    )
    return LABELS.make(args, random_state=args.seed, progress=model.progress)


def _takes_every_option(name: str, args: argparse.Namespace) -> bool:
    """Whether ``--model name`` takes every model option given on the command line (asking
    for an option of one model is asking for that model)."""
    options = LABELS.spec(name).options
    return all(flag in options for flag in LABELS.given(args))


def summary(model, inputs: Inputs, seconds: float, args: argparse.Namespace, table) -> list[str]:
    from ._inputs import export_summary

    labels = inputs.data
    lines = [
        f"{type(model).__name__} on {inputs.source}: {labels.n_labels} labels, "
        f"{labels.n_tasks} tasks, {labels.n_workers} workers, classes {list(labels.classes)}",
        *(f"data check  {check.message}" for check in labels.data_checks if not check.warned),
        f"fit in {seconds:.2f} s: {fit_status(model)}",
        *_choice_lines(model),
    ]
    prevalence = ", ".join(f"{k}: {v:.3f}" for k, v in model.prevalence_.items())
    lines.append(f"prevalence  {prevalence}")
    confidence = model.probas_.max(axis=1)
    lines.append(
        f"confidence  mean {confidence.mean():.3f} (the accuracy the model expects, no gold); "
        f"tasks below 0.9: {(confidence < 0.9).sum()}"
    )
    if model.sensitivity_ is not None:
        sens, spec = model.sensitivity_["mean"], model.specificity_["mean"]
        lines.append(
            f"workers     sensitivity median {sens.median():.3f}, "
            f"specificity median {spec.median():.3f}"
        )
    if inputs.extra["eval_gold"] is not None:
        lines.append(_score_line(model, inputs.extra["eval_gold"]))
    return [*lines, *export_summary(inputs)]


def _choice_lines(model) -> list[str]:
    """What ``--model auto`` chose and the held-out label scores it chose by."""
    if model.choice_ is None:
        return []
    if model.scores_ is None:
        return [f"choice      {model.choice_} (too few labels per task to compare models)"]
    scores = ", ".join(f"{name} {score:.3f}" for name, score in model.scores_["score"].items())
    return [
        f"choice      {model.choice_}; held-out task-information gain per label (nats, higher "
        f"is better; majority vote unless beaten beyond noise): {scores}"
    ]


def fit_status(model) -> str:
    """How the fit ended: the sampler's chains and largest R-hat, or the iterations (of the
    chosen model, for ``--model auto``)."""
    model = model.model_ or model
    facts = model.diagnostics()
    if model.tags.posterior == "sampled":
        return (
            f"{facts['chains']} chains x {facts['draws']} sweeps (+{facts['warmup']} warm-up), "
            f"max R-hat {facts['max_rhat']:.3f}"
        )
    converged = "converged" if facts.get("converged") else "not converged"
    return f"{facts['iterations']} iterations, {converged}"


def _score_line(model, gold) -> str:
    from ..metrics import accuracy, log_loss, mean_absolute_error

    known = gold.index.isin(model.labels_.index)
    missing = int((~known).sum())
    gold = gold[known]
    note = f" ({missing} gold tasks without labels not scored)" if missing else ""
    more = ""
    if model.tags.ordered_classes:
        classes = list(model.classes_)
        more = (
            f", mean absolute error {mean_absolute_error(gold, model.labels_, classes):.4f} "
            f"(median grade: {mean_absolute_error(gold, model.medians_, classes):.4f})"
        )
    if model.consensus_ is not None:
        labelled = gold[gold.index.isin(model.consensus_.index)]
        if len(labelled):
            more += (
                f"; consensus accuracy on its {len(labelled)} labelled tasks "
                f"{accuracy(labelled, model.consensus_):.4f}"
            )
    return (
        f"against gold on {len(gold)} tasks: accuracy {accuracy(gold, model.labels_):.4f}, "
        f"log-loss {log_loss(gold, model.probas_):.4f}{more}{note}"
    )


def special_fit(args: argparse.Namespace) -> bool:
    """Check the scale and update options; run the Dask backend when asked (True)."""
    check_updates(args)
    if args.backend == "memory":
        for flag in ("scheduler", "grouped", "out_of_core"):
            if getattr(args, flag):
                option = "--" + flag.replace("_", "-")
                raise CommandError(f"{option} needs --backend dask")
        return False
    from .labels_dask import fit_on_dask

    fit_on_dask(args, FAMILY)
    return True


# ------------------------------------------------------------------------------ next
def next_questions(model, inputs: Inputs, args: argparse.Namespace):
    """The candidate tasks (``--tasks``) and, with ``--available``, every (task, worker) pair
    not labelled yet."""
    import pandas as pd

    from ._inputs import id_column, ids_like

    labels = inputs.data
    tasks = None
    if args.tasks is not None:
        found = id_column(args.tasks, args.task_column, "tasks")
        tasks = pd.Index(ids_like(found, labels.tasks), name=found.name)
    if args.available is None:
        return tasks, None
    found = id_column(args.available, args.worker_column, "available")
    available = pd.Index(ids_like(found, labels.workers), name=found.name)
    pairs = pd.MultiIndex.from_product(
        [tasks if tasks is not None else labels.tasks, available], names=["task", "worker"]
    )
    done = pd.MultiIndex.from_arrays(
        [labels.tasks[labels.task_codes], labels.workers[labels.worker_codes]]
    )
    return pairs[~pairs.isin(done)].to_frame(index=False), None


def next_table(questions, args: argparse.Namespace):
    from ._inputs import id_names

    task, worker = id_names(args, args.task_column, args.worker_column)
    return questions.rename(columns={"task": task, "worker": worker})


def item_table(model, args: argparse.Namespace):
    """The per-task results, the tasks named as the input names them."""
    from ._inputs import id_names

    return model.task_table().rename_axis(id_names(args, args.task_column, "worker")[0])


def next_summary(model, inputs: Inputs, table, args: argparse.Namespace) -> list[str]:
    done = ""
    if args.confidence is not None:
        level = float(args.confidence)
        done = (
            f"; {int((model.probas_.max(axis=1) >= level).sum())} tasks done at "
            f"confidence {level:g}"
        )
    where = args.out or "stdout"
    from ._inputs import export_summary

    answers = answers_model(model, inputs, args)
    chose = "" if answers is model else f"; {type(model).__name__} chose the questions"
    return [
        f"{type(answers).__name__} on {inputs.source}: expected accuracy (no gold) "
        f"{answers.expected_accuracy():.4f}{chose}{done}",
        f"wrote {len(table)} suggestion(s) to {where}",
        *export_summary(inputs),
    ]


def answers_model(model, inputs: Inputs, args: argparse.Namespace):
    """The fitted model whose answers ``labels fit`` and ``labels accuracy`` give for the same
    input and options — what ``labels next`` reports the expected accuracy and the audit
    interval of. ``model`` itself when ``--model`` was named; without it, ``labels next``
    chooses with :data:`NEXT_MODEL` and the answers are the family's default, fitted here too
    (once per run; on a large input, where ``labels fit`` fits :data:`FAST_MODEL`, the
    chooser itself).
    The chooser's own expected accuracy is further from the agreement with the full pool's
    answers: 0.051 off and biased +0.017 in the collection loop, against the hierarchical
    model's 0.038 and −0.005 (``benchmarks/active/results/active_estimate_next.md``).
    ``model`` itself too when an option given applies to the chooser only."""
    if not isinstance(args.model, _DefaultModel) or NEXT_MODEL == LABELS.default:
        return model
    if inputs.data.n_labels >= LARGE_INPUT_LABELS and NEXT_MODEL == FAST_MODEL:
        return model  # what `labels fit` fits at this size
    if "answers_model" not in inputs.extra:
        if not _takes_every_option(LABELS.default, args):
            inputs.extra["answers_model"] = model
        else:
            answers_args = argparse.Namespace(**vars(args))
            answers_args.model = _DefaultModel(LABELS.default)
            answers = LABELS.make(answers_args, random_state=args.seed, progress=model.progress)
            inputs.extra["answers_model"] = fit(answers, inputs, answers_args)
    return inputs.extra["answers_model"]


def next_stop(model, inputs: Inputs, questions, args: argparse.Namespace):
    """What ``labels next`` reports for its stop rule — the answers the suggested labels are
    expected to change (:func:`crowdbayes.active.audit.expected_changes`) and, with
    ``--audit``, the accuracy interval — and the message ending the loop when a
    ``--stop-when`` rule is met (else None)."""
    from ..active.audit import audit_accuracy, expected_changes

    changes = expected_changes(model, questions)
    per_100 = 100.0 * float(changes.mean())
    values = {"changes": per_100}
    lines = [
        f"expected answer changes: {changes.sum():.2f} from the {len(questions)} suggested "
        f"label(s), {per_100:.2f} per 100 labels ({type(model).__name__}'s own look-ahead, "
        "up to three labels per task)"
    ]
    if inputs.extra["audit"] is not None:
        row = audit_accuracy(answers_model(model, inputs, args), inputs.extra["audit"]).loc["all"]
        values["width"] = float(row["upper"] - row["lower"])
        lines.append(_accuracy_line("accuracy", row, 0.9))
    rules = args.stop_when or []
    met = [(name, limit) for name, limit in rules if values[name] < limit]
    if not met:
        return lines, None
    which = " and ".join(f"{name}<{limit:g}" for name, limit in met)
    shown = ", ".join(f"{STOP_RULES[name]} {values[name]:.4g}" for name, _ in met)
    return lines, f"stop: {which} met ({shown}); no questions written"


# ------------------------------------------------------------------------------ audits
def add_audit_verbs(actions) -> None:
    """``labels audit`` and ``labels accuracy``."""
    verb = FAMILY._verb_parser(
        actions, "audit", "choose the tasks an expert should check", epilog=True
    )
    FAMILY.add_fit_arguments(verb)
    verb.add_argument("--n", required=True, help="how many tasks to audit")
    verb.add_argument(
        "--design",
        choices=AUDIT_DESIGNS,
        default="stratified",
        help="stratified (default: strata of the answers' confidence, proportional "
        "allocation) or uniform; either way each task's inclusion probability is exact",
    )
    add_output(
        verb,
        "--out",
        "write the audit sheet here: task, inclusion_probability, stratum, answer, label "
        "(empty, for the expert) (default: stdout)",
        short="-o",
    )
    add_escape_formulas(verb)
    verb.set_defaults(handler=run_audit, model=_DefaultModel(LABELS.default))
    verb = FAMILY._verb_parser(
        actions,
        "accuracy",
        "the accuracy of the current answers, from a checked audit",
        epilog=True,
    )
    FAMILY.add_fit_arguments(verb)
    verb.add_argument(
        "--audit", required=True, help="the audit sheet of `labels audit`, label filled in"
    )
    verb.add_argument("--level", default="0.9", help="interval level (default 0.9)")
    add_output(verb, "--out", "write the estimates here (default: stdout)", short="-o")
    add_escape_formulas(verb)
    verb.set_defaults(handler=run_accuracy, model=_DefaultModel(LABELS.default))


def read_audit(path: str, labels):
    """The audit sheet, its task ids read like the labels', checked against the labels'
    tasks and classes (before any fit)."""
    from ..data.io import read_table
    from ..metrics.audit import check_audit
    from ._inputs import ids_like

    table = read_table(path, what="audit", id_columns=("task",))
    if "task" in table.columns:
        table["task"] = ids_like(table["task"], labels.tasks)
    check_audit(table, labels.tasks, labels.classes)
    return table


def run_audit(args: argparse.Namespace) -> None:
    """``labels audit``: fit, then draw the audit."""
    from ..active.audit import plan_audit

    n = positive_int("--n")(args.n)
    model = FAMILY.make_model(args)
    inputs = FAMILY.read(args, model)
    if args.features is None and n > inputs.data.n_tasks:
        raise CommandError(f"--n {n} is larger than the {inputs.data.n_tasks} tasks")
    model = FAMILY.fit(model, inputs, args)
    plan = plan_audit(model, n, design=args.design, random_state=args.seed)
    write_results(args, plan.assign(label=""), index=False)
    strata = plan["stratum"].nunique()
    say(
        args,
        [
            f"{type(model).__name__} on {inputs.source}: {n} of {len(model.probas_)} tasks "
            f"to audit ({args.design} design, {strata} stratum/strata by the answers' "
            "confidence)",
            f"wrote the audit sheet to {args.out or 'stdout'}: fill in the label column, then "
            "`crowdbayes labels accuracy INPUT --audit SHEET` (keep every row)",
        ],
    )


def run_accuracy(args: argparse.Namespace) -> None:
    """``labels accuracy``: fit, then estimate the accuracy from the checked audit."""
    from ..active.audit import audit_accuracy

    level = open_unit("--level")(args.level)
    model = FAMILY.make_model(args)
    inputs = FAMILY.read(args, model)  # reads and checks --audit
    model = FAMILY.fit(model, inputs, args)
    table = audit_accuracy(model, inputs.extra["audit"], level=level)
    columns = ["tasks", "audited", "estimate", "lower", "upper", "more_to_halve"]
    columns += ["wilson_lower", "wilson_upper"]
    write_results(args, table[columns].reset_index(), index=False)
    lines = [_accuracy_line(f"accuracy of the {len(model.probas_)} answers", table.loc["all"],
                            level)]  # fmt: skip
    lines += [
        _accuracy_line(f"  answered {c!r}", row, level)
        for c, row in table.drop(index="all").iterrows()
    ]
    say(args, lines)


def _accuracy_line(what: str, row, level: float) -> str:
    if row["audited"] == 0:
        return f"{what}: no audited task"
    more = row["more_to_halve"]
    halve = "" if more != more else f"; {int(more)} more audited tasks would halve the interval"
    return (
        f"{what}: {row['estimate']:.4f}, {level:.0%} interval [{row['lower']:.4f}, "
        f"{row['upper']:.4f}] from {int(row['audited'])} audited of {int(row['tasks'])} (audit "
        f"alone [{row['wilson_lower']:.4f}, {row['wilson_upper']:.4f}]){halve}"
    )


FAMILY = Family(
    name="labels",
    judgment="labels",
    help="aggregate class labels from many workers",
    table=LABELS,
    input_metavar="INPUT",
    input_help="labels file (CSV/TSV/Parquet): task,worker,label",
    add_input_options=add_input_options,
    read=read,
    item_table=item_table,
    summary=summary,
    fit=fit,
    worker_table=lambda model: model.worker_table(),
    add_fit_options=add_fit_options,
    special_fit=special_fit,
    save_model_replaces="init_model",  # the daily update: --init-model M --save-model M
    datasets=True,
    next=NextVerb(
        help="which tasks (and workers) to ask for a label next",
        add_options=add_next_options,
        questions=next_questions,
        table=next_table,
        summary=next_summary,
        stop=next_stop,
        default_model=NEXT_MODEL,
    ),
    more_verbs=add_audit_verbs,
)


def register(commands) -> None:
    """Add the ``labels`` command to the top-level sub-parsers."""
    FAMILY.register(commands)
