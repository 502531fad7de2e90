"""``crowdbayes rank fit|predict|next``: Plackett–Luce scores from rankings and choices, and
which choice sets to show next (the record of the rank family).

crowdbayes rank fit RANKINGS [--features ITEMS] [--model pl-vi|pl-map|pl-mm|pl-gibbs]
                             [--save-model MODEL] [-o SCORES] [--eta X|auto] [--seed N]
                             [--weight-column weight [--pool-size N]]
crowdbayes rank predict MODEL --pairs PAIRS [--features ITEMS] [-o P]
crowdbayes rank next RANKINGS --n N [--candidates SETS] [--features ITEMS] [--model pl-vi|pl-gibbs]
                              [--strategy S] [--top-k K] [--confidence P] [--draws S]
                              [--weight-column weight [--pool-size N]] [--seed N] [-o NEXT]

``rank next`` fits the model to RANKINGS and writes the N candidate choice sets worth showing
next (:func:`crowdbayes.active.rankings.suggest_sets`): sets with items never shown first
(greedily, each chosen set's items then counting as shown), then, by default with pl-vi
(``--strategy sampled``), sets drawn at random with probability proportional to the expected
information gain about the utilities (BALD, from seeded posterior draws) mixed with a uniform
share, each with its importance weight in a ``weight`` column: keep it with the answers and fit
with ``--weight-column weight`` (plus ``--pool-size N`` when the sets are drawn, in the file's
order, from one list of N that you will mostly ask: LURE weights), so that the fit answers for
every candidate and not only for the sets the design favoured (in the car-choice replay the
best-first order, ``--strategy information``, left its fits 3.4 times random sets' distance
from the full-data fit midway, the weighted draws 0.74 times). SETS is a long
``query,item`` table, one row per member (a recorded RANKINGS file will do: its rank column is
ignored; sets RANKINGS already holds, by query id, are left out and counted); without it, every
pair of the fitted items (at most 50,000, else a seeded sample).
The output is the chosen sets in the same long format, in the order to show them (``order``,
1 = first), with their ``score`` (nats), ``new_items``, ``weight`` (sampled) and an empty
``rank`` column: fill in 1 for the chosen item and it is a RANKINGS file.
"""

from __future__ import annotations

import argparse

from ..gp.question_strategies import PAIR_QUESTION_VALUES
from ._models import (
    TABLES,
    ModelTable,
    Option,
    non_negative_float,
    positive_float,
    positive_int,
)
from ._outputs import add_output
from ._parser import Parser, add_features_option, add_normalize_option
from ._record import Family, Inputs, PredictVerb, add_escape_formulas, say, write_results
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
        Option(
            "--item-effects",
            "item_effects",
            "an effect per item added to the features' utility, its variance learnt: auto "
            "(default: on when every query offers 3+ items and --method is bound), on, off",
            {"auto": "auto", "on": True, "off": False}.__getitem__,
            choices=("auto", "on", "off"),
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
        "--weight-column",
        help="case weights: a column of one positive number per query, which then counts "
        "that often (pl-vi); the importance weights rank next writes in its weight column",
    )
    parser.add_argument(
        "--pool-size",
        help="with --weight-column: the weights are rank next's importance ratios of sets "
        "drawn, in the file's order, from one list of this many candidate sets (the sets you "
        "started with included, drawn at random from it; rank next's --candidates then the "
        "whole list): fit with LURE weights, which become 1 as the list runs out",
    )
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
    from ._common import CommandError
    from ._inputs import export_inputs, feature_frame, read_export

    items = feature_frame(args.features, args.item_column, "items")
    if args.weight_column is not None and args.pairs_input:
        raise CommandError("--weight-column reads a query,item,rank table, not --pairs-input")
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
        if args.weight_column is not None:
            raise CommandError("--weight-column reads a query,item,rank table, not an export")
        data, columns = _queries(export)
    query, item, rank = columns
    rankings = Rankings(
        data,
        items,
        query=query,
        item=item,
        rank=rank,
        weight=args.weight_column,
        normalize=args.normalize,
    )
    if args.pool_size is not None:
        rankings.query_weights = _lure(rankings, args)
    report, extra = export_inputs(export)
    return Inputs(rankings, str(args.input), report=report, extra=extra)


def _lure(rankings, args: argparse.Namespace):
    """``--pool-size``: the LURE weights of the queries' importance ratios, in file order
    (:func:`crowdbayes.active.rankings.lure_weights`)."""
    from ..active.rankings import lure_weights
    from ._common import CommandError

    pool = positive_int("--pool-size")(args.pool_size)
    if args.weight_column is None:
        raise CommandError("--pool-size turns --weight-column's importance ratios into LURE "
                           "weights: give --weight-column too")  # fmt: skip
    if rankings.n_queries > pool:
        raise CommandError(
            f"--pool-size {pool} is smaller than the {rankings.n_queries} queries drawn from it"
        )
    return lure_weights(rankings.query_weights, pool)  # query codes are in file order


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


