"""Community preferences: a Dirichlet-process mixture of GP preference functions, sampled by
Gibbs over community memberships with EP community posteriors inside (Abbasnejad et al., 2013).
"""

from ._adf import adf_log_evidence
from ._crp import (
    canonical_labels,
    co_membership,
    crp_log_prior,
    least_squares_partition,
    sample_concentration,
)
from .estimator import CommunityPreferences, communities_table
from .simulate import SimulatedCommunities, simulate_community_preferences

__all__ = [
    "CommunityPreferences",
    "communities_table",
    "simulate_community_preferences",
    "SimulatedCommunities",
    "adf_log_evidence",
    "crp_log_prior",
    "sample_concentration",
    "co_membership",
    "least_squares_partition",
    "canonical_labels",
]
