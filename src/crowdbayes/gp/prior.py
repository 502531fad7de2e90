"""The GP prior over items: the item kernel from a kernel name and a length-scale setting.

Length-scales come from the per-feature median heuristic (Gretton et al., 2012; Simpson &
Gurevych, 2018, Sec. 5) scaled for the number of features ``D``, or are given:

- ``"auto"`` (the GP preference models' default): ``√D`` × the per-feature median. The product
  kernel multiplies ``D`` per-feature factors, each about as small at a typical distance, so at
  the plain median the prior correlation of two typical items shrinks geometrically in ``D``;
  scaled by ``√D`` it stays of one order whatever ``D`` (Matérn-3/2 near zero:
  ``log k ≈ -(3/2) Σ_d (r_d/ℓ_d)²``). Measured median correlation of two arguments of UKPConvArg
  (384-dimensional MiniLM embeddings): 1e-181 at the plain median, 0.05 at ``√D`` × median, 0.99
  at ``20 √D`` × median; of two items of 2-dimensional simulated data: 0.16 and 0.34. For
  ``D = 1`` it is the median heuristic.
- ``"median"``: the per-feature median heuristic itself (suits a few features).
- ``"scaled_median"``: ``20 √D`` × median, the setting of Simpson & Gurevych (2020, Eq. 26,
  Sec. 5.3) for their 32,310-dimensional argument features.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..base import POSITIVE, Options
from ..data.comparisons import Comparisons
from ..kernels import Independent, Kernel, make_kernel, median_heuristic, scaled_median_heuristic

__all__ = ["LENGTHSCALE_HEURISTICS", "ITEM_PRIOR_CONSTRAINTS", "make_item_kernel", "item_inputs"]

#: the names a ``lengthscale`` setting may take, and the heuristic each stands for
LENGTHSCALE_HEURISTICS = {
    "auto": partial(scaled_median_heuristic, factor=1.0),
    "median": median_heuristic,
    "scaled_median": scaled_median_heuristic,
}


def make_item_kernel(
    kernel: str | Kernel,
    lengthscale: str | float | np.ndarray,
    X: np.ndarray,
    variance: float = 1.0,
) -> Kernel:
    """The kernel over feature rows ``X``: a :class:`Kernel` instance as given, else
    ``make_kernel(kernel, ℓ, variance)`` with ``ℓ`` the per-feature median heuristic over
    ``X`` scaled by ``√D`` (``"auto"``), unscaled (``"median"``) or by ``20 √D``
    (``"scaled_median"``) — see the module docstring — or the given number/array broadcast to
    one value per feature."""
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
