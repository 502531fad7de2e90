"""The GP engine shared by the GP preference models: the pairwise probit likelihood, Gaussian
posteriors over utilities, inducing points, and EP, Laplace, full-batch VI and SVI as
inference strategies that a model is given.

Modules, from the bottom up:

- :mod:`.likelihood` — the probit likelihood of comparisons grouped by pair, its derivatives,
  tilted moments and predictive probabilities; :mod:`.pairs` — the tie policy and soft labels;
- :mod:`.posterior` — Gaussian posteriors with difference-site precisions (EP, Laplace);
- :mod:`.ep`, :mod:`.laplace`, :mod:`.sparse_ep` — EP and Laplace on an explicit prior
  covariance, EP on inducing items;
- :mod:`.factors`, :mod:`.inducing`, :mod:`.linearised` — variational factors and their
  natural-gradient steps, the inducing-point projection, the linearised likelihood and bound;
- :mod:`.vi`, :mod:`.svi` — full-batch and stochastic variational inference;
- :mod:`.problem`, :mod:`.strategies` — what a model gives its strategy and gets back, and the
  strategies :class:`SVI`, :class:`VI`, :class:`Laplace`, :class:`EP`;
- :mod:`.prior` — the item kernel from a length-scale setting;
- :mod:`.questions` — the value of asking for one more comparison (BALD, uncertainty).

Nothing here imports a model family; the families under :mod:`crowdbayes.models` build on it.
"""

from .ep import (
    EPResult,
    ep_gradient_weights,
    ep_log_marginal,
    expectation_propagation,
    initial_sites,
    parallel_ep,
    site_log_normalisers,
)
from .factors import (
    GammaFactor,
    GaussianFactor,
    gaussian_prior_kl,
    learning_rate,
    natural_gradient_step,
    quadratic_rows,
)
from .inducing import InducingProjection
from .laplace import LaplaceResult, laplace_approximation
from .likelihood import (
    PairCounts,
    difference_scale,
    log_likelihood_terms,
    pair_probabilities,
    probit_terms,
    tilted_moments,
)
from .linearised import beta_noise_variance, expected_linear_loglik, probit_linearisation
from .pairs import TIE_POLICIES, EncodedPairs, encode_pairs, kept_comparisons
from .posterior import LatentPosterior
from .prior import make_item_kernel
from .problem import PreferenceProblem, UtilityFit, linearised_bound
from .questions import (
    INFORMATION_VALUED,
    PAIR_QUESTION_VALUES,
    answer_probability,
    pair_question_values,
    probit_information_gain,
    question_order,
)
from .sparse_ep import (
    InducingBasis,
    SparseEPResult,
    SparsePosterior,
    choose_inducing,
    sparse_ep,
)
from .strategies import EP, SVI, VI, InferenceStrategy, Laplace, maximise_bound
from .svi import run_svi, stochastic_variational_inference
from .vi import variational_inference

__all__ = [
    # strategies and what they exchange with a model
    "InferenceStrategy",
    "EP",
    "Laplace",
    "VI",
    "SVI",
    "maximise_bound",
    "PreferenceProblem",
    "UtilityFit",
    # likelihood and data
    "PairCounts",
    "difference_scale",
    "probit_terms",
    "log_likelihood_terms",
    "tilted_moments",
    "pair_probabilities",
    "TIE_POLICIES",
    "EncodedPairs",
    "encode_pairs",
    "kept_comparisons",
    # exact posteriors: EP and Laplace
    "LatentPosterior",
    "expectation_propagation",
    "parallel_ep",
    "initial_sites",
    "site_log_normalisers",
    "ep_log_marginal",
    "ep_gradient_weights",
    "EPResult",
    "laplace_approximation",
    "LaplaceResult",
    # EP on inducing items
    "InducingBasis",
    "SparsePosterior",
    "SparseEPResult",
    "sparse_ep",
    "choose_inducing",
    # variational inference
    "GaussianFactor",
    "GammaFactor",
    "InducingProjection",
    "natural_gradient_step",
    "learning_rate",
    "gaussian_prior_kl",
    "quadratic_rows",
    "probit_linearisation",
    "beta_noise_variance",
    "expected_linear_loglik",
    "linearised_bound",
    "variational_inference",
    "run_svi",
    "stochastic_variational_inference",
    # the item prior
    "make_item_kernel",
    # what to ask next
    "PAIR_QUESTION_VALUES",
    "INFORMATION_VALUED",
    "question_order",
    "answer_probability",
    "pair_question_values",
    "probit_information_gain",
]
