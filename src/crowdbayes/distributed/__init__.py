"""The label models (and PlackettLuceVI) on a Dask cluster: out-of-core Parquet input, same
results as in memory.

Needs the ``dask`` extra (``pip install 'crowdbayes[dask]'``); ``import crowdbayes`` never
imports Dask, and neither does ``import crowdbayes.distributed``: Dask is imported when a fit
runs. See :func:`fit_distributed`, :func:`fit_rankings_distributed` (PlackettLuceVI),
:func:`fit_links_distributed` (LinkClustering's VB), :func:`count_battles` (a leaderboard's
battles counted from Parquet, for :class:`~crowdbayes.Leaderboard`), and
:mod:`crowdbayes.inference.statistics` for the sufficient-statistics interface that makes one
model serve both backends.
"""

from __future__ import annotations

import importlib.util

from .._utils import lazy_exports

__all__, _export, __dir__ = lazy_exports(
    __name__,
    {
        "._fit": ("fit_distributed", "DistributedFit", "cluster_client"),
        "._rankings": ("fit_rankings_distributed",),
        "._links": ("fit_links_distributed",),
        "._partitions": ("parquet_files",),
        "._battles": ("count_battles", "CountedBattles"),
    },
)


def __getattr__(name: str):
    # the install hint comes with the first name taken from the package, as it came with the
    # import when the package imported Dask; find_spec looks for Dask without importing it
    if name in __all__ and not all(
        importlib.util.find_spec(module) for module in ("dask", "distributed")
    ):
        raise ImportError("crowdbayes.distributed needs Dask: pip install 'crowdbayes[dask]'")
    return _export(name)
