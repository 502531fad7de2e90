"""The ``Battles`` container: pairwise battles between models (an arena's votes), validated,
encoded and counted once.

Each row says that ``model_a`` met ``model_b`` and who won: ``winner`` is ``model_a``,
``model_b``, ``tie`` or ``tie (bothbad)`` (case and surrounding spaces ignored), or the table
has the one-hot columns ``winner_model_a, winner_model_b, winner_tie`` instead. Optional: a
``judge`` column (a person or an LLM judge), a ``category`` column (for per-category boards) and
covariate columns holding per-battle side differences (a minus b; for style control, Chiang et
al. 2024: response length, headers, lists, bold spans), z-scored over the battles as the arena
does.

A fit needs only the distinct ``(pair, outcome, covariates)`` rows and how often each occurs
(:meth:`Battles.counts`): on an arena log of millions of votes and a few hundred models without
covariates there are tens of thousands of them. Each battle is oriented so that the model with
the smaller code is side ``a`` (a swapped battle swaps its winner and negates its covariates,
which leaves every Bradley–Terry likelihood unchanged).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .hygiene import Hygiene
from .io import TableLike, read_table_rows
from .validate import reject_missing, show_values

__all__ = ["Battles", "BattleCounts", "A_WINS", "B_WINS", "TIE", "style_covariates"]

#: outcome codes of a battle (in its counted orientation)
A_WINS, B_WINS, TIE = 0, 1, 2
#: winner values (after stripping spaces and lower-casing) and their outcome
WINNER_VALUES = {"model_a": A_WINS, "model_b": B_WINS, "tie": TIE, "tie (bothbad)": TIE}
#: up to this many models the rows are counted in a dense array of all 3·n² keys (72 MB at
#: 1,000 models), above by sorting the keys
_DENSE_KEYS = 1000
#: the one-hot winner columns (the form of the arena's Kaggle data)
ONE_HOT = ("winner_model_a", "winner_model_b", "winner_tie")


@dataclass
class BattleCounts:
    """The distinct battles and their counts: what a fit works on.

    ``a < b`` are model codes, ``outcome`` in {0: a won, 1: b won, 2: tie}, ``X`` the
    (standardised) covariates of the row (``(n_rows, n_covariates)``), ``count`` how many
    battles share the row.
    """

    n_models: int
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    X: np.ndarray
    count: np.ndarray

    @property
    def n_rows(self) -> int:
        return len(self.count)

    @property
    def n_battles(self) -> int:
        return int(self.count.sum())

    @classmethod
    def of(cls, n_models, a, b, outcome, X, count=None) -> BattleCounts:
        """Orient every row so that ``a < b`` and add up equal rows."""
        X = np.zeros((len(a), 0)) if X is None else np.asarray(X, dtype=np.float64)
        weights = None if count is None else np.asarray(count)
        swap, key = oriented_keys(n_models, a, b, outcome)
        if X.shape[1] == 0 and n_models <= _DENSE_KEYS:  # count by key: O(battles), no sort
            total = np.bincount(key, weights, 3 * n_models * n_models)
            keys = np.flatnonzero(total)
            pair, outcome = keys // 3, keys % 3
            dtype = np.int64 if weights is None else weights.dtype
            return cls(
                n_models,
                pair // n_models,
                pair % n_models,
                outcome,
                np.zeros((len(keys), 0)),
                total[keys].astype(dtype),
            )
        count = np.ones(len(key), dtype=np.int64) if weights is None else weights
        if X.shape[1] == 0:
            keys, inverse = np.unique(key, return_inverse=True)
            rows = np.zeros((len(keys), 0))
        else:
            X = np.where(swap[:, None], -X, X)
            table = np.column_stack([key.astype(np.float64), X])
            first, inverse = _distinct_rows(table)
            keys, rows = key[first], X[first]
        inverse = inverse.ravel()
        total = np.bincount(inverse, count, len(keys)).astype(count.dtype)
        keys = keys.astype(np.int64)
        pair, outcome = keys // 3, keys % 3
        return cls(n_models, pair // n_models, pair % n_models, outcome, rows, total)

    def with_counts(self, count: np.ndarray) -> BattleCounts:
        """The same rows with other counts (a bootstrap replicate; rows at 0 kept)."""
        return BattleCounts(self.n_models, self.a, self.b, self.outcome, self.X, count)

    def merged(self, other: BattleCounts) -> BattleCounts:
        """These counts and ``other``'s (same models and covariates) added up."""
        if other.n_models != self.n_models or other.X.shape[1] != self.X.shape[1]:
            raise ValueError("cannot add counts of other models or covariates")
        return BattleCounts.of(
            self.n_models,
            np.concatenate([self.a, other.a]),
            np.concatenate([self.b, other.b]),
            np.concatenate([self.outcome, other.outcome]),
            np.concatenate([self.X, other.X]),
            np.concatenate([self.count, other.count]),
        )

    def reaches_all(self, *, wins: bool = False, max_steps: int = 64) -> bool:
        """Whether the comparison graph is connected (``wins=False``: an edge between the two
        models of every row) or the win graph is strongly connected (``wins=True``: an edge
        from each row's winner to its loser, a tie an edge each way), found by breadth-first
        search from model 0 over the rows — one vectorised pass per step, O(rows) — forward
        and, for the win graph, backward (strongly connected if and only if every model is
        reached from model 0 and reaches it). True is certain; False means not shown within
        ``max_steps`` steps (the graph's diameter, a few steps on a leaderboard's graph), so a
        caller then finds the components another way (and their number, for its message)."""
        if not wins:
            source = np.concatenate([self.a, self.b])
            target = np.concatenate([self.b, self.a])
            return _reaches_all(self.n_models, source, target, max_steps)
        source, target = self.win_edges()
        return _reaches_all(self.n_models, source, target, max_steps) and _reaches_all(
            self.n_models, target, source, max_steps
        )

    def win_edges(self) -> tuple[np.ndarray, np.ndarray]:
        """The win graph's edges ``(source, target)``: each row's winner to its loser, a tie an
        edge each way."""
        a_beats, b_beats = self.outcome != B_WINS, self.outcome != A_WINS
        source = np.concatenate([self.a[a_beats], self.b[b_beats]])
        target = np.concatenate([self.b[a_beats], self.a[b_beats]])
        return source, target

    def win_groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The strongly connected components of the win graph (a label per model) and, per
        component, whether a model outside it ever beat (or tied) one inside, and whether one
        inside ever beat (or tied) one outside."""
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components

        n = self.n_models
        source, target = self.win_edges()
        graph = csr_matrix((np.ones(len(source)), (source, target)), shape=(n, n))
        parts, labels = connected_components(graph, directed=True, connection="strong")
        across = labels[source] != labels[target]
        beaten = np.zeros(parts, dtype=bool)
        beaten[labels[target[across]]] = True
        beats = np.zeros(parts, dtype=bool)
        beats[labels[source[across]]] = True
        return labels, beaten, beats

    def battles_per_model(self) -> np.ndarray:
        n = self.n_models
        return np.bincount(self.a, self.count, n) + np.bincount(self.b, self.count, n)

    def wins_per_model(self) -> np.ndarray:
        """Wins of each model, a tie counting half a win for each side."""
        n, c, o = self.n_models, self.count, self.outcome
        score_a = np.where(o == A_WINS, 1.0, np.where(o == TIE, 0.5, 0.0)) * c
        score_b = np.where(o == B_WINS, 1.0, np.where(o == TIE, 0.5, 0.0)) * c
        return np.bincount(self.a, score_a, n) + np.bincount(self.b, score_b, n)


def _reaches_all(n: int, source: np.ndarray, target: np.ndarray, max_steps: int) -> bool:
    """Whether every one of ``n`` nodes is reached from node 0 along the edges
    ``source → target`` within ``max_steps`` steps of breadth-first search."""
    reached = np.zeros(n, dtype=bool)
    reached[0] = True
    total = 1
    for _ in range(max_steps):
        if total == n:
            return True
        reached[target[reached[source]]] = True
        before, total = total, int(reached.sum())
        if total == before:  # nothing new: the rest is out of reach
            return False
    return total == n


def oriented_keys(n_models: int, a, b, outcome) -> tuple[np.ndarray, np.ndarray]:
    """``(swap, key)`` of battles between models ``a`` and ``b`` with outcomes ``outcome``:
    ``swap`` where ``a > b``, and the key ``(low·n + high)·3 + o`` of each battle oriented so
    that ``low < high`` (a swapped battle's win becomes the other side's: ``o = outcome XOR
    1`` for a win, a tie kept). One pass in 32-bit integers when every key fits (up to
    26,754 models), else 64-bit."""
    dtype = np.int32 if 3 * n_models * n_models < 2**31 else np.int64
    a = np.asarray(a).astype(dtype, copy=False)
    b = np.asarray(b).astype(dtype, copy=False)
    outcome = np.asarray(outcome).astype(dtype, copy=False)
    swap = a > b
    key = np.minimum(a, b)
    key *= n_models
    key += np.maximum(a, b)
    key *= 3
    key += outcome ^ (swap & (outcome < TIE))  # 0 ↔ 1 on a swapped win; a tie stays 2
    return swap, key


def _distinct_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, inverse)``: the first row of each distinct row of ``table`` (order of first
    appearance) and each row's group. Rows are hashed (a 64-bit hash per column, combined) and
    the hashes factorised, O(rows); every row is then checked equal to its group's first, and
    a hash collision (never seen) falls back to sorting the rows."""
    combined = np.zeros(len(table), dtype=np.uint64)
    for column in table.T:
        combined = combined * np.uint64(1_000_003) ^ pd.util.hash_array(column)
    inverse, uniques = pd.factorize(combined)
    first = np.empty(len(uniques), dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(table) - 1, -1, -1)
    if not (table == table[first[inverse]]).all():  # a collision: sort instead
        _, first, inverse = np.unique(table, axis=0, return_index=True, return_inverse=True)
    return first, inverse.ravel()


