"""What every GP preference estimator shares under the role
:class:`~crowdbayes.roles.PairwiseScorer`: the parameter constraints of the item prior, the
resolution of item ids or feature tables into input rows, the length-scale summary, the start
of a warm fit, and the answer model of their question selection
(:class:`~crowdbayes.roles.PairQuestions`, shared with Bradley–Terry).

:class:`GPPreferenceBase` is the base of :class:`~.ep.GPPreferenceEP` and of the GPPL model
(:class:`~._gppl.GPPLBase`, hence :class:`~.gppl.GPPL`, :class:`~.gppl.GPPLVI`,
:class:`~.gppl.GPPLLaplace` and :class:`~.crowd.CrowdGPPL`). It expects ``kernel`` and
``lengthscale`` parameters and, once fitted, ``item_ids_``, ``feature_names_``, ``kernel_``
and ``_X`` (the input rows of every item).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...base import (
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    TOLERANCE,
    Interval,
    Options,
)
from ...data.comparisons import Comparisons
from ...data.validate import show_values
from ...gp.pairs import TIE_POLICIES
from ...gp.prior import ITEM_PRIOR_CONSTRAINTS, item_inputs
from ...kernels import Kernel
from ...roles import PairQuestions, PairwiseScorer

__all__ = ["GPPreferenceBase"]


#: constraints of the parameters the GP preference estimators share, by name
SHARED_CONSTRAINTS = {
    **ITEM_PRIOR_CONSTRAINTS,
    "output_scale": [POSITIVE],
    "noise": [POSITIVE],
    "ties": [Options(*TIE_POLICIES)],
    "shape_s0": [POSITIVE],
    "rate_s0": [POSITIVE],
    "n_inducing": [POSITIVE_INT],
    "batch_size": [POSITIVE_INT, None],
    "forgetting_rate": [Interval(numbers.Real, 0, 1)],
    "delay": [NON_NEGATIVE],
    "n_inner": [POSITIVE_INT],
    "max_iter": [POSITIVE_INT],
    "tol": TOLERANCE,
    "optimize_lengthscale": [bool],
    "random_state": list(RANDOM_STATE),
    "progress": [bool],
}


def constraints_of(*names: str, **more: list) -> dict[str, list]:
    """The shared constraints of ``names`` plus ``more``: one estimator's table."""
    return {**{name: SHARED_CONSTRAINTS[name] for name in names}, **more}


