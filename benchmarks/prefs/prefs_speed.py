"""GPPL (SVI) runtime against the number of pairs, inducing points and mini-batch size.

Synthetic data (seeded): N items with 3 features uniform on [0, 3]³, utility
``f(x) = sin(2 x₀) + cos(x₁) + x₂ / 2``; each pair is two distinct uniformly drawn items, the
left one preferred with probability ``Φ((f_l - f_r)/√2)``. ``GPPL`` with its defaults
(Matérn-3/2, median heuristic, batch ``"auto"``, forgetting rate 0.9, delay 1, tol 1e-2 on
the per-pass change of the inducing mean, at most 1000 iterations) except the varied
setting. Timed: ``fit`` on a DataFrame (validation and encoding included), in this process,
after one untimed warm-up fit: wall seconds (median of the repeats, min–max beside it) and
the process's CPU seconds (median). Also reported: iterations, whether the tolerance was
met, the Spearman correlation of the posterior mean utilities with ``f``, and how far the
fit stopped from the fixed point of the updates: the largest difference in ``P(a ≻ b)`` over
2000 random item pairs from a full-batch fit with the same inducing points, steps ``ρ = 1``
(``forgetting_rate=0``), run to ``tol=1e-8`` (at most 500 steps).

Grid: pairs 1k / 10k / 100k (N = 1000, 1000, 5000; M = 200, batch auto); inducing points
50 / 100 / 200 / 500 (10k pairs, batch auto); batch 200 / 1000 / 5000 / all / auto (10k
pairs, M = 200). ``"auto"`` takes all comparisons in every step where a step through the
items costs less than a pass of mini-batches (``crowdbayes.gp.svi.resolve_batch_size``):
here everywhere but 1k pairs of 1000 items, where 1000 is all of them anyway.

Memory (``--memory``): the peak of the Python/numpy allocations made during ``fit``
(``tracemalloc``; numpy reports its buffers to it), for GPPL and crowdGPPL (C = 5, 50 workers)
at 10k / 100k / 1M pairs (N = 1000 items, M = 200, batch 1000, 20 SVI iterations without
a tolerance, then the bound over all pairs). The input table is built before tracing starts.
Beside each peak: bytes per comparison, bytes per comparison added since the previous size,
and the size a ``P × M`` double array would have, the term the implementation must never
materialise. What does grow with ``P`` are the vectors
of the comparisons themselves (codes, labels, ``Q_p``: tens of bytes each), so the peak is
``O(P)`` with a small constant plus ``O(N M + C M² + B M)``.

``--plot FILE.png`` draws seconds against pairs, inducing points and mini-batch size.

Usage (from the repository root; nothing else running)::

    nice -n 19 .venv/bin/python benchmarks/prefs/prefs_speed.py [--output PATH] [--quick]
        [--memory] [--plot FILE.png] [--repeats 1] [--target]

``--repeats k`` fits every setting k times and reports the median seconds (min–max beside it).
``--target`` measures only the setting of the speed target (10k pairs, 1000 items, M = 200,
GPPL's default batch: at most 0.3 s, issue 45), and the same with mini-batches of 1000
(the default before issue 45) beside it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import write_markdown_report
from _prefs_data import simulate, simulate_crowd
from crowdbayes.exceptions import ConvergenceWarning
from crowdbayes.models.gp_preference import GPPL, CrowdGPPL


def measure_memory(model_name: str, n_pairs: int, n_items: int = 1000, n_inducing: int = 200):
    """Peak traced allocation during ``fit`` (MiB), 20 SVI iterations, batch 1000."""
    options = {
        "n_inducing": n_inducing,
        "batch_size": 1000,
        "max_iter": 20,
        "tol": None,
        "random_state": 0,
    }
    if model_name == "crowdgppl":
        comparisons, items = simulate_crowd(n_items, n_pairs)
        model = CrowdGPPL(5, **options)
    else:
        comparisons, items, _ = simulate(n_items, n_pairs)
        model = GPPL(**options)
    tracemalloc.start()
    tracemalloc.reset_peak()
    start = time.perf_counter()
    model.fit(comparisons, items)
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    mib = 2.0**20
    return {
        "model": model_name,
        "pairs": n_pairs,
        "items": n_items,
        "inducing": n_inducing,
        "batch": 1000,
        "peak MiB": round(peak / mib, 1),
        "bytes per pair": round(peak / n_pairs, 1),
        "a P×M double array, MiB": round(n_pairs * n_inducing * 8 / mib, 1),
        "seconds (traced)": round(seconds, 1),
    }


def _table(rows: list[dict]) -> list[str]:
    table = pd.DataFrame(rows)
    lines = ["| " + " | ".join(table.columns) + " |", "|" + " --- |" * len(table.columns)]
    return lines + ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(False)]


def plot(rows: list[dict], path: Path) -> None:
    """Seconds against pairs, inducing points and mini-batch size (three panels)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = pd.DataFrame(rows)
    batch = table["batch"].astype(str)
    default = str(DEFAULT_BATCH)
    panels = [
        (
            "pairs",
            (table["inducing"] == 200) & (batch == default),
            f"comparisons P (M = 200, batch {default})",
            True,
        ),
        (
            "inducing",
            (table["pairs"] == 10_000) & (batch == default),
            "inducing points M (P = 10k)",
            False,
        ),
        (
            "batch",
            (table["pairs"] == 10_000) & (table["inducing"] == 200),
            "mini-batch size (P = 10k)",
            False,
        ),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=False)
    for ax, (column, mask, label, logx) in zip(axes, panels, strict=True):
        part = table[mask]
        if column == "batch":
            last = {"all": 10**9, "auto": 10**10}
            order = sorted(part.index, key=lambda i: last.get(batch[i]) or int(batch[i]))
            part = part.loc[order]
            ax.plot(range(len(part)), part["seconds"], "o-")
            ax.set_xticks(range(len(part)), batch[part.index])
        else:
            part = part.sort_values(column)
            ax.plot(part[column], part["seconds"], "o-")
            if logx:
                ax.set_xscale("log")
        for _, row in part.iterrows():
            if not row["converged"]:
                x = list(part.index).index(row.name) if column == "batch" else row[column]
                ax.annotate("max_iter reached", (x, row["seconds"]), fontsize=7)
        ax.set_xlabel(label)
        ax.set_ylabel("fit seconds")
        ax.grid(alpha=0.3)
    fig.suptitle("GPPL (SVI) fit time, 2-core machine, 1 BLAS thread")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


