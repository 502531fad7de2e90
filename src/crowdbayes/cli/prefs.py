"""``crowdbayes prefs fit|predict|next|communities``: utilities from pairwise comparisons — GP
preference learning (GPPL, crowdGPPL, EP), Bradley–Terry and Crowd-BT, communities of
preferences — and which pairs to have compared next (the record of the prefs family).

crowdbayes prefs fit COMPARISONS [--features ITEMS] [--worker-features WORKERS]
                     [--model gppl|crowdgppl|gppl-vi|gppl-laplace|ep|bt|crowd-bt|dpm-gp]
                     [--save-model MODEL] [-o UTILITIES]
crowdbayes prefs predict MODEL --pairs PAIRS [--features ITEMS] [--worker-features WORKERS] [-o P]
crowdbayes prefs next COMPARISONS --n N [--features ITEMS] [--model M] [--pairs CANDIDATES]
                      [--available WORKERS] [--confidence P] [--strategy S] [--seed S] [-o NEXT]
crowdbayes prefs communities MODEL [-o WORKERS]

COMPARISONS is a ``worker,left,right,label`` table (``label`` = the preferred item's id or
``equal``; ``worker`` optional). ``bt`` and ``crowd-bt`` (Bradley–Terry, Crowd-BT) need no
item features: each compared item gets a score (``-o``: mean, sd, lower, upper).
PAIRS is ``left,right`` with an optional ``worker`` column: with a model of each worker
(``tags.personal_predictions``: crowdgppl, dpm-gp) a row with a worker gets that worker's
personal probability, a row without one (or with a worker not seen in fit and not described by
``--worker-features``) the crowd's (with a warning giving the count); other models pool all
workers and ignore the column (with a warning). The output is PAIRS plus ``p_left``.

``prefs next`` fits the model to COMPARISONS and writes the N pairs most worth comparing next
(``suggest``), in the order to ask them (best first; ``--strategy power`` draws them with
probability proportional to their information gain), as ``left,right`` (plus ``worker`` with
``--available``, for models that say whom to ask) and their ``score`` — the format ``prefs
fit`` reads once a ``label`` column is added. Candidates: the ``left,right[,worker]`` table
``--pairs``, or pairs of the fitted items (all of them when there are at most 50,000, else a
seeded sample).
"""

from __future__ import annotations

import argparse

from ..gp.question_strategies import PAIR_QUESTION_VALUES
from ._common import CommandError
from ._models import TABLES, ModelTable, Option, non_negative_int, positive_float, positive_int
from ._outputs import add_output
from ._parser import (
    Parser,
    add_common_options,
    add_deprecated,
    add_features_option,
    add_normalize_option,
)
from ._record import Family, Inputs, NextVerb, PredictVerb, say, write_results
from .convert import add_format_option

__all__ = ["FAMILY", "PREFS", "register"]


PREFS = ModelTable(
    "prefs",
    [
        Option(
            "--components",
            "n_components",
            "latent components (default 20)",
            positive_int("--components"),
        ),
        Option(
            "--inducing",
            "n_inducing",
            "inducing points (default 200)",
            positive_int("--inducing"),
        ),
        Option(
            "--batch-size",
            "batch_size",
            "pairs per SVI iteration (default: gppl all where that costs less than a pass of "
            "mini-batches, else 1000; crowdgppl 1000)",
            positive_int("--batch-size"),
        ),
        Option(
            "--max-iter",
            "max_iter",
            "iterations at most (default per model)",
            positive_int("--max-iter"),
        ),
        Option(
            "--tol", "tol", "convergence tolerance (default per model)", positive_float("--tol")
        ),
        Option(
            "--lengthscale",
            "lengthscale",
            "'auto' (default: the per-feature median heuristic times the square root of the "
            "number of features), 'median', 'scaled_median' or a number",
            positive_float("--lengthscale", words=("auto", "median", "scaled_median")),
        ),
        Option(
            "--ties", "ties", "'equal' labels: drop (default) or half", choices=("drop", "half")
        ),
        Option("--sweeps", "n_sweeps", "Gibbs sweeps per chain", positive_int("--sweeps")),
        Option(
            "--burn-in",
            "burn_in",
            "Gibbs sweeps dropped at the start of each chain",
            non_negative_int("--burn-in"),
        ),
        Option(
            "--tie-model",
            "tie_model",
            "'equal' labels: davidson (default: a fitted tie strength) or none (refuses ties)",
            choices=("davidson", "none"),
        ),
        Option(
            "--noise",
            "noise",
            "an unreliable answer: flip (default: the opposite answer) or random",
            choices=("flip", "random"),
        ),
    ],
    default="gppl",
)

