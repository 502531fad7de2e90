"""Issue 7 (a): the in-memory numpy path on 100,000,000 labels — Dawid–Skene EM to convergence,
time per iteration and peak memory against the size of the encoded label arrays.

    nice -n 19 .venv/bin/python benchmarks/scale/scale_memory.py                   # 100M labels
    nice -n 19 .venv/bin/python benchmarks/scale/scale_memory.py --labels 1000000  # quick check

Data: ``_scale_data.chunk`` (one-coin workers, 10 labels per task, K = 2), built in memory as a
DataFrame (task int64, worker int32, label int8), then encoded by ``crowdbayes.Labels`` (the
DataFrame is freed before the fit). The fit is ``DawidSkene()`` with its defaults (tol 1e-7,
at most 100 iterations), run through ``fit``'s own driver (``_fit_with``) with a callback that
times each iteration. Peak memory is measured as in ``labels_speed.py``
(``_common.PeakRSS``): the process's peak RSS during the fit (absolute, and the increase over
the RSS before it), compared with the encoded arrays (task, worker and label codes, int64).
Targets (issue 7): EM iteration <= 3 s, peak memory <= 3x the encoded arrays.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np
import pandas as pd

from _common import PeakRSS, load_average, results_dir
from _scale_data import chunk, finish_report, report_path, worker_accuracy
from crowdbayes import DawidSkene, Labels
from crowdbayes.metrics import accuracy

RESULTS = results_dir(__file__)

FULL_SIZE = 100_000_000


def build_frame(n_labels: int, labels_per_task: int, n_workers: int, seed: int):
    n_tasks = n_labels // labels_per_task
    step = 1_000_000
    acc = worker_accuracy(n_workers, seed)
    frames, truths = [], []
    for index, first in enumerate(range(0, n_tasks, step)):
        frame, truth = chunk(
            index,
            first,
            min(step, n_tasks - first),
            n_workers=n_workers,
            labels_per_task=labels_per_task,
            n_classes=2,
            seed=seed,
            accuracy=acc,
        )
        frames.append(frame)
        truths.append(truth)
    return pd.concat(frames, ignore_index=True), np.concatenate(truths)


def timed_fit(model: DawidSkene, labels: Labels) -> list[float]:
    """``model.fit(labels)`` (same driver, same passes) with each iteration timed."""
    seconds, clock = [], [time.perf_counter()]

    def record(iteration, value):
        now = time.perf_counter()
        seconds.append(now - clock[0])
        clock[0] = now

    model.check_params()
    clock[0] = time.perf_counter()
    model._fit_with(labels, None, callback=record)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=FULL_SIZE)
    parser.add_argument("--labels-per-task", type=int, default=10)
    parser.add_argument("--workers", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, help="report path (default: results/ at 100M)")
    args = parser.parse_args()
    output = report_path(args.output, "scale_memory", args.labels, FULL_SIZE, RESULTS)
    start = time.perf_counter()
    frame, truth = build_frame(args.labels, args.labels_per_task, args.workers, args.seed)
    generate_s = time.perf_counter() - start
    with PeakRSS() as encode_peak:
        start = time.perf_counter()
        labels = Labels(frame)
        encode_s = time.perf_counter() - start
    del frame
    gc.collect()
    encoded = labels.task_codes.nbytes + labels.worker_codes.nbytes + labels.label_codes.nbytes
    model = DawidSkene()
    with PeakRSS() as fit_peak:
        start = time.perf_counter()
        _ = labels.count_matrix, labels.column_totals
        matrix_s = time.perf_counter() - start
        start = time.perf_counter()
        seconds = timed_fit(model, labels)
        fit_s = time.perf_counter() - start
    peak_abs_mib = fit_peak.baseline_mib + (fit_peak.hwm_mib or fit_peak.polled_mib)
    truth_series = pd.Series(truth, index=pd.RangeIndex(len(truth)))
    acc = accuracy(truth_series, model.labels_.astype(np.int64))
    encoded_mib = encoded / 2**20
    median = float(np.median(seconds)) if seconds else float("nan")
    details = [f"- load average at end {load_average()}"]
    lines = [
        f"Data: {labels.n_labels:,} labels, {labels.n_tasks:,} tasks, {labels.n_workers:,} "
        f"workers, K = 2 (generated in {generate_s:.1f} s; `Labels` encoding {encode_s:.1f} s, "
        f"peak +{encode_peak.hwm_mib or encode_peak.polled_mib:,.0f} MiB).",
        "",
        "| measure | value |",
        "|---|---|",
        f"| encoded arrays (3 x int64 codes) | {encoded_mib:,.0f} MiB |",
        f"| count matrix build | {matrix_s:.2f} s |",
        f"| EM iterations | {model.n_iter_} (converged: {model.converged_}) |",
        f"| fit (matrix + EM + results) | {matrix_s + fit_s:.1f} s |",
        f"| EM iteration, median of {len(seconds)} timed | {median:.3f} s |",
        f"| EM iteration, max | {max(seconds, default=float('nan')):.3f} s |",
        f"| RSS before the fit | {fit_peak.baseline_mib:,.0f} MiB |",
        f"| peak RSS during the fit (absolute) | {peak_abs_mib:,.0f} MiB |",
        f"| peak RSS / encoded arrays | {peak_abs_mib / encoded_mib:.2f} |",
        f"| accuracy on the synthetic truth | {acc:.4f} |",
        "",
        f"- {'PASS' if median <= 3 else 'FAIL'}: EM iteration <= 3 s (median {median:.3f} s)",
        f"- {'PASS' if peak_abs_mib <= 3 * encoded_mib else 'FAIL'}: peak memory <= 3x the "
        f"encoded arrays ({peak_abs_mib / encoded_mib:.2f}x)",
    ]
    title = "In-memory Dawid–Skene at scale"
    finish_report(output, title, lines, details, args.labels, FULL_SIZE)


if __name__ == "__main__":
    main()
