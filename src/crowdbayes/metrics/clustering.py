r"""Scores for a clustering against true classes, and for workers' links against the truth.

Every clustering metric takes ``labels_true`` and ``labels_pred``: two arrays of equal length, or
two Series matched by index (every item of ``labels_true`` must have a prediction; extra
predictions are ignored). Cluster numbers are arbitrary: all scores are invariant to relabelling.
With the contingency table :math:`n_{ij}` (N items, row sums :math:`a_i`, column sums
:math:`b_j`):

- mutual information :math:`I = \sum_{ij} \frac{n_{ij}}{N}\log\frac{N n_{ij}}{a_i b_j}`;
- NMI :math:`= I / \tfrac12(H(a) + H(b))` (arithmetic normalisation, scikit-learn's default);
- AMI :math:`= (I - \mathbb{E}I) / (\tfrac12(H(a)+H(b)) - \mathbb{E}I)` with the expectation
  under the hypergeometric model of random labellings with the same cluster sizes
  (Vinh, Epps & Bailey 2010);
- ARI (Hubert & Arabie 1985) from the pair counts :math:`\sum\binom{n_{ij}}{2}`;
- unsupervised accuracy: the share of items on the diagonal after the best one-to-one matching
  of clusters to classes (Hungarian algorithm, ``scipy.optimize.linear_sum_assignment``);
  clusters left unmatched count as errors.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = [
    "contingency_table",
    "mutual_information",
    "normalized_mutual_info",
    "adjusted_mutual_info",
    "adjusted_rand_index",
    "unsupervised_accuracy",
    "link_worker_accuracy",
    "workers_per_item",
    "links_between_items_seen_by",
    "worker_interval_coverage",
    "per_task_nmi",
    "misgrouped_items",
]


def _aligned(labels_true, labels_pred) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(labels_true, pd.Series) and isinstance(labels_pred, pd.Series):
        if labels_true.index.has_duplicates:
            raise ValueError("labels_true: item ids repeat")
        missing = ~labels_true.index.isin(labels_pred.index)
        if missing.any():
            first = list(labels_true.index[missing][:5])
            raise ValueError(
                f"labels_pred: {int(missing.sum())} item(s) of labels_true have no prediction "
                f"(first: {first})"
            )
        labels_pred = labels_pred.loc[labels_true.index]
    true, pred = np.asarray(labels_true), np.asarray(labels_pred)
    if true.ndim != 1 or pred.ndim != 1 or len(true) != len(pred):
        raise ValueError(
            f"labels_true and labels_pred must be 1-d of equal length; got shapes {true.shape} "
            f"and {pred.shape}"
        )
    if len(true) == 0:
        raise ValueError("no items to score (empty labels)")
    if pd.isna(true).any() or pd.isna(pred).any():
        raise ValueError("labels_true and labels_pred must not contain missing values")
    return true, pred


def contingency_table(labels_true, labels_pred) -> np.ndarray:
    """Counts ``n[i, j]`` of items of class ``i`` put in cluster ``j`` (classes and clusters in
    sorted order)."""
    true, pred = _aligned(labels_true, labels_pred)
    rows = pd.factorize(true, sort=True)[0]
    cols = pd.factorize(pred, sort=True)[0]
    table = np.zeros((rows.max() + 1, cols.max() + 1))
    np.add.at(table, (rows, cols), 1.0)
    return table


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def _mutual_information(table: np.ndarray) -> float:
    n = table.sum()
    a, b = table.sum(axis=1), table.sum(axis=0)
    i, j = np.nonzero(table)
    nij = table[i, j]
    return float(max((nij / n * (np.log(nij * n) - np.log(a[i] * b[j]))).sum(), 0.0))


def mutual_information(labels_true, labels_pred) -> float:
    """Mutual information (nats) between the classes and the clusters."""
    return _mutual_information(contingency_table(labels_true, labels_pred))


def normalized_mutual_info(labels_true, labels_pred) -> float:
    """NMI with the arithmetic mean of the two entropies (1 for identical partitions; 1 when
    both put every item in one group)."""
    table = contingency_table(labels_true, labels_pred)
    if table.shape == (1, 1):
        return 1.0
    normaliser = 0.5 * (_entropy(table.sum(axis=1)) + _entropy(table.sum(axis=0)))
    return _mutual_information(table) / max(normaliser, np.finfo(float).eps)


def _expected_mutual_information(table: np.ndarray) -> float:
    """E[I] over random labellings with the row and column sums of ``table`` (Vinh et al. 2010,
    Eq. 24a), summing the hypergeometric distribution of every cell."""
    from scipy.special import gammaln

    n = table.sum()
    a, b = table.sum(axis=1), table.sum(axis=0)
    total = 0.0
    log_n_fact = gammaln(n + 1)
    for ai in a:
        for bj in b:
            nij = np.arange(max(1.0, ai + bj - n), min(ai, bj) + 1)
            if nij.size == 0:
                continue
            log_p = (
                gammaln(ai + 1)
                + gammaln(bj + 1)
                + gammaln(n - ai + 1)
                + gammaln(n - bj + 1)
                - log_n_fact
                - gammaln(nij + 1)
                - gammaln(ai - nij + 1)
                - gammaln(bj - nij + 1)
                - gammaln(n - ai - bj + nij + 1)
            )
            total += float((nij / n * np.log(n * nij / (ai * bj)) * np.exp(log_p)).sum())
    return total


def adjusted_mutual_info(labels_true, labels_pred) -> float:
    """Mutual information adjusted for chance (arithmetic normalisation); 0 in expectation for
    random labellings, 1 for identical partitions."""
    table = contingency_table(labels_true, labels_pred)
    if table.shape[0] == table.shape[1] == 1 or min(table.shape) == 0:
        return 1.0
    mi = _mutual_information(table)
    emi = _expected_mutual_information(table)
    normaliser = 0.5 * (_entropy(table.sum(axis=1)) + _entropy(table.sum(axis=0)))
    denominator = normaliser - emi
    eps = np.finfo(float).eps
    denominator = min(denominator, -eps) if denominator < 0 else max(denominator, eps)
    return float((mi - emi) / denominator)


def adjusted_rand_index(labels_true, labels_pred) -> float:
    """Adjusted Rand index: pair agreement corrected for chance (1 for identical partitions)."""
    table = contingency_table(labels_true, labels_pred)
    n = table.sum()

    def pairs(x):
        return float((x * (x - 1) / 2).sum())

    within = pairs(table)
    rows, cols = pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    expected = rows * cols / (n * (n - 1) / 2) if n > 1 else 0.0
    maximum = 0.5 * (rows + cols)
    if maximum == expected:  # both partitions trivial in the same way
        return 1.0
    return float((within - expected) / (maximum - expected))


def unsupervised_accuracy(labels_true, labels_pred) -> float:
    """Share of items whose cluster is matched to their class by the best one-to-one matching
    of clusters to classes (Hungarian algorithm)."""
    from scipy.optimize import linear_sum_assignment

    table = contingency_table(labels_true, labels_pred)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / table.sum())


def link_worker_accuracy(
    links: pd.DataFrame,
    truth: pd.Series,
    *,
    worker: str = "worker",
    left: str = "left",
    right: str = "right",
    label: str = "label",
) -> pd.DataFrame:
    """Each worker's two-coin accuracy measured against the true clusters.

    ``alpha`` = share of must-links among the worker's same-cluster pairs (sensitivity),
    ``beta`` = share of cannot-links among the different-cluster pairs (specificity), with the
    pair counts ``n_same`` and ``n_different`` (NaN where a worker has no such pair).

    Parameters
    ----------
    links : DataFrame
        Columns ``worker, left, right, label`` (names configurable).
    truth : Series
        True cluster of every linked item (index: item id).
    """
    for col in (worker, left, right, label):
        if col not in links.columns:
            raise ValueError(f"links: column {col!r} is missing; got {list(links.columns)}")
    linked = pd.Index(pd.unique(np.concatenate([links[left], links[right]])))
    unknown = linked[~linked.isin(truth.index)]
    if len(unknown):
        raise ValueError(
            f"truth: {len(unknown)} linked item(s) have no true cluster "
            f"(first: {list(unknown[:5])})"
        )
    same = truth.loc[links[left]].to_numpy() == truth.loc[links[right]].to_numpy()
    must = links[label].to_numpy() == 1
    frame = pd.DataFrame({"worker": links[worker].to_numpy(), "same": same, "must": must})
    grouped = frame.groupby("worker", sort=False)
    n_same = grouped["same"].sum()
    n_diff = grouped["same"].count() - n_same
    must_same = frame[frame["same"]].groupby("worker")["must"].sum()
    cannot_diff = (~frame["must"])[~frame["same"]].groupby(frame["worker"][~frame["same"]]).sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = must_same.reindex(n_same.index, fill_value=0) / n_same.replace(0, np.nan)
        beta = cannot_diff.reindex(n_same.index, fill_value=0) / n_diff.replace(0, np.nan)
    out = pd.DataFrame(
        {
            "alpha": alpha.astype(float),
            "beta": beta.astype(float),
            "n_same": n_same.astype(np.int64),
            "n_different": n_diff.astype(np.int64),
        }
    )
    out.index.name = "worker"
    return out


def workers_per_item(
    links: pd.DataFrame, *, worker: str = "worker", left: str = "left", right: str = "right"
) -> pd.Series:
    """How many different workers judged a link touching each item (index: item id)."""
    seen = pd.concat(
        [
            pd.DataFrame({"worker": links[worker].to_numpy(), "item": links[side].to_numpy()})
            for side in (left, right)
        ]
    )
    return seen.drop_duplicates().groupby("item")["worker"].size().rename("n_workers")


def links_between_items_seen_by(
    links: pd.DataFrame,
    min_workers: int = 2,
    *,
    worker: str = "worker",
    left: str = "left",
    right: str = "right",
) -> np.ndarray:
    r"""Boolean mask of the links whose two items were each seen by at least ``min_workers``
    workers (:func:`workers_per_item`).

    With ``min_workers = 2`` these are the links on which a worker's errors can show at all: an
    item seen by one worker only fits that worker's links perfectly in the cluster of the group
    the worker put it in, so an error there looks like the item's cluster rather than the
    worker's (the identifiability note of :mod:`crowdbayes.models.clustering.link_clustering`).
    Both items must pass, since the judgment is about the pair. Seen by two workers, an item's
    cluster is still one worker's word against the other's unless the rest of the links pin
    the clusters of both groups.
    """
    counts = workers_per_item(links, worker=worker, left=left, right=right)
    seen = counts >= min_workers
    return seen.loc[links[left]].to_numpy() & seen.loc[links[right]].to_numpy()


def worker_interval_coverage(measured: pd.DataFrame, intervals: pd.DataFrame) -> pd.DataFrame:
    """Per worker: whether the measured ``alpha`` and ``beta`` (e.g. from
    :func:`link_worker_accuracy`) lie in the intervals ``alpha_lower`` … ``beta_upper`` (e.g.
    from :meth:`~crowdbayes.models.clustering.LinkClustering.worker_posterior`), ends included
    up to rounding (1e-12). Rows follow ``measured``; a worker with nothing measured (NaN) or
    no interval counts as not covered."""
    intervals = intervals.reindex(measured.index)
    return pd.DataFrame(
        {
            name: (measured[name] >= intervals[f"{name}_lower"] - 1e-12)
            & (measured[name] <= intervals[f"{name}_upper"] + 1e-12)
            for name in ("alpha", "beta")
        }
    )


def per_task_nmi(groupings: pd.Series, truth: pd.Series, assignments: pd.Series) -> pd.DataFrame:
    """Within each annotation task, the NMI with the true clusters of the worker's own grouping
    (``worker``) and of the inferred clusters (``inferred``), over the task's items.

    Parameters
    ----------
    groupings : Series indexed by ``(task, item)``
        Each worker's group numbers per task
        (:func:`crowdbayes.datasets.clustering.task_groupings`).
    truth, assignments : Series indexed by item
        True clusters and a model's clusters (e.g. ``model.assignments_``).

    Returns
    -------
    DataFrame indexed by task with columns ``worker`` and ``inferred``.
    """
    rows = {}
    for task, groups in groupings.groupby(level=0, sort=True):
        items = groups.index.get_level_values(-1)
        digits = truth.loc[items].to_numpy()
        rows[task] = (
            normalized_mutual_info(digits, groups.to_numpy()),
            normalized_mutual_info(digits, assignments.loc[items].to_numpy()),
        )
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["worker", "inferred"])
    out.index.name = groupings.index.names[0]
    return out


def misgrouped_items(groupings: pd.Series, truth: pd.Series) -> pd.Series:
    """Within each annotation task, whether the worker's grouping puts an item wrongly: in a
    group where most items are of another true cluster, or apart from the group holding most
    items of its own cluster (ties go to the first in order of appearance).

    A misplaced item is flagged, the group it joined is not; of two true clusters merged into
    one group, the items of the smaller are flagged.

    Parameters
    ----------
    groupings : Series indexed by ``(task, item)``
        Each worker's group numbers per task
        (:func:`crowdbayes.datasets.clustering.task_groupings`).
    truth : Series indexed by item
        The true clusters.

    Returns
    -------
    Series of bool indexed like ``groupings``.
    """
    parts = []
    for _, groups in groupings.groupby(level=0, sort=False):
        codes = pd.Series(groups.to_numpy())
        clusters = pd.Series(truth.loc[groups.index.get_level_values(-1)].to_numpy())
        table = pd.crosstab(codes, clusters)
        group_cluster = table.idxmax(axis=1).loc[codes].to_numpy()
        cluster_group = table.idxmax(axis=0).loc[clusters].to_numpy()
        wrong = (group_cluster != clusters.to_numpy()) | (cluster_group != codes.to_numpy())
        parts.append(pd.Series(wrong, index=groups.index, name="misgrouped"))
    return pd.concat(parts).reindex(groupings.index)
