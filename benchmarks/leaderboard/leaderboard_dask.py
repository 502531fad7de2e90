"""Battles counted from Parquet on a Dask cluster, then a leaderboard fitted on the counts
(issue 44, "Dask: the counting step from Parquet on a Dask cluster").

Data: ``--n-battles`` (20,000,000) simulated arena battles (the model of
``leaderboard_speed.py``: ``--n-models`` (200) models of Zipf-like popularity, Davidson ties
ν = 0.26 — about 10% —, seed 0; no covariates), written as ``--files`` (10) Parquet files (the
text columns dictionary-encoded, pyarrow's default).

Measured, in one run:

1. **counting on Dask** — :func:`crowdbayes.distributed.count_battles` on a ``LocalCluster`` of
   ``--workers`` (2) single-threaded worker processes with ``--memory-limit`` (1 GiB) each:
   every file read and checked by :class:`~crowdbayes.data.battles.Battles` on a worker,
   counted, the partial counts merged in a tree; wall seconds of a first run (the workers
   import crowdbayes) and of a second, and each worker's peak resident memory (its kernel
   high-water mark, reset before each run) and the client's;
2. **the same counting in one process**, no Dask (the same per-file function and merge, one
   file after another): the reference the cluster is compared with;
3. **the fits on the counts** (in the client): ``Leaderboard(tie_model="half")`` and
   ``Leaderboard()`` (Davidson ties), Laplace intervals and rank draws included.

The counts of both paths are checked equal (rows, order and counts).

Usage (from the repository root; the machine's 2 cores are shared, so run it when idle)::

    .venv/bin/python benchmarks/leaderboard/leaderboard_dask.py \\
        [--n-battles 20000000] [--files 10] [--workers 2] [--memory-limit 1GiB]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # benchmarks/: _common
sys.path.insert(0, str(HERE))  # leaderboard_speed: the data's constants

from leaderboard_speed import TIE_STRENGTH  # noqa: E402

from _common import (  # noqa: E402
    PeakRSS,
    _reset_hwm,
    _status_kib,
    load_average,
    markdown_table,
    write_markdown_report,
)


def write_battles(directory: Path, n_battles: int, n_models: int, n_files: int) -> int:
    """The simulated battles as ``n_files`` Parquet files; their total size in bytes."""
    from crowdbayes.models.comparisons import simulate_battles

    frame = simulate_battles(
        n_models, n_battles, popularity=1.0, tie_strength=TIE_STRENGTH, random_state=0
    ).battles
    size = 0
    for i, rows in enumerate(np.array_split(np.arange(n_battles), n_files)):
        path = directory / f"part-{i:03d}.parquet"
        frame.iloc[rows].to_parquet(path, index=False)
        size += path.stat().st_size
    return size


def _worker_peak_mib() -> float:
    """This worker's peak resident memory since the last reset (VmHWM), MiB."""
    return _status_kib("VmHWM") / 1024


def count_on_dask(client, directory: Path) -> tuple:
    """(counted battles, wall seconds, peak MiB per worker, client peak MiB above baseline)."""
    from crowdbayes.distributed import count_battles

    client.run(_reset_hwm)
    with PeakRSS() as peak:
        start = time.perf_counter()
        counted = count_battles(directory, client=client)
        seconds = time.perf_counter() - start
    workers = client.run(_worker_peak_mib)
    client_mib = peak.hwm_mib if peak.hwm_mib is not None else peak.polled_mib
    return counted, seconds, sorted(workers.values()), client_mib


def count_in_one_process(directory: Path):
    """The same map and reduce, one file after another, in a fresh process (no Dask): the
    counts, seconds and the process's peak resident memory (MiB, baseline included)."""
    from crowdbayes.distributed._battles import (
        BattleColumns,
        _count_file,
        finish_counts,
        merge_counts,
    )
    from crowdbayes.distributed._partitions import parquet_files

    columns = BattleColumns()
    _reset_hwm()
    start = time.perf_counter()
    parts = [_count_file(str(p), f"file {p}", columns, True) for p in parquet_files(directory)]
    counted = finish_counts(merge_counts(*parts), (), True)
    return counted, time.perf_counter() - start, _worker_peak_mib()


