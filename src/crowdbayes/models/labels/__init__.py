"""Label aggregation: majority vote and its weighted variants (Wawa, Zero-Based Skill, gold
majority vote), Dawid–Skene (EM, VB), GLAD, MACE, KOS, M-MSR, hierarchical annotation (Gibbs)."""

from ._base import LabelModel
from .bayesian_dawid_skene import BayesianDawidSkene
from .community import CommunityDawidSkene
from .continuous import ContinuousAggregation
from .crowd_classifier import CrowdClassifier
from .dawid_skene import DawidSkene
from .glad import GLAD
from .gold_majority_vote import GoldMajorityVote
from .hierarchical import HierarchicalAnnotation
from .kos import KOS
from .mace import MACE
from .majority_vote import MajorityVote
from .mmsr import MMSR
from .ordinal import OrdinalDawidSkene
from .statistics import LabelIds, StatsLabelModel
from .wawa import Wawa
from .zero_based_skill import ZeroBasedSkill

__all__ = [
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
    "OrdinalDawidSkene",
    "ContinuousAggregation",
    "CrowdClassifier",
    "LabelModel",
    "StatsLabelModel",
    "LabelIds",
]
