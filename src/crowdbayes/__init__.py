"""crowdbayes: Bayesian inference from noisy human judgments."""

from ._version import __version__
from .base import Estimator, clone, list_models, load
from .data import Comparisons, Labels, Links
from .data.rankings import Rankings
from .exceptions import (
    CholeskyError,
    ConvergenceWarning,
    DataWarning,
    DivergenceWarning,
    NotFittedError,
    NumericalWarning,
)
from .models.clustering import LinkClustering
from .models.communities import CommunityPreferences
from .models.comparisons import BradleyTerry, CrowdBT
from .models.gp_preference import GPPL, GPPLVI, CrowdGPPL, GPPreferenceEP
from .models.labels import (
    GLAD,
    KOS,
    MACE,
    MMSR,
    BayesianDawidSkene,
    CommunityDawidSkene,
    DawidSkene,
    GoldMajorityVote,
    HierarchicalAnnotation,
    MajorityVote,
    Wawa,
    ZeroBasedSkill,
)
from .models.plackett_luce import (
    PlackettLuceGibbs,
    PlackettLuceMAP,
    PlackettLuceMM,
    PlackettLuceVI,
)

__all__ = [
    "Estimator",
    "clone",
    "list_models",
    "load",
    "Labels",
    "MajorityVote",
    "DawidSkene",
    "BayesianDawidSkene",
    "CommunityDawidSkene",
    "HierarchicalAnnotation",
    "GLAD",
    "MACE",
    "KOS",
    "MMSR",
    "Wawa",
    "ZeroBasedSkill",
    "GoldMajorityVote",
    "Rankings",
    "Comparisons",
    "BradleyTerry",
    "CrowdBT",
    "GPPreferenceEP",
    "GPPL",
    "GPPLVI",
    "CrowdGPPL",
    "CommunityPreferences",
    "Links",
    "LinkClustering",
    "PlackettLuceVI",
    "PlackettLuceMAP",
    "PlackettLuceMM",
    "PlackettLuceGibbs",
    "ConvergenceWarning",
    "DataWarning",
    "DivergenceWarning",
    "NotFittedError",
    "NumericalWarning",
    "CholeskyError",
    "__version__",
]
