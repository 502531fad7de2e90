r"""The rankings family of the defaults report: ``rank fit`` at its defaults (``pl-vi``:
:class:`~crowdbayes.models.plackett_luce.PlackettLuceVI` with the command line's settings,
``eta="auto"`` and ``item_effects="auto"``: log s_i = θᵀx_i + u_i, u_i ~ N(0, σ²)) against the
Borda score, on simulated Plackett–Luce data (``tests/pl_simulate.py``: item utilities
:math:`\theta^\top x_i`, queries of 4 random items, the top choice or the full order).

**Borda score.** In a query of :math:`m` items an item at position :math:`r` (1 = best) gets
:math:`(m - r)/(m - 1)`; the members a query leaves unranked share the mean of the points of
the positions left. An item's score is its mean over the queries it appears in (a share in
[0, 1]; for top choices, its win share).

Scenarios: the model's story (top choices; full rankings with few queries) and a misspecified
one where the utility uses features the model is not given (two of five hidden). The unit is
an item, scored by the share of its pairs with other items that the method orders as the true
utilities do (a tie counts half); pooled over the seeds.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))  # pl_simulate

from pl_simulate import simulate_tables  # noqa: E402

__all__ = ["RANK_SCENARIOS", "borda", "draw_rankings", "fit_pl_vi"]

#: name → (simulate_tables options, hidden feature columns)
RANK_SCENARIOS = {
    "top choice of 4, 60 items, 400 queries (the model's story)": ({}, 0),
    "full rankings of 4, 60 items, 150 queries": ({"n_ranked": 4, "n_queries": 150}, 0),
    "2 of 5 features hidden from the model, top choice of 4, 400 queries": ({}, 2),
}


def borda(table: pd.DataFrame) -> pd.Series:
    """Each item's mean Borda share over the queries it appears in (module docstring)."""
    size = table.groupby("query")["item"].transform("size").to_numpy(float)
    rank = table["rank"].to_numpy(float)
    ranked = table.groupby("query")["rank"].transform("count").to_numpy(float)
    # unranked members share the positions ranked + 1 .. m: their mean position
    position = np.where(np.isnan(rank), (ranked + 1 + size) / 2, rank)
    points = (size - position) / np.maximum(size - 1, 1)
    return pd.Series(points, index=table["item"].to_numpy()).groupby(level=0).mean()


def draw_rankings(name: str, seed: int):
    """``(table, features given to the model, true utility per item)``."""
    options, hidden = RANK_SCENARIOS[name]
    table, features, theta = simulate_tables(seed, **options)
    truth = pd.Series(features.to_numpy() @ theta, index=features.index)
    return table, features.iloc[:, : features.shape[1] - hidden], truth


def fit_pl_vi(table: pd.DataFrame, features: pd.DataFrame, **options) -> tuple[pd.Series, float]:
    """Posterior mean utilities of the items (``predict_utility``) by ``pl-vi`` at the command
    line's defaults (its catalogue entry's), ``options`` overriding them."""
    from crowdbayes._catalogue import model_entries

    entry = next(e for e in model_entries("rank") if e.name == "pl-vi")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = entry.load_class()(**{**entry.cli_defaults, **options}).fit(table, features)
        seconds = time.perf_counter() - start
    return model.predict_utility()["mean"], seconds
