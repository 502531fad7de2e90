"""The sections of a leaderboard's report (:func:`crowdbayes.report.build` on a fitted
:class:`~crowdbayes.models.comparisons.Leaderboard` and its
:class:`~crowdbayes.data.battles.Battles`): the battles; the board (a forest plot of the scores
with their intervals and rank ranges, the top of the table, the whole board as CSV); the
intervals of the three methods side by side; the win-rate matrix and the rank probabilities;
how few battles decide the top places; the style coefficients; the judges' reliabilities (when
the battles name their judges); the boards of each category; and the pairs whose order is least
certain (what to ask next).

The model is read through its public results only: ``board_``, ``style_``, ``judges_``,
``sparse_models_``, ``tie_strength_``, ``utility_``, ``intervals()``, ``robustness()``,
``get_params()`` (and the figures' ``win_rate_matrix()``, ``rank_probabilities()``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from . import figures
from ._boards import board_table, category_boards
from ._html import Page, format_value
from ._words import fit_facts, spread

__all__ = ["judge_summary", "leaderboard_report", "shown_judges", "summary_rows"]

#: rows of the board shown (the CSV has every model)
BOARD_ROWS = 30
#: models compared across interval methods, adjacent pairs checked for robustness
METHOD_ROWS, ROBUST_PAIRS = 10, 5
#: the interval methods, in the order shown
METHODS = ("laplace", "sandwich", "bootstrap")
#: judges shown at each end of the judges' table (the CSV has every judge)
JUDGE_ROWS = 10


def _scale(model) -> str:
    params = model.get_params()
    scale = "Elo points" if params["scale"] == "elo" else "logits"
    where = "centred" if params["anchor"] is None else f"{params['anchor']} at the origin"
    return f"{scale} ({where})"


def _number(model):
    return "{:.0f}".format if model.get_params()["scale"] == "elo" else "{:.3f}".format


def _interval_text(model, frame: pd.DataFrame) -> list[str]:
    number = _number(model)
    return [
        f"{number(s)} [{number(lo)}, {number(hi)}]"
        for s, lo, hi in zip(frame["score"], frame["lower"], frame["upper"], strict=True)
    ]


def _ties(model) -> str:
    if model.get_params()["tie_model"] == "davidson":
        return f"Davidson's model, tie strength ν = {model.tie_strength_:.3f}"
    return "a tie counted as half a win for each side (the arena's convention)"


def summary_rows(model, data) -> list[tuple[str, Any]]:
    """What the first screen says of a board: its size, its first model and how sure that is."""
    board = model.board_
    low, high = int(board["rank_lower"].iloc[0]), int(board["rank_upper"].iloc[0])
    ranks = f"rank {low}" if low == high else f"ranks {low}-{high}"
    return [
        ("board", f"{len(board):,} models from {data.n_battles:,} battles"),
        (
            "first",
            f"{board.index[0]}: P(rank 1) {board['p_rank1'].iloc[0]:.2f}, {ranks} in the "
            f"{model.get_params()['credible_level']:.0%} range",
        ),
    ]


def leaderboard_report(
    page: Page, model, data, *, eval_gold=None, n_boot=None, seed=0, categories=None
) -> None:
    """Append the leaderboard's sections to ``page`` (module docstring); ``categories``: the
    boards of each category already fitted (None: fitted here when ``data`` has categories).
    ``eval_gold``, ``n_boot`` and ``seed`` are the other reports' settings (unused here: the
    model holds its bootstrap's replicates and seed)."""
    _battle_facts(page, model, data)
    _board(page, model)
    _methods(page, model)
    _uncertainty(page, model)
    _robustness(page, model)
    _style(page, model)
    if model.judges_ is not None:
        _judges(page, model)
    if data.categories is not None:
        boards = category_boards(model, data) if categories is None else categories
        _categories(page, model, boards)
    _next(page, model, data)


