r"""The VB of :class:`~crowdbayes.models.clustering.LinkClustering` on a Dask cluster.

The links are partitioned as they come (no shuffle: a link needs nothing but itself and q(z)).
The client holds q(z) (n_items × K, small next to the links) and the globals q(π), q(α), q(β);
the workers hold the links, encoded, in the fit's internal item order and merged into a few
pieces (:class:`~crowdbayes.models.clustering.link_graph.LinkGraph`, by default one per worker
thread: each piece costs a task per colour class). One VB sweep of
:func:`~crowdbayes.models.clustering.link_vb.iterate_link_vb` is then

* one map–reduce per colour class of the link graph: each partition returns its part of the
  messages :math:`\sum_{l \ni i} \mathbb{E}[w_l] r_{\text{partner}(l)}` to the items of the class
  (:func:`~crowdbayes.models.clustering.link_vb.link_messages`), summed in a tree; the client
  updates those items' q(z) and broadcasts it;
* one map–reduce of :func:`~crowdbayes.models.clustering.link_vb.link_local_stats` (the
  per-worker two-coin counts and the expected log-likelihood of the links) at the new q(z),
  from which the client computes the ELBO and the next globals.

This is the in-memory sweep's arithmetic summed in a different order, so the posteriors equal
``LinkClustering(..., n_polish=0).fit(links, init=...)``'s up to rounding (≤ 1e-8 in the tests).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .._utils import spawn_generators
from ..data.links import Links
from ..inference.statistics import add_stats
from ..models.clustering import LinkClustering
from ..models.clustering.link_graph import LinkGraph, colour_order, greedy_colouring
from ..models.clustering.link_vb import (
    LinkGlobals,
    iterate_link_vb,
    link_local_stats,
    link_messages,
    link_weights,
)
from ._fit import _compute, _share, cluster_client
from ._partitions import parquet_files

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["fit_links_distributed"]


# ------------------------------------------------------------------ work inside a partition
def _read_links_file(path: str, name: str, columns: list[str]) -> pd.DataFrame:
    """The link columns of one Parquet file; an unreadable file or a missing column is a
    ValueError naming it."""
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
        table = pq.read_table(path, columns=[c for c in columns if c in names])
    except Exception as err:  # pyarrow's errors for truncated or corrupt files vary
        raise ValueError(
            f"links: {name} is not a readable Parquet file ({type(err).__name__}: {err})"
        ) from None
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(f"links: {name}: column {missing[0]!r} is missing; got {names}")
    return table.to_pandas()


def _links_of(frame: pd.DataFrame, name: str, columns: dict) -> Links | None:
    """One partition validated as :class:`~crowdbayes.data.links.Links` (missing values, labels
    other than 0/1, self-links, a worker repeating a pair within the partition); errors name
    the partition. None for an empty partition."""
    if len(frame) == 0:
        return None
    try:
        return Links(frame, **columns, duplicates="error")
    except ValueError as err:
        text = str(err).removeprefix("links: ")
        raise ValueError(f"links: {name}: {text}") from None


def _vocabulary(links: Links | None) -> tuple[np.ndarray, np.ndarray, int]:
    """The partition's items and workers in order of first appearance, and its link count."""
    if links is None:
        return np.array([], dtype=object), np.array([], dtype=object), 0
    return links.item_ids.to_numpy(), links.worker_ids.to_numpy(), links.n_links


def _encode(links: Links | None, item_ids: pd.Index, worker_ids: pd.Index):
    """Global codes ``(left, right, worker, labels)`` of the partition's links."""
    if links is None:
        empty = np.array([], dtype=np.int64)
        return empty, empty, empty, np.array([], dtype=np.int8)
    item_codes = item_ids.get_indexer(links.item_ids)
    worker_codes = worker_ids.get_indexer(links.worker_ids)
    if (item_codes < 0).any() or (worker_codes < 0).any():  # the vocabulary pass saw them all
        raise ValueError("links: the data changed after the vocabulary pass")
    return (
        item_codes[links.left_codes],
        item_codes[links.right_codes],
        worker_codes[links.worker_codes],
        links.labels,
    )


