"""The estimator contract of the Plackett–Luce family and the predictions they share.

Every model describes the log-scores u_i = log s_i of items, either through a Gaussian over
feature weights θ (u = Xθ: :class:`FeatureModel`) or directly per item id
(:class:`ItemScoreModel`). Predictions only need, for a set of items, the posterior mean and
variance of utility differences, or joint posterior draws of the utilities:

- ``predict_utility(items)``: mean and sd of each item's log-score;
- ``predict_proba(left, right)``: P(left ≻ right) = E[σ(u_left − u_right)];
- ``rank(items, k)``: expected position, a credible interval on the position and P(in top k);
- ``choice_log_proba(rankings)``: predictive log-probability of every observed top-query.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
import pandas as pd

from ..._utils import as_generator
from ...data.features import FeatureTable, read_features
from ...data.rankings import Rankings, as_rankings
from ...roles import RankingModel
from ._bounds import sigmoid
from ._stages import stage_log_proba

__all__ = ["PlackettLuceModel", "FeatureModel", "ItemScoreModel", "logistic_gaussian_mean"]

#: Gauss–Hermite nodes for E[σ(z)], z ~ N(m, v): exact to ~1e-10 for the variances seen here
_GH_NODES, _GH_WEIGHTS = np.polynomial.hermite_e.hermegauss(48)
_GH_WEIGHTS = _GH_WEIGHTS / _GH_WEIGHTS.sum()


def logistic_gaussian_mean(mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """E[σ(z)] for z ~ N(mean, var), by Gauss–Hermite quadrature (exact when var = 0)."""
    mean = np.asarray(mean, dtype=np.float64)
    sd = np.sqrt(np.maximum(np.asarray(var, dtype=np.float64), 0.0))
    return sigmoid(mean[..., None] + sd[..., None] * _GH_NODES) @ _GH_WEIGHTS


#: items per block when only each item's own variance is needed
#: (:meth:`PlackettLuceModel.predict_utility`)
_BLOCK = 2048


class PlackettLuceModel(RankingModel):
    """Base class of the family under the role :class:`~crowdbayes.roles.RankingModel`:
    ``fit(rankings) -> self``; results in attributes ending in ``_``."""

    _abstract = True

    def fit(self, rankings: Rankings | pd.DataFrame, items=None) -> PlackettLuceModel:
        """Fit to ``rankings`` (a :class:`~crowdbayes.Rankings`, or a long table plus ``items``)."""
        self.check_params()
        rankings = as_rankings(rankings, items)
        if rankings.query_weights is not None and not self.tags.case_weights:
            raise ValueError(
                f"{type(self).__name__} does not take case weights (the rankings' weight "
                "column): fit PlackettLuceVI (pl-vi), or leave the weights out "
                "(--weight-column / weight=)"
            )
        self._fit(rankings)
        return self

    @abstractmethod
    def _fit(self, rankings: Rankings) -> None: ...

    @abstractmethod
    def _items(self, items) -> tuple[pd.Index, object]:
        """Resolve the items to predict for into their ids and a model-specific handle."""

    @abstractmethod
    def _moments(self, handle) -> tuple[np.ndarray, np.ndarray | None]:
        """Posterior mean of the log-scores and their covariance (None: use draws)."""

    @abstractmethod
    def _draws(self, handle, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        """Joint posterior draws of the log-scores, shape (n_items, n_draws)."""

    # -- predictions --------------------------------------------------------------------------

    def _utility(self, items, *, worker=None, worker_features=None) -> pd.DataFrame:
        """Posterior mean and sd of each item's log-score u_i = log s_i."""
        ids, handle = self._items(items)
        blocks = [self._moments(handle[i : i + _BLOCK]) for i in range(0, len(handle), _BLOCK)]
        if blocks and blocks[0][1] is not None:
            mean = np.concatenate([m for m, _ in blocks])
            sd = np.sqrt(np.maximum(np.concatenate([np.diag(c) for _, c in blocks]), 0.0))
        else:
            draws = self._draws(handle, 0, as_generator(0))
            mean, sd = draws.mean(axis=1), draws.std(axis=1)
        return pd.DataFrame({"mean": mean, "sd": sd}, index=ids)

    def _pair_proba(self, left, right, items=None) -> np.ndarray:
        """P(left[k] ≻ right[k]) = E[σ(u_left − u_right)] under the posterior.

        Gaussian posteriors use Gauss–Hermite quadrature over the difference's mean and variance;
        sampled posteriors average σ over their draws; point estimates plug in.
        """
        left, right = np.asarray(left), np.asarray(right)
        ids, handle = self._items(items)
        positions = ids.get_indexer(np.concatenate([left, right]))
        if (positions < 0).any():
            unknown = np.concatenate([left, right])[positions < 0]
            raise ValueError(
                f"pairs: {int((positions < 0).sum())} item id(s) are unknown to the model "
                f"(first: {unknown[0]!r}); pass their features with items="
            )
        # the moments of the items asked about only (not a covariance over every item)
        used, where = np.unique(positions, return_inverse=True)
        handle = handle[used]
        a, b = where[: len(left)], where[len(left) :]
        mean, cov = self._moments(handle)
        if cov is not None:
            var = cov[a, a] + cov[b, b] - 2.0 * cov[a, b]
            return logistic_gaussian_mean(mean[a] - mean[b], var)
        draws = self._draws(handle, 0, as_generator(0))
        return sigmoid(draws[a] - draws[b]).mean(axis=1)

    def rank(
        self,
        items=None,
        *,
        k: int = 10,
        level: float = 0.9,
        n_samples: int = 2000,
        random_state=None,
    ) -> pd.DataFrame:
        """Posterior summary of the ranking of ``items``, best first.

        Columns: ``score_mean``, ``score_sd``; ``position_mean`` (expected position, 1 = best) and
        the central ``level`` credible interval ``position_lower``/``position_upper`` computed
        from joint posterior draws; ``p_top_k`` = P(item among the best k); ``top_k`` marks the
        k items most probably in the top k.
        """
        self.check_is_fitted()
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1); got {level}")
        ids, handle = self._items(items)
        k = int(min(max(k, 1), len(ids)))
        draws = self._draws(handle, n_samples, as_generator(random_state))
        positions = draw_positions(draws)
        tail = (1 - level) / 2
        lower, upper = _interval(positions, tail)
        table = pd.DataFrame(
            {
                "score_mean": draws.mean(axis=1),
                "score_sd": draws.std(axis=1),
                "position_mean": positions.mean(axis=1),
                "position_lower": lower,
                "position_upper": upper,
                "p_top_k": (positions <= k).mean(axis=1),
            },
            index=ids,
        )
        chosen = np.lexsort((table["position_mean"].to_numpy(), -table["p_top_k"].to_numpy()))
        table["top_k"] = False
        table.iloc[chosen[:k], table.columns.get_loc("top_k")] = True
        return table.sort_values("position_mean", kind="stable")

    def choice_log_proba(
        self, rankings: Rankings, *, n_samples: int = 1000, random_state=None
    ) -> np.ndarray:
        """Posterior predictive log p(c_l | A_l) of every top-query in ``rankings``:
        log E[softmax], averaged over posterior draws (plug-in for point estimates)."""
        self.check_is_fitted()
        rankings = as_rankings(rankings)
        ids, handle = self._items(self._items_of(rankings))
        draws = self._draws(handle, n_samples, as_generator(random_state))
        codes = ids.get_indexer(rankings.item_ids)[rankings.stage_items]
        log_p = stage_log_proba(draws[codes], rankings.stage_offsets)
        peak = log_p.max(axis=1, keepdims=True)
        return (peak + np.log(np.exp(log_p - peak).mean(axis=1, keepdims=True)))[:, 0]

    def _items_of(self, rankings: Rankings):
        return rankings.item_ids

    def posterior_draws(self, items=None, n_draws: int = 1000, random_state=None) -> np.ndarray:
        """Joint posterior draws of the log-scores of ``items`` (as ``predict_utility`` takes
        them; None: the training items), shape ``(len(items), n_draws)``."""
        self.check_is_fitted()
        _, handle = self._items(items)
        return self._draws(handle, n_draws, as_generator(random_state))


