"""Kernels (Matérn-3/2, RBF, independent), length-scale heuristics and inducing points.

The names are imported from their modules on first use (PEP 562).
"""

from .._utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".stationary": ("Kernel", "Matern32", "RBF", "Independent", "make_kernel"),
        ".heuristics": ("median_heuristic", "scaled_median_heuristic", "kmeans_inducing_points"),
    },
)
