r"""Variational Plackett–Luce (Algorithm 1, ``method="bound"``) on a Dask cluster.

:class:`~crowdbayes.PlackettLuceVI`'s bound is a sum over top-queries: every iteration needs
only the d × d precision sum, the d-vector linear term and the bound's per-query terms, each a
sum over queries (:func:`~crowdbayes.models.plackett_luce.vi.bound_local_stats`), while the
local parameters ζ, α, ξ of a query depend on nothing but that query and the global (μ, S). So
each partition keeps its queries and their local parameters
(:class:`~crowdbayes.models.plackett_luce.vi.BoundPartition`) in worker memory, every pass maps
:meth:`~crowdbayes.models.plackett_luce.vi.BoundPartition.step` over the partitions, tree-sums
the statistics and runs the same global update and stopping rule as the in-memory fit
(:func:`~crowdbayes.models.plackett_luce.vi.iterate_bound`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..data.features import FeatureTable, read_features
from ..data.rankings import Rankings
from ..inference.statistics import add_stats
from ..models.plackett_luce.vi import (
    BoundPartition,
    BoundPrior,
    PlackettLuceVI,
    VIResult,
    _Design,
    feature_centre,
    iterate_bound,
    make_inner,
)
from ._fit import _check_grouped, _share, cluster_client
from ._partitions import disjoint_task_ranges, id_range, parquet_files

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["fit_rankings_distributed"]


def _rankings_partition(
    frame: pd.DataFrame, name: str, features: FeatureTable, columns: dict
) -> BoundPartition | None:
    """The top-queries of one partition (item codes local to it; the statistics live in feature
    space, so they need no global item codes); None for an empty partition."""
    if len(frame) == 0:
        return None
    try:
        rankings = Rankings(frame, features, **columns)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from err
    return BoundPartition(_Design.from_rankings(rankings, rankings.X))


def _step(previous, mean, cov, inner, d: int):
    """One partition's pass: ``previous`` is its :class:`BoundPartition` (first pass) or its
    last ``(partition, stats)``; returns the new ``(partition, stats)``."""
    part = previous[0] if isinstance(previous, tuple) else previous
    if part is None:
        zero = {"precision": np.zeros((d, d)), "shift": np.zeros(d), "bound": 0.0, "change2": 0.0}
        return None, zero
    return part.step(mean, cov, inner)


def _add_step_stats(*items):
    """Sum the statistics of ``(partition, stats)`` results or of partial sums."""
    return add_stats(*(item[1] if isinstance(item, tuple) else item for item in items))


def _sum_on_cluster(client: Client, futures: list, fan_in: int):
    """Tree-sum the statistics of the step results on the cluster; the root's value."""
    while True:
        futures = [
            client.submit(_add_step_stats, *futures[i : i + fan_in], pure=False)
            for i in range(0, len(futures), fan_in)
        ]
        if len(futures) == 1:
            return futures[0].result()


def _disjoint_queries(client: Client, frame, query: str) -> bool:
    """True when the partitions' query-id ranges do not overlap (files written by query), so
    the exact distributed count of :func:`_check_grouped` is not needed; reads the query column
    only."""
    from dask import delayed

    parts = frame[query].to_delayed()
    ranges = client.compute([delayed(id_range, pure=True)(part) for part in parts])
    return disjoint_task_ranges(client.gather(ranges))


def _frames(source):
    import dask.dataframe as dd

    if isinstance(source, dd.DataFrame):
        return source
    if isinstance(source, pd.DataFrame):
        raise TypeError(
            "fit_rankings_distributed takes a Dask DataFrame or a Parquet path/glob; for a "
            "pandas DataFrame call model.fit(frame, items)"
        )
    return dd.read_parquet([str(p) for p in parquet_files(source)])


