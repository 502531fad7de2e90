"""Feature tables for items (or workers): one row per id, numeric columns, validated once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..persistence import persistable
from .hygiene import Hygiene
from .io import TableLike, read_table_rows
from .validate import show_values

__all__ = ["FeatureTable", "read_features"]


@persistable
@dataclass(frozen=True)
class FeatureTable:
    """Validated features: ``values[k]`` is the feature vector of ``ids[k]``.

    Attributes
    ----------
    ids : pandas.Index
        The user's ids, unique.
    values : ndarray of float, shape (n_ids, n_features)
        Finite feature values.
    names : list of str
        The feature (column) names, in order.
    what : str
        How the table is named in error messages (``"items"``, ``"workers"``).
    """

    ids: pd.Index
    values: np.ndarray
    names: list[str]
    what: str = "items"

    @property
    def n_features(self) -> int:
        return self.values.shape[1]

    def take(self, ids: Sequence, *, needed_by: str) -> np.ndarray:
        """The rows for ``ids`` (in that order); every id must have features."""
        positions = self.ids.get_indexer(pd.Index(ids))
        missing = np.flatnonzero(positions < 0)
        if missing.size:
            absent = [ids[i] for i in missing[:5]]
            raise ValueError(
                f"{self.what}: {missing.size} id(s) used in the {needed_by} have no row in "
                f"the feature table (first: {show_values(absent)})"
            )
        return self.values[positions]

    def require_names(self, names: Sequence[str]) -> FeatureTable:
        """This table with its columns in the order of ``names`` (the features at fit time);
        missing or unexpected columns are an error."""
        names = list(names)
        missing = [n for n in names if n not in self.names]
        extra = [n for n in self.names if n not in names]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing feature column(s) {show_values(missing)}")
            if extra:
                parts.append(f"column(s) {show_values(extra)} were not features when fitting")
            raise ValueError(f"{self.what}: " + "; ".join(parts))
        order = [self.names.index(n) for n in names]
        return FeatureTable(self.ids, self.values[:, order], names, self.what)


def read_features(
    source: TableLike | FeatureTable,
    *,
    id_column: str = "item",
    what: str = "items",
    also: str = "",
) -> FeatureTable:
    """Read a feature table: a DataFrame (ids in ``id_column`` or, without that column, the
    index) or a CSV/TSV/Parquet path (which must have ``id_column``).

    Every other column must be numeric (booleans count) and finite. Duplicate ids, non-numeric
    columns (one-hot encode them first), missing or infinite values and tables without feature
    columns are refused with a message naming them. ``also`` names a format the caller accepts
    besides tables, for the message refusing a file that is not one (see :func:`read_table`).
    """
    if isinstance(source, FeatureTable):
        return source
    is_frame = isinstance(source, pd.DataFrame)
    df, rows = read_table_rows(source, what=what, id_columns=(id_column,), also=also)
    if id_column in df.columns:
        df = df.set_index(id_column)
    elif not is_frame:
        raise ValueError(
            f"{what}: column {id_column!r} (the ids) is missing; got {list(map(str, df.columns))}"
        )
    if len(df) == 0:
        raise ValueError(f"{what}: the feature table is empty (0 rows)")
    if df.shape[1] == 0:
        raise ValueError(f"{what}: the feature table has no feature columns")
    if df.index.hasnans:
        missing = np.flatnonzero(df.index.isna())
        raise ValueError(f"{what}: {missing.size} row(s) have a missing id ({rows.some(missing)})")
    hygiene = Hygiene(what, rows=rows)  # the ids as the containers normalise theirs
    ids = pd.Series(df.index, name=id_column)
    cleaned = hygiene.normalized(ids, str(id_column), rows)
    if cleaned is not ids:
        df = df.set_axis(pd.Index(cleaned.to_numpy(), name=df.index.name), axis=0)
        hygiene.report_normalized()
    repeated = df.index[df.index.duplicated()]
    if len(repeated):
        raise ValueError(
            f"{what}: {len(repeated)} id(s) appear on more than one row "
            f"(first: {show_values(list(repeated[:5]))})"
        )
    text = [str(c) for c in df.columns if not _is_numeric(df[c])]
    if text:
        raise ValueError(
            f"{what}: column(s) {show_values(text)} are not numeric; encode categories as "
            "numbers first (e.g. pandas.get_dummies)"
        )
    values = df.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        rows, cols = np.nonzero(bad)
        column = str(df.columns[cols[0]])
        n_bad = int(bad[:, cols[0]].sum())
        kind = "missing" if np.isnan(values[rows[0], cols[0]]) else "infinite"
        raise ValueError(
            f"{what}: feature column {column!r} has {n_bad} missing or infinite value(s) "
            f"(first: {kind} at id {df.index[rows[0]]!r})"
        )
    return FeatureTable(df.index, values, [str(c) for c in df.columns], what)


def _is_numeric(column: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)
