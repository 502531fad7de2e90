"""Adaptive collection of class labels replayed on the shared label sets (issue 16).

For every label set with gold: start from one random label per task, then rounds of a batch of
5% of the tasks; each round a strategy picks tasks, the replay reveals an unused real label of
each picked task (`crowdbayes.active.LabelPool`), and the model is refitted warm
(`fit(labels, init=model)`), with a cold fit kept instead when its objective is higher, every
time the labels have grown by 25% (`crowdbayes.active.WarmRefit`); up to the whole pool.
Strategies: the model's own (`auto`, `information`, `accuracy`, `uncertainty`) and the pool
baselines `round_robin` (the tasks with fewest labels) and `random`; `<strategy>+workers` lets
the model choose the worker as well, among those whose label of the task is still held back
(the replay then reveals that worker's label; `uncertainty` does not depend on the worker).
Per set, mean over seeds of: the area under the accuracy–budget curve (accuracy averaged over
a grid of budgets from the start to the whole pool, budget as a fraction of the pool), the
labels needed to reach round-robin's full-pool accuracy minus 0.005, and the gap between the
model's gold-free accuracy estimate and the accuracy against gold. With ``--reference
full-pool`` the accuracy is measured against the same model fitted on every label of the set
instead, on every task: what the strategies can aim at where gold and the crowd disagree.

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/active/active_labels.py \\
        [--sets rte temp] [--seeds 5] [--model bayes-ds] [--output benchmarks/active/results/x.md]

Writes a markdown report (and a PNG of the curves next to it) when ``--output`` is given.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import markdown_table, write_markdown_report  # noqa: E402
from crowdbayes.active import LabelPool, WarmRefit, simulate  # noqa: E402
from crowdbayes.datasets import load_labels  # noqa: E402
from crowdbayes.models.labels import (  # noqa: E402
    BayesianDawidSkene,
    CommunityDawidSkene,
    DawidSkene,
)

SETS = (
    "bluebird", "d_possent", "d_product", "dog", "duchenne", "rte",
    "s_adult", "s_rel", "temp", "trec", "web", "wsd",
)  # fmt: skip
STRATEGIES = ("auto+workers", "auto", "accuracy", "uncertainty", "round_robin", "random")
MODELS = {
    "bayes-ds": BayesianDawidSkene,
    # the refit rule of CommunityDawidSkene's prevalence prior, a candidate default (issue 16)
    "bayes-ds-auto": lambda: BayesianDawidSkene(prior_prevalence="auto"),
    "ds": DawidSkene,
    "community-ds": CommunityDawidSkene,
}
GRID = np.linspace(0.0, 1.0, 41)


def reference_answers(name: str, args) -> pd.Series:
    """What accuracy is measured against: the gold labels, or (``--reference full-pool``) the
    answers of the same model fitted on every label of the set, on every task."""
    data = load_labels(name)
    if args.reference == "gold":
        return data.gold
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MODELS[args.model]().fit(data.labels).labels_


def run(name: str, strategy: str, seed: int, args, reference: pd.Series) -> pd.DataFrame:
    data = load_labels(name)
    pool = LabelPool(data.labels, reference, start=1, random_state=seed)
    batch = max(1, int(round(args.batch * pool.observed()["task"].nunique())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = simulate(
            MODELS[args.model](),
            pool,
            batch=batch,
            strategy=strategy.removesuffix("+workers"),
            worker_aware=strategy.endswith("+workers"),
            refit=WarmRefit(args.restart_growth),
            random_state=seed,
        )
    total = len(data.labels)
    start = record["n_answers"].iloc[0]
    record["budget"] = (record["n_answers"] - start) / (total - start)
    return record.assign(set=name, strategy=strategy, seed=seed, total=total)


def on_grid(record: pd.DataFrame, column: str) -> np.ndarray:
    """The curve at the budgets of ``GRID`` (the last value carried forward)."""
    budgets = record["budget"].to_numpy()
    values = record[column].to_numpy()
    index = np.searchsorted(budgets, GRID, side="right") - 1
    return values[np.clip(index, 0, len(values) - 1)]


def summarise(records: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (name, strategy), group in records.groupby(["set", "strategy"], sort=False):
        curves = np.array([on_grid(g, "accuracy") for _, g in group.groupby("seed")])
        estimates = np.array([on_grid(g, "estimated_accuracy") for _, g in group.groupby("seed")])
        rows.append(
            {
                "set": name,
                "strategy": strategy,
                "auc": curves.mean(),
                "seed_auc": tuple(curves.mean(axis=1)),  # in seed order
                "final": curves[:, -1].mean(),
                "estimate_gap": np.abs(estimates - curves).mean(),
                "curve": curves.mean(axis=0),
                "estimate": estimates.mean(axis=0),
            }
        )
    table = pd.DataFrame(rows)
    target = table[table["strategy"] == "round_robin"].set_index("set")["final"] - 0.005
    start = records.groupby("set")["n_answers"].min() / records.groupby("set")["total"].first()
    table["to_target"] = [
        _share_of_labels(row["curve"], target.get(row["set"], np.nan), start[row["set"]])
        for _, row in table.iterrows()
    ]
    return table


def _share_of_labels(curve: np.ndarray, target: float, start: float) -> float:
    """The share of all the set's labels seen when ``curve`` first reaches ``target``."""
    reached = np.flatnonzero(curve >= target)
    return float(start + (1 - start) * GRID[reached[0]]) if reached.size else np.nan