class Battles:
    """Pairwise battles between models (module docstring).

    Parameters
    ----------
    table : DataFrame or path
        One row per battle (CSV/TSV or Parquet for a path).
    model_a, model_b, winner : str
        Column names. Without a ``winner`` column the one-hot columns ``winner_model_a``,
        ``winner_model_b``, ``winner_tie`` are read.
    judge, category : str, optional
        Columns of who judged and of the battle's category.
    covariates : list of str, optional
        Columns of per-battle side differences (a minus b).
    standardize : bool
        Z-score the covariates over the battles (the arena's style control; default), so each
        coefficient is per standard deviation of its difference.
    normalize : bool
        Strip spaces around ids and put them in Unicode NFC (:mod:`~crowdbayes.data.hygiene`).

    Attributes
    ----------
    n_battles, n_models, model_ids, covariate_names, judge_ids, categories, data_checks
    covariate_mean, covariate_scale : ndarray
        What the covariates were standardised with (0 and 1 without standardising).
    """

    def __init__(
        self,
        table: TableLike,
        *,
        model_a: str = "model_a",
        model_b: str = "model_b",
        winner: str = "winner",
        judge: str | None = None,
        covariates=None,
        category: str | None = None,
        standardize: bool = True,
        normalize: bool = True,
    ) -> None:
        what = "battles"
        covariates = [] if covariates is None else list(covariates)
        id_columns = [c for c in (model_a, model_b, winner, judge, category) if c]
        df, rows = read_table_rows(
            table,
            what=what,
            id_columns=id_columns,
            columns=[*id_columns, *covariates],
            categorical=True,
        )
        hygiene = Hygiene(what, normalize=normalize, rows=rows)
        one_hot = winner == "winner" and winner not in df.columns and set(ONE_HOT) <= set(df)
        required = {"model_a": model_a, "model_b": model_b}
        if not one_hot:
            required["winner"] = winner
        for name, column in (("judge", judge), ("category", category)):
            if column is not None:
                required[name] = column
        df = hygiene.columns(df, required)
        missing = [c for c in covariates if c not in df.columns]
        if missing:
            raise ValueError(
                f"{what}: covariate column(s) {show_values(missing)} are missing; "
                f"got {list(map(str, df.columns))}"
            )
        if len(df) == 0:
            raise ValueError(f"{what}: the table is empty (0 rows)")
        reject_missing(df, list(required.values()), what, rows)

        codes_a, ids_a = _encode(hygiene, df[model_a], model_a, rows)
        codes_b, ids_b = _encode(hygiene, df[model_b], model_b, rows)
        both = ids_a.append(ids_b)
        try:
            model_ids = pd.Index(pd.unique(both)).sort_values()
        except TypeError:  # ids of mixed kinds: keep the order of first appearance
            model_ids = pd.Index(pd.unique(both))
        a = model_ids.get_indexer(ids_a).astype(np.int64)[codes_a]
        b = model_ids.get_indexer(ids_b).astype(np.int64)[codes_b]
        same = np.flatnonzero(a == b)
        if same.size:
            raise ValueError(
                f"{what}: {same.size} battle(s) have a model playing itself "
                f"(first at {rows.one(same[0])}: {model_ids[a[same[0]]]!r})"
            )
        if len(model_ids) < 2:
            raise ValueError(f"{what}: need at least 2 models; got {len(model_ids)}")
        outcome = (
            _one_hot_outcome(df, what, rows) if one_hot else _winner_outcome(df[winner], what, rows)
        )
        X, self.covariate_mean, self.covariate_scale = _covariates(
            df, covariates, standardize, what, rows
        )
        self.model_ids = pd.Index(model_ids, name="model")
        self.covariate_names = tuple(covariates)
        self.judge_ids = self.judge_codes = None
        if judge is not None:
            self.judge_codes, judge_ids = hygiene.encode(_plain(df[judge]), judge, rows)
            self.judge_ids = pd.Index(judge_ids, name="judge")
        self.categories = self._category_codes = None
        if category is not None:
            self._category_codes, categories = hygiene.encode(_plain(df[category]), category, rows)
            self.categories = pd.Index(categories, name="category")
        hygiene.report_normalized()
        #: what the checks before inference found (:class:`~crowdbayes.data.hygiene.DataCheck`)
        self.data_checks = hygiene.checks
        self.a, self.b, self.outcome, self.X = a, b, outcome, X
        self._counts: BattleCounts | None = None

    # ------------------------------------------------------------------ sizes and views
    @property
    def n_battles(self) -> int:
        return len(self.a)

    @property
    def n_models(self) -> int:
        return len(self.model_ids)

    @property
    def n_ties(self) -> int:
        return int((self.outcome == TIE).sum())

    @property
    def category_codes(self) -> np.ndarray | None:
        """Each battle's category (codes into ``categories``); None without a category
        column."""
        return self._category_codes

    def judge_battles(self) -> tuple:
        """``(judge, a, b, outcome, count)`` of the battles, for counting per judge (codes
        into ``judge_ids`` and ``model_ids``; ``count`` None: a battle per row — battles
        counted elsewhere, :class:`crowdbayes.distributed.CountedBattles`, give counts)."""
        return self.judge_codes, self.a, self.b, self.outcome, None

    def counts(self) -> BattleCounts:
        """The distinct oriented ``(pair, outcome, covariates)`` rows and their counts
        (computed once)."""
        if self._counts is None:
            self._counts = BattleCounts.of(self.n_models, self.a, self.b, self.outcome, self.X)
        return self._counts

    def collapsed(self) -> pd.DataFrame:
        """:meth:`counts` as a table: ``model_a, model_b, outcome`` (``model_a``, ``model_b``
        or ``tie``), the covariates and ``count``."""
        c = self.counts()
        names = np.array(["model_a", "model_b", "tie"])
        frame = pd.DataFrame(
            {
                "model_a": self.model_ids[c.a],
                "model_b": self.model_ids[c.b],
                "outcome": names[c.outcome],
            }
        )
        for k, name in enumerate(self.covariate_names):
            frame[name] = c.X[:, k]
        frame["count"] = c.count
        return frame

    def subset(self, category) -> Battles:
        """The battles of one category (models that play none of them are dropped)."""
        if self.categories is None:
            raise ValueError("battles: no category column was given (Battles(..., category=...))")
        code = self.categories.get_indexer([category])[0]
        if code < 0:
            raise ValueError(
                f"battles: unknown category {category!r}; known: {show_values(self.categories)}"
            )
        keep = self._category_codes == code
        frame = pd.DataFrame(
            {
                "model_a": self.model_ids[self.a[keep]],
                "model_b": self.model_ids[self.b[keep]],
                "winner": np.array(["model_a", "model_b", "tie"])[self.outcome[keep]],
            }
        )
        for k, name in enumerate(self.covariate_names):
            frame[name] = self.X[keep, k]
        if self.judge_ids is not None:
            frame["judge"] = self.judge_ids[self.judge_codes[keep]]
        return Battles(
            frame,
            covariates=self.covariate_names,
            judge="judge" if self.judge_ids is not None else None,
            standardize=False,
        )

    def __repr__(self) -> str:
        cov = f", {len(self.covariate_names)} covariates" if self.covariate_names else ""
        return (
            f"Battles({self.n_battles} battles of {self.n_models} models, {self.n_ties} ties{cov})"
        )


