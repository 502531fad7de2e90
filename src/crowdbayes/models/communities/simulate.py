"""Simulated community preferences: planted communities with their own GP utility functions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtr

from ..._utils import RandomState, as_generator
from ...kernels import Matern32
from ...linalg import safe_cholesky

__all__ = ["SimulatedCommunities", "simulate_community_preferences"]


@dataclass
class SimulatedCommunities:
    """``comparisons`` (``worker, left, right, label``), ``items`` (features indexed by item
    id), the true ``membership`` of each worker and the true ``utility`` (items × communities).
    """

    comparisons: pd.DataFrame
    items: pd.DataFrame
    membership: pd.Series
    utility: pd.DataFrame


def simulate_community_preferences(
    n_users: int = 60,
    n_items: int = 30,
    n_communities: int = 3,
    pairs_per_user: int | np.ndarray = 15,
    *,
    n_features: int = 2,
    lengthscale: float = 0.5,
    output_scale: float = 1.0,
    noise: float = 0.5,
    random_state: RandomState = None,
) -> SimulatedCommunities:
    """Draw data from the model of :class:`CommunityPreferences`.

    Items have features ``x ~ U(0, 1)^D``; community ``c`` has utilities
    ``f_c ~ N(0, output_scale · Matérn32(lengthscale))`` over them; users are assigned to
    communities round-robin (sizes differ by at most one); each user compares
    ``pairs_per_user`` (an int, or one count per user) random distinct pairs and prefers the
    left item with probability ``Φ((f_c(l) - f_c(r)) / (√2 noise))``.
    """
    rng = as_generator(random_state)
    counts = np.broadcast_to(np.asarray(pairs_per_user, dtype=np.int64), (n_users,))
    if n_items < 2 or n_communities < 1 or (counts < 1).any():
        raise ValueError("need at least 2 items, 1 community and 1 pair per user")
    X = rng.uniform(size=(n_items, n_features))
    K = Matern32(lengthscale, output_scale)(X)
    L = safe_cholesky(K, what="simulation prior")
    f = L @ rng.standard_normal((n_items, n_communities))
    membership = np.arange(n_users) % n_communities
    user = np.repeat(np.arange(n_users), counts)
    left = rng.integers(n_items, size=len(user))
    right = (left + rng.integers(1, n_items, size=len(user))) % n_items
    diff = f[left, membership[user]] - f[right, membership[user]]
    left_wins = rng.random(len(user)) < ndtr(diff / (np.sqrt(2.0) * noise))
    item_ids = np.array([f"item{i}" for i in range(n_items)])
    worker_ids = np.array([f"user{u}" for u in range(n_users)])
    comparisons = pd.DataFrame(
        {
            "worker": worker_ids[user],
            "left": item_ids[left],
            "right": item_ids[right],
            "label": np.where(left_wins, item_ids[left], item_ids[right]),
        }
    )
    items = pd.DataFrame(
        X, index=pd.Index(item_ids, name="item"), columns=[f"x{d}" for d in range(n_features)]
    )
    return SimulatedCommunities(
        comparisons=comparisons,
        items=items,
        membership=pd.Series(
            membership, index=pd.Index(worker_ids, name="worker"), name="community"
        ),
        utility=pd.DataFrame(f, index=items.index),
    )
