"""Tables the figures and the report share, read from a fitted model's public attributes only
(no matplotlib here)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import entr, ndtri

__all__ = [
    "convergence_traces",
    "item_scores",
    "task_uncertainty",
    "worker_scores",
]


def _fitted(model, judgment: str | tuple[str, ...], what: str) -> None:
    """Refuse a model not fitted, or one of another kind of judgment (its tags)."""
    model.check_is_fitted()
    kinds = (judgment,) if isinstance(judgment, str) else judgment
    if model.tags.judgment not in kinds:
        raise ValueError(
            f"{what} needs a model of {' or '.join(kinds)}; got {type(model).__name__} "
            f"(judgment {model.tags.judgment!r})"
        )


# ------------------------------------------------------------------------------ labels
def confusion_array(model) -> tuple[pd.Index, pd.Index, np.ndarray]:
    """Workers, classes and the (workers, true, observed) posterior-mean confusion array."""
    classes = pd.Index(model.classes_)
    k = len(classes)
    frame = model.confusion_.reindex(columns=classes)
    workers = pd.Index(frame.index.get_level_values(0)[::k], name="worker")
    return workers, classes, frame.to_numpy(dtype=np.float64).reshape(len(workers), k, k)


def worker_scores(model) -> pd.DataFrame:
    """Each worker's reliability under a fitted label model.

    ``reliability`` is the probability that the worker's label is right, ``Σ_k π_k θ_kk`` (π
    the estimated prevalence, θ the worker's confusion matrix, posterior mean); with posterior
    intervals of the confusion entries, ``lower``/``upper`` weight their ends the same way (an
    approximate interval). Binary tasks add ``sensitivity`` and ``specificity`` with their
    intervals when the model gives them. ``n_labels`` counts the worker's labels.
    """
    _fitted(model, "labels", "worker reliability")
    workers, classes, confusion = confusion_array(model)
    prevalence = model.prevalence_.reindex(classes).to_numpy(dtype=np.float64)
    table = pd.DataFrame(index=workers)
    table["n_labels"] = model.worker_label_counts_.reindex(workers).fillna(0).astype(np.int64)
    diagonal = np.diagonal(confusion, axis1=1, axis2=2)
    table["reliability"] = diagonal @ prevalence
    for end, bound in (("lower", model.confusion_lower_), ("upper", model.confusion_upper_)):
        if bound is not None:
            values = bound.reindex(columns=classes).to_numpy(dtype=np.float64)
            values = values.reshape(len(workers), len(classes), len(classes))
            table[end] = np.diagonal(values, axis1=1, axis2=2) @ prevalence
    for name, summary in (("sensitivity", model.sensitivity_), ("specificity", model.specificity_)):
        if summary is None:
            continue
        summary = summary.reindex(workers)
        table[name] = summary["mean"].to_numpy()
        for end in ("lower", "upper"):
            if end in summary.columns:
                table[f"{name}_{end}"] = summary[end].to_numpy()
    return table


def task_uncertainty(model, labels=None, n: int | None = None) -> pd.DataFrame:
    """Every task's answer, its probability and the posterior entropy (nats), most uncertain
    first (the ``n`` most uncertain with ``n``); with ``labels`` (the fitted
    :class:`~crowdbayes.Labels`) also the task's votes."""
    _fitted(model, "labels", "task uncertainty")
    probas = model.probas_
    values = probas.to_numpy(dtype=np.float64)
    table = pd.DataFrame(
        {
            "answer": model.labels_.reindex(probas.index).to_numpy(),
            "probability": values.max(axis=1),
            "entropy": entr(values).sum(axis=1),
        },
        index=pd.Index(probas.index, name="task"),
    )
    table = table.sort_values(["entropy", "probability"], ascending=[False, True], kind="stable")
    if n is not None:
        table = table.head(n)
    if labels is not None:
        positions = labels.tasks.get_indexer(table.index)
        votes = labels.vote_counts()[:, np.maximum(positions, 0)].astype(np.int64)
        table["votes"] = [
            ", ".join(f"{c}: {v}" for c, v in zip(labels.classes, column, strict=True) if v)
            if position >= 0
            else ""
            for column, position in zip(votes.T, positions, strict=True)
        ]
    return table


# ------------------------------------------------------------------------------ items
def item_scores(model, *, level: float = 0.9) -> pd.DataFrame:
    """Each fitted item's score (Plackett–Luce log-score or utility): posterior ``mean``,
    ``sd`` and the central ``level`` interval ``lower``/``upper`` (Gaussian), best first
    (:meth:`~crowdbayes.roles.ItemScorer.predict_utility`)."""
    _fitted(model, ("rankings", "pairs"), "item scores")
    table = model.predict_utility()[["mean", "sd"]]
    z = ndtri(0.5 + level / 2)  # the normal quantile (scipy.stats takes a second to import)
    table = table.assign(
        lower=table["mean"] - z * table["sd"], upper=table["mean"] + z * table["sd"]
    )
    table.index.name = "item"
    return table.sort_values("mean", ascending=False, kind="stable")


# ------------------------------------------------------------------------------ convergence
def convergence_traces(model) -> list[tuple[str, str, np.ndarray]]:
    """``(name, label, values)`` of the traces shown: the model's monitored objective (its
    first 1-D trace with two or more finite values) and its per-chain traces (2-D: chains ×
    draws), from :meth:`~crowdbayes.base.Estimator.convergence_traces`."""
    objective, chains = [], []
    for name, label, values in model.convergence_traces():
        if values.ndim == 2:
            chains.append((name, label, values))
        elif not objective and values.size >= 2 and np.isfinite(values).any():
            objective.append((name, label, values))
    return objective + chains
