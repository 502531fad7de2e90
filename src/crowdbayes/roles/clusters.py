"""The role of a crowd-clustering model: must-link / cannot-link judgments in, each item's
cluster and each worker's sensitivity and specificity out."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..base import Estimator, OptionalResult

__all__ = ["Clusterer"]


class Clusterer(Estimator):
    """Base of every model of links (``tags.judgment == "links"``).

    ``fit(links)`` takes a :class:`~crowdbayes.Links` (or a ``worker, left, right, label``
    table or file); a model of the items' features (``tags.features == "required"``) reads
    them from the :class:`~crowdbayes.Links` (built with ``observations``), and clusters every
    item with features, linked or not.

    Every fitted model holds, indexed by the user's ids:

    - ``assignments_`` — Series: each item's most probable cluster (cluster 0 the largest);
    - ``probas_`` — DataFrame (items × clusters): posterior cluster probabilities;
    - ``n_clusters_used_`` — the number of clusters holding at least one item;
    - ``workers_`` — DataFrame, one row per worker: sensitivity ``alpha`` and specificity
      ``beta`` (with ``*_lower`` / ``*_upper`` credible intervals where the model has them)
      and ``n_links``; None for a fit without links;

    and these, None where the model has none: ``credible_level_`` (the level of the workers'
    intervals), ``embedding_`` (DataFrame: each item's position in the model's latent space),
    ``best_epoch_``, ``n_restarts_`` and ``collapsed_restarts_`` (models trained in epochs and
    restarts).
    """

    _abstract = True  # a role, not a model: not registered for crowdbayes.load

    _tags: ClassVar[dict[str, Any]] = {"judgment": "links"}

    workers_ = OptionalResult()
    embedding_ = OptionalResult()
    credible_level_ = OptionalResult()
    best_epoch_ = OptionalResult()
    n_restarts_ = OptionalResult()
    collapsed_restarts_ = OptionalResult()

    def predict(self) -> pd.Series:
        """The most probable cluster of every item of the fit (``assignments_``)."""
        self.check_is_fitted()
        return self.assignments_

    def predict_proba(self) -> pd.DataFrame:
        """Posterior cluster probabilities of every item of the fit (rows sum to 1)."""
        self.check_is_fitted()
        return self.probas_

    def fit_predict(self, links) -> pd.Series:
        """Fit, then return ``assignments_``."""
        return self.fit(links).assignments_

    def item_table(self, *, with_proba: bool = False) -> pd.DataFrame:
        """One row per item: ``cluster`` and ``probability`` (the posterior probability of the
        assigned cluster), and with ``with_proba`` every cluster's ``p_<k>`` (what ``cluster
        fit --out`` writes)."""
        self.check_is_fitted()
        assignments = self.assignments_
        proba = self.predict_proba().reindex(assignments.index)
        position = proba.columns.get_indexer(assignments.to_numpy())
        chosen = proba.to_numpy()[np.arange(len(proba)), position]
        table = pd.DataFrame(
            {"cluster": assignments.to_numpy(), "probability": chosen},
            index=pd.Index(assignments.index, name="item"),
        )
        if with_proba:
            columns = proba.copy()
            columns.columns = [f"p_{c}" for c in proba.columns]
            table = table.join(columns)
        return table
