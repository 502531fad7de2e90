"""``crowdbayes leaderboard fit|predict``: a leaderboard of models (or prompts, products,
designs) from pairwise battles, as an arena keeps them (the record of the leaderboard family).

crowdbayes leaderboard fit BATTLES [-o BOARD] [--save-model MODEL]
                                   [--init-model MODEL --partial]
                                   [--tie-model davidson|half] [--scale logit|elo] [--anchor ID]
                                   [--interval laplace|sandwich|bootstrap|exact] [--bootstrap N]
                                   [--covariates C1,C2 | --style [F1,F2]] [--judge-column C]
                                   [--category-column C] [--model-a-column C]
                                   [--model-b-column C] [--winner-column C] [--robustness K]
                                   [--judge-noise flip|random] [--judge-threshold T]
                                   [--workers-out JUDGES]
                                   [--backend memory|dask [--scheduler ADDR] [--dask-workers N]]
crowdbayes leaderboard predict MODEL --pairs PAIRS [-o P]
crowdbayes report leaderboard BATTLES ... [-o board.html]

BATTLES is a ``model_a, model_b, winner`` table (``winner``: ``model_a``, ``model_b``, ``tie``
or ``tie (bothbad)``), or has the one-hot columns ``winner_model_a, winner_model_b,
winner_tie`` instead (:class:`crowdbayes.data.battles.Battles`). ``-o`` gets one row per model:
score, lower, upper, rank, rank_lower, rank_upper, p_rank1, battles, win_rate; with
``--category-column`` one board per category below the overall one (``category`` column,
the overall board's category ``(all)``). ``--covariates`` names columns of per-battle side
differences (a minus b); ``--style`` builds them from every numeric pair of columns ``F_a,
F_b`` (or those named), as the arena's style control does
(:func:`crowdbayes.data.battles.style_covariates`). The daily update: ``--init-model
board.npz --partial --save-model board.npz`` adds the new battles of BATTLES to the saved
model's counts and refits. With ``--judge-column`` each judge is rated by Crowd-BT
(:mod:`crowdbayes.models.comparisons._leaderboard_judges`): the summary shows the most and
least reliable judges and those flagged (reliability below ``--judge-threshold``), and
``--workers-out`` writes the judges' table (battles, decisive, agreement, reliability, lower,
upper, flagged). ``--backend dask`` counts the battles of Parquet files on a Dask cluster
(:mod:`.leaderboard_dask`) and fits the counts here.

PAIRS is a ``model_a, model_b`` table; ``predict`` writes it with ``p_a_wins``, ``p_b_wins``
and ``p_tie`` (the probabilities of the three outcomes at the fitted scores).
"""

from __future__ import annotations

import argparse

from ._common import CommandError
from ._models import TABLES, ModelTable, Option, open_unit, positive_float, positive_int
from ._parser import Parser, add_normalize_option
from ._record import Family, Inputs, PredictVerb
from .leaderboard_dask import add_dask_options, battle_columns, dask_backend, read_on_dask

__all__ = ["FAMILY", "LEADERBOARD", "register"]

#: the category of the overall board in a table of category boards
OVERALL = "(all)"
#: models listed in the summary
_TOP = 10
#: judges listed in the summary at each end of the judges' table
_JUDGES = 3


LEADERBOARD = ModelTable(
    "leaderboard",
    [
        Option(
            "--tie-model",
            "tie_model",
            "ties: davidson (default: a fitted tie strength) or half (a tie is half a win for "
            "each side, the arena's convention)",
            choices=("davidson", "half"),
        ),
        Option(
            "--scale",
            "scale",
            "scores as logits (default) or Elo points (400 / ln 10 points a logit, around 1000)",
            choices=("logit", "elo"),
        ),
        Option(
            "--anchor",
            "anchor",
            "the model whose score is fixed (at 0 logit, or 1000 Elo points); default: the "
            "scores are centred",
            metavar="ID",
        ),
        Option(
            "--interval",
            "interval",
            "score and rank intervals: laplace (default: the posterior), sandwich (robust to a "
            "misspecified model), bootstrap (seeded, over the battles; --bootstrap N) or exact "
            "(seeded draws of the exact posterior; at most 50 models)",
            choices=("laplace", "sandwich", "bootstrap", "exact"),
        ),
        Option(
            "--prior-scale",
            "prior_scale",
            "prior sd of the scores: shrinks sparsely played models toward the middle "
            "(default: none)",
            positive_float("--prior-scale"),
        ),
        Option(
            "--min-battles",
            "min_battles",
            "models with fewer battles are named as sparse (default 50)",
            positive_int("--min-battles"),
        ),
        Option("--level", "credible_level", "interval level (default 0.9)", open_unit("--level")),
        Option("--max-iter", "max_iter", "iterations at most", positive_int("--max-iter")),
        Option("--tol", "tol", "convergence tolerance", positive_float("--tol")),
    ],
    default="bt",
)
TABLES["leaderboard"] = LEADERBOARD


