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

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...data.comparisons import Comparisons, as_comparisons
from ...gp import (
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

__all__ = ["GPPLBase"]


class GPPLBase(GPPreferenceBase):
    """The GPPL model (module docstring); subclasses say which strategy fits it
    (:meth:`_inference`) and declare their parameters."""

    _abstract = True
    _transient = ("optimize_result_",)

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

    def _problem(self, pairs, kernel: Kernel, prior_scale: float) -> PreferenceProblem:
        return PreferenceProblem.build(
            self._X,
            pairs,
            kernel,
            noise=self.noise,
            prior=GammaFactor.prior(self.shape_s0, self.rate_s0),
            prior_scale=prior_scale,
        )

    def fit(
        self,
        comparisons: Comparisons | pd.DataFrame,
        items: pd.DataFrame | None = None,
    ) -> GPPLBase:
        """Fit to comparisons (a :class:`~crowdbayes.data.Comparisons`, DataFrame or path);
        ``items`` is the item feature table when passing a DataFrame or path."""
        self.check_params()
        name = type(self).__name__
        data = as_comparisons(comparisons, items=items)
        pairs = encode_pairs(data, self.ties, name)
        self.n_ties_dropped_ = pairs.n_ties_dropped
        rng = self.random_generator()
        strategy = self._inference()
        kernel, Z = self._setup_items(data, pairs.items, strategy, rng)
        # the prior variance of a utility is 1/E[s] = b₀/a₀ per unit of kernel variance
        problem = self._problem(pairs, kernel, self.rate_s0 / self.shape_s0)
        if getattr(self, "optimize_lengthscale", False):
            if not hasattr(kernel, "with_lengthscale"):
                raise ValueError(
                    f"{name}: optimize_lengthscale needs item features and a kernel with "
                    "length-scales"
                )
            kernel, self.optimize_result_ = maximise_bound(strategy, problem, kernel, Z, rng)
        projection = InducingProjection(kernel, Z)
        fit = strategy.fit(
            problem,
            projection,
            rng=rng,
            progress=getattr(self, "progress", False),
            warn_name=name,
        )
        self.n_iter_, self.converged_, self.history_ = fit.n_iter, fit.converged, fit.history
        if fit.log_marginal is not None:
            self.log_marginal_likelihood_ = fit.log_marginal
        self._set_results(projection, fit.factor, fit.scale)
        self.lower_bound_ = strategy.bound(problem, projection, fit)
        return self

    def _set_results(
        self, projection: InducingProjection, factor: GaussianFactor, scale: GammaFactor
    ) -> None:
        self._projection, self._factor, self.scale_ = projection, factor, scale
        self.kernel_ = projection.kernel
        self.inducing_points_ = projection.Z
        mean, var = projection.predict(self._X, factor, scale)
        self.utility_ = pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=self.item_ids_)

    # ------------------------------------------------------------------ prediction
    def predict_utility(self, items: Sequence | pd.DataFrame | None = None) -> pd.DataFrame:
        """Posterior mean and sd of utilities: every item seen in fit (None), known ids, or a
        feature DataFrame indexed by item id (new items, Eqs. 9–10)."""
        self.check_is_fitted()
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

    def predict_proba(
        self, left: Sequence, right: Sequence, items: pd.DataFrame | None = None
    ) -> pd.Series:
        """``P(left ≻ right) = Φ(E[d] / √(α² + Var[d]))`` with the posterior of the difference
        (2020, Eq. 3). Items not seen in fit need their features in ``items``."""
        self.check_is_fitted()
        left, right, Xl, Xr = self._pair_rows(left, right, items, "predict_proba")
        mean_d, var_d = self._projection.difference_moments(Xl, Xr, self._factor, self.scale_)
        index = pd.MultiIndex.from_arrays([left, right], names=["left", "right"])
        return pd.Series(pair_probabilities(mean_d, var_d, self.noise), index=index, name="p_left")
