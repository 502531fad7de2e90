"""Loaders for the on-disk label sets.

A data root holds one folder per label set::

    <root>/labels/<name>/labels.csv   task,worker,label   (required)
    <root>/labels/<name>/gold.csv     task,label          (optional; may cover only some tasks)
    <root>/labels/<name>/SOURCE.txt   where the data come from and how to cite them (optional)

The root is taken from the environment variable ``CROWDBAYES_DATA``; nothing is hard-coded. The
RTE set (Snow et al., 2008) also ships inside the package so that examples run without it; a set
of the same name under ``CROWDBAYES_DATA`` takes precedence over the bundled copy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..data.io import read_table
from ..data.labels import Labels

__all__ = ["DATA_ENV_VAR", "LabelDataset", "data_root", "list_datasets", "load_labels"]

DATA_ENV_VAR = "CROWDBAYES_DATA"

_BUNDLED_ROOT = Path(__file__).resolve().parent / "bundled"
_LABELS_FILE = "labels.csv"
_GOLD_FILE = "gold.csv"
_SOURCE_FILE = "SOURCE.txt"
_LISTING_COLUMNS = [
    "name",
    "n_labels",
    "n_tasks",
    "n_workers",
    "n_classes",
    "gold_tasks",
    "location",
    "bundled",
]


def data_root() -> Path | None:
    """The data root named by ``CROWDBAYES_DATA``, or ``None`` when the variable is unset/empty.

    Raises
    ------
    ValueError
        If the variable is set but does not name a directory.
    """
    value = os.environ.get(DATA_ENV_VAR, "").strip()
    if not value:
        return None
    root = Path(value).expanduser()
    if not root.is_dir():
        raise ValueError(f"{DATA_ENV_VAR} is set to {value!r}, which is not a directory ({root})")
    return root


def _label_set_dirs(base: Path) -> dict[str, Path]:
    if not base.is_dir():
        return {}
    return {
        d.name: d for d in sorted(base.iterdir()) if d.is_dir() and (d / _LABELS_FILE).is_file()
    }


def _available() -> dict[str, tuple[Path, bool]]:
    """Every label set found, name -> (folder, bundled); the env-root copy wins a name clash."""
    found = {name: (path, True) for name, path in _label_set_dirs(_BUNDLED_ROOT).items()}
    root = data_root()
    if root is not None:
        found.update(
            {name: (path, False) for name, path in _label_set_dirs(root / "labels").items()}
        )
    return dict(sorted(found.items()))


def list_datasets() -> pd.DataFrame:
    """One row per label set found under ``CROWDBAYES_DATA`` and in the package.

    The files are read quickly as text for the counts; they are not validated (``load_labels``
    followed by ``to_labels`` does that).

    Returns
    -------
    DataFrame
        Columns ``name, n_labels, n_tasks, n_workers, n_classes, gold_tasks, location, bundled``;
        ``gold_tasks`` is 0 when the set has no ``gold.csv``.
    """
    rows = []
    for name, (folder, bundled) in _available().items():
        df = pd.read_csv(folder / _LABELS_FILE, dtype=str, usecols=["task", "worker", "label"])
        gold_path = folder / _GOLD_FILE
        gold_tasks = 0
        if gold_path.is_file():
            gold_tasks = int(pd.read_csv(gold_path, dtype=str, usecols=["task"])["task"].nunique())
        rows.append(
            {
                "name": name,
                "n_labels": len(df),
                "n_tasks": int(df["task"].nunique()),
                "n_workers": int(df["worker"].nunique()),
                "n_classes": int(df["label"].nunique()),
                "gold_tasks": gold_tasks,
                "location": str(folder),
                "bundled": bundled,
            }
        )
    listing = pd.DataFrame(rows, columns=_LISTING_COLUMNS)
    return listing.astype({"bundled": bool})


@dataclass(frozen=True, eq=False)
class LabelDataset:
    """A label set as read from disk.

    Attributes
    ----------
    name : str
        The folder name, e.g. ``"rte"``.
    labels : DataFrame
        Columns ``task, worker, label``; task and worker ids are strings exactly as in the file
        (so ``"0001"`` keeps its zeros).
    gold : Series or None
        Known true classes indexed by task id (string), named ``"label"``; ``None`` when the set
        has no ``gold.csv``. It may cover only some tasks.
    source : str
        The text of ``SOURCE.txt`` (provenance and citation), or ``""``.
    location : Path or None
        The folder the set was read from.
    """

    name: str
    labels: pd.DataFrame = field(repr=False)
    gold: pd.Series | None = field(repr=False)
    source: str = field(default="", repr=False)
    location: Path | None = None

    def to_labels(self, **kwargs) -> Labels:
        """The labels as a validated :class:`~crowdbayes.Labels` container.

        Keyword arguments go to ``Labels`` (e.g. ``classes=``, ``duplicates=``). The gold labels
        are deliberately *not* passed: models would clamp those tasks to their gold class, and
        the gold is meant for evaluating them. Pass ``gold=self.gold`` explicitly to clamp.
        """
        return Labels(self.labels, **kwargs)

    def __repr__(self) -> str:
        gold = 0 if self.gold is None else len(self.gold)
        return (
            f"LabelDataset({self.name!r}: {len(self.labels)} labels, "
            f"{self.labels['task'].nunique()} tasks, {self.labels['worker'].nunique()} workers, "
            f"gold for {gold} tasks)"
        )


def load_labels(name: str) -> LabelDataset:
    """Read the label set ``name`` (see :func:`list_datasets` for what is available).

    Raises
    ------
    ValueError
        If no set of that name is found under ``CROWDBAYES_DATA`` or in the package.
    """
    available = _available()
    if name not in available:
        root = data_root()
        where = "it is not set" if root is None else f"it is {str(root)!r}"
        raise ValueError(
            f"no label set named {name!r}; available: {sorted(available)}. Set {DATA_ENV_VAR} "
            f"to a folder holding labels/<name>/labels.csv to add more ({where})"
        )
    folder, _ = available[name]
    labels = read_table(folder / _LABELS_FILE, what=f"{name} labels", id_columns=("task", "worker"))
    for col in ("task", "worker", "label"):
        if col not in labels.columns:
            raise ValueError(
                f"{name} labels: column {col!r} is missing; got {list(map(str, labels.columns))}"
            )
    labels = labels[["task", "worker", "label"]]

    gold = None
    gold_path = folder / _GOLD_FILE
    if gold_path.is_file():
        table = read_table(gold_path, what=f"{name} gold", id_columns=("task",))
        for col in ("task", "label"):
            if col not in table.columns:
                raise ValueError(
                    f"{name} gold: column {col!r} is missing; got {list(map(str, table.columns))}"
                )
        gold = table.set_index("task")["label"].rename("label")

    source_path = folder / _SOURCE_FILE
    source = source_path.read_text(encoding="utf-8") if source_path.is_file() else ""
    return LabelDataset(name=name, labels=labels, gold=gold, source=source, location=folder)
