"""``crowdbayes rank fit|predict``: Plackett–Luce scores from rankings and choices (the record
of the rank family).

crowdbayes rank fit RANKINGS [--features ITEMS] [--model pl-vi|pl-map|pl-mm|pl-gibbs]
                             [--save-model MODEL] [-o SCORES] [--eta X|auto] [--seed N]
crowdbayes rank predict MODEL --pairs PAIRS [--features ITEMS] [-o P]
"""

from __future__ import annotations

import argparse

from ._models import (
    TABLES,
    ModelTable,
    Option,
    non_negative_float,
    positive_float,
    positive_int,
)
from ._parser import Parser, add_features_option, add_normalize_option
from ._record import Family, Inputs, PredictVerb
from .convert import add_format_option

__all__ = ["FAMILY", "RANK", "register"]


RANK = ModelTable(
    "rank",
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


def add_input_options(parser: Parser) -> None:
    add_normalize_option(parser)
    parser.add_argument(
        "--pairs-input",
        action="store_true",
        help="RANKINGS is pairwise: left,right,label (label = the preferred item)",
    )
    add_features_option(parser, "item features: an item column plus numeric columns")
    parser.add_argument("--query-column", default="query")
    parser.add_argument("--rank-column", default="rank")
    parser.add_argument(
        "--label-column",
        help="for an export: the answer field to read (the export's own name of the ranking "
        "question), when it has several",
    )
    add_format_option(parser, "Label Studio ranker: each annotation a ranking")


def add_fit_options(parser: Parser) -> None:
    parser.add_argument("--top-k", type=int, default=10, help="size of the top set (default 10)")


def read(args: argparse.Namespace, model) -> Inputs:
    from ..data.rankings import Rankings
    from ._inputs import export_inputs, feature_frame, read_export

    items = feature_frame(args.features, args.item_column, "items")
    if args.pairs_input:
        return Inputs(Rankings.from_pairs(args.input, items), str(args.input))
    data, export = read_export(
        args,
        kind="rankings",
        long_columns=(args.query_column, args.item_column, args.rank_column),
        answer=getattr(args, "label_column", None),
    )
    columns = (args.query_column, args.item_column, args.rank_column)
    if export is not None:
        data, columns = _queries(export)
    query, item, rank = columns
    rankings = Rankings(data, items, query=query, item=item, rank=rank, normalize=args.normalize)
    report, extra = export_inputs(export)
    return Inputs(rankings, str(args.input), report=report, extra=extra)


def _queries(export):
    """An export's rankings as a query, item, rank table: each annotation (a task ranked by
    one annotator) is one query, named ``task/annotator``."""
    table = export.table
    query = table[export.task].astype(str) + "/" + table[export.worker].astype(str)
    data = table.assign(query=query.to_numpy())
    return data, ("query", export.columns["item"], export.columns["rank"])


def item_table(model, args: argparse.Namespace):
    table = model.item_table(k=getattr(args, "top_k", 10), random_state=args.seed)
    return table.rename_axis(args.item_column)


def summary(model, inputs: Inputs, seconds: float, args: argparse.Namespace, table) -> list[str]:
    import pandas as pd

    from ._inputs import export_summary

    rankings = inputs.data
    facts = model.diagnostics()
    lines = [
        f"{type(model).__name__}: {rankings.n_queries} queries, {rankings.n_items} items, "
        f"{rankings.n_stages} top-queries",
        f"fit in {seconds:.2f} s, {facts['iterations']} iterations"
        + ("" if facts.get("converged", True) else " (not converged)"),
    ]
    if "eta" in facts:
        lines.append(f"eta {facts['eta']:.4g} (lower bound {facts['lower_bound']:.2f})")
    if model.tags.features != "none":
        coef = model.coef_interval(0.9)
        with pd.option_context("display.width", 120, "display.float_format", "{:.4f}".format):
            lines.append("feature weights (mean, 90% interval):\n" + coef.to_string())
    k = getattr(args, "top_k", 10)
    top = table[table["top_k"]].head(k)
    shown = ", ".join(str(i) for i in top.index[:10])
    lines.append(f"top {len(top)}: {shown}{' ...' if len(top) > 10 else ''}")
    return [*lines, *export_summary(inputs)]


def add_predict_options(parser: Parser) -> None:
    parser.add_argument("--pairs", required=True, help="left,right table of item ids")
    add_features_option(parser, "features of the items (feature models)")


def predict(model, args: argparse.Namespace):
    from ._common import CommandError
    from ._inputs import feature_frame, ids_like, read_columns

    pairs = read_columns(args.pairs, "pairs", ("left", "right"))
    if args.features is not None and model.tags.features == "none":
        raise CommandError(f"{type(model).__name__} uses no features; drop --features")
    items = feature_frame(args.features, args.item_column, "items")
    left = ids_like(pairs["left"], model.item_ids_)
    right = ids_like(pairs["right"], model.item_ids_)
    return pairs.assign(p_left=model.predict_proba(left, right, items).to_numpy())


FAMILY = Family(
    name="rank",
    judgment="rankings",
    help="scores and rankings from rankings or top choices",
    table=RANK,
    input_metavar="RANKINGS",
    input_help="query,item,rank table (rank 1 = best; empty = unranked)",
    add_input_options=add_input_options,
    read=read,
    item_table=item_table,
    summary=summary,
    add_fit_options=add_fit_options,
    predict=PredictVerb(
        help="P(left beats right) from a saved model",
        add_options=add_predict_options,
        predict=predict,
    ),
)


def register(commands) -> None:
    """Add the ``rank`` command to the top-level sub-parsers."""
    FAMILY.register(commands)
