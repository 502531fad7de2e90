r"""Sufficient statistics: one model, in memory or over many partitions.

A model whose work is a sum over judgments followed by a small global update is written as

- ``local_stats(partition, globals) -> stats``: everything the update needs from one partition
  of the data, as a dict of arrays and floats that are *sums over judgments or tasks*;
- ``global_update(stats) -> globals``: the new global parameters from the statistics summed
  over partitions.

Because the statistics are sums, :math:`\text{stats}(A \cup B) = \text{stats}(A) +
\text{stats}(B)` for partitions that split the data, so the in-memory ``fit`` (one partition:
the whole table) and :mod:`crowdbayes.distributed` (many partitions, statistics tree-reduced on
a Dask cluster) run the same two functions through the same driver, :func:`iterate_statistics`;
only the *map* over partitions differs (Dawid–Skene EM and VB, majority vote, Plackett–Luce VI's
Algorithm 1 and the links-only clustering VB are written this way).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from .driver import run_iterations

__all__ = ["Stats", "Globals", "StatsFit", "StatisticsModel", "add_stats", "iterate_statistics"]

#: per-partition sums (arrays and floats), added key by key
Stats = dict
#: global parameters: numeric arrays (plus derived arrays such as log-confusions)
Globals = dict


class StatisticsModel(Protocol):
    """What :func:`iterate_statistics` needs of a model."""

    iterative: bool
    max_iter: int
    tol: float | None
    progress: bool
    algorithm: str

    def start_globals(self) -> Globals: ...

    def global_update(self, stats: Stats) -> Globals: ...

    def objective(self, stats: Stats, before: Globals, after: Globals) -> float | None: ...


def add_stats(*parts: Mapping) -> Stats:
    """Sum statistics dicts key by key (the reduction of the map–reduce)."""
    if not parts:
        raise ValueError("add_stats needs at least one statistics dict")
    total = dict(parts[0])
    for part in parts[1:]:
        if part.keys() != total.keys():
            raise ValueError(
                f"statistics disagree on their keys: {sorted(total)} vs {sorted(part)}"
            )
        for key, value in part.items():
            total[key] = total[key] + value
    return total


@dataclass
class StatsFit:
    """What :func:`iterate_statistics` returns.

    ``before`` are the globals the last ``local_stats`` pass used (the per-task posteriors it
    produced belong to them), ``globals`` the result of the last update.
    """

    globals: Globals
    before: Globals
    stats: Stats | None = None
    history: list[float] = field(default_factory=list)
    n_iter: int = 1
    converged: bool = True


def iterate_statistics(
    model: StatisticsModel,
    *,
    initial: Callable[[], Stats],
    pass_stats: Callable[[Globals], Stats],
    initial_globals: Globals | None = None,
    callback: Callable[[int, float | None], None] | None = None,
    objective_offset: float = 0.0,
) -> StatsFit:
    """The one driver of every statistics-based fit.

    ``initial()`` returns the summed initial statistics, ``pass_stats(globals)`` the summed
    ``local_stats`` over every partition. A one-pass model runs ``pass_stats`` once; an iterative
    one starts from ``initial_globals`` (a warm start) or ``global_update(initial())`` and runs
    ``globals ← global_update(pass_stats(globals))`` under :func:`run_iterations` with the
    model's ``max_iter``, ``tol`` and ``progress``; ``callback(iteration, objective)`` (0-based)
    follows every iteration, the last one included. ``objective_offset`` is added to every
    objective value (a constant left out of a sub-problem, so that ``tol`` means the same).
    """
    if not model.iterative:
        start = model.start_globals()
        stats = pass_stats(start)
        return StatsFit(globals=model.global_update(stats), before=start, stats=stats)
    current = model.global_update(initial()) if initial_globals is None else initial_globals
    state = {"globals": current, "before": current, "stats": None}

    def step(iteration: int) -> float | None:
        stats = state["stats"] = pass_stats(state["globals"])
        updated = model.global_update(stats)
        value = model.objective(stats, state["globals"], updated)
        if value is not None:
            value += objective_offset
        state["before"], state["globals"] = state["globals"], updated
        if callback is not None:
            callback(iteration, value)
        return value

    result = run_iterations(
        step,
        max_iter=model.max_iter,
        tol=model.tol,
        progress=model.progress,
        desc=model.algorithm,
        warn_name=type(model).__name__,
    )
    return StatsFit(
        globals=state["globals"],
        before=state["before"],
        stats=state["stats"],
        history=result.history,
        n_iter=result.n_iter,
        converged=result.converged,
    )
