"""Inference strategies for GP preference models: a model is *given* one, it does not inherit
one.

A GP preference model says what it is — utilities ``f ~ GP(0, k_θ/s)``, ``s ~ Gamma(a₀, b₀)``,
a probit likelihood on utility differences (:mod:`.problem`) — and a strategy says how to fit
it. Every strategy here offers, for that model,

- ``inducing_points(X_train, rng)``: where the posterior is represented (K-means centres for
  SVI; every compared item for the others);
- ``fit(problem, projection, *, start, rng, progress, warn_name)``: the posterior ``q(u)`` at
  those inputs and ``q(s)``, as a :class:`~.problem.UtilityFit`;
- ``bound(problem, projection, fit)``: the objective it maximises (the linearised evidence
  lower bound for SVI and VI, the log marginal likelihood estimate for EP and Laplace);
- ``optimises_lengthscale``: whether :func:`maximise_bound` can tune the length-scales with it.

The strategies:

:class:`SVI`
    Stochastic variational inference with inducing points (Simpson & Gurevych, 2020,
    Algorithm 1; :mod:`.svi`); its mini-batch driver :meth:`SVI.run` also serves models with
    several blocks of natural-gradient updates (crowdGPPL).
:class:`VI`
    Full-batch variational inference on all compared items (:mod:`.vi`).
:class:`Laplace`
    The Laplace approximation (Rasmussen & Williams, 2006, Alg. 3.1; :mod:`.laplace`), ``s``
    fixed at its prior mean.
:class:`EP`
    Expectation propagation (Minka, 2001; Abbasnejad et al., 2013; :mod:`.ep`), ``s`` fixed at
    its prior mean; :meth:`EP.run` and :meth:`EP.run_sparse` also run it on an explicit prior
    covariance or on inducing items (:mod:`.sparse_ep`), as the exact-GP estimator and the
    community sampler do, and :meth:`EP.maximise_evidence` is type-II maximum likelihood.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..exceptions import ConvergenceWarning
from ..inference.driver import IterationResult
from ..kernels import Kernel, kmeans_inducing_points
from ..linalg import safe_cholesky
from .ep import EPResult, check_damping, ep_gradient_weights, expectation_propagation
from .factors import GammaFactor, GaussianFactor
from .inducing import InducingProjection
from .laplace import LaplaceResult, laplace_approximation
from .likelihood import PairCounts
from .problem import PreferenceProblem, UtilityFit, linearised_bound
from .sparse_ep import InducingBasis, SparseEPResult, sparse_ep
from .svi import resolve_batch_size, run_svi, stochastic_variational_inference
from .vi import variational_inference

if TYPE_CHECKING:
    from scipy.optimize import OptimizeResult

__all__ = ["InferenceStrategy", "SVI", "VI", "Laplace", "EP", "maximise_bound"]


class InferenceStrategy:
    """What a GP preference model asks of its inference strategy (module docstring).

    Subclasses implement :meth:`inducing_points`, :meth:`bound` and ``_fit`` (the work of
    :meth:`fit`), and say whether :func:`maximise_bound` can tune length-scales with them.
    """

    optimises_lengthscale: ClassVar[bool] = False
    #: names the model in a :class:`ConvergenceWarning` when ``fit`` is not given a name
    default_warn_name: ClassVar[str | None] = None

    def inducing_points(self, X_train: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Where the posterior is represented, among the compared items' rows ``X_train``."""
        raise NotImplementedError

    def bound(
        self, problem: PreferenceProblem, projection: InducingProjection, fit: UtilityFit
    ) -> float:
        """The objective the strategy maximises, at ``fit``."""
        raise NotImplementedError

    def fit(
        self,
        problem: PreferenceProblem,
        projection: InducingProjection,
        *,
        start: tuple[GaussianFactor, GammaFactor] | None = None,
        rng: np.random.Generator | None = None,
        progress: bool = False,
        warn_name: str | None = None,
    ) -> UtilityFit:
        """``q(u)`` at the inducing inputs of ``projection`` and ``q(s)`` for ``problem``;
        ``start = (q(u), q(s))`` warm-starts the iterative strategies, ``rng`` draws SVI's
        mini-batches, ``warn_name`` names the model in a :class:`ConvergenceWarning`."""
        name = warn_name if warn_name is not None else self.default_warn_name
        return self._fit(problem, projection, start, rng, progress, name)

    def _fit(self, problem, projection, start, rng, progress, warn_name) -> UtilityFit:
        raise NotImplementedError


