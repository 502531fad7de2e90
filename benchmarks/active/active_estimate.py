"""What a gold-free accuracy estimate can know: against gold, and against the full pool (issue 16).

A model's gold-free estimate (`expected_accuracy`: the mean over tasks of the posterior
probability of the chosen class) can only be as right as the model of the workers is. Where the
workers' consensus itself differs from the gold answers — every worker's label counted, the
full-pool fit still disagrees with gold on a share of the tasks while claiming near certainty —
no estimate built from the labels alone can see that share. This script separates the two:
for every label set with gold, keep 2 and 3 random labels per task, fit, and compare the
estimate with

- the accuracy against gold (on the gold tasks: issue 16's criterion), and
- the agreement with the same model fitted on the whole pool (on every task: what more labels
  would change), which the estimate *can* know;

and report, on the whole pool, the model's claim against its accuracy on gold (the share of the
gap no label subset can close).

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/active/active_estimate.py \\
        [--sets rte dog] [--seeds 3] [--models BDS HA] [--output benchmarks/active/results/x.md]
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
from crowdbayes.models.labels import BayesianDawidSkene, HierarchicalAnnotation  # noqa: E402

MODELS = {
    "BDS": lambda seed: BayesianDawidSkene(),
    "HA": lambda seed: HierarchicalAnnotation(random_state=seed),
}
STARTS = (2, 3)


def one_set(name: str, model_name: str, seeds: int) -> list[dict]:
    data = load_labels(name)
    make = MODELS[model_name]
    whole = LabelPool(data.labels, data.gold, start=10**6, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = make(0).fit(*whole.fit_args())
    rows = [
        {
            "set": name,
            "model": model_name,
            "labels per task": "all",
            "accuracy": whole.score(full),
            "estimate": whole.estimate(full),
        }
    ]
    for per_task in STARTS:
        for seed in range(seeds):
            pool = LabelPool(data.labels, data.gold, start=per_task, random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = make(seed).fit(*pool.fit_args())
            tasks = model.labels_.index
            rows.append(
                {
                    "set": name,
                    "model": model_name,
                    "labels per task": per_task,
                    "accuracy": pool.score(model),
                    "estimate": pool.estimate(model),
                    "agreement": float((model.labels_ == full.labels_.reindex(tasks)).mean()),
                    "estimate all tasks": model.expected_accuracy(),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    rows = []
    for name in args.sets:
        for model_name in args.models:
            rows += one_set(name, model_name, args.seeds)
        print(f"{name} done ({time.perf_counter() - start:.0f} s)", flush=True)
    frame = pd.DataFrame(rows)
    frame["gap to gold"] = (frame["estimate"] - frame["accuracy"]).abs()
    frame["gap to full pool"] = (frame["estimate all tasks"] - frame["agreement"]).abs()
    frame["signed gap to full pool"] = frame["estimate all tasks"] - frame["agreement"]
    sparse = frame[frame["labels per task"] != "all"]
    per_set = sparse.groupby(["set", "model"], sort=False)[
        ["gap to gold", "gap to full pool"]
    ].mean()
    per_set = per_set.unstack("model")
    per_set.columns = [f"{model}: {what}" for what, model in per_set.columns]
    overall = sparse.groupby(["model", "labels per task"])[
        ["gap to gold", "gap to full pool", "signed gap to full pool"]
    ].mean()
    whole = frame[frame["labels per task"] == "all"].set_index(["set", "model"])
    whole = whole[["accuracy", "estimate"]].unstack("model")
    whole.columns = [f"{model}: {what}" for what, model in whole.columns]
    run_time = f"- total run time {time.perf_counter() - start:.0f} s"
    lines = [
        f"{args.seeds} seeds of {', '.join(map(str, STARTS))} random labels per task; default "
        "settings. *Gap to gold*: |estimate − accuracy| on the gold tasks. *Gap to full pool*: "
        "|estimate − agreement with the same model fitted on every label| on every task.",
        "",
        "## Mean gaps over the sets",
        "",
        markdown_table(overall),
        "",
        "## Per set (mean over the sparse starts and seeds)",
        "",
        markdown_table(per_set),
        "",
        "## The whole pool: the model's claim against gold (no subset can close this gap)",
        "",
        markdown_table(whole, 3),
    ]
    title = "The gold-free accuracy estimate against gold and against the full pool"
    write_markdown_report(args.output, title, lines, [run_time], echo=True)


if __name__ == "__main__":
    main()
