"""Issue 45: Dawid–Skene and Bayesian Dawid–Skene on 1,000,000,000 labels on a Dask
LocalCluster of 2 worker processes with a memory limit — time and CPU per iteration, peak memory
per worker, a worker killed mid-fit, and the size table (100M, 200M, 500M, 1B) with a projection
to 32 workers.

    nice -n 19 .venv/bin/python benchmarks/scale/scale_dask_1b.py --root /work/scratch/dask1b \\
        --run ds:1000000000 --run ds:1000000000:kill --run bds:1000000000
    nice -n 19 .venv/bin/python benchmarks/scale/scale_dask_1b.py --root /work/scratch/dask1b \\
        --run ds:100000000 --run bds:100000000 ...
    .venv/bin/python benchmarks/scale/scale_dask_1b.py --root /work/scratch/dask1b --report

Data: ``_scale_data.write_parquet_dataset``'s files (one-coin workers, 10 labels per task,
K = 2, 100,000 crowd workers, 5,000,000 labels per file holding whole tasks), generated *on the
Dask workers* (one task per file) under ``ROOT/all``. File ``i`` depends only on (seed, i), so
the first ``n / 5M`` files are exactly the ``n``-label data set: ``ROOT/n<labels>`` is a
directory of links to them, and every size is a prefix of the 1B set.

Each ``--run MODEL:LABELS[:kill]`` is one ``fit_distributed(model, ROOT/n<labels>,
grouped=True)`` (encoded partitions kept in worker memory, compactly: see
``crowdbayes.distributed._partitions.EncodedPartition``) on a *new* ``LocalCluster(n_workers=2,
threads_per_worker=1, memory_limit=--memory-limit)`` (so each run's peaks are its own), with
``max_iter=--max-iter`` and ``tol=1e-7`` (the 10 passes run in full). Measured
(``_dask_run.fit_once``): wall seconds per iteration (``on_iteration``), the workers' CPU seconds
per iteration (``/proc/<pid>/stat``: the machine's 2 cores are shared with other jobs, so wall
time alone overstates the cost), each worker process's peak RSS (``VmHWM``, sampled every 0.5 s
from ``/proc``: it covers start-up, encoding, every pass and the output, and a killed worker's
last reading is kept), what the workers hold after the first pass (Dask's count of its stored
data, and RSS), and restarts. ``:kill`` SIGKILLs the first worker half an iteration after pass
``--kill-after`` (so during the next pass); its nanny starts a new worker and Dask recomputes the
lost partitions from the Parquet files; the answers and parameters are compared with those of the
run without the kill (which must come first in the same ``--root``; its task files are kept
until then).

Every run appends a JSON record to ``ROOT/records.jsonl``; ``--report`` writes
``results/scale_dask_1b.md`` from them (the projection divides the labels by the measured
per-worker throughput of the 1B run, for 32 workers: an assumption that the per-worker rate
holds and the tree-reduction of the 100,000 x 2 x 2 statistics stays small, not a measurement).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _dask_run import compare_runs, fit_once, save_params

from _common import command_line, load_average, results_dir, write_markdown_report
from _scale_data import write_parquet_dataset
from crowdbayes import BayesianDawidSkene, DawidSkene

RESULTS = results_dir(__file__)
TOTAL = 1_000_000_000
PER_FILE = 5_000_000
CROWD = 100_000
MODELS = {
    "ds": lambda max_iter: DawidSkene(max_iter=max_iter, tol=1e-7),
    "bds": lambda max_iter: BayesianDawidSkene(max_iter=max_iter, tol=1e-7),
}
NAMES = {"ds": "DawidSkene", "bds": "BayesianDawidSkene"}


def _generate_file(out: str, total: int, index: int, seed: int) -> float:
    start = time.perf_counter()
    files = range(index, index + 1)
    write_parquet_dataset(
        out, total, labels_per_file=PER_FILE, n_workers=CROWD, seed=seed, files=files
    )
    return time.perf_counter() - start


def generate_on_workers(
    root: Path, total: int, n_workers: int, memory_limit: str, seed: int
) -> dict:
    """Write the ``total`` (1B) labels' files under ``root/all`` on the Dask workers (skipped
    when the stamp says they are there); returns what it did."""
    directory = root / "all"
    stamp = directory / "STAMP.json"
    params = {"labels": total, "labels_per_file": PER_FILE, "workers": CROWD, "seed": seed}
    if stamp.exists() and json.loads(stamp.read_text()) == params:
        return json.loads((root / "generated.json").read_text())
    from distributed import Client, LocalCluster

    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    n_files = total // PER_FILE
    start = time.perf_counter()
    with (
        LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            memory_limit=memory_limit,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        futures = client.map(
            _generate_file, [str(directory)] * n_files, [total] * n_files, range(n_files), seed=seed
        )
        per_file = client.gather(futures)
    done = {
        "labels": total,
        "files": n_files,
        "wall_s": time.perf_counter() - start,
        "file_s_median": float(np.median(per_file)),
        "bytes": sum(p.stat().st_size for p in directory.glob("*.parquet")),
    }
    stamp.write_text(json.dumps(params))
    (root / "generated.json").write_text(json.dumps(done))
    return done


def size_directory(root: Path, labels: int) -> Path:
    """``root/n<labels>``: links to the first ``labels / 5M`` files of the 1B set."""
    directory = root / f"n{labels}"
    n_files = labels // PER_FILE
    if directory.exists() and len(list(directory.iterdir())) == n_files:
        return directory
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    for index in range(n_files):
        name = f"part-{index:05d}.parquet"
        (directory / name).symlink_to(root / "all" / name)
    return directory


def run(root: Path, spec: str, args) -> dict:
    name, labels, *flags = spec.split(":")
    labels = int(labels)
    kill = "kill" in flags
    tag = f"{name}-{labels}{'-kill' if kill else ''}"
    data = size_directory(root, labels)
    out = root / f"out-{tag}"
    shutil.rmtree(out, ignore_errors=True)
    model = MODELS[name](args.max_iter)
    print(f"{tag}: fitting {model!r} (load {load_average()})", flush=True)
    wall0 = time.time()
    load_start = load_average()
    measured = fit_once(
        model,
        data,
        out,
        n_workers=args.n_workers,
        memory_limit=args.memory_limit,
        kill_after=args.kill_after if kill else None,
    )
    record = measured["record"]
    record.update(
        tag=tag,
        model=name,
        params={k: repr(v) for k, v in model.get_params().items()},
        labels=labels,
        kill=kill,
        kill_after=args.kill_after if kill else None,
        n_workers=args.n_workers,
        memory_limit=args.memory_limit,
        started=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(wall0)),
        load_start=load_start,
        load_end=load_average(),
        command=command_line(),
    )
    save_params(measured["model"], root / f"params-{tag}.npz")
    if kill:
        reference = f"{name}-{labels}"
        if (root / f"out-{reference}").exists():
            record["compare"] = compare_runs(
                root / f"out-{reference}",
                out,
                root / f"params-{reference}.npz",
                root / f"params-{tag}.npz",
            )
            record["compare"]["reference"] = reference
        shutil.rmtree(root / f"out-{reference}", ignore_errors=True)
    if kill or not (args.keep_out or f"{spec}:kill" in args.run):
        shutil.rmtree(out, ignore_errors=True)
    with open(root / "records.jsonl", "a") as fh:
        fh.write(json.dumps(record) + "\n")
    print(f"{tag}: {_summary(record)}", flush=True)
    return record


def _median_iteration(record: dict) -> float:
    return float(np.median(record["iteration_seconds"]))


def _iteration_cpu(record: dict) -> list[float]:
    """Worker CPU seconds of each iteration (differences of the cumulated readings)."""
    cpu = [it["cpu_s"] for it in record["iterations"]]
    return list(np.diff(cpu)) if len(cpu) > 1 else []


def _summary(record: dict) -> str:
    peaks = ", ".join(f"{mib:,.0f}" for mib in record["peak_mib"].values())
    return (
        f"{record['n_labels']:,} labels, median iteration {_median_iteration(record):.2f} s, "
        f"total {record['total_s']:.0f} s, peaks {peaks} MiB, restarts {len(record['restarted'])}"
    )


def _latest(records: list[dict]) -> dict[str, dict]:
    latest = {}
    for record in records:
        latest[record["tag"]] = record
    return latest


NOTES = [
    "## What the library changed for this run (`src/crowdbayes/distributed/`)",
    "",
    "- `grouped=True` on files of disjoint task ranges no longer shuffles: before, the branch "
    "that was meant for ungrouped input also ran for grouped input whose ranges were disjoint, "
    "so every grouped fit (the 200M report `scale_dask.md` included) went through a task "
    "shuffle of all its rows; now each file is read and encoded in one task where it lies.",
    "- The vocabulary pass kept a view (`frame.iloc[:0]`) of every partition alive on its worker "
    "until all partitions' vocabularies were gathered (the whole data set in worker memory); "
    "it now keeps an empty copy.",
    "- The encoded partitions are kept compactly (`EncodedPartition`): int32 count-matrix "
    "indices and row pointers, no float counts when every count is 1, the workers per task in a "
    "byte, consecutive task ids as a range; each pass rebuilds one partition's block with the "
    "same count matrix (statistics equal bit for bit: "
    "`tests/distributed/test_labels.py::test_encoded_partition_is_compact_and_computes_like_a_"
    "label_block`). The bytes per label kept are measured above.",
    "",
]


def _all_runs(records: list[dict]) -> list[str]:
    """Every recorded run, in order (the sections above show the latest of each; the kill run
    was compared with the run of its configuration that came before it)."""
    rows = []
    for r in records:
        cpu = _iteration_cpu(r)
        peaks = " / ".join(f"{mib:,.0f}" for mib in r["peak_mib"].values())
        rows.append(
            f"| {r['tag']} | {r['started']} | {r['load_start'].split()[0]} | {r['total_s']:.0f} s "
            f"| {_median_iteration(r):.2f} s | {np.median(cpu) if cpu else float('nan'):.2f} s | "
            f"{peaks} MiB | {len(r['restarted'])} |"
        )
    return [
        "## All recorded runs",
        "",
        "| run | started | load (1 min) at start | total wall | iteration wall (median) | "
        "iteration CPU, both workers (median) | peak RSS per worker process | restarts |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def _pl_section(path: Path | None) -> list[str]:
    """The PlackettLuceVI report's body (below its title), if it was written."""
    if path is None or not path.exists():
        return ["## PlackettLuceVI", "", "- not run in this session", ""]
    body = path.read_text().splitlines()[1:]
    return ["## PlackettLuceVI (`scale_dask_pl.py`)", "", *body, ""]