# ------------------------------------------------------------------------------ sections
def _battle_facts(page: Page, model, data) -> None:
    section = page.section("data", "Battles")
    per_model = model.board_["battles"].to_numpy()
    covariates = list(data.covariate_names)
    rows = [
        ("battles", data.n_battles),
        ("models", data.n_models),
        ("ties", f"{data.n_ties:,} ({data.n_ties / data.n_battles:.1%})"),
        ("battles per model", spread(per_model)),
        ("distinct (pair, outcome, covariates) rows fitted", data.counts().n_rows),
        ("judges", "none given" if data.judge_ids is None else len(data.judge_ids)),
        ("categories", "none given" if data.categories is None else len(data.categories)),
        ("covariates", ", ".join(covariates) if covariates else "none"),
    ]
    sparse = model.sparse_models_
    if sparse:
        names = ", ".join(map(str, sparse[:12])) + (" ..." if len(sparse) > 12 else "")
        rows.append(
            (
                f"sparse models (fewer than {model.get_params()['min_battles']} battles)",
                f"{len(sparse)}: {names}",
            )
        )
    section.facts(rows)


def _board(page: Page, model) -> None:
    section = page.section("model", "Leaderboard")
    params = model.get_params()
    rows = fit_facts(model)
    rows += [
        ("scores", _scale(model)),
        ("ties", _ties(model)),
        ("intervals", f"{params['credible_level']:.0%}, by {params['interval']}"),
    ]
    section.facts(rows)
    section.figure(
        "board_scores",
        lambda: figures.board_scores(model),
        "Scores and rank ranges",
        "Each dot is a model's score with its interval (bars), best at the top; models whose "
        "bars overlap cannot be told apart by the battles. Right: the range of ranks the model "
        "takes under the uncertainty of the scores.",
    )
    board = model.board_.head(BOARD_ROWS)
    level = f"{params['credible_level']:.0%}"
    shown = pd.DataFrame(
        {
            "rank": board["rank"],
            f"score [{level} interval]": _interval_text(model, board),
            "rank range": [
                f"{lo}-{hi}" if lo != hi else str(lo)
                for lo, hi in zip(board["rank_lower"], board["rank_upper"], strict=True)
            ],
            "P(rank 1)": board["p_rank1"],
            "battles": board["battles"],
            "win rate": board["win_rate"],
        },
        index=board.index.rename("model"),
    )
    section.table(
        shown,
        "win rate: the share of its battles a model won, a tie counting half. Click a column "
        "heading to sort by it.",
        max_rows=BOARD_ROWS,
        sortable=True,
    )
    csv = board_table(model, {}).to_csv(float_format="%.6g", lineterminator="\n")
    section.download("board.csv", csv, f"Download the whole board ({len(model.board_):,} models)")


def _methods(page: Page, model) -> None:
    """The intervals of the best models by each method, side by side."""
    section = page.section("intervals", "Intervals by three methods")
    params = model.get_params()
    top = model.board_.index[:METHOD_ROWS]
    columns, widths, notes = {}, {}, []
    for method in METHODS:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                frame = model.intervals(method).loc[top]
        except (ValueError, np.linalg.LinAlgError) as err:  # e.g. no replicate with a mode
            notes.append(("warning", f"{method}: not computed ({err})"))
            continue
        notes += [("warning", f"{method}: {note.message}") for note in caught]
        columns[method] = _interval_text(model, frame)
        widths[method] = (frame["upper"] - frame["lower"]).to_numpy()
    table = pd.DataFrame(columns, index=top.rename("model"))
    for method, width in widths.items():
        table[f"width {method}"] = width
    section.paragraph(
        f"The {params['credible_level']:.0%} intervals of the best models by the Laplace "
        "approximation (the posterior's curvature at its mode), the sandwich estimator (robust "
        "when the Bradley-Terry model does not hold exactly: votes that depend on the prompt "
        f"or the judge) and a seeded multinomial bootstrap over the battles "
        f"({params['n_bootstrap']:,} replicates). They agree when the model fits and every "
        "model has many battles; a sandwich or bootstrap interval much wider than Laplace's "
        f"says the votes vary more than the model expects. The board uses {params['interval']}."
    )
    section.table(table, max_rows=METHOD_ROWS)
    if notes:
        section.notes(notes)


