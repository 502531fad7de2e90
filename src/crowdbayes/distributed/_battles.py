r"""Battles counted on a Dask cluster: an arena log in Parquet files, too big for one machine,
collapsed to the distinct ``(pair, outcome, covariates)`` rows a leaderboard fits.

A leaderboard's likelihood depends on the battles only through how often each distinct
oriented row occurs (:meth:`crowdbayes.data.battles.Battles.counts`), and those counts are a
sum over any split of the battles into parts. So the counting is a map and a reduce:

1. *map* — each Parquet file (or partition of a Dask DataFrame) is read on a worker and goes
   through :class:`~crowdbayes.data.battles.Battles` itself (the same column matching, id
   normalisation, winner values, one-hot winners, refusals of a model playing itself and of
   missing or non-numeric covariates, each message naming the file), then is counted with its
   own model codes (:meth:`BattleCounts.of <crowdbayes.data.battles.BattleCounts.of>`);
2. *reduce* — partial counts are added up in a tree of fan-in ``fan_in``: the two vocabularies
   of model ids are merged (sorted, as :class:`Battles` sorts them), the codes re-mapped and
   equal rows added (:meth:`BattleCounts.of` again);
3. *finish* (on the client, over the distinct rows only) — the covariates are z-scored with
   the battle-weighted mean and standard deviation of the distinct rows,
   :math:`\bar x = \sum_r c_r x_r / N`, :math:`s^2 = \sum_r c_r (x_r-\bar x)^2 / N`, which
   are the mean and (population) standard deviation over the battles that
   :class:`Battles` uses (Chiang et al. 2024, style control).

Orientation and covariates. :meth:`BattleCounts.of` puts the smaller model code on side
``a``, negating the covariates of a swapped row; codes change at every merge, so a row may be
swapped several times before the covariates are standardised, and standardising does not
commute with negation (:math:`-(x-\bar x)/s \ne (-x-\bar x)/s`). Each row therefore carries
one more covariate, 1 when read: every swap negates it with the others, so at the end it is
the row's sign :math:`\sigma = \pm 1`, the raw covariates are :math:`\sigma \tilde x` and the
standardised oriented ones :math:`\sigma (\sigma \tilde x - \bar x)/s` — what :class:`Battles`
computes (standardise, then orient), as negation is exact in floating point.

Without covariates the result equals the in-memory counts exactly (same rows, same order,
same counts), and so does the fitted board. With covariates every battle with distinct
covariate values stays its own row (no reduction beyond exact repeats), the rows are in
another order and the mean and scale differ from the in-memory ones in the last bits
(another summation order): the board agrees to rounding. A judge column adds the battles
counted per ``(judge, pair, outcome)`` (:class:`~crowdbayes.models.comparisons.
_leaderboard_judges.JudgeRows`, what the leaderboard's Crowd-BT rating of the judges fits),
merged the same way; a category column splits the counts: one set per category (for the
per-category boards, which are fitted without judges).

References
----------
Chiang, W.-L. et al. (2024). Chatbot Arena: an open platform for evaluating LLMs by human
preference. ICML.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..data.battles import ONE_HOT, TIE, BattleCounts, Battles
from ..data.hygiene import DataCheck, loose_name
from ..data.validate import show_values
from ..exceptions import DataWarning
from ..models.comparisons._leaderboard_judges import JudgeRows
from ._fit import _compute, cluster_client
from ._partitions import parquet_files

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["BattleColumns", "CountedBattles", "PartitionCounts", "count_battles"]

WHAT = "battles"


@dataclass(frozen=True)
class BattleColumns:
    """The columns of the battles (as :class:`~crowdbayes.data.battles.Battles` names them)."""

    model_a: str = "model_a"
    model_b: str = "model_b"
    winner: str = "winner"
    judge: str | None = None
    category: str | None = None
    covariates: tuple[str, ...] = ()

    def wanted(self) -> list[str]:
        """The columns to read (the one-hot winner columns too, for the default ``winner``)."""
        named = [self.model_a, self.model_b, self.winner, self.judge, self.category]
        extra = list(ONE_HOT) if self.winner == "winner" else []
        return [c for c in (*named, *self.covariates, *extra) if c]

    def present(self, names: Sequence[str]) -> bool:
        """Whether a table with the columns ``names`` has every column needed (matched
        loosely, as :class:`Battles` matches them)."""
        required = [self.model_a, self.model_b]
        if not (self.winner == "winner" and set(ONE_HOT) <= set(names)):
            required.append(self.winner)
        required += [c for c in (self.judge, self.category, *self.covariates) if c]
        found = {loose_name(str(name)) for name in names}
        return all(loose_name(c) in found for c in required)


@dataclass
class PartitionCounts:
    """Counts of some partitions: ``counts[k]`` are the battles of category ``categories[k]``
    (one entry, ``categories`` None, without a category column), coded by ``model_ids``; with
    covariates the last covariate column is each row's orientation sign (module docstring)."""

    model_ids: pd.Index
    categories: pd.Index | None
    counts: list[BattleCounts]
    judge_rows: JudgeRows | None = None
    checks: list[DataCheck] = field(default_factory=list)
    n_partitions: int = 1