# ------------------------------------------------------------------------------ options
def add_input_options(parser: Parser) -> None:
    """The columns of BATTLES and the covariates (fit and report)."""
    add_normalize_option(parser)
    columns = parser.add_argument_group("battle columns")
    columns.add_argument("--model-a-column", default="model_a", help="default model_a")
    columns.add_argument("--model-b-column", default="model_b", help="default model_b")
    columns.add_argument(
        "--winner-column",
        default="winner",
        help="values model_a, model_b, tie or 'tie (bothbad)' (default winner; without it, "
        "the one-hot columns winner_model_a, winner_model_b, winner_tie)",
    )
    columns.add_argument(
        "--judge-column",
        help="who judged each battle (a person, an LLM): each judge is rated by Crowd-BT",
    )
    judges = parser.add_argument_group("judges (with --judge-column)")
    judges.add_argument(
        "--judge-noise",
        choices=("flip", "random"),
        help="an unreliable judge's vote is the opposite answer (flip, default: a random "
        "voter's reliability is near 0.5) or a random one (random)",
    )
    judges.add_argument(
        "--judge-threshold",
        type=open_unit("--judge-threshold"),
        metavar="T",
        help="flag judges whose reliability is below T (default 0.65 with flip noise, 0.5 "
        "with random)",
    )
    columns.add_argument(
        "--category-column",
        help="the battle's category: one board per category besides the overall one",
    )
    style = parser.add_argument_group("style control").add_mutually_exclusive_group()
    style.add_argument(
        "--covariates",
        metavar="C1,C2",
        help="columns of per-battle side differences (a minus b), z-scored over the battles",
    )
    style.add_argument(
        "--style",
        nargs="?",
        const="",
        metavar="F1,F2",
        help="covariates (f_a - f_b) / (f_a + f_b) from the numeric column pairs F_a, F_b "
        "(e.g. token counts, headers, lists, bold spans): those named, or every such pair",
    )


def add_fit_options(parser: Parser) -> None:
    parser.add_argument(
        "--bootstrap",
        type=int,
        metavar="N",
        help="bootstrap replicates of --interval bootstrap (default: the model's)",
    )
    parser.add_argument(
        "--robustness",
        type=int,
        default=1,
        metavar="K",
        help="find the fewest battles whose removal changes the top-K ranking (default 1; "
        "0 skips it)",
    )
    updates = parser.add_argument_group("daily updates")
    updates.add_argument("--init-model", help="a model saved with --save-model, to update")
    updates.add_argument(
        "--partial",
        action="store_true",
        help="with --init-model: BATTLES holds only new battles; add them to the saved "
        "model's counts and refit (--save-model may name the --init-model file)",
    )
    add_dask_options(parser)


# ------------------------------------------------------------------------------ reading
def _names(text: str | None) -> list[str]:
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def _check_updates(args: argparse.Namespace) -> None:
    """The update options (``fit`` only), before any input is read."""
    init, partial = getattr(args, "init_model", None), getattr(args, "partial", False)
    if partial and not init:
        raise CommandError("--partial needs --init-model (the model to update)")
    if init and not partial:
        raise CommandError(
            "--init-model updates a saved model with new battles: add --partial (a fit on "
            "all battles needs no --init-model)"
        )
    if partial and args.category_column is not None:
        raise CommandError(
            "--partial updates the overall board of the saved model: drop --category-column"
        )
    if getattr(args, "robustness", 0) < 0:
        raise CommandError(f"--robustness must be at least 0; got {args.robustness}")
    if getattr(args, "bootstrap", None) is not None and args.bootstrap < 1:
        raise CommandError(f"--bootstrap must be at least 1; got {args.bootstrap}")


def _battle_columns(args: argparse.Namespace) -> list[str]:
    columns = (
        args.model_a_column,
        args.model_b_column,
        args.winner_column,
        args.judge_column,
        args.category_column,
    )
    return [column for column in columns if column]


