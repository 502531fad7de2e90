"""Crowd clustering from pairwise must-link / cannot-link judgments.

``LinkClustering`` (links only, numpy) is imported eagerly. ``SCDC`` and ``BayesSCDC`` (PyTorch,
the ``crowdbayes[deep]`` extra) live in :mod:`crowdbayes.models.clustering.deep` and are loaded
on first access, so ``import crowdbayes`` never imports torch.

Modules: :mod:`.link_clustering` (the estimator), :mod:`.link_graph` (the signed link graph in
the order of the sweeps), :mod:`.link_vb` (the VB as sums over links, the interface that
:mod:`crowdbayes.distributed` maps over partitions), :mod:`.link_search` (the hard-partition
searches that start and polish the VB), :mod:`.deep` (SCDC, BayesSCDC).
"""

from .link_clustering import LinkClustering

__all__ = ["LinkClustering", "SCDC", "BayesSCDC"]

_DEEP = ("SCDC", "BayesSCDC")


def __getattr__(name: str):
    if name in _DEEP:
        try:
            from . import deep
        except ImportError as error:  # torch missing: say which extra provides it
            raise ImportError(
                f"{name} needs PyTorch: pip install 'crowdbayes[deep]' ({error})"
            ) from error
        return getattr(deep, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
