"""Issue 7, incremental updates: add 1% new labels to a fitted 10,000,000-label Dawid–Skene model
and continue from it (warm start), against a full refit.

    nice -n 19 .venv/bin/python benchmarks/scale/scale_incremental.py                  # 10M labels
    nice -n 19 .venv/bin/python benchmarks/scale/scale_incremental.py --labels 1000000 # quick check

Data: ``_scale_data.chunk`` (one-coin workers, 10 labels per task, K = 2, 100,000 workers). The
"old" labels are the first ``labels`` labels; the new ones are ``--new-share`` (default 1%) more
labels on new tasks, some of them by workers the old model never saw (every worker id is shifted
for 10% of the new labels). Steps: fit ``DawidSkene()`` on the old labels and save it
(``model.save``, the safe npz format); on all labels, (1) a full refit ``DawidSkene().fit`` and
(2) the warm start ``DawidSkene().fit(labels, init=saved_path)``; and (3) the incremental
update ``load(saved_path).partial_fit(new_labels)`` on the new labels alone (old
tasks frozen at the old model's posteriors). Times are of ``fit`` alone
(``Labels`` encoding of all labels reported separately: both need it). Accuracy is against the
synthetic truth on every task. Target: the warm start under 20% of the refit's time, same
accuracy.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np
import pandas as pd

from _common import load_average, results_dir
from _scale_data import chunk, finish_report, report_path, worker_accuracy
from crowdbayes import DawidSkene, Labels
from crowdbayes.metrics import accuracy

RESULTS = results_dir(__file__)

FULL_SIZE = 10_000_000


def make(n_labels: int, first_task: int, index: int, n_workers: int, seed: int):
    frame, truth = chunk(
        index,
        first_task,
        n_labels // 10,
        n_workers=n_workers,
        labels_per_task=10,
        n_classes=2,
        seed=seed,
        accuracy=worker_accuracy(n_workers, seed),
    )
    return frame, pd.Series(
        truth.astype(np.int64), index=np.arange(first_task, first_task + len(truth))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=FULL_SIZE)
    parser.add_argument("--new-share", type=float, default=0.01)
    parser.add_argument("--crowd", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    tmp = Path(tempfile.gettempdir())
    output = report_path(args.output, "scale_incremental", args.labels, FULL_SIZE, RESULTS)
    old, old_truth = make(args.labels, 0, 0, args.crowd, args.seed)
    n_new = int(args.labels * args.new_share)
    new, new_truth = make(n_new, len(old_truth), 1, args.crowd, args.seed)
    shifted = np.arange(len(new)) % 10 == 0
    new.loc[shifted, "worker"] += args.crowd  # workers never seen by the old model
    everything = pd.concat([old, new], ignore_index=True)
    truth = pd.concat([old_truth, new_truth])

    saved = tmp / f"scale_incremental-{args.labels}.npz"
    start = time.perf_counter()
    old_labels = Labels(old)
    previous = DawidSkene().fit(old_labels)
    old_fit_s = time.perf_counter() - start
    previous.save(saved)
    del old_labels

    start = time.perf_counter()
    labels = Labels(everything)
    encode_s = time.perf_counter() - start
    _ = labels.count_matrix
    start = time.perf_counter()
    refit = DawidSkene().fit(labels)
    refit_s = time.perf_counter() - start
    start = time.perf_counter()
    warm = DawidSkene().fit(labels, init=saved)
    warm_s = time.perf_counter() - start
    from crowdbayes import load

    start = time.perf_counter()
    batch = Labels(new)
    partial = load(saved).partial_fit(batch)
    partial_s = time.perf_counter() - start
    saved.unlink()
    combined = pd.concat([previous.labels_, partial.labels_]).astype(np.int64)
    acc_partial = accuracy(truth, combined)

    acc_refit = accuracy(truth, refit.labels_.astype(np.int64))
    acc_warm = accuracy(truth, warm.labels_.astype(np.int64))
    gap = float(np.abs(warm.probas_.to_numpy() - refit.probas_.to_numpy()).max())
    ratio = warm_s / refit_s
    details = [f"- load average at end {load_average()}"]
    lines = [
        f"Old labels: {len(old):,} ({old_fit_s:.1f} s to encode and fit); new: {len(new):,} "
        f"({args.new_share:.0%}) on {len(new_truth):,} new tasks, "
        f"{int(shifted.sum()):,} of these labels by workers the old model never saw. "
        f"All labels: {labels.n_labels:,}, "
        f"encoded in {encode_s:.1f} s (needed by both fits, not in the times below).",
        "",
        "| fit on all labels | time | iterations | converged | accuracy |",
        "|---|---|---|---|---|",
        f"| full refit | {refit_s:.2f} s | {refit.n_iter_} | {refit.converged_} "
        f"| {acc_refit:.5f} |",
        f"| warm start from the saved model | {warm_s:.2f} s | {warm.n_iter_} "
        f"| {warm.converged_} | {acc_warm:.5f} |",
        f"| `partial_fit` of the new labels only (old tasks frozen; includes encoding the batch)"
        f" | {partial_s:.2f} s | {partial.n_iter_} | {partial.converged_} | {acc_partial:.5f} |",
        "",
        f"- warm / refit time: {ratio:.1%}; max |probability difference| {gap:.2e}",
        f"- partial_fit / refit time: {partial_s / refit_s:.1%}",
        f"- {'PASS' if ratio < 0.2 else 'FAIL'}: warm start under 20% of the full refit's time",
        f"- {'PASS' if abs(acc_warm - acc_refit) <= 1e-3 else 'FAIL'}: warm start, same accuracy "
        f"within 0.1 point ({acc_warm:.5f} vs {acc_refit:.5f})",
        f"- {'PASS' if partial_s / refit_s < 0.2 else 'FAIL'}: partial_fit under 20% of the full "
        "refit's time",
        f"- {'PASS' if abs(acc_partial - acc_refit) <= 1e-3 else 'FAIL'}: partial_fit, same "
        f"accuracy within 0.1 point ({acc_partial:.5f} vs {acc_refit:.5f}; old tasks keep the "
        "old model's labels)",
    ]
    title = "Incremental Dawid–Skene: warm start vs full refit"
    finish_report(output, title, lines, details, args.labels, FULL_SIZE)


if __name__ == "__main__":
    main()
