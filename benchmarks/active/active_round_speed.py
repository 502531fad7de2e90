"""How long one round of adaptive collection takes: suggest, reveal the answers, refit warm.

Issue 16's speed targets: one labels round on 1M labels / 100k tasks under 2 s; one pairs round
for 1,000 items and 5,000 observed pairs under 5 s (this 2-core machine).

- ``labels``: ``simulate_labels(100_000, 1_000, 10, random_state=0)`` (1,000,000 labels); a
  :class:`~crowdbayes.active.LabelPool` shows 9 labels per task (900,000) and holds one back.
  ``BayesianDawidSkene()`` (the model ``labels next`` uses by default) is fitted cold, then each
  round asks ``model.suggest(5_000, candidates=...)`` (5% of the tasks, the default strategy),
  the pool reveals the answers and the model is refitted with ``fit(labels, init=model)``;
  then again with the candidates every held-back ``(task, worker)`` pair, so that the strategy
  chooses the worker too (from the held-out confusions the fit stores).
- ``pairs``: 1,000 items with 3 features, utilities ``sin(2x₀) + cos(x₁) + x₂/2``, probit
  answers (as ``prefs_speed.py``); a :class:`~crowdbayes.active.PairPool` of 10,000 comparisons
  shows 5,000. ``GPPL(random_state=0)`` is fitted cold, then each round suggests 50 pairs among
  the held-back ones, reveals them and refits with ``fit(..., init=model)``.

The round's time is wall-clock of suggest + reveal + refit (the pool's table handling
included); CPU time of the process is shown beside it, since the machine may be shared.

Usage (from the repository root)::

    .venv/bin/python benchmarks/active/active_round_speed.py [--rounds 3] [--output PATH]
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import ndtr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import load_average, results_dir, write_markdown_report
from crowdbayes import GPPL, BayesianDawidSkene
from crowdbayes.active import LabelPool, PairPool
from crowdbayes.datasets import simulate_labels
from crowdbayes.exceptions import ConvergenceWarning

RESULTS = results_dir(__file__)


def _timed(action):
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def _rounds(model, pool, n_ask: int, n_rounds: int, rng, worker_aware=False) -> list[dict]:
    rows = []
    for index in range(1, n_rounds + 1):

        def one_round():
            candidates = pool.candidates(worker_aware)
            questions = model.suggest(n_ask, candidates=candidates, random_state=rng)
            revealed = pool.reveal(questions, rng)
            model.fit(*pool.fit_args(), init=model)
            return revealed

        revealed, wall, cpu = _timed(one_round)
        rows.append(
            {
                "round": index,
                "revealed": revealed,
                "observed": pool.n_observed,
                "refit iterations": model.n_iter_,
                "wall s": wall,
                "CPU s": cpu,
            }
        )
    return rows


def labels_section(n_rounds: int, worker_aware: bool = False) -> tuple[list[dict], float]:
    sim = simulate_labels(100_000, 1_000, 10, random_state=0)
    gold = sim.truth.rename("label")
    pool = LabelPool(sim.labels, gold, start=9, random_state=0)
    model = BayesianDawidSkene()
    _, cold, _ = _timed(lambda: model.fit(*pool.fit_args()))
    rng = np.random.default_rng(0)
    return _rounds(model, pool, 5_000, n_rounds, rng, worker_aware), cold


def pairs_section(n_rounds: int) -> tuple[list[dict], float]:
    rng = np.random.default_rng(0)
    n_items, n_pairs = 1_000, 10_000
    X = rng.uniform(0, 3, (n_items, 3))
    f = np.sin(2 * X[:, 0]) + np.cos(X[:, 1]) + 0.5 * X[:, 2]
    left = rng.integers(0, n_items, n_pairs)
    right = (left + rng.integers(1, n_items, n_pairs)) % n_items
    won = rng.random(n_pairs) < ndtr((f[left] - f[right]) / np.sqrt(2))
    comparisons = pd.DataFrame({"left": left, "right": right, "label": np.where(won, left, right)})
    items = pd.DataFrame(X, columns=["x0", "x1", "x2"]).rename_axis("item")
    probe_left = rng.integers(0, n_items, 500)
    probe_right = (probe_left + rng.integers(1, n_items, 500)) % n_items
    gold = pd.DataFrame(
        {
            "left": probe_left,
            "right": probe_right,
            "label": np.where(f[probe_left] > f[probe_right], probe_left, probe_right),
        }
    )
    pool = PairPool(comparisons, gold, items, start=5_000, random_state=0)
    model = GPPL(random_state=0)
    _, cold, _ = _timed(lambda: model.fit(*pool.fit_args()))
    return _rounds(model, pool, 50, n_rounds, np.random.default_rng(1)), cold


def _table(rows: list[dict]) -> list[str]:
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for row in rows:
        cells = [f"{v:.2f}" if isinstance(v, float) else str(v) for v in row.values()]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS / "active_round_speed.md")
    args = parser.parse_args()
    lines = []
    warnings.simplefilter("ignore", ConvergenceWarning)
    for title, section, target in (
        ("Labels: 1M labels / 100k tasks, BayesianDawidSkene, 5,000 questions a round",
         labels_section, 2.0),
        ("Labels, choosing the worker too: the same, the candidates every held-back (task, "
         "worker) pair (100,000)", functools.partial(labels_section, worker_aware=True), 2.0),
        ("Pairs: 1,000 items, 5,000 observed comparisons, GPPL, 50 questions a round",
         pairs_section, 5.0),
    ):  # fmt: skip
        rows, cold = section(args.rounds)
        median = float(np.median([row["wall s"] for row in rows]))
        verdict = "met" if median < target else "NOT met"
        lines += [f"## {title}", "", f"Cold fit: {cold:.2f} s wall.", ""]
        lines += _table(rows)
        lines += ["", f"Median round {median:.2f} s wall: target < {target:.0f} s {verdict}.", ""]
        print("\n".join(lines), flush=True)
    lines.append(f"Load average at the end: {load_average()}.")
    title = "One round of adaptive collection: suggest, reveal, warm refit"
    write_markdown_report(args.output, title, lines)


if __name__ == "__main__":
    main()
