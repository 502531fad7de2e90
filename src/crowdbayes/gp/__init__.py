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
The names below are imported from their modules on first use (PEP 562), so that importing the
package, or one module of it, does not import SciPy's optimisers with every other module.
"""

from .._utils import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        # strategies and what they exchange with a model
        ".strategies": ("InferenceStrategy", "EP", "Laplace", "VI", "SVI", "maximise_bound"),
        ".problem": ("PreferenceProblem", "UtilityFit", "linearised_bound"),
        # likelihood and data
        ".likelihood": (
            "PairCounts",
            "difference_scale",
            "probit_terms",
            "log_likelihood_terms",
            "tilted_moments",
            "pair_probabilities",
        ),
        ".pairs": ("TIE_POLICIES", "EncodedPairs", "encode_pairs", "kept_comparisons"),
        # exact posteriors: EP and Laplace
        ".posterior": ("LatentPosterior",),
        ".ep": (
            "expectation_propagation",
            "parallel_ep",
            "initial_sites",
            "site_log_normalisers",
            "ep_log_marginal",
            "ep_gradient_weights",
            "EPResult",
        ),
        ".laplace": ("laplace_approximation", "LaplaceResult"),
        # EP on inducing items
        ".sparse_ep": (
            "InducingBasis",
            "SparsePosterior",
            "SparseEPResult",
            "sparse_ep",
            "choose_inducing",
        ),
        # variational inference
        ".factors": (
            "GaussianFactor",
            "GammaFactor",
            "natural_gradient_step",
            "learning_rate",
            "gaussian_prior_kl",
            "quadratic_rows",
        ),
        ".inducing": ("InducingProjection",),
        ".linearised": ("probit_linearisation", "beta_noise_variance", "expected_linear_loglik"),
        ".vi": ("variational_inference",),
        ".svi": ("run_svi", "stochastic_variational_inference"),
        # the item prior
        ".prior": ("make_item_kernel",),
        # what to ask next
        ".question_strategies": ("PAIR_QUESTION_VALUES", "INFORMATION_VALUED"),
        ".questions": (
            "question_order",
            "answer_probability",
            "pair_question_values",
            "probit_information_gain",
        ),
    },
)
