"""What a sampler says about itself: how long it will take, before it starts, and whether its
chains mixed, after (shared by every Gibbs sampler: the hierarchical label model, the
communities of preferences)."""

from __future__ import annotations

import copy
import math
import time
import warnings
from collections.abc import Callable

from ..exceptions import ConvergenceWarning, DataWarning

__all__ = ["ANNOUNCE_SECONDS", "RHAT_WARNING", "announce_duration", "warn_unmixed"]

#: a sampler projected to run longer than this many seconds says so before it starts
ANNOUNCE_SECONDS = 30.0
#: a sampled fit whose largest R-hat exceeds this warns (Vehtari et al. 2021 suggest 1.01 for
#: final results; 1.05 is the looser bar of a default run)
RHAT_WARNING = 1.05


def announce_duration(
    name: str,
    sweep: Callable[..., None],
    chains: list,
    shared: tuple,
    *,
    n_sweeps: int,
    n_jobs: int,
    fewer: str,
    faster: str,
) -> float:
    """Time the first sweeps on a copy of the first chain (its generator copied too, so the
    chain itself is untouched) and project the whole run: a sweep's time × sweeps × the rounds
    of chains the ``n_jobs`` processes take turns on. Past :data:`ANNOUNCE_SECONDS` a
    :class:`DataWarning` says so before the sampling starts, naming how to need fewer sweeps
    (``fewer``) and the faster model (``faster``). Sweep 0 carries first-call costs (0.8 s of
    imports against 2 ms a sweep on 10,000 labels), so it only decides whether to look closer:
    when it projects past the bar, the mean of sweeps 1–4 is the projection. Returns the
    projected seconds."""
    trial = copy.deepcopy(chains[0])
    rounds = math.ceil(len(chains) / max(1, min(n_jobs, len(chains))))

    def projected(sweeps: range) -> float:
        start = time.perf_counter()
        for index in sweeps:
            sweep(trial, index, *shared)
        return (time.perf_counter() - start) / len(sweeps) * n_sweeps * rounds

    seconds = projected(range(1))
    if seconds > ANNOUNCE_SECONDS and n_sweeps > 1:
        seconds = projected(range(1, min(n_sweeps, 5)))
    if seconds > ANNOUNCE_SECONDS:
        warnings.warn(
            f"{name}: {len(chains)} chain(s) × {n_sweeps} sweeps will take about "
            f"{_duration(seconds)} on this machine; for an answer in seconds use {faster}, or "
            f"sample less: {fewer}",
            DataWarning,
            stacklevel=3,
        )
    return seconds


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def warn_unmixed(name: str, max_rhat: float, more: str) -> None:
    """A :class:`ConvergenceWarning` when ``max_rhat`` exceeds :data:`RHAT_WARNING`, saying how
    to run more sweeps (``more``)."""
    if max_rhat > RHAT_WARNING:
        warnings.warn(
            f"{name}: the chains disagree (max R-hat {max_rhat:.3f} > {RHAT_WARNING}); the "
            f"estimates may still move: run more sweeps ({more})",
            ConvergenceWarning,
            stacklevel=3,
        )