# ------------------------------------------------------------------------------ next
#: candidate pairs of the fitted items at most (else a seeded sample of this many)
MAX_CANDIDATE_PAIRS = 50_000


def add_next_verb(actions) -> None:
    """``rank next RANKINGS --n N``: which choice sets to show next."""
    verb = FAMILY._verb_parser(
        actions, "next", "which choice sets to show next (fits the model first)", epilog=True
    )
    FAMILY.add_fit_arguments(verb)
    verb.add_argument("--n", required=True, help="how many sets to suggest")
    verb.add_argument(
        "--candidates",
        help="candidate sets: a long query,item table, one row per member (default: every "
        "pair of the fitted items)",
    )
    verb.add_argument(
        "--strategy",
        default="auto",
        choices=("auto", "sampled", "top", *PAIR_QUESTION_VALUES),
        help="how to choose the sets after the never-shown items (default auto: sampled for "
        "pl-vi, else information; sampled: drawn with probability proportional to the "
        "information gain mixed with a uniform share of 0.5, each set's importance weight in "
        "the weight column, to fit with --weight-column weight; information: the expected "
        "information gain about the utilities, best first; top: a batch that "
        "most lowers the uncertainty of which --top-k items are best (pl-vi with --features); "
        "power: drawn with probability proportional to the information gain; mixed: best first "
        "and uniform draws alternating; uncertainty: the entropy of the predicted choice; "
        "random)",
    )
    verb.add_argument(
        "--top-k",
        default="10",
        help="for --strategy top: how many best items matter (default 10)",
    )
    verb.add_argument(
        "--confidence",
        help="a set whose choice the model already predicts with this probability (0-1) is "
        "decided and never suggested",
    )
    verb.add_argument(
        "--draws", default="256", help="posterior draws for the information gain (default 256)"
    )
    add_output(verb, "--out", "write the sets here (default: stdout)", short="-o")
    add_escape_formulas(verb)
    verb.set_defaults(handler=run_next)


def run_next(args: argparse.Namespace) -> None:
    """``rank next``: fit, then write the sets to show next."""
    from ._common import CommandError
    from ._models import open_unit

    n = positive_int("--n")(args.n)
    draws = positive_int("--draws")(args.draws)
    top_k = positive_int("--top-k")(args.top_k)
    confidence = None if args.confidence is None else open_unit("--confidence")(args.confidence)
    model = FAMILY.make_model(args)
    if model.tags.posterior == "point":
        users = RANK.users(lambda t: t.posterior != "point")
        raise CommandError(
            f"--model {args.model} gives a point estimate, so no set is worth more than "
            f"another (the information gain needs a posterior); use --model {', '.join(users)}"
        )
    strategy = args.strategy
    if strategy == "auto":
        strategy = "sampled" if model.tags.case_weights else "information"
    if strategy == "sampled" and not model.tags.case_weights:
        raise CommandError(
            f"--strategy sampled writes importance weights that --model {args.model} cannot "
            "fit (it takes no case weights); use --model pl-vi or another --strategy"
        )
    inputs = FAMILY.read(args, model)
    candidates = _candidates(args, inputs.data)
    asked = 0
    if candidates is not None:
        candidates, asked = _not_asked(candidates, inputs.data, args)
    model = FAMILY.fit(model, inputs, args)
    if candidates is None:
        candidates = _fitted_pairs(model.item_ids_, args)
    from ..active.rankings import suggest_sets

    chosen = suggest_sets(
        model,
        candidates,
        n,
        features=inputs.data.features,
        strategy=strategy,
        confidence=confidence,
        n_draws=draws,
        top_k=top_k,
        random_state=args.seed,
    )
    if len(chosen) == 0:
        raise CommandError(
            f"nothing left to ask: every candidate is decided at --confidence {args.confidence}"
        )
    kept = ["order", "score", "new_items", *(["weight"] if "weight" in chosen else [])]
    values = chosen.assign(order=range(1, len(chosen) + 1))[kept].reset_index(drop=True)
    table = candidates.take(candidates.ids.get_indexer(chosen.index)).long(values)
    table[args.rank_column] = ""
    write_results(args, table, index=False)
    rankings = inputs.data
    say(
        args,
        [
            f"{type(model).__name__}: {rankings.n_queries} queries of {rankings.n_items} "
            f"items; wrote {len(chosen)} set(s) of {len(candidates)} candidates to "
            f"{args.out or 'stdout'} ({int(chosen['new_items'].sum())} never-shown item(s) "
            f"among them; {_score_words(strategy)} of the first {chosen['score'].iloc[0]:.4g})",
            *([f"left out {asked} candidate set(s) RANKINGS has already asked"] if asked else []),
            *_weight_words(chosen),
            *_pool_size_hint(chosen, rankings.n_queries, asked, len(candidates), args),
        ],
    )