# ------------------------------------------------------------------------------ map
def read_battles_file(path: str | os.PathLike, columns: BattleColumns) -> pd.DataFrame:
    """The battle columns of one Parquet file, text columns as categories (their distinct
    values are what the checks look at). Columns are matched as :class:`Battles` matches them
    (case and spaces ignored); when one is missing the file's columns are returned with no rows,
    for :class:`Battles` to name what is missing and what there is."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
        if not columns.present(schema.names):
            return schema.empty_table().to_pandas()
        loose = {loose_name(c) for c in columns.wanted()}
        picked = [name for name in schema.names if loose_name(name) in loose]
        text = [
            name
            for name in picked
            if pa.types.is_string(schema.field(name).type)
            or pa.types.is_large_string(schema.field(name).type)
        ]
        table = pq.read_table(path, columns=picked, read_dictionary=text)
    except Exception as err:  # pyarrow's errors for truncated or corrupt files vary
        raise ValueError(
            f"{WHAT}: file {path} is not a readable Parquet file ({type(err).__name__}: {err})"
        ) from None
    return table.to_pandas()


def count_partition(
    frame: pd.DataFrame, name: str, columns: BattleColumns, normalize: bool = True
) -> PartitionCounts:
    """One partition's counts, in its own model codes. The partition goes through
    :class:`Battles` (raw covariates, ``standardize=False``): its refusals are the in-memory
    ones, with ``name`` (the file) after ``battles:``; its warnings are kept in ``checks``."""
    if len(frame) == 0 and columns.present(list(frame.columns)):  # nothing to count
        return PartitionCounts(pd.Index([]), _empty_categories(columns), [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # kept in data_checks, said by the client
        try:
            battles = Battles(
                frame,
                model_a=columns.model_a,
                model_b=columns.model_b,
                winner=columns.winner,
                judge=columns.judge,
                category=columns.category,
                covariates=list(columns.covariates) or None,
                standardize=False,
                normalize=normalize,
            )
        except (ValueError, TypeError) as err:
            raise type(err)(in_partition(str(err), name)) from None
    a, b, outcome, X = battles.a, battles.b, battles.outcome, battles.X
    if columns.covariates:
        X = np.column_stack([X, np.ones(len(a))])  # the orientation sign
    n = battles.n_models
    if battles.categories is None:
        counts = [BattleCounts.of(n, a, b, outcome, X)]
    else:
        codes = battles.category_codes
        counts = [
            BattleCounts.of(n, a[keep], b[keep], outcome[keep], X[keep])
            for keep in (codes == k for k in range(len(battles.categories)))
        ]
    judges = None
    if battles.judge_ids is not None:
        judges = JudgeRows.of(battles.judge_ids, battles.judge_codes, a, b, outcome, n)
    checks = [
        DataCheck(c.kind, in_partition(c.message, name), c.counts, warned=c.warned)
        for c in battles.data_checks
    ]
    return PartitionCounts(battles.model_ids, battles.categories, counts, judges, checks)


def in_partition(message: str, name: str) -> str:
    """An in-memory message with the partition named after its ``battles:``."""
    head = f"{WHAT}: "
    if message.startswith(head):
        return f"{head}{name}: {message[len(head) :]}"
    return f"{head}{name}: {message}"


def _empty_categories(columns: BattleColumns) -> pd.Index | None:
    return None if columns.category is None else pd.Index([])


def _count_file(path: str, name: str, columns: BattleColumns, normalize: bool) -> PartitionCounts:
    return count_partition(read_battles_file(path, columns), name, columns, normalize)


# ------------------------------------------------------------------------------ reduce
def _union(first: pd.Index | None, second: pd.Index | None, *, sort: bool) -> pd.Index | None:
    """Distinct values of both, sorted when ``sort`` and they sort (as :class:`Battles`
    sorts model ids), else in order of first appearance (as it orders categories)."""
    if first is None or second is None:
        return first if second is None else second
    both = pd.Index(pd.unique(first.append(second)))
    if sort:
        try:
            both = both.sort_values()
        except TypeError:  # ids of mixed kinds: keep the order of first appearance
            pass
    return both


def merge_counts(*parts: PartitionCounts) -> PartitionCounts:
    """The counts of all ``parts`` added up, in one vocabulary of models (and categories)."""
    parts = tuple(p for p in parts if len(p.model_ids)) or parts[:1]
    if len(parts) == 1:
        return parts[0]
    ids = categories = judges = None
    for p in parts:
        ids = _union(ids, p.model_ids, sort=True)
        categories = _union(categories, p.categories, sort=False)
        if p.judge_rows is not None:
            judges = _union(judges, p.judge_rows.judge_ids, sort=False)
    n_groups = 1 if categories is None else len(categories)
    rows: list[list[tuple]] = [[] for _ in range(n_groups)]
    judged: list[tuple] = []
    for p in parts:
        code = ids.get_indexer(p.model_ids)
        group = [0] if categories is None else categories.get_indexer(p.categories)
        for g, c in zip(group, p.counts, strict=True):
            rows[g].append((code[c.a], code[c.b], c.outcome, c.X, c.count))
        if p.judge_rows is not None:
            j, a, b, o = p.judge_rows.battles()
            who = judges.get_indexer(p.judge_rows.judge_ids)
            judged.append((who[j], code[a], code[b], o, p.judge_rows.count))
    counts = [_added(len(ids), pieces) for pieces in rows]
    judge_rows = None
    if judged:
        j, a, b, o, count = (np.concatenate(column) for column in zip(*judged, strict=True))
        judge_rows = JudgeRows.of(judges, j, a, b, o, len(ids), count)
    return PartitionCounts(
        ids,
        categories,
        counts,
        judge_rows,
        [check for p in parts for check in p.checks],
        sum(p.n_partitions for p in parts),
    )


def _added(n_models: int, pieces: list[tuple]) -> BattleCounts:
    """The rows of ``pieces`` (``(a, b, outcome, X, count)`` in one coding) counted."""
    a, b, outcome, X, count = (np.concatenate(column) for column in zip(*pieces, strict=True))
    return BattleCounts.of(n_models, a, b, outcome, X, count)


def _tree_merge(items: list, fan_in: int):
    """Merge partial counts in a tree of ``merge_counts`` tasks (depth log_fan_in of the
    partitions), the partitions' order kept (so categories come in order of appearance)."""
    from dask import delayed

    while len(items) > 1:
        items = [
            delayed(merge_counts, pure=True)(*items[i : i + fan_in])
            for i in range(0, len(items), fan_in)
        ]
    return items[0]


