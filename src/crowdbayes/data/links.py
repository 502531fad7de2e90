"""The ``Links`` container: workers' must-link / cannot-link judgments on pairs of items.

A crowd clustering task shows a worker two items (or a set of items to sort into groups) and
records, for a pair ``(left, right)``, whether the worker put them in the same group (label 1,
must-link) or in different groups (label 0, cannot-link). The container validates such a table
once and encodes it to integer codes once; the clustering models (:mod:`crowdbayes.models.
clustering`) compute with the codes and report results in the user's ids.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .features import FeatureTable, read_features
from .hygiene import Hygiene
from .io import TableLike, read_table_rows
from .validate import RowNames, reject_missing, show_id, show_values

__all__ = ["Links", "as_links"]

_DUPLICATE_POLICIES = ("error", "keep", "drop")


class Links:
    """Pairwise must-link / cannot-link judgments in long format.

    Each row says that ``worker`` judged the items ``left`` and ``right`` to be in the same
    cluster (``label`` 1, must-link) or in different clusters (``label`` 0, cannot-link); the
    column names follow crowd-kit's pairwise format. A pair is unordered: ``(a, b)`` and
    ``(b, a)`` are the same question.

    Parameters
    ----------
    data : DataFrame or path
        The links; other columns (e.g. a task id) are ignored.
    observations : ndarray, DataFrame, path or FeatureTable, optional
        Observations (features, images) of the items, for models that also see the items
        (SCDC). An array has one entry per item along its first axis and any trailing shape;
        its ids are ``item_ids`` if given, else the positions ``0 … n−1``. A table has one row
        per item (ids in column ``item`` or the index) and numeric columns. When observations
        are given, the item codes index them: ``item_ids`` lists every observed item (linked or
        not), in the order of the observations, and every linked item must be observed.
    item_ids : sequence, optional
        The ids of the rows of an ``observations`` array.
    worker, left, right, label : str
        Column names in ``data``.
    duplicates : {"keep", "drop", "error"}
        What to do when one worker judged the same unordered pair more than once (as for
        :class:`~crowdbayes.data.labels.Labels`). ``"keep"`` (default) keeps every row as a
        separate judgment and warns (:class:`DataWarning`), saying how many repeats contradict
        each other; ``"error"`` refuses the table;
        ``"drop"`` keeps the first row of each repeat that agrees, removes *every* row of a
        pair the worker contradicted (the worker's answer is unknown) and warns.

    Attributes
    ----------
    item_ids, worker_ids : pandas.Index
        The user's ids in code order.
    left_codes, right_codes, worker_codes : ndarray of int, shape (n_links,)
        Item and worker codes of each link.
    labels : ndarray of int8, shape (n_links,)
        1 for must-link, 0 for cannot-link.
    observations : ndarray or None
        The observations in item-code order (shape ``(n_items, ...)``), or None.
    observation_names : list of str or None
        Column names when the observations came as a table.

    Raises
    ------
    ValueError
        A missing column, missing values, a label other than 0/1, a link between an item and
        itself, a linked item without an observation, or (with ``duplicates="error"``) a
        worker judging the same pair twice. Messages name the column, value and rows.
    """

    def __init__(
        self,
        data: TableLike,
        observations: np.ndarray | TableLike | FeatureTable | None = None,
        *,
        item_ids=None,
        worker: str = "worker",
        left: str = "left",
        right: str = "right",
        label: str = "label",
        duplicates: str = "keep",
        normalize: bool = True,
    ) -> None:
        what = "links"
        if duplicates not in _DUPLICATE_POLICIES:
            raise ValueError(f"duplicates must be one of {_DUPLICATE_POLICIES}; got {duplicates!r}")
        df, rows = read_table_rows(data, what=what, id_columns=(worker, left, right))
        hygiene = Hygiene(what, normalize=normalize, rows=rows)
        df = hygiene.columns(df, {"worker": worker, "left": left, "right": right, "label": label})
        if len(df) == 0:
            raise ValueError(f"{what}: the table is empty (0 rows)")
        reject_missing(df, (worker, left, right, label), what, rows)
        labels = _binary_labels(df[label], label, rows)

        left_values = hygiene.normalized(df[left], left, rows).to_numpy()
        right_values = hygiene.normalized(df[right], right, rows).to_numpy()
        if left_values.dtype != right_values.dtype:  # keep 1 and "1" apart when stacking
            left_values, right_values = left_values.astype(object), right_values.astype(object)
        self_links = np.flatnonzero(pd.Series(left_values == right_values).to_numpy())
        if self_links.size:
            row = int(self_links[0])
            raise ValueError(
                f"{what}: {self_links.size} row(s) link an item to itself (first: item "
                f"{show_id(left_values[row])} at {rows.one(row)}); a pair needs two different "
                "items"
            )

        self.observations: np.ndarray | None = None
        self.observation_names: list[str] | None = None
        if observations is None:  # codes in order of first appearance, row by row
            codes, items = pd.factorize(np.column_stack([left_values, right_values]).ravel())
            codes = codes.reshape(-1, 2).T.ravel()
            self.item_ids = pd.Index(items, name="item")
        else:
            self.item_ids, self.observations, self.observation_names = _read_observations(
                observations, item_ids
            )
            codes = self.item_ids.get_indexer(np.concatenate([left_values, right_values]))
            unobserved = np.flatnonzero(codes < 0)
            if unobserved.size:
                n_rows = len(df)
                unlinked = np.unique(unobserved % n_rows)
                first = int(unobserved[0])
                value = np.concatenate([left_values, right_values])[first]
                raise ValueError(
                    f"{what}: {unlinked.size} row(s) link an item that has no observation "
                    f"(first: item {show_id(value)} at {rows.one(first % n_rows)}); every linked "
                    "item needs a row in the observations"
                )
        n_rows = len(df)
        left_codes = codes[:n_rows].astype(np.int64)
        right_codes = codes[n_rows:].astype(np.int64)
        worker_codes, workers = hygiene.encode(df[worker], worker, rows)
        worker_codes = worker_codes.astype(np.int64)
        hygiene.report_normalized()
        #: what the checks before inference found (:class:`~crowdbayes.data.hygiene.DataCheck`)
        self.data_checks = hygiene.checks

        keep = _duplicate_policy(
            worker_codes, left_codes, right_codes, labels, len(self.item_ids), duplicates, rows,
            hygiene,
        )  # fmt: skip
        if keep is not None:
            worker_codes, left_codes = worker_codes[keep], left_codes[keep]
            right_codes, labels = right_codes[keep], labels[keep]
            used = np.unique(worker_codes)
            if used.size < len(workers):  # a worker left with no link is no worker
                remap = np.full(len(workers), -1, dtype=np.int64)
                remap[used] = np.arange(used.size)
                worker_codes, workers = remap[worker_codes], workers[used]
            if worker_codes.size == 0:
                raise ValueError(f"{what}: no link is left after dropping contradicted pairs")
        self.worker_ids = pd.Index(workers, name="worker")
        self.left_codes, self.right_codes = left_codes, right_codes
        self.worker_codes, self.labels = worker_codes, labels

    # ------------------------------------------------------------------------------ sizes
    @property
    def n_links(self) -> int:
        return len(self.labels)

    @property
    def n_items(self) -> int:
        """Items in the code space: observed items when observations were given, else the
        items that appear in a link."""
        return len(self.item_ids)

    @property
    def n_workers(self) -> int:
        return len(self.worker_ids)

    @property
    def linked_codes(self) -> np.ndarray:
        """Sorted codes of the items that appear in at least one link."""
        return np.unique(np.concatenate([self.left_codes, self.right_codes]))

    def to_frame(self) -> pd.DataFrame:
        """The encoded links back as a ``worker, left, right, label`` DataFrame in user ids."""
        return pd.DataFrame(
            {
                "worker": self.worker_ids[self.worker_codes],
                "left": self.item_ids[self.left_codes],
                "right": self.item_ids[self.right_codes],
                "label": self.labels.astype(np.int64),
            }
        )

    def __repr__(self) -> str:
        must = int(self.labels.sum())
        observed = "" if self.observations is None else f", observations {self.observations.shape}"
        return (
            f"Links({self.n_links} links ({must} must-link), {len(self.linked_codes)} linked "
            f"items, {self.n_workers} workers{observed})"
        )


def as_links(data: Links | TableLike, **kwargs) -> Links:
    """Pass a :class:`Links` through; wrap a DataFrame or path in one."""
    if isinstance(data, Links):
        if kwargs:
            raise TypeError("options such as duplicates= go to Links(...), not to fit()")
        return data
    return Links(data, **kwargs)


# ------------------------------------------------------------------------------------ helpers
def _binary_labels(column: pd.Series, name: str, rows: RowNames) -> np.ndarray:
    """0/1 labels (booleans and the numbers 0.0/1.0 count); anything else is refused."""
    values = column.to_numpy()
    if values.dtype == bool:
        return values.astype(np.int8)
    numeric = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isin(numeric, (0.0, 1.0)))
    if bad.size:
        shown = show_values(pd.unique(values[bad]).tolist())
        raise ValueError(
            f"links: column {name!r} must hold 1 (must-link) or 0 (cannot-link); "
            f"{bad.size} row(s) hold other values: {shown} (first at {rows.one(bad[0])})"
        )
    return numeric.astype(np.int8)


def _read_observations(observations, item_ids) -> tuple[pd.Index, np.ndarray, list[str] | None]:
    if isinstance(observations, np.ndarray):
        if observations.ndim == 0 or len(observations) == 0:
            raise ValueError("observations: the array is empty")
        if item_ids is None:
            ids = pd.RangeIndex(len(observations))
        else:
            ids = pd.Index(item_ids)
            if len(ids) != len(observations):
                raise ValueError(
                    f"observations: {len(observations)} rows but {len(ids)} item_ids were given"
                )
            if ids.has_duplicates:
                repeated = ids[ids.duplicated()].unique()
                raise ValueError(
                    f"observations: item_ids repeat {len(repeated)} id(s) "
                    f"(first: {show_values(list(repeated))})"
                )
        return pd.Index(ids, name="item"), observations, None
    if item_ids is not None:
        raise ValueError("item_ids goes with an observations array; a table carries its own ids")
    table = read_features(observations, id_column="item", what="observations")
    return pd.Index(table.ids, name="item"), table.values, table.names


def _duplicate_policy(
    worker_codes: np.ndarray,
    left_codes: np.ndarray,
    right_codes: np.ndarray,
    labels: np.ndarray,
    n_items: int,
    policy: str,
    rows: RowNames,
    hygiene: Hygiene,
) -> np.ndarray | None:
    """Apply the duplicates policy to rows in which a worker repeats an unordered pair.

    Returns None when every row is kept, else the boolean mask of rows to keep. The key is one
    int64 per row: (worker, smaller item code, larger item code).
    """
    low, high = np.minimum(left_codes, right_codes), np.maximum(left_codes, right_codes)
    key = (worker_codes * n_items + low) * n_items + high
    keys = pd.Series(key)
    repeated = keys.duplicated(keep=False).to_numpy()
    if not repeated.any():
        return None
    n_extra = int(keys.duplicated(keep="first").sum())
    groups = pd.DataFrame({"key": key[repeated], "label": labels[repeated]})
    contradicted_keys = groups.groupby("key")["label"].nunique()
    contradicted_keys = contradicted_keys.index[contradicted_keys.to_numpy() > 1].to_numpy()
    contradicted = np.isin(key, contradicted_keys)
    first = int(np.argmax(repeated))
    where = f"(first at {rows.one(first)})"
    summary = (
        f"{n_extra} row(s) repeat a pair already judged by the same worker {where}; "
        f"{contradicted_keys.size} pair(s) got contradictory labels from one worker"
    )
    if policy == "error":
        raise ValueError(
            f"links: {summary}. Pass duplicates='keep' to count every row as a judgment or "
            "duplicates='drop' to keep one row per agreeing repeat and drop contradicted pairs"
        )
    counts = {"rows": n_extra, "contradicted_pairs": int(contradicted_keys.size)}
    if policy == "keep":
        hygiene.record(
            "duplicates",
            f"links: {summary}; every row is kept as a separate judgment (pass "
            "duplicates='drop' to keep one row per agreeing repeat and drop contradicted pairs)",
            counts,
        )
        return None
    keep = ~keys.duplicated(keep="first").to_numpy() & ~contradicted
    hygiene.record(
        "duplicates",
        f"links: {summary}; dropped {int((~keep).sum())} row(s): the repeats that agree and "
        "every row of a contradicted pair",
        {**counts, "dropped": int((~keep).sum())},
    )
    return keep
