"""The ``Comparisons`` container: pairwise judgments, validated and encoded once.

Each row says that ``worker`` compared items ``left`` and ``right`` and preferred ``label``
(crowd-kit's pairwise columns). ``label`` is the preferred item's id, or the literal ``"equal"``
for a tie. Optional feature tables describe the items (and the workers) numerically; the GP
preference models put their kernels on them.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..exceptions import DataWarning
from .features import FeatureTable, read_features
from .hygiene import Hygiene
from .io import TableLike, read_table_rows
from .validate import reject_missing, show_values

__all__ = ["Comparisons", "as_comparisons", "TIE", "ANONYMOUS_WORKER"]

#: the label value that marks a tie
TIE = "equal"
#: the worker id given to every row when the table has no worker column
ANONYMOUS_WORKER = "<anonymous>"

_TIE_POLICIES = ("keep", "drop", "error")


def _feature_table(
    source: TableLike | FeatureTable | None, *, what: str, id_column: str, expected: pd.Index
) -> FeatureTable | None:
    """Read a feature table (:func:`read_features`) that has a row for every id in ``expected``.

    The table may describe more ids (e.g. items nobody compared yet, whose utilities a GP can
    still predict). Constant columns carry no information and are reported.
    """
    if source is None:
        return None
    table = read_features(source, id_column=id_column, what=what)
    table.take(expected, needed_by="comparisons")
    constant = np.flatnonzero(np.ptp(table.values, axis=0) == 0) if len(table.ids) > 1 else []
    if len(constant):
        warnings.warn(
            f"{what}: {len(constant)} feature column(s) are constant and carry no information: "
            f"{show_values([table.names[c] for c in constant])}",
            DataWarning,
            stacklevel=4,
        )
    return table


class Comparisons:
    """Pairwise comparisons of items by workers, in long format.

    Parameters
    ----------
    data : DataFrame or path
        One row per judgment. A path ending in ``.parquet`` is read as Parquet, otherwise as
        CSV/TSV.
    items : DataFrame, path or FeatureTable, optional
        Item features (:func:`~crowdbayes.data.features.read_features`): one row per item, ids
        in the column ``item_column`` (a DataFrame without it: its index), numeric columns
        only. Every compared item needs a row; rows for items nobody compared are kept (a GP
        can predict their utility).
    workers : DataFrame or path, optional
        Worker features, laid out like ``items`` (for models with worker covariates).
    left, right, label, worker : str
        Column names in ``data``. If the default ``worker`` column is absent, every row is
        taken to come from one anonymous worker; a worker column named explicitly must exist.
    item_column, worker_column : str
        Columns holding the ids in the feature tables (defaults ``item``, ``worker``).
    ties : {"keep", "drop", "error"}
        Rows whose label is ``"equal"``. ``"keep"`` (default) encodes them with outcome 0 and
        leaves the choice to the model (the GP preference models either drop them with a
        :class:`DataWarning` giving the count, or count a tie as half a win for each side);
        ``"drop"`` removes them here with a warning giving the count; ``"error"`` raises.
    normalize : bool
        Strip the spaces around text ids and labels and put them in Unicode NFC (default; the
        count of values changed is warned). See :mod:`crowdbayes.data.hygiene`.

    Attributes
    ----------
    item_ids, worker_ids : pandas.Index
        The user's ids, in order of their integer codes. With an item feature table the item
        codes are its row numbers (so ``X[code]`` are the features of item ``code``);
        otherwise items are numbered in order of first appearance.
    left_codes, right_codes, worker_codes : ndarray of int, shape (n_comparisons,)
    outcome : ndarray of int8, shape (n_comparisons,)
        +1 where ``left`` won, -1 where ``right`` won, 0 for a tie.
    X : ndarray, shape (n_items, n_features), or None
        Item features. ``feature_names`` names the columns.
    W : ndarray, shape (n_workers, n_worker_features), or None
        Worker features (rows in worker-code order). ``worker_feature_names`` names them.
    """

    def __init__(
        self,
        data: TableLike,
        *,
        items: TableLike | None = None,
        workers: TableLike | None = None,
        left: str = "left",
        right: str = "right",
        label: str = "label",
        worker: str = "worker",
        item_column: str = "item",
        worker_column: str = "worker",
        ties: str = "keep",
        normalize: bool = True,
    ) -> None:
        what = "comparisons"
        if ties not in _TIE_POLICIES:
            raise ValueError(f"ties must be one of {_TIE_POLICIES}; got {ties!r}")
        df, rows = read_table_rows(data, what=what, id_columns=(worker, left, right, label))
        hygiene = Hygiene(what, normalize=normalize, rows=rows)
        required = {"left": left, "right": right, "label": label}
        optional = {"worker": worker} if worker == "worker" else {}
        df = hygiene.columns(df, required if optional else {**required, "worker": worker}, optional)
        anonymous = worker not in df.columns
        columns = (left, right, label) if anonymous else (worker, left, right, label)
        if len(df) == 0:
            raise ValueError(f"{what}: the table is empty (0 rows)")
        reject_missing(df, columns, what, rows)

        left_values = hygiene.normalized(df[left], left, rows).to_numpy()
        right_values = hygiene.normalized(df[right], right, rows).to_numpy()
        label_values = hygiene.normalized(df[label], label, rows).to_numpy()
        same = np.flatnonzero(left_values == right_values)
        if same.size:
            raise ValueError(
                f"{what}: {same.size} row(s) compare an item with itself "
                f"(first at {rows.one(same[0])}: {left_values[same[0]]!r})"
            )
        left_won = label_values == left_values
        right_won = label_values == right_values
        tied = (label_values == TIE) & ~left_won & ~right_won
        bad = np.flatnonzero(~(left_won | right_won | tied))
        if bad.size:
            raise ValueError(
                f"{what}: {bad.size} label(s) are neither the left item, the right item nor "
                f"{TIE!r}: {show_values(pd.unique(label_values[bad]))} "
                f"(first at {rows.one(bad[0])})"
            )
        if tied.any() and ties != "keep":
            if ties == "error":
                raise ValueError(
                    f"{what}: {int(tied.sum())} row(s) are ties ({TIE!r}; first at "
                    f"{rows.one(np.argmax(tied))}); pass ties='keep' or ties='drop'"
                )
            hygiene.record(
                "ties",
                f"{what}: dropped {int(tied.sum())} tie(s) ({TIE!r}) of {len(df)} rows",
                {"dropped": int(tied.sum())},
            )
            keep = ~tied
            if not keep.any():
                raise ValueError(f"{what}: no rows are left after dropping ties")
            df = df.loc[keep]
            left_values, right_values = left_values[keep], right_values[keep]
            left_won, right_won = left_won[keep], right_won[keep]
        self.n_ties = int((~left_won & ~right_won).sum())

        codes, seen = pd.factorize(np.concatenate([left_values, right_values]), sort=False)
        seen = pd.Index(seen)
        features = _feature_table(items, what="items", id_column=item_column, expected=seen)
        if features is None:
            self.item_ids = pd.Index(seen, name="item")
            self.X, self.feature_names = None, None
        else:
            self.X, self.feature_names = features.values, pd.Index(features.names)
            self.item_ids = pd.Index(features.ids, name="item")
            codes = self.item_ids.get_indexer(seen)[codes]
        n = len(left_values)
        self.left_codes = codes[:n].astype(np.int64)
        self.right_codes = codes[n:].astype(np.int64)
        self.outcome = np.where(left_won, 1, np.where(right_won, -1, 0)).astype(np.int8)

        if anonymous:
            self.worker_codes = np.zeros(n, dtype=np.int64)
            self.worker_ids = pd.Index([ANONYMOUS_WORKER], name="worker")
            if workers is not None:
                raise ValueError(
                    f"{what}: a worker feature table needs a {worker!r} column in the comparisons"
                )
        else:
            worker_codes, worker_ids = hygiene.encode(df[worker], worker, rows)
            self.worker_codes = worker_codes.astype(np.int64)
            self.worker_ids = pd.Index(worker_ids, name="worker")
        self.has_workers = not anonymous
        hygiene.report_normalized()
        #: what the checks before inference found (:class:`~crowdbayes.data.hygiene.DataCheck`)
        self.data_checks = hygiene.checks
        worker_features = _feature_table(
            workers, what="workers", id_column=worker_column, expected=self.worker_ids
        )
        if worker_features is None:
            self.W, self.worker_feature_names = None, None
        else:
            self.W = worker_features.take(self.worker_ids, needed_by="comparisons")
            self.worker_feature_names = pd.Index(worker_features.names)

    # ------------------------------------------------------------------ sizes and views
    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_workers(self) -> int:
        return len(self.worker_ids)

    @property
    def n_comparisons(self) -> int:
        return len(self.outcome)

    @property
    def has_features(self) -> bool:
        return self.X is not None

    def compared_items(self) -> np.ndarray:
        """Sorted codes of the items that appear in at least one comparison."""
        return np.unique(np.concatenate([self.left_codes, self.right_codes]))

    def item_codes(self, ids: Sequence, what: str = "items") -> np.ndarray:
        """Codes of the given item ids; unknown ids are an error naming them."""
        ids = pd.Index(ids)
        codes = self.item_ids.get_indexer(ids)
        unknown = np.flatnonzero(codes < 0)
        if unknown.size:
            shown = show_values(ids[unknown].unique())
            raise ValueError(f"{what}: {unknown.size} item id(s) are unknown: {shown}")
        return codes.astype(np.int64)

    def to_frame(self) -> pd.DataFrame:
        """The encoded comparisons back as a ``worker, left, right, label`` DataFrame."""
        left = self.item_ids[self.left_codes]
        right = self.item_ids[self.right_codes]
        label = np.where(
            self.outcome > 0,
            np.asarray(left, dtype=object),
            np.where(self.outcome < 0, np.asarray(right, dtype=object), TIE),
        )
        return pd.DataFrame(
            {
                "worker": self.worker_ids[self.worker_codes],
                "left": left,
                "right": right,
                "label": label,
            }
        )

    def __repr__(self) -> str:
        features = f", {self.X.shape[1]} item features" if self.has_features else ""
        return (
            f"Comparisons({self.n_comparisons} comparisons of {self.n_items} items by "
            f"{self.n_workers} workers, {self.n_ties} ties{features})"
        )


def as_comparisons(data: Comparisons | TableLike, **kwargs) -> Comparisons:
    """Pass a :class:`Comparisons` through; wrap a DataFrame or path (with ``kwargs``) in one."""
    if isinstance(data, Comparisons):
        if any(v is not None for v in kwargs.values()):
            raise TypeError(
                "options such as items= go to Comparisons(...) when passing a Comparisons"
            )
        return data
    return Comparisons(data, **{k: v for k, v in kwargs.items() if v is not None})
