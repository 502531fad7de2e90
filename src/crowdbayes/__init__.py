"""crowdbayes: Bayesian inference from noisy human judgments."""

from .data import Labels
from .data.rankings import Rankings
from .exceptions import ConvergenceWarning, DataWarning, DivergenceWarning, NotFittedError
from .models.labels import (
    BayesianDawidSkene,
    CommunityDawidSkene,
    DawidSkene,
    HierarchicalAnnotation,
    MajorityVote,
)
from .models.plackett_luce import (
    PlackettLuceGibbs,
    PlackettLuceMAP,
    PlackettLuceMM,
    PlackettLuceVI,
)

__version__ = "0.1.0"

__all__ = [
    "Labels",
    "MajorityVote",
    "DawidSkene",
    "BayesianDawidSkene",
    "CommunityDawidSkene",
    "HierarchicalAnnotation",
    "Rankings",
    "PlackettLuceVI",
    "PlackettLuceMAP",
    "PlackettLuceMM",
    "PlackettLuceGibbs",
    "ConvergenceWarning",
    "DataWarning",
    "DivergenceWarning",
    "NotFittedError",
    "__version__",
]