def as_battles(data, **kwargs) -> Battles:
    """Pass :class:`Battles` through; wrap a table or path in one."""
    return data if isinstance(data, Battles) else Battles(data, **kwargs)


def _encode(hygiene: Hygiene, column: pd.Series, name: str, rows) -> tuple[np.ndarray, pd.Index]:
    """:meth:`Hygiene.encode` of a model column; a column read as categories (a CSV file) whose
    categories hygiene leaves as they are (checked on the categories alone, with a probe that
    warns nothing) keeps its codes, with no pass over the rows. Otherwise (a DataFrame, or ids
    to normalise) the column goes through :meth:`Hygiene.encode`, its messages naming rows."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = pd.Index(column.cat.categories)
        codes = column.cat.codes.to_numpy()  # the narrowest integers: int8 below 128 ids
        if not _used_categories(codes, len(categories)).all():
            return hygiene.encode(_plain(column), name, rows)  # unused categories: not ids
        probe = Hygiene(hygiene.what, normalize=hygiene.normalize)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kept = probe.encode(pd.Series(categories), name)[1]
        except (ValueError, TypeError):  # refused: said again below, naming the rows
            kept = None
        if kept is not None and not probe.checks and kept.equals(categories):
            return codes, categories
    return hygiene.encode(_plain(column), name, rows)


def _used_categories(codes: np.ndarray, n: int) -> np.ndarray:
    """Which of ``n`` categories the codes use (-1, a missing value, uses none)."""
    if codes.size and codes.min() >= 0:  # no missing value: no mask over the rows
        return np.bincount(codes, minlength=n) > 0
    return np.bincount(codes[codes >= 0], minlength=n) > 0


def _plain(column: pd.Series) -> pd.Series:
    """A column read as categories as plain values (what :meth:`Hygiene.encode` takes)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.astype(column.cat.categories.dtype)
    return column


