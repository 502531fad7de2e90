"""The GP prior over items: the item kernel from a kernel name and a length-scale setting.

Length-scales come from the per-feature median heuristic (Gretton et al., 2012; Simpson &
Gurevych, 2018, Sec. 5), its ``20 √D`` scaled variant for high-dimensional features (Simpson &
Gurevych, 2020, Eq. 26, Sec. 5.3), or are given.
"""

from __future__ import annotations

import numpy as np

from ..base import POSITIVE, Options
from ..data.comparisons import Comparisons
from ..kernels import Independent, Kernel, make_kernel, median_heuristic, scaled_median_heuristic

__all__ = ["LENGTHSCALE_HEURISTICS", "ITEM_PRIOR_CONSTRAINTS", "make_item_kernel", "item_inputs"]

#: the names a ``lengthscale`` setting may take, and the heuristic each stands for
LENGTHSCALE_HEURISTICS = {"median": median_heuristic, "scaled_median": scaled_median_heuristic}


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
        if lengthscale not in LENGTHSCALE_HEURISTICS:
            raise ValueError(
                f"lengthscale must be {' or '.join(map(repr, LENGTHSCALE_HEURISTICS))}, a "
                f"number or an array; got {lengthscale!r}"
            )
        ls = LENGTHSCALE_HEURISTICS[lengthscale](X, random_state=0)
    else:
        ls = np.broadcast_to(np.asarray(lengthscale, dtype=np.float64), (X.shape[1],)).copy()
    return make_kernel(kernel, ls, variance)


def item_inputs(
    data: Comparisons,
    kernel: str | Kernel,
    lengthscale: str | float | np.ndarray,
    compared: np.ndarray,
    variance: float = 1.0,
) -> tuple[np.ndarray, Kernel]:
    """``(X, k)``: the input rows of every item and the prior kernel over them.

    With item features, ``X`` is the feature table and ``k`` is :func:`make_item_kernel` with
    its length-scale heuristic over the ``compared`` items' rows. Without, ``X`` holds the item
    codes as one-column rows and ``k`` is the independent prior ``N(0, variance)`` of every item
    (the Bayesian Thurstone model), under which an item never compared keeps its prior.
    """
    if not data.has_features:
        return np.arange(data.n_items, dtype=np.float64)[:, None], Independent(variance)
    return data.X, make_item_kernel(kernel, lengthscale, data.X[compared], variance)


#: the constraints (:mod:`crowdbayes.base`) of an estimator's ``kernel`` and ``lengthscale``
#: parameters, as :func:`make_item_kernel` reads them
ITEM_PRIOR_CONSTRAINTS = {
    "kernel": [Options("matern32", "rbf"), Kernel],
    "lengthscale": [
        Options(*LENGTHSCALE_HEURISTICS),
        POSITIVE,
        np.ndarray,
        list,
        tuple,
    ],
}
