"""What every GP preference estimator shares: the item kernel from the length-scale setting,
the resolution of item ids or feature tables into feature rows, and the length-scale summary.

:class:`GPPreferenceBase` is mixed into :class:`~.estimator.GPPreferenceEP`,
:class:`~.svi.GPPL` (and so :class:`~.vi.GPPLVI`, :class:`~.crowd.CrowdGPPL`) and
:class:`~.laplace.GPPLLaplace`. It expects ``kernel``, ``lengthscale`` (hyperparameters) and,
once fitted, ``item_ids_``, ``feature_names_``, ``kernel_`` and ``_X``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..._utils import check_is_fitted
from ...data._validate import show_values
from ...kernels import Kernel, make_kernel, median_heuristic, scaled_median_heuristic

__all__ = ["GPPreferenceBase", "make_item_kernel"]

_HEURISTICS = {"median": median_heuristic, "scaled_median": scaled_median_heuristic}


def make_item_kernel(
    kernel: str | Kernel,
    lengthscale: str | float | np.ndarray,
    X: np.ndarray,
    variance: float = 1.0,
) -> Kernel:
    """The kernel over feature rows ``X``: a :class:`Kernel` instance as given, else
    ``make_kernel(kernel, ℓ, variance)`` with ``ℓ`` the per-feature median heuristic over
    ``X`` (``"median"``), its ``20 √D`` scaled variant (``"scaled_median"``), or the given
    number/array broadcast to one value per feature."""
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(lengthscale, str):
        if lengthscale not in _HEURISTICS:
            raise ValueError(
                f"lengthscale must be {' or '.join(map(repr, _HEURISTICS))}, a number or an "
                f"array; got {lengthscale!r}"
            )
        ls = _HEURISTICS[lengthscale](X, random_state=0)
    else:
        ls = np.broadcast_to(np.asarray(lengthscale, dtype=np.float64), (X.shape[1],)).copy()
    return make_kernel(kernel, ls, variance)


class GPPreferenceBase:
    """Shared item handling of the GP preference estimators (module docstring)."""

    def _kernel_variance(self) -> float:
        """Prior variance of the kernel built by :meth:`_make_kernel`: ``output_scale`` (EP),
        else 1 (GPPL, whose scale is the inverse of the gamma-distributed ``s``)."""
        return float(getattr(self, "output_scale", 1.0))

    def _make_kernel(self, X: np.ndarray) -> Kernel:
        """The item kernel for the training feature rows ``X`` (:func:`make_item_kernel`)."""
        return make_item_kernel(self.kernel, self.lengthscale, X, self._kernel_variance())

    @property
    def lengthscale_(self) -> pd.Series | None:
        """Length-scale of each feature (None without features or length-scales)."""
        check_is_fitted(self, "kernel_")
        ls = getattr(self.kernel_, "lengthscale", None)
        if ls is None or self.feature_names_ is None:
            return None
        ls = np.broadcast_to(ls, (len(self.feature_names_),))
        return pd.Series(ls, index=self.feature_names_, name="lengthscale")

    def _resolve(self, items: Sequence | pd.DataFrame, what: str) -> tuple[pd.Index, np.ndarray]:
        """Feature rows for ``items``: known ids, or a feature DataFrame indexed by new ids."""
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
