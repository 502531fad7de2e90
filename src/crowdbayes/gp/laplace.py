"""The Laplace approximation for Gaussian-process preference learning (Chu & Ghahramani, 2005).

Newton's method on ``Ψ(f) = Σ_k log ℓ_k(a_kᵀ f) - ½ fᵀ K⁻¹ f`` (Rasmussen & Williams, 2006,
Alg. 3.1 with the non-diagonal ``W = Aᵀ diag(w) A``, ``w_k = -∂² log ℓ_k ≥ 0``): the step
``f_new = (K⁻¹ + W)⁻¹ (W f + Aᵀ ∂ log ℓ)``, halved while it does not increase ``Ψ``. The
posterior is ``N(f̂, (K⁻¹ + W)⁻¹)`` and the log marginal likelihood
``log Z ≈ Ψ(f̂) - ½ log |I + K W|`` (their Eq. 3.32).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..inference.driver import run_iterations
from ..linalg import triangular_solve
from .likelihood import PairCounts, log_likelihood_terms
from .posterior import LatentPosterior, difference_vector, prepare_problem

__all__ = ["LaplaceResult", "laplace_approximation"]


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
    :func:`~crowdbayes.gp.expectation_propagation`)."""
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
