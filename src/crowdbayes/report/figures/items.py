"""Figures of a fitted Plackett–Luce or GP preference model: the ranked items with their
intervals, and the feature weights or length-scales."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._mpl import color, interval_rows, log_axis, new_figure, styled
from .._results import item_scores

__all__ = ["feature_weights", "ranked_items"]


def _short(text: object, width: int = 28) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


@styled
def ranked_items(model, data=None, *, top: int = 25, level: float = 0.9):
    """The best items with their credible intervals, best at the top.

    Each row is an item's posterior mean score (Plackett–Luce log-score or GP utility) with
    its central ``level`` interval; items whose intervals overlap cannot be told apart by the
    data. The right panel places every item's score against its posterior sd.

    Parameters
    ----------
    model : a fitted model of item scores (rankings or pairwise comparisons)
    data : optional
        Accepted for compatibility; the model's fitted items are shown.
    top : int
        Items shown in the ranked panel.
    level : float

    Returns
    -------
    matplotlib.figure.Figure
    """
    scores = item_scores(model, level=level)
    shown = scores.head(top).iloc[::-1]
    figure, (ranked, spread) = new_figure(
        9.0, max(3.0, 0.17 * len(shown) + 1.2), ncols=2, width_ratios=[1.5, 1]
    )
    interval_rows(
        ranked, shown["mean"], shown["lower"], shown["upper"], tint=color(0), bars=color(4)
    )
    positions = np.arange(len(shown), 0, -1)
    names = [f"{p}. {_short(item)}" for p, item in zip(positions, shown.index, strict=True)]
    ranked.set_yticks(np.arange(len(shown)), names, fontsize=7)
    kind = "log-score" if model.tags.judgment == "rankings" else "utility"
    ranked.set_xlabel(f"{kind} (posterior mean, {level:.0%} interval)")
    ranked.grid(axis="x", alpha=0.3)
    ranked.set_title(f"the {len(shown)} best of {len(scores):,} items", fontsize=9)
    spread.scatter(scores["mean"], scores["sd"], s=6, alpha=0.4, color=color(2), edgecolors="none")
    spread.scatter(shown["mean"], shown["sd"], s=10, color=color(0), label=f"top {len(shown)}")
    spread.set_xlabel(f"{kind} (posterior mean)")
    spread.set_ylabel("posterior sd")
    spread.grid(alpha=0.3)
    spread.legend(frameon=False)
    spread.set_title(f"all {len(scores):,} items", fontsize=9)
    figure.suptitle(f"Ranked items: {type(model).__name__}")
    return figure


def _weights(model, level: float) -> tuple[pd.DataFrame, str]:
    if model.tags.judgment == "rankings" and model.tags.features != "none":
        table = model.coef_interval(level)
        table = table.reindex(table["mean"].abs().sort_values(ascending=False).index)
        return table, "weight"
    lengthscale = model.lengthscale_ if model.tags.judgment == "pairs" else None
    if lengthscale is None:
        raise ValueError(f"{type(model).__name__} has no feature weights or length-scales")
    return lengthscale.sort_values().to_frame("lengthscale"), "lengthscale"


@styled
def feature_weights(model, *, top: int = 25, level: float = 0.9):
    """What the model learnt about the item features.

    Plackett–Luce with features: each feature's weight θ with its central ``level`` interval
    (a weight whose interval excludes 0 moves choices; the ``top`` largest in size are
    shown). GP preference models: each feature's length-scale (the ``top`` shortest; a short
    length-scale means the utility changes quickly along that feature, i.e. it matters).

    Raises
    ------
    ValueError
        If the model has neither (feature-less models).

    Returns
    -------
    matplotlib.figure.Figure
    """
    model.check_is_fitted()
    table, kind = _weights(model, level)
    shown = table.head(top).iloc[::-1]
    figure, ax = new_figure(6.8, max(2.6, 0.2 * len(shown) + 1.0))
    y = np.arange(len(shown))
    names = [_short(name, 32) for name in shown.index]
    if kind == "weight":
        interval_rows(
            ax, shown["mean"], shown["lower"], shown["upper"], tint=color(0), bars=color(4)
        )
        ax.axvline(0, color="grey", lw=1)
        ax.set_xlabel(f"weight θ (posterior mean, {level:.0%} interval)")
        title = f"Feature weights: {len(shown)} of {len(table)} features, largest first"
    else:
        interval_rows(ax, shown["lengthscale"], tint=color(1))
        log_axis(ax)
        ax.set_xlabel("length-scale (log scale; shorter = more relevant)")
        title = f"Kernel length-scales: the {len(shown)} shortest of {len(table)} features"
    ax.set_yticks(y, names, fontsize=7)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title)
    return figure
