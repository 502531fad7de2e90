"""Plackett–Luce models for rankings and top choices.

With item features (s_i = exp(θᵀx_i)): :class:`PlackettLuceVI` (Gaussian posterior over θ by
variational inference, Guo et al. 2019) and :class:`PlackettLuceMAP` (the conditional-logit MAP
estimate). Without features (one score per item): :class:`PlackettLuceMM` (Hunter's MM with a
Gamma prior) and :class:`PlackettLuceGibbs` (Caron & Doucet's Gibbs sampler).
"""

from ._base import FeatureModel, ItemScoreModel, PlackettLuceModel
from .featureless import PlackettLuceGibbs, PlackettLuceMM
from .map import PlackettLuceMAP
from .vi import PlackettLuceVI, variational_bound_fit

__all__ = [
    "PlackettLuceVI",
    "PlackettLuceMAP",
    "PlackettLuceMM",
    "PlackettLuceGibbs",
    "PlackettLuceModel",
    "FeatureModel",
    "ItemScoreModel",
    "variational_bound_fit",
]