DEFAULT_BATCH = GPPL().batch_size
TARGET = (1000, 10_000, 200, DEFAULT_BATCH)  # items, pairs, inducing points, batch
TARGET_SECONDS = 0.3


def _probe_pairs(model: GPPL, n: int = 2000) -> np.ndarray:
    """``P(a ≻ b)`` of ``n`` random pairs of distinct fitted items (seeded)."""
    ids = model.utility_.index
    rng = np.random.default_rng(5)
    left = rng.integers(0, len(ids), n)
    right = (left + 1 + rng.integers(0, len(ids) - 1, n)) % len(ids)
    return model.predict_proba(ids[left], ids[right]).to_numpy()


def measure(n_items, n_pairs, n_inducing, batch_size, repeats: int = 1) -> dict:
    comparisons, items, f = simulate(n_items, n_pairs)
    times, cpu = [], []
    for _ in range(repeats):
        model = GPPL(n_inducing=n_inducing, batch_size=batch_size, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            start, cpu_start = time.perf_counter(), time.process_time()
            model.fit(comparisons, items)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - cpu_start)
    fixed_point = GPPL(
        n_inducing=n_inducing,
        batch_size=None,
        forgetting_rate=0.0,
        tol=1e-8,
        max_iter=500,
        random_state=0,
    ).fit(comparisons, items)
    gap = _probe_pairs(model) - _probe_pairs(fixed_point)
    seconds = float(np.median(times))
    spread = {} if repeats == 1 else {"min–max": f"{min(times):.3f}–{max(times):.3f}"}
    return {
        "items": n_items,
        "pairs": n_pairs,
        "inducing": n_inducing,
        "batch": "all" if batch_size is None else batch_size,
        "seconds": round(seconds, 3 if repeats > 1 else 2),
        **spread,
        "cpu seconds": round(float(np.median(cpu)), 3),
        "iterations": model.n_iter_,
        "converged": bool(model.converged_),
        "spearman": round(float(spearmanr(model.utility_["mean"], f)[0]), 4),
        "max |Δp| vs fixed point": f"{np.max(np.abs(gap)):.4f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="skip the 100k-pair run")
    parser.add_argument("--memory", action="store_true", help="also measure peak memory")
    parser.add_argument("--memory-only", action="store_true", help="only measure memory")
    parser.add_argument("--plot", type=Path, default=None, help="write the runtime plot here")
    parser.add_argument("--repeats", type=int, default=1, help="fits per setting (median)")
    parser.add_argument("--target", action="store_true", help="only the target's setting")
    args = parser.parse_args()
    measure(200, 1000, 50, 1000)  # warm-up (imports, BLAS)
    grid = [(1000, 1000, 200, DEFAULT_BATCH), TARGET]
    if args.target:
        grid = [TARGET, (1000, 10_000, 200, 1000)]
    elif not args.quick:
        grid.append((5000, 100_000, 200, DEFAULT_BATCH))
    if not args.target:
        grid += [(1000, 10_000, m, DEFAULT_BATCH) for m in (50, 100, 500)]
        grid += [(1000, 10_000, 200, b) for b in (200, 1000, 5000, None)]
    rows = []
    if not args.memory_only:
        for setting in grid:
            rows.append(measure(*setting, repeats=args.repeats))
            print(rows[-1], flush=True)
    lines = []
    if rows:
        lines += _table(rows)
        target = [
            row
            for row in rows
            if (row["items"], row["pairs"], row["inducing"], row["batch"]) == TARGET
        ]
        if target:
            seconds = target[0]["seconds"]
            verdict = "PASS" if seconds <= TARGET_SECONDS else "FAIL"
            lines += [
                "",
                f"{verdict}: GPPL fit on {TARGET[1]:,} pairs / {TARGET[0]:,} items / {TARGET[2]} "
                f"inducing points (batch {TARGET[3]}, the default): {seconds} s wall, "
                f"{target[0]['cpu seconds']} s CPU (target ≤ {TARGET_SECONDS} s)",
            ]
    if args.memory or args.memory_only:
        memory = []
        sizes = (10_000, 100_000) if args.quick else (10_000, 100_000, 1_000_000)
        for name in ("gppl", "crowdgppl"):
            for n_pairs in sizes:
                row = measure_memory(name, n_pairs)
                if memory and memory[-1]["model"] == name:  # what each added comparison costs
                    extra = row["pairs"] - memory[-1]["pairs"]
                    growth = (row["peak MiB"] - memory[-1]["peak MiB"]) * 2.0**20 / extra
                    row["bytes per added pair"] = round(growth, 1)
                else:
                    row["bytes per added pair"] = ""
                memory.append(row)
                print(row, flush=True)
        lines += ["", "## Peak memory during fit (tracemalloc)", "", *_table(memory)]
    if args.plot is not None and rows:
        plot(rows, args.plot)
        print(f"plot written to {args.plot}")
    output = args.output or Path(tempfile.gettempdir()) / "prefs_speed.md"
    write_markdown_report(output, "GPPL (SVI) runtime", lines, echo=True)


if __name__ == "__main__":
    main()