def _merge(*encoded):
    """The links of several encoded partitions as one."""
    return tuple(np.concatenate(arrays) for arrays in zip(*encoded, strict=True))


def _pair_keys(encoded, n_items: int) -> np.ndarray:
    """Distinct unordered item pairs of the partition as ``low · n_items + high``."""
    left, right = encoded[0], encoded[1]
    return np.unique(np.minimum(left, right) * n_items + np.maximum(left, right))


def _judgment_keys(encoded, n_items: int, n_workers: int) -> pd.Series:
    """``(worker, pair)`` keys of the partition's links (distinct within it: checked), one
    int64 each when they fit, else tuples."""
    left, right, worker = encoded[0], encoded[1], encoded[2]
    pair = np.minimum(left, right) * n_items + np.maximum(left, right)
    if n_workers * n_items**2 < 2**62:
        return pd.Series(worker * (n_items * n_items) + pair, name="key")
    return pd.Series(pd.MultiIndex.from_arrays([worker, pair]).to_flat_index(), name="key")


def _graph(encoded, n_items: int, n_workers: int, layout) -> LinkGraph:
    position, bounds = layout
    left, right, worker, labels = encoded
    return LinkGraph.from_internal(
        n_items, n_workers, position[left], position[right], worker, labels, bounds
    )


def _worker_counts(graph: LinkGraph) -> np.ndarray:
    return np.bincount(graph.worker, minlength=graph.n_workers)


def _weigh(graph: LinkGraph, globals_: LinkGlobals):
    return link_weights(graph, globals_)


def _stats(graph: LinkGraph, weighted, resp: np.ndarray) -> dict:
    return link_local_stats(graph, resp, weighted)


def _messages(graph: LinkGraph, weighted, resp: np.ndarray, colour: int) -> np.ndarray:
    return link_messages(graph, colour, weighted[0], resp)


def _add(*parts):
    if isinstance(parts[0], dict):
        return add_stats(*parts)
    return sum(parts[1:], parts[0])


# ------------------------------------------------------------------------------- the client
class _ClusterStatistics:
    """:class:`~crowdbayes.models.clustering.link_vb.LinkStatistics` over the partitions of a
    cluster: the same functions mapped over the graphs held by the workers, tree-summed."""

    def __init__(self, client: Client, graphs: list, fan_in: int) -> None:
        self.client, self.graphs, self.fan_in = client, graphs, fan_in
        self.weighted = [None] * len(graphs)

    def _sum(self, futures: list):
        while len(futures) > 1:
            futures = [
                self.client.submit(_add, *futures[i : i + self.fan_in], pure=False)
                for i in range(0, len(futures), self.fan_in)
            ]
        return futures[0].result()

    def _resp(self, resp: np.ndarray):
        return _put(self.client, "resp", resp)

    def weigh(self, globals_: LinkGlobals) -> None:
        shared = _put(self.client, "globals", globals_)
        self.weighted = self.client.map(_weigh, self.graphs, globals_=shared, pure=False)

    def stats(self, resp: np.ndarray) -> dict:
        shared = self._resp(resp)
        return self._sum(
            self.client.map(_stats, self.graphs, self.weighted, resp=shared, pure=False)
        )

    def messages(self, colour: int, resp: np.ndarray) -> np.ndarray:
        shared = self._resp(resp)
        return self._sum(
            self.client.map(
                _messages, self.graphs, self.weighted, resp=shared, colour=colour, pure=False
            )
        )


def _put(client: Client, name: str, value):
    """A future holding ``value`` as a task of its own (not scattered data): if the worker
    holding it dies, Dask recomputes it like any other task (:func:`._fit._share`)."""
    return client.compute(_share(name, value))


def _sources(source, columns: dict) -> list[tuple[str, object]]:
    """(name, delayed Links or None) per partition of a Dask DataFrame or of Parquet files."""
    import dask.dataframe as dd
    from dask import delayed

    if isinstance(source, dd.DataFrame):
        names = [f"partition {i}" for i in range(source.npartitions)]
        return [
            (name, delayed(_links_of, pure=True)(part, name, columns))
            for name, part in zip(names, source.to_delayed(), strict=True)
        ]
    if isinstance(source, pd.DataFrame | Links):
        raise TypeError(
            "fit_links_distributed takes a Dask DataFrame or a Parquet path/glob; for links in "
            "memory call model.fit(links, init=...) (or dask.dataframe.from_pandas)"
        )
    order = [columns["worker"], columns["left"], columns["right"], columns["label"]]
    out = []
    for path in parquet_files(source):
        name = f"file {path}"
        frame = delayed(_read_links_file, pure=True)(str(path), name, order)
        out.append((name, delayed(_links_of, pure=True)(frame, name, columns)))
    return out


