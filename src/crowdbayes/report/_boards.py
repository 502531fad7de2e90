"""The boards of a leaderboard by category, and the one table that holds them all; shared by
``crowdbayes leaderboard fit`` and the leaderboard report (no matplotlib here).

A board is a fitted :class:`~crowdbayes.models.comparisons.Leaderboard`; it is read through its
public results only (``board_``, ``sparse_models_``, ``get_params``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..base import clone
from ..exceptions import DataWarning

__all__ = ["board_table", "category_boards"]


def category_boards(model, data) -> dict:
    """One board per category of ``data`` (a :class:`~crowdbayes.data.battles.Battles` with
    categories), fitted with ``model``'s settings on that category's battles; ``{}`` without
    categories.

    A category in which the ``anchor`` model never plays gets centred scores instead; the
    sparse models of every category board are named in one warning (not one per board); a
    category whose board cannot be fitted (its battles split into groups that never met,
    without a prior) is left out with a warning.
    """
    if data.categories is None:
        return {}
    params = model.get_params()
    boards, unanchored, sparse, failed = {}, [], {}, []
    for category in data.categories:
        subset = data.subset(category)
        board = clone(model)
        if params["anchor"] is not None and params["anchor"] not in subset.model_ids:
            board.set_params(anchor=None)
            unanchored.append(category)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)  # the sparse models: said once below
            try:
                boards[category] = board.fit(subset)
            except (ValueError, np.linalg.LinAlgError) as err:  # e.g. battles in two groups
                failed.append(f"{category} ({err})")
                continue
        if boards[category].sparse_models_:
            sparse[category] = len(boards[category].sparse_models_)
    if failed:
        warnings.warn(
            f"categories: no board for {_some(failed, 3)}; the other boards are written",
            DataWarning,
            stacklevel=2,
        )
    if unanchored:
        warnings.warn(
            f"categories: the anchor {params['anchor']!r} plays no battle of "
            f"{_some(unanchored)}; their scores are centred instead",
            DataWarning,
            stacklevel=2,
        )
    if sparse:
        shown = _some([f"{category} ({n})" for category, n in sparse.items()])
        warnings.warn(
            f"categories: models with fewer than {params['min_battles']} battles in "
            f"{len(sparse)} of {len(boards)} category boards: {shown}",
            DataWarning,
            stacklevel=2,
        )
    return boards


def _some(values: list, limit: int = 8) -> str:
    shown = ", ".join(map(str, values[:limit]))
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def board_table(model, boards: dict, *, overall: str = "(all)") -> pd.DataFrame:
    """``model``'s board indexed by model; with category ``boards``, every board in one table
    indexed by ``(category, model)``, the overall board first under ``overall``."""
    board = model.board_.rename_axis("model")
    if not boards:
        return board
    if overall in boards:
        raise ValueError(
            f"categories: a category is named {overall!r}, the name of the overall board; rename it"
        )
    frames = [board, *(b.board_.rename_axis("model") for b in boards.values())]
    return pd.concat(frames, keys=[overall, *boards], names=["category", "model"])