TABLES["prefs"] = PREFS


# ------------------------------------------------------------------------------ options
def add_worker_features_option(parser: Parser) -> None:
    """``--worker-features`` (the old spelling ``--workers`` kept for a release)."""
    parser.add_argument(
        "--worker-features", help="worker features (crowdgppl): a worker column + numbers"
    )
    add_deprecated(parser, "--workers", "--worker-features", "worker_features")
    parser.add_argument("--worker-column", default="worker")


def add_input_options(parser: Parser) -> None:
    add_normalize_option(parser)
    add_features_option(parser, "item features: an item column + numbers (the GP models)")
    add_worker_features_option(parser)
    parser.add_argument(
        "--label-column",
        default="label",
        help="the column of the preferred items (default label); for an export, the answer "
        "field to read (the export's own name, e.g. OUTPUT:result)",
    )
    add_format_option(parser, "Label Studio pairwise, Toloka side-by-side")


# ------------------------------------------------------------------------------ fit
def read(args: argparse.Namespace, model) -> Inputs:
    from ..data.comparisons import Comparisons
    from ._inputs import export_inputs, read_export

    label = getattr(args, "label_column", "label")
    data, export = read_export(
        args,
        kind="pairs",
        long_columns=(args.worker_column, "left", "right", label),
        answer=None if label == "label" else label,
    )
    columns = dict(worker=args.worker_column, label=label)
    if export is not None:
        columns = dict(
            worker=export.worker,
            left=export.columns["left"],
            right=export.columns["right"],
            label=export.answer,
        )
    data = Comparisons(
        data,
        items=args.features,
        workers=args.worker_features,
        item_column=args.item_column,
        worker_column=args.worker_column,
        normalize=args.normalize,
        **columns,
    )
    report, extra = export_inputs(export)
    return Inputs(data, str(args.input), report=report, extra=extra)


def item_table(model, args: argparse.Namespace):
    return model.item_table().rename_axis(args.item_column)


def summary(model, inputs: Inputs, seconds: float, args: argparse.Namespace, table) -> list[str]:
    from ._inputs import export_summary

    data, facts = inputs.data, model.diagnostics()
    if "iterations" in facts:
        status = f"{facts['iterations']} iterations" + (
            "" if facts["converged"] else " (not converged)"
        )
    else:
        status = f"{facts['chains']} chains x {facts['sweeps']} sweeps"
    lines = [
        f"{type(model).__name__}: {data.n_comparisons} comparisons of {data.n_items} items by "
        f"{data.n_workers} workers; fit in {seconds:.2f} s, {status}"
    ]
    if model.worker_groups_ is not None:
        sizes = model.worker_groups_.value_counts()
        lines.append(f"communities: {len(sizes)} (sizes {', '.join(map(str, sizes))})")
    else:
        top = table["mean"].sort_values(ascending=False).index[:5]
        lines.append(f"top items: {', '.join(map(str, top))}")
    return [*lines, *export_summary(inputs)]


# ------------------------------------------------------------------------------ predict
def add_predict_options(parser: Parser) -> None:
    parser.add_argument("--pairs", required=True, help="left,right[,worker] table of ids")
    add_features_option(parser, "features of items not seen in fit")
    add_worker_features_option(parser)


def predict(model, args: argparse.Namespace):
    import warnings

    import numpy as np

    from ..exceptions import DataWarning
    from ._inputs import feature_frame, ids_like, read_columns

    column = args.worker_column
    pairs = read_columns(args.pairs, "pairs", ("left", "right"), ids=("left", "right", column))
    items = feature_frame(args.features, args.item_column, "items")
    worker_features = feature_frame(args.worker_features, column, "workers")
    if worker_features is not None and not model.tags.worker_features:
        raise CommandError(
            f"{type(model).__name__} uses no worker features; drop --worker-features"
        )
    workers = None
    if column in pairs.columns and model.tags.personal_predictions:
        given = pairs[column].notna().to_numpy()
        workers = np.full(len(pairs), None, dtype=object)
        workers[given] = ids_like(pairs[column][given], model.worker_ids_)
    elif column in pairs.columns:
        warnings.warn(
            f"{type(model).__name__} pools all workers: column {column!r} of PAIRS is ignored "
            "(fit --model crowdgppl for personal predictions)",
            DataWarning,
            stacklevel=2,
        )
    left = ids_like(pairs["left"], model.item_ids_)
    right = ids_like(pairs["right"], model.item_ids_)
    p = model.predict_proba(left, right, items, workers=workers, worker_features=worker_features)
    return pairs.assign(p_left=p.to_numpy())


