"""Figures of a fitted leaderboard (:class:`~crowdbayes.models.comparisons.Leaderboard`): the
scores and rank ranges of the best models, who beats whom, the probability of each rank, and
the style coefficients. Each reads the model's public results only (``board_``,
``win_rate_matrix()``, ``rank_probabilities()``, ``style_``)."""

from __future__ import annotations

import numpy as np

from .._mpl import color, interval_rows, new_figure, styled

__all__ = ["board_scores", "rank_probabilities", "style_coefficients", "win_rates"]


def _short(text: object, width: int = 24) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _scale_words(model) -> str:
    params = model.get_params()
    scale = "Elo points" if params["scale"] == "elo" else "logit"
    where = "centred" if params["anchor"] is None else f"{_short(params['anchor'])} = origin"
    return f"score ({scale}, {where})"


@styled
def board_scores(model, *, top: int = 40):
    """The ``top`` models of the board, best at the top: left, each score with its interval
    (``board_``'s ``lower``/``upper``, by the model's ``interval`` method); right, the range
    of ranks each model takes in the draws (``rank_lower``–``rank_upper``) around its rank.

    Models whose intervals overlap cannot be ordered by the battles; a long rank range says
    the same on the scale users read.

    Returns
    -------
    matplotlib.figure.Figure
    """
    model.check_is_fitted()
    board = model.board_
    shown = board.head(top).iloc[::-1]
    height = max(2.6, 0.19 * len(shown) + 1.3)
    figure, (scores, ranks) = new_figure(9.5, height, ncols=2, width_ratios=[1.6, 1], sharey=True)
    interval_rows(
        scores, shown["score"], shown["lower"], shown["upper"], tint=color(0), bars=color(4)
    )
    names = [f"{r}. {_short(m)}" for r, m in zip(shown["rank"], shown.index, strict=True)]
    scores.set_yticks(np.arange(len(shown)), names, fontsize=7)
    level = model.get_params()["credible_level"]
    scores.set_xlabel(f"{_scale_words(model)}, {level:.0%} interval")
    scores.grid(axis="x", alpha=0.3)
    scores.set_title(f"the {len(shown)} best of {len(board)} models", fontsize=9)
    rows = np.arange(len(shown))
    low, high = shown["rank_lower"].to_numpy(), shown["rank_upper"].to_numpy()
    ranks.hlines(rows, low - 0.3, high + 0.3, color=color(4), lw=4, alpha=0.6)
    ranks.plot(shown["rank"], rows, "o", color=color(0), ms=3.5)
    ranks.set_xlim(0.3, max(float(high.max()) + 0.7, 2.0))
    ranks.invert_xaxis()
    ranks.set_xlabel(f"rank ({level:.0%} range; 1 = best)")
    ranks.grid(axis="x", alpha=0.3)
    ranks.tick_params(axis="y", left=False)
    ranks.set_title("rank ranges", fontsize=9)
    figure.suptitle("Leaderboard: scores and ranks")
    return figure


@styled
def win_rates(model, *, top: int = 30):
    """How often each of the ``top`` models (rows, board order) beat each other (columns) in
    their battles, a tie counting half (``win_rate_matrix()``); grey where two never met.

    Returns
    -------
    matplotlib.figure.Figure
    """
    model.check_is_fitted()
    matrix = model.win_rate_matrix(top=top)
    n = len(matrix)
    side = max(3.4, 0.24 * n + 2.2)
    figure, ax = new_figure(side + 1.0, side)
    rates = matrix.to_numpy(dtype=np.float64)
    from matplotlib import colormaps

    cmap = colormaps["RdBu"].with_extremes(bad="#d9d9d9")  # grey: never met
    image = ax.imshow(
        np.ma.masked_invalid(rates), vmin=0, vmax=1, cmap=cmap, interpolation="nearest"
    )
    names = [_short(m, 18) for m in matrix.index]
    size = 6 if n > 15 else 7
    ax.set_xticks(np.arange(n), names, rotation=90, fontsize=size)
    ax.set_yticks(np.arange(n), names, fontsize=size)
    ax.set_xlabel("opponent")
    ax.set_ylabel("model (board order)")
    if n <= 12:  # few enough to write each share in its cell
        for i, j in zip(*np.nonzero(np.isfinite(rates)), strict=True):
            shade = "white" if abs(rates[i, j] - 0.5) > 0.3 else "black"
            ax.text(j, i, f"{rates[i, j]:.2f}", ha="center", va="center", fontsize=6, color=shade)
    figure.colorbar(image, ax=ax, shrink=0.8, label="share of battles the row model won")
    ax.set_title(f"Win rates among the {n} best of {len(model.board_)} models")
    return figure


@styled
def rank_probabilities(model, *, top: int = 20):
    """The probability of each rank (columns, 1 = best) for the ``top`` models of the board
    (rows), from the draws of the scores (``rank_probabilities()``): a dark cell alone in its
    row is a settled rank; a row smeared over several columns is a model the battles cannot
    place.

    Returns
    -------
    matplotlib.figure.Figure
    """
    model.check_is_fitted()
    table = model.rank_probabilities(top=top)
    ranks = min(len(table.columns), max(top, int(model.board_["rank_upper"].head(top).max())))
    table = table.iloc[:, :ranks]
    figure, ax = new_figure(max(4.0, 0.26 * ranks + 2.6), max(2.6, 0.22 * len(table) + 1.3))
    image = ax.imshow(
        table.to_numpy(dtype=np.float64),
        vmin=0,
        vmax=1,
        cmap="Blues",
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_yticks(np.arange(len(table)), [_short(m) for m in table.index], fontsize=7)
    ax.set_xticks(np.arange(ranks), [str(r) for r in table.columns], fontsize=6)
    ax.set_xlabel("rank")
    figure.colorbar(image, ax=ax, shrink=0.8, label="P(rank)")
    ax.set_title(f"Rank probabilities of the {len(table)} best models")
    return figure


@styled
def style_coefficients(model):
    """Each covariate's coefficient with its interval (``style_``): how much a battle's odds
    move per standard deviation of the side difference, on the board's scale; an interval
    that excludes 0 means the style sways the votes.

    Raises
    ------
    ValueError
        If the board was fitted without covariates.

    Returns
    -------
    matplotlib.figure.Figure
    """
    model.check_is_fitted()
    style = model.style_
    if len(style) == 0:
        raise ValueError("the board was fitted without covariates (--covariates or --style)")
    shown = style.iloc[::-1]
    figure, ax = new_figure(6.4, max(2.0, 0.3 * len(shown) + 1.1))
    interval_rows(ax, shown["coef"], shown["lower"], shown["upper"], tint=color(5), bars=color(1))
    ax.axvline(0, color="grey", lw=1)
    ax.set_yticks(np.arange(len(shown)), [_short(n, 30) for n in shown.index], fontsize=8)
    level = model.get_params()["credible_level"]
    ax.set_xlabel(f"coefficient per sd of the difference ({level:.0%} interval)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("Style coefficients")
    return figure
