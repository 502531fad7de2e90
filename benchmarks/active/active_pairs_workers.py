"""Worker-aware pair selection on a simulated crowd with persistent reliabilities (issue 43,
item 5 / restatement 4): random pairs, the task-only strategy, and choosing the worker too.

The world (one per seed): ``--items`` items with the 3 features and the consensus utility
``f(x) = sin(2 x₀) + cos(x₁) + x₂ / 2`` of ``_prefs_data.simulate``; a faithful answer to
``(a, b)`` prefers ``a`` with probability ``Φ((f(a) - f(b)) / √2)``. Twelve workers whose
kind persists across rounds: four *reliable* (faithful 0.9, else a coin flip), four *near
random* (faithful 0.1, else a coin flip) and four *adversarial* (the faithful answer flipped
with probability 0.7, faithful 0.2, else a coin flip). The collection starts with ``--start``
random pairs answered by random workers; then, each round, ``--available`` of the twelve
workers are available (drawn at random, the same draws for every strategy of a seed) and
``--batch`` questions are asked, until ``--budget`` answers. Every strategy of a seed sees the
same world, start and availability (paired).

Strategies, for each model:

- ``random``: uniform pairs of distinct items, each answered by a distinct random available
  worker;
- ``information``: the model's task-only pair choice (``suggest(strategy="information")``,
  BALD over every pair), each pair answered by a distinct random available worker (the
  platform decides who answers);
- ``information+workers`` (CrowdGPPL only): the library's worker-aware choice,
  ``suggest(available=...)`` — pair *and* worker among the available ones (``crowdbayes
  prefs next --available``). CrowdGPPL values a worker by their tastes at the prior and their
  tie rate (``CrowdGPPL._answer_model``), not by a reliability;
- ``information+reliability`` (CrowdBT only; *not a library feature*): the task-only pairs,
  given to the available workers with the highest posterior mean reliability
  (``CrowdBT.reliability_``; a worker not yet seen at the prior mean), best first. CrowdBT
  pools its workers for ``suggest``: it refuses ``available`` (``tags.personal_questions`` is
  false), so this is what a worker-aware rule built on the reliabilities it does fit would give;
- ``information+oracle`` (CrowdBT only): the same pairs given to the available workers with the
  largest *true* margin of a right answer over a wrong one (``faithful - flipped``: reliable
  0.9, near random 0.1, adversarial −0.5) — the ceiling of routing questions to reliable
  workers.

Scored: Spearman and Kendall correlation of the fitted consensus utility (``utility_`` mean; an
item CrowdBT has not seen yet at 0) with ``f`` after every round. Differences are paired by
seed: mean, standard error of the per-seed differences (``active_pairs.paired_gap``), and the
number of budgets where one strategy is below another by more than two standard errors.

Usage (from the repository root; about 6 minutes with ``--jobs 2`` on two shared cores)::

    OMP_NUM_THREADS=1 nice -n 19 .venv/bin/python benchmarks/active/active_pairs_workers.py \\
        --seeds 20 --budget 180 --jobs 2 --output benchmarks/active/results/active_pairs_workers.md
    OMP_NUM_THREADS=1 nice -n 19 .venv/bin/python benchmarks/active/active_pairs_workers.py \\
        --models crowdgppl --seeds 60 --budget 180 --jobs 2 \\
        --output benchmarks/active/results/active_pairs_workers_crowdgppl_60.md

    OMP_NUM_THREADS=1 nice -n 19 .venv/bin/python benchmarks/active/active_pairs_workers.py \\
        --models crowdbt [--strategy mixed] --seeds 12 --budget 360 --batch 5 --available 10 \\
        --jobs 2 --output benchmarks/active/results/active_pairs_workers_crowdbt_360[_mixed].md

``--strategy`` replaces ``information`` by another of the models' pair strategies (``mixed``,
``power``, ``uncertainty``) in every strategy but ``random``. A CSV of every round is written
beside the report (``.csv.gz``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from argparse import Namespace
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import ndtr
from scipy.stats import kendalltau, spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from active_pairs import make_model, paired_gap, worker_aware_section, worker_aware_table

from _common import load_average, markdown_table, run_in_processes, write_markdown_report
from _prefs_data import simulate as simulate_items
from crowdbayes.data import Comparisons
from crowdbayes.exceptions import ConvergenceWarning, DataWarning
from crowdbayes.models.comparisons import CrowdBT

#: (kind, faithful, flipped) per worker; the rest of the time a coin flip
KINDS = (("reliable", 0.9, 0.0), ("near random", 0.1, 0.0), ("adversarial", 0.2, 0.7))
PER_KIND = 4
STRATEGIES = {
    "crowdbt": ("random", "", "+reliability", "+oracle"),
    "crowdgppl": ("random", "", "+workers"),
}


# --------------------------------------------------------------------------- the world
class Crowd:
    """Persistent workers answering pairs of items with utilities ``f`` (module docstring)."""

    def __init__(self, f: np.ndarray) -> None:
        self.f = f
        self.kind = np.repeat([k for k, _, _ in KINDS], PER_KIND)
        self.faithful = np.repeat([p for _, p, _ in KINDS], PER_KIND)
        self.flipped = np.repeat([q for _, _, q in KINDS], PER_KIND)
        self.ids = np.array([f"w{j}" for j in range(len(self.kind))], dtype=object)

    def answer(self, left, right, worker, rng: np.random.Generator) -> np.ndarray:
        """Whether the left item is preferred, for item codes and worker codes."""
        truth = rng.random(len(left)) < ndtr((self.f[left] - self.f[right]) / np.sqrt(2.0))
        u = rng.random(len(left))
        faithful, flipped = self.faithful[worker], self.flipped[worker]
        coin = rng.random(len(left)) < 0.5
        return np.where(u < faithful, truth, np.where(u < faithful + flipped, ~truth, coin))


def random_pairs(n_items: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    left = rng.integers(n_items, size=n)
    return left, (left + rng.integers(1, n_items, size=n)) % n_items


# --------------------------------------------------------------------------- one replay
def one_replay(args, seed: int, model_name: str, strategy: str) -> pd.DataFrame:
    """Strategy ``strategy`` of ``model_name`` on the world of ``seed`` (module docstring)."""
    _, features, f = simulate_items(args.items, 1, seed)
    items = pd.Index([f"i{k}" for k in range(args.items)], name="item")
    features.index = items
    crowd = Crowd(f)
    available_rng = np.random.default_rng([seed, 1])
    start_rng = np.random.default_rng([seed, 2])
    answer_rng = np.random.default_rng([seed, 3])
    choice_rng = np.random.default_rng([seed, 4])
    left, right = random_pairs(args.items, args.start, start_rng)
    worker = start_rng.integers(len(crowd.ids), size=args.start)
    won = crowd.answer(left, right, worker, start_rng)
    asked = [(left, right, worker, won)]
    model = None
    rows = []
    while True:
        left, right, worker, won = (np.concatenate(c) for c in zip(*asked, strict=True))
        table = pd.DataFrame(
            {
                "worker": crowd.ids[worker],
                "left": items[left],
                "right": items[right],
                "label": np.where(won, items[left], items[right]),
            }
        )
        start = time.perf_counter()
        model = fit(args, model_name, model, table, features, seed)
        utility = model.utility_["mean"].reindex(items, fill_value=0.0).to_numpy()
        rows.append(
            {
                "n_answers": len(table),
                "spearman": float(spearmanr(utility, f)[0]),
                "kendall": float(kendalltau(utility, f)[0]),
                "reliable share": float(np.mean(crowd.kind[worker] == "reliable")),
                "seconds": time.perf_counter() - start,
            }
        )
        if len(table) >= args.budget:
            break
        n = min(args.batch, args.budget - len(table))
        available = np.sort(available_rng.choice(len(crowd.ids), args.available, replace=False))
        left, right, worker = choose(
            model, strategy, n, available, crowd, items, args.items, choice_rng
        )
        if not len(left):
            break  # nothing left worth asking
        asked.append((left, right, worker, crowd.answer(left, right, worker, answer_rng)))
    record = pd.DataFrame(rows)
    print(
        f"seed {seed:2d} {model_name:9s} {strategy:24s} final spearman "
        f"{record['spearman'].iloc[-1]:.3f} kendall {record['kendall'].iloc[-1]:.3f} "
        f"({record['seconds'].sum():.0f} s, load {load_average()})",
        flush=True,
    )
    return record.assign(seed=seed, model=model_name, strategy=strategy)


def fit(args, model_name: str, model, table: pd.DataFrame, features: pd.DataFrame, seed: int):
    """CrowdBT refitted cold (it has no warm start); CrowdGPPL refitted warm."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (ConvergenceWarning, DataWarning))
        if model_name == "crowdbt":
            return CrowdBT().fit(table)
        if model is None:
            options = Namespace(
                lengthscale="auto", model="crowdgppl", components=args.components, variant="crowd"
            )
            model = make_model(options, seed)
            return model.fit(Comparisons(table, items=features))
        return model.fit(Comparisons(table, items=features), init=model)


