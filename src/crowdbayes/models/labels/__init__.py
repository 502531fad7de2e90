"""Label aggregation: majority vote, Dawid–Skene (EM, VB), hierarchical annotation (Gibbs)."""

from ._base import LabelModel
from .bayesian_dawid_skene import BayesianDawidSkene
from .community import CommunityDawidSkene
from .continuous import ContinuousAggregation
from .crowd_classifier import CrowdClassifier
from .dawid_skene import DawidSkene
from .hierarchical import HierarchicalAnnotation
from .majority_vote import MajorityVote
from .ordinal import OrdinalDawidSkene
from .statistics import LabelIds, StatsLabelModel

__all__ = [
    "MajorityVote",
    "DawidSkene",
    "BayesianDawidSkene",
    "CommunityDawidSkene",
    "HierarchicalAnnotation",
    "OrdinalDawidSkene",
    "ContinuousAggregation",
    "CrowdClassifier",
    "LabelModel",
    "StatsLabelModel",
    "LabelIds",
]