def report(root: Path, output: Path, pl_report: Path | None = None) -> None:
    records = [json.loads(line) for line in (root / "records.jsonl").read_text().splitlines()]
    runs = _latest(records)
    generated = json.loads((root / "generated.json").read_text())
    commands = sorted({r["command"] for r in records})
    lines = [
        "Commands (each `--run` appends a record to `ROOT/records.jsonl`; `--report` wrote this):",
        "",
        "```sh",
        *commands,
        command_line(),
        "```",
        "",
        "Every run was started with `OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1` "
        "at normal priority. Other sessions edited `src/crowdbayes/models/` and "
        "`src/crowdbayes/annotators/` during these runs; each run used the tree as it was when "
        "it started (the source fingerprint above is the report's).",
        "",
        f"Data: {generated['labels']:,} labels in {generated['files']} Parquet files of "
        f"{PER_FILE:,} ({generated['bytes'] / 2**30:.2f} GiB on local disk), generated on 2 "
        f"Dask workers in {generated['wall_s']:.0f} s ({generated['file_s_median']:.2f} s per "
        "file); 100,000 crowd workers, 10 labels per task, K = 2, tasks = labels / 10. "
        "Smaller sizes are the first files of the same set.",
        "",
    ]
    lines += _run_sections(runs, generated["labels"], records)
    lines += _all_runs(records) + _pl_section(pl_report) + NOTES
    write_markdown_report(
        output,
        "Dask: 1,000,000,000 labels on 2 workers (issue 45)",
        lines,
        [f"- runs: {len(runs)} (latest record of each)"],
        echo=True,
    )


