"""Seeded Plackett–Luce data with known feature weights, for the tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdbayes.data.rankings import Rankings


def simulate_rankings(seed: int, **options) -> tuple[Rankings, np.ndarray]:
    """:func:`simulate_tables` as a :class:`Rankings` with features, and the true θ."""
    table, features, theta = simulate_tables(seed, **options)
    return Rankings(table, features), theta


def simulate_tables(
    seed: int,
    *,
    n_features: int = 5,
    n_items: int = 60,
    n_queries: int = 400,
    set_size: int = 4,
    n_ranked: int = 1,
    scale: float = 1.0,
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """Long table ``query, item, rank``, item features and θ: queries of ``set_size`` random
    items, the top ``n_ranked`` ranked by Plackett–Luce with
    s_i = exp(θᵀx_i) (Gumbel-max sampling), θ ~ N(0, scale² I)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_items, n_features))
    theta = rng.normal(size=n_features) * scale
    queries, items, ranks = [], [], []
    for q in range(n_queries):
        members = rng.choice(n_items, set_size, replace=False)
        order = members[np.argsort(-(X[members] @ theta + rng.gumbel(size=set_size)))]
        queries += [q] * set_size
        items += order.tolist()
        ranks += [float(r + 1) if r < n_ranked else np.nan for r in range(set_size)]
    table = pd.DataFrame({"query": queries, "item": items, "rank": ranks})
    features = pd.DataFrame(X, columns=[f"x{k}" for k in range(n_features)])
    return table, features, theta
