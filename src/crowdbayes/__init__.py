"""crowdbayes: Bayesian inference from noisy human judgments.

Every public name below is imported when first used (PEP 562), so that ``import crowdbayes``
(and the command line's ``--help``) costs almost nothing; ``from crowdbayes import DawidSkene``
works as usual.
"""

from __future__ import annotations

from ._utils import lazy_exports
from ._version import __version__

#: public name -> the module that defines it
#: the module of every public name, and the names it defines
_EXPORTS = {
    "crowdbayes.base": ("Estimator", "Tags", "clone", "list_models", "load"),
    "crowdbayes.data": ("Labels", "Comparisons", "Links"),
    "crowdbayes.data.rankings": ("Rankings",),
    "crowdbayes.exceptions": (
        "CholeskyError",
        "ConvergenceWarning",
        "DataWarning",
        "DivergenceWarning",
        "NotFittedError",
        "NumericalWarning",
    ),
    "crowdbayes.models.clustering": ("LinkClustering",),
    "crowdbayes.models.communities": ("CommunityPreferences",),
    "crowdbayes.models.comparisons": ("BradleyTerry", "CrowdBT"),
    "crowdbayes.models.gp_preference": ("GPPL", "GPPLVI", "CrowdGPPL", "GPPreferenceEP"),
    "crowdbayes.models.labels": (
        "GLAD",
        "KOS",
        "MACE",
        "MMSR",
        "BayesianDawidSkene",
        "CommunityDawidSkene",
        "DawidSkene",
        "GoldMajorityVote",
        "HierarchicalAnnotation",
        "MajorityVote",
        "Wawa",
        "ZeroBasedSkill",
    ),
    "crowdbayes.models.plackett_luce": (
        "PlackettLuceGibbs",
        "PlackettLuceMAP",
        "PlackettLuceMM",
        "PlackettLuceVI",
    ),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ += ["__version__"]
