"""Simulated choices among sets of items with features, and candidate sets from rows (the
``rank next`` tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdbayes.active.rankings import ChoiceSets


def simulated(n_items=30, n_sets=60, size=3, seed=0):
    """Items with two features, sets of ``size`` drawn at random, top-1 choices drawn from
    Plackett–Luce with θ = (1.5, −1)."""
    rng = np.random.default_rng(seed)
    items = pd.DataFrame(
        rng.normal(size=(n_items, 2)),
        columns=["a", "b"],
        index=pd.Index([f"i{k}" for k in range(n_items)], name="item"),
    )
    utility = items.to_numpy() @ np.array([1.5, -1.0])
    rows = []
    for q in range(n_sets):
        members = rng.choice(n_items, size, replace=False)
        p = np.exp(utility[members] - utility[members].max())
        chosen = members[rng.choice(size, p=p / p.sum())]
        rows += [(f"q{q}", f"i{m}", 1.0 if m == chosen else np.nan) for m in members]
    return pd.DataFrame(rows, columns=["query", "item", "rank"]), items


def sets_of(rows):
    table = pd.DataFrame(rows, columns=["query", "item"])
    return ChoiceSets.from_table(table, set_column="query", item_column="item")
