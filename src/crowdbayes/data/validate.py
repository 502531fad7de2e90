"""Boundary checks shared by the data containers: messages name the column, value and rows."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["show_id", "show_values", "require_columns", "reject_missing"]


def show_id(value) -> str:
    """``repr`` of one user id, without numpy's ``np.int64(...)`` wrapper."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def show_values(values: Sequence, limit: int = 5) -> str:
    """``[a, b, c, ...]``: the first few of ``values`` for an error message."""
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    shown = ", ".join(repr(v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"


def require_columns(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Refuse a table that lacks one of ``columns``, listing the columns it has."""
    for col in columns:
        if col not in df.columns:
            raise ValueError(f"{what}: column {col!r} is missing; got {list(map(str, df.columns))}")


def reject_missing(df: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Refuse missing values in ``columns``, naming the column, the count and the first rows."""
    for col in columns:
        missing = np.flatnonzero(df[col].isna().to_numpy())
        if missing.size:
            raise ValueError(
                f"{what}: column {col!r} has {missing.size} missing value(s) "
                f"(row(s) {show_values(missing.tolist())})"
            )