class _AtTheItems(InferenceStrategy):
    """Strategies that represent the posterior at every compared item."""

    def inducing_points(self, X_train: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return X_train


class _LinearisedBound(InferenceStrategy):
    """Strategies that maximise the linearised bound (:func:`~.problem.linearised_bound`),
    whose length-scale gradient at fixed ``q`` is known."""

    optimises_lengthscale: ClassVar[bool] = True

    def bound(
        self, problem: PreferenceProblem, projection: InducingProjection, fit: UtilityFit
    ) -> float:
        return linearised_bound(problem, projection, fit.factor, fit.scale)


class _FixedScale(_AtTheItems):
    """Latent-Gaussian strategies on the explicit prior ``K/E[s]`` at the compared items, ``s``
    fixed at its prior mean (``q(s)`` stays the prior); the bound is their estimate of the log
    marginal likelihood (no length-scale gradient)."""

    def _fit_fixed_scale(
        self, problem: PreferenceProblem, projection: InducingProjection, run: Callable
    ) -> UtilityFit:
        counts = problem.pair_counts()
        scale = problem.prior
        found = run(
            projection.K_mm / scale.mean,
            counts,
            noise=problem.noise,
            chol_prior=projection.chol / math.sqrt(scale.mean),
        )
        factor = GaussianFactor.from_moments(found.posterior.mean, found.posterior.cov)
        return UtilityFit(
            factor, scale, found.n_iter, found.converged, log_marginal=found.log_marginal
        )

    def bound(
        self, problem: PreferenceProblem, projection: InducingProjection, fit: UtilityFit
    ) -> float:
        return fit.log_marginal


@dataclass(frozen=True)
class SVI(_LinearisedBound):
    """Stochastic variational inference with ``n_inducing`` K-means inducing points, mini-batches
    of ``batch_size`` comparisons (None: all; ``"auto"``: all where that costs less than a
    pass of mini-batches, :func:`~.svi.resolve_batch_size`), steps
    ``ρ_n = (n + delay)^{-forgetting_rate}``,
    ``n_inner`` relinearisations per mini-batch, ``max_iter`` iterations and tolerance ``tol``
    on the change per pass through the data (:mod:`.svi`)."""

    n_inducing: int = 200
    batch_size: int | str | None = 1000
    forgetting_rate: float = 0.9
    delay: float = 1.0
    n_inner: int = 2
    max_iter: int = 1000
    tol: float | None = 1e-2

    default_warn_name: ClassVar[str | None] = "SVI"

    def __post_init__(self) -> None:
        batch = 1 if self.batch_size in (None, "auto") else self.batch_size
        if min(self.n_inducing, self.n_inner, batch) < 1:
            raise ValueError("SVI: n_inducing, n_inner and batch_size must be at least 1")
        if not (0.0 <= self.forgetting_rate <= 1.0 and self.delay >= 0.0):
            raise ValueError("SVI: forgetting_rate must lie in [0, 1] and delay be ≥ 0")

    def inducing_points(self, X_train: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return kmeans_inducing_points(X_train, self.n_inducing, random_state=rng)

    def batch_for(self, n_items: int, n_pairs: int, n_inducing: int) -> int | None:
        """The mini-batch size of a fit to ``n_pairs`` comparisons of ``n_items`` items with
        ``n_inducing`` inducing points (None: all; :func:`~.svi.resolve_batch_size`)."""
        return resolve_batch_size(self.batch_size, n_items, n_pairs, n_inducing)

    def run(
        self,
        update: Callable[[float, np.ndarray | slice, float], None],
        monitored: Callable[[], object],
        n_obs: int,
        rng: np.random.Generator,
        *,
        progress: bool = False,
        desc: str = "SVI",
        warn_name: str | None = "SVI",
        change: Callable[[object, object], float] | None = None,
    ) -> IterationResult:
        """The mini-batch schedule (:func:`~.svi.run_svi`) around a model's own ``update``;
        ``batch_size="auto"`` must be resolved first (:meth:`batch_for`)."""
        if self.batch_size == "auto":
            raise ValueError("SVI.run: resolve batch_size='auto' first (SVI.batch_for)")
        return run_svi(
            update,
            monitored,
            n_obs,
            rng,
            **self._schedule(),
            progress=progress,
            desc=desc,
            warn_name=warn_name,
            change=change,
        )

    def _schedule(self) -> dict:
        """The settings of the mini-batch schedule, as :func:`~.svi.run_svi` takes them."""
        return {
            "batch_size": self.batch_size,
            "delay": self.delay,
            "forgetting_rate": self.forgetting_rate,
            "max_iter": self.max_iter,
            "tol": self.tol,
        }

    def _fit(self, problem, projection, start, rng, progress, warn_name) -> UtilityFit:
        factor, scale, result = stochastic_variational_inference(
            problem,
            projection,
            rng if rng is not None else np.random.default_rng(),
            n_inner=self.n_inner,
            start=start,
            **self._schedule(),
            progress=progress,
            desc="GPPL SVI",
            warn_name=warn_name,
        )
        return UtilityFit(factor, scale, result.n_iter, result.converged, result.history)


@dataclass(frozen=True)
class VI(_LinearisedBound, _AtTheItems):
    """Full-batch variational inference on every compared item: ``max_iter`` fixed-point
    iterations, tolerance ``tol`` on the relative change of the mean (:mod:`.vi`)."""

    max_iter: int = 200
    tol: float | None = 1e-6

    default_warn_name: ClassVar[str | None] = "GPPL variational inference"

    def bound(
        self, problem: PreferenceProblem, projection: InducingProjection, fit: UtilityFit
    ) -> float:
        """The linearised bound, its pair moments through the items (inducing inputs are the
        compared items, so the item matrices are no larger than ``K_mm``)."""
        return linearised_bound(problem, projection, fit.factor, fit.scale, through_items=True)

    def _fit(self, problem, projection, start, rng, progress, warn_name) -> UtilityFit:
        factor, scale, result = variational_inference(
            projection,
            problem.left,
            problem.right,
            problem.pairs.y,
            problem.noise_var,
            problem.prior,
            alpha=problem.alpha,
            max_iter=self.max_iter,
            tol=self.tol,
            start=start,
            progress=progress,
            warn_name=warn_name,
        )
        return UtilityFit(factor, scale, result.n_iter, result.converged, result.history)


@dataclass(frozen=True)
class Laplace(_FixedScale):
    """The Laplace approximation: Newton's method for at most ``max_iter`` steps, until the log
    posterior changes by less than ``tol`` (relative) (:mod:`.laplace`)."""

    max_iter: int = 100
    tol: float | None = 1e-10

    def run(
        self,
        K: np.ndarray,
        pairs: PairCounts,
        *,
        noise: float,
        chol_prior: np.ndarray | None = None,
    ) -> LaplaceResult:
        """:func:`~.laplace.laplace_approximation` on the prior covariance ``K``."""
        return laplace_approximation(
            K, pairs, noise=noise, max_iter=self.max_iter, tol=self.tol, chol_prior=chol_prior
        )

    def _fit(self, problem, projection, start, rng, progress, warn_name) -> UtilityFit:
        return self._fit_fixed_scale(problem, projection, self.run)


@dataclass(frozen=True)
class EP(_FixedScale):
    """Parallel expectation propagation, each sweep moving the sites a fraction ``damping`` of
    the way (``"auto"``: adapted to the site changes, :mod:`.ep`), for at most
    ``max_iter`` sweeps, until no site asks for a relative change above ``tol`` (:mod:`.ep`)."""

    damping: float | str = 0.5
    max_iter: int = 200
    tol: float | None = 1e-6

    def __post_init__(self) -> None:
        check_damping(self.damping)

    def run(
        self,
        K: np.ndarray,
        pairs: PairCounts,
        *,
        noise: float,
        sites: tuple[np.ndarray, np.ndarray] | None = None,
        chol_prior: np.ndarray | None = None,
        progress: bool = False,
    ) -> EPResult:
        """:func:`~.ep.expectation_propagation` on the prior covariance ``K``."""
        return expectation_propagation(
            K,
            pairs,
            noise=noise,
            damping=self.damping,
            max_iter=self.max_iter,
            tol=self.tol,
            sites=sites,
            chol_prior=chol_prior,
            progress=progress,
        )

    def run_sparse(
        self,
        basis: InducingBasis,
        pairs: PairCounts,
        *,
        noise: float,
        sites: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> SparseEPResult:
        """:func:`~.sparse_ep.sparse_ep` on inducing items (the DTC prior of ``basis``)."""
        return sparse_ep(
            basis,
            pairs,
            noise=noise,
            damping=self.damping,
            max_iter=self.max_iter,
            tol=self.tol,
            sites=sites,
        )

    def _fit(self, problem, projection, start, rng, progress, warn_name) -> UtilityFit:
        def run(K, counts, *, noise, chol_prior):
            return self.run(K, counts, noise=noise, chol_prior=chol_prior, progress=progress)

        return self._fit_fixed_scale(problem, projection, run)

    def maximise_evidence(
        self,
        kernel: Kernel,
        X: np.ndarray,
        pairs: PairCounts,
        *,
        noise: float,
        what: str = "prior covariance",
        maxiter: int = 50,
    ) -> tuple[Kernel, tuple[np.ndarray, np.ndarray], OptimizeResult]:
        """Type-II maximum likelihood over log length-scales: L-BFGS-B on ``-log Z_EP`` with
        the analytic gradient (:func:`~.ep.ep_gradient_weights`), EP warm-started from the
        previous sites at each evaluation, within a factor ``e⁵`` of the start.

        Returns the tuned kernel, the sites of the last evaluation and the optimiser's result.
        """
        state = {"sites": None}

        def objective(trial: Kernel) -> tuple[float, np.ndarray]:
            K = trial(X)
            result = self.run(
                K, pairs, noise=noise, sites=state["sites"], chol_prior=safe_cholesky(K, what=what)
            )
            state["sites"] = (result.site_precision, result.site_linear)
            grad = trial.gradient_contract(ep_gradient_weights(result.posterior), X)
            return -result.log_marginal, -grad

        tuned, found = _search_lengthscales(kernel, objective, maxiter)
        return tuned, state["sites"], found


def maximise_bound(
    strategy: InferenceStrategy,
    problem: PreferenceProblem,
    kernel: Kernel,
    Z: np.ndarray,
    rng: np.random.Generator,
    *,
    maxiter: int = 30,
) -> tuple[Kernel, OptimizeResult]:
    """L-BFGS-B on ``-bound`` over the log length-scales of ``kernel`` (inducing inputs ``Z``
    fixed), refitting ``q`` warm-started at each evaluation, within a factor ``e⁵`` of the
    start.

    At fixed ``q`` the gradient through ``K_mm`` is ``Σ_ij G_ij ∂(K_mm)_ij/∂θ`` with
    ``G = ½ (ŝ K_mm⁻¹ (S + m mᵀ) K_mm⁻¹ - K_mm⁻¹)`` (Simpson & Gurevych, 2018, Eqs. 11–13,
    corrected; :meth:`~.inducing.InducingProjection.bound_gradient`). As in the paper, the
    dependence of the likelihood term on ``θ`` through ``A = K_nm K_mm⁻¹`` is left out; it
    vanishes when the inducing points are the training items (full-batch VI), where the
    gradient is exact. Returns the tuned kernel and the optimiser's result.
    """
    if not strategy.optimises_lengthscale:
        raise ValueError(f"{type(strategy).__name__} does not optimise length-scales")
    state: dict = {"start": None}

    def objective(trial: Kernel) -> tuple[float, np.ndarray]:
        projection = InducingProjection(trial, Z)
        fit = strategy.fit(problem, projection, start=state["start"], rng=rng)
        state["start"] = (fit.factor, fit.scale)
        value = strategy.bound(problem, projection, fit)
        return -value, -projection.bound_gradient(fit.factor, fit.scale)

    return _search_lengthscales(kernel, objective, maxiter)


def _search_lengthscales(
    kernel: Kernel, objective: Callable[[Kernel], tuple[float, np.ndarray]], maxiter: int
) -> tuple[Kernel, OptimizeResult]:
    """L-BFGS-B over the log length-scales of ``kernel`` on ``objective(kernel with them)``,
    which returns the value to minimise and its gradient in the log length-scales; from the
    kernel's length-scales, within a factor ``e⁵`` of them. The inner fits may stop early: their
    :class:`ConvergenceWarning` is silenced (the final fit reports its own)."""
    from scipy.optimize import minimize

    start = np.log(kernel.lengthscale)

    def in_logs(log_ls: np.ndarray) -> tuple[float, np.ndarray]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return objective(kernel.with_lengthscale(np.exp(log_ls)))

    found = minimize(
        in_logs,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=[(v - 5.0, v + 5.0) for v in start],
        options={"maxiter": maxiter},
    )
    return kernel.with_lengthscale(np.exp(found.x)), found
