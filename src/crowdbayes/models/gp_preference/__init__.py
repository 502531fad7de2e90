"""Gaussian-process preference learning: EP and Laplace engines, the EP estimator, GPPL by SVI
and full-batch VI, and crowdGPPL.

The engines are pure functions on a prior covariance and integer-coded comparisons, so GPPL
(SVI, VI), crowdGPPL and the Dirichlet-process mixture of GPs can share them.
"""

from ._likelihood import PairCounts
from .crowd import CrowdGPPL
from .ep import (
    EPResult,
    ep_gradient_weights,
    ep_log_marginal,
    expectation_propagation,
    pair_probabilities,
)
from .estimator import GPPreferenceEP
from .laplace import GPPLLaplace, LaplaceResult, laplace_approximation
from .posterior import LatentPosterior
from .svi import (
    GPPL,
    GammaFactor,
    GaussianFactor,
    InducingProjection,
    beta_noise_variance,
    learning_rate,
    natural_gradient_step,
    probit_linearisation,
)
from .vi import GPPLVI, variational_inference

__all__ = [
    "GPPreferenceEP",
    "GPPL",
    "GPPLVI",
    "GPPLLaplace",
    "CrowdGPPL",
    "PairCounts",
    "expectation_propagation",
    "ep_log_marginal",
    "ep_gradient_weights",
    "EPResult",
    "laplace_approximation",
    "LaplaceResult",
    "LatentPosterior",
    "pair_probabilities",
    "GaussianFactor",
    "GammaFactor",
    "InducingProjection",
    "natural_gradient_step",
    "learning_rate",
    "probit_linearisation",
    "beta_noise_variance",
    "variational_inference",
]