def draw_positions(draws: np.ndarray, chunk: int = 64) -> np.ndarray:
    """The position (1 = best) of each item (row) in each posterior draw (column); equal
    values rank by row, as a stable sort would rank them (items with equal features tie in
    every draw).

    Each draw is sorted by quicksort, several times faster than a stable sort on large item
    sets; the runs of equal values it leaves in any order are then put in row order, so the
    result equals the stable sort's. Draws are taken ``chunk`` at a time, which keeps the
    temporary arrays small.
    """
    n_items, n_draws = draws.shape
    positions = np.empty((n_items, n_draws), dtype=np.int64)
    places = np.arange(1, n_items + 1)[None, :]
    for start in range(0, n_draws, chunk):
        by_draw = -draws[:, start : start + chunk].T  # one contiguous row per draw
        order = _order_rows(by_draw)
        block = np.empty(order.shape, dtype=np.int64)
        np.put_along_axis(block, order, places, axis=1)
        positions[:, start : start + chunk] = block.T
    return positions


def _interval(positions: np.ndarray, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row, ``np.quantile(..., tail, method="lower")`` and ``(1 - tail, method="higher")``
    from one partition (the order statistics' ranks are numpy's own)."""
    ranks = np.arange(positions.shape[1])
    low = int(np.quantile(ranks, tail, method="lower"))
    high = int(np.quantile(ranks, 1 - tail, method="higher"))
    parted = np.partition(positions, (low, high), axis=1)
    return parted[:, low], parted[:, high]


def _order_rows(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, axis=1, kind="stable")``, by quicksort and a sort of the ties."""
    n_rows, n_items = values.shape
    order = np.argsort(values, axis=1, kind="quicksort")
    ranked = np.take_along_axis(values, order, axis=1)
    same = ranked[:, 1:] == ranked[:, :-1]
    if not same.any():
        return order
    tied = np.zeros(ranked.shape, dtype=bool)
    tied[:, 1:] |= same
    tied[:, :-1] |= same
    run = np.cumsum(np.concatenate([np.ones((n_rows, 1), bool), ~same], axis=1), axis=1)
    rows, cols = np.nonzero(tied)  # row-major: by row, then run, then slot in the run
    key = (rows.astype(np.int64) * (n_items + 1) + run[rows, cols]) * n_items
    order[rows, cols] = np.sort(key + order[rows, cols]) % n_items
    return order


class FeatureModel(PlackettLuceModel):
    """Models with s_i = exp(θᵀx_i) and a Gaussian (or point) posterior over θ.

    Fitted attributes: ``coef_`` (posterior mean of θ, indexed by feature name), ``coef_cov_``
    (posterior covariance, zero for point estimates), ``coef_sd_``; the training items' features
    are kept so that ``predict_utility()`` without arguments scores them.
    """

    _abstract = True
    _tags = {"features": "required", "new_items": True}

    @property
    def item_ids_(self) -> pd.Index:
        """The items of the fitted rankings."""
        self.check_is_fitted()
        return self._train_items.ids

    def _set_posterior(self, rankings: Rankings, mean: np.ndarray, cov: np.ndarray) -> None:
        names = rankings.features.names
        self.feature_names_ = list(names)
        self.coef_ = pd.Series(mean, index=names, name="coef")
        self.coef_cov_ = pd.DataFrame(cov, index=names, columns=names)
        self.coef_sd_ = pd.Series(np.sqrt(np.maximum(np.diag(cov), 0)), index=names, name="sd")
        self._train_items = FeatureTable(rankings.item_ids, rankings.X, list(names), "items")

    def coef_interval(self, level: float = 0.9) -> pd.DataFrame:
        """Central ``level`` credible interval of every feature weight (Gaussian marginals)."""
        from scipy.stats import norm

        self.check_is_fitted()
        z = norm.ppf(0.5 + level / 2)
        return pd.DataFrame(
            {
                "mean": self.coef_,
                "lower": self.coef_ - z * self.coef_sd_,
                "upper": self.coef_ + z * self.coef_sd_,
            }
        )

    def _items(self, items):
        table = self._train_items if items is None else read_features(items)
        table = table.require_names(self.feature_names_)
        return table.ids, table.values

    def _items_of(self, rankings: Rankings):
        return FeatureTable(
            rankings.item_ids,
            rankings.require_features(type(self).__name__),
            rankings.features.names,
        )

    def _moments(self, X):
        mean = X @ self.coef_.to_numpy()
        cov = X @ self.coef_cov_.to_numpy() @ X.T
        return mean, cov

    def _draws(self, X, n_draws, rng):
        mu, cov = self.coef_.to_numpy(), self.coef_cov_.to_numpy()
        if n_draws == 0 or not cov.any():
            return (X @ mu)[:, None]
        thetas = rng.multivariate_normal(mu, cov, size=n_draws, method="cholesky")
        return X @ thetas.T


class ItemScoreModel(PlackettLuceModel):
    """Feature-less models: one score per item id seen in training.

    Fitted attributes: ``item_ids_``; ``log_scores_`` (Series, centred to mean zero because
    Plackett–Luce only identifies scores up to a common factor).
    """

    _abstract = True

    def _items(self, items):
        if items is None:
            return self.item_ids_, np.arange(len(self.item_ids_))
        if isinstance(items, (pd.DataFrame, FeatureTable)):
            raise ValueError(
                f"{type(self).__name__} has no features: pass item ids, not a feature table"
            )
        wanted = pd.Index(items)
        codes = self.item_ids_.get_indexer(wanted)
        if (codes < 0).any():
            raise ValueError(
                f"items: {int((codes < 0).sum())} id(s) were not in the training rankings "
                f"(first: {wanted[codes < 0][0]!r}); feature-less models cannot score new items"
            )
        return wanted, codes
