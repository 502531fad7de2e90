"""The label models of class labels that every robustness test runs (one mapping for all):
key -> a factory of the model with its defaults. Left out: GoldMajorityVote (it needs gold),
HierarchicalAnnotation (slow; tested on its own) and the models of other data."""

from crowdbayes import (
    GLAD,
    KOS,
    MACE,
    MMSR,
    BayesianDawidSkene,
    CommunityDawidSkene,
    DawidSkene,
    Wawa,
    ZeroBasedSkill,
)

LABEL_MODELS = {
    "DS": DawidSkene,
    "BDS": BayesianDawidSkene,
    "CDS": CommunityDawidSkene,
    "GLAD": GLAD,
    "MACE": MACE,
    "MACE-VB": lambda: MACE(variational=True),
    "MMSR": MMSR,
    "KOS": KOS,
    "Wawa": Wawa,
    "ZBS": ZeroBasedSkill,
}
