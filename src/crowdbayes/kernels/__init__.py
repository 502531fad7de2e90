"""Kernels (Matérn-3/2, RBF, independent), length-scale heuristics and inducing points."""

from .heuristics import kmeans_inducing_points, median_heuristic, scaled_median_heuristic
from .stationary import (
    RBF,
    SAVED_KERNELS,
    Independent,
    Kernel,
    Matern32,
    kernel_from_saved,
    kernel_name,
    make_kernel,
)

__all__ = [
    "Kernel",
    "Matern32",
    "RBF",
    "Independent",
    "make_kernel",
    "SAVED_KERNELS",
    "kernel_name",
    "kernel_from_saved",
    "median_heuristic",
    "scaled_median_heuristic",
    "kmeans_inducing_points",
]
