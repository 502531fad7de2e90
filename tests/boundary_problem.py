"""A Plackett–Luce problem whose top items differ only along a feature no fitted set has
varied: the `top` and `thompson` strategies of :mod:`crowdbayes.active.rankings` must ask
about that feature first (``tests/active/test_rank_next*.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdbayes import PlackettLuceVI


def untested_feature_problem(third_feature: bool):
    """Features ``a``, ``b`` (and ``c`` when ``third_feature``): the four best items tie on
    ``a`` and differ only in ``b``, which is 0 on every item of the 60 fitted top-1 sets
    (three of items i6…i39 each); items i4 and i5 are the only others with ``b`` ≠ 0.

    Returns the model fitted with ``eta=1``, its rankings and the item table."""
    rng = np.random.default_rng(4)
    n = 40
    columns = {"a": rng.normal(size=n), "b": np.zeros(n)}
    if third_feature:
        columns["c"] = rng.normal(size=n)
    items = pd.DataFrame(columns, index=pd.Index([f"i{k}" for k in range(n)], name="item"))
    items.loc[["i0", "i1", "i2", "i3"], ["a", "b"]] = [
        [5.0, 0.3],
        [5.0, -0.3],
        [5.0, 0.2],
        [5.0, -0.2],
    ]
    items.loc[["i4", "i5"], "b"] = [1.0, -1.0]
    rows = []
    for q in range(60):
        members = rng.choice(np.arange(6, n), 3, replace=False)
        rows += [(f"q{q}", f"i{m}", 1.0 if j == 0 else np.nan) for j, m in enumerate(members)]
    rankings = pd.DataFrame(rows, columns=["query", "item", "rank"])
    model = PlackettLuceVI(eta=1.0).fit(rankings, items=items)
    return model, rankings, items
