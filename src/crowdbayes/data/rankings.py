"""The ``Rankings`` container: rankings and top choices over sets of items, validated once.

A ranking of a set A into a_1 ≻ a_2 ≻ … is, under Plackett–Luce, the same as the independent
top-queries "a_1 is the best of A", "a_2 is the best of A \\ {a_1}", … (Guo et al. 2019, Eq. 4).
The container stores exactly those top-queries ("stages"): stage l has the choice set A_l and the
chosen item c_l, which is always the first member of its set.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from ._codes import first_seen
from .features import FeatureTable, read_features
from .hygiene import Hygiene
from .io import TableLike, read_table_rows
from .validate import reject_missing, show_id, show_values

__all__ = ["Rankings", "as_rankings"]


class Rankings:
    """Rankings, partial rankings and top choices in long format.

    Each row places ``item`` in ``query`` with its ``rank`` (1 = best). Items of a query without
    a rank are the alternatives that were shown but not ranked, so a top-1 choice among six is one
    row with rank 1 and five rows with no rank, and a top-3 of ten has ranks 1, 2, 3 and seven
    unranked rows. A full ranking of m items gives m − 1 top-queries, a top-k ranking k.

    Parameters
    ----------
    data : DataFrame or path
        Columns ``query, item, rank`` (names configurable), optional ``worker``.
    items : DataFrame, path or FeatureTable, optional
        Item features: one row per item id (column ``item`` or the index), numeric columns.
        Needed by the feature models; items may be shared across queries or unique to one, and
        may include items that appear in no query (for prediction).
    query, item, rank, worker : str
        Column names. ``worker`` is optional: when the column is absent every query is anonymous.
    weight : str, optional
        The column of case weights, one positive number per query (repeated on its rows): a
        query then counts ``weight`` times in the likelihood of the models that take weights
        (``tags.case_weights``), the others refuse them. ``crowdbayes rank next``'s importance
        weights (:func:`~crowdbayes.active.suggest_sets`, ``strategy="sampled"``) are such
        weights. None (default): every query counts once.
    normalize : bool
        Strip the spaces around text ids and put them in Unicode NFC (default; the count of
        values changed is warned). See :mod:`crowdbayes.data.hygiene`.

    Attributes
    ----------
    item_ids, query_ids, worker_ids : pandas.Index
        The user's ids in code order (``item_ids``: items that appear in the rankings).
    stage_items : ndarray of int
        Item codes of all choice sets, concatenated; set l is
        ``stage_items[stage_offsets[l]:stage_offsets[l + 1]]`` and its first member is chosen.
    stage_offsets : ndarray of int, shape (n_stages + 1,)
    stage_query : ndarray of int, shape (n_stages,)
        The query each top-query comes from.
    query_weights : ndarray of float or None
        The case weight of every query (None: no ``weight`` column, every query counts once).
    features : FeatureTable or None
        The item features, validated.
    """

    def __init__(
        self,
        data: TableLike,
        items: TableLike | FeatureTable | None = None,
        *,
        query: str = "query",
        item: str = "item",
        rank: str = "rank",
        worker: str = "worker",
        weight: str | None = None,
        normalize: bool = True,
    ) -> None:
        what = "rankings"
        df, rows = read_table_rows(data, what=what, id_columns=(query, item, worker))
        roles = {query: "query", item: "item", rank: "rank", worker: "worker"}
        if weight in roles:
            raise ValueError(
                f"{what}: the case weights' column {weight!r} is the {roles[weight]} column; "
                "give the weights a column of their own"
            )
        if weight is not None and weight not in df.columns:
            raise ValueError(
                f"{what}: no column {weight!r} for the case weights (columns: "
                f"{show_values(list(df.columns))})"
            )
        hygiene = Hygiene(what, normalize=normalize, rows=rows)
        df = hygiene.columns(df, {"query": query, "item": item, "rank": rank}, {"worker": worker})
        if len(df) == 0:
            raise ValueError(f"{what}: the table is empty (0 rows)")
        reject_missing(df, (query, item), what, rows)
        has_worker = worker in df.columns
        if has_worker:
            reject_missing(df, (worker,), what, rows)

        query_codes, self.query_ids = hygiene.encode(df[query], query, rows)
        item_codes, self.item_ids = hygiene.encode(df[item], item, rows)
        self.query_ids = pd.Index(self.query_ids, name=query)
        self.item_ids = pd.Index(self.item_ids, name=item)
        ranks = _ranks(df[rank], what, rank)
        self._check_queries(query_codes, item_codes, ranks)
        self._build_stages(query_codes, item_codes, ranks)

        if has_worker:
            self._query_workers(query_codes, *hygiene.encode(df[worker], worker, rows), worker)
        else:
            self._no_workers(worker)
        self.query_weights = (
            None
            if weight is None
            else _query_weights(df[weight], query_codes, self.query_ids, weight, rows)
        )
        self._finish(hygiene, items, item)

    # -- construction -------------------------------------------------------------------------

    def _no_workers(self, name: str) -> None:
        self.worker_ids = pd.Index([], name=name)
        self.query_worker = np.full(self.n_queries, -1, dtype=np.int64)

    def _finish(self, hygiene: Hygiene, items, item: str) -> None:
        """The item features (when given) and the findings of the checks."""
        self.features: FeatureTable | None = None
        self.X: np.ndarray | None = None
        if items is not None:
            self.features = read_features(items, id_column=item, what="items")
            self.X = self.features.take(self.item_ids, needed_by="rankings")
        hygiene.report_normalized()
        #: what the checks before inference found (:class:`~crowdbayes.data.hygiene.DataCheck`)
        self.data_checks = hygiene.checks

    def _check_queries(self, query_codes, item_codes, ranks) -> None:
        n_queries = len(self.query_ids)
        key = query_codes.astype(np.int64) * len(self.item_ids) + item_codes
        if _has_repeats(key):
            repeated = pd.Series(key).duplicated().to_numpy()
            row = int(np.argmax(repeated))
            raise ValueError(
                f"rankings: {int(repeated.sum())} row(s) repeat an item within a query (first: "
                f"item {show_id(self.item_ids[item_codes[row]])} in query "
                f"{show_id(self.query_ids[query_codes[row]])})"
            )
        sizes = np.bincount(query_codes, minlength=n_queries)
        single = np.flatnonzero(sizes < 2)
        if single.size:
            raise ValueError(
                f"rankings: {single.size} query(ies) have only one item, so nothing was chosen "
                f"(first: {show_values(list(self.query_ids[single[:5]]))})"
            )
        ranked = ~np.isnan(ranks)
        n_ranked = np.bincount(query_codes[ranked], minlength=n_queries)
        unranked = np.flatnonzero(n_ranked == 0)
        if unranked.size:
            raise ValueError(
                f"rankings: {unranked.size} query(ies) have no ranked item "
                f"(first: {show_values(list(self.query_ids[unranked[:5]]))}); give the chosen "
                "item rank 1"
            )
        # ranks of each query must be exactly 1..R: distinct (no ties) and without gaps
        rank_key = query_codes[ranked].astype(np.int64) * (len(ranks) + 1) + ranks[ranked]
        if _has_repeats(rank_key):
            tied = pd.Series(rank_key).duplicated().to_numpy()
            q = query_codes[ranked][int(np.argmax(tied))]
            raise ValueError(
                f"rankings: ties in rank are not allowed ({int(tied.sum())} repeated rank(s); "
                f"first in query {show_id(self.query_ids[q])}); Plackett–Luce needs a strict order"
            )
        # R distinct positive whole numbers are exactly 1..R iff they sum to R(R + 1)/2
        rank_sums = np.bincount(query_codes[ranked], ranks[ranked], minlength=n_queries)
        gaps = np.flatnonzero(rank_sums != n_ranked * (n_ranked + 1) / 2)
        if gaps.size:
            q = gaps[0]
            got = sorted(ranks[ranked & (query_codes == q)].astype(int).tolist())
            raise ValueError(
                f"rankings: {gaps.size} query(ies) have ranks that are not 1, 2, ..., R "
                f"(first: query {show_id(self.query_ids[q])} has ranks {got})"
            )

    def _build_stages(self, query_codes, item_codes, ranks) -> None:
        """Break every ranking into its top-queries (Eq. 4), fully vectorised."""
        order = np.lexsort((np.where(np.isnan(ranks), np.inf, ranks), query_codes))
        sorted_items = item_codes[order].astype(np.int64)
        sorted_queries = query_codes[order]
        n_queries = len(self.query_ids)
        sizes = np.bincount(sorted_queries, minlength=n_queries)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        n_ranked = np.bincount(query_codes[~np.isnan(ranks)], minlength=n_queries)
        # a full ranking's last stage has a single item: probability one, no information
        n_stages = np.minimum(n_ranked, sizes - 1)
        stage_query = np.repeat(np.arange(n_queries), n_stages)
        first_stage = np.concatenate([[0], np.cumsum(n_stages)[:-1]])
        position = np.arange(len(stage_query)) - np.repeat(first_stage, n_stages)
        stage_sizes = sizes[stage_query] - position
        offsets = np.concatenate([[0], np.cumsum(stage_sizes)])
        member = np.arange(offsets[-1]) - np.repeat(offsets[:-1], stage_sizes)
        source = np.repeat(starts[stage_query] + position, stage_sizes) + member
        self.stage_items = sorted_items[source]
        self.stage_offsets = offsets
        self.stage_query = stage_query
        self.query_sizes = sizes
        self.query_n_ranked = n_ranked

    def _query_workers(self, query_codes, worker_codes, worker_ids, name: str) -> None:
        self.worker_ids = pd.Index(worker_ids, name=name)
        per_query, q = _one_per_query(worker_codes, query_codes, len(self.query_ids))
        if q is not None:
            raise ValueError(
                f"rankings: query {show_id(self.query_ids[q])} has rows from more than one worker; "
                "a query is one person's ranking"
            )
        self.query_worker = per_query.astype(np.int64)

    # -- views ----------------------------------------------------------------------------------

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def n_stages(self) -> int:
        return len(self.stage_query)

    @cached_property
    def stage_sizes(self) -> np.ndarray:
        return np.diff(self.stage_offsets)

    @cached_property
    def chosen(self) -> np.ndarray:
        """Item code chosen at each stage (the first member of its set)."""
        return self.stage_items[self.stage_offsets[:-1]]

    @cached_property
    def stage_of_member(self) -> np.ndarray:
        """For each entry of ``stage_items``, the stage it belongs to."""
        return np.repeat(np.arange(self.n_stages), self.stage_sizes)

    @property
    def stage_weights(self) -> np.ndarray | None:
        """The case weight of every top-query (its query's; None without weights)."""
        return None if self.query_weights is None else self.query_weights[self.stage_query]

    @cached_property
    def only_pairs(self) -> bool:
        """Every top-query is a choice between two items."""
        return bool(np.all(self.stage_sizes == 2))

    def require_features(self, model: str) -> np.ndarray:
        """The item feature matrix (rows in ``item_ids`` order); a clear error without one."""
        if self.X is None:
            raise ValueError(f"{model} needs item features: pass items=<feature table> to Rankings")
        return self.X

    def pairs(self) -> pd.DataFrame:
        """Every ranking broken into ordered pairs ``winner, loser`` (in the user's item ids):
        each ranked item beats every item ranked below it and every unranked alternative."""
        sizes = self.stage_sizes
        chosen = np.repeat(self.chosen, sizes - 1)
        is_first = np.zeros(len(self.stage_items), dtype=bool)
        is_first[self.stage_offsets[:-1]] = True
        losers = self.stage_items[~is_first]
        return pd.DataFrame(
            {
                "query": self.query_ids[np.repeat(self.stage_query, sizes - 1)],
                "winner": self.item_ids[chosen],
                "loser": self.item_ids[losers],
            }
        )

    def __repr__(self) -> str:
        features = "no features" if self.X is None else f"{self.X.shape[1]} features"
        return (
            f"Rankings({self.n_queries} queries, {self.n_items} items, {self.n_stages} "
            f"top-queries, {features})"
        )

    @classmethod
    def from_pairs(
        cls,
        data: TableLike,
        items: TableLike | FeatureTable | None = None,
        *,
        left: str = "left",
        right: str = "right",
        label: str = "label",
        worker: str = "worker",
    ) -> Rankings:
        """Pairwise comparisons ``left, right, label`` (label = the preferred item's id) as
        rankings of two. A tie (``label == "equal"``) has no Plackett–Luce likelihood and is
        refused, as is a label that is neither item of its pair."""
        what = "pairs"
        df, rows = read_table_rows(data, what=what, id_columns=(left, right, label, worker))
        hygiene = Hygiene(what, rows=rows)
        df = hygiene.columns(df, {"left": left, "right": right, "label": label})
        if len(df) == 0:
            raise ValueError(f"{what}: the table is empty (0 rows)")
        reject_missing(df, (left, right, label), what, rows)
        df = df.assign(
            **{
                c: hygiene.normalized(df[c], c, rows)
                for c in (left, right, label)
                if _needs_hygiene(df[c])
            }
        )
        ties = _equal_ids(df[label], "equal")
        if ties.any():
            raise ValueError(
                f"{what}: {int(ties.sum())} tie(s) (label 'equal'); Plackett–Luce needs a "
                "winner: remove them (or model them with the GP preference models)"
            )
        left_wins = _equal_ids(df[label], df[left])
        right_wins = _equal_ids(df[label], df[right])
        neither = ~(left_wins | right_wins)
        if neither.any():
            row = int(np.argmax(neither))
            raise ValueError(
                f"{what}: {int(neither.sum())} label(s) name neither item of their pair "
                f"(first: {rows.one(row)}, label {show_id(df[label].iloc[row])})"
            )
        same = _equal_ids(df[left], df[right])
        if same.any():
            raise ValueError(f"{what}: {int(same.sum())} pair(s) compare an item with itself")
        winner = np.where(left_wins, df[left].to_numpy(), df[right].to_numpy())
        loser = np.where(left_wins, df[right].to_numpy(), df[left].to_numpy())
        workers = np.concatenate([df[worker].to_numpy()] * 2) if worker in df.columns else None
        hygiene.report_normalized()
        rankings = cls.__new__(cls)
        rankings._pair_stages(winner, loser, workers, items)
        rankings.data_checks[:0] = hygiene.checks
        return rankings

    def _pair_stages(self, winner, loser, workers, items) -> None:
        """What ``Rankings(long, items)`` builds from the long table ``query, item, rank``
        (``worker``) of pair ``l`` = query ``l``, its ``winner`` ranked 1 and its ``loser`` 2,
        built without the table: each query is one top-query whose set is (winner, loser).
        The ids are checked and normalised as that table's columns would be (the same
        :class:`Hygiene` steps on the same values, so the same codes, ids and findings)."""
        hygiene = Hygiene("rankings")
        n = len(winner)
        self.stage_items = np.empty(2 * n, dtype=np.int64)
        # int64 ids (a table's column would be int64 too): encode would only factorize them
        seen = first_seen([winner, loser])
        if seen is not None:
            ids = seen.uniques
            seen.codes(winner, out=self.stage_items[0::2])
            seen.codes(loser, out=self.stage_items[1::2])
        else:
            # typed as a column of the long table would be (pandas infers text, numbers, objects)
            codes, ids = hygiene.encode(pd.Series(np.concatenate([winner, loser])), "item")
            self.stage_items[0::2] = codes[:n]
            self.stage_items[1::2] = codes[n:]
        self.item_ids = pd.Index(ids, name="item")
        self.stage_query = np.arange(n)
        self.query_ids = pd.Index(self.stage_query, name="query", copy=False)
        self.stage_offsets = np.arange(0, 2 * n + 1, 2)
        # every query has two items, both ranked (read-only views: nothing is stored)
        self.query_sizes = self.query_n_ranked = np.broadcast_to(np.int64(2), (n,))
        # the cached views, known without computing them
        self.only_pairs = True
        self.chosen = self.stage_items[0::2]
        if workers is None:
            self._no_workers("worker")
        else:
            worker_codes, worker_ids = hygiene.encode(pd.Series(workers), "worker")
            self.worker_ids = pd.Index(worker_ids, name="worker")
            self.query_worker = worker_codes[:n].astype(np.int64)
        self.query_weights = None
        self._finish(hygiene, items, "item")


def _one_per_query(values: np.ndarray, query_codes: np.ndarray, n_queries: int):
    """The value of every query from its rows' ``values`` (one row's each), and the code of
    the first query whose rows disagree (None when every query's rows agree)."""
    per_query = np.zeros(n_queries, dtype=values.dtype)
    per_query[query_codes] = values
    differs = per_query[query_codes] != values
    return per_query, (int(query_codes[int(np.argmax(differs))]) if differs.any() else None)


def _query_weights(column: pd.Series, query_codes, query_ids: pd.Index, name: str, rows):
    """One case weight per query from the ``name`` column: finite positive numbers (not
    true/false), the same on every row of a query; a refusal names the first bad row."""
    what = "rankings"
    if pd.api.types.is_bool_dtype(column):
        raise ValueError(f"{what}: column {name!r} holds true/false, not positive numbers")
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~(np.isfinite(values) & (values > 0))
    if bad.any():
        first = int(np.argmax(bad))
        raise ValueError(
            f"{what}: column {name!r} must hold positive numbers: {int(bad.sum())} row(s) do "
            f"not (first: {rows.one(first)}, {show_id(column.iloc[first])}); give every query "
            "a weight (1 for a query that no design chose)"
        )
    per_query, q = _one_per_query(values, query_codes, len(query_ids))
    if q is not None:
        raise ValueError(
            f"{what}: query {show_id(query_ids[q])} has more than one {name!r}; a "
            "case weight belongs to the whole query"
        )
    return per_query


def _needs_hygiene(column: pd.Series) -> bool:
    """Whether :meth:`Hygiene.normalized` may change or refuse the column's values: anything
    but a plain numpy integer or boolean column (for which it only factorizes them)."""
    return not (isinstance(column.dtype, np.dtype) and column.dtype.kind in "iub")


def _equal_ids(column: pd.Series, other) -> np.ndarray:
    """Element-wise id equality; numbers compare as numbers, anything else as text (ids read
    from different files may be typed differently)."""
    if isinstance(other, str):
        if not (pd.api.types.is_object_dtype(column) or pd.api.types.is_string_dtype(column)):
            return np.zeros(len(column), dtype=bool)
        return (column.astype(str) == other).to_numpy()
    if pd.api.types.is_numeric_dtype(column) and pd.api.types.is_numeric_dtype(other):
        return (column == other).to_numpy()
    return (column.astype(str) == other.astype(str)).to_numpy()


def _has_repeats(key: np.ndarray) -> bool:
    """Whether any value occurs twice (a sort: faster than hashing for millions of int keys)."""
    ordered = np.sort(key)
    return bool(np.any(ordered[1:] == ordered[:-1]))


def _ranks(column: pd.Series, what: str, name: str) -> np.ndarray:
    """Ranks as floats with NaN for unranked rows; positive whole numbers only."""
    try:
        ranks = pd.to_numeric(column, errors="raise").to_numpy(dtype=np.float64)
    except (ValueError, TypeError) as err:
        raise ValueError(
            f"{what}: column {name!r} must hold ranks 1, 2, ... (or be empty for unranked "
            f"alternatives); {err}"
        ) from None
    given = ~np.isnan(ranks)
    bad = given & ((ranks < 1) | (ranks != np.round(ranks)) | ~np.isfinite(ranks))
    if bad.any():
        raise ValueError(
            f"{what}: column {name!r} has {int(bad.sum())} value(s) that are not ranks "
            f"1, 2, ... (first: {show_values(ranks[bad][:5].tolist())})"
        )
    return ranks


def as_rankings(data, items=None, **columns) -> Rankings:
    """``data`` if it already is :class:`Rankings`, else ``Rankings(data, items, **columns)``."""
    if isinstance(data, Rankings):
        if items is not None:
            raise ValueError("pass items= to Rankings(...), not with an existing Rankings")
        return data
    return Rankings(data, items, **columns)