def choose(model, strategy, n, available, crowd, items, n_items, rng):
    """The item codes and worker codes of the next ``n`` questions."""
    if strategy == "random":
        left, right = random_pairs(n_items, n, rng)
        return left, right, rng.choice(available, n, replace=False)
    base, _, rule = strategy.partition("+")
    if rule == "workers":
        asked = model.suggest(n, available=crowd.ids[available], strategy=base, random_state=rng)
        codes = pd.Index(crowd.ids).get_indexer(asked["worker"])
    else:
        asked = model.suggest(n, strategy=base, random_state=rng)
        codes = worker_order(model, rule, available, crowd, rng)
        codes = np.resize(codes, len(asked))  # one question per worker while they last
    left, right = items.get_indexer(asked["left"]), items.get_indexer(asked["right"])
    return left, right, codes


def worker_order(model, rule: str, available, crowd, rng) -> np.ndarray:
    """The available workers, in the order they get the task-only questions: at random, by
    CrowdBT's posterior mean reliability (prior mean for a worker not yet seen), or by the
    true margin of a right answer over a wrong one, ``faithful - flipped`` (ties at random)."""
    if rule == "":
        return rng.permutation(available)
    if rule == "reliability":
        a0, b0 = model.reliability_prior
        value = model.reliability_["mean"].reindex(crowd.ids[available]).fillna(a0 / (a0 + b0))
        value = value.to_numpy()
    elif rule == "oracle":
        value = crowd.faithful[available] - crowd.flipped[available]
    else:
        raise ValueError(f"unknown worker rule {rule!r}")
    return available[np.lexsort((rng.random(len(available)), -value))]


