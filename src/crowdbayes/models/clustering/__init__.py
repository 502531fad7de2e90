"""Crowd clustering from pairwise must-link / cannot-link judgments.

``LinkClustering`` (links only, numpy) is here; SCDC and BayesSCDC (PyTorch, the
``crowdbayes[deep]`` extra) will join it and must keep ``import crowdbayes`` free of torch.
"""

from .link_vb import LinkClustering

__all__ = ["LinkClustering"]