def fit_rankings_distributed(
    model: PlackettLuceVI,
    source,
    items,
    *,
    client: Client | None = None,
    scheduler: str | None = None,
    n_workers: int = 2,
    query: str = "query",
    item: str = "item",
    rank: str = "rank",
    grouped: bool = False,
    fan_in: int = 8,
    cluster_options: dict | None = None,
    on_pass: Callable[[int, float], None] | None = None,
) -> PlackettLuceVI:
    r"""Fit :class:`~crowdbayes.PlackettLuceVI` (``method="bound"``, numeric ``eta``) to
    rankings on a Dask cluster; returns the fitted ``model``.

    A ranking's rows must lie in one partition (its top-queries are built from all of them).
    Unless ``grouped``, the rows are hash-shuffled by ``query`` (``DataFrame.shuffle``), which
    guarantees it; with ``grouped=True`` (the caller promises it, e.g. files written by query)
    a distributed count of every query's partitions checks the promise and refuses a query
    split across partitions, naming it. A frame indexed by ``query`` is accepted (e.g. after
    ``set_index(query)``, whose sorted divisions already keep each query in one partition:
    pass ``grouped=True``).

    Each partition validates its rows as a :class:`~crowdbayes.Rankings` (an error names the
    partition), builds its top-queries once and keeps them, with their local parameters, in
    worker memory. Every iteration then ships (μ, S) to the partitions, which update their ζ,
    α, ξ (MAXIMIZATION) and return their sums; the client adds them in a tree of fan-in
    ``fan_in`` and runs MINORIZATION and the stopping rule of Eq. 26 — the in-memory fit's
    own functions, so the posterior equals ``model.fit(rankings)``'s up to the summation
    order. ``items`` (the feature table, one row per item) is sent to every partition; the
    fitted model predicts for those items by default.

    Parameters
    ----------
    model : PlackettLuceVI
        Unfitted; its ``eta``, ``tol``, ``max_iter`` and inner-solver options apply.
    source : dask.dataframe.DataFrame, or str / path
        Long table ``query, item, rank`` (as :class:`~crowdbayes.Rankings`), or Parquet
        file(s) of it.
    items : DataFrame, path or FeatureTable
        Item features.
    client, scheduler, n_workers, cluster_options, fan_in : see
        :func:`~crowdbayes.distributed.fit_distributed`.
    query, item, rank : str
        Column names.
    grouped : bool
        Skip the shuffle: every query's rows are already in one partition (checked).
    on_pass : callable, optional
        ``on_pass(number, seconds)`` after each pass over the partitions (1-based; the first
        is the MAXIMIZATION at the prior, then one per iteration, three per SQUAREM cycle
        with ``accelerate``), with its wall seconds: progress reports and benchmarks.
    """
    from dask import delayed

    if not isinstance(model, PlackettLuceVI):
        raise TypeError(f"fit_rankings_distributed fits PlackettLuceVI; got {type(model).__name__}")
    eta = model.check_bound_params()
    features = items if isinstance(items, FeatureTable) else read_features(items, id_column=item)
    d = features.n_features
    prior = BoundPrior.of(eta, d)
    inner = make_inner(model.inner, model.inner_tol, model.inner_max_iter)
    columns = {"query": query, "item": item, "rank": rank}
    frame = _frames(source)
    if query not in frame.columns and frame.index.name == query:  # e.g. after set_index(query)
        frame = frame.reset_index()
    if query not in frame.columns:
        raise ValueError(f"rankings: no column {query!r}; the columns are {list(frame.columns)}")
    with cluster_client(client, scheduler, n_workers, **(cluster_options or {})) as client:
        if grouped and not _disjoint_queries(client, frame, query):
            _check_grouped(client, frame.to_delayed(), query, fan_in, what="rankings", unit="query")
        else:
            frame = frame.shuffle(on=query, npartitions=frame.npartitions, shuffle_method="tasks")
        fitted_features = features
        if model.centre:  # as the in-memory fit does (PlackettLuceVI's ``centre``)
            fitted_features = replace(features, values=features.values - feature_centre(features))
        shared_features = _share("features", fitted_features)
        parts = client.compute(
            [
                delayed(_rankings_partition, pure=True)(
                    part, f"partition {i}", shared_features, columns
                )
                for i, part in enumerate(frame.to_delayed())
            ]
        )

        passes = [0]

        def pass_stats(mean: np.ndarray, cov: np.ndarray) -> dict:
            start = time.perf_counter()
            parts[:] = client.map(_step, parts, mean=mean, cov=cov, inner=inner, d=d, pure=False)
            stats = _sum_on_cluster(client, parts, fan_in)
            passes[0] += 1
            if on_pass is not None:
                on_pass(passes[0], time.perf_counter() - start)
            return stats

        try:
            first = pass_stats(prior.mean, prior.cov)  # MAXIMIZATION at the prior
            mean, cov, history, run = iterate_bound(
                first,
                pass_stats,
                prior,
                tol=model.tol,
                max_iter=model.max_iter,
                progress=model.progress,
                desc=f"PL-VI eta={eta:.3g} (dask)",
                warn_name=type(model).__name__,
                accelerate=model.accelerate,
            )
        except BaseException:
            client.cancel(parts)
            raise
    result = VIResult(mean, cov, history[-1], history, run.n_iter, run.converged, bounds=None)
    model._set_bound_fit(eta, result)
    model._set_posterior(_FeatureRankings(features), mean, cov)
    return model


class _FeatureRankings:
    """What ``_set_posterior`` reads from a :class:`Rankings`: the feature table and its items."""

    def __init__(self, features: FeatureTable) -> None:
        self.features = features
        self.item_ids = features.ids
        self.X = features.values
