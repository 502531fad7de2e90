"""How often gold goes against the crowd on the shared label sets (issue 16, gold-free estimate).

A gold-free accuracy estimate is a function of the crowd's labels only. Where gold goes against
a clear majority of the crowd, the labels look the same as where the crowd is right, so no
estimate from them can tell the two apart. For every gold task, with every label of the set:

- the share of the task's labels that give the gold class;
- "gold in the minority": that share is below one half;
- "gold ≤ 25% of ≥ 4 labels": at least four labels and at most a quarter of them give the gold
  class (three of four, or more, agree on another class);
- majority vote's accuracy (ties count one half), for scale.

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/labels/labels_gold_vs_crowd.py \\
        [--output benchmarks/labels/results/labels_gold_vs_crowd.md]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import markdown_table, resolve_data_root, write_markdown_report
from crowdbayes.datasets import load_labels

SETS = (
    "bluebird", "d_possent", "d_product", "dog", "duchenne", "rte",
    "s_adult", "s_rel", "temp", "trec", "web", "wsd",
)  # fmt: skip


def gold_against_crowd(labels: pd.DataFrame, gold: pd.Series) -> dict:
    """The statistics of the module docstring for one set."""
    labels = labels[labels["task"].isin(gold.index)]
    hit = labels["label"].to_numpy() == gold.reindex(labels["task"]).to_numpy()
    per_task = labels.assign(hit=hit).groupby("task")["hit"].agg(["mean", "size"])
    counts = labels.groupby(["task", "label"]).size().unstack(fill_value=0)
    top = counts.to_numpy().max(axis=1, keepdims=True)
    winners = counts.to_numpy() == top
    gold_column = counts.columns.get_indexer(gold.reindex(counts.index))
    gold_wins = winners[np.arange(len(counts)), gold_column]
    return {
        "gold tasks": len(per_task),
        "labels per gold task": per_task["size"].mean(),
        "majority vote accuracy": float(np.mean(gold_wins / winners.sum(axis=1))),
        "gold in the minority": float((per_task["mean"] < 0.5).mean()),
        "gold ≤ 25% of ≥ 4 labels": float(
            ((per_task["mean"] <= 0.25) & (per_task["size"] >= 4)).mean()
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    resolve_data_root()
    rows = []
    for name in args.sets:
        data = load_labels(name)
        rows.append({"set": name, **gold_against_crowd(data.labels, data.gold)})
    table = pd.DataFrame(rows).set_index("set")
    means = table.drop(columns=["gold tasks"]).mean()
    lines = [
        "Every label of each set, on its gold tasks. Gold ≤ 25% of ≥ 4 labels: at least three "
        "of every four labels of the task agree on a class other than gold.",
        "",
        markdown_table(table, 3),
        "",
        "Mean over the sets: "
        + ", ".join(f"{column} {value:.3f}" for column, value in means.items()),
        "",
    ]
    print("\n".join(lines))
    if args.output is not None:
        write_markdown_report(args.output, "Gold against the crowd on the shared label sets", lines)


if __name__ == "__main__":
    main()