def _weight_words(chosen) -> list[str]:
    """How to use the ``weight`` column of a sampled batch (nothing for the other strategies)."""
    if "weight" not in chosen:
        return []
    return [
        f"drawn at random in proportion to the information gain: importance weights "
        f"{chosen['weight'].min():.3g} to {chosen['weight'].max():.3g} in the weight column; "
        "keep it with the answers (1 on the queries no design chose) and fit with "
        "--weight-column weight (and --pool-size N when the sets come from one list of N "
        "you will mostly ask)"
    ]


def _pool_size_hint(chosen, n_queries: int, asked: int, left: int, args) -> list[str]:
    """When a sampled batch's ``--candidates`` list holds every query RANKINGS asked (query
    ids are unique on both sides, so ``asked == n_queries`` says exactly that), the sets are
    drawn from one fixed list: name its size for ``--pool-size``, without which the plain
    ratios weigh the sets unequally once most of the list is asked (on the car choices 1.45
    times random sets' distance from the full-data fit over the last 45%,
    ``benchmarks/active/results/rank_next_replay.md``). Not with ``--confidence``: sets left
    out as decided are not drawn, which LURE weights do not allow for."""
    if "weight" not in chosen or asked < n_queries:
        return []
    if args.pool_size is not None or args.confidence is not None:
        return []
    return [
        f"--candidates holds every set RANKINGS asked: one list of {n_queries + left} sets; "
        f"fit with --weight-column weight --pool-size {n_queries + left} (LURE weights; 1 on "
        "the sets no design chose): the plain ratios weigh the sets unequally once most of the "
        "list is asked"
    ]


def _score_words(strategy: str) -> str:
    """What ``score`` holds under ``strategy`` (see ``suggest_sets``)."""
    if strategy == "top":
        return "fall of the top set's weighted utility variance"
    if strategy == "uncertainty":
        return "predictive entropy (nats)"
    return "information gain (nats)"


def _candidates(args: argparse.Namespace, rankings):
    """The ``--candidates`` sets (None without it), their ids read like the input's."""
    if args.candidates is None:
        return None
    from ..active.rankings import ChoiceSets
    from ._inputs import ids_like, read_columns

    query, item = args.query_column, args.item_column
    table = read_columns(args.candidates, "candidates", (query, item), ids=(query, item))
    known = rankings.item_ids if rankings.features is None else rankings.features.ids
    table[item] = ids_like(table[item], known)
    return ChoiceSets.from_table(table, set_column=query, item_column=item)


def _not_asked(candidates, rankings, args: argparse.Namespace):
    """The ``--candidates`` sets RANKINGS has not asked yet (a set's id is its query id once
    answered), and how many were left out: the draws and their weights count only the sets
    left. With ``--pool-size``, the queries asked and the sets left must make up the pool."""
    import numpy as np

    from ._common import CommandError

    asked = candidates.ids.astype(str).isin(rankings.query_ids.astype(str))
    left = np.flatnonzero(~asked)
    if args.pool_size is not None and rankings.n_queries + len(left) != int(args.pool_size):
        raise CommandError(
            f"--pool-size {args.pool_size}: RANKINGS holds {rankings.n_queries} queries and "
            f"--candidates {len(left)} sets not asked yet, {rankings.n_queries + len(left)} in all"
        )
    if len(left) == 0:
        raise CommandError("nothing left to ask: every --candidates set is already in RANKINGS")
    return candidates.take(left), int(asked.sum())


def _fitted_pairs(items, args: argparse.Namespace):
    """Every pair of the fitted items as candidate sets ``left|right`` (or a seeded sample
    of :data:`MAX_CANDIDATE_PAIRS` of them)."""
    import numpy as np
    import pandas as pd

    from ..active.rankings import ChoiceSets
    from ..roles.pair_questions import triangular_pair

    n = len(items)
    total = n * (n - 1) // 2
    if total <= MAX_CANDIDATE_PAIRS:
        left, right = np.triu_indices(n, k=1)
    else:
        rng = np.random.default_rng(args.seed)
        k = np.sort(rng.choice(total, MAX_CANDIDATE_PAIRS, replace=False))
        left, right = triangular_pair(k, n)
    ids = [f"{a}|{b}" for a, b in zip(items[left], items[right], strict=True)]
    table = pd.DataFrame(
        {
            args.query_column: np.repeat(ids, 2),
            args.item_column: np.stack([items[left], items[right]], axis=1).ravel(),
        }
    )
    return ChoiceSets.from_table(table, set_column=args.query_column, item_column=args.item_column)


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
    more_verbs=add_next_verb,
)


def register(commands) -> None:
    """Add the ``rank`` command to the top-level sub-parsers."""
    FAMILY.register(commands)