# ------------------------------------------------------------------------------ next
def add_next_options(parser: Parser) -> None:
    parser.add_argument("--pairs", help="candidate pairs: left,right[,worker] (default: all)")
    parser.add_argument(
        "--available", help="workers who can be asked now: a table with a worker column"
    )
    parser.add_argument(
        "--strategy",
        default="auto",
        choices=("auto", *PAIR_QUESTION_VALUES),
        help="how to choose questions (default auto: the model's own — mixed for gppl and its "
        "variants, half of them by information gain (BALD) best first and half drawn "
        "uniformly; information, BALD best first, for crowdgppl and the Bradley-Terry models; "
        "power: pairs drawn with probability proportional to their information gain)",
    )


def next_questions(model, inputs: Inputs, args: argparse.Namespace):
    import pandas as pd

    from ..data.validate import show_values
    from ._inputs import read_columns

    candidates = None
    if args.pairs is not None:
        candidates = read_columns(args.pairs, "pairs", ("left", "right"), ids=("left", "right"))
        candidates = candidates.rename(columns={args.worker_column: "worker"})
    available = None
    if args.available is not None:
        column = args.worker_column
        table = read_columns(args.available, "available", (column,))
        available = pd.Index(table[column]).unique()
        unknown = available.difference(inputs.data.worker_ids)
        if len(unknown):
            raise ValueError(
                f"available: {len(unknown)} worker(s) have no comparisons in "
                f"{inputs.source}: {show_values(unknown)}"
            )
    return candidates, available


def next_summary(model, inputs: Inputs, table, args: argparse.Namespace) -> list[str]:
    data = inputs.data
    return [
        f"{type(model).__name__}: {data.n_comparisons} comparisons of {data.n_items} items; "
        f"wrote {len(table)} question(s) to {args.out or 'stdout'} (expected accuracy over "
        f"all pairs {model.expected_accuracy():.3f})"
    ]


# ------------------------------------------------------------------------------ communities
def add_communities(actions) -> None:
    """``prefs communities MODEL``: each worker's community from a saved model of
    communities."""
    verb = actions.add_parser(
        "communities", help="each worker's community from a saved dpm-gp model"
    )
    verb.add_argument("model_file", metavar="MODEL", help="a model file of --model dpm-gp")
    add_output(verb, "--out", "write worker,community,size,confidence,... here", short="-o")
    add_common_options(verb)
    verb.set_defaults(handler=_communities)


def _communities(args: argparse.Namespace) -> None:
    from ..models.communities import communities_table

    model = FAMILY.load_model(args.model_file)
    if model.worker_groups_ is None:
        raise CommandError(
            f"{args.model_file} holds a {type(model).__name__}, not a model of communities "
            "(--model dpm-gp)"
        )
    table = communities_table(model)
    write_results(args, table)
    sizes = table["community"].value_counts()
    say(
        args,
        [
            f"{len(table)} workers in {len(sizes)} communities "
            f"(sizes {', '.join(map(str, sizes))}); wrote {args.out or 'stdout'}"
        ],
    )


FAMILY = Family(
    name="prefs",
    judgment="pairs",
    help="utilities from pairwise comparisons (GP, Bradley-Terry, communities)",
    table=PREFS,
    input_metavar="COMPARISONS",
    input_help="worker,left,right,label table (label = the preferred id, or 'equal')",
    add_input_options=add_input_options,
    read=read,
    item_table=item_table,
    summary=summary,
    predict=PredictVerb(
        help="P(left preferred to right) from a saved model",
        add_options=add_predict_options,
        predict=predict,
    ),
    next=NextVerb(
        help="which pairs to have compared next (fits the model first)",
        add_options=add_next_options,
        questions=next_questions,
        table=lambda questions, args: questions,
        summary=next_summary,
    ),
    more_verbs=add_communities,
)


def register(commands) -> None:
    """Add the ``prefs`` command to the top-level sub-parsers."""
    FAMILY.register(commands)
