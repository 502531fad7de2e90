"""``GPPreferenceEP``: GP preference learning fitted by expectation propagation."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from ..._persist import load_arrays, save_arrays
from ..._utils import check_is_fitted
from ...data.comparisons import Comparisons, as_comparisons
from ...exceptions import ConvergenceWarning, DataWarning
from ...kernels import (
    Independent,
    Kernel,
    kernel_from_saved,
    kernel_name,
)
from ...linalg import safe_cholesky
from ._base import GPPreferenceBase
from ._likelihood import PairCounts
from .ep import ep_gradient_weights, expectation_propagation, pair_probabilities
from .posterior import LatentPosterior

__all__ = ["GPPreferenceEP"]

_TIE_POLICIES = ("drop", "half")


class GPPreferenceEP(GPPreferenceBase):
    """Gaussian-process preference learning (Chu & Ghahramani, 2005) by expectation propagation.

    Each item has a latent utility ``f(x)`` with a GP prior ``f ~ GP(0, output_scale · k(x, x'))``
    over its features ``x``; a comparison of items ``u, v`` prefers ``u`` with probability
    ``Φ((f(u) - f(v)) / (√2 σ))`` (``σ = noise``). EP (Abbasnejad et al., 2013, Eqs. 1–15; see
    :mod:`crowdbayes.models.gp_preference.ep`) approximates the posterior of the utilities of
    the compared items by a Gaussian; items nobody compared (rows of the item table, or new
    feature rows) get the GP predictive distribution. Pooled over workers: every comparison is
    treated as coming from the same preference function.

    Without an item feature table the prior is independent per item (``N(0, output_scale)``,
    the Bayesian Thurstone model), and only compared items can be predicted.

    Parameters
    ----------
    kernel : {"matern32", "rbf"} or Kernel
        Covariance over item features (product form, one length-scale per feature). A
        :class:`~crowdbayes.kernels.Kernel` instance is used as given (``lengthscale`` and
        ``output_scale`` are then ignored).
    lengthscale : {"median", "scaled_median"}, float or array
        Length-scales: the per-feature median heuristic over the compared items, its
        ``20 √D`` scaled variant for high-dimensional features, or fixed values.
    output_scale : float
        Prior variance of the utilities.
    noise : float
        Judgment noise sd ``σ`` (the likelihood scale is ``√2 σ``).
    ties : {"drop", "half"}
        Comparisons labelled ``"equal"``: dropped with a :class:`DataWarning` giving their count,
        or kept with likelihood ``Φ(z)^½ Φ(-z)^½`` (half a win for each side).
    damping, max_iter, tol : EP settings (see :func:`expectation_propagation`).
    optimize_lengthscale : bool
        Maximise EP's log marginal likelihood over the log length-scales by L-BFGS-B
        (type-II maximum likelihood / ARD), starting from ``lengthscale`` and staying within
        a factor ``e⁵`` of it; analytic gradients (:func:`ep_gradient_weights`), EP warm-started
        from the previous sites at each evaluation.
    progress : bool
        Show a progress bar over EP sweeps.

    Attributes
    ----------
    utility_ : DataFrame (items × [mean, sd])
        Posterior of every item's utility, indexed by the user's item ids.
    posterior_cov_ : DataFrame
        Posterior covariance of the compared items' utilities.
    log_marginal_likelihood_ : float
        EP's estimate of ``log p(comparisons | hyperparameters)``.
    lengthscale_ : Series or None
        Length-scale of each feature.
    n_ties_dropped_, n_iter_, converged_, history_ : fit diagnostics.
    """

    def __init__(
        self,
        kernel: str | Kernel = "matern32",
        lengthscale: str | float | np.ndarray = "median",
        output_scale: float = 1.0,
        noise: float = 1.0,
        *,
        ties: str = "drop",
        damping: float = 0.5,
        max_iter: int = 200,
        tol: float = 1e-6,
        optimize_lengthscale: bool = False,
        progress: bool = False,
    ) -> None:
        self.kernel = kernel
        self.lengthscale = lengthscale
        self.output_scale = output_scale
        self.noise = noise
        self.ties = ties
        self.damping = damping
        self.max_iter = max_iter
        self.tol = tol
        self.optimize_lengthscale = optimize_lengthscale
        self.progress = progress

    # ------------------------------------------------------------------ fitting
    def fit(
        self, comparisons: Comparisons | pd.DataFrame, items: pd.DataFrame | None = None
    ) -> GPPreferenceEP:
        """Fit to comparisons (a :class:`~crowdbayes.data.Comparisons`, DataFrame or path);
        ``items`` is the item feature table when passing a DataFrame or path."""
        if self.ties not in _TIE_POLICIES:
            raise ValueError(f"ties must be one of {_TIE_POLICIES}; got {self.ties!r}")
        data = as_comparisons(comparisons, items=items)
        keep = np.ones(data.n_comparisons, dtype=bool)
        self.n_ties_dropped_ = 0
        if self.ties == "drop" and data.n_ties:
            keep = data.outcome != 0
            self.n_ties_dropped_ = data.n_ties
            if not keep.any():
                raise ValueError(
                    f"{type(self).__name__}: all {data.n_ties} comparisons are ties; "
                    "pass ties='half' to use them"
                )
            warnings.warn(
                f"{type(self).__name__}: dropped {data.n_ties} tie(s) of {data.n_comparisons} "
                "comparisons (pass ties='half' to count a tie as half a win each)",
                DataWarning,
                stacklevel=2,
            )
        train = data.compared_items()
        left = np.searchsorted(train, data.left_codes[keep])
        right = np.searchsorted(train, data.right_codes[keep])

        self.item_ids_ = data.item_ids
        self.feature_names_ = data.feature_names
        if data.has_features:
            self._X = data.X
            self.kernel_ = self._make_kernel(data.X[train])
        else:
            self._X = np.arange(data.n_items, dtype=np.float64)[:, None]
            self.kernel_ = Independent(self.output_scale)
        self._train = train
        X_train = self._X[train]
        pairs = PairCounts.from_comparisons(left, right, data.outcome[keep])
        sites = None
        if self.optimize_lengthscale:
            if not hasattr(self.kernel_, "with_lengthscale"):
                raise ValueError(
                    f"{type(self).__name__}: optimize_lengthscale needs item features and a "
                    "kernel with length-scales"
                )
            self.kernel_, sites = self._optimise(X_train, pairs)
        result = self._run_ep(self.kernel_(X_train), pairs, sites)
        self.log_marginal_likelihood_ = result.log_marginal
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.history
        self._left, self._right = pairs.left, pairs.right
        self._set_results(result.posterior, result.site_precision, result.site_linear)
        return self

    def _set_results(self, posterior, site_precision: np.ndarray, site_linear: np.ndarray):
        """Store the posterior and the user-facing summaries (after fit, and after load)."""
        self._posterior = posterior
        self.site_precision_ = site_precision
        self.site_linear_ = site_linear
        train_ids = self.item_ids_[self._train]
        self.posterior_cov_ = pd.DataFrame(posterior.cov, index=train_ids, columns=train_ids)
        mean, var = self._predict(self._X)
        self.utility_ = pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=self.item_ids_)

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted model to ``path`` in the safe crowdbayes format (``.npz``, no
        pickle): the item features, the kernel, and the EP sites, from which :meth:`load`
        rebuilds the posterior exactly."""
        check_is_fitted(self, "utility_")
        kernel = kernel_name(self.kernel_)
        arrays = {
            "item_ids": np.asarray(self.item_ids_),
            "X": self._X,
            "train": self._train,
            "left": self._left,
            "right": self._right,
            "site_precision": self.site_precision_,
            "site_linear": self.site_linear_,
            "lengthscale": np.asarray(getattr(self.kernel_, "lengthscale", [])),
        }
        if self.feature_names_ is not None:
            arrays["feature_names"] = np.asarray(self.feature_names_, dtype=str)
        meta = {
            "kernel": kernel,
            "variance": self.kernel_.variance,
            "noise": self.noise,
            "ties": self.ties,
            "log_marginal_likelihood": self.log_marginal_likelihood_,
            "n_iter": self.n_iter_,
            "converged": self.converged_,
            "n_ties_dropped": self.n_ties_dropped_,
        }
        save_arrays(path, type(self).__name__, arrays, meta)

    @classmethod
    def load(cls, path: str | os.PathLike) -> GPPreferenceEP:
        """Read a model written by :meth:`save`."""
        _, arrays, meta = load_arrays(path, cls.__name__)
        kernel = kernel_from_saved(meta["kernel"], arrays["lengthscale"], meta["variance"])
        model = cls(kernel=kernel, noise=meta["noise"], ties=meta["ties"])
        model.kernel_ = kernel
        model.item_ids_ = pd.Index(arrays["item_ids"], name="item")
        names = arrays.get("feature_names")
        model.feature_names_ = None if names is None else pd.Index(names.tolist())
        model._X, model._train = arrays["X"], arrays["train"]
        model._left, model._right = arrays["left"], arrays["right"]
        model.log_marginal_likelihood_ = meta["log_marginal_likelihood"]
        model.n_iter_, model.converged_ = meta["n_iter"], meta["converged"]
        model.history_ = []
        model.n_ties_dropped_ = meta["n_ties_dropped"]
        K = kernel(model._X[model._train])
        posterior = LatentPosterior(
            safe_cholesky(K, what=f"{cls.__name__}: prior covariance"),
            model._left,
            model._right,
            arrays["site_precision"],
            linear=arrays["site_linear"],
        )
        model._set_results(posterior, arrays["site_precision"], arrays["site_linear"])
        return model

    def _run_ep(self, K, pairs, sites=None, progress=None):
        return expectation_propagation(
            K,
            pairs,
            noise=self.noise,
            damping=self.damping,
            max_iter=self.max_iter,
            tol=self.tol,
            sites=sites,
            chol_prior=safe_cholesky(K, what=f"{type(self).__name__}: prior covariance"),
            progress=self.progress if progress is None else progress,
        )

    def _optimise(self, X, pairs):
        """Type-II maximum likelihood over log length-scales (L-BFGS-B on ``-log Z_EP``)."""
        start = np.log(self.kernel_.lengthscale)
        state = {"sites": None}

        def objective(log_ls: np.ndarray) -> tuple[float, np.ndarray]:
            kernel = self.kernel_.with_lengthscale(np.exp(log_ls))
            with warnings.catch_warnings():
                # intermediate EP runs may stop early; the final run below reports its own
                warnings.simplefilter("ignore", ConvergenceWarning)
                result = self._run_ep(kernel(X), pairs, state["sites"], False)
            state["sites"] = (result.site_precision, result.site_linear)
            grad = kernel.gradient_contract(ep_gradient_weights(result.posterior), X)
            return -result.log_marginal, -grad

        found = minimize(
            objective,
            start,
            jac=True,
            method="L-BFGS-B",
            bounds=[(v - 5.0, v + 5.0) for v in start],
            options={"maxiter": 50},
        )
        self.optimize_result_ = found
        return self.kernel_.with_lengthscale(np.exp(found.x)), state["sites"]

    # ------------------------------------------------------------------ prediction
    def _predict(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and variance of the utility at feature rows ``X``."""
        K_cross = self.kernel_(self._X[self._train], X)
        return self._posterior.predict(K_cross, self.kernel_.diag(X))

    def predict_utility(self, items: Sequence | pd.DataFrame | None = None) -> pd.DataFrame:
        """Posterior mean and sd of the utilities of ``items``.

        ``items``: None (every item seen in fit), a list of known item ids, or a feature
        DataFrame indexed by item id (new items get the GP predictive distribution).
        """
        check_is_fitted(self, "utility_")
        if items is None:
            return self.utility_.copy()
        ids, X = self._resolve(items, "predict_utility")
        mean, var = self._predict(X)
        return pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=ids)

    def predict_proba(
        self, left: Sequence, right: Sequence, items: pd.DataFrame | None = None
    ) -> pd.Series:
        """``P(left ≻ right)`` for each pair, integrating over the joint posterior of the two
        utilities: ``Φ(E[f_l - f_r] / √(2σ² + Var[f_l - f_r]))``.

        ``left``, ``right``: equally long sequences of item ids. Items not seen in fit need
        their features in ``items`` (a DataFrame indexed by item id).
        """
        check_is_fitted(self, "utility_")
        left, right = pd.Index(list(left)), pd.Index(list(right))
        if len(left) != len(right):
            raise ValueError(f"predict_proba: {len(left)} left and {len(right)} right items")
        wanted = left.append(right).unique()
        described = wanted.intersection(items.index, sort=False) if items is not None else []
        ids, X = self._resolve(wanted.difference(described, sort=False), "predict_proba")
        if len(described):
            ids_new, X_new = self._resolve(items.loc[described], "predict_proba")
            ids, X = ids.append(ids_new), np.vstack([X, X_new])
        li, ri = ids.get_indexer(left), ids.get_indexer(right)
        K_cross = self.kernel_(self._X[self._train], X)
        prior_var = (
            self.kernel_.diag(X[li])
            + self.kernel_.diag(X[ri])
            - 2 * self.kernel_.paired(X[li], X[ri])
        )
        mean_d, var_d = self._posterior.predict(K_cross[:, li] - K_cross[:, ri], prior_var)
        p = pair_probabilities(mean_d, var_d, self.noise)
        index = pd.MultiIndex.from_arrays([left, right], names=["left", "right"])
        return pd.Series(p, index=index, name="p_left")