def _uncertainty(page: Page, model) -> None:
    section = page.section("uncertainty", "Who beats whom, and how sure the ranks are")
    section.figure(
        "win_rates",
        lambda: figures.win_rates(model),
        "Win rates",
        "Row model against column model: the share of their battles the row model won (red "
        "below one half, blue above; grey: they never met). The models are in board order, so "
        "the upper-right triangle should be mostly blue.",
    )
    section.figure(
        "rank_probabilities",
        lambda: figures.rank_probabilities(model),
        "Rank probabilities",
        "The probability of each rank for the best models, from draws of the scores: a single "
        "dark cell in a row is a settled place; a row spread over several ranks is a model the "
        "battles cannot place yet.",
    )


def _robustness(page: Page, model) -> None:
    section = page.section("robustness", "Robustness of the top places")
    k = min(ROBUST_PAIRS, len(model.board_) - 1)
    table = model.robustness(top_k=k)
    total = model.n_battles_
    flip = table["battles_to_flip"].to_numpy(dtype=np.float64)
    shown = pd.DataFrame(
        {
            "above": table["model_above"].to_numpy(),
            "below": table["model_below"].to_numpy(),
            "battles to flip": [format_value(int(n)) if np.isfinite(n) else "—" for n in flip],
            "share of all battles": [f"{n / total:.3%}" if np.isfinite(n) else "—" for n in flip],
            "confirmed by a refit": table["verified"].to_numpy(),
        },
        index=pd.Index(table["rank"].to_numpy(), name="ranks").map(lambda r: f"{r}-{r + 1}"),
    )
    section.paragraph(
        "For each pair of neighbours at the top: the fewest battles whose removal would swap "
        "them, found by the influence approximation (the first-order effect of dropping each "
        "battle on the score difference) and confirmed by refitting without them. A handful of "
        "battles out of many thousands means the order rests on very little (—: no set of "
        "battles found that swaps them)."
    )
    section.table(shown, max_rows=ROBUST_PAIRS)


def _style(page: Page, model) -> None:
    section = page.section("style", "Style coefficients")
    style = model.style_
    if len(style) == 0:
        section.paragraph(
            "The board was fitted without covariates. Style control (`--style`, or "
            "`--covariates` naming columns of side differences) separates how an answer looks "
            "(its length, headers, lists, bold spans) from the model's strength."
        )
        return
    section.paragraph(
        "Each covariate's coefficient: how far a battle's odds move per standard deviation of "
        "the side difference (a minus b), on the board's scale. The scores above are net of "
        "these effects: what a model would score with answers of equal style."
    )
    level = f"{model.get_params()['credible_level']:.0%}"
    shown = pd.DataFrame(
        {
            f"coefficient [{level} interval]": _interval_text(
                model, style.rename(columns={"coef": "score"})
            )
        },
        index=style.index,
    )
    section.table(shown, max_rows=len(style))
    section.figure(
        "style_coefficients",
        lambda: figures.style_coefficients(model),
        "Style coefficients",
        "An interval that excludes 0 means that style sways the votes.",
    )


def shown_judges(judges: pd.DataFrame, k: int) -> pd.DataFrame:
    """The ``k`` most and ``k`` least reliable judges (all of them when there are at most
    ``2k``), most reliable first."""
    if len(judges) <= 2 * k:
        return judges
    return pd.concat([judges.head(k), judges.tail(k)])


def judge_summary(model) -> str:
    """One line on the judges: how many, the threshold, and those flagged."""
    judges = model.judges_
    params = model.get_params()
    flagged = judges.index[judges["flagged"].to_numpy()]
    below = f"{model.judge_threshold_:g}"
    names = ", ".join(map(str, flagged[:10])) + (" ..." if len(flagged) > 10 else "")
    return (
        f"judges: {len(judges):,} rated by Crowd-BT ({params['judge_noise']} noise); "
        f"{len(flagged)} flagged (reliability below {below})" + (f": {names}" if names else "")
    )


