"""Kernels (Matérn-3/2, RBF, independent), length-scale heuristics and inducing points."""

from .heuristics import kmeans_inducing_points, median_heuristic, scaled_median_heuristic
from .stationary import (
    RBF,
    Independent,
    Kernel,
    Matern32,
    make_kernel,
)

__all__ = [
    "Kernel",
    "Matern32",
    "RBF",
    "Independent",
    "make_kernel",
    "median_heuristic",
    "scaled_median_heuristic",
    "kmeans_inducing_points",
]
