"""Comparisons made ready for the GP preference engines: the tie policy and the soft labels.

A comparison of items ``a`` and ``b`` is observed as ``y = 1`` (``a`` preferred), ``y = 0``
(``b`` preferred) or, for a tie kept with ``ties="half"``, ``y = ½``: half a win for each side
(Simpson & Gurevych, 2020, Sec. 3.1). With ``ties="drop"`` ties are left out, with a
:class:`~crowdbayes.exceptions.DataWarning` giving their number.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..data.comparisons import Comparisons
from ..exceptions import DataWarning

__all__ = ["TIE_POLICIES", "EncodedPairs", "kept_comparisons", "encode_pairs"]

#: what a ``ties`` parameter accepts
TIE_POLICIES = ("drop", "half")


def kept_comparisons(
    data: Comparisons, ties: str, who: str, stacklevel: int = 2
) -> tuple[np.ndarray, int]:
    """``(keep, n_dropped)``: a mask of the comparisons the tie policy keeps and the number of
    ties it dropped.

    Under ``ties="drop"`` the ties are dropped with a :class:`DataWarning` naming ``who`` and
    their count (``stacklevel`` as the caller would pass it to :func:`warnings.warn`), and a
    table of ties only is refused.
    """
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties must be one of {TIE_POLICIES}; got {ties!r}")
    keep = np.ones(data.n_comparisons, dtype=bool)
    if ties != "drop" or not data.n_ties:
        return keep, 0
    keep = data.outcome != 0
    if not keep.any():
        raise ValueError(
            f"{who}: all {data.n_ties} comparisons are ties; pass ties='half' to use them"
        )
    warnings.warn(
        f"{who}: dropped {data.n_ties} tie(s) of {data.n_comparisons} comparisons "
        "(pass ties='half' to count a tie as half a win each)",
        DataWarning,
        stacklevel=stacklevel + 1,
    )
    return keep, int(data.n_ties)


@dataclass
class EncodedPairs:
    """Comparisons ready for the GPPL engines: item codes (rows of the item features), soft
    labels ``y`` and worker codes."""

    left: np.ndarray
    right: np.ndarray
    y: np.ndarray
    worker: np.ndarray
    n_ties_dropped: int

    @property
    def items(self) -> np.ndarray:
        """The compared items' codes, sorted."""
        return np.unique(np.concatenate([self.left, self.right]))


def encode_pairs(data: Comparisons, ties: str, who: str) -> EncodedPairs:
    """``y = 1`` (left preferred), ``0`` (right), ``½`` (tie, with ``ties="half"``); ties
    dropped under ``ties="drop"`` (:func:`kept_comparisons`)."""
    keep, dropped = kept_comparisons(data, ties, who, stacklevel=3)
    y = 0.5 * (data.outcome[keep].astype(np.float64) + 1.0)
    return EncodedPairs(
        data.left_codes[keep], data.right_codes[keep], y, data.worker_codes[keep], dropped
    )
