"""Integer codes of id columns without hashing, where the ids are integers in a short range.

``pd.factorize(values, sort=False)`` hashes every value. For integer ids whose range
``max − min`` is not much larger than their number (item numbers, row numbers, codes from
another table) the same codes come from direct addressing: the first position of every value
(``np.minimum.at`` into a table over the range), the distinct values ordered by it, and every
value's code read from the table. The result is exactly ``pd.factorize``'s: codes in order of
first appearance, and the distinct values in that order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["DIRECT_RANGE_FACTOR", "FirstSeen", "first_seen", "factorize_first_seen"]

#: direct addressing is used while the range of the values is at most this many times their
#: number (plus a constant): the table then costs no more memory than the codes
DIRECT_RANGE_FACTOR = 4
#: positions are made this many at a time (no array of positions as long as the values)
_CHUNK = 1 << 16


class FirstSeen:
    """The codes of int64 values in ``[low, low + len(table))``: ``table[v - low]`` is the code
    of ``v`` (order of first appearance), ``uniques`` the values in code order."""

    def __init__(self, table: np.ndarray, low: int, uniques: np.ndarray) -> None:
        self.table, self.low, self.uniques = table, low, uniques

    def codes(self, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The codes of ``values`` (each one of the values the table was built from)."""
        offsets = values - self.low if self.low else values
        # the offsets are in range by construction: "clip" spares take a buffered copy
        return np.take(self.table, offsets, out=out, mode="clip")


def first_seen(parts: Sequence[np.ndarray]) -> FirstSeen | None:
    """The :class:`FirstSeen` table of the int64 arrays ``parts`` taken as one array (in
    order), or None where direct addressing does not apply (another dtype, no values, or a
    range wider than :data:`DIRECT_RANGE_FACTOR` times their number)."""
    n = sum(len(part) for part in parts)
    if n == 0 or any(np.asarray(part).dtype != np.int64 for part in parts):
        return None
    low = min(int(part.min()) for part in parts if len(part))
    high = max(int(part.max()) for part in parts if len(part))
    span = high - low + 1
    if span > DIRECT_RANGE_FACTOR * n + 1024:
        return None
    first = np.full(span, n, dtype=np.int64)
    positions = np.arange(min(n, _CHUNK), dtype=np.int64)
    start = 0
    for part in parts:
        for lo in range(0, len(part), _CHUNK):
            chunk = part[lo : lo + _CHUNK]
            offsets = chunk - low if low else chunk
            np.minimum.at(first, offsets, positions[: len(chunk)] + (start + lo))
        start += len(part)
    present = np.flatnonzero(first < n)
    order = present[np.argsort(first[present], kind="stable")]
    table = np.empty(span, dtype=np.int64)
    table[order] = np.arange(len(order))
    return FirstSeen(table, low, order + low)


def factorize_first_seen(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, uniques)`` as ``pd.factorize(values, sort=False)`` gives them (codes int64);
    by direct addressing for an int64 array in a short range, else by ``pd.factorize``."""
    values = np.asarray(values)
    seen = first_seen([values])
    if seen is None:
        codes, uniques = pd.factorize(values, sort=False)
        return codes.astype(np.int64, copy=False), uniques
    return seen.codes(values), seen.uniques