def _with_style(args: argparse.Namespace):
    """BATTLES as a table with the style covariates of ``--style`` added, and their names."""
    import pandas as pd

    from ..data.battles import ONE_HOT, style_covariates
    from ..data.io import read_table
    from ..data.validate import show_values

    own = set(_battle_columns(args)) | set(ONE_HOT)
    table = read_table(args.input, what="battles", id_columns=_battle_columns(args))
    pairs = [
        str(column)[:-2]
        for column in table.columns
        if str(column).endswith("_a")
        and f"{str(column)[:-2]}_b" in table.columns
        and not {column, f"{str(column)[:-2]}_b"} & own
    ]
    named = _names(args.style)
    if named:
        missing = [f for f in named if f not in pairs]
        if missing:
            raise ValueError(
                f"battles: --style {show_values(missing)} needs the columns NAME_a and NAME_b; "
                f"pairs found: {show_values(pairs) if pairs else 'none'}"
            )
        pairs = named
    elif not pairs:
        raise ValueError(
            "battles: --style found no pair of columns NAME_a, NAME_b (e.g. tokens_a, "
            "tokens_b); name covariate columns with --covariates"
        )
    for feature in pairs:
        for column in (f"{feature}_a", f"{feature}_b"):
            values = pd.to_numeric(table[column], errors="coerce")
            bad = int((~values.notna()).sum())
            if bad:
                raise ValueError(
                    f"battles: --style column {column!r} has {bad} missing or non-numeric value(s)"
                )
            table[column] = values
    clash = [f for f in pairs if f in table.columns]
    if clash:
        raise ValueError(
            f"battles: --style would add the column(s) {show_values(clash)}, which BATTLES "
            "has already; rename them"
        )
    return pd.concat([table, style_covariates(table, pairs)], axis=1), pairs


def read(args: argparse.Namespace, model) -> Inputs:
    """BATTLES as :class:`~crowdbayes.data.battles.Battles`, with the covariates asked for."""
    from ..data.battles import Battles

    if LEADERBOARD.name_of(model) is None:  # `report leaderboard --load` of another model
        raise CommandError(
            f"{args.load} holds a {type(model).__name__}, not a model of `crowdbayes leaderboard`"
        )
    _check_updates(args)
    if vars(args).get("workers_out") and args.judge_column is None:
        raise CommandError("--workers-out writes the judges' table: give --judge-column")
    table, covariates = args.input, _names(args.covariates)
    if dask_backend(args):
        return read_on_dask(args, covariates)
    if args.style is not None:
        table, covariates = _with_style(args)
    data = Battles(table, **battle_columns(args), covariates=covariates or None)
    return Inputs(data, str(args.input))


# ------------------------------------------------------------------------------ fit
def fit(model, inputs: Inputs, args: argparse.Namespace):
    """Fit the board (or, with ``--partial``, update the saved one), then the board of each
    category; ``--bootstrap`` (of ``fit`` or ``report``) sets the replicates."""
    if getattr(args, "bootstrap", None) is not None:
        model.set_params(n_bootstrap=args.bootstrap).check_params()
    model.set_params(**_judge_settings(args))
    if getattr(args, "partial", False):
        return _update(model, inputs, args)
    model = model.fit(inputs.data)
    boards = {}
    if inputs.data.categories is not None:  # the report package only when needed (import time)
        from ..report._boards import category_boards

        boards = category_boards(model, inputs.data)
    args.category_boards = boards
    inputs.report["categories"] = boards
    return model


def _update(model, inputs: Inputs, args: argparse.Namespace):
    """The saved model of ``--init-model`` with the new battles added; the options given on
    the command line (and ``--seed``, ``--bootstrap``, progress) apply to the refit."""
    from ..base import load

    saved = load(args.init_model)
    if LEADERBOARD.name_of(saved) is None:
        raise CommandError(
            f"--init-model {args.init_model} holds a {type(saved).__name__}, not a model of "
            "`crowdbayes leaderboard`"
        )
    params = model.get_params()
    given = [LEADERBOARD.options[flag].param for flag in LEADERBOARD.given(args)]
    settings = {name: params[name] for name in (*given, "random_state", "progress")}
    if getattr(args, "bootstrap", None) is not None:
        settings["n_bootstrap"] = args.bootstrap
    settings.update(_judge_settings(args))
    saved.set_params(**settings).check_params()
    args.category_boards = {}
    return saved.partial_fit(inputs.data)


def _judge_settings(args: argparse.Namespace) -> dict:
    """The judge model's parameters given on the command line."""
    given = {"judge_noise": args.judge_noise, "judge_threshold": args.judge_threshold}
    return {name: value for name, value in given.items() if value is not None}