def _judges(page: Page, model) -> None:
    section = page.section("judges", "Judges")
    judges = model.judges_
    level = f"{model.get_params()['credible_level']:.0%}"
    section.paragraph(
        "Each judge's reliability is Crowd-BT's probability that a vote follows the board's "
        "model rather than noise (the posterior mean, with its interval; the intervals are "
        "too narrow, so read the reliabilities as a ranking), and its agreement is the share "
        "of its decisive battles won by the model the board scores higher. A judge who votes "
        "at random sits near 0.5 under flip noise; an adversary near 0. "
        + judge_summary(model)
        + "."
    )
    shown = shown_judges(judges, JUDGE_ROWS)
    table = pd.DataFrame(
        {
            f"reliability [{level} interval]": [
                f"{r:.3f} [{lo:.3f}, {hi:.3f}]"
                for r, lo, hi in zip(
                    shown["reliability"], shown["lower"], shown["upper"], strict=True
                )
            ],
            "agreement": shown["agreement"],
            "battles": shown["battles"],
            "decisive": shown["decisive"],
            "flagged": shown["flagged"],
        },
        index=shown.index.rename("judge"),
    )
    section.table(table, max_rows=2 * JUDGE_ROWS, sortable=True)
    csv = judges.to_csv(float_format="%.6g", lineterminator="\n")
    section.download("judges.csv", csv, f"Download every judge ({len(judges):,})")


def _categories(page: Page, model, boards: dict) -> None:
    section = page.section("categories", "Boards by category")
    if not boards:
        section.paragraph("No category's board could be fitted: see the data checks.")
        return
    top = model.board_.index[:15]
    ranks = {"overall": model.board_["rank"].loc[top].map(str)}
    for category, board in boards.items():
        rank = board.board_["rank"].reindex(top)
        ranks[str(category)] = [str(int(r)) if np.isfinite(r) else "—" for r in rank]
    table = pd.DataFrame(ranks, index=top.rename("model"))
    section.paragraph(
        "The rank of the best models overall on each category's own board (fitted on that "
        "category's battles alone; —: no battle in the category). The first of each category: "
        + "; ".join(f"{c}: {b.board_.index[0]}" for c, b in boards.items())
        + "."
    )
    section.table(table, max_rows=len(top))
    csv = board_table(model, boards).to_csv(float_format="%.6g", lineterminator="\n")
    section.download("boards.csv", csv, "Download every category's board (CSV)")


def _next(page: Page, model, data) -> None:
    section = page.section("next", "What to ask next")
    board = model.board_.head(BOARD_ROWS)
    utility = model.utility_.reindex(board.index)
    mean, sd = utility["mean"].to_numpy(), utility["sd"].to_numpy()
    above, below = board.index[:-1], board.index[1:]
    p = norm.cdf((mean[:-1] - mean[1:]) / np.sqrt(sd[:-1] ** 2 + sd[1:] ** 2))
    table = pd.DataFrame(
        {
            "ranks": [f"{r}-{r + 1}" for r in board["rank"].to_numpy()[:-1]],
            "above": above,
            "below": below,
            "P(above is stronger)": p,
            "battles between them": _head_to_head(data, above, below),
        }
    ).sort_values("P(above is stronger)", kind="stable")
    section.paragraph(
        "Neighbours on the board whose order is least certain (the probability that the upper "
        "one is the stronger, from the scores' Laplace posterior taken independent): battles "
        "between these two, or against common opponents, settle the ranking fastest."
    )
    section.table(table.set_index("ranks").head(10), max_rows=10)


def _head_to_head(data, above: pd.Index, below: pd.Index) -> np.ndarray:
    """How many battles each pair ``(above[i], below[i])`` fought, in either order."""
    counts = data.collapsed()
    pair = counts.groupby(["model_a", "model_b"], sort=False)["count"].sum()
    found = {(a, b): n for (a, b), n in pair.items()}
    return np.array(
        [found.get((a, b), 0) + found.get((b, a), 0) for a, b in zip(above, below, strict=True)],
        dtype=np.int64,
    )