# --------------------------------------------------------------------------- the report
def comparisons(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """For each model, each strategy against ``random`` and each worker-aware one against
    ``information``: paired differences of ``metric`` at the final budget and over all
    budgets (mean of the per-seed means, its s.e.), and the budgets where it is above or below
    by more than two paired standard errors."""
    rows = []
    for model_name, group in table.groupby("model"):
        by_seed = group.pivot_table(
            index=["seed", "n_answers"], columns="strategy", values=metric
        ).rename_axis(index=["fold", "n_answers"])
        names = list(by_seed.columns)
        tests = [(s, "random") for s in names if s != "random"]
        tests += [(s, s.partition("+")[0]) for s in names if "+" in s]
        final = by_seed.index.get_level_values("n_answers").max()
        for name, reference in tests:
            mean, error, count = paired_gap(by_seed, name, reference)
            area = (by_seed[name] - by_seed[reference]).groupby(level="fold").mean()
            rows.append(
                {
                    "model": model_name,
                    "strategy": name,
                    "against": reference,
                    "seeds": int(count.loc[final]),
                    f"final {metric} difference (s.e.)": f"{mean.loc[final]:+.4f} "
                    f"({error.loc[final]:.4f})",
                    "area difference (s.e.)": f"{area.mean():+.4f} "
                    f"({area.std() / np.sqrt(len(area)):.4f})",
                    "budgets above by > 2 s.e.": int(((mean > 2 * error) & (count > 1)).sum()),
                    "budgets below by > 2 s.e.": int(((mean < -2 * error) & (count > 1)).sum()),
                    "budgets": len(mean),
                }
            )
    return pd.DataFrame(rows)


def report(args, table: pd.DataFrame, output: Path, seconds: float) -> None:
    final = table[table["n_answers"] == table["n_answers"].max()]
    means = final.groupby(["model", "strategy"])[["spearman", "kendall", "reliable share"]].agg(
        ["mean", "sem"]
    )
    means.columns = [f"{m} ({s})" if s == "sem" else m for m, s in means.columns]
    budgets = sorted({args.start, 30, 60, 100, args.budget} & set(table["n_answers"]))
    curves = table[table["n_answers"].isin(budgets)].pivot_table(
        index="n_answers", columns=["model", "strategy"], values="spearman"
    )
    curves.columns = [f"{m}: {s}" for m, s in curves.columns]
    gppl = table[table["model"] == "crowdgppl"].pivot_table(
        index=["seed", "n_answers"], columns="strategy", values="spearman"
    )
    lines = [
        f"## Final ranking ({args.budget} answers): mean over {args.seeds} seeds (s.e.)",
        "",
        "`reliable share`: the share of all answers (start included) given by reliable workers.",
        "",
        markdown_table(means),
        "",
        "## Paired differences (seeds paired), Spearman",
        "",
        markdown_table(comparisons(table, "spearman"), index=False),
        "",
        "## Paired differences (seeds paired), Kendall",
        "",
        markdown_table(comparisons(table, "kendall"), index=False),
        "",
        "## Mean Spearman at some budgets",
        "",
        markdown_table(curves.rename_axis("answers")),
        "",
        *worker_aware_section(
            worker_aware_table(gppl.rename_axis(index=["fold", "n_answers"])) if len(gppl) else None
        ),
        f"Every round: `{output.with_suffix('.csv.gz').name}`.",
    ]
    details = [
        f"- world: {args.items} items, 12 workers ("
        + ", ".join(f"{PER_KIND} {k}: faithful {p}, flipped {q}" for k, p, q in KINDS)
        + f"), {args.available} available per round, {args.batch} questions per round, start "
        f"{args.start}, budget {args.budget}; CrowdBT defaults (flip noise, prior (2, 1)), "
        f"CrowdGPPL C = {args.components}, ties half, length-scales auto",
        f"- replays: {seconds:.0f} s; load average at the end: {load_average()}",
    ]
    title = "What to ask next, pairs: worker-aware selection on a simulated crowd"
    write_markdown_report(output, title, lines, details, echo=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--start", type=int, default=6)
    parser.add_argument("--batch", type=int, default=3)
    parser.add_argument("--available", type=int, default=6, help="workers available per round")
    parser.add_argument("--budget", type=int, default=180)
    parser.add_argument("--components", type=int, default=3, help="CrowdGPPL's C")
    parser.add_argument("--models", default="crowdbt,crowdgppl", help="comma-separated")
    parser.add_argument(
        "--strategy",
        default="information",
        choices=["information", "mixed", "power", "uncertainty"],
        help="the models' task-only pair strategy (the names below use 'information')",
    )
    parser.add_argument("--jobs", type=int, default=1, help="replays run in parallel processes")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    if args.available > 12 or args.batch > args.available or args.batch < 1:
        parser.error("need 1 <= --batch <= --available <= 12 (the crowd has 12 workers)")
    output = args.output or Path(tempfile.gettempdir()) / "active_pairs_workers.md"
    runs = [
        (seed, model_name, strategy)
        for seed in range(args.seeds)
        for model_name in args.models.split(",")
        for suffix in STRATEGIES[model_name]
        for strategy in [suffix if suffix == "random" else args.strategy + suffix]
    ]
    start = time.perf_counter()
    table = pd.concat(
        run_in_processes(partial(one_replay, args), runs, args.jobs), ignore_index=True
    )
    seconds = time.perf_counter() - start
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output.with_suffix(".csv.gz"), index=False, float_format="%.6g")
    report(args, table, output, seconds)


if __name__ == "__main__":
    main()
