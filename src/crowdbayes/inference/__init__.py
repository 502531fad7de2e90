"""Inference machinery shared by the models: the iteration driver, online moments, diagnostics."""

from .diagnostics import ess_bulk, ess_tail, rhat, rhat_from_moments, summarize
from .driver import IterationResult, run_iterations
from .online import OnlineMoments

__all__ = [
    "IterationResult",
    "run_iterations",
    "OnlineMoments",
    "rhat",
    "ess_bulk",
    "ess_tail",
    "rhat_from_moments",
    "summarize",
]
