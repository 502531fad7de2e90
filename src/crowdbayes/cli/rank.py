"""``crowdbayes rank fit`` and ``crowdbayes rank predict``: Plackett–Luce from rankings.

crowdbayes rank fit RANKINGS [--items ITEMS] [--model pl-vi|pl-map|pl-mm|pl-gibbs]
                             [--save MODEL] [--out SCORES] [--eta X|auto] [--seed N]
crowdbayes rank predict MODEL --pairs PAIRS [--items ITEMS] --out P
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from ..base import load
from ..data.io import read_table, table_writer, write_atomically
from ..data.rankings import Rankings
from ..models.plackett_luce import FeatureModel, PlackettLuceModel, PlackettLuceVI
from ._common import CommandError, show_progress
from ._models import (
    TABLES,
    ModelSpec,
    ModelTable,
    Option,
    non_negative_float,
    positive_float,
    positive_int,
)
from ._outputs import add_output

_MODELS = "crowdbayes.models.plackett_luce"

RANK = ModelTable(
    "rank",
    [
        ModelSpec(
            "pl-vi",
            f"{_MODELS}:PlackettLuceVI",
            "Plackett-Luce with features, Gaussian posterior by variational inference",
            ("--eta", "--method", "--max-iter", "--tol"),
            cli_defaults={"eta": "auto"},
        ),
        ModelSpec(
            "pl-map",
            f"{_MODELS}:PlackettLuceMAP",
            "Plackett-Luce with features, MAP (conditional logit)",
            ("--eta", "--max-iter", "--tol"),
        ),
        ModelSpec(
            "pl-mm",
            f"{_MODELS}:PlackettLuceMM",
            "Plackett-Luce without features, Hunter's MM (ML or Gamma-prior MAP)",
            ("--shape", "--rate", "--max-iter", "--tol"),
        ),
        ModelSpec(
            "pl-gibbs",
            f"{_MODELS}:PlackettLuceGibbs",
            "Plackett-Luce without features, Caron-Doucet Gibbs sampler",
            ("--shape", "--rate", "--samples"),
        ),
    ],
    [
        Option(
            "--eta",
            "eta",
            "prior precision: a number (pl-vi also 'auto', its default: chosen by the bound)",
            positive_float("--eta", words=("auto",)),
        ),
        Option(
            "--method",
            "method",
            "Algorithm 1's bound (default) or the calibrated exact-ELBO Gaussian",
            choices=("bound", "gaussian"),
        ),
        Option("--shape", "shape", "Gamma prior shape a", positive_float("--shape")),
        Option("--rate", "rate", "Gamma prior rate b", non_negative_float("--rate")),
        Option("--samples", "n_samples", "Gibbs draws per chain", positive_int("--samples")),
        Option("--max-iter", "max_iter", "iterations at most", positive_int("--max-iter")),
        Option("--tol", "tol", "convergence tolerance", positive_float("--tol")),
    ],
    default="pl-vi",
)
TABLES["rank"] = RANK


def register(commands) -> None:
    """Add the ``rank`` command to the top-level sub-parsers."""
    rank = commands.add_parser("rank", help="scores and rankings from rankings or top choices")
    actions = rank.add_subparsers(dest="action", required=True)
    fit = actions.add_parser(
        "fit",
        help="fit a Plackett-Luce model",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=RANK.epilog(),
    )
    fit.add_argument("rankings", help="query,item,rank table (rank 1 = best; empty = unranked)")
    fit.add_argument(
        "--pairs-input",
        action="store_true",
        help="RANKINGS is pairwise: left,right,label (label = the preferred item)",
    )
    fit.add_argument("--items", help="item features: an item column plus numeric columns")
    add_output(fit, "--save", "write the fitted model here (.npz, safe format)")
    add_output(fit, "--out", "write item scores, expected positions and top-k here")
    fit.add_argument("--top-k", type=int, default=10, help="size of the top set (default 10)")
    fit.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    fit.add_argument("--query-column", default="query")
    fit.add_argument("--item-column", default="item")
    fit.add_argument("--rank-column", default="rank")
    fit.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    RANK.add_arguments(fit)
    fit.set_defaults(handler=_rank_fit)

    predict = actions.add_parser("predict", help="P(left beats right) from a saved model")
    predict.add_argument("model", help="a model file written by `crowdbayes rank fit --save`")
    predict.add_argument("--pairs", required=True, help="left,right table of item ids")
    predict.add_argument("--items", help="features of the items (feature models)")
    predict.add_argument("--item-column", default="item")
    add_output(predict, "--out", "output: the pairs plus p_left", required=True)
    predict.set_defaults(handler=_rank_predict)


def _make_model(args: argparse.Namespace, progress: bool):
    return RANK.make(args, random_state=args.seed, progress=progress)


def _load_rankings(args: argparse.Namespace, needs_features: bool) -> Rankings:
    if needs_features and args.items is None:
        raise CommandError(f"--model {args.model} needs item features: pass --items FILE")
    if not needs_features and args.items is not None:
        raise CommandError(f"--model {args.model} uses no features; drop --items")
    items = None
    if args.items is not None:
        items = read_table(args.items, what="items", id_columns=(args.item_column,))
        if args.item_column in items.columns:
            items = items.set_index(args.item_column)
    if args.pairs_input:
        return Rankings.from_pairs(args.rankings, items)
    return Rankings(
        args.rankings,
        items,
        query=args.query_column,
        item=args.item_column,
        rank=args.rank_column,
    )


def _rank_fit(args: argparse.Namespace) -> None:
    progress = show_progress(args.progress)
    model = _make_model(args, progress)
    rankings = _load_rankings(args, isinstance(model, FeatureModel))
    start = time.perf_counter()
    model.fit(rankings)
    seconds = time.perf_counter() - start
    table = model.rank(k=args.top_k, random_state=args.seed)
    outputs = []
    if args.out:
        outputs.append((args.out, table_writer(table.rename_axis(args.item_column))))
    if args.save:
        outputs.append((args.save, model.save))
    write_atomically(outputs)
    print(_summary(model, rankings, table, seconds, args.top_k))


def _summary(model, rankings: Rankings, table: pd.DataFrame, seconds: float, k: int) -> str:
    name = type(model).__name__
    lines = [
        f"{name}: {rankings.n_queries} queries, {rankings.n_items} items, "
        f"{rankings.n_stages} top-queries",
        f"fit in {seconds:.2f} s, {model.n_iter_} iterations"
        + ("" if getattr(model, "converged_", True) else " (not converged)"),
    ]
    if isinstance(model, PlackettLuceVI):
        lines.append(f"eta {model.eta_:.4g} (lower bound {model.lower_bound_:.2f})")
    if isinstance(model, FeatureModel):
        coef = model.coef_interval(0.9)
        with pd.option_context("display.width", 120, "display.float_format", "{:.4f}".format):
            lines.append("feature weights (mean, 90% interval):\n" + coef.to_string())
    top = table[table["top_k"]].head(k)
    shown = ", ".join(str(i) for i in top.index[:10])
    lines.append(f"top {len(top)}: {shown}{' ...' if len(top) > 10 else ''}")
    return "\n".join(lines)


def _rank_predict(args: argparse.Namespace) -> None:
    model = load(args.model)
    if not isinstance(model, PlackettLuceModel):
        raise CommandError(
            f"{args.model} holds a {type(model).__name__} model, not a ranking model"
        )
    pairs = read_table(args.pairs, what="pairs", id_columns=("left", "right"))
    for column in ("left", "right"):
        if column not in pairs.columns:
            raise ValueError(
                f"pairs: column {column!r} is missing; got {list(map(str, pairs.columns))}"
            )
    items = None
    if isinstance(model, FeatureModel):
        if args.items is not None:
            items = read_table(args.items, what="items", id_columns=(args.item_column,))
            if args.item_column in items.columns:
                items = items.set_index(args.item_column)
    elif args.items is not None:
        raise CommandError(f"{type(model).__name__} uses no features; drop --items")
    left, right = _ids_like(pairs["left"], model), _ids_like(pairs["right"], model)
    result = pairs.copy()
    result["p_left"] = model.predict_proba(left, right, items)
    write_atomically([(args.out, table_writer(result, index=False))])
    print(f"wrote {len(result)} pair probabilities to {args.out}")


def _ids_like(column: pd.Series, model) -> np.ndarray:
    """Ids read from a file are text; match the model's id type when its ids are integers."""
    known = model.item_ids_ if hasattr(model, "item_ids_") else model._train_items.ids
    if pd.api.types.is_integer_dtype(known) and not pd.api.types.is_integer_dtype(column):
        try:
            return column.astype(np.int64).to_numpy()
        except ValueError:
            return column.to_numpy()
    return column.to_numpy()
