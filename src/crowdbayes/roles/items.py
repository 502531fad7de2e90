"""The roles of models that score items: from rankings and choices (:class:`RankingModel`)
and from pairwise comparisons (:class:`PairwiseScorer`). Both answer the same two questions
the same way: how good is each item (:meth:`ItemScorer.predict_utility`), and how likely is
one item to be preferred to another (:meth:`ItemScorer.predict_proba`)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..base import Estimator, OptionalResult

__all__ = ["ItemScorer", "PairwiseScorer", "RankingModel"]


class ItemScorer(Estimator):
    """What every model of item scores holds and predicts.

    Fitted results, indexed by the user's item ids:

    - ``item_ids_`` — the items seen in fit;
    - ``utility_`` — DataFrame: each fitted item's posterior ``mean`` and ``sd`` of its score
      (a utility, or a log-score for Plackett–Luce), with ``lower`` and ``upper`` where the
      model gives an interval.

    Predictions take the same arguments in the same order everywhere: ``items`` (ids of
    fitted items, or a feature table of new ones for a model with ``tags.new_items``), and for
    a model with ``tags.personal_predictions`` the worker(s) to predict for.
    """

    _abstract = True  # a role, not a model: not registered for crowdbayes.load

    _tags: ClassVar[dict[str, Any]] = {}

    def predict_utility(
        self, items: Any = None, *, worker: Any = None, worker_features: Any = None
    ) -> pd.DataFrame:
        """Posterior ``mean`` and ``sd`` of the scores of ``items`` (default: every fitted
        item), indexed by item: the crowd's (``worker=None``), or one worker's (models with
        ``tags.personal_predictions``; ``worker_features`` describes a worker not seen in
        fit)."""
        self.check_is_fitted()
        self._refuse_workers(worker, worker_features)
        return self._utility(items, worker=worker, worker_features=worker_features)

    def predict_proba(
        self,
        left: Sequence,
        right: Sequence,
        items: Any = None,
        *,
        workers: Any = None,
        worker_features: Any = None,
    ) -> pd.Series:
        """P(``left[k]`` preferred to ``right[k]``) under the posterior, as a Series named
        ``p_left`` indexed by (left, right).

        ``items``: features of items not seen in fit (models with ``tags.new_items``).
        ``workers``: one worker per pair (models with ``tags.personal_predictions``): that
        worker's own probability; a pair without a worker (None or NaN) gets the crowd's.
        ``worker_features``: features of workers not seen in fit.
        """
        self.check_is_fitted()
        self._refuse_workers(workers, worker_features)
        left, right = pd.Index(list(left)), pd.Index(list(right))
        if len(left) != len(right):
            raise ValueError(f"predict_proba: {len(left)} left and {len(right)} right items")
        p = np.asarray(self._pair_proba(left, right, items), dtype=np.float64).copy()
        if workers is not None:
            workers = pd.Index(list(workers), dtype=object)
            if len(workers) != len(left):
                raise ValueError(f"predict_proba: {len(workers)} workers for {len(left)} pairs")
            given = workers.notna()
            if given.any():
                p[given] = self._pair_proba(
                    left[given],
                    right[given],
                    items,
                    workers=workers[given],
                    worker_features=worker_features,
                )
        index = pd.MultiIndex.from_arrays([left, right], names=["left", "right"])
        return pd.Series(p, index=index, name="p_left")

    def _refuse_workers(self, workers: Any, worker_features: Any) -> None:
        if self.tags.personal_predictions:
            return
        if workers is not None or worker_features is not None:
            raise ValueError(
                f"{type(self).__name__} pools all workers: it has no personal predictions "
                "(models with tags.personal_predictions, such as CrowdGPPL, have)"
            )

    # ------------------------------------------------------------------ the family's part
    def _utility(self, items: Any, *, worker: Any, worker_features: Any) -> pd.DataFrame:
        """The scores of :meth:`predict_utility` (arguments checked)."""
        raise NotImplementedError

    def _pair_proba(self, left: pd.Index, right: pd.Index, items: Any, **workers: Any):
        """The probabilities of :meth:`predict_proba` as an array: the crowd's, or with
        ``workers`` (one per pair, every one given) and ``worker_features`` each worker's."""
        raise NotImplementedError


class RankingModel(ItemScorer):
    """Base of the models of rankings and choices (``tags.judgment == "rankings"``).

    ``fit(rankings)`` takes a :class:`~crowdbayes.Rankings`. Beyond :class:`ItemScorer`:
    ``rank(items, k=...)`` summarises the posterior of the ranking (expected position, its
    interval, the chance of being in the top ``k``), ``choice_log_proba(rankings)`` scores
    observed choices.
    """

    _abstract = True  # a role, not a model: not registered for crowdbayes.load

    _tags: ClassVar[dict[str, Any]] = {"judgment": "rankings"}
    _diagnostics: ClassVar[dict[str, str]] = {"iterations": "n_iter_", "converged": "converged_"}

    #: the lower bound over the grid of prior precisions a model chose from (None: no grid)
    eta_curve_ = OptionalResult()

    def score(self, items: Any = None) -> pd.DataFrame:
        """Deprecated: :meth:`predict_utility` (the same table)."""
        warnings.warn(
            "score() is deprecated: use predict_utility() (the same table)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.predict_utility(items)

    @property
    def utility_(self) -> pd.DataFrame:
        """Each fitted item's posterior ``mean`` and ``sd`` of its log-score."""
        return self.predict_utility()

    def item_table(self, *, k: int = 10, random_state: Any = None) -> pd.DataFrame:
        """One row per fitted item, best first: :meth:`rank` with ``k`` (what ``rank fit
        --out`` writes)."""
        return self.rank(k=k, random_state=random_state)


class PairwiseScorer(ItemScorer):
    """Base of the models of pairwise comparisons (``tags.judgment == "pairs"``).

    ``fit(comparisons)`` takes a :class:`~crowdbayes.Comparisons` (or a ``worker, left,
    right, label`` table or file); the feature tables of the items (and workers) ride in the
    :class:`~crowdbayes.Comparisons` or follow as ``fit(comparisons, items)``.

    Beyond :class:`ItemScorer`, these, None where the model has none: ``worker_ids_`` (the
    workers of the fit, for models of each worker), ``worker_groups_`` (Series: each worker's
    group, for models of communities of workers) and ``lengthscale_`` (Series: each item
    feature's length-scale, for the GP models).
    """

    _abstract = True  # a role, not a model: not registered for crowdbayes.load

    _tags: ClassVar[dict[str, Any]] = {"judgment": "pairs"}

    worker_ids_ = OptionalResult()
    worker_groups_ = OptionalResult()
    lengthscale_ = OptionalResult()

    def item_table(self) -> pd.DataFrame:
        """One row per fitted item: the posterior of its score (``utility_``; what ``prefs
        fit --out`` writes)."""
        self.check_is_fitted()
        return self.utility_
