"""The label models (and PlackettLuceVI) on a Dask cluster: out-of-core Parquet input, same
results as in memory.

Needs the ``dask`` extra (``pip install 'crowdbayes[dask]'``); ``import crowdbayes`` never
imports Dask. See :func:`fit_distributed`, :func:`fit_rankings_distributed` (PlackettLuceVI),
:func:`fit_links_distributed` (LinkClustering's VB), and
:mod:`crowdbayes.inference.statistics` for the sufficient-statistics interface that makes one
model serve both backends.
"""

from __future__ import annotations

try:
    import dask  # noqa: F401

    import distributed  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError("crowdbayes.distributed needs Dask: pip install 'crowdbayes[dask]'") from err

from ._fit import DistributedFit, cluster_client, fit_distributed
from ._links import fit_links_distributed
from ._partitions import parquet_files
from ._rankings import fit_rankings_distributed

__all__ = [
    "fit_distributed",
    "fit_rankings_distributed",
    "fit_links_distributed",
    "DistributedFit",
    "cluster_client",
    "parquet_files",
]
