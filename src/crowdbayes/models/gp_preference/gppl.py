"""GPPL, pooled over workers, with three inference strategies: ``GPPL`` (SVI with inducing
points, for large data), ``GPPLVI`` (full-batch variational inference) and ``GPPLLaplace`` (the
Laplace approximation), both for small data.

The three estimators are one model (:mod:`._gppl`; Simpson & Gurevych, 2018; 2020, Sec. 3.1)
given different strategies of the GP engine (:mod:`crowdbayes.gp.strategies`): each declares
its parameters and builds its strategy from them, nothing else. The maths of each strategy is
in :mod:`crowdbayes.gp.svi`, :mod:`crowdbayes.gp.vi` and :mod:`crowdbayes.gp.laplace`; the
linearised likelihood and the bound of SVI and VI in :mod:`crowdbayes.gp.linearised`.
"""

from __future__ import annotations

import numpy as np

from ..._utils import RandomState
from ...base import Options
from ...gp import SVI, VI, Laplace
from ...kernels import Kernel
from ._base import SHARED_CONSTRAINTS, constraints_of
from ._gppl import GPPLBase

__all__ = ["GPPL", "GPPLVI", "GPPLLaplace"]

_SHARED_PARAMETERS = """kernel : {"matern32", "rbf"} or Kernel
        Item covariance ``k_θ`` (unit variance; the scale is ``1/s``).
    lengthscale : {"auto", "median", "scaled_median"}, float or array
        As for :class:`~.ep.GPPreferenceEP`.
    shape_s0, rate_s0 : float
        Gamma prior on the inverse scale ``s`` (shape, rate; ``E[s] = shape/rate``).
    noise : float
        Judgment noise sd ``σ``; the likelihood is ``Φ(d / (√2 σ))``.
    ties : {"drop", "half"}
        Ties dropped (with a warning) or observed as ``y = ½``."""


class GPPL(GPPLBase):
    """GP preference learning (GPPL) by stochastic variational inference (Simpson & Gurevych,
    2018; 2020, Sec. 4.2, Algorithm 1): the GPPL model given the
    :class:`~crowdbayes.gp.SVI` strategy.

    Pooled over workers: every comparison is taken to come from one utility function. See
    :mod:`._gppl` for the model, :mod:`crowdbayes.gp.linearised` for the likelihood
    approximation and :mod:`crowdbayes.gp.svi` for the updates.

    Parameters
    ----------
    {shared}
    n_inducing : int
        Number of K-means inducing points (all distinct items if there are fewer).
    batch_size : int, None or "auto"
        Comparisons per SVI iteration (None: all, i.e. full-batch natural-gradient VI).
        ``"auto"`` takes all of them where a step over all, computed through the compared
        items (``O(N M² + P M)`` for ``N`` items and ``P`` comparisons), costs less than one
        pass of mini-batches (``O(P M²)``; roughly: more than two comparisons per item), and
        mini-batches of 1000 otherwise (:func:`crowdbayes.gp.svi.resolve_batch_size`).
    forgetting_rate, delay : float
        Step sizes ``ρ_n = (n + delay)^{-forgetting_rate}``.
    max_iter, tol : int, float
        SVI iterations (mini-batches), and the tolerance on the root-mean-square change of the
        inducing mean over one pass through the data (``⌈P / batch_size⌉`` iterations),
        relative to its root-mean-square size (checked after every pass).
    n_inner : int
        Relinearisations per mini-batch (Algorithm 1's inner loop).
    optimize_lengthscale : bool
        Maximise the bound over the log length-scales by L-BFGS-B (each evaluation refits,
        warm-started; :func:`crowdbayes.gp.maximise_bound` gives the gradient).
    random_state : seed or Generator
        For the K-means inducing points and the mini-batches.
    progress : bool
        Progress bar over SVI iterations.

    Attributes
    ----------
    utility_ : DataFrame (items × [mean, sd])
    inducing_points_ : ndarray (M, D)
    scale_ : GammaFactor
        ``q(s)``; ``scale_.mean`` is ``E[s]``.
    lower_bound_ : float
    lengthscale_ : Series or None
    optimize_result_ : OptimizeResult
        The length-scale search, with ``optimize_lengthscale`` (not saved by :meth:`save`).
    n_iter_, converged_, history_, n_ties_dropped_
    """

    parameter_constraints = constraints_of(
        "kernel",
        "lengthscale",
        "n_inducing",
        "forgetting_rate",
        "delay",
        "shape_s0",
        "rate_s0",
        "noise",
        "ties",
        "max_iter",
        "tol",
        "n_inner",
        "optimize_lengthscale",
        "random_state",
        "progress",
        batch_size=[Options("auto"), *SHARED_CONSTRAINTS["batch_size"]],
    )

    def __init__(
        self,
        kernel: str | Kernel = "matern32",
        lengthscale: str | float | np.ndarray = "auto",
        *,
        n_inducing: int = 200,
        batch_size: int | str | None = "auto",
        forgetting_rate: float = 0.9,
        delay: float = 1.0,
        shape_s0: float = 2.0,
        rate_s0: float = 2.0,
        noise: float = 1.0,
        ties: str = "drop",
        max_iter: int = 1000,
        tol: float | None = 1e-2,
        n_inner: int = 2,
        optimize_lengthscale: bool = False,
        random_state: RandomState = None,
        progress: bool = False,
    ) -> None:
        self.kernel = kernel
        self.lengthscale = lengthscale
        self.n_inducing = n_inducing
        self.batch_size = batch_size
        self.forgetting_rate = forgetting_rate
        self.delay = delay
        self.shape_s0 = shape_s0
        self.rate_s0 = rate_s0
        self.noise = noise
        self.ties = ties
        self.max_iter = max_iter
        self.tol = tol
        self.n_inner = n_inner
        self.optimize_lengthscale = optimize_lengthscale
        self.random_state = random_state
        self.progress = progress

    def _inference(self) -> SVI:
        return SVI(
            n_inducing=self.n_inducing,
            batch_size=self.batch_size,
            forgetting_rate=self.forgetting_rate,
            delay=self.delay,
            n_inner=self.n_inner,
            max_iter=self.max_iter,
            tol=self.tol,
        )


