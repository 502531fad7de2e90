"""Continuous answers: recovery, interval coverage and robustness of ContinuousAggregation.

Data from :func:`crowdbayes.datasets.simulate_values` (400 tasks with true values N(50, 10²),
40 workers with biases N(0, 3²) and noise s.d. log-normal around 3, 6 answers per task), seeds
0..N-1. For each seed:

- recovery: correlation of the estimated worker biases and noise s.d. with the truth, and the
  share of true task values inside the 90% intervals (Gaussian model, clean data);
- robustness: the same seed with 10% of the workers answering uniformly on [0, 100] instead
  (their answers replaced); RMSE of the task means against the truth, divided by the RMSE of
  the same model on the clean data. Also shown: the plain task mean and median, and an oracle
  that fits the model without the random workers' answers (the information lost with them).
- sporadic outliers: 5% of all answers moved by ±60 (typos), Gaussian against Student-t.

Usage (from the repository root)::

    .venv/bin/python benchmarks/values/continuous_recovery.py [--seeds 10]
        [--output benchmarks/values/results/continuous_recovery.md]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np

from _common import results_dir, write_markdown_report

RESULTS = results_dir(__file__)


def rmse(estimate, truth) -> float:
    return float(np.sqrt(((estimate.loc[truth.index] - truth) ** 2).mean()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--output", default=str(RESULTS / "continuous_recovery.md"))
    args = parser.parse_args()

    from crowdbayes.datasets import simulate_values
    from crowdbayes.models.labels import ContinuousAggregation

    def fit(table, noise="gaussian"):
        return ContinuousAggregation(noise=noise).fit(table)

    recovery, robust, outliers = [], [], []
    for seed in range(args.seeds):
        clean = simulate_values(random_state=seed)
        dirty = simulate_values(random_share=0.1, random_state=seed)
        model = fit(clean.values)
        est = model.worker_params_.loc[clean.workers.index]
        values = model.values_.loc[clean.truth.index]
        covered = (values["lower"] <= clean.truth) & (clean.truth <= values["upper"])
        recovery.append(
            (
                np.corrcoef(est["bias"], clean.workers["bias"])[0, 1],
                np.corrcoef(est["noise_sd"], clean.workers["noise"])[0, 1],
                covered.mean(),
            )
        )
        row = []
        for noise in ("gaussian", "student"):
            base = rmse(fit(clean.values, noise).predict(), clean.truth)
            row.append(rmse(fit(dirty.values, noise).predict(), dirty.truth) / base)
        honest = dirty.workers.index[~dirty.workers["random"]]
        kept = dirty.values[dirty.values["worker"].isin(honest)]
        base = rmse(fit(clean.values).predict(), clean.truth)
        row.append(rmse(fit(kept).predict(), dirty.truth) / base)
        by_task = dirty.values.groupby("task")["value"]
        clean_by_task = clean.values.groupby("task")["value"]
        row.append(rmse(by_task.mean(), dirty.truth) / rmse(clean_by_task.mean(), clean.truth))
        row.append(rmse(by_task.median(), dirty.truth) / rmse(clean_by_task.median(), clean.truth))
        robust.append(row)
        rng = np.random.default_rng(seed)
        typos = clean.values.copy()
        wild = rng.choice(len(typos), size=len(typos) // 20, replace=False)
        typos.loc[wild, "value"] += rng.choice([-60.0, 60.0], size=len(wild))
        outliers.append(
            (
                rmse(fit(clean.values).predict(), clean.truth),
                rmse(fit(typos).predict(), clean.truth),
                rmse(fit(typos, "student").predict(), clean.truth),
            )
        )
        print(seed, np.round(recovery[-1], 3), np.round(row, 3), np.round(outliers[-1], 3))

    recovery, robust, outliers = map(np.array, (recovery, robust, outliers))

    def stats(column) -> str:
        return f"{column.mean():.3f} (min {column.min():.3f}, max {column.max():.3f})"

    lines = [
        f"{args.seeds} seeds; 400 tasks, 40 workers, 6 answers per task (see the script's "
        "docstring). Mean over seeds (min, max).",
        "",
        "## Recovery (Gaussian noise, clean data)",
        "",
        "| quantity | value | acceptance |",
        "| --- | --- | --- |",
        f"| corr(estimated bias, true bias) | {stats(recovery[:, 0])} | ≥ 0.9 |",
        f"| corr(estimated noise s.d., true) | {stats(recovery[:, 1])} | ≥ 0.9 |",
        f"| 90% interval coverage of true values | {stats(recovery[:, 2])} | 0.85–0.95 |",
        "",
        "## 10% of workers answer at random: RMSE of task values / RMSE on clean data",
        "",
        "| estimator | ratio |",
        "| --- | --- |",
        f"| Gaussian noise | {stats(robust[:, 0])} |",
        f"| Student-t noise (robust option) | {stats(robust[:, 1])} |",
        f"| oracle: Gaussian model without the random workers' answers | {stats(robust[:, 2])} |",
        f"| plain task mean | {stats(robust[:, 3])} |",
        f"| plain task median | {stats(robust[:, 4])} |",
        "",
        "## 5% of answers off by ±60 (typos): RMSE of task values",
        "",
        "| data / model | RMSE |",
        "| --- | --- |",
        f"| clean, Gaussian | {stats(outliers[:, 0])} |",
        f"| typos, Gaussian | {stats(outliers[:, 1])} |",
        f"| typos, Student-t | {stats(outliers[:, 2])} |",
        "",
    ]
    write_markdown_report(
        args.output, "Continuous answers: recovery and robustness (ContinuousAggregation)", lines
    )


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    main()
