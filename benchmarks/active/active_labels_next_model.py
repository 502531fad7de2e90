r"""Which model should ``crowdbayes labels next`` choose its questions with (issue 43 item 1)?
Replayed as ``active_labels_taskonly.py`` does, but scored by the model whose answers a user
keeps: ``HierarchicalAnnotation()`` at its defaults (the default of ``labels fit``), refitted
cold on the revealed labels after every round.

The issue's own protocol scores every arm with BayesianDawidSkene
(``active_labels_taskonly.py``; with ``--chooser hierarchical`` the hierarchical model chooses
there too). A model that chooses well only for itself would win that protocol and lose here,
so the default of ``labels next`` is judged under both scorers. Arms (the model that chooses,
and its task-only strategy):

- ``hier`` — HierarchicalAnnotation, ``uncertainty`` (the posterior entropy): the default of
  ``labels next`` until issue 43's stop 53 (the scorer's own fit chooses);
- ``bds`` — BayesianDawidSkene refitted warm (`crowdbayes.active.WarmRefit`), ``uncertainty``;
- ``bdsuc`` — BayesianDawidSkene, ``uncertainty_changes`` (its task-only ``auto``).

Start from one random label per task, rounds of a quarter of the tasks, the pool's next
unused real label of each requested task revealed, up to four labels per task; the score of a
replay is its mean accuracy on gold at 2, 2.25, …, 4 labels per task (the last fit at or below
each). Paired over seeds (the same start and reveal seed for every arm).

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/active/active_labels_next_model.py \
        [--sets rte temp] [--seeds 6] [--arms hier bdsuc] [--cache /tmp/hsc] \
        [--output benchmarks/active/results/active_labels_next_model.md]

Each replay is kept in ``--cache`` (a CSV per set, arm and seed), so a stopped run resumes;
a hierarchical refit each round makes a replay take about half a minute.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from active_labels_taskonly import SETS, ScorerAnswers, paired, replay, score  # noqa: E402

from _common import markdown_table, write_markdown_report  # noqa: E402
from crowdbayes.active import WarmRefit  # noqa: E402
from crowdbayes.models.labels import BayesianDawidSkene, HierarchicalAnnotation  # noqa: E402

#: arm -> (the model that chooses, its strategy)
ARMS = {
    "hier": ("HierarchicalAnnotation", "uncertainty"),
    "bds": ("BayesianDawidSkene", "uncertainty"),
    "bdsuc": ("BayesianDawidSkene", "uncertainty_changes"),
}
#: the arm every other is compared with (the former default of ``labels next``)
BASELINE = "hier"


class HierarchicalScored(ScorerAnswers):
    """What `simulate` reads of a model: the questions of the arm's chooser, the answers of
    the hierarchical fit of :class:`ScoredRefit` (:class:`ScorerAnswers`)."""

    def __init__(self, arm: str, seed: int) -> None:
        self.arm = arm
        self.rng = np.random.default_rng(seed)
        self.scorer = None  # HierarchicalAnnotation on the labels revealed so far
        self.bds = BayesianDawidSkene()

    def suggest(self, n, **options) -> pd.DataFrame:
        chooser = self.scorer if ARMS[self.arm][0] == "HierarchicalAnnotation" else self.bds
        return chooser.suggest(n, **options)


class ScoredRefit:
    """Each round: the hierarchical model fitted cold (``n_jobs=1``; its seed drawn from the
    replay's) and, for a BayesianDawidSkene arm, that model refitted warm."""

    def __init__(self) -> None:
        self.warm = WarmRefit(0.25)

    def __call__(self, model: HierarchicalScored, pool) -> HierarchicalScored:
        labels = self.scorer_labels(pool)
        seed = int(model.rng.integers(2**31))
        model.scorer = HierarchicalAnnotation(n_jobs=1, random_state=seed).fit(labels)
        if ARMS[model.arm][0] == "BayesianDawidSkene":
            model.bds = self.warm(model.bds, pool)
        return model

    def scorer_labels(self, pool):
        """The labels the hierarchical model is fitted to: the revealed ones, in the pool's
        order."""
        return pool.fit_args()[0]


def run(name: str, arm: str, seed: int, cache: Path) -> pd.DataFrame:
    path, model = cache / f"{name}__{arm}__{seed}.csv", HierarchicalScored(arm, seed)
    return replay(path, name, seed, model, ScoredRefit(), ARMS[arm][1], arm)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--arms", nargs="*", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=2, help="replays run in parallel")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/active_labels_next_model"))
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    if BASELINE not in args.arms:
        parser.error(f"--arms must include {BASELINE!r} (the comparisons are against it)")
    args.cache.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    jobs = [(n, a, s) for s in range(args.seeds) for n in args.sets for a in args.arms]
    with ProcessPoolExecutor(args.jobs) as executor:
        futures = {executor.submit(run, *job, args.cache): job for job in jobs}
        for future in as_completed(futures):
            job = " ".join(map(str, futures[future]))
            print(f"{job} done ({time.perf_counter() - start:.0f} s)", flush=True)
    records = [future.result() for future in futures]
    scores = pd.DataFrame(
        [{"set": r["set"].iloc[0], "rule": r["rule"].iloc[0], "seed": r["seed"].iloc[0],
          "score": score(r), "seconds": r["seconds"].sum()} for r in records]
    )  # fmt: skip
    means = scores.groupby(["set", "rule"])["score"].mean().unstack()[args.arms]
    seeds = scores.groupby("rule")["seed"].nunique()
    lines = [
        "Questions chosen by each arm's model (`hier`: HierarchicalAnnotation at its defaults "
        "with `uncertainty`; `bds`: BayesianDawidSkene refitted warm with `uncertainty`; "
        "`bdsuc`: BayesianDawidSkene with `uncertainty_changes`); accuracy scored by "
        "HierarchicalAnnotation() refitted cold each round (n_jobs=1); start one random label "
        "per task; rounds of 25% of the tasks; seeds 0 to n−1 per arm ("
        + ", ".join(f"{a} {seeds[a]}" for a in args.arms)
        + "; paired: the same start and reveal seed for every arm); score = mean accuracy on "
        "gold at 2, 2.25, …, 4 labels per task (the last fit at or below each).",
        "",
        "## Mean accuracy at 2–4 labels per task",
        "",
        markdown_table(means),
        "",
        "mean over sets: " + ", ".join(f"{a} {means[a].mean():.4f}" for a in args.arms),
        "",
        f"## Each arm minus `{BASELINE}` (paired over the seeds both have)",
        "",
    ]
    for arm in args.arms:
        if arm == BASELINE:
            continue
        gap = paired(scores, arm, BASELINE)
        below = gap.index[gap["gap"] + 2 * gap["s.e."] < 0]
        lines += [
            f"### {arm} − {BASELINE}",
            "",
            markdown_table(gap),
            "",
            f"mean {gap['gap'].mean():+.4f}; below `{BASELINE}` by more than two paired s.e. on "
            + (", ".join(below) if len(below) else "no set")
            + "; by more than one on "
            + (", ".join(gap.index[gap["gap"] + gap["s.e."] < 0]) or "no set"),
            "",
        ]
    seconds = scores.groupby("rule")["seconds"].mean()
    lines.append(
        "mean seconds per replay: " + ", ".join(f"{r} {s:.1f}" for r, s in seconds.items())
    )
    run_time = (
        f"- total run time {time.perf_counter() - start:.0f} s (cached replays count 0); the "
        f"replays' own time {scores['seconds'].sum():.0f} s (suggestions and refits)"
    )
    title = "Which model `labels next` should choose with, scored by the hierarchical model"
    write_markdown_report(args.output, title, lines, [run_time], echo=True)


if __name__ == "__main__":
    main()