def item_table(model, args: argparse.Namespace):
    """The board (``board_``); with categories, every category's board below the overall one,
    a ``category`` column first."""
    boards = getattr(args, "category_boards", None) or {}
    if not boards:  # the board alone: no need to import the report package
        return model.board_.rename_axis("model")
    from ..report._boards import board_table

    return board_table(model, boards, overall=OVERALL)


# ------------------------------------------------------------------------------ summary
def summary(model, inputs: Inputs, seconds: float, args: argparse.Namespace, table) -> list[str]:
    data = inputs.data
    facts = model.diagnostics()
    status = ""
    if "iterations" in facts:
        status = f", {facts['iterations']} iterations" + (
            "" if facts.get("converged", True) else " (not converged)"
        )
    who = [f"{data.n_models} models"]
    if data.judge_ids is not None:
        who.append(f"{len(data.judge_ids)} judges")
    if data.categories is not None:
        who.append(f"{len(data.categories)} categories")
    ties = f"{data.n_ties / data.n_battles:.1%} ties"
    battles = f"{data.n_battles:,} battles of {', '.join(who)} ({ties})"
    if getattr(args, "partial", False):
        battles = (
            f"{model.n_battles_:,} battles of {len(model.board_)} models, "
            f"{data.n_battles:,} of them new ({ties})"
        )
    lines = [
        f"{type(model).__name__}: {battles}; fit in {seconds:.2f} s{status}",
        *_board_lines(model),
    ]
    k = getattr(args, "robustness", 0)
    if k:
        lines += _robustness_lines(model, k)
    boards = getattr(args, "category_boards", None) or {}
    if boards:
        best = [f"{category}: {board.board_.index[0]}" for category, board in boards.items()]
        lines.append(f"first by category: {'; '.join(best)}")
    if model.judges_ is not None:
        lines += _judge_lines(model)
    return lines


def judge_table(model):
    """The judges' table of ``--workers-out`` (``judges_``, a judge per row)."""
    return model.judges_


def _judge_lines(model) -> list[str]:
    """The most and least reliable judges, and those flagged."""
    import pandas as pd

    from ..report._leaderboard import judge_summary, shown_judges

    params = model.get_params()
    judges = model.judges_
    shown = shown_judges(judges, _JUDGES)
    level = f"{params['credible_level']:.0%}"
    table = pd.DataFrame(
        {
            f"reliability [{level}]": [
                f"{r:.3f} [{lo:.3f}, {hi:.3f}]"
                for r, lo, hi in zip(
                    shown["reliability"], shown["lower"], shown["upper"], strict=True
                )
            ],
            "agreement": shown["agreement"].map("{:.3f}".format),
            "battles": shown["battles"].map("{:,}".format),
            "flagged": shown["flagged"].map({True: "yes", False: ""}),
        },
        index=shown.index,
    )
    return [judge_summary(model), table.to_string()]


def _number(params: dict):
    """How the board's scores are written: Elo points whole, logits to 3 decimals."""
    return "{:.0f}".format if params["scale"] == "elo" else "{:.3f}".format


def _board_lines(model) -> list[str]:
    """The scale, the ties, the top of the board, the style coefficients, the sparse models."""
    import pandas as pd

    params = model.get_params()
    board, number = model.board_, _number(params)
    level = f"{params['credible_level']:.0%}"
    where = "centred" if params["anchor"] is None else f"{params['anchor']} at its origin"
    if params["tie_model"] == "davidson":
        ties = f"Davidson ties, tie strength {model.tie_strength_:.3f}"
    else:
        ties = "a tie counted as half a win for each side"
    shown = board.head(_TOP)
    top = pd.DataFrame(
        {
            "rank": shown["rank"],
            f"score [{level}]": [
                f"{number(s)} [{number(lo)}, {number(hi)}]"
                for s, lo, hi in zip(shown["score"], shown["lower"], shown["upper"], strict=True)
            ],
            "rank range": [
                f"{lo}-{hi}" if lo != hi else f"{lo}"
                for lo, hi in zip(shown["rank_lower"], shown["rank_upper"], strict=True)
            ],
            "P(rank 1)": shown["p_rank1"].map("{:.2f}".format),
            "battles": shown["battles"].map("{:,}".format),
            "win rate": shown["win_rate"].map("{:.3f}".format),
        },
        index=shown.index,
    )
    scale = "Elo points" if params["scale"] == "elo" else "logits"
    lines = [
        f"scores in {scale} ({where}), {level} intervals by {params['interval']}; {ties}",
        f"top {len(shown)} of {len(board)}:\n{top.to_string()}",
    ]
    style = model.style_
    if len(style):
        coefs = "; ".join(
            f"{name} {number(c)} [{number(lo)}, {number(hi)}]"
            for name, c, lo, hi in zip(
                style.index, style["coef"], style["lower"], style["upper"], strict=True
            )
        )
        lines.append(f"style coefficients ({level} intervals): {coefs}")
    sparse = model.sparse_models_
    if sparse:
        hint = "" if params["prior_scale"] else "; --prior-scale shrinks them"
        names = ", ".join(map(str, sparse[:10])) + (" ..." if len(sparse) > 10 else "")
        lines.append(
            f"sparse: {len(sparse)} model(s) with fewer than {params['min_battles']} battles "
            f"(wide intervals{hint}): {names}"
        )
    return lines


