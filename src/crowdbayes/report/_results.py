"""Tables the figures and the report share, read from a fitted model's public attributes only
(no matplotlib here)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import entr
from scipy.stats import norm

__all__ = [
    "convergence_traces",
    "item_scores",
    "rhat_values",
    "task_uncertainty",
    "worker_scores",
]


def _fitted(model, family: str | tuple[str, ...], what: str) -> None:
    model.check_is_fitted()
    families = (family,) if isinstance(family, str) else family
    if model.family not in families:
        raise ValueError(
            f"{what} needs a model of the {' or '.join(families)} family; got "
            f"{type(model).__name__} ({model.family})"
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
    for end in ("lower", "upper"):
        bound = getattr(model, f"confusion_{end}_", None)
        if bound is not None:
            values = bound.reindex(columns=classes).to_numpy(dtype=np.float64)
            values = values.reshape(len(workers), len(classes), len(classes))
            table[end] = np.diagonal(values, axis1=1, axis2=2) @ prevalence
    for name in ("sensitivity", "specificity"):
        summary = getattr(model, f"{name}_", None)
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
def item_scores(model, data=None, *, level: float = 0.9) -> pd.DataFrame:
    """Each item's score (Plackett–Luce log-score or GP utility): posterior ``mean``, ``sd``
    and the central ``level`` interval ``lower``/``upper`` (Gaussian), best first.

    For a Plackett–Luce model with features the scores ``xᵢᵀθ`` of the items of ``data`` (the
    fitted :class:`~crowdbayes.Rankings`) come from ``coef_`` and ``coef_cov_``, one item at a
    time (the joint covariance of many items is never built).
    """
    _fitted(model, ("plackett_luce", "gp_preference"), "item scores")
    if model.family == "plackett_luce":
        coef = getattr(model, "coef_", None)
        X = getattr(data, "X", None)
        if coef is not None and X is not None:
            names = list(data.features.names)
            theta = coef.reindex(names).to_numpy(dtype=np.float64)
            cov = model.coef_cov_.reindex(index=names, columns=names).to_numpy(dtype=np.float64)
            mean = X @ theta
            sd = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", X, cov, X), 0.0))
            table = pd.DataFrame({"mean": mean, "sd": sd}, index=pd.Index(data.item_ids))
        else:
            table = model.score()[["mean", "sd"]]
    else:
        table = model.utility_[["mean", "sd"]]
    z = norm.ppf(0.5 + level / 2)
    table = table.assign(
        lower=table["mean"] - z * table["sd"], upper=table["mean"] + z * table["sd"]
    )
    table.index.name = "item"
    return table.sort_values("mean", ascending=False, kind="stable")


# ------------------------------------------------------------------------------ convergence
#: objective histories, in order of preference (the first one found is shown)
_OBJECTIVES = (
    ("elbo_history_", "ELBO"),
    ("log_posterior_history_", "log posterior"),
    ("objective_history_", "objective"),
    ("bound_history_", "lower bound"),
    ("history_", "objective"),
    ("change_history_", "largest change per iteration"),
)


def convergence_traces(model) -> list[tuple[str, str, np.ndarray]]:
    """``(name, label, values)`` of the traces a model keeps: its objective per iteration
    (1-D) and per-chain traces (2-D: chains × draws)."""
    model.check_is_fitted()
    traces = []
    if model.family == "communities":
        history = getattr(model, "history_", None)
        if history:
            length = min(len(chain) for chain in history)
            values = np.array([np.asarray(chain[:length], dtype=np.float64) for chain in history])
            traces.append(("history_", "communities per sweep (each chain)", values))
        return traces
    for name, label in _OBJECTIVES:
        values = getattr(model, name, None)
        if values is None:
            continue
        values = np.asarray(values, dtype=np.float64)
        if values.ndim == 1 and values.size >= 2 and np.isfinite(values).any():
            traces.append((name, label, values))
            break
    chains = getattr(model, "log_likelihood_trace_", None)
    if chains is not None:
        traces.append(("log_likelihood_trace_", "log-likelihood (each chain)", np.asarray(chains)))
    return traces


def rhat_values(model) -> pd.Series:
    """Every finite R-hat the model reports, by quantity: its diagnostics tables
    (``diagnostics_``, ``summary_``), per-parameter R-hat tables (``confusion_rhat_``,
    ``probas_rhat_``) and ``rhat_n_communities_``."""
    model.check_is_fitted()
    parts = []
    for name in ("diagnostics_", "summary_"):
        table = getattr(model, name, None)
        if isinstance(table, pd.DataFrame) and "rhat" in table.columns:
            parts.append(table["rhat"].astype(np.float64).rename(index=str))
    for name in ("confusion_rhat_", "probas_rhat_"):
        table = getattr(model, name, None)
        if isinstance(table, pd.DataFrame):
            values = table.to_numpy(dtype=np.float64).ravel()
            parts.append(pd.Series(values, index=[f"{name[:-1]}[{i}]" for i in range(len(values))]))
    value = getattr(model, "rhat_n_communities_", None)
    if value is not None:
        parts.append(pd.Series([float(value)], index=["number of communities"]))
    if not parts:
        return pd.Series([], dtype=np.float64)
    values = pd.concat(parts)
    return values[np.isfinite(values.to_numpy())]
