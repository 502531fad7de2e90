"""GPPL (SVI) runtime against the number of pairs, inducing points and mini-batch size.

Synthetic data (seeded): N items with 3 features uniform on [0, 3]³, utility
``f(x) = sin(2 x₀) + cos(x₁) + x₂ / 2``; each pair is two distinct uniformly drawn items, the
left one preferred with probability ``Φ((f_l - f_r)/√2)``. ``GPPL`` with its defaults
(Matérn-3/2, median heuristic, forgetting rate 0.9, delay 1, tol 1e-2 on the per-pass change
of the inducing mean, at most 1000 iterations) except the varied setting. Timed: ``fit`` on
a DataFrame (validation and encoding included), in this process, after one untimed warm-up
fit. Also reported: iterations, whether the tolerance was met, and the Spearman correlation
of the posterior mean utilities with ``f``.

Grid: pairs 1k / 10k / 100k (N = 1000, 1000, 5000; M = 200, batch 1000); inducing points
50 / 200 / 500 (10k pairs, batch 1000); batch 200 / 1000 / 5000 / all (10k pairs, M = 200).

Usage (from the repository root; nothing else running)::

    nice -n 19 .venv/bin/python benchmarks/prefs_speed.py [--output PATH] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import ndtr
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command_line, machine_lines, write_report  # noqa: E402
from crowdbayes.exceptions import ConvergenceWarning  # noqa: E402
from crowdbayes.models.gp_preference import GPPL  # noqa: E402


def simulate(n_items: int, n_pairs: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 3, (n_items, 3))
    f = np.sin(2 * X[:, 0]) + np.cos(X[:, 1]) + 0.5 * X[:, 2]
    left = rng.integers(0, n_items, n_pairs)
    right = (left + rng.integers(1, n_items, n_pairs)) % n_items
    won = rng.random(n_pairs) < ndtr((f[left] - f[right]) / np.sqrt(2))
    comparisons = pd.DataFrame({"left": left, "right": right, "label": np.where(won, left, right)})
    items = pd.DataFrame(X, columns=["x0", "x1", "x2"]).rename_axis("item")
    return comparisons, items, f


def measure(n_items, n_pairs, n_inducing, batch_size) -> dict:
    comparisons, items, f = simulate(n_items, n_pairs)
    model = GPPL(n_inducing=n_inducing, batch_size=batch_size, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        model.fit(comparisons, items)
        seconds = time.perf_counter() - start
    return {
        "items": n_items,
        "pairs": n_pairs,
        "inducing": n_inducing,
        "batch": "all" if batch_size is None else batch_size,
        "seconds": round(seconds, 2),
        "iterations": model.n_iter_,
        "converged": bool(model.converged_),
        "spearman": round(float(spearmanr(model.utility_["mean"], f)[0]), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="skip the 100k-pair run")
    args = parser.parse_args()
    header = machine_lines()
    measure(200, 1000, 50, 1000)  # warm-up (imports, BLAS)
    grid = [(1000, 1000, 200, 1000), (1000, 10_000, 200, 1000)]
    if not args.quick:
        grid.append((5000, 100_000, 200, 1000))
    grid += [(1000, 10_000, m, 1000) for m in (50, 500)]
    grid += [(1000, 10_000, 200, b) for b in (200, 5000, None)]
    rows = []
    for setting in grid:
        rows.append(measure(*setting))
        print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    lines = ["# GPPL (SVI) runtime", "", *header, f"- command: `{command_line()}`", ""]
    lines.append("| " + " | ".join(table.columns) + " |")
    lines.append("|" + " --- |" * len(table.columns))
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(False)]
    text = "\n".join(lines) + "\n"
    output = args.output or Path(tempfile.gettempdir()) / "prefs_speed.md"
    write_report(output, text)
    print(text)
    print(f"written to {output}")


if __name__ == "__main__":
    main()
