"""``crowdbayes prefs fit``, ``prefs predict`` and ``prefs next``: GP preference learning from
pairwise comparisons (GPPL, crowdGPPL, EP), and which pairs to have compared next.

crowdbayes prefs fit COMPARISONS --items ITEMS [--workers WORKERS]
                     [--model gppl|crowdgppl|gppl-vi|gppl-laplace|ep] --save MODEL [--out UTILITIES]
crowdbayes prefs fit COMPARISONS --model bt|crowd-bt --save MODEL [--out SCORES]
crowdbayes prefs predict MODEL --pairs PAIRS [--items ITEMS] [--workers WORKERS] --out P
crowdbayes prefs next COMPARISONS --items ITEMS --n N [--model M] [--pairs CANDIDATES]
                      [--available WORKERS] [--confidence P] [--strategy S] [--seed S] --out NEXT

COMPARISONS is a ``worker,left,right,label`` table (``label`` = the preferred item's id or
``equal``; ``worker`` optional). ``bt`` and ``crowd-bt`` (Bradley–Terry, Crowd-BT) need no
item features: each compared item gets a score (``--out``: mean, sd, lower, upper).
PAIRS is ``left,right`` with an optional ``worker`` column:
with a crowdGPPL model a row with a worker gets that worker's personal probability, a row
without one (or with a worker not seen in fit and not described by ``--workers``) the
consensus probability (with a warning giving the count); other models pool all workers and
ignore the column (with a warning). The output is PAIRS plus ``p_left``.

``prefs next`` fits the model to COMPARISONS and writes the N pairs most worth comparing next
(``Estimator.suggest``), in the order to ask them (best first; ``--strategy power`` draws them
with probability proportional to their information gain), as ``left,right`` (plus ``worker``
with ``--available``, crowdgppl only) and their ``score`` — the format ``prefs fit`` reads once
a ``label`` column is added. Candidates: the ``left,right[,worker]`` table ``--pairs``, or
pairs of the items of ``--items`` (all of them when there are at most 50,000, else a seeded
sample).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from ..base import load
from ..data.comparisons import Comparisons
from ..data.io import read_table, table_writer, write_atomically
from ..data.validate import show_values
from ..exceptions import DataWarning
from ..gp import PAIR_QUESTION_VALUES
from ..models.communities import CommunityPreferences, communities_table
from ..models.gp_preference import CrowdGPPL
from ._common import CommandError, show_progress
from ._models import TABLES, ModelSpec, ModelTable, Option, positive_float, positive_int
from ._outputs import add_output
from .rank import _ids_like

_MODELS = "crowdbayes.models.gp_preference"

_SVI = ("--inducing", "--batch-size", "--max-iter", "--tol", "--lengthscale", "--ties")
PREFS = ModelTable(
    "prefs",
    [
        ModelSpec(
            "gppl",
            f"{_MODELS}:GPPL",
            "GPPL by stochastic variational inference with inducing points",
            _SVI,
        ),
        ModelSpec(
            "crowdgppl",
            f"{_MODELS}:CrowdGPPL",
            "crowdGPPL: consensus plus personal preferences of each worker (SVI)",
            ("--components", *_SVI),
        ),
        ModelSpec(
            "gppl-vi",
            f"{_MODELS}:GPPLVI",
            "GPPL by full-batch variational inference (small data)",
            ("--max-iter", "--tol", "--lengthscale", "--ties"),
        ),
        ModelSpec(
            "gppl-laplace",
            f"{_MODELS}:GPPLLaplace",
            "GPPL by the Laplace approximation (small data)",
            ("--max-iter", "--tol", "--lengthscale", "--ties"),
        ),
        ModelSpec(
            "ep",
            f"{_MODELS}:GPPreferenceEP",
            "GP preference learning by expectation propagation (small data)",
            ("--max-iter", "--tol", "--lengthscale", "--ties"),
        ),
        ModelSpec(
            "bt",
            "crowdbayes.models.comparisons:BradleyTerry",
            "Bradley-Terry scores with Davidson ties, Laplace intervals (no item features)",
            ("--max-iter", "--tol", "--tie-model"),
        ),
        ModelSpec(
            "crowd-bt",
            "crowdbayes.models.comparisons:CrowdBT",
            "Crowd-BT: Bradley-Terry with each worker's reliability (VB; no item features)",
            ("--max-iter", "--tol", "--tie-model", "--noise"),
        ),
        ModelSpec(
            "dpm-gp",
            "crowdbayes.models.communities:CommunityPreferences",
            "communities of preferences: Dirichlet-process mixture of GPs (EP + Gibbs)",
            ("--lengthscale", "--ties"),
        ),
    ],
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
            "pairs per SVI iteration (default 1000)",
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


def register(commands) -> None:
    """Add the ``prefs`` command to the top-level sub-parsers."""
    prefs = commands.add_parser(
        "prefs", help="utilities from pairwise comparisons (GP, Bradley-Terry)"
    )
    actions = prefs.add_subparsers(dest="action", required=True)
    fit = actions.add_parser(
        "fit",
        help="fit a preference model (GP, or Bradley-Terry without features)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=PREFS.epilog(),
    )
    _add_fitting_arguments(fit, "worker,left,right,label table (label = preferred id)")
    add_output(fit, "--save", "write the fitted model here (.npz, safe)", required=True)
    add_output(fit, "--out", "also write the items' utilities (consensus) here")
    fit.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    fit.set_defaults(handler=_prefs_fit)

    predict = actions.add_parser("predict", help="P(left preferred to right) from a saved model")
    predict.add_argument("model", help="a model file written by `crowdbayes prefs fit --save`")
    predict.add_argument("--pairs", required=True, help="left,right[,worker] table of ids")
    predict.add_argument("--items", help="features of items not seen in fit")
    predict.add_argument("--workers", help="features of workers not seen in fit (crowdgppl)")
    predict.add_argument("--item-column", default="item")
    predict.add_argument("--worker-column", default="worker")
    add_output(predict, "--out", "output: the pairs plus p_left", required=True)
    predict.set_defaults(handler=_prefs_predict)

    following = actions.add_parser(
        "next",
        help="which pairs to have compared next (fits the model first)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=PREFS.epilog(),
    )
    _add_fitting_arguments(following, "worker,left,right,label table collected so far")
    following.add_argument("--n", required=True, help="how many questions (at most)")
    following.add_argument("--pairs", help="candidate pairs: left,right[,worker] (default: all)")
    following.add_argument(
        "--available", help="workers who can be asked now: a table with a worker column"
    )
    following.add_argument(
        "--confidence", help="leave out pairs already decided with this probability (0-1)"
    )
    following.add_argument(
        "--strategy",
        default="auto",
        choices=("auto", *PAIR_QUESTION_VALUES),
        help="how to choose questions (default auto: the model's own — mixed for gppl and its "
        "variants, half of them by information gain (BALD) best first and half drawn "
        "uniformly; information, BALD best first, for crowdgppl and the Bradley-Terry models; "
        "power: pairs drawn with probability proportional to their information gain)",
    )
    add_output(following, "--out", "output: left,right[,worker],score", required=True)
    following.set_defaults(handler=_prefs_next)

    communities = actions.add_parser(
        "communities", help="each worker's community from a saved dpm-gp model"
    )
    communities.add_argument("model", help="a model file written by `prefs fit --model dpm-gp`")
    add_output(communities, "--out", "worker,community,size,confidence,...", required=True)
    communities.set_defaults(handler=_prefs_communities)


def _add_fitting_arguments(parser: argparse.ArgumentParser, comparisons_help: str) -> None:
    """The arguments of a command that fits a model to comparisons (``fit``, ``next``)."""
    parser.add_argument("comparisons", help=comparisons_help)
    parser.add_argument(
        "--items", help="item features: an item column + numbers (needed by the GP models)"
    )
    parser.add_argument("--workers", help="worker features (crowdgppl): a worker column + numbers")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--item-column", default="item")
    parser.add_argument("--worker-column", default="worker")
    PREFS.add_arguments(parser)


def _comparisons(args: argparse.Namespace) -> Comparisons:
    """The comparisons and feature tables named on the command line."""
    return Comparisons(
        args.comparisons,
        items=args.items,
        workers=args.workers,
        item_column=args.item_column,
        worker_column=args.worker_column,
    )


#: the models that score items without features
_FEATURELESS = ("bt", "crowd-bt")


def _make_model(args: argparse.Namespace, progress: bool):
    if args.workers is not None and args.model != "crowdgppl":
        raise CommandError(f"--workers applies to crowdgppl, not {args.model}")
    if args.items is None and args.model not in _FEATURELESS:
        raise CommandError(f"--items is required by {args.model} (a GP over item features)")
    return PREFS.make(args, random_state=args.seed, progress=progress)


def _prefs_fit(args: argparse.Namespace) -> None:
    progress = show_progress(args.progress)
    model = _make_model(args, progress)
    data = _comparisons(args)
    start = time.perf_counter()
    model.fit(data)
    seconds = time.perf_counter() - start
    if isinstance(model, CommunityPreferences):
        utilities = _community_columns(model).rename_axis(args.item_column)
    else:
        utilities = model.utility_.rename_axis(args.item_column)
    outputs = [(args.save, model.save)]
    if args.out:
        outputs.append((args.out, table_writer(utilities)))
    write_atomically(outputs)
    name = type(model).__name__
    if isinstance(model, CommunityPreferences):
        status = f"{model.n_chains} chains x {model.n_sweeps} sweeps"
    else:
        status = f"{model.n_iter_} iterations" + ("" if model.converged_ else " (not converged)")
    print(
        f"{name}: {data.n_comparisons} comparisons of {data.n_items} items by "
        f"{data.n_workers} workers; fit in {seconds:.2f} s, {status}"
    )
    if isinstance(model, CommunityPreferences):
        sizes = pd.Series(model.partition_).value_counts()
        print(f"communities: {len(sizes)} (sizes {', '.join(map(str, sizes))})")
    else:
        top = utilities["mean"].sort_values(ascending=False).index[:5]
        print(f"top items: {', '.join(map(str, top))}")
    print(f"saved {args.save}")


def _load_model(path: str):
    model = load(path)
    if not isinstance(model, tuple(spec.load_class() for spec in PREFS.models.values())):
        kind = type(model).__name__
        raise CommandError(f"{path} holds a {kind} model, not a preference model")
    return model


def _feature_frame(path: str | None, column: str, what: str) -> pd.DataFrame | None:
    if path is None:
        return None
    table = read_table(path, what=what, id_columns=(column,))
    if column not in table.columns:
        raise ValueError(
            f"{what}: column {column!r} is missing; got {list(map(str, table.columns))}"
        )
    return table.set_index(column)


def _prefs_predict(args: argparse.Namespace) -> None:
    model = _load_model(args.model)
    pairs = read_table(args.pairs, what="pairs", id_columns=("left", "right", args.worker_column))
    for column in ("left", "right"):
        if column not in pairs.columns:
            raise ValueError(
                f"pairs: column {column!r} is missing; got {list(map(str, pairs.columns))}"
            )
    items = _feature_frame(args.items, args.item_column, "items")
    left, right = _ids_like(pairs["left"], model), _ids_like(pairs["right"], model)
    result = pairs.copy()
    has_workers = args.worker_column in pairs.columns
    if isinstance(model, CommunityPreferences):
        if args.items is not None or args.workers is not None:
            raise CommandError("dpm-gp models predict items and workers seen in fit only")
        p = model.predict_proba(left, right).to_numpy().copy()
        if has_workers:
            given = pairs[args.worker_column].notna().to_numpy()
            workers = _worker_ids(pairs[args.worker_column], model)
            seen = given & (model.worker_ids_.get_indexer(pd.Index(workers)) >= 0)
            if (given & ~seen).any():
                warnings.warn(
                    f"pairs: {int((given & ~seen).sum())} row(s) name worker(s) not seen in fit "
                    f"({show_values(pd.Index(workers[given & ~seen]).unique())}); predicting "
                    "for a new member of the crowd for them",
                    DataWarning,
                    stacklevel=2,
                )
            if seen.any():
                p[seen] = model.predict_proba(left[seen], right[seen], worker=workers[seen])
    elif isinstance(model, CrowdGPPL):
        p = model.predict_proba(left, right, items).to_numpy().copy()
        if has_workers:
            given = pairs[args.worker_column].notna().to_numpy()
            if given.any():
                workers = _worker_ids(pairs[args.worker_column][given], model)
                personal = model.predict_proba(
                    left[given],
                    right[given],
                    items,
                    workers=workers,
                    worker_features=_feature_frame(args.workers, args.worker_column, "workers"),
                )
                p[given] = personal.to_numpy()
    else:
        if args.workers is not None:
            raise CommandError(f"{type(model).__name__} uses no worker features; drop --workers")
        if has_workers:
            warnings.warn(
                f"{type(model).__name__} pools all workers: column {args.worker_column!r} of "
                "PAIRS is ignored (fit --model crowdgppl for personal predictions)",
                DataWarning,
                stacklevel=2,
            )
        p = model.predict_proba(left, right, items).to_numpy()
    result["p_left"] = p
    write_atomically([(args.out, table_writer(result, index=False))])
    print(f"wrote {len(result)} pair probabilities to {args.out}")


def _prefs_next(args: argparse.Namespace) -> None:
    n = positive_int("--n")(args.n)
    confidence = None
    if args.confidence is not None:
        confidence = positive_float("--confidence")(args.confidence)
        if confidence >= 1:
            raise CommandError(f"--confidence must lie between 0 and 1; got {args.confidence!r}")
    model = _make_model(args, progress=False)
    if not model.question_strategies:
        raise CommandError(f"{type(model).__name__} ({args.model}) cannot suggest questions")
    if args.available is not None and not getattr(model, "personal_questions", False):
        raise CommandError(
            f"--available: {type(model).__name__} ({args.model}) pools all workers and cannot "
            "say whom to ask; use --model crowdgppl"
        )
    data = _comparisons(args)
    candidates = None
    if args.pairs is not None:
        candidates = read_table(args.pairs, what="pairs", id_columns=("left", "right", "worker"))
        candidates = candidates.rename(columns={args.worker_column: "worker"})
        for column in ("left", "right"):
            if column not in candidates.columns:
                raise ValueError(
                    f"pairs: column {column!r} is missing; got {list(map(str, candidates.columns))}"
                )
    available = None
    if args.available is not None:
        table = read_table(args.available, what="available", id_columns=(args.worker_column,))
        if args.worker_column not in table.columns:
            raise ValueError(
                f"available: column {args.worker_column!r} is missing; got "
                f"{list(map(str, table.columns))}"
            )
        available = pd.Index(table[args.worker_column]).unique()
        unknown = available.difference(data.worker_ids)
        if len(unknown):
            raise ValueError(
                f"available: {len(unknown)} worker(s) have no comparisons in "
                f"{args.comparisons}: {show_values(unknown)}"
            )
    model.fit(data)
    questions = model.suggest(
        n,
        candidates=candidates,
        available=available,
        strategy=args.strategy,
        confidence=confidence,
        random_state=args.seed,
    )
    if not len(questions):
        decided = f" at --confidence {args.confidence}" if confidence is not None else ""
        raise CommandError(f"nothing left to ask: every candidate pair is decided{decided}")
    write_atomically([(args.out, table_writer(questions, index=False))])
    print(
        f"{type(model).__name__}: {data.n_comparisons} comparisons of {data.n_items} items; "
        f"wrote {len(questions)} question(s) to {args.out} (expected accuracy over all pairs "
        f"{model.expected_accuracy():.3f})"
    )


def _prefs_communities(args: argparse.Namespace) -> None:
    model = _load_model(args.model)
    if not isinstance(model, CommunityPreferences):
        raise CommandError(f"{args.model} holds a {type(model).__name__}, not a dpm-gp model")
    table = communities_table(model)
    write_atomically([(args.out, table_writer(table))])
    sizes = table["community"].value_counts()
    print(
        f"{len(table)} workers in {len(sizes)} communities (sizes {', '.join(map(str, sizes))}); "
        f"wrote {args.out}"
    )


def _community_columns(model: CommunityPreferences) -> pd.DataFrame:
    """Utilities for ``--out``: one ``mean_<c>``, ``sd_<c>`` column pair per community."""
    wide = model.community_utility_.unstack("community")
    wide.columns = [f"{stat}_{community}" for stat, community in wide.columns]
    return wide


def _worker_ids(column: pd.Series, model) -> np.ndarray:
    """Worker ids read from a file are text; match the model's when those are integers."""
    if pd.api.types.is_integer_dtype(model.worker_ids_) and not pd.api.types.is_integer_dtype(
        column
    ):
        try:
            return column.astype(np.int64).to_numpy()
        except ValueError:
            return column.to_numpy()
    return column.to_numpy()
