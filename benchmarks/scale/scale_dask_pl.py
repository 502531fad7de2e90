"""Issue 45: PlackettLuceVI (Algorithm 1, the bound) on a Dask LocalCluster of 2 worker
processes over 100,000,000 pairwise comparisons — time and CPU per pass, peak memory per worker.

    .venv/bin/python benchmarks/scale/scale_dask_pl.py --root /work/scratch/dask1b/pl
    .venv/bin/python benchmarks/scale/scale_dask_pl.py --root DIR --comparisons 2000000 \\
        --output /tmp/pl.md                                                     # quick check

Data (generated on the Dask workers, one task per file, file ``i`` from ``SeedSequence(seed,
spawn_key=(i,))``): ``--items`` items with ``--features`` standard normal features, θ ~ N(0, I);
each comparison is a uniformly drawn pair of distinct items whose winner is drawn from
Plackett–Luce (P(a beats b) = σ(θᵀ(x_a − x_b))), written as two rows ``query, item, rank``
(rank 1 for the winner, missing for the other: a top-1 choice of 2, which the bound treats as
a pair, Jaakkola–Jordan's bound, Eq. 13 of the method's paper) — the usual pairwise-judgment
data set at scale. Files of ``--per-file`` comparisons hold whole queries with consecutive ids,
so ``grouped=True`` holds and is shown by the files' disjoint query ranges.

Fit: ``fit_rankings_distributed(PlackettLuceVI(eta=1.0, tol=None, max_iter=--max-iter,
inner='newton', inner_tol=1e-10, inner_max_iter=200, method='bound', centre=True,
accelerate=False, item_effects=False), DIR, items, grouped=True)`` with every option explicit
(a change of the defaults does not change this run); ``tol=None`` runs the ``max_iter``
iterations in full and ``accelerate=False`` makes a pass an iteration. Measured as in
``_dask_run``: wall seconds per pass (``on_pass``), the workers' CPU seconds per pass, each
worker's peak RSS (``VmHWM``, sampled from ``/proc``), restarts.
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
import pandas as pd
from _dask_run import ProcessSampler, kept_by_worker

from _common import load_average, results_dir, write_markdown_report
from crowdbayes import PlackettLuceVI
from crowdbayes.distributed import fit_rankings_distributed

RESULTS = results_dir(__file__)
FULL = 100_000_000


def item_table(n_items: int, n_features: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Item features (``item`` column and ``x0..``) and the true θ."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**31,)))
    X = rng.normal(size=(n_items, n_features))
    theta = rng.normal(size=n_features)
    frame = pd.DataFrame(X, columns=[f"x{k}" for k in range(n_features)])
    frame.insert(0, "item", np.arange(n_items))
    return frame, theta


def write_pairs_file(out: str, index: int, per_file: int, n_items: int, n_features: int, seed: int):
    """File ``index``: ``per_file`` comparisons, queries ``index * per_file ...``."""
    items, theta = item_table(n_items, n_features, seed)
    utility = items.drop(columns="item").to_numpy() @ theta
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))
    a = rng.integers(n_items, size=per_file)
    b = (a + 1 + rng.integers(n_items - 1, size=per_file)) % n_items
    a_wins = rng.random(per_file) < 1.0 / (1.0 + np.exp(utility[b] - utility[a]))
    pair = np.empty(2 * per_file, dtype=np.int32)
    pair[0::2] = np.where(a_wins, a, b)
    pair[1::2] = np.where(a_wins, b, a)
    first = index * per_file
    frame = pd.DataFrame(
        {
            "query": np.repeat(np.arange(first, first + per_file, dtype=np.int64), 2),
            "item": pair,
            "rank": np.tile(np.array([1.0, np.nan]), per_file),
        }
    )
    frame.to_parquet(Path(out) / f"part-{index:05d}.parquet", index=False)


def generate(client, root: Path, args) -> dict:
    directory = root / f"pairs-{args.comparisons}"
    params = {k: getattr(args, k) for k in ("comparisons", "per_file", "items", "features", "seed")}
    stamp = directory / "STAMP.json"
    if stamp.exists() and json.loads(stamp.read_text())["params"] == params:
        return json.loads(stamp.read_text())
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    n_files = args.comparisons // args.per_file
    start = time.perf_counter()
    futures = client.map(
        write_pairs_file,
        [str(directory)] * n_files,
        range(n_files),
        per_file=args.per_file,
        n_items=args.items,
        n_features=args.features,
        seed=args.seed,
    )
    client.gather(futures)
    done = {
        "params": params,
        "files": n_files,
        "wall_s": time.perf_counter() - start,
        "bytes": sum(p.stat().st_size for p in directory.glob("*.parquet")),
    }
    stamp.write_text(json.dumps(done))
    return done


def model(max_iter: int) -> PlackettLuceVI:
    return PlackettLuceVI(
        eta=1.0,
        tol=None,
        max_iter=max_iter,
        inner="newton",
        inner_tol=1e-10,
        inner_max_iter=200,
        method="bound",
        centre=True,
        accelerate=False,
        item_effects=False,
        progress=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--comparisons", type=int, default=FULL)
    parser.add_argument("--per-file", type=int, default=1_000_000)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--features", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-iter", type=int, default=10)
    parser.add_argument("--n-workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="6GB")
    parser.add_argument("--output", type=Path, default=RESULTS / "scale_dask_pl.md")
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    root = args.root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    load_start = load_average()
    options = {
        "n_workers": args.n_workers,
        "threads_per_worker": 1,
        "processes": True,
        "memory_limit": args.memory_limit,
        "dashboard_address": None,
    }
    with LocalCluster(**options) as cluster, Client(cluster) as client:
        generated = generate(client, root, args)
    cluster = LocalCluster(**options)  # a new one: the fit's peaks are its own
    client = Client(cluster)
    sampler = ProcessSampler()
    passes: list[dict] = []
    try:
        pids_before = client.run(os.getpid)
        sampler.pids |= set(pids_before.values())
        items, theta = item_table(args.items, args.features, args.seed)
        kept: dict = {}

        def on_pass(number: int, seconds: float) -> None:
            sampler.sample()
            passes.append({"pass": number, "wall_s": seconds, "cpu_s": sum(sampler.cpu.values())})
            print(f"  pass {number}: {seconds:.2f} s", flush=True)
            if number == 1:
                kept.update(client.run(kept_by_worker, prefix="_step"))

        fitted = model(args.max_iter)
        params = fitted.get_params()
        cpu0 = time.process_time()
        with sampler:
            start = time.perf_counter()
            fit_rankings_distributed(
                fitted,
                root / f"pairs-{args.comparisons}",
                items,
                client=client,
                grouped=True,
                on_pass=on_pass,
            )
            total = time.perf_counter() - start
            pids_after = client.run(os.getpid)
        driver_cpu = time.process_time() - cpu0
    finally:
        client.close()
        cluster.close()
    wall = [p["wall_s"] for p in passes]
    cpu = np.diff([0.0] + [p["cpu_s"] for p in passes])
    restarted = sorted(set(pids_before.values()) - set(pids_after.values()))
    median = float(np.median(wall[1:])) if len(wall) > 1 else wall[0]
    coef = fitted.coef_.to_numpy()
    cosine = float(coef @ theta / np.linalg.norm(coef) / np.linalg.norm(theta))
    lines = [
        f"Data: {args.comparisons:,} pairwise comparisons ({2 * args.comparisons:,} rows), "
        f"{args.items:,} items with {args.features} features, {generated['files']} Parquet files "
        f"({generated['bytes'] / 2**30:.2f} GiB), generated on the workers in "
        f"{generated['wall_s']:.0f} s.",
        "",
        f"- model: `PlackettLuceVI({', '.join(f'{k}={v!r}' for k, v in params.items())})`",
        f"- load average at start {load_start}, at end {load_average()}",
        "",
        "| measure | value |",
        "|---|---|",
        f"| Dask workers | {args.n_workers} processes x 1 thread, memory_limit "
        f"{args.memory_limit} |",
        f"| iterations | {fitted.n_iter_} (passes: {len(passes)}, the first at the prior) |",
        f"| total wall (checks, building the top-queries, passes) | {total:.0f} s |",
        f"| before the first pass ended | {total - sum(wall[1:]):.0f} s |",
        f"| pass wall after the first, median (min / max) | {median:.2f} s "
        f"({min(wall[1:], default=0):.2f} / {max(wall[1:], default=0):.2f}) |",
        f"| pass CPU of the workers after the first, median | {np.median(cpu[1:]):.2f} s |",
        f"| CPU, workers (whole fit) / driver+scheduler | {sum(sampler.cpu.values()):.0f} s / "
        f"{driver_cpu:.0f} s |",
        f"| throughput per worker | {args.comparisons / median / args.n_workers / 1e6:.2f} M "
        "comparisons/s per pass |",
        f"| worker restarts | {len(restarted)} |",
        f"| cosine(posterior mean, true θ) | {cosine:.4f} |",
        "",
        "| worker | peak RSS | kept after pass 1 (arrays of its partitions) | RSS after pass 1 |",
        "|---|---|---|---|",
    ]
    for addr in sorted(pids_before):
        pid, held = pids_before[addr], kept.get(addr, {})
        lines.append(
            f"| {addr} | {sampler.peak_mib.get(pid, float('nan')):,.0f} MiB | "
            f"{held.get('array_bytes', 0) / 2**20:,.0f} MiB in {held.get('keys', 0)} keys | "
            f"{held.get('rss_mib', float('nan')):,.0f} MiB |"
        )
    lines += ["", "Per pass (wall, workers' CPU):", ""]
    lines += [
        f"- pass {p['pass']}: {p['wall_s']:.2f} s, {c:.2f} s CPU"
        for p, c in zip(passes, cpu, strict=True)
    ]
    if args.comparisons < FULL:
        lines.append(f"- note: run at {args.comparisons:,} comparisons, not {FULL:,}")
    write_markdown_report(
        args.output, "PlackettLuceVI on a Dask LocalCluster (issue 45)", lines, echo=True
    )


if __name__ == "__main__":
    main()
