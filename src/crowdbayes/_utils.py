"""Small helpers for the estimator contract: randomness and fitted-state checks."""

from __future__ import annotations

import numpy as np

from .exceptions import NotFittedError

RandomState = int | np.random.Generator | np.random.SeedSequence | None


def as_generator(random_state: RandomState) -> np.random.Generator:
    """Resolve ``random_state`` once into a ``numpy.random.Generator`` (never the global state)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def spawn_generators(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """Independent child generators (one per chain or restart), reproducible from ``rng``."""
    return list(rng.spawn(n))


def check_is_fitted(estimator: object, attribute: str) -> None:
    """Raise :class:`NotFittedError` naming the estimator if ``attribute`` is not set yet."""
    if not hasattr(estimator, attribute):
        name = type(estimator).__name__
        raise NotFittedError(f"{name} is not fitted yet: call {name}.fit(...) first")