def comparisons(auc: pd.DataFrame, seed_auc: pd.DataFrame) -> list[str]:
    """How the first strategy's areas compare with every other's, set by set, and on how many
    seeds of each set (the same starting labels for every strategy)."""
    first, lines = auc.columns[0], []
    for other in auc.columns[1:]:
        gap = auc[first] - auc[other]
        below = ", ".join(f"{name} {value:+.4f}" for name, value in gap[gap <= 0].items())
        seeds = {
            name: int((np.array(seed_auc.at[name, first]) > seed_auc.at[name, other]).sum())
            for name in auc.index
        }
        lines.append(
            f"- {first} above {other} on {int((gap > 0).sum())} of {len(gap)} sets, by "
            f"{gap.mean():+.4f} on average"
            + (f" (not above: {below})" if below else "")
            + "; seeds above, per set: "
            + ", ".join(f"{name} {n}/{len(seed_auc.at[name, first])}" for name, n in seeds.items())
        )
    return lines


def pivot(table: pd.DataFrame, column: str, strategies) -> pd.DataFrame:
    """Sets × strategies of one summary column."""
    return table.pivot(index="set", columns="strategy", values=column)[list(strategies)]


def plot(table: pd.DataFrame, path: Path, ylabel: str = "accuracy on gold") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(table["set"]))
    columns = min(4, len(sets))
    rows = int(np.ceil(len(sets) / columns))
    fig, axes = plt.subplots(
        rows, columns, figsize=(max(4 * columns, 8), 3.2 * rows), squeeze=False
    )
    for ax, name in zip(axes.ravel(), sets, strict=False):
        for _, row in table[table["set"] == name].iterrows():
            ax.plot(GRID, row["curve"], label=row["strategy"])
        ax.set_title(name)
        ax.set_xlabel("share of the label pool used")
        ax.set_ylabel(ylabel)
    for ax in axes.ravel()[len(sets) :]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Adaptive collection: accuracy against budget (mean over seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--strategies", nargs="*", default=list(STRATEGIES))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--batch", type=float, default=0.05, help="share of the tasks per round")
    parser.add_argument("--model", choices=list(MODELS), default="bayes-ds")
    parser.add_argument(
        "--restart-growth",
        type=float,
        default=0.25,
        help="cold refit (kept if its objective is higher) when the labels grew by this share "
        "since the last one (crowdbayes.active.WarmRefit); 0: never",
    )
    parser.add_argument("--jobs", type=int, default=2, help="replays run in parallel")
    parser.add_argument(
        "--reference",
        choices=["gold", "full-pool"],
        default="gold",
        help="accuracy against gold, or against the model's answers from every label of the "
        "set on every task (what more labels would say)",
    )
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    args.restart_growth = args.restart_growth or None
    start = time.perf_counter()
    jobs = [
        (name, strategy, seed)
        for name in args.sets
        for strategy in args.strategies
        for seed in range(args.seeds)
    ]
    references = {name: reference_answers(name, args) for name in args.sets}
    with ProcessPoolExecutor(args.jobs) as executor:
        futures = {executor.submit(run, *job, args, references[job[0]]): job for job in jobs}
        for future in as_completed(futures):
            job = " ".join(map(str, futures[future]))
            print(f"{job} done ({time.perf_counter() - start:.0f} s)", flush=True)
    records = [future.result() for future in futures]
    table = summarise(pd.concat(records, ignore_index=True))
    auc = pivot(table, "auc", args.strategies)
    run_time = f"- total run time {time.perf_counter() - start:.0f} s"
    lines = [
        f"Model `{args.model}`, warm refits (cold refit kept if better every "
        f"{args.restart_growth or 0:.0%} growth; 0%: never); start one random label per task; "
        f"rounds of {args.batch:.0%} of the tasks; {args.seeds} seeds; budget = share of the "
        "label pool used after the start."
        + (
            " Accuracy is agreement with the answers of the same model fitted on every label "
            "of the set, on every task (not gold)."
            if args.reference == "full-pool"
            else ""
        ),
        "",
        "## Area under the accuracy–budget curve",
        "",
        markdown_table(auc),
        "",
        f"mean: {', '.join(f'{s} {auc[s].mean():.4f}' for s in auc.columns)}",
        "",
        *comparisons(auc, pivot(table, "seed_auc", args.strategies)),
        "",
        "## Share of all labels seen when reaching round-robin's full-pool accuracy − 0.005",
        "",
        markdown_table(pivot(table, "to_target", args.strategies), 3),
        "",
        "## Gold-free accuracy estimate: mean |estimate − accuracy| over the budgets",
        "",
        markdown_table(pivot(table, "estimate_gap", args.strategies)),
    ]
    title = "Adaptive collection of class labels: replay on the shared label sets"
    write_markdown_report(args.output, title, lines, [run_time], echo=True)
    if args.output is not None:
        ylabel = "accuracy on gold" if args.reference == "gold" else "agreement with full pool"
        plot(table, args.output.with_suffix(".png"), ylabel)


if __name__ == "__main__":
    main()