def _winner_outcome(column: pd.Series, what: str, rows) -> np.ndarray:
    if isinstance(column.dtype, pd.CategoricalDtype):  # the few categories, not the rows
        codes, uniques = column.cat.codes.to_numpy(), column.cat.categories
        used = _used_categories(codes, len(uniques))
    else:
        codes, uniques = pd.factorize(column, sort=False)
        used = np.ones(len(uniques), dtype=bool)
    keys = [str(v).strip().lower() for v in uniques]
    mapped = np.array([WINNER_VALUES.get(k, -1) for k in keys], dtype=np.int64)
    bad = np.flatnonzero((mapped < 0) & used)
    if bad.size:
        where = np.flatnonzero(np.isin(codes, bad))
        raise ValueError(
            f"{what}: {where.size} winner value(s) are not model_a, model_b, tie or "
            f"'tie (bothbad)': {show_values(list(uniques[bad]))} (first at {rows.one(where[0])})"
        )
    return mapped[codes]


def _one_hot_outcome(df: pd.DataFrame, what: str, rows) -> np.ndarray:
    flags = np.column_stack([pd.to_numeric(df[c], errors="coerce").to_numpy() for c in ONE_HOT])
    valid = np.isin(flags, (0, 1)).all(axis=1) & (flags.sum(axis=1) == 1)
    bad = np.flatnonzero(~valid)
    if bad.size:
        raise ValueError(
            f"{what}: {bad.size} row(s) of {', '.join(ONE_HOT)} are not one 1 and two 0s "
            f"(first at {rows.one(bad[0])})"
        )
    return np.argmax(flags, axis=1).astype(np.int64)


