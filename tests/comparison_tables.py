"""Small comparison tables shared by the tests of the pairwise models (tests/models/comparisons)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def tiny_table() -> pd.DataFrame:
    """Seven comparisons of three items by two workers, two of them ties."""
    return pd.DataFrame(
        {
            "worker": ["u", "v", "u", "v", "u", "v", "u"],
            "left": ["a", "b", "c", "a", "b", "c", "a"],
            "right": ["b", "c", "a", "c", "a", "b", "b"],
            "label": ["a", "b", "equal", "a", "a", "equal", "b"],
        }
    )


def random_comparisons(n_items=300, n_comparisons=3000, seed=0) -> tuple[pd.DataFrame, np.ndarray]:
    """A random comparison graph with ties (the shape on which sparse LU fills in), and the
    generator that drew it (for more draws)."""
    rng = np.random.default_rng(seed)
    left = rng.integers(0, n_items, n_comparisons)
    right = (left + rng.integers(1, n_items, n_comparisons)) % n_items
    s = rng.normal(size=n_items)
    won = rng.random(n_comparisons) < 1 / (1 + np.exp(-(s[left] - s[right])))
    tie = rng.random(n_comparisons) < 0.15
    names = np.array([f"i{k}" for k in range(n_items)])
    label = np.where(tie, "equal", np.where(won, names[left], names[right]))
    table = pd.DataFrame({"worker": "w", "left": names[left], "right": names[right]})
    return table.assign(label=label), rng
