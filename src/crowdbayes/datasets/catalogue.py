"""Every data set crowdbayes can load, of every kind of judgment: the bundled samples
(:mod:`.samples`), the label sets under ``CROWDBAYES_DATA/labels`` (:mod:`.loaders`), and the
preference and clustering sets under ``CROWDBAYES_DATA/prefs`` and ``CROWDBAYES_DATA/clustering``
(:mod:`.prefs`, :mod:`.clustering`). ``crowdbayes datasets list`` prints :func:`list_all`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .loaders import data_root, list_datasets
from .samples import SAMPLES, sample_path

__all__ = ["SHARED_SETS", "SharedSet", "list_all"]

_COLUMNS = ["name", "kind", "size", "load", "bundled", "location"]


@dataclass(frozen=True)
class SharedSet:
    """A preference or clustering set read from ``CROWDBAYES_DATA/<folder>/<name>/`` by a
    loader of this package; ``size`` describes the files as distributed (the loader's
    docstring has the details, a slow test checks the counts)."""

    name: str
    folder: str
    kind: str
    size: str
    load: str


SHARED_SETS = (
    SharedSet(
        "car_choice",
        "prefs",
        "rankings",
        "4,654 stated choices among 6 cars, 17 item features (McFadden & Train 2000)",
        "load_car_choice()",
    ),
    SharedSet(
        "ukpconvarg1",
        "prefs",
        "comparisons",
        "1,052 arguments in 32 folds: 11,650 strict pairs, 16,927 crowd pairs (Habernal 2016)",
        "load_ukpconvarg('strict')",
    ),
    SharedSet(
        "semicrowd_mnist",
        "clustering",
        "links",
        "57,330 links on 2,759 MNIST images by 48 workers (Luo et al. 2018)",
        "load_semicrowd_mnist()",
    ),
    SharedSet(
        "mnist",
        "clustering",
        "images",
        "10,000 MNIST test images and labels (features for links)",
        "load_mnist_test()",
    ),
    SharedSet(
        "cmu_faces_32x30",
        "clustering",
        "images",
        "624 CMU face images, 32x30, by person and pose (features for links)",
        "load_cmu_faces()",
    ),
)


def _label_size(row) -> str:
    gold = f", gold for {row.gold_tasks}" if row.gold_tasks else ""
    return (
        f"{row.n_labels:,} labels, {row.n_tasks:,} tasks, {row.n_workers} workers, "
        f"{row.n_classes} classes{gold}"
    )


#: the kinds in the order of the listing
_KINDS = ("labels", "grades", "numbers", "rankings", "comparisons", "links", "images")
_COUNTED = {"task": "tasks", "query": "queries", "item": "items", "worker": "workers"}


def _sample_size(name: str) -> str:
    """Rows, and distinct tasks, queries, items (of pairs: left and right) and workers."""
    table = pd.read_csv(sample_path(name), dtype=str)
    if {"left", "right"} <= set(table.columns):
        table["item"] = table["left"]
        table = pd.concat([table, table.assign(item=table["right"])])
        rows = len(table) // 2
    else:
        rows = len(table)
    counts = [f"{table[c].nunique()} {word}" for c, word in _COUNTED.items() if c in table]
    return ", ".join([f"{rows:,} rows", *counts])


def list_all() -> pd.DataFrame:
    """One row per data set that can be loaded now: every bundled sample, and every set found
    under ``CROWDBAYES_DATA``.

    Returns
    -------
    DataFrame
        Columns ``name, kind, size, load, bundled, location``: ``kind`` is the kind of judgment
        (labels, grades, numbers, rankings, comparisons, links, images); ``load`` how to get it
        (``--dataset NAME`` for label sets, ``crowdbayes datasets copy NAME`` for the other
        samples, the Python loader of ``crowdbayes.datasets`` for the shared sets).
    """
    rows = []
    labels = list_datasets()
    for row in labels.itertuples():
        sample = SAMPLES.get(row.name) if row.bundled else None
        kind = "labels" if sample is None else sample.kind
        load = f"--dataset {row.name}" + (" --ordered" if kind == "grades" else "")
        rows.append((row.name, kind, _label_size(row), load, row.bundled, row.location))
    for sample in SAMPLES.values():
        if sample.name in set(labels["name"]):
            continue
        size = _sample_size(sample.name)
        load = f"crowdbayes datasets copy {sample.name}"
        rows.append((sample.name, sample.kind, size, load, True, str(sample_path(sample.name))))
    root = data_root()
    if root is not None:
        for shared in SHARED_SETS:
            folder = root / shared.folder / shared.name
            if folder.is_dir():
                rows.append(
                    (shared.name, shared.kind, shared.size, shared.load, False, str(folder))
                )
    table = pd.DataFrame(rows, columns=_COLUMNS).astype({"bundled": bool})
    order = table["kind"].map(_KINDS.index)
    return table.iloc[order.argsort(kind="stable")].reset_index(drop=True)
