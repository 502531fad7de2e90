"""Deep generative crowd clustering (PyTorch): SCDC and BayesSCDC of Luo et al. (2018).

Importing this subpackage imports torch; ``import crowdbayes`` alone does not.
"""

from .bayes_scdc import BayesSCDC

__all__ = ["BayesSCDC", "SCDC"]


def __getattr__(name: str):
    if name == "SCDC":
        from .scdc import SCDC

        return SCDC
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