# ------------------------------------------------------------------------------ finish
class CountedBattles(Battles):
    """Battles known by their counts alone (what :func:`count_battles` returns): a
    :class:`~crowdbayes.data.battles.Battles` to :class:`~crowdbayes.Leaderboard` and the
    command line (``model_ids``, :meth:`counts`, ``covariate_names``, ``covariate_mean``,
    ``covariate_scale``, ``judge_ids`` and :meth:`judge_battles`, ``categories``,
    :meth:`subset`), without the per-battle arrays ``a, b, outcome, X, judge_codes,
    category_codes`` (asking for them is an error naming this)."""

    def __init__(
        self,
        model_ids: pd.Index,
        counts: BattleCounts,
        *,
        covariate_names: Sequence[str] = (),
        covariate_mean: np.ndarray | None = None,
        covariate_scale: np.ndarray | None = None,
        judge_rows: JudgeRows | None = None,
        categories: pd.Index | None = None,
        category_counts: Sequence[BattleCounts] | None = None,
        data_checks: Sequence[DataCheck] = (),
        n_partitions: int = 1,
    ) -> None:
        k = len(covariate_names)
        self.model_ids = pd.Index(model_ids, name="model")
        self.covariate_names = tuple(covariate_names)
        self.covariate_mean = np.zeros(k) if covariate_mean is None else covariate_mean
        self.covariate_scale = np.ones(k) if covariate_scale is None else covariate_scale
        self._judge_rows = judge_rows
        self.judge_ids = None if judge_rows is None else judge_rows.judge_ids
        self.categories = None if categories is None else pd.Index(categories, name="category")
        self._category_counts = None if category_counts is None else list(category_counts)
        self.data_checks = list(data_checks)
        self.n_partitions = n_partitions
        self._counts = counts

    @property
    def n_battles(self) -> int:
        return self._counts.n_battles

    @property
    def n_ties(self) -> int:
        return int(self._counts.count[self._counts.outcome == TIE].sum())

    def counts(self) -> BattleCounts:
        return self._counts

    def judge_battles(self) -> tuple:
        """``(judge, a, b, outcome, count)``: the battles counted per distinct ``(judge,
        pair, outcome)`` (codes into ``judge_ids`` and ``model_ids``)."""
        if self._judge_rows is None:
            raise ValueError(f"{WHAT}: no judge column was given (count_battles(..., judge=...))")
        return (*self._judge_rows.battles(), self._judge_rows.count)

    def _per_battle(self):
        raise ValueError(
            f"{WHAT}: battles counted on Dask keep only their counts (counts(), "
            "judge_battles()), not one row per battle"
        )

    a = b = outcome = X = judge_codes = category_codes = property(_per_battle)

    def subset(self, category) -> CountedBattles:
        """The battles of one category (models that play none of them are dropped), their
        covariates as standardised over all battles (as :meth:`Battles.subset`)."""
        if self.categories is None:
            raise ValueError(
                f"{WHAT}: no category column was given (count_battles(..., category=...))"
            )
        code = self.categories.get_indexer([category])[0]
        if code < 0:
            raise ValueError(
                f"{WHAT}: unknown category {category!r}; known: {show_values(self.categories)}"
            )
        c = self._category_counts[code]
        used = np.flatnonzero(np.bincount(np.concatenate([c.a, c.b]), minlength=self.n_models))
        new = np.full(self.n_models, -1)
        new[used] = np.arange(len(used))
        counts = BattleCounts.of(len(used), new[c.a], new[c.b], c.outcome, c.X, c.count)
        return CountedBattles(self.model_ids[used], counts, covariate_names=self.covariate_names)

    def __repr__(self) -> str:
        return f"Counted{super().__repr__()} from {self.n_partitions} partition(s)"


