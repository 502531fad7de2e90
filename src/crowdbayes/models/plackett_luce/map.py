"""MAP Plackett–Luce with item features: the conditional-logit baseline.

θ̂ = argmax_θ Σ_l [x_{c_l}ᵀθ − log Σ_{j∈A_l} exp(x_jᵀθ)] − η/2 ‖θ‖², a smooth strictly concave
problem (McFadden's conditional logit with a Gaussian prior N(0, I/η); Guo et al. 2019 §5.2 call it
MAP). Solved by L-BFGS with the exact gradient Σ_l (x_{c_l} − Σ_j p_lj x_j) − ηθ.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import minimize

from ...base import NON_NEGATIVE, POSITIVE_INT
from ...data.rankings import Rankings
from ...exceptions import ConvergenceWarning
from ._base import FeatureModel
from ._stages import stage_log_proba

__all__ = ["PlackettLuceMAP", "map_objective"]


def map_objective(theta: np.ndarray, rankings: Rankings, X: np.ndarray, eta: float):
    """Negative log-posterior (up to a constant) and its gradient."""
    utilities = X @ theta
    members = utilities[rankings.stage_items]
    log_p = stage_log_proba(members[:, None], rankings.stage_offsets)[:, 0]
    # p_lj for every member: exp(u_j − log-normaliser of its set)
    log_norm = members[rankings.stage_offsets[:-1]] - log_p
    p = np.exp(members - np.repeat(log_norm, rankings.stage_sizes))
    weight = np.bincount(rankings.chosen, minlength=len(X)) - np.bincount(
        rankings.stage_items, p, minlength=len(X)
    )
    value = -log_p.sum() + 0.5 * eta * theta @ theta
    gradient = -(X.T @ weight) + eta * theta
    return value, gradient


class PlackettLuceMAP(FeatureModel):
    """Point estimate of θ in s_i = exp(θᵀx_i) under the prior N(0, I/η).

    Parameters
    ----------
    eta : float
        Prior precision (L2 penalty); ``0`` gives maximum likelihood when it exists.
    tol : float
        Gradient tolerance of L-BFGS.
    max_iter : int

    Attributes
    ----------
    coef_ : Series, the MAP estimate (``coef_cov_`` is zero: a point estimate).
    log_posterior_ : float, the maximised objective.
    n_iter_, converged_
    """

    _diagnostics = {"log_posterior": "log_posterior_"}
    parameter_constraints = {
        "eta": [NON_NEGATIVE],
        "tol": [NON_NEGATIVE],
        "max_iter": [POSITIVE_INT],
    }

    def __init__(self, eta: float = 1.0, *, tol: float = 1e-8, max_iter: int = 1000) -> None:
        self.eta = eta
        self.tol = tol
        self.max_iter = max_iter

    def _fit(self, rankings: Rankings) -> None:
        X = rankings.require_features(type(self).__name__)
        result = minimize(
            map_objective,
            np.zeros(X.shape[1]),
            args=(rankings, X, float(self.eta)),
            jac=True,
            method="L-BFGS-B",
            options={"gtol": self.tol, "maxiter": self.max_iter, "ftol": 1e-15},
        )
        self.n_iter_ = int(result.nit)
        self.converged_ = bool(result.success)
        if not result.success:
            warnings.warn(
                f"PlackettLuceMAP: L-BFGS stopped without converging ({result.message})",
                ConvergenceWarning,
                stacklevel=3,
            )
        self.log_posterior_ = float(-result.fun)
        d = X.shape[1]
        self._set_posterior(rankings, result.x, np.zeros((d, d)))