def _check_repeats(
    client: Client, encoded: list, n_items: int, n_workers: int, fan_in: int
) -> None:
    """Refuse a worker judging the same pair in two partitions (within one, :class:`Links`
    refuses it): a distributed count of the ``(worker, pair)`` keys."""
    import dask.dataframe as dd
    from dask import delayed

    dtype = np.int64 if n_workers * n_items**2 < 2**62 else object
    keys = dd.from_delayed(
        [delayed(_judgment_keys, pure=True)(part, n_items, n_workers) for part in encoded],
        meta=pd.Series([], dtype=dtype, name="key"),
        verify_meta=False,
    )
    counts = keys.value_counts(split_every=fan_in, split_out=1)
    repeated = counts[counts > 1]
    found = _compute(client, [repeated.size])
    if found[0]:
        raise ValueError(
            f"links: {found[0]} (worker, pair) judgment(s) are repeated across partitions; "
            "fit_links_distributed counts every judgment once (like Links(duplicates='error')): "
            "deduplicate the links first"
        )


def fit_links_distributed(
    model: LinkClustering,
    source,
    *,
    init: pd.Series,
    client: Client | None = None,
    scheduler: str | None = None,
    n_workers: int = 2,
    worker: str = "worker",
    left: str = "left",
    right: str = "right",
    label: str = "label",
    check_repeats: bool = True,
    n_graphs: int | None = None,
    fan_in: int = 8,
    on_iteration: Callable[[int, float | None], None] | None = None,
    cluster_options: dict | None = None,
) -> LinkClustering:
    r"""Run :class:`~crowdbayes.models.clustering.LinkClustering`'s variational Bayes on a Dask
    cluster, from the starting clusters ``init``; returns the fitted ``model``.

    Only the VB runs here: the search heuristics of ``LinkClustering.fit`` (greedy starts,
    group moves, Kempe swaps, restarts) are not sums over links and stay in memory. Start from
    their result (``LinkClustering(...).fit(sample).assignments_``), or from a partition of the
    user's own, e.g. a clustering of the items' features. The result equals the in-memory
    ``LinkClustering(..., n_polish=0).fit(links, init=init)`` up to summation order: the same
    q(z), worker posteriors, ``elbo_history_`` (items missing from ``init`` start at random
    from ``random_state`` as in the in-memory fit's first restart, so with a partial ``init``
    that holds for ``n_init=1``).

    Steps: (1) every partition is validated as :class:`~crowdbayes.data.links.Links` (an error
    names the partition or file) and reports its items and workers in order of first
    appearance, merged on the client into the global codes (the in-memory fit's); (2) the
    partitions are encoded, a distributed count refuses a worker judging one pair in two
    partitions (``check_repeats``), and the client colours the graph of the distinct linked
    pairs (the in-memory fit's colouring, hence its update order); (3) consecutive partitions
    are merged into ``n_graphs`` pieces, each kept in worker memory with its links in the
    internal item order, and every sweep maps the statistics over them (module docstring). The
    client holds q(z), n_items × K, and the distinct pairs once for the colouring.

    Parameters
    ----------
    model : LinkClustering
        Unfitted; ``n_clusters``, the priors, ``init_smoothing``, ``max_iter``, ``tol`` and
        ``random_state`` apply (``n_polish`` and ``n_init`` do not: no search runs here).
    source : dask.dataframe.DataFrame, or str / path
        Links ``worker, left, right, label`` (label 1 must-link, 0 cannot-link), or Parquet
        file(s) of them (a file, a directory or a glob).
    init : Series
        Starting cluster (``0 … n_clusters−1``) of the items, indexed by item id.
    client, scheduler, n_workers, cluster_options, fan_in
        As in :func:`~crowdbayes.distributed.fit_distributed`.
    worker, left, right, label : str
        Column names.
    check_repeats : bool
        Count repeated judgments across partitions (one extra pass over the keys).
    n_graphs : int, optional
        Number of pieces the links are held in on the cluster during the sweeps (consecutive
        input partitions are merged): every colour class costs one task per piece, so a few
        large pieces beat many small ones. Default: the cluster's number of worker threads.
    on_iteration : callable, optional
        ``on_iteration(sweep, elbo)`` after every sweep (1-based).

    Returns
    -------
    LinkClustering
        ``model``, fitted: ``probas_``, ``assignments_``, ``workers_``, ``prevalence_``,
        ``elbo_history_`` … as after ``fit``, in the user's ids.

    Raises
    ------
    ValueError
        A bad partition or file (unreadable Parquet, missing column or values, a label other
        than 0/1, a self-link, a repeated judgment), naming it; ``model`` is then left unfitted.
    """
    if not isinstance(model, LinkClustering):
        raise TypeError(f"fit_links_distributed fits LinkClustering; got {type(model).__name__}")
    model.check_params()
    if not isinstance(init, pd.Series):
        raise TypeError(f"init must be a pandas Series indexed by item; got {type(init)}")
    columns = {"worker": worker, "left": left, "right": right, "label": label}
    sources = _sources(source, columns)
    priors = model._priors()
    with cluster_client(client, scheduler, n_workers, **(cluster_options or {})) as client:
        parsed = client.compute([links for _, links in sources])
        vocabularies = client.gather(client.map(_vocabulary, parsed, pure=False))
        n_links = np.array([v[2] for v in vocabularies])
        if n_links.sum() == 0:
            raise ValueError("links: every partition is empty (0 rows)")
        found = [v for v in vocabularies if v[2] > 0]
        items = pd.Index(pd.unique(np.concatenate([v[0] for v in found])), name="item")
        workers = pd.Index(pd.unique(np.concatenate([v[1] for v in found])), name="worker")
        n_items, n_workers_found = len(items), len(workers)
        kept = [p for p, n in zip(parsed, n_links, strict=True) if n > 0]
        shared_items, shared_workers = (
            _put(client, "items", items),
            _put(client, "workers", workers),
        )
        encoded = client.map(
            _encode, kept, item_ids=shared_items, worker_ids=shared_workers, pure=False
        )
        del parsed, kept  # the validated frames: only the encoded links are needed from here
        if check_repeats and len(encoded) > 1:
            _check_repeats(client, encoded, n_items, n_workers_found, fan_in)
        if n_graphs is None:
            n_graphs = sum(client.nthreads().values())
        groups = np.array_split(np.arange(len(encoded)), max(1, min(n_graphs, len(encoded))))
        encoded = [
            encoded[g[0]]
            if g.size == 1
            else client.submit(_merge, *[encoded[i] for i in g], pure=False)
            for g in groups
        ]
        pairs = np.unique(
            np.concatenate(client.gather(client.map(_pair_keys, encoded, n_items=n_items)))
        )
        colours = greedy_colouring(n_items, pairs // n_items, pairs % n_items)
        del pairs
        order, position, bounds = colour_order(colours)
        layout = _put(client, "layout", (position, bounds))
        graphs = client.map(
            _graph,
            encoded,
            n_items=n_items,
            n_workers=n_workers_found,
            layout=layout,
            pure=False,
        )
        del encoded
        worker_links = sum(client.gather(client.map(_worker_counts, graphs, pure=False)))
        ids = items[order]
        start = model._initial_resp(init, ids, priors[0].size)
        rng = spawn_generators(model.random_generator(), 1)[0]
        state, run = iterate_link_vb(
            start(rng),
            priors,
            _ClusterStatistics(client, graphs, fan_in),
            bounds,
            max_iter=model.max_iter,
            tol=model.tol,
            progress=model.progress,
            desc="LinkClustering sweeps (dask)",
            callback=on_iteration,
        )
    model._warn_unless_converged(run)
    model.restart_elbos_ = [run.history[-1]]
    model._set_results(items, order, workers, worker_links, state, run)
    return model
