"""Community preferences: a Dirichlet-process mixture of GP preference functions, sampled by
Gibbs over community memberships with EP community posteriors inside (Abbasnejad et al., 2013).
"""

from ..._catalogue import ModelEntry
from ..._utils import lazy_exports

#: the family's models as the command line offers them (:mod:`crowdbayes._catalogue`)
COMMAND_LINE = (
    ModelEntry(
        "prefs",
        "dpm-gp",
        "crowdbayes.models.communities.estimator:CommunityPreferences",
        "communities of preferences: Dirichlet-process mixture of GPs (EP + Gibbs)",
        ("--lengthscale", "--ties", "--sweeps", "--burn-in"),
    ),
)

#: the module of every public name, and the names it defines (imported on first use)
_EXPORTS = {
    "._adf": ("adf_log_evidence",),
    "._crp": (
        "canonical_labels",
        "co_membership",
        "crp_log_prior",
        "least_squares_partition",
        "sample_concentration",
    ),
    ".estimator": ("CommunityPreferences", "communities_table"),
    ".simulate": ("SimulatedCommunities", "simulate_community_preferences"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
