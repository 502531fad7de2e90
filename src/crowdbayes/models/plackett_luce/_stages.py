"""Sums over top-queries ("stages"): every choice set is a contiguous segment of
``Rankings.stage_items`` delimited by ``Rankings.stage_offsets``, its first member chosen.

Where every segment has the same size m (top-1 choices from sets of one size, as most choice
data are), ``size=m`` reduces them column by column — member j of every segment at once,
strided views of a (segments × m) reshape — instead of by ``reduceat``, which runs one short
inner loop per segment (10,000 sets of 5: several times faster). A sum is formed as
a₀ + (((a₁ + a₂) + a₃) + …), the order numpy's ``reduceat`` uses for segments of up to
``COLUMN_MAX_SIZE`` members (the first element, then a sequential sum of the rest, as its
pairwise summation does below 8 terms), so both paths give the same bits there; larger
segments always take ``reduceat``. Minima and maxima are exact in any order.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "COLUMN_MAX_SIZE",
    "column_size",
    "segment_max",
    "segment_min",
    "segment_sum",
    "stage_log_proba",
]

#: the largest segment size reduced by columns (see the module docstring)
COLUMN_MAX_SIZE = 8


def column_size(offsets: np.ndarray) -> int | None:
    """The ``size`` argument of the reductions for these segments: their common size when they
    all have one in 1 … ``COLUMN_MAX_SIZE`` (and there is at least one), else None."""
    sizes = np.diff(offsets)
    if len(sizes) == 0 or not 1 <= sizes[0] <= COLUMN_MAX_SIZE or np.any(sizes != sizes[0]):
        return None
    return int(sizes[0])


def _columns(values: np.ndarray, size: int | None) -> np.ndarray | None:
    """Member j of every segment as row j (views), or None where ``reduceat`` is to run."""
    if size is None or values.ndim != 1:
        return None
    return values.reshape(-1, size).T


def segment_sum(values: np.ndarray, offsets: np.ndarray, size: int | None = None) -> np.ndarray:
    """Sum of ``values`` over each segment (along axis 0); segments are never empty. ``size``:
    every segment has this many members (:func:`column_size`; module docstring)."""
    columns = _columns(values, size)
    if columns is None:
        return np.add.reduceat(values, offsets[:-1], axis=0)
    if len(columns) == 1:
        return columns[0].copy()
    rest = _fold(np.add, columns[1:])
    return np.add(columns[0], rest, out=rest)


def segment_max(values: np.ndarray, offsets: np.ndarray, size: int | None = None) -> np.ndarray:
    columns = _columns(values, size)
    if columns is None:
        return np.maximum.reduceat(values, offsets[:-1], axis=0)
    return _fold(np.maximum, columns)


def segment_min(values: np.ndarray, offsets: np.ndarray, size: int | None = None) -> np.ndarray:
    columns = _columns(values, size)
    if columns is None:
        return np.minimum.reduceat(values, offsets[:-1], axis=0)
    return _fold(np.minimum, columns)


def _fold(ufunc: np.ufunc, columns: np.ndarray) -> np.ndarray:
    """``ufunc`` of the rows of ``columns``, first to last, into one new array."""
    result = columns[0].copy()
    for column in columns[1:]:
        ufunc(result, column, out=result)
    return result


def stage_log_proba(member_utilities: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """log p(c_l | A_l) = u_{c_l} − log Σ_{j∈A_l} exp(u_j) for every stage (Eq. 3 with
    s = e^u). ``member_utilities`` has one row per entry of ``stage_items`` (extra columns are
    independent draws)."""
    peak = segment_max(member_utilities, offsets)
    sizes = np.diff(offsets)
    shifted = member_utilities - np.repeat(peak, sizes, axis=0)
    log_norm = np.log(segment_sum(np.exp(shifted), offsets))
    return shifted[offsets[:-1]] - log_norm