def _run_sections(runs: dict[str, dict], total: int, records: list[dict]) -> list[str]:
    lines = []
    for name in ("ds", "bds"):
        big = runs.get(f"{name}-{total}")
        if big is not None:
            lines += _big_run(NAMES[name], big)
    kill = runs.get(f"ds-{total}-kill")
    if kill is not None:
        before = [r["started"] for r in records if r["tag"] == f"ds-{total}"]
        before = [started for started in before if started < kill["started"]]
        lines += _kill_section(kill, before[-1] if before else "?")
    lines += _size_table(runs, total)
    return lines


def _big_run(title: str, r: dict) -> list[str]:
    seconds = r["iteration_seconds"]
    cpu = _iteration_cpu(r)
    median = _median_iteration(r)
    per_worker = r["n_labels"] / median / r["n_workers"]
    kept = r.get("kept", {})
    lines = [
        f"## {title} at {r['n_labels']:,} labels",
        "",
        _load_line(r),
        f"- model: `{title}({', '.join(f'{k}={v}' for k, v in r['params'].items())})`",
        "",
        "| measure | value |",
        "|---|---|",
        f"| Dask workers | {r['n_workers']} processes x 1 thread, memory_limit "
        f"{r['memory_limit']} |",
        f"| tasks / crowd workers / partitions | {r['n_tasks']:,} / {r['n_crowd']:,} / "
        f"{r['n_partitions']} |",
        f"| EM iterations | {r['n_iter']} (converged: {r['converged']}) |",
        f"| total wall (vocabulary, encoding, EM, writing the task rows) | {r['total_s']:.0f} s |",
        f"| of which before the first pass ended + after the last | "
        f"{r['total_s'] - sum(seconds):.0f} s |",
        f"| iteration wall, median of {len(seconds)} (min / max) | {median:.2f} s "
        f"({min(seconds):.2f} / {max(seconds):.2f}) |",
    ]
    if cpu:
        lines.append(
            f"| iteration CPU of the workers, median of {len(cpu)} (sum over workers) | "
            f"{np.median(cpu):.2f} s |"
        )
    worker_cpu = sum(r["worker_cpu_s"].values())
    lines += [
        f"| CPU, workers (whole fit) / driver+scheduler | {worker_cpu:.0f} s / "
        f"{r['driver_cpu_s']:.0f} s |",
        f"| throughput per worker | {per_worker / 1e6:.1f} M labels/s per iteration |",
        f"| worker restarts | {len(r['restarted'])} |",
        "",
        "Per worker process (peak RSS = VmHWM over its life; kept = Dask's count of the encoded "
        "partitions it holds after pass 1, and its RSS then):",
        "",
        "| worker | peak RSS | kept after pass 1 | RSS after pass 1 |",
        "|---|---|---|---|",
    ]
    pid_of = r["workers_before"]
    for addr in sorted(pid_of):
        pid = str(pid_of[addr])
        held = kept.get(addr, {})
        lines.append(
            f"| {addr} (pid {pid}) | {r['peak_mib'].get(pid, float('nan')):,.0f} MiB | "
            f"{held.get('managed_bytes', 0) / 2**20:,.0f} MiB in {held.get('keys', 0)} keys | "
            f"{held.get('rss_mib', float('nan')):,.0f} MiB |"
        )
    unique = {key: size for held in kept.values() for key, size in held["encoded"].items()}
    per_label = sum(unique.values()) / r["n_labels"]
    kept_line = (
        f"- kept in worker memory: {per_label:.2f} bytes per label ({len(unique)} encoded "
        "partitions, each counted once; a partition also held by the other worker for a moment, "
        "after Dask moved a pass's task there, is counted in both rows above)"
    )
    if not unique:
        kept_line = (
            "- kept in worker memory: not recorded in this run (the benchmark looked for the "
            "keys by their old task name); the kill run below, same data and settings, has it"
        )
    lines += [
        "",
        kept_line,
        f"- {'PASS' if _within(r) else 'FAIL'}: every worker's peak within its memory limit "
        f"({r['memory_limit']}), no restart",
        "",
    ]
    return lines