def finish_counts(
    total: PartitionCounts, covariates: Sequence[str], standardize: bool
) -> CountedBattles:
    """The reduced counts as :class:`CountedBattles`: refusals that need all battles (fewer
    than 2 models, constant covariates), the covariates standardised and oriented (module
    docstring), the overall counts (the categories' added up)."""
    if not total.counts:
        raise ValueError(f"{WHAT}: the table is empty (0 rows)")
    ids, n = total.model_ids, len(total.model_ids)
    if n < 2:
        raise ValueError(f"{WHAT}: need at least 2 models; got {n}")
    k = len(covariates)
    mean, scale = np.zeros(k), np.ones(k)
    counts = total.counts
    if k:
        raw = [c.X[:, :k] * c.X[:, k:] for c in counts]  # sign × stored = as read
        if standardize:
            mean, scale = _weighted_moments(raw, [c.count for c in counts], covariates)
        counts = [
            BattleCounts.of(n, c.a, c.b, c.outcome, (x - mean) / scale * c.X[:, k:], c.count)
            for c, x in zip(counts, raw, strict=True)
        ]
    overall = counts[0] if len(counts) == 1 else _added(n, [_rows(c) for c in counts])
    if total.categories is None:
        counts = None
    return CountedBattles(
        ids,
        overall,
        covariate_names=covariates,
        covariate_mean=mean,
        covariate_scale=scale,
        judge_rows=total.judge_rows,
        categories=total.categories,
        category_counts=counts,
        data_checks=total.checks,
        n_partitions=total.n_partitions,
    )


def _rows(c: BattleCounts) -> tuple:
    return c.a, c.b, c.outcome, c.X, c.count


