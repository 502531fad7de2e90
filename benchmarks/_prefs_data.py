"""Synthetic comparisons for the preference benchmarks (``prefs/prefs_speed.py`` and the
``--speed`` run of ``active/active_pairs.py``).

N items with 3 features uniform on [0, 3]³, utility ``f(x) = sin(2 x₀) + cos(x₁) + x₂ / 2``;
each pair is two distinct uniformly drawn items, the left one preferred with probability
``Φ((f_l - f_r)/√2)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import ndtr


def simulate(n_items: int, n_pairs: int, seed: int = 0):
    """``n_pairs`` comparisons among ``n_items`` items: the table (``left, right, label``), the
    item features and the true utilities."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 3, (n_items, 3))
    f = np.sin(2 * X[:, 0]) + np.cos(X[:, 1]) + 0.5 * X[:, 2]
    left = rng.integers(0, n_items, n_pairs)
    right = (left + rng.integers(1, n_items, n_pairs)) % n_items
    won = rng.random(n_pairs) < ndtr((f[left] - f[right]) / np.sqrt(2))
    comparisons = pd.DataFrame({"left": left, "right": right, "label": np.where(won, left, right)})
    items = pd.DataFrame(X, columns=["x0", "x1", "x2"]).rename_axis("item")
    return comparisons, items, f


def simulate_crowd(n_items: int, n_pairs: int, n_workers: int = 50, seed: int = 0):
    """As :func:`simulate`, each comparison by one of ``n_workers`` workers whose utility adds
    ``± (x₀ - 1.5)`` (two opposed groups) to the consensus."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 3, (n_items, 3))
    f = np.sin(2 * X[:, 0]) + np.cos(X[:, 1]) + 0.5 * X[:, 2]
    worker = rng.integers(0, n_workers, n_pairs)
    sign = np.where(worker % 2 == 0, 1.0, -1.0)
    left = rng.integers(0, n_items, n_pairs)
    right = (left + rng.integers(1, n_items, n_pairs)) % n_items
    diff = f[left] - f[right] + sign * (X[left, 0] - X[right, 0])
    won = rng.random(n_pairs) < ndtr(diff / np.sqrt(2))
    comparisons = pd.DataFrame(
        {
            "worker": worker,
            "left": left,
            "right": right,
            "label": np.where(won, left, right),
        }
    )
    items = pd.DataFrame(X, columns=["x0", "x1", "x2"]).rename_axis("item")
    return comparisons, items