def _covariates(df, names, standardize, what, rows):
    if not names:
        return np.zeros((len(df), 0)), np.zeros(0), np.ones(0)
    X = np.column_stack([pd.to_numeric(df[c], errors="coerce").to_numpy() for c in names])
    X = X.astype(np.float64)
    for k, name in enumerate(names):
        bad = np.flatnonzero(~np.isfinite(X[:, k]))
        if bad.size:
            raise ValueError(
                f"{what}: covariate {name!r} has {bad.size} missing or non-numeric value(s) "
                f"({rows.some(bad)})"
            )
    mean, scale = np.zeros(len(names)), np.ones(len(names))
    if standardize:
        mean, scale = X.mean(axis=0), X.std(axis=0)
        constant = [n for n, s in zip(names, scale, strict=True) if s == 0]
        if constant:
            raise ValueError(f"{what}: covariate(s) {show_values(constant)} are constant")
        X = (X - mean) / scale
    return X, mean, scale


def style_covariates(
    table: pd.DataFrame, features, *, suffix_a: str = "_a", suffix_b: str = "_b"
) -> pd.DataFrame:
    """Arena-style covariates (Chiang et al. 2024, style control): for each feature ``f`` with
    columns ``f_a`` and ``f_b`` (e.g. token counts, headers, list items, bold spans), the
    normalised difference ``(f_a − f_b) / (f_a + f_b)`` (0 where both are 0), returned as
    columns named ``f`` (z-score them with ``Battles(..., covariates=features)``)."""
    out = pd.DataFrame(index=table.index)
    for name in features:
        x = table[f"{name}{suffix_a}"].to_numpy(dtype=np.float64)
        y = table[f"{name}{suffix_b}"].to_numpy(dtype=np.float64)
        total = x + y
        out[name] = np.divide(x - y, total, out=np.zeros_like(total), where=total != 0)
    return out