def _kept_summary(r: dict) -> str:
    """The encoded partitions the workers held after pass 1, per label (each key once)."""
    kept = r.get("kept", {})
    unique = {key: size for held in kept.values() for key, size in held["encoded"].items()}
    if not unique:
        return "- kept in worker memory after pass 1: not recorded"
    rss = ", ".join(f"{held['rss_mib']:,.0f}" for held in kept.values())
    total = sum(unique.values())
    return (
        f"- kept in worker memory after pass 1: {len(unique)} encoded partitions, "
        f"{total / 2**20:,.0f} MiB in all = {total / r['n_labels']:.2f} bytes per label; "
        f"worker RSS then {rss} MiB"
    )


def _load_line(r: dict) -> str:
    return (
        f"- started {r['started']}; load average at start {r['load_start']}, "
        f"at end {r['load_end']} (2 cores shared with other jobs)"
    )


def _within(r: dict) -> bool:
    from dask.utils import parse_bytes

    limit = parse_bytes(r["memory_limit"]) / 2**20
    return max(r["peak_mib"].values()) <= limit and not r["restarted"]


def _kill_section(r: dict, reference_started: str) -> list[str]:
    seconds = r["iteration_seconds"]
    lines = [
        f"## A worker killed mid-fit at {r['n_labels']:,} labels (DawidSkene)",
        "",
        _load_line(r),
        f"- SIGKILL of worker pid {r['kills'][0]['pid'] if r['kills'] else '?'} "
        f"{r['kills'][0]['at_s'] if r['kills'] else float('nan'):.0f} s into the fit, half an "
        f"iteration after pass {r['kill_after']} ended; restarts seen: {len(r['restarted'])}",
        f"- iteration wall: {', '.join(f'{s:.1f}' for s in seconds)} s (the pass after the kill "
        "re-reads and re-encodes the lost partitions)",
        f"- total wall {r['total_s']:.0f} s",
        _kept_summary(r),
        "",
    ]
    c = r.get("compare")
    if c is None:
        return [*lines, "- no reference run to compare with", ""]
    lines += [
        f"Against the run without the kill (`{c['reference']}` started {reference_started}, "
        "whose task files were kept for this):",
        "",
        "| compared | result |",
        "|---|---|",
        f"| task files, task order | same files: {c['same_files']}, same task index: "
        f"{c.get('same_task_index')} |",
        f"| tasks compared | {c.get('tasks', 0):,} |",
        f"| answers (label) differing | {c.get('labels_differing')} |",
        f"| max abs difference of the posteriors | "
        f"{c.get('max_abs_proba_diff', float('nan')):.3g} |",
        f"| max abs difference of the confusion matrices | "
        f"{c.get('max_abs_confusion_diff', float('nan')):.3g} |",
        f"| max abs difference of the prevalence | "
        f"{c.get('max_abs_prevalence_diff', float('nan')):.3g} |",
        "",
        "Peak RSS per worker process (the killed one's last reading, then its replacement):",
        "",
        *[f"- pid {pid}: {mib:,.0f} MiB" for pid, mib in r["peak_mib"].items()],
        "",
    ]
    return lines