def in_fresh_process(function, *args):
    """``function(*args)`` in a fresh 'spawn' process (its memory apart from this one's)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(function, *args).result()


def fit_seconds(counted, **params) -> tuple[float, int]:
    from crowdbayes.models.comparisons import Leaderboard

    start = time.perf_counter()
    model = Leaderboard(random_state=0, **params).fit(counted)
    return time.perf_counter() - start, model.n_iter_


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-battles", type=int, default=20_000_000)
    parser.add_argument("--n-models", type=int, default=200)
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="1GiB")
    parser.add_argument("--output", default=str(HERE / "results" / "leaderboard_dask.md"))
    args = parser.parse_args()
    import logging

    import distributed

    warnings.simplefilter("ignore")
    load_start = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        start = time.perf_counter()
        size = in_fresh_process(write_battles, directory, args.n_battles, args.n_models, args.files)
        made = time.perf_counter() - start
        print(f"data: {args.n_battles:,} battles, {size / 2**20:.0f} MiB, {made:.0f} s", flush=True)
        with (
            distributed.LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,
                processes=True,
                memory_limit=args.memory_limit,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            runs = [count_on_dask(client, directory) for _ in range(2)]
            print(f"dask: {[round(r[1], 2) for r in runs]} s", flush=True)
        single, single_s, single_mib = in_fresh_process(count_in_one_process, directory)
        print(f"one process: {single_s:.2f} s", flush=True)
    counted = runs[-1][0]
    ours, theirs = counted.counts(), single.counts()
    equal = all(
        np.array_equal(getattr(ours, f), getattr(theirs, f)) for f in ("a", "b", "outcome", "count")
    ) and counted.model_ids.equals(single.model_ids)
    half_s, half_iter = fit_seconds(counted, tie_model="half")
    davidson_s, davidson_iter = fit_seconds(counted)
    table = pd.DataFrame(
        [
            {
                "step": f"count on Dask, first run ({args.workers} workers)",
                "seconds": runs[0][1],
                "peak MiB per worker": " / ".join(f"{m:.0f}" for m in runs[0][2]),
                "client peak MiB": runs[0][3],
            },
            {
                "step": f"count on Dask, second run ({args.workers} workers)",
                "seconds": runs[1][1],
                "peak MiB per worker": " / ".join(f"{m:.0f}" for m in runs[1][2]),
                "client peak MiB": runs[1][3],
            },
            {
                "step": "count in one process (no Dask, same code)",
                "seconds": single_s,
                "peak MiB per worker": f"{single_mib:.0f} (the process)",
                "client peak MiB": float("nan"),
            },
            {
                "step": f"fit, half ties ({half_iter} Newton steps)",
                "seconds": half_s,
                "peak MiB per worker": "",
                "client peak MiB": float("nan"),
            },
            {
                "step": f"fit, Davidson ties ({davidson_iter} Newton steps)",
                "seconds": davidson_s,
                "peak MiB per worker": "",
                "client peak MiB": float("nan"),
            },
        ]
    ).set_index("step")
    lines = [
        f"{counted.n_battles:,} simulated battles ({counted.n_ties / counted.n_battles:.1%} "
        f"ties) of {counted.n_models} models (Zipf-like popularity) in {args.files} Parquet "
        f"files ({size / 2**20:.0f} MiB); a `LocalCluster` of {args.workers} single-threaded "
        f"worker processes, memory limit {args.memory_limit} each. Counted into "
        f"{ours.n_rows:,} distinct rows. Worker peaks: each worker process's resident-memory "
        "high-water mark (reset before the run; the process's baseline — Python, Dask, "
        "crowdbayes — included), and the same for the one process; client peak: above its "
        "baseline (it receives the merged counts).",
        "",
        markdown_table(table, digits=2),
        "",
        f"- one process / Dask (second run): {single_s / runs[1][1]:.2f}×.",
        f"- the counts of Dask and of the one-process path are equal (rows, order, counts): "
        f"{equal}.",
        f"- data written in {made:.0f} s.",
        f"- load average at the start: {load_start}; at the end: {load_average()}.",
    ]
    write_markdown_report(
        args.output, "Leaderboard battles counted on Dask (issue 44)", lines, echo=True
    )


if __name__ == "__main__":
    main()
