"""Randomness: ``random_state`` resolved once into a generator, and child generators."""

from __future__ import annotations

import numpy as np

RandomState = int | np.random.Generator | np.random.SeedSequence | None


def as_generator(random_state: RandomState) -> np.random.Generator:
    """Resolve ``random_state`` once into a ``numpy.random.Generator`` (never the global state)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def spawn_generators(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """Independent child generators (one per chain or restart), reproducible from ``rng``."""
    return list(rng.spawn(n))