PLANNED = (100_000_000, 200_000_000, 500_000_000)


def _size_table(runs: dict[str, dict], total: int) -> list[str]:
    rows, missing = [], []
    sizes = sorted({*PLANNED, total} if total == TOTAL else {r["labels"] for r in runs.values()})
    for name in ("ds", "bds"):
        for labels in sizes:
            r = runs.get(f"{name}-{labels}")
            if r is None:
                missing.append(f"{NAMES[name]} at {labels / 1e6:,.0f}M")
                continue
            median = _median_iteration(r)
            cpu = float(np.median(_iteration_cpu(r)))
            per_worker = labels / median / r["n_workers"]
            per_core = labels / cpu  # labels per second of one worker's CPU
            rows.append(
                f"| {NAMES[name]} | {labels / 1e6:,.0f}M | {r['total_s']:.0f} s | {median:.2f} s | "
                f"{cpu:.2f} s | {per_worker / 1e6:.1f} M/s | {per_core / 1e6:.1f} M/s | "
                f"{max(r['peak_mib'].values()):,.0f} MiB | {len(r['restarted'])} | "
                f"{total / per_worker / 32:.2f} s | {total / per_core / 32:.2f} s |"
            )
    lines = []
    if rows:
        lines += [
            "## Size table (same 2 workers, each run on a fresh cluster)",
            "",
            f"Projections: time per iteration of {total:,} labels on 32 workers, from the row's "
            "measured per-worker throughput — by wall time (labels / median iteration / 2, as "
            "measured on the shared machine) and by CPU time (labels / the workers' summed CPU "
            "seconds of a median iteration: one worker per free core). Both assume the per-worker "
            "rate holds on 32 workers and the reduction of the 100,000 x 2 x 2 statistics and the "
            "client's update stay small: not measured.",
            "",
            "| model | labels | total wall | iteration wall (median) | iteration CPU, both "
            "workers (median) | throughput per worker, wall | throughput per CPU second | max "
            "peak RSS per worker | restarts | 1B on 32 workers, by wall | 1B on 32 workers, by "
            "CPU |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    if missing:
        lines += [
            "## Not run in this session",
            "",
            f"- {'; '.join(missing)}: not run (out of time on the shared 2 cores: see the load "
            "averages above); the command is the `--run MODEL:LABELS` form above.",
            "",
        ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="data and records (not the repo)")
    parser.add_argument("--run", action="append", default=[], help="MODEL:LABELS[:kill]")
    parser.add_argument("--n-workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="6GB")
    parser.add_argument("--max-iter", type=int, default=10)
    parser.add_argument("--total", type=int, default=TOTAL, help="labels generated (1B)")
    parser.add_argument("--kill-after", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep-out", action="store_true", help="keep task files (kill reference)")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--output", type=Path, default=RESULTS / "scale_dask_1b.md")
    parser.add_argument("--pl-report", type=Path, help="scale_dask_pl.py's report to include")
    args = parser.parse_args()
    args.root.mkdir(parents=True, exist_ok=True)
    if args.run:
        root = args.root.resolve()
        done = generate_on_workers(root, args.total, args.n_workers, args.memory_limit, args.seed)
        print(f"data: {done}", flush=True)
    for spec in args.run:
        run(args.root.resolve(), spec, args)
    if args.report:
        report(args.root.resolve(), args.output, args.pl_report)
    os.sync()


if __name__ == "__main__":
    main()
