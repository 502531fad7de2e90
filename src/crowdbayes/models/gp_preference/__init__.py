"""Gaussian-process preference learning: EP and Laplace engines, and the EP estimator.

The engines are pure functions on a prior covariance and integer-coded comparisons, so GPPL
(SVI, VI), crowdGPPL and the Dirichlet-process mixture of GPs can share them.
"""

from ._likelihood import PairCounts
from .ep import (
    EPResult,
    ep_gradient_weights,
    ep_log_marginal,
    expectation_propagation,
    pair_probabilities,
)
from .estimator import GPPreferenceEP
from .laplace import LaplaceResult, laplace_approximation
from .posterior import LatentPosterior

__all__ = [
    "GPPreferenceEP",
    "PairCounts",
    "expectation_propagation",
    "ep_log_marginal",
    "ep_gradient_weights",
    "EPResult",
    "laplace_approximation",
    "LaplaceResult",
    "LatentPosterior",
    "pair_probabilities",
]
