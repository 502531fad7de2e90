"""Figures of a fitted label model: worker reliability, confusion matrices, posterior class
probabilities, calibration against gold, and the labels each task and worker got."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._mpl import (
    color,
    count_axis,
    count_bins,
    interval_rows,
    label_bars,
    new_figure,
    spread_axis,
    styled,
)
from .._results import confusion_array, worker_scores

__all__ = [
    "calibration",
    "class_probabilities",
    "confusion_matrices",
    "label_counts",
    "worker_reliability",
]


def _forest(ax, table: pd.DataFrame, column: str, label: str, tint: str) -> None:
    """``table[column]`` with its interval columns as a forest plot, rows bottom to top."""
    lower, upper = (
        ("lower", "upper") if column == "reliability" else (f"{column}_lower", f"{column}_upper")
    )
    bounds = [table.get(lower), table.get(upper)]
    if bounds[0] is None or bounds[1] is None:
        bounds = [None, None]
    interval_rows(ax, table[column], *bounds, tint=tint)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel(label)
    ax.grid(axis="x", alpha=0.3)


@styled
def worker_reliability(model, *, max_workers: int = 40):
    """Each worker's reliability with its credible interval, sorted, with label counts.

    Left: the ``max_workers`` workers with the most labels, sorted by reliability (the
    probability that their label is right, ``Σ_k π_k θ_kk``; for two classes the sensitivity
    and specificity instead), each with its posterior interval when the model has one and
    ``(n)`` its number of labels. Right: every worker's reliability against their number of
    labels.

    Parameters
    ----------
    model : a fitted label model
    max_workers : int
        Workers shown in the sorted panel (those with the most labels).

    Returns
    -------
    matplotlib.figure.Figure
    """
    scores = worker_scores(model)
    shown = scores.sort_values("n_labels", ascending=False, kind="stable").head(max_workers)
    binary = "sensitivity" in shown.columns and "specificity" in shown.columns
    key = (shown["sensitivity"] + shown["specificity"]) / 2 if binary else shown["reliability"]
    shown = shown.assign(_key=key).sort_values("_key", kind="stable")
    panels = ["sensitivity", "specificity"] if binary else ["reliability"]
    height = max(3.0, 0.16 * len(shown) + 1.2)
    widths = [1.0] * len(panels) + [1.3]
    figure, axes = new_figure(
        3.0 * len(panels) + 3.8, height, ncols=len(panels) + 1, width_ratios=widths
    )
    names = [f"{worker} ({n})" for worker, n in zip(shown.index, shown["n_labels"], strict=True)]
    negative, positive = (list(model.classes_) + [None, None])[:2]
    labels = {
        "sensitivity": f"P(says {positive} | true {positive})",
        "specificity": f"P(says {negative} | true {negative})",
        "reliability": "P(label is right)",
    }
    for i, column in enumerate(panels):
        ax = axes[i]
        _forest(ax, shown, column, labels[column], color(i))
        ax.set_title(column, fontsize=9)
        ax.set_yticks(np.arange(len(shown)))
        ax.set_yticklabels(names if i == 0 else [], fontsize=7)
    axes[0].set_ylabel("worker (number of labels)")
    scatter = axes[-1]
    if binary:
        y = (scores["sensitivity"] + scores["specificity"]) / 2
    else:
        y = scores["reliability"]
    scatter.scatter(
        scores["n_labels"], y, s=12, alpha=0.6, color=color(2), edgecolors="none", clip_on=False
    )
    log = spread_axis(scatter, scores["n_labels"])
    scatter.set_xlabel("labels given" + (" (log scale)" if log else ""))
    scatter.set_ylabel("balanced accuracy" if binary else "P(label is right)")
    scatter.set_ylim(-0.02, 1.02)
    scatter.grid(alpha=0.3)
    scatter.set_title(f"all {len(scores)} workers", fontsize=9)
    level = model.credible_level_
    interval = f", {level:.0%} credible intervals" if level is not None else ""
    subset = (
        f"the {len(shown)} workers with the most labels"
        if len(shown) < len(scores)
        else "every worker"
    )
    figure.suptitle(f"Worker reliability: {subset}, sorted{interval}")
    return figure


def _best_and_worst(model, n_workers: int) -> tuple[list, pd.DataFrame]:
    scores = worker_scores(model)
    enough = scores[scores["n_labels"] >= max(2, scores["n_labels"].median())]
    if enough.empty:
        enough = scores
    ordered = enough.sort_values(["reliability", "n_labels"], ascending=[False, False])
    best = list(ordered.index[:n_workers])
    worst = [w for w in ordered.index[::-1][:n_workers] if w not in best]
    return best + worst, scores


def _heatmap(ax, matrix: np.ndarray, classes: pd.Index, title: str) -> object:
    image = ax.imshow(matrix, vmin=0, vmax=1, cmap="Blues")
    k = len(classes)
    if k <= 10:
        for (i, j), value in np.ndenumerate(matrix):
            ax.text(
                j,
                i,
                f"{value:.2f}",
                ha="center",
                va="center",
                fontsize=7 if k > 5 else 8,
                color="white" if value > 0.6 else "black",
            )
    ticks = np.arange(k)
    names = [str(c) for c in classes]
    ax.set_xticks(ticks, names, rotation=45 if k > 5 else 0)
    ax.set_yticks(ticks, names)
    ax.set_xlabel("label given")
    ax.set_ylabel("true class")
    ax.set_title(title, fontsize=9)
    ax.spines[:].set_visible(False)
    return image


@styled
def confusion_matrices(model, *, n_workers: int = 2):
    """Confusion matrices: the workers' mean, and the most and least reliable workers.

    Entry (row c, column k) is P(the worker says k | the true class is c), the posterior mean.
    The first panel averages every worker's matrix weighted by their number of labels; the
    others show the ``n_workers`` most and least reliable workers among those with at least
    the median number of labels (so that a worker with two lucky labels is not "the best").

    Returns
    -------
    matplotlib.figure.Figure
    """
    workers, classes, confusion = confusion_array(model)
    chosen, scores = _best_and_worst(model, n_workers)
    counts = scores["n_labels"].reindex(workers).to_numpy(dtype=np.float64)
    weights = counts / counts.sum() if counts.sum() > 0 else np.full(len(workers), 1 / len(workers))
    panels = [("all workers (mean, weighted by labels)", np.tensordot(weights, confusion, 1))]
    position = {w: i for i, w in enumerate(workers)}
    n_best = min(n_workers, len(chosen))
    for rank, worker in enumerate(chosen):
        which = "most" if rank < n_best else "least"
        n = int(scores.loc[worker, "n_labels"])
        reliability = scores.loc[worker, "reliability"]
        title = f"{which} reliable: {worker}\n({n} labels, P(right) {reliability:.2f})"
        panels.append((title, confusion[position[worker]]))
    size = 2.2 + 0.25 * len(classes)
    figure, axes = new_figure(size * len(panels) + 0.6, size + 0.6, ncols=len(panels))
    axes = np.atleast_1d(axes)
    image = None
    for ax, (title, matrix) in zip(axes, panels, strict=True):
        image = _heatmap(ax, matrix, classes, title)
    figure.colorbar(image, ax=list(axes), shrink=0.8, label="P(label given | true class)")
    figure.suptitle("Confusion matrices (rows: true class; columns: the label given)")
    return figure


@styled
def class_probabilities(model):
    """How sure the model is of each task: the posterior probability of each task's most
    probable class, as a histogram of tasks (a linear count, stacked by the answer, each bar
    labelled with its count so that a few tasks still show at any size). A mass near 1 means
    confident answers; tasks near 1/K are coin flips.

    Returns
    -------
    matplotlib.figure.Figure
    """
    model.check_is_fitted()
    probas = model.probas_
    values = probas.to_numpy(dtype=np.float64)
    top = values.max(axis=1)
    answer = values.argmax(axis=1)
    k = values.shape[1]
    bins = np.linspace(1 / k, 1, 21)
    figure, ax = new_figure(6.4, 3.2)
    stacks = [top[answer == c] for c in range(k)]
    ax.hist(
        stacks,
        bins=bins,
        stacked=True,
        color=[color(c) for c in range(k)],
        label=[
            f"answer {c} ({len(s):,} tasks)" for c, s in zip(probas.columns, stacks, strict=True)
        ],
    )
    totals, _ = np.histogram(top, bins=bins)
    label_bars(ax, (bins[:-1] + bins[1:]) / 2, totals)
    ax.set_xlim(bins[0] - 0.01, 1.01)
    ax.set_xlabel("posterior probability of the task's answer")
    count_axis(ax, totals.max())
    ax.set_ylabel("tasks")
    ax.legend(frameon=False, loc="upper left")
    unsure = int((top < 0.9).sum())
    ax.set_title(
        f"Posterior class probabilities: {len(top):,} tasks, mean {top.mean():.3f}, "
        f"{unsure:,} below 0.9"
    )
    return figure


def calibration_table(model, gold: pd.Series, n_bins: int = 10) -> pd.DataFrame:
    """Reliability-diagram bins: tasks with gold grouped by the probability of their answer
    (equal-width bins from 1/K to 1); per bin the mean probability, the accuracy and the count.
    """
    model.check_is_fitted()
    gold = gold[gold.index.isin(model.probas_.index)]
    if gold.empty:
        raise ValueError("calibration: no gold task has a prediction")
    probas = model.probas_.reindex(gold.index)
    values = probas.to_numpy(dtype=np.float64)
    confidence = values.max(axis=1)
    answer = probas.columns[values.argmax(axis=1)]
    correct = np.asarray(answer == gold.to_numpy(), dtype=np.float64)
    k = values.shape[1]
    edges = np.linspace(1 / k, 1, n_bins + 1)
    which = np.clip(np.digitize(confidence, edges[1:-1]), 0, n_bins - 1)
    frame = pd.DataFrame({"bin": which, "confidence": confidence, "correct": correct})
    table = frame.groupby("bin").agg(
        confidence=("confidence", "mean"), accuracy=("correct", "mean"), tasks=("correct", "size")
    )
    table["low"], table["high"] = edges[table.index], edges[table.index + 1]
    return table


def expected_calibration_error(table: pd.DataFrame) -> float:
    """Σ_b (n_b / n) |accuracy_b − confidence_b| over the bins of :func:`calibration_table`."""
    weights = table["tasks"] / table["tasks"].sum()
    return float((weights * (table["accuracy"] - table["confidence"]).abs()).sum())


@styled
def calibration(model, gold: pd.Series, *, n_bins: int = 10):
    """Reliability diagram against gold: are the posterior probabilities right?

    Tasks with a gold class are grouped by the probability of their answer; each point is a
    group's mean probability against the share of its answers that are right (the point's
    area grows with the number of tasks). Points on the diagonal are well calibrated; below
    it the model is over-confident. The title gives the expected calibration error.

    Parameters
    ----------
    model : a fitted label model
    gold : Series
        True classes indexed by task id (tasks the model did not see are left out).
    n_bins : int

    Returns
    -------
    matplotlib.figure.Figure
    """
    table = calibration_table(model, gold, n_bins)
    figure, (ax, counts) = new_figure(7.0, 3.4, ncols=2, width_ratios=[1.3, 1])
    low = 1 / model.probas_.shape[1]
    ax.plot([low, 1], [low, 1], "--", color="grey", lw=1, label="perfectly calibrated")
    sizes = 20 + 280 * table["tasks"] / table["tasks"].max()
    ax.scatter(
        table["confidence"], table["accuracy"], s=sizes, color=color(0), alpha=0.8, clip_on=False
    )
    ax.plot(table["confidence"], table["accuracy"], color=color(0), lw=1)
    for _, row in table.iterrows():
        ax.annotate(
            f"{int(row['tasks'])}",
            (row["confidence"], row["accuracy"]),
            textcoords="offset points",
            xytext=(6, -10),
            fontsize=7,
            annotation_clip=False,
        )
    ax.set_xlim(low - 0.05, 1.06)
    ax.set_ylim(-0.05, 1.08)
    ax.set_xlabel("mean probability of the answer")
    ax.set_ylabel("share of answers that are right")
    ax.legend(frameon=False, loc="upper left")
    ax.grid(alpha=0.3)
    width = table["high"] - table["low"]
    counts.bar(table["low"], table["tasks"], width=width, align="edge", color=color(4))
    label_bars(counts, table["low"] + width / 2, table["tasks"].to_numpy())
    counts.set_xlim(low - 0.02, 1.02)
    count_axis(counts, table["tasks"].max())
    counts.set_xlabel("probability of the answer")
    counts.set_ylabel("gold tasks")
    ece = expected_calibration_error(table)
    figure.suptitle(
        f"Calibration on {int(table['tasks'].sum())} gold tasks: expected calibration error "
        f"{ece:.3f}"
    )
    return figure


@styled
def label_counts(labels):
    """The data: how many labels each task got and how many each worker gave (histograms of
    linear counts; the workers' numbers of labels on a log scale, as they usually span orders
    of magnitude).

    Parameters
    ----------
    labels : Labels

    Returns
    -------
    matplotlib.figure.Figure
    """
    per_task = np.bincount(labels.task_codes, minlength=labels.n_tasks)
    per_worker = np.bincount(labels.worker_codes, minlength=labels.n_workers)
    figure, (tasks, workers) = new_figure(7.6, 2.8, ncols=2)
    heights, _, _ = tasks.hist(per_task, bins=count_bins(per_task), color=color(0))
    count_axis(tasks, heights.max())
    spread_axis(tasks, per_task)
    tasks.set_xlabel("labels per task")
    tasks.set_ylabel("tasks")
    tasks.set_title(f"{labels.n_tasks:,} tasks: median {np.median(per_task):g} labels", fontsize=9)
    heights, _, _ = workers.hist(per_worker, bins=count_bins(per_worker), color=color(1))
    count_axis(workers, heights.max())
    log = spread_axis(workers, per_worker)
    workers.set_xlabel("labels per worker" + (" (log scale)" if log else ""))
    workers.set_ylabel("workers")
    workers.set_title(
        f"{labels.n_workers:,} workers: median {np.median(per_worker):g} labels", fontsize=9
    )
    figure.suptitle(f"{labels.n_labels:,} labels")
    return figure
