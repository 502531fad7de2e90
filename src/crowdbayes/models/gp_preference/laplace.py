"""The Laplace approximation for Gaussian-process preference learning (Chu & Ghahramani, 2005).

Newton's method on ``Ψ(f) = Σ_k log ℓ_k(a_kᵀ f) - ½ fᵀ K⁻¹ f`` (Rasmussen & Williams, 2006,
Alg. 3.1 with the non-diagonal ``W = Aᵀ diag(w) A``, ``w_k = -∂² log ℓ_k ≥ 0``): the step
``f_new = (K⁻¹ + W)⁻¹ (W f + Aᵀ ∂ log ℓ)``, halved while it does not increase ``Ψ``. The
posterior is ``N(f̂, (K⁻¹ + W)⁻¹)`` and the log marginal likelihood
``log Z ≈ Ψ(f̂) - ½ log |I + K W|`` (their Eq. 3.32).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...inference.driver import IterationResult, run_iterations
from ...linalg import triangular_solve
from ._likelihood import PairCounts, log_likelihood_terms
from .posterior import LatentPosterior, difference_vector, prepare_problem
from .svi import GPPL, GammaFactor, GaussianFactor

__all__ = ["GPPLLaplace", "LaplaceResult", "laplace_approximation"]


@dataclass
class LaplaceResult:
    """Output of :func:`laplace_approximation`."""

    posterior: LatentPosterior
    log_marginal: float
    n_iter: int
    converged: bool


def laplace_approximation(
    K: np.ndarray,
    pairs: PairCounts,
    *,
    noise: float = 1.0,
    max_iter: int = 100,
    tol: float = 1e-10,
    chol_prior: np.ndarray | None = None,
) -> LaplaceResult:
    """Laplace approximation of the GP preference posterior (arguments as for
    :func:`~crowdbayes.models.gp_preference.expectation_propagation`)."""
    alpha, L = prepare_problem(K, pairs, noise, chol_prior)
    left, right = pairs.left, pairs.right
    n = L.shape[0]

    def objective(f: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        value, grad, hess = log_likelihood_terms(
            f[left] - f[right], pairs.wins, pairs.losses, alpha
        )
        white = triangular_solve(L, f)
        return float(value.sum() - 0.5 * white @ white), grad, hess

    state = {"f": np.zeros(n)}
    state["psi"], state["grad"], state["hess"] = objective(state["f"])

    def newton(_: int) -> float:
        f = state["f"]
        post = LatentPosterior(L, left, right, state["hess"], mean=f)
        target = post.cov @ (
            difference_vector(left, right, state["hess"] * (f[left] - f[right]), n)
            + difference_vector(left, right, state["grad"], n)
        )
        step = 1.0
        for _halving in range(30):
            candidate = f + step * (target - f)
            psi, grad, hess = objective(candidate)
            if psi >= state["psi"]:
                break
            step *= 0.5
        else:
            return state["psi"]
        state.update(f=candidate, psi=psi, grad=grad, hess=hess)
        return psi

    result = run_iterations(
        newton,
        max_iter=max_iter,
        tol=tol,
        monitor="objective",
        min_iter=2,
        warn_name="Laplace approximation",
    )
    posterior = LatentPosterior(L, left, right, state["hess"], mean=state["f"])
    return LaplaceResult(
        posterior=posterior,
        log_marginal=state["psi"] - 0.5 * posterior.log_det_inner(),
        n_iter=result.n_iter,
        converged=result.converged,
    )


class GPPLLaplace(GPPL):
    """GPPL with the Laplace approximation (for small data): the GP preference model of
    :class:`GPPL` (``f ~ GP(0, k_θ/s)``, probit likelihood ``Φ(d/α)``) with the training
    items as inducing points and the posterior ``N(f̂, (K⁻¹ŝ + W)⁻¹)`` at the mode, found by
    :func:`laplace_approximation` (Newton; Rasmussen & Williams, 2006, Alg. 3.1), the
    comparison the papers make against SVI and full-batch VI (Simpson & Gurevych, 2018,
    Sec. 5; 2020, Sec. 5.1). Ties with ``ties="half"`` have likelihood ``Φ(z)^½ Φ(-z)^½``.

    The inverse scale is not inferred: ``s`` is fixed at its prior mean ``a₀/b₀``
    (``scale_`` keeps the prior). ``lower_bound_`` is the Laplace estimate of the log
    marginal likelihood (their Eq. 3.32), also given as ``log_marginal_likelihood_``.
    Takes :class:`GPPL`'s parameters; ``n_inducing``, ``batch_size``, ``forgetting_rate``,
    ``delay``, ``n_inner`` and ``random_state`` are ignored, and ``optimize_lengthscale`` is
    not offered (use :class:`~.estimator.GPPreferenceEP` for type-II maximum likelihood).
    ``tol`` bounds the change of the log posterior between Newton steps. Cost ``O(N³)`` in
    the number of compared items.
    """

    def __init__(self, kernel="matern32", lengthscale="median", **kwargs) -> None:
        kwargs.setdefault("tol", 1e-10)
        kwargs.setdefault("max_iter", 100)
        super().__init__(kernel, lengthscale, **kwargs)

    def _check_params(self) -> None:
        super()._check_params()
        if self.optimize_lengthscale:
            raise ValueError(
                "GPPLLaplace does not optimise length-scales; use GPPreferenceEP("
                "optimize_lengthscale=True) or GPPL"
            )

    def _inducing_points(self, X_train, rng):
        return X_train

    def _infer(self, projection, start, rng, progress):
        pairs = self._pairs
        items = np.unique(np.concatenate([pairs.left, pairs.right]))
        counts = PairCounts.from_comparisons(
            np.searchsorted(items, pairs.left),
            np.searchsorted(items, pairs.right),
            np.rint(2.0 * pairs.y - 1.0).astype(int),
        )
        scale = GammaFactor.prior(self.shape_s0, self.rate_s0)
        found = laplace_approximation(
            projection.K_mm / scale.mean,
            counts,
            noise=self.noise,
            max_iter=self.max_iter,
            tol=self.tol,
            chol_prior=projection.chol / math.sqrt(scale.mean),
        )
        self.log_marginal_likelihood_ = found.log_marginal
        factor = GaussianFactor.from_moments(found.posterior.mean, found.posterior.cov)
        result = IterationResult(n_iter=found.n_iter, converged=found.converged)
        return factor, scale, result

    def _bound(self, projection, factor, scale) -> float:
        return self.log_marginal_likelihood_
