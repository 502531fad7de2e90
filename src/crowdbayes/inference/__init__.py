"""Inference machinery shared by the models: the iteration driver, online moments, diagnostics."""

from .driver import IterationResult, run_iterations
from .online import OnlineMoments

__all__ = ["IterationResult", "run_iterations", "OnlineMoments"]
