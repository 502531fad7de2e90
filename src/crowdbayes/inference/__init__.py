"""Inference machinery shared by the models: the iteration driver, online moments, diagnostics.

The names are imported from their modules on first use (PEP 562): the iteration driver needs
neither SciPy nor the diagnostics.
"""

from .._utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        ".driver": ("IterationResult", "run_iterations"),
        ".online": ("OnlineMoments",),
        ".diagnostics": ("rhat", "ess_bulk", "ess_tail", "rhat_from_moments", "summarize"),
    },
)
