"""Cross-validation splits for ranking and choice data.

Rows are those of a long table (one row per item of a query, or one row per pair). Every
splitter returns a list of :class:`Split`, one per fold, holding *row positions* (0-based
integer positions into the table, usable with ``df.iloc``), never a subset chosen silently:
rows that fit neither side are listed in ``Split.dropped`` and counted.

- :func:`l_partition` — the 𝓛 partition of Guo et al. (2019, §5.2): queries are split, so the
  same items may appear in training and test queries.
- :func:`n_partition` — the 𝓝 partition: items are split, and a query goes to one side only if
  all its items are on that side; queries that straddle both are dropped (and counted).
- :func:`group_kfold` and :func:`leave_one_group_out` — whole groups held out (e.g. 5-fold by
  person, or leave-one-topic-out on UKPConvArg1).

Randomness comes only from ``random_state`` through :func:`numpy.random.default_rng`; the same
seed gives the same folds.

References
----------
Y. Guo, J. Dy, D. Erdoğmuş, J. Kalpathy-Cramer, S. Ostmo, J. P. Campbell, M. F. Chiang,
S. Ioannidis. "Variational Inference from Ranked Samples with Features", ACML 2019, §5.2.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from .data.validate import show_values as _show

__all__ = ["Split", "group_kfold", "l_partition", "leave_one_group_out", "n_partition"]

_EMPTY = np.zeros(0, dtype=np.int64)


class Split(NamedTuple):
    """One cross-validation fold over the rows of a table.

    Attributes
    ----------
    train, test : ndarray of int64
        Sorted row positions (for ``df.iloc``) of the training and test rows.
    dropped : ndarray of int64
        Sorted row positions in neither (only :func:`n_partition` drops rows).
    n_dropped_queries : int
        Number of queries those dropped rows belong to.
    """

    train: np.ndarray
    test: np.ndarray
    dropped: np.ndarray
    n_dropped_queries: int


def _ids(values, what: str) -> np.ndarray:
    if isinstance(values, pd.DataFrame):
        raise TypeError(f"{what}: expected one column of ids (a Series or 1-d array), not a table")
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"{what}: expected a 1-d sequence of ids; got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{what}: no rows to split")
    missing = pd.isna(arr)
    if missing.any():
        raise ValueError(f"{what}: {int(missing.sum())} row(s) have a missing id (NaN)")
    return arr


def _check_n_splits(n_splits: int, n_units: int, unit: str) -> None:
    if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)) or n_splits < 2:
        raise ValueError(f"n_splits must be an integer >= 2; got {n_splits!r}")
    if n_splits > n_units:
        raise ValueError(f"n_splits={n_splits} is more than the number of {unit} ({n_units})")


def _assign(n_units: int, n_splits: int, random_state) -> np.ndarray:
    """Fold of each unit: a seeded permutation cut into ``n_splits`` near-equal parts."""
    rng = np.random.default_rng(random_state)
    fold_of_unit = np.empty(n_units, dtype=np.int64)
    for fold, members in enumerate(np.array_split(rng.permutation(n_units), n_splits)):
        fold_of_unit[members] = fold
    return fold_of_unit


def _whole_unit_splits(fold_of_row: np.ndarray, n_splits: int) -> list[Split]:
    rows = np.arange(fold_of_row.size, dtype=np.int64)
    return [
        Split(rows[fold_of_row != f], rows[fold_of_row == f], _EMPTY.copy(), 0)
        for f in range(n_splits)
    ]


def l_partition(queries, n_splits: int = 3, random_state=None) -> list[Split]:
    """Split by query (the 𝓛 partition of Guo et al., 2019, §5.2).

    The distinct queries are shuffled with ``random_state`` and cut into ``n_splits`` folds of
    near-equal numbers of queries; every row of a query goes with it.

    Parameters
    ----------
    queries : Series or array-like, shape (n_rows,)
        The query id of each row (for pairwise data with one pair per row, ``range(n)``).
    n_splits : int, default 3
        The paper uses 3.
    random_state : None, int or numpy Generator

    Returns
    -------
    list of Split
        ``n_splits`` folds; nothing is dropped.

    Raises
    ------
    ValueError
        On missing ids or ``n_splits`` < 2 or above the number of queries.
    """
    ids = _ids(queries, "queries")
    codes, uniques = pd.factorize(ids)
    _check_n_splits(n_splits, len(uniques), "queries")
    fold_of_query = _assign(len(uniques), n_splits, random_state)
    return _whole_unit_splits(fold_of_query[codes], n_splits)


def _query_items(table: pd.DataFrame, query: str, item: str) -> tuple[np.ndarray, np.ndarray]:
    """(query code, item id) per row-item incidence; a pairs table gives two per row."""
    columns = list(map(str, table.columns))
    if item in table.columns:
        if query not in table.columns:
            raise ValueError(f"n_partition: column {query!r} is missing; got {columns}")
        q = _ids(table[query], f"n_partition: column {query!r}")
        it = _ids(table[item], f"n_partition: column {item!r}")
        return pd.factorize(q)[0], it
    if {"left", "right"} <= set(table.columns):
        # One query per row (a pair): the row's two items.
        left = _ids(table["left"], "n_partition: column 'left'")
        right = _ids(table["right"], "n_partition: column 'right'")
        rows = np.arange(len(table))
        return np.concatenate([rows, rows]), np.concatenate([left, right])
    raise ValueError(
        f"n_partition: expected columns {query!r} and {item!r} (long rankings) or 'left' and "
        f"'right' (pairs); got {columns}"
    )


def n_partition(
    data: pd.DataFrame,
    n_splits: int = 3,
    random_state=None,
    *,
    query: str = "query",
    item: str = "item",
) -> list[Split]:
    """Split by item (the 𝓝 partition of Guo et al., 2019, §5.2).

    The distinct items are shuffled and cut into ``n_splits`` folds. For fold f, a query is a
    test query if all its items are in fold f, a training query if none is, and is dropped
    otherwise — the paper's D_test = {A_l : A_l ⊆ 𝓝_test}, D_train = {A_l : A_l ⊆ 𝓝_train}.
    Dropped rows are returned in ``Split.dropped`` and counted in ``Split.n_dropped_queries``;
    with queries of m items, roughly a share 1 - (1/n)^m - (1 - 1/n)^m of them is dropped.

    Parameters
    ----------
    data : DataFrame
        Long rankings with columns ``query`` and ``item`` (names configurable), or pairs with
        columns ``left`` and ``right`` (each row its own query).
    n_splits : int, default 3
    random_state : None, int or numpy Generator

    Returns
    -------
    list of Split

    Raises
    ------
    ValueError
        On missing columns or ids, or ``n_splits`` < 2 or above the number of items.
    """
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"n_partition: expected a pandas DataFrame; got {type(data).__name__}")
    query_code, item_ids = _query_items(data, query, item)
    item_code, uniques = pd.factorize(item_ids)
    _check_n_splits(n_splits, len(uniques), "items")
    fold_of_item = _assign(len(uniques), n_splits, random_state)

    pairs_table = item not in data.columns
    n_rows = len(data)
    row_of_incidence = np.concatenate([np.arange(n_rows)] * 2) if pairs_table else np.arange(n_rows)
    n_queries = int(query_code.max()) + 1
    splits = []
    rows = np.arange(n_rows, dtype=np.int64)
    for f in range(n_splits):
        in_test = (fold_of_item[item_code] == f).astype(np.int64)
        n_items = np.bincount(query_code, minlength=n_queries)
        n_test = np.bincount(query_code, weights=in_test, minlength=n_queries).astype(np.int64)
        side = np.where(n_test == n_items, 1, np.where(n_test == 0, 0, -1))  # 1 test, 0 train
        row_side = np.empty(n_rows, dtype=np.int64)
        row_side[row_of_incidence] = side[query_code]
        splits.append(
            Split(
                rows[row_side == 0],
                rows[row_side == 1],
                rows[row_side == -1],
                int((side == -1).sum()),
            )
        )
    return splits


def _groups_by_query(groups: np.ndarray, queries, what: str) -> None:
    """Refuse queries whose rows lie in several groups: holding out a group would cut them."""
    if queries is None:
        return
    q = _ids(queries, f"{what}: queries")
    if q.size != groups.size:
        raise ValueError(f"{what}: {q.size} query ids for {groups.size} group ids")
    per_query = pd.DataFrame({"q": q, "g": groups}).groupby("q", sort=False)["g"].nunique()
    split = per_query[per_query > 1]
    if len(split):
        raise ValueError(
            f"{what}: {len(split)} quer(y/ies) have rows in more than one group, so holding out "
            f"a group would cut them: {_show(split.index)}"
        )


def group_kfold(groups, n_splits: int = 5, random_state=None, *, queries=None) -> list[Split]:
    """K folds of whole groups (e.g. 5-fold by person).

    The distinct groups are shuffled with ``random_state`` and cut into ``n_splits`` folds of
    near-equal numbers of groups (not of rows); every row of a group goes with it.

    Parameters
    ----------
    groups : Series or array-like, shape (n_rows,)
        The group of each row.
    n_splits : int, default 5
    random_state : None, int or numpy Generator
    queries : array-like, shape (n_rows,), optional
        The query of each row; when given, a query spread over several groups is an error.

    Returns
    -------
    list of Split

    Raises
    ------
    ValueError
        On missing ids, ``n_splits`` < 2 or above the number of groups, or (with ``queries``)
        a query in more than one group.
    """
    g = _ids(groups, "groups")
    _groups_by_query(g, queries, "group_kfold")
    codes, uniques = pd.factorize(g)
    _check_n_splits(n_splits, len(uniques), "groups")
    fold_of_group = _assign(len(uniques), n_splits, random_state)
    return _whole_unit_splits(fold_of_group[codes], n_splits)


def leave_one_group_out(groups, *, queries=None) -> dict[object, Split]:
    """One fold per group, holding that group out (e.g. leave-one-topic-out).

    Parameters
    ----------
    groups : Series or array-like, shape (n_rows,)
    queries : array-like, shape (n_rows,), optional
        As in :func:`group_kfold`.

    Returns
    -------
    dict
        Held-out group -> Split, in sorted group order.

    Raises
    ------
    ValueError
        On missing ids, fewer than two groups, or (with ``queries``) a query in more than one
        group.
    """
    g = _ids(groups, "groups")
    _groups_by_query(g, queries, "leave_one_group_out")
    uniques = sorted(pd.unique(g), key=lambda v: (str(type(v)), v))
    if len(uniques) < 2:
        raise ValueError(f"leave_one_group_out: needs at least two groups; got {len(uniques)}")
    rows = np.arange(g.size, dtype=np.int64)
    out = {}
    for value in uniques:
        held = g == value
        out[value] = Split(rows[~held], rows[held], _EMPTY.copy(), 0)
    return out