class GPPLVI(GPPLBase):
    """GPPL by full-batch variational inference (Simpson & Gurevych, 2018, App. A; 2020,
    App. A): the GPPL model given the :class:`~crowdbayes.gp.VI` strategy, with the training
    items as inducing points and exact (not stochastic) updates
    (:func:`crowdbayes.gp.variational_inference`; Anderson-accelerated, so the scale ``q(s)``
    settles in about as many iterations as the mean). Deterministic. Cost ``O(N³)`` per
    iteration in the number of compared items (one Cholesky factorisation; about a second for
    1,000 items and 10,000 comparisons on one core): for small data.

    Parameters
    ----------
    {shared}
    max_iter, tol : int, float
        Iterations, and the tolerance on the root-mean-square change of the posterior mean
        relative to its root-mean-square size and on the relative change of the rate of
        ``q(s)``, in one plain step.
    optimize_lengthscale : bool
        Maximise the bound over the log length-scales by L-BFGS-B (exact gradient here).
    progress : bool
        Progress bar over the iterations.

    Attributes
    ----------
    As for :class:`GPPL`.
    """

    parameter_constraints = constraints_of(
        "kernel",
        "lengthscale",
        "shape_s0",
        "rate_s0",
        "noise",
        "ties",
        "max_iter",
        "tol",
        "optimize_lengthscale",
        "progress",
    )

    def __init__(
        self,
        kernel: str | Kernel = "matern32",
        lengthscale: str | float | np.ndarray = "auto",
        *,
        shape_s0: float = 2.0,
        rate_s0: float = 2.0,
        noise: float = 1.0,
        ties: str = "drop",
        max_iter: int = 200,
        tol: float | None = 1e-6,
        optimize_lengthscale: bool = False,
        progress: bool = False,
    ) -> None:
        self.kernel = kernel
        self.lengthscale = lengthscale
        self.shape_s0 = shape_s0
        self.rate_s0 = rate_s0
        self.noise = noise
        self.ties = ties
        self.max_iter = max_iter
        self.tol = tol
        self.optimize_lengthscale = optimize_lengthscale
        self.progress = progress

    def _inference(self) -> VI:
        return VI(max_iter=self.max_iter, tol=self.tol)


class GPPLLaplace(GPPLBase):
    """GPPL with the Laplace approximation (for small data): the GPPL model given the
    :class:`~crowdbayes.gp.Laplace` strategy, with the training items as inducing points and
    the posterior ``N(f̂, (K⁻¹ŝ + W)⁻¹)`` at the mode, found by Newton's method (Rasmussen &
    Williams, 2006, Alg. 3.1; :func:`crowdbayes.gp.laplace_approximation`), the comparison the
    papers make against SVI and full-batch VI (Simpson & Gurevych, 2018, Sec. 5; 2020,
    Sec. 5.1). Ties with ``ties="half"`` have likelihood ``Φ(z)^½ Φ(-z)^½``.

    The inverse scale is not inferred: ``s`` is fixed at its prior mean ``a₀/b₀``
    (``scale_`` keeps the prior). ``lower_bound_`` is the Laplace estimate of the log
    marginal likelihood (their Eq. 3.32), also given as ``log_marginal_likelihood_``.
    Length-scales are not optimised (use :class:`~.ep.GPPreferenceEP` with
    ``optimize_lengthscale=True`` for type-II maximum likelihood). Deterministic. Cost
    ``O(N³)`` in the number of compared items.

    Parameters
    ----------
    {shared}
    max_iter, tol : int, float
        Newton steps, and the bound on the change of the log posterior between them (relative
        to its size).

    Attributes
    ----------
    As for :class:`GPPL`, plus ``log_marginal_likelihood_``.
    """

    parameter_constraints = constraints_of(
        "kernel",
        "lengthscale",
        "shape_s0",
        "rate_s0",
        "noise",
        "ties",
        "max_iter",
        "tol",
    )

    def __init__(
        self,
        kernel: str | Kernel = "matern32",
        lengthscale: str | float | np.ndarray = "auto",
        *,
        shape_s0: float = 2.0,
        rate_s0: float = 2.0,
        noise: float = 1.0,
        ties: str = "drop",
        max_iter: int = 100,
        tol: float | None = 1e-10,
    ) -> None:
        self.kernel = kernel
        self.lengthscale = lengthscale
        self.shape_s0 = shape_s0
        self.rate_s0 = rate_s0
        self.noise = noise
        self.ties = ties
        self.max_iter = max_iter
        self.tol = tol

    #: Newton's method here always starts from zero (and is cheap on the small data it suits)
    _tags = {"warm_start": False}

    def _inference(self) -> Laplace:
        return Laplace(max_iter=self.max_iter, tol=self.tol)


for _cls in (GPPL, GPPLVI, GPPLLaplace):
    _cls.__doc__ = _cls.__doc__.replace("{shared}", _SHARED_PARAMETERS)
