"""Issue 7 (b) and (c): Dawid–Skene on a Dask LocalCluster of 2 worker processes over a Parquet
data set of 200,000,000+ labels — time per iteration, peak memory per worker, throughput — and
the projection for 1,000,000,000 labels on a cluster. (The measured billion-label run, the size
table, the killed worker and both models: ``scale_dask_1b.py``.)

    nice -n 19 .venv/bin/python benchmarks/scale/scale_dask.py                   # 200M labels
    nice -n 19 .venv/bin/python benchmarks/scale/scale_dask.py --labels 2000000  # quick check
    nice -n 19 .venv/bin/python benchmarks/scale/scale_dask.py --out-of-core     # re-read each

Data: ``_scale_data.write_parquet_dataset`` (one-coin workers, 10 labels per task, K = 2,
100,000 workers, files of 5,000,000 labels holding whole tasks) under ``--data`` (generated once;
a stamp file records the parameters). The fit is ``crowdbayes.distributed.fit_distributed(
DawidSkene(max_iter=...), DIR, grouped=True)`` on ``LocalCluster(n_workers=2,
threads_per_worker=1, memory_limit=--memory-limit)``: vocabulary pass, encoding (kept in worker
memory unless ``--out-of-core``), EM passes, task results written to Parquet. Per iteration:
wall time from ``on_iteration``. Peak memory per worker: each worker process's kernel
high-water mark (``VmHWM`` in ``/proc/<pid>/status``) read through ``client.run`` after the fit
(it covers the worker's whole life: start-up, encoding, every pass and the output); a worker
restarted by its nanny (memory limit) is reported.

Throughput = labels / median iteration time / workers; the 1B projection divides 1e9 labels by
that per-worker throughput for 2, 16 and 64 workers (assuming the per-worker rate holds, i.e.
partition work dominates and the tree-reduction of the worker x class x class statistics stays
small — an assumption, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np

from _common import load_average, results_dir
from _scale_data import finish_report, report_path, write_parquet_dataset
from crowdbayes import DawidSkene
from crowdbayes.distributed import fit_distributed

RESULTS = results_dir(__file__)

FULL_SIZE = 200_000_000


def _vm_hwm_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def ensure_data(directory: Path, params: dict) -> float:
    """Generate the data set unless a stamp with the same parameters exists; seconds spent."""
    stamp = directory / "STAMP.json"
    if stamp.exists() and json.loads(stamp.read_text()) == params:
        return 0.0
    shutil.rmtree(directory, ignore_errors=True)
    start = time.perf_counter()
    write_parquet_dataset(
        directory,
        params["labels"],
        labels_per_file=params["labels_per_file"],
        n_workers=params["workers"],
        seed=params["seed"],
    )
    stamp.write_text(json.dumps(params))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=FULL_SIZE)
    parser.add_argument("--labels-per-file", type=int, default=5_000_000)
    parser.add_argument("--crowd", type=int, default=100_000, help="number of crowd workers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, help="Parquet directory (generated if missing)")
    parser.add_argument("--n-workers", type=int, default=2, help="Dask worker processes")
    parser.add_argument("--memory-limit", default="4GB", help="per Dask worker")
    parser.add_argument("--max-iter", type=int, default=20)
    parser.add_argument("--out-of-core", action="store_true", help="re-read Parquet every pass")
    parser.add_argument("--keep-data", action="store_true", help="keep the generated data set")
    parser.add_argument("--output", type=Path, help="report path (default: results/ at 200M)")
    args = parser.parse_args()
    tmp = Path(tempfile.gettempdir())
    data = args.data or tmp / f"crowdbayes-scale-{args.labels}"
    suffix = "-out-of-core" if args.out_of_core else ""
    output = report_path(args.output, f"scale_dask{suffix}", args.labels, FULL_SIZE, RESULTS)
    params = {
        "labels": args.labels,
        "labels_per_file": args.labels_per_file,
        "workers": args.crowd,
        "seed": args.seed,
    }
    generate_s = ensure_data(data, params)
    parquet_bytes = sum(p.stat().st_size for p in data.glob("*.parquet"))

    from distributed import Client, LocalCluster

    out = tmp / f"crowdbayes-scale-tasks-{os.getpid()}"
    cluster = LocalCluster(
        n_workers=args.n_workers,
        threads_per_worker=1,
        processes=True,
        memory_limit=args.memory_limit,
        dashboard_address=None,
    )
    client = Client(cluster)
    try:
        pids_before = client.run(os.getpid)
        lines_seen = []

        def report(iteration, objective, seconds):
            lines_seen.append(seconds)
            print(f"iteration {iteration}: objective {objective} ({seconds:.2f} s)", flush=True)

        start = time.perf_counter()
        result = fit_distributed(
            DawidSkene(max_iter=args.max_iter, tol=1e-7),
            data,
            out=out,
            client=client,
            grouped=True,
            persist=not args.out_of_core,
            on_iteration=report,
        )
        total_s = time.perf_counter() - start
        peaks = client.run(_vm_hwm_mib)
        pids_after = client.run(os.getpid)
    finally:
        client.close()
        cluster.close()
        shutil.rmtree(out, ignore_errors=True)
    if not args.keep_data and args.data is None:
        shutil.rmtree(data, ignore_errors=True)

    seconds = result.iteration_seconds
    median = float(np.median(seconds))
    throughput = result.n_labels / median / args.n_workers
    restarted = sorted(set(pids_before.values()) - set(pids_after.values()))
    peak_rows = [f"| {addr} | {mib:,.0f} MiB |" for addr, mib in sorted(peaks.items())]
    max_peak = max(peaks.values())
    mode = "out-of-core (re-read every pass)" if args.out_of_core else "kept in worker memory"
    details = [f"- load average at end {load_average()}"]
    lines = [
        f"Data: {result.n_labels:,} labels, {result.n_tasks:,} tasks, {result.n_workers:,} crowd "
        f"workers, K = 2, {result.n_partitions} Parquet files ({parquet_bytes / 2**20:,.0f} MiB"
        f" on disk{f', generated in {generate_s:.0f} s' if generate_s else ''}); "
        f"{mode}.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| Dask workers | {args.n_workers} processes x 1 thread, "
        f"memory_limit {args.memory_limit} |",
        f"| EM iterations | {result.model.n_iter_} (converged: {result.model.converged_}) |",
        f"| total (vocabulary, encoding, EM, writing tasks) | {total_s:.1f} s |",
        f"| time before the first iteration + after the last | {total_s - sum(seconds):.1f} s |",
        f"| iteration, median of {len(seconds)} | {median:.2f} s |",
        f"| iteration, min / max | {min(seconds):.2f} / {max(seconds):.2f} s |",
        f"| throughput per worker | {throughput / 1e6:.2f} M labels/s per iteration |",
        f"| worker restarts | {len(restarted)} |",
        "",
        "Peak memory per worker (VmHWM over the worker's life):",
        "",
        "| worker | peak RSS |",
        "|---|---|",
        *peak_rows,
        "",
        f"- {'PASS' if max_peak <= 4000 and not restarted else 'FAIL'}: peak memory per worker "
        f"<= 4 GB ({max_peak:,.0f} MiB), no worker restarted",
        "",
        "## Projection for 1,000,000,000 labels",
        "",
        "Measured per-worker throughput above, assumed to hold per worker on a cluster:",
        "",
        "| workers | projected time per EM iteration |",
        "|---|---|",
        *[f"| {w} | {1e9 / throughput / w:.1f} s |" for w in (2, 16, 64)],
        "",
        "Generate the data (200 files of 5M labels; split `--files` over machines) and fit:",
        "",
        "```sh",
        ".venv/bin/python benchmarks/scale/scale_generate.py --labels 1000000000 "
        "--out /shared/labels-1b",
        "crowdbayes labels fit /shared/labels-1b --backend dask --scheduler tcp://HOST:8786 \\",
        "    --model ds --grouped --out /shared/tasks-1b --save-model /shared/ds-1b.npz",
        "```",
    ]
    title = "Dawid–Skene on a Dask LocalCluster"
    finish_report(output, title, lines, details, args.labels, FULL_SIZE)


if __name__ == "__main__":
    main()