def _weighted_moments(raw: list, weights: list, names: Sequence[str]):
    """Mean and population standard deviation over the battles of the distinct rows ``raw``
    occurring ``weights`` times; a constant covariate is refused as :class:`Battles` does."""
    x, w = np.concatenate(raw), np.concatenate(weights).astype(np.float64)
    constant = [n for n, lo, hi in zip(names, x.min(0), x.max(0), strict=True) if lo == hi]
    if constant:
        raise ValueError(f"{WHAT}: covariate(s) {show_values(constant)} are constant")
    total = w.sum()
    mean = w @ x / total
    return mean, np.sqrt(w @ (x - mean) ** 2 / total)


def _say_checks(checks: list[DataCheck], limit: int = 3) -> None:
    """Warn what the partitions' checks warned (on the workers, silenced there): the first
    ``limit`` messages and how many more."""
    warned = [c for c in checks if c.warned]
    for check in warned[:limit]:
        warnings.warn(check.message, DataWarning, stacklevel=3)
    if len(warned) > limit:
        warnings.warn(
            f"{WHAT}: {len(warned) - limit} more data check(s) in other partitions "
            "(data_checks lists them)",
            DataWarning,
            stacklevel=3,
        )


# ------------------------------------------------------------------------------ driver
def _sources(source, columns: BattleColumns, normalize: bool) -> list:
    """A delayed :class:`PartitionCounts` per Parquet file or Dask DataFrame partition."""
    import dask.dataframe as dd
    from dask import delayed

    if isinstance(source, dd.DataFrame):
        return [
            delayed(count_partition, pure=True)(part, f"partition {i}", columns, normalize)
            for i, part in enumerate(source.to_delayed())
        ]
    if isinstance(source, pd.DataFrame):
        raise TypeError(
            "count_battles takes a Dask DataFrame or a Parquet path/glob; for a pandas "
            "DataFrame use crowdbayes.data.Battles(frame)"
        )
    files = parquet_files(source, WHAT)
    return [
        delayed(_count_file, pure=True)(str(path), f"file {path}", columns, normalize)
        for path in files
    ]


def count_battles(
    source,
    *,
    client: Client | None = None,
    scheduler: str | None = None,
    n_workers: int = 2,
    model_a: str = "model_a",
    model_b: str = "model_b",
    winner: str = "winner",
    judge: str | None = None,
    category: str | None = None,
    covariates: Sequence[str] | None = None,
    standardize: bool = True,
    normalize: bool = True,
    fan_in: int = 8,
    cluster_options: dict | None = None,
) -> CountedBattles:
    """Count battles from Parquet on a Dask cluster (module docstring), for
    :meth:`Leaderboard.fit <crowdbayes.Leaderboard.fit>`.

    Parameters
    ----------
    source : str, path or dask.dataframe.DataFrame
        A Parquet file, a directory of Parquet files or a glob, or a Dask DataFrame.
    client, scheduler, n_workers, cluster_options
        An existing ``Client``; else the address of a running scheduler; else a
        ``LocalCluster`` of ``n_workers`` single-threaded processes (``cluster_options`` go
        to it, e.g. ``memory_limit``).
    model_a, model_b, winner, judge, category, covariates, standardize, normalize
        As for :class:`~crowdbayes.data.battles.Battles` (the one-hot winner columns are read
        when there is no ``winner`` column).
    fan_in : int
        Partial counts merged per reduce task.

    Returns
    -------
    CountedBattles
        Equal to ``Battles(all rows, ...)`` for the leaderboard: the same model ids, counts
        (and, without covariates, the same rows in the same order), covariate names, means
        and scales.

    Examples
    --------
    >>> battles = count_battles("battles/", scheduler="tcp://10.0.0.5:8786")  # doctest: +SKIP
    >>> Leaderboard(tie_model="half").fit(battles).board_  # doctest: +SKIP
    """
    if fan_in < 2:
        raise ValueError(f"fan_in must be at least 2; got {fan_in}")
    names = tuple(covariates or ())
    columns = BattleColumns(model_a, model_b, winner, judge, category, names)
    sources = _sources(source, columns, normalize)
    with cluster_client(client, scheduler, n_workers, **(cluster_options or {})) as opened:
        (total,) = _compute(opened, [_tree_merge(sources, fan_in)])
    _say_checks(total.checks)
    return finish_counts(total, names, standardize)
