"""Sums over top-queries ("stages"): every choice set is a contiguous segment of
``Rankings.stage_items`` delimited by ``Rankings.stage_offsets``, its first member chosen."""

from __future__ import annotations

import numpy as np

__all__ = ["segment_sum", "segment_max", "stage_log_proba"]


def segment_sum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sum of ``values`` over each segment (along axis 0); segments are never empty."""
    return np.add.reduceat(values, offsets[:-1], axis=0)


def segment_max(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    return np.maximum.reduceat(values, offsets[:-1], axis=0)


def stage_log_proba(member_utilities: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """log p(c_l | A_l) = u_{c_l} − log Σ_{j∈A_l} exp(u_j) for every stage (Eq. 3 with
    s = e^u). ``member_utilities`` has one row per entry of ``stage_items`` (extra columns are
    independent draws)."""
    peak = segment_max(member_utilities, offsets)
    sizes = np.diff(offsets)
    shifted = member_utilities - np.repeat(peak, sizes, axis=0)
    log_norm = np.log(segment_sum(np.exp(shifted), offsets))
    return shifted[offsets[:-1]] - log_norm
