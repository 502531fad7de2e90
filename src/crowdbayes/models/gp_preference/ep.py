"""``GPPreferenceEP``: GP preference learning fitted by expectation propagation, the model of
Chu & Ghahramani (2005) given the :class:`~crowdbayes.gp.EP` strategy of the GP engine."""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from ...base import Interval, Options
from ...data.comparisons import Comparisons, as_comparisons
from ...gp import EP, LatentPosterior, PairCounts, kept_comparisons, pair_probabilities
from ...gp.inducing import chunks, prior_difference_variance
from ...kernels import Kernel
from ...linalg import safe_cholesky
from ._base import GPPreferenceBase, constraints_of

__all__ = ["GPPreferenceEP"]


class GPPreferenceEP(GPPreferenceBase):
    """Gaussian-process preference learning (Chu & Ghahramani, 2005) by expectation propagation.

    Each item has a latent utility ``f(x)`` with a GP prior ``f ~ GP(0, output_scale · k(x, x'))``
    over its features ``x``; a comparison of items ``u, v`` prefers ``u`` with probability
    ``Φ((f(u) - f(v)) / (√2 σ))`` (``σ = noise``). EP (Abbasnejad et al., 2013, Eqs. 1–15; see
    :mod:`crowdbayes.gp.ep`) approximates the posterior of the utilities of
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
    lengthscale : {"auto", "median", "scaled_median"}, float or array
        Length-scales: the per-feature median heuristic over the compared items scaled by
        ``√D`` for ``D`` features (``"auto"``, the default: two typical items keep a prior
        correlation of one order whatever ``D``), unscaled, or scaled by ``20 √D`` (Simpson &
        Gurevych 2020); or fixed values. See :mod:`crowdbayes.gp.prior`.
    output_scale : float
        Prior variance of the utilities.
    noise : float
        Judgment noise sd ``σ`` (the likelihood scale is ``√2 σ``).
    ties : {"drop", "half"}
        Comparisons labelled ``"equal"``: dropped with a :class:`DataWarning` giving their count,
        or kept with likelihood ``Φ(z)^½ Φ(-z)^½`` (half a win for each side).
    damping : float in (0, 1] or "auto"
        Fraction of each parallel EP update applied. ``"auto"`` (the default): undamped sweeps,
        the damping halved whenever the largest site change fails to shrink and doubled back
        when it shrinks (the fixed point is the same; :mod:`crowdbayes.gp.ep`); ``0.5`` was the
        fixed default before.
    max_iter, tol : EP sweeps and the tolerance on the largest relative site change (the
        :class:`~crowdbayes.gp.EP` strategy; see :func:`~crowdbayes.gp.expectation_propagation`).
    optimize_lengthscale : bool
        Maximise EP's log marginal likelihood over the log length-scales by L-BFGS-B
        (type-II maximum likelihood / ARD), starting from ``lengthscale`` and staying within
        a factor ``e⁵`` of it; analytic gradients (:meth:`~crowdbayes.gp.EP.maximise_evidence`),
        EP warm-started from the previous sites at each evaluation.
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
    site_precision_, site_linear_ : ndarray
        EP's site parameters ``τ̃``, ``ν̃``, one per compared pair.
    optimize_result_ : OptimizeResult
        The length-scale search, with ``optimize_lengthscale`` (not saved by :meth:`save`).
    n_ties_dropped_, n_iter_, converged_, history_ : fit diagnostics.
    """

    _tags = {"posterior": "approximate"}
    _diagnostics = {"log_marginal_likelihood": "log_marginal_likelihood_"}
    parameter_constraints = constraints_of(
        "kernel",
        "lengthscale",
        "output_scale",
        "noise",
        "ties",
        "max_iter",
        "tol",
        "optimize_lengthscale",
        "progress",
        damping=[Interval(numbers.Real, 0, 1, closed="right"), Options("auto")],
    )
    _transient = ("optimize_result_",)

    def __init__(
        self,
        kernel: str | Kernel = "matern32",
        lengthscale: str | float | np.ndarray = "auto",
        output_scale: float = 1.0,
        noise: float = 1.0,
        *,
        ties: str = "drop",
        damping: float | str = "auto",
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
    def _inference(self) -> EP:
        return EP(damping=self.damping, max_iter=self.max_iter, tol=self.tol)

    def fit(
        self,
        comparisons: Comparisons | pd.DataFrame,
        items: pd.DataFrame | None = None,
        *,
        init: GPPreferenceEP | None = None,
    ) -> GPPreferenceEP:
        """Fit to comparisons (a :class:`~crowdbayes.data.Comparisons`, DataFrame or path);
        ``items`` is the item feature table when passing a DataFrame or path.

        ``init`` (a fitted GPPreferenceEP, e.g. this one) warm-starts EP: every pair of items
        it had a site for starts from that site (matched by item ids, either orientation),
        new pairs from zero. EP then runs to its fixed point as from a cold start (with
        ``optimize_lengthscale`` the length-scale search supplies the sites instead)."""
        self.check_params()
        name = type(self).__name__
        data = as_comparisons(comparisons, items=items)
        previous = self._previous_state(init)
        keep, self.n_ties_dropped_ = kept_comparisons(data, self.ties, name)
        train = data.compared_items()
        left = np.searchsorted(train, data.left_codes[keep])
        right = np.searchsorted(train, data.right_codes[keep])
        self.kernel_ = self._set_items(data, train, self.output_scale)
        self._train = train
        X_train = self._X[train]
        pairs = PairCounts.from_comparisons(left, right, data.outcome[keep])
        strategy = self._inference()
        what = f"{name}: prior covariance"
        sites = None
        if self.optimize_lengthscale:
            if not hasattr(self.kernel_, "with_lengthscale"):
                raise ValueError(
                    f"{name}: optimize_lengthscale needs item features and a kernel with "
                    "length-scales"
                )
            self.kernel_, sites, self.optimize_result_ = strategy.maximise_evidence(
                self.kernel_, X_train, pairs, noise=self.noise, what=what
            )
        if sites is None and previous is not None:
            sites = _previous_sites(previous, self.item_ids_[train], pairs)
        K = self.kernel_(X_train)
        result = strategy.run(
            K,
            pairs,
            noise=self.noise,
            sites=sites,
            chol_prior=safe_cholesky(K, what=what),
            progress=self.progress,
        )
        self.log_marginal_likelihood_ = result.log_marginal
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.history_ = result.history
        self._left, self._right = pairs.left, pairs.right
        self._posterior: LatentPosterior = result.posterior
        self.site_precision_ = result.site_precision
        self.site_linear_ = result.site_linear
        train_ids = self.item_ids_[self._train]
        self.posterior_cov_ = pd.DataFrame(result.posterior.cov, index=train_ids, columns=train_ids)
        mean, var = self._predict(self._X)
        self.utility_ = pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=self.item_ids_)
        return self

    # ------------------------------------------------------------------ prediction
    def _predict(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and variance of the utility at feature rows ``X``."""
        K_cross = self.kernel_(self._X[self._train], X)
        return self._posterior.predict(K_cross, self.kernel_.diag(X))

    def _utility(self, items, *, worker=None, worker_features=None) -> pd.DataFrame:
        """Posterior mean and sd of the utilities of ``items``.

        ``items``: None (every item seen in fit), a list of known item ids, or a feature
        DataFrame indexed by item id (new items get the GP predictive distribution).
        """
        if items is None:
            return self.utility_.copy()
        ids, X = self._resolve(items, "predict_utility")
        mean, var = self._predict(X)
        return pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=ids)

    def _pair_proba(self, left, right, items=None) -> np.ndarray:
        """``P(left ≻ right)`` for each pair, integrating over the joint posterior of the two
        utilities: ``Φ(E[f_l - f_r] / √(2σ² + Var[f_l - f_r]))``.

        ``left``, ``right``: equally long sequences of item ids. Items not seen in fit need
        their features in ``items`` (a DataFrame indexed by item id).
        """
        left, right, X, li, ri = self._pair_items(left, right, items, "predict_proba")
        mean_d, var_d = self._difference_moments(X, li, ri)
        return pair_probabilities(mean_d, var_d, self.noise)

    def _difference_moments(
        self, X: np.ndarray, left: np.ndarray, right: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of ``f(x_l) - f(x_r)`` for the pairs of rows ``(left, right)`` of
        ``X`` (the GP predictive of the differences, in chunks of pairs)."""
        K_cross = self.kernel_(self._X[self._train], X)
        mean, var = np.empty(len(left)), np.empty(len(left))
        for rows in chunks(len(left)):
            li, ri = left[rows], right[rows]
            prior_var = prior_difference_variance(self.kernel_, X, li, ri)
            mean[rows], var[rows] = self._posterior.predict(
                K_cross[:, li] - K_cross[:, ri], prior_var
            )
        return mean, var

    def _pair_moments(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        items, codes = np.unique(np.concatenate([left, right]), return_inverse=True)
        return self._difference_moments(self._X[items], codes[: len(left)], codes[len(left) :])


def _previous_sites(
    previous: dict, train_ids: pd.Index, pairs: PairCounts
) -> tuple[np.ndarray, np.ndarray]:
    """The sites ``(τ̃, ν̃)`` of a previous fit for the pairs of ``pairs`` (codes into
    ``train_ids``), matched by item ids; a pair seen the other way round has ``ν̃`` negated
    (its difference is ``-d``); a pair never seen starts at zero."""
    old_ids = previous["item_ids_"][previous["_train"]]
    old = pd.MultiIndex.from_arrays([old_ids[previous["_left"]], old_ids[previous["_right"]]])
    new_left, new_right = train_ids[pairs.left], train_ids[pairs.right]
    same = old.get_indexer(pd.MultiIndex.from_arrays([new_left, new_right]))
    swapped = old.get_indexer(pd.MultiIndex.from_arrays([new_right, new_left]))
    tau, nu = np.zeros(pairs.n_pairs), np.zeros(pairs.n_pairs)
    for found, sign in ((same, 1.0), (swapped, -1.0)):
        hit = (found >= 0) & (tau == 0)
        tau[hit] = previous["site_precision_"][found[hit]]
        nu[hit] = sign * previous["site_linear_"][found[hit]]
    return tau, nu
