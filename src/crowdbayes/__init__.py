"""crowdbayes: Bayesian inference from noisy human judgments."""

from .data import Labels
from .exceptions import ConvergenceWarning, DataWarning, DivergenceWarning, NotFittedError
from .models.labels import (
    BayesianDawidSkene,
    CommunityDawidSkene,
    DawidSkene,
    HierarchicalAnnotation,
    MajorityVote,
)

__version__ = "0.1.0"

__all__ = [
    "Labels",
    "MajorityVote",
    "DawidSkene",
    "BayesianDawidSkene",
    "CommunityDawidSkene",
    "HierarchicalAnnotation",
    "ConvergenceWarning",
    "DataWarning",
    "DivergenceWarning",
    "NotFittedError",
    "__version__",
]
