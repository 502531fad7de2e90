"""Where an adaptive replay's answers differ from the full pool's, and why (issue 16, DUCHENNE).

On DUCHENNE the default strategy's area under the accuracy–budget curve is below round-robin's
against gold (`benchmarks/active/results/active_labels_workers.md`), though above it against the
answers of the full pool. This script replays a set with each strategy as
`benchmarks/active/active_labels.py` does (one random label per task at the start, rounds of 5%
of the tasks, warm refits of `BayesianDawidSkene` with a cold fit kept when better every 25%
growth) and stops at several budgets. At each it compares the replay's answers on the gold tasks
with those of the same model fitted on every label of the set:

- the gold tasks whose answer differs from the full pool's, split by which of the two is right;
- of those, how many have had *every* label of the pool revealed already (no question can
  change their labels any more: only the model's worker estimates can move their answer);
- the labels seen per gold task and per task;
- the fitted workers' label-weighted mean confusion (for a binary set, the specificity and the
  sensitivity) and the prevalence of the second class, against the full pool's.

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/active/active_labels_flips.py \\
        [--set duchenne] [--seeds 5] [--output benchmarks/active/results/x.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import markdown_table, write_markdown_report  # noqa: E402
from crowdbayes.active import LabelPool, WarmRefit, simulate  # noqa: E402
from crowdbayes.datasets import load_labels  # noqa: E402
from crowdbayes.models.labels import BayesianDawidSkene  # noqa: E402


def fitted_workers(model) -> dict:
    """The prevalence of the second class and the diagonal of the fitted confusion matrices'
    mean, each worker weighted by their number of labels."""
    k = len(model.classes_)
    matrices = model.confusion_.to_numpy().reshape(-1, k, k)
    workers = model.confusion_.index.get_level_values(0)[::k]
    weights = model.worker_label_counts_.reindex(workers).fillna(0).to_numpy(np.float64)
    mean = np.tensordot(weights / weights.sum(), matrices, axes=1)
    row = {"prevalence of class 2": float(model.prevalence_.iloc[1])}
    row.update({f"mean confusion [{c},{c}]": float(mean[c, c]) for c in range(k)})
    return row


def state(model, pool: LabelPool, full_answers: pd.Series) -> dict:
    """The comparison of the replay's model with the full pool's at the current budget."""
    gold = pool.gold
    answers = model.labels_.reindex(gold.index)
    full = full_answers.reindex(gold.index)
    differ = answers.to_numpy() != full.to_numpy()
    right = answers.to_numpy() == gold.to_numpy()
    table = pool.table.assign(seen=pool.seen)
    per_task = table.groupby("task")["seen"].agg(["sum", "size"]).reindex(gold.index)
    complete = (per_task["sum"] == per_task["size"]).to_numpy()
    return {
        "accuracy": right.mean(),
        "differ, replay right": int((differ & right).sum()),
        "differ, full pool right": int((differ & ~right).sum()),
        "differ, every label seen": int((differ & complete).sum()),
        "labels per gold task": per_task["sum"].mean(),
        "labels per task": pool.observed().groupby("task").size().mean(),
        **fitted_workers(model),
    }


def replay(name: str, strategy: str, seed: int, budgets: list[float], full_answers) -> list:
    data = load_labels(name)
    pool = LabelPool(data.labels, data.gold, start=1, random_state=seed)
    batch = max(1, int(round(0.05 * pool.observed()["task"].nunique())))
    start, total = pool.n_observed, len(data.labels)
    model, refit, rng = BayesianDawidSkene(), WarmRefit(0.25), np.random.default_rng(seed)
    rows = []
    for share in budgets:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            simulate(
                model,
                pool,
                batch=batch,
                budget=int(start + share * (total - start)),
                strategy=strategy.removesuffix("+workers"),
                worker_aware=strategy.endswith("+workers"),
                refit=refit,
                random_state=rng,
            )
        rows.append({"strategy": strategy, "seed": seed, "budget": share})
        rows[-1].update(state(model, pool, full_answers))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="duchenne")
    parser.add_argument("--strategies", nargs="*", default=["auto+workers", "round_robin"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budgets", nargs="*", type=float, default=[0.2, 0.4, 0.6, 0.8])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    begin = time.perf_counter()
    data = load_labels(args.set)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = BayesianDawidSkene().fit(data.labels)
    full_row = {
        "strategy": "full pool",
        "budget": 1.0,
        "accuracy": float((full.labels_.reindex(data.gold.index) == data.gold).mean()),
        **fitted_workers(full),
    }
    jobs = [(s, seed) for s in args.strategies for seed in range(args.seeds)]
    with ProcessPoolExecutor(args.jobs) as executor:
        futures = [
            executor.submit(replay, args.set, s, seed, args.budgets, full.labels_)
            for s, seed in jobs
        ]
        rows = [row for future in futures for row in future.result()]
    records = pd.DataFrame(rows)
    table = records.drop(columns="seed").groupby(["strategy", "budget"], sort=False).mean()
    table = pd.concat([table, pd.DataFrame([full_row]).set_index(["strategy", "budget"])])
    run_time = f"- total run time {time.perf_counter() - begin:.0f} s"
    lines = [
        "`BayesianDawidSkene`, the replay of `benchmarks/active/active_labels.py` stopped at "
        f"budgets {args.budgets} (share of the pool after the start); {len(data.gold)} gold tasks; "
        f"mean over {args.seeds} seeds. 'differ': gold tasks whose answer differs from the "
        "same model's fitted on every label; 'every label seen': of those, the tasks all of "
        "whose labels the replay has already revealed.",
        "",
        markdown_table(table, 3),
    ]
    title = f"Adaptive replay against the full pool, gold task by gold task: {args.set}"
    write_markdown_report(args.output, title, lines, [run_time], echo=True)


if __name__ == "__main__":
    main()
