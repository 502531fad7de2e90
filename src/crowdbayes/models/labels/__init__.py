"""Label aggregation: majority vote, Dawid–Skene (EM, VB), hierarchical annotation (Gibbs)."""

from ._stats import StatsLabelModel, load_label_model
from .bayesian_dawid_skene import BayesianDawidSkene
from .community import CommunityDawidSkene
from .dawid_skene import DawidSkene
from .hierarchical import HierarchicalAnnotation
from .majority_vote import MajorityVote

__all__ = [
    "MajorityVote",
    "DawidSkene",
    "BayesianDawidSkene",
    "CommunityDawidSkene",
    "HierarchicalAnnotation",
    "StatsLabelModel",
    "load_label_model",
]
