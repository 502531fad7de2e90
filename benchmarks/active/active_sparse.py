"""Label models on sparse starts, and how honest their gold-free accuracy estimate is (issue 16).

For every label set with gold and every label model: keep 1, 2, 3 random labels per task (or
all of them), fit, and report the accuracy on the gold tasks against the model's own gold-free
estimate of it (`expected_accuracy`: the mean over those tasks of the posterior probability of
the chosen class), with majority vote as the yardstick. Issue 16 asks that every model be at
least as accurate as majority vote (minus 0.005) at one and two labels per task, and that the
estimate be within 0.02 of the accuracy from two labels per task on.

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/active/active_sparse.py \\
        [--sets rte dog] [--seeds 3] [--hierarchical] [--output benchmarks/active/results/x.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from active_labels import SETS  # noqa: E402

from _common import markdown_table, write_markdown_report  # noqa: E402
from crowdbayes.active import LabelPool  # noqa: E402
from crowdbayes.datasets import load_labels  # noqa: E402
from crowdbayes.models.labels import (  # noqa: E402
    GLAD,
    MACE,
    MMSR,
    BayesianDawidSkene,
    CommunityDawidSkene,
    DawidSkene,
    HierarchicalAnnotation,
    MajorityVote,
    Wawa,
    ZeroBasedSkill,
)


def models(hierarchical: bool) -> dict:
    chosen = {
        "MV": lambda seed: MajorityVote(random_state=seed),
        "DS": lambda seed: DawidSkene(),
        "BDS": lambda seed: BayesianDawidSkene(),
        "BDS-auto": lambda seed: BayesianDawidSkene(prior_prevalence="auto"),
        "BDS-100": lambda seed: BayesianDawidSkene(prior_prevalence=100.0),
        "CDS": lambda seed: CommunityDawidSkene(),
        "GLAD": lambda seed: GLAD(),
        "MACE": lambda seed: MACE(),
        "MACE-VB": lambda seed: MACE(variational=True),
        "MMSR": lambda seed: MMSR(),
        "Wawa": lambda seed: Wawa(),
        "ZBS": lambda seed: ZeroBasedSkill(),
    }
    if hierarchical:
        chosen["HA"] = lambda seed: HierarchicalAnnotation(random_state=seed)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--hierarchical", action="store_true", help="also HierarchicalAnnotation")
    parser.add_argument(
        "--only", nargs="*", help="these models only (names as in the tables; MV is always run)"
    )
    parser.add_argument(
        "--starts", nargs="*", default=["1", "2", "3", "all"], help="labels kept per task"
    )
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    starts = [None if value == "all" else int(value) for value in args.starts]
    chosen = models(args.hierarchical)
    if args.only:
        chosen = {k: v for k, v in chosen.items() if k == "MV" or k in args.only}
    rows = []
    for name in args.sets:
        data = load_labels(name)
        for per_task in starts:
            for seed in range(args.seeds):
                keep = per_task or 10**6
                pool = LabelPool(data.labels, data.gold, start=keep, random_state=seed)
                (labels,) = pool.fit_args()
                for model_name, make in chosen.items():
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model = make(seed).fit(labels)
                    rows.append(
                        {
                            "set": name,
                            "labels per task": per_task or "all",
                            "model": model_name,
                            "accuracy": pool.score(model),
                            "estimate": pool.estimate(model),
                        }
                    )
        print(f"{name} done ({time.perf_counter() - start:.0f} s)", flush=True)
    frame = pd.DataFrame(rows)
    mean = frame.groupby(["set", "labels per task", "model"], sort=False).mean().reset_index()
    accuracy = mean.pivot_table(
        index=["set", "labels per task"], columns="model", values="accuracy", sort=False
    )
    estimate = mean.pivot_table(
        index=["set", "labels per task"], columns="model", values="estimate", sort=False
    )
    below_mv = accuracy.drop(columns="MV").lt(accuracy["MV"] - 0.005, axis=0)
    gap = (estimate - accuracy).abs()
    sparse = below_mv[below_mv.index.get_level_values(1).isin([1, 2])]
    run_time = f"- total run time {time.perf_counter() - start:.0f} s"
    lines = [
        f"Mean over {args.seeds} seeds (random labels kept per task). Default settings.",
        "",
        "## Accuracy on the gold tasks",
        "",
        markdown_table(accuracy, 3),
        "",
        f"Cases (set, labels per task ≤ 2, model) more than 0.005 below majority vote: "
        f"{int(sparse.to_numpy().sum())} of {sparse.size}.",
        "",
        "## Gold-free estimate (mean posterior probability of the answer)",
        "",
        markdown_table(estimate, 3),
        "",
        "## |estimate − accuracy|",
        "",
        markdown_table(gap, 3),
        "",
        "Mean |estimate − accuracy| from two labels per task on, by model: "
        + ", ".join(
            f"{m} {gap[m][gap.index.get_level_values(1) != 1].mean():.3f}" for m in gap.columns
        ),
    ]
    title = "Label models on sparse starts, and their gold-free accuracy estimate"
    write_markdown_report(args.output, title, lines, [run_time], echo=True)


if __name__ == "__main__":
    main()
