"""The role of a model of numeric answers: each task's value and each worker's bias and
noise."""

from __future__ import annotations

from typing import Any, ClassVar

import pandas as pd

from ..base import Estimator

__all__ = ["ValueAggregator"]


class ValueAggregator(Estimator):
    """Base of every model of numeric answers (``tags.judgment == "values"``).

    ``fit(values)`` takes a :class:`~crowdbayes.data.values.Values` (or a ``task, worker,
    value`` table or file). Every fitted model holds, indexed by the user's ids:

    - ``values_`` — per task: ``mean``, ``sd``, ``lower``, ``upper`` (the central
      ``credible_level`` interval) and ``n_answers``;
    - ``worker_params_`` — per worker: ``bias``, ``noise_sd`` (with their intervals) and
      ``n_answers``.
    """

    _abstract = True  # a role, not a model: not registered for crowdbayes.load

    _tags: ClassVar[dict[str, Any]] = {"judgment": "values", "min_workers": 2}
    _diagnostics: ClassVar[dict[str, str]] = {"iterations": "n_iter_", "converged": "converged_"}

    def predict(self) -> pd.Series:
        """Each task's posterior mean value."""
        self.check_is_fitted()
        return self.values_["mean"].rename("value")

    def task_table(self) -> pd.DataFrame:
        """One row per task: ``values_``."""
        self.check_is_fitted()
        return self.values_

    def worker_table(self) -> pd.DataFrame:
        """One row per worker: ``worker_params_``."""
        self.check_is_fitted()
        return self.worker_params_