def _robustness_lines(model, k: int) -> list[str]:
    """How few battles decide each of the top ``k`` places (``model.robustness``)."""
    import math

    table = model.robustness(top_k=k)
    total = model.n_battles_
    lines = []
    for row in table.itertuples(index=False):
        pair = f"#{row.rank} {row.model_above} and #{row.rank + 1} {row.model_below}"
        flip = row.battles_to_flip
        if flip is None or not math.isfinite(flip):
            lines.append(f"robustness: no set of battles found whose removal swaps {pair}")
            continue
        how = "confirmed by a refit"
        if not row.verified:
            how = "influence estimate; a refit did not confirm it"
        lines.append(
            f"robustness: removing {int(flip):,} of {total:,} battles ({flip / total:.3%}) "
            f"swaps {pair} ({how})"
        )
    return lines


# ------------------------------------------------------------------------------ predict
def add_predict_options(parser: Parser) -> None:
    parser.add_argument("--pairs", required=True, help="model_a,model_b table of model ids")
    parser.add_argument("--model-a-column", default="model_a", help="default model_a")
    parser.add_argument("--model-b-column", default="model_b", help="default model_b")


def predict(model, args: argparse.Namespace):
    """PAIRS with the probability of each outcome at the fitted scores: ``p_a_wins``,
    ``p_b_wins``, ``p_tie`` (0 with ``--tie-model half``, which has no tie outcome)."""
    import pandas as pd

    from ..data.validate import show_values
    from ._inputs import ids_like, read_columns

    if LEADERBOARD.name_of(model) is None:
        raise CommandError(
            f"{args.model_file} holds a {type(model).__name__}, not a model of "
            "`crowdbayes leaderboard` (use `crowdbayes prefs predict`)"
        )
    a, b = args.model_a_column, args.model_b_column
    pairs = read_columns(args.pairs, "pairs", (a, b), ids=(a, b))
    known = model.item_ids_
    sides = [ids_like(pairs[column], known) for column in (a, b)]
    for column, ids in zip((a, b), sides, strict=True):
        unknown = pd.Index(ids).difference(known)
        if len(unknown):
            raise ValueError(
                f"pairs: {len(unknown)} id(s) of column {column!r} are not on the board of "
                f"{args.model_file}: {show_values(unknown)}"
            )
    p = model.predict_outcome_proba(*sides)
    return pairs.assign(
        p_a_wins=p["left"].to_numpy(), p_b_wins=p["right"].to_numpy(), p_tie=p["tie"].to_numpy()
    )


FAMILY = Family(
    name="leaderboard",
    judgment="pairs",
    help="a leaderboard from pairwise battles (arena votes): scores, ranks, intervals",
    table=LEADERBOARD,
    input_metavar="BATTLES",
    input_help="model_a,model_b,winner table (winner: model_a, model_b, tie, 'tie (bothbad)'),"
    " or one-hot winner_model_a,winner_model_b,winner_tie",
    add_input_options=add_input_options,
    read=read,
    item_table=item_table,
    summary=summary,
    fit=fit,
    add_fit_options=add_fit_options,
    worker_table=judge_table,
    save_model_replaces="init_model",  # the daily update: --init-model M --save-model M
    predict=PredictVerb(
        help="P(a wins), P(b wins) and P(tie) of model pairs from a saved board",
        add_options=add_predict_options,
        predict=predict,
    ),
)


def register(commands) -> None:
    """Add the ``leaderboard`` command to the top-level sub-parsers."""
    FAMILY.register(commands)