class GPPreferenceBase(PairQuestions, PairwiseScorer):
    """Shared item handling of the GP preference estimators (module docstring)."""

    _abstract = True
    _tags = {"features": "required", "new_items": True, "warm_start": True}
    _diagnostics = {
        "iterations": "n_iter_",
        "converged": "converged_",
        "ties_dropped": "n_ties_dropped_",
    }
    _traces = {"history_": "objective"}

    def _set_items(
        self,
        data: Comparisons,
        compared: np.ndarray,
        variance: float,
        kernel: Kernel | None = None,
    ) -> Kernel:
        """Set ``item_ids_``, ``feature_names_`` and the input rows ``_X`` of every item;
        return the prior kernel over them (:func:`~crowdbayes.gp.prior.item_inputs`; a given
        ``kernel``, kept from a previous fit, is used as it is)."""
        self.item_ids_ = data.item_ids
        self.feature_names_ = data.feature_names
        chosen = self.kernel if kernel is None else kernel
        self._X, kernel = item_inputs(data, chosen, self.lengthscale, compared, variance)
        return kernel

    # ------------------------------------------------------------------ warm starts
    def _previous_state(self, init: Any) -> dict | None:
        """The attributes of ``init`` (a fitted model of this class), read before the refit
        overwrites them (``init`` may be the model itself); None without ``init``."""
        if init is None:
            return None
        name = type(self).__name__
        if not self.tags.warm_start:
            raise ValueError(f"{name} cannot warm-start; fit it without init")
        if type(init) is not type(self) or not init.is_fitted():
            got = type(init).__name__
            if type(init) is type(self):
                got += " that is not fitted"
            raise ValueError(f"{name}.fit: init must be a fitted {name}; got a {got}")
        return dict(vars(init))

    @property
    def lengthscale_(self) -> pd.Series | None:
        """Length-scale of each feature (None without features or length-scales)."""
        self.check_is_fitted()
        ls = getattr(self.kernel_, "lengthscale", None)
        if ls is None or self.feature_names_ is None:
            return None
        ls = np.broadcast_to(ls, (len(self.feature_names_),))
        return pd.Series(ls, index=self.feature_names_, name="lengthscale")

    def _resolve(self, items: Sequence | pd.DataFrame, what: str) -> tuple[pd.Index, np.ndarray]:
        """Feature rows for ``items``: known ids, or a feature DataFrame of new items, their ids
        in an ``item`` column or, without one, the index (as every feature table)."""
        id_column = [c for c in getattr(items, "columns", ()) if str(c) == "item"]
        if id_column:
            items = items.set_index(id_column[0])
        if isinstance(items, pd.DataFrame):
            if self.feature_names_ is None:
                raise ValueError(
                    f"{what}: this model was fitted without item features, so it cannot "
                    "predict from a feature table"
                )
            missing = [c for c in self.feature_names_ if c not in map(str, items.columns)]
            if missing:
                raise ValueError(f"{what}: feature column(s) missing: {show_values(missing)}")
            frame = items.rename(columns=str)[list(self.feature_names_)]
            X = frame.to_numpy(dtype=np.float64)
            if not np.isfinite(X).all():
                rows = np.flatnonzero(~np.isfinite(X).all(axis=1))
                raise ValueError(
                    f"{what}: {rows.size} row(s) have missing or infinite features "
                    f"({show_values(frame.index[rows])})"
                )
            return pd.Index(items.index, name="item"), X
        ids = pd.Index(list(items), name="item")
        codes = self.item_ids_.get_indexer(ids)
        unknown = np.flatnonzero(codes < 0)
        if unknown.size:
            hint = (
                "; pass their features as a DataFrame indexed by item id"
                if self.feature_names_ is not None
                else " (the model has no item features, so it knows only compared items)"
            )
            raise ValueError(
                f"{what}: {unknown.size} item id(s) were not seen in fit: "
                f"{show_values(ids[unknown].unique())}{hint}"
            )
        return ids, self._X[codes]

    def _pair_items(
        self, left: Sequence, right: Sequence, items: pd.DataFrame | None, what: str
    ) -> tuple[pd.Index, pd.Index, np.ndarray, np.ndarray, np.ndarray]:
        """``(left, right, X, li, ri)``: the pairs' ids, the input rows ``X`` of the distinct
        items they name (known ids, or rows of ``items``) and each pair's two rows of ``X``."""
        left, right = pd.Index(list(left)), pd.Index(list(right))
        if len(left) != len(right):
            raise ValueError(f"{what}: {len(left)} left and {len(right)} right items")
        wanted = left.append(right).unique()
        described = wanted.intersection(items.index, sort=False) if items is not None else []
        ids, X = self._resolve(wanted.difference(described, sort=False), what)
        if len(described):
            ids_new, X_new = self._resolve(items.loc[described], what)
            ids, X = ids.append(ids_new), np.vstack([X, X_new])
        return left, right, X, ids.get_indexer(left), ids.get_indexer(right)

    # ------------------------------------------------------------------ what to ask next
    #: what ``strategy="auto"`` means: half of the questions by information gain, half drawn
    #: (benchmarks/active/results/active_pairs_strict_32.md; CrowdGPPL keeps ``"information"``)
    default_question_strategy: ClassVar[str] = "mixed"

    def _noise_var(self) -> float:
        """``α² = 2σ²``: the variance of the judgment noise on a utility difference."""
        return 2.0 * self.noise**2
