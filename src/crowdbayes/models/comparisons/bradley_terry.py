r"""Bradley–Terry scores from pairwise comparisons, with Davidson ties and unreliable workers.

:class:`BradleyTerry` is the plain model: item scores :math:`s_i \sim N(0, \sigma^2)`, each
comparison an outcome (left, right or tie) of the Davidson likelihood
(:mod:`~crowdbayes.models.comparisons._davidson`), fitted by Newton's method to the posterior
mode and summarised by the Laplace approximation (the inverse Hessian at the mode gives every
score's posterior sd and interval).

References
----------
Bradley, R. A. & Terry, M. E. (1952). Rank analysis of incomplete block designs. Biometrika 39.
Davidson, R. R. (1970). On extending the Bradley–Terry model to accommodate ties in paired
comparison experiments. JASA 65(329).
"""

from __future__ import annotations

import numpy as np

from ...data.comparisons import Comparisons
from ...data.io import TableLike
from ...inference.driver import run_iterations
from ._base import SHARED_CONSTRAINTS, BradleyTerryBase
from ._solver import TIE_PRIOR_MEAN, _ScoreProblem, observed_weights

__all__ = ["BradleyTerry"]


class BradleyTerry(BradleyTerryBase):
    r"""Bradley–Terry scores with Davidson ties: posterior mode and Laplace intervals.

    :math:`s_i \sim N(0, \sigma^2)` (``prior_scale`` = σ), each comparison an outcome of
    Davidson's model (:mod:`crowdbayes.models.comparisons`), all workers trusted alike.
    Newton's method finds the mode; ``objective_history_`` is the log posterior after each
    Newton step (never decreasing).

    Parameters
    ----------
    tie_model : {"davidson", "none"}
        ``"davidson"`` models ties with a fitted tie strength ν (``tie_strength_``);
        ``"none"`` is the plain Bradley–Terry model, which cannot take ties (refused).
    prior_scale : float
        Prior sd of the scores (they are identified only up to a shift; the prior fixes it).
    max_iter, tol : Newton steps at most; stop when the objective changes by less than
        ``tol · max(1, |objective|)``.
    credible_level : float
        Level of the score intervals.
    progress : bool

    Attributes
    ----------
    utility_ : DataFrame (items × [mean, sd, lower, upper])
    tie_strength_ : float (0 with ``tie_model="none"``)
    n_iter_, converged_, objective_history_
    """

    parameter_constraints = dict(SHARED_CONSTRAINTS)
    flip = False

    def __init__(
        self,
        tie_model: str = "davidson",
        prior_scale: float = 2.0,
        max_iter: int = 100,
        tol: float | None = 1e-10,
        credible_level: float = 0.95,
        progress: bool = False,
    ) -> None:
        self.tie_model = tie_model
        self.prior_scale = prior_scale
        self.max_iter = max_iter
        self.tol = tol
        self.credible_level = credible_level
        self.progress = progress

    def fit(self, data: Comparisons | TableLike) -> BradleyTerry:
        """Fit to comparisons (a :class:`~crowdbayes.Comparisons` or a
        ``worker, left, right, label`` table; ``label`` = the preferred id or ``"equal"``)."""
        self.check_params()
        data, design = self._design(data)
        fit_theta = self.tie_model == "davidson"
        problem = _ScoreProblem(design, self.prior_scale**2, fit_theta)
        weights = observed_weights(design, np.ones(len(design.outcome)), flip=False)
        state = {"s": np.zeros(design.n_items), "theta": TIE_PRIOR_MEAN if fit_theta else -np.inf}

        def step(_):
            s, theta, value, change = problem.newton_step(state["s"], state["theta"], weights)
            state.update(s=s, theta=theta, change=change)
            return value

        result = run_iterations(
            step,
            max_iter=self.max_iter,
            tol=self.tol,
            progress=self.progress,
            desc="Bradley-Terry Newton",
            warn_name=type(self).__name__,
        )
        s, theta = state["s"], state["theta"]
        self._set_scores(data, s, problem.variances(s, theta, weights))
        self.tie_strength_ = float(np.exp(theta))
        self.n_iter_, self.converged_ = result.n_iter, result.converged
        self.objective_history_ = np.array(result.history)
        return self
