"""The GPPL model shared by GPPL, GPPLVI, GPPLLaplace and crowdGPPL: what the model is, not how
it is fitted.

Model (Simpson & Gurevych, 2018, Eqs. 1–2; 2020, Sec. 3.1): each item has a utility ``f(x)``
with prior ``f ~ GP(0, k_θ / s)`` over its features, ``s ~ Gamma(a₀, b₀)`` (shape, rate); the
comparison ``p`` of items ``a_p, b_p`` prefers ``a_p`` with probability ``Φ(z_p)``,
``z_p = (f(a_p) - f(b_p)) / α``, ``α = √2 σ``. The posterior of ``f`` is represented by
``q(u) = N(m, S)`` at inducing inputs ``Z`` and ``q(s)``; utilities anywhere follow
``q(f) = N(A m, K/ŝ + A (S - K_mm/ŝ) Aᵀ)``, ``A = K_nm K_mm⁻¹`` (2020, Eqs. 14, 19;
:class:`~crowdbayes.gp.InducingProjection`), and a pair is preferred with probability
``Φ(E[d] / √(α² + Var[d]))`` (2020, Eq. 3).

How the posterior is found is an inference strategy of the GP engine that each estimator is
given (:mod:`crowdbayes.gp.strategies`): :class:`~.gppl.GPPL` is given ``SVI``,
:class:`~.gppl.GPPLVI` ``VI``, :class:`~.gppl.GPPLLaplace` ``Laplace``; crowdGPPL
(:class:`~.crowd.CrowdGPPL`) adds its personal components and drives ``SVI``'s mini-batch
schedule with its own block updates.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from contextlib import contextmanager
from typing import ClassVar

import numpy as np
import pandas as pd

from ...base import OptionalResult
from ...data.comparisons import Comparisons, as_comparisons
from ...gp import (
    SVI,
    GammaFactor,
    GaussianFactor,
    InducingProjection,
    InferenceStrategy,
    PreferenceProblem,
    encode_pairs,
    maximise_bound,
    pair_probabilities,
)
from ...kernels import Kernel
from ._base import GPPreferenceBase
from ._items import ItemCross, KnownCross, inputs_in, projected_factors

__all__ = ["GPPLBase"]


class GPPLBase(GPPreferenceBase):
    """The GPPL model (module docstring); subclasses say which strategy fits it
    (:meth:`_inference`) and declare their parameters."""

    _abstract = True
    _tags = {"posterior": "approximate"}
    _transient = ("optimize_result_", "_item_cross")
    _diagnostics = {
        "lower_bound": "lower_bound_",
        "log_marginal_likelihood": "log_marginal_likelihood_",
    }
    #: set by the inference strategies that compute it (VI, Laplace)
    log_marginal_likelihood_ = OptionalResult()
    #: a warm start keeps the previous design (kernel and K-means inducing inputs) while the
    #: compared items number less than this factor times those it was built on
    design_refresh: ClassVar[float] = 1.25

    def _inference(self) -> InferenceStrategy:
        raise NotImplementedError

    # ------------------------------------------------------------------ fitting
    def _setup_items(
        self,
        data: Comparisons,
        compared: np.ndarray,
        strategy: InferenceStrategy,
        rng: np.random.Generator,
    ) -> tuple[Kernel, np.ndarray]:
        """The item kernel (unit variance: the scale is ``1/s``) and the inducing inputs the
        strategy chooses; without item features every item is its own inducing point."""
        kernel = self._set_items(data, compared, 1.0)
        X_compared = self._X[compared]
        if not data.has_features:
            return kernel, X_compared
        return kernel, strategy.inducing_points(X_compared, rng)

    def _design(
        self,
        data: Comparisons,
        compared: np.ndarray,
        strategy: InferenceStrategy,
        rng: np.random.Generator,
        previous: dict | None,
    ) -> InducingProjection:
        """The kernel and inducing inputs of this fit, as a projection: the previous fit's
        when :meth:`_keeps_design` says so (a warm start), or when a cold fit's design
        (:meth:`_setup_items`) has the previous one's kernel (class and parameters) and
        inducing inputs exactly (the strategies at the compared items, refitted to the same
        items), else the cold fit's. A kept design is a :meth:`~InducingProjection.copy`
        (the same arrays): :meth:`_lent_cross` swaps the kernel of this fit's projection, never
        the previous estimator's. Sets ``_design_items``, the number of compared items the
        design was built on."""
        if previous is not None and self._keeps_design(previous, data, strategy, len(compared)):
            self._set_items(data, compared, 1.0, kernel=previous["kernel_"])
            self._design_items = previous["_design_items"]
            return previous["_projection"].copy()
        kernel, Z = self._setup_items(data, compared, strategy, rng)
        self._design_items = len(compared)
        if previous is not None and not isinstance(strategy, SVI):
            kept = previous.get("_projection")
            if _same_prior(kept, kernel, Z):
                # the inducing inputs are the compared items: the same rows, kernel and prior
                # covariance as before, so the previous posterior starts the fit as it is
                return kept.copy()
        return InducingProjection(kernel, Z)

    def _keeps_design(
        self, previous: dict, data: Comparisons, strategy: InferenceStrategy, n_compared: int
    ) -> bool:
        """A warm start keeps the previous kernel and inducing inputs when they are K-means
        centres (SVI), the features and the prior settings are the same, no length-scale is
        optimised, and the compared items have grown by less than :attr:`design_refresh`."""
        same_settings = all(
            _same_value(previous.get(name), getattr(self, name, None))
            for name in ("kernel", "lengthscale", "n_inducing")
        )
        return bool(
            isinstance(strategy, SVI)
            and data.has_features
            and not getattr(self, "optimize_lengthscale", False)
            and same_settings
            and "_design_items" in previous
            and list(previous["feature_names_"]) == list(data.feature_names)
            and n_compared < self.design_refresh * previous["_design_items"]
        )

    def _start_factors(
        self,
        previous: dict,
        projection: InducingProjection,
        data: Comparisons,
        factors: list[GaussianFactor],
        scales: list[GammaFactor],
    ) -> list[GaussianFactor]:
        """The previous posteriors ``factors`` (with ``scales``) at ``projection``'s inducing
        inputs: as they are when the design was kept, else re-expressed there."""
        if projection.shares(previous["_projection"]):
            return list(factors)
        Z = inputs_in(previous, projection.Z, data.item_ids, data.has_features)
        return projected_factors(previous["_projection"], Z, factors, scales)

    def _warm_schedule(
        self, strategy: InferenceStrategy, n_pairs: int, previous: dict
    ) -> InferenceStrategy:
        """The step sizes ``ρ_n = (n + delay)^{-r}`` of a warm SVI fit. With mini-batches it
        resumes the schedule where the last cold fit met its tolerance (``_svi_offset``
        iterations in): a start near the answer then needs a pass or two, where a fresh
        schedule's first steps (``ρ ≈ ½`` on one mini-batch) would throw it off and take as
        long as a cold fit to settle. A full-batch fit has no mini-batch noise to average
        away, so it starts the schedule afresh."""
        if not isinstance(strategy, SVI):
            return strategy
        self._svi_offset = previous.get("_svi_offset", 0)
        if strategy.batch_size is None or strategy.batch_size >= n_pairs:
            return strategy
        return dataclasses.replace(strategy, delay=strategy.delay + self._svi_offset)

    def _problem(self, pairs, kernel: Kernel, prior_scale: float) -> PreferenceProblem:
        return PreferenceProblem.build(
            self._X,
            pairs,
            kernel,
            noise=self.noise,
            prior=GammaFactor.prior(self.shape_s0, self.rate_s0),
            prior_scale=prior_scale,
        )

    @contextmanager
    def _lent_cross(
        self, projection: InducingProjection, problem: PreferenceProblem, previous: dict | None
    ):
        """Compute ``K(Z, X)`` at every item once (or keep the previous fit's, for the same
        design and items) and let the engine read it for the compared items during the fit
        (:class:`~._items.KnownCross`)."""
        cached = (previous or {}).get("_item_cross")
        if cached is not None and cached.projection is not projection:
            if projection.shares(cached.projection) and projection.kernel is cached.kernel:
                # a kept design (a copy): the previous cross-kernel, filed under this projection
                cached = copy.copy(cached)
                cached.projection = projection
        if cached is None or not cached.matches(projection, self._X):
            cached = ItemCross(projection, self._X)
        self._item_cross = cached
        lender = KnownCross(cached)
        lender.know(problem.X_items, problem.items)
        projection.kernel = lender
        try:
            yield cached
        finally:
            projection.kernel = cached.kernel

    def _items(self) -> ItemCross:
        """The fitted posterior's cross-kernel at every item (rebuilt after loading)."""
        cached = getattr(self, "_item_cross", None)
        if cached is None or not cached.matches(self._projection, self._X):
            cached = self._item_cross = ItemCross(self._projection, self._X)
        return cached

    def fit(
        self,
        comparisons: Comparisons | pd.DataFrame,
        items: pd.DataFrame | None = None,
        *,
        init: GPPLBase | None = None,
    ) -> GPPLBase:
        """Fit to comparisons (a :class:`~crowdbayes.data.Comparisons`, DataFrame or path);
        ``items`` is the item feature table when passing a DataFrame or path.

        ``init`` (a fitted model of the same class, e.g. this one) warm-starts the fit: the
        iterations begin at its posterior (re-expressed at the new inducing inputs), and its
        kernel and K-means inducing inputs are kept while the compared items have grown by
        less than :attr:`design_refresh` (:meth:`_keeps_design`). On the same comparisons a
        warm fit reaches the cold fit's answer; it just needs fewer iterations."""
        self.check_params()
        name = type(self).__name__
        data = as_comparisons(comparisons, items=items)
        pairs = encode_pairs(data, self.ties, name)
        previous = self._previous_state(init)
        self.n_ties_dropped_ = pairs.n_ties_dropped
        rng = self.random_generator()
        strategy = self._inference()
        projection = self._design(data, pairs.items, strategy, rng, previous)
        self._n_compared = len(pairs.items)
        kernel = projection.kernel
        # the prior variance of a utility is 1/E[s] = b₀/a₀ per unit of kernel variance
        problem = self._problem(pairs, kernel, self.rate_s0 / self.shape_s0)
        if isinstance(strategy, SVI):  # "auto" becomes a size for these data
            batch = strategy.batch_for(len(pairs.items), len(pairs.y), projection.n_inducing)
            strategy = dataclasses.replace(strategy, batch_size=batch)
        start = None
        if getattr(self, "optimize_lengthscale", False):
            if not hasattr(kernel, "with_lengthscale"):
                raise ValueError(
                    f"{name}: optimize_lengthscale needs item features and a kernel with "
                    "length-scales"
                )
            kernel, self.optimize_result_ = maximise_bound(
                strategy, problem, kernel, projection.Z, rng
            )
            projection = InducingProjection(kernel, projection.Z)
        elif previous is not None:
            strategy = self._warm_schedule(strategy, len(pairs.y), previous)
            factor = self._start_factors(
                previous, projection, data, [previous["_factor"]], [previous["scale_"]]
            )[0]
            start = (factor, previous["scale_"])
        with self._lent_cross(projection, problem, previous):
            fit = strategy.fit(
                problem,
                projection,
                start=start,
                rng=rng,
                progress=getattr(self, "progress", False),
                warn_name=name,
            )
            self.n_iter_, self.converged_, self.history_ = fit.n_iter, fit.converged, fit.history
            if start is None:
                self._svi_offset = fit.n_iter
            if fit.log_marginal is not None:
                self.log_marginal_likelihood_ = fit.log_marginal
            self._set_results(projection, fit.factor, fit.scale)
            self.lower_bound_ = strategy.bound(problem, projection, fit)
        return self

    def _set_results(
        self, projection: InducingProjection, factor: GaussianFactor, scale: GammaFactor
    ) -> None:
        self._projection, self._factor, self.scale_ = projection, factor, scale
        self.kernel_ = self._items().kernel
        self.inducing_points_ = projection.Z
        mean, var = self._items().item_moments(factor, scale)
        self.utility_ = pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=self.item_ids_)

    def _pair_moments(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._items().pair_moments(self._factor, self.scale_, left, right)

    def _inducing_only(self) -> bool:
        """Whether the model learns about the utilities only through fewer inducing values
        than compared items: SVI with more compared items than ``n_inducing`` (K-means
        centres). Its likelihood then sees ``d = (A_a - A_b) u`` (2020, Eqs. 14, 19), and the
        rest of a difference's predictive variance, ``Var[d | u]``, is never reduced by any
        answer. With fewer compared items every one of them is an inducing point (from the
        next design on: a kept design is rebuilt once the items grow by
        :attr:`design_refresh`), so a new item's whole uncertainty can be learnt."""
        n_inducing = getattr(self, "n_inducing", None)
        return n_inducing is not None and getattr(self, "_n_compared", 0) > n_inducing

    def _learnable_moments(self, pairs, mean, var):
        """With inducing points fewer than the compared items, the variance of
        ``(A_a - A_b) u``: an answer is worth what it tells the fit about the inducing values
        (asking about items far from every inducing point tells it little, however uncertain
        their utilities are)."""
        if not self._inducing_only():
            return mean, var
        moments = self._items().pair_moments(
            self._factor, self.scale_, pairs.low, pairs.high, prior=0.0
        )
        return pairs.expand(*moments)

    # ------------------------------------------------------------------ prediction
    def _utility(self, items, *, worker=None, worker_features=None) -> pd.DataFrame:
        """Posterior mean and sd of utilities: every item seen in fit (None), known ids, or a
        feature DataFrame indexed by item id (new items, Eqs. 9–10)."""
        if items is None:
            return self.utility_.copy()
        ids, X = self._resolve(items, "predict_utility")
        mean, var = self._projection.predict(X, self._factor, self.scale_)
        return pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=ids)

    def predict_cov(self, items: Sequence | pd.DataFrame) -> pd.DataFrame:
        """Posterior covariance of the utilities of ``items`` (draft Eq. 10)."""
        self.check_is_fitted()
        ids, X = self._resolve(items, "predict_cov")
        _, cov = self._projection.predict_cov(X, self._factor, self.scale_)
        return pd.DataFrame(cov, index=ids, columns=ids)

    def _pair_rows(
        self, left: Sequence, right: Sequence, items: pd.DataFrame | None, what: str
    ) -> tuple[pd.Index, pd.Index, np.ndarray, np.ndarray]:
        """Feature rows of each pair's two items (known ids, or rows of ``items``)."""
        left, right, X, li, ri = self._pair_items(left, right, items, what)
        return left, right, X[li], X[ri]

    def _pair_proba(self, left, right, items=None) -> np.ndarray:
        """``P(left ≻ right) = Φ(E[d] / √(α² + Var[d]))`` with the posterior of the difference
        (2020, Eq. 3). Items not seen in fit need their features in ``items``."""
        left, right, X, li, ri = self._pair_items(left, right, items, "predict_proba")
        # the cross-kernel once per distinct item, not once per pair
        mean_d, var_d = self._projection.pair_moments(X, li, ri, self._factor, self.scale_)
        return pair_probabilities(mean_d, var_d, self.noise)


def _same_prior(projection: InducingProjection | None, kernel: Kernel, Z: np.ndarray) -> bool:
    """Whether ``projection`` has the kernel ``kernel`` (:func:`_same_kernel`), the inducing
    inputs ``Z`` and the prior covariance ``kernel(Z)`` exactly. The kernel is compared as
    well: one differing only along a feature constant over ``Z`` gives the same ``K_mm`` but
    other predictions at new items."""
    return (
        projection is not None
        and _same_kernel(projection.kernel, kernel)
        and projection.Z.shape == Z.shape
        and np.array_equal(projection.Z, Z)
        and np.array_equal(projection.K_mm, kernel(Z))
    )


def _same_kernel(a: Kernel, b: Kernel) -> bool:
    """Whether two kernels are of one class with equal parameters (length-scales, variance)."""
    if type(a) is not type(b):
        return False
    va, vb = vars(a), vars(b)
    return va.keys() == vb.keys() and all(_same_value(va[k], vb[k]) for k in va)


def _same_value(a, b) -> bool:
    """Whether two parameter values are equal (arrays element-wise)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.shape(a) == np.shape(b) and np.array_equal(a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b
