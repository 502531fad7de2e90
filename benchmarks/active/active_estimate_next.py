r"""The expected accuracy ``crowdbayes labels next`` prints, in the collection loop it serves.

``labels next`` chooses with BayesianDawidSkene (its ``uncertainty_changes`` rule) and, without
``--model``, prints the expected accuracy (no gold) of the answers ``labels fit`` gives — the
hierarchical model's — rather than the chooser's own (issue 43). ``active_estimate.py`` judges
both estimates on *random* labels (2 or 3 per task); here they are judged on the labels the
loop itself asks for. The accepted criterion (the adaptive-collection issue's restatement 3):
the gold-free estimate within 0.04 of the agreement with the same model fitted on every label
of the pool (on every task: what more labels would change, which the estimate can know), and
unbiased to 0.01.

Replay (as ``active_labels_next_model.py``, arm ``bdsuc``): one random label per task to start,
rounds of a quarter of the tasks chosen by BayesianDawidSkene (refitted warm) with
``uncertainty_changes``, the pool's next unused real label of each requested task revealed, up
to four labels per task. After each round:

- ``HA``: ``HierarchicalAnnotation()`` at its defaults fitted cold on the labels revealed (what
  ``labels next`` prints now); its expected accuracy over every task against the share of
  tasks on which its answer equals the full-pool hierarchical fit's;
- ``BDS``: the chooser's own fit (what it printed before), against the full-pool
  BayesianDawidSkene fit's answers.

The questions are the same for both (the chooser never reads the hierarchical fits). Reported
per set and overall at 2, 2.25, …, 4 labels per task (the last fit at or below each): the mean
absolute gap and the mean signed gap (estimate − agreement).

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/active/active_estimate_next.py \
        [--sets rte temp] [--seeds 3] [--jobs 2] [--cache /tmp/estimate_next] \
        [--output benchmarks/active/results/active_estimate_next.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from active_labels_next_model import HierarchicalScored, ScoredRefit  # noqa: E402
from active_labels_taskonly import GRID, SETS, replay  # noqa: E402

from _common import markdown_table, write_markdown_report  # noqa: E402
from crowdbayes import Labels  # noqa: E402
from crowdbayes.active import WarmRefit  # noqa: E402
from crowdbayes.datasets import load_labels  # noqa: E402
from crowdbayes.models.labels import BayesianDawidSkene, HierarchicalAnnotation  # noqa: E402

STRATEGY = "uncertainty_changes"
#: criterion: |estimate − agreement| at most this on average, and the mean signed gap within
#: ``BIAS`` of zero
GAP, BIAS = 0.04, 0.01


def full_pool_answers(name: str, which: str) -> pd.Series:
    """The answers of ``which`` (``HA`` or ``BDS``) fitted on every label of the set."""
    labels = load_labels(name).labels
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if which == "HA":
            return HierarchicalAnnotation(n_jobs=1, random_state=0).fit(labels).labels_
        return BayesianDawidSkene().fit(labels).labels_


class ArrivalOrderRefit(ScoredRefit):
    """:class:`ScoredRefit` with the hierarchical model fitted to the revealed labels in the
    order they arrived, as a labels file appended to round after round would hold them: the
    order its calibration reads (each label against its task's earlier labels;
    ``crowdbayes.models.labels._calibration``). The pool itself keeps its table's order."""

    def __init__(self) -> None:
        super().__init__()
        self.arrival: np.ndarray | None = None
        self.round = 0

    def scorer_labels(self, pool):
        if self.arrival is None:
            self.arrival = np.full(len(pool.table), -1)
        self.arrival[(self.arrival < 0) & pool.seen] = self.round
        self.round += 1
        order = np.argsort(self.arrival[pool.seen], kind="stable")
        return Labels(pool.observed().iloc[order], classes=pool.classes, duplicates="keep")


def one_replay(name: str, which: str, seed: int, cache: Path) -> pd.DataFrame:
    """The replay of the module docstring on ``name`` scored by ``which``: the pool's "gold" is
    the full-pool answers of that model on every task, so ``accuracy`` is the agreement and
    ``estimated_accuracy`` the expected accuracy over every task."""
    path = cache / f"{name}__{which}__{seed}.csv"
    if which == "HA":
        model, refit = HierarchicalScored("bdsuc", seed), ArrivalOrderRefit()
    else:
        model, refit = BayesianDawidSkene(), WarmRefit(0.25)
    gold = None if path.exists() else full_pool_answers(name, which)
    return replay(path, name, seed, model, refit, STRATEGY, rule=which, gold=gold)


def gaps(record: pd.DataFrame) -> pd.DataFrame:
    """estimate − agreement at :data:`GRID` labels per task (the last fit at or below each)."""
    index = np.searchsorted(record["per_task"].to_numpy(), GRID + 1e-9, side="right") - 1
    rows = record.iloc[np.clip(index, 0, len(record) - 1)]
    signed = rows["estimated_accuracy"].to_numpy() - rows["accuracy"].to_numpy()
    first = record.iloc[0]
    return pd.DataFrame(
        {"set": first["set"], "model": first["rule"], "seed": first["seed"], "at": GRID,
         "signed": signed, "absolute": np.abs(signed)}
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2, help="replays run in parallel")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/estimate_next"))
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    jobs = [(n, m, s) for s in range(args.seeds) for n in args.sets for m in ("HA", "BDS")]
    with ProcessPoolExecutor(args.jobs) as executor:
        futures = {executor.submit(one_replay, *job, args.cache): job for job in jobs}
        for future in as_completed(futures):
            job = " ".join(map(str, futures[future]))
            print(f"{job} done ({time.perf_counter() - start:.0f} s)", flush=True)
    table = pd.concat([gaps(future.result()) for future in futures], ignore_index=True)
    per_set = table.groupby(["set", "model"])[["absolute", "signed"]].mean().unstack("model")
    per_set.columns = [f"{model}: {what} gap" for what, model in per_set.columns]
    overall = table.groupby("model")[["absolute", "signed"]].mean()
    by_depth = table.groupby(["at", "model"])[["absolute", "signed"]].mean().unstack("model")
    by_depth.columns = [f"{model}: {what} gap" for what, model in by_depth.columns]
    verdicts = [
        f"- {model}: mean absolute gap {row['absolute']:.4f} (criterion ≤ {GAP}), mean signed "
        f"gap {row['signed']:+.4f} (criterion within ±{BIAS}) — "
        + ("**met**" if row["absolute"] <= GAP and abs(row["signed"]) <= BIAS else "**not met**")
        for model, row in overall.iterrows()
    ]
    lines = [
        f"Questions by BayesianDawidSkene with `{STRATEGY}` (refitted warm), one random label "
        f"per task to start, rounds of 25% of the tasks; {args.seeds} seeds per set; gaps "
        "(estimate − agreement with the same model's full-pool answers, over every task) at "
        "2, 2.25, …, 4 labels per task. `HA`: HierarchicalAnnotation() refitted cold each "
        "round (what `labels next` prints without `--model`); `BDS`: the chooser's own fit.",
        "",
        "## Overall",
        "",
        *verdicts,
        "",
        "## By labels per task (mean over sets and seeds)",
        "",
        markdown_table(by_depth),
        "",
        "## Per set (mean over depths and seeds)",
        "",
        markdown_table(per_set),
    ]
    run_time = f"- total run time {time.perf_counter() - start:.0f} s (cached replays count 0)"
    title = "The expected accuracy `labels next` prints, judged in its own collection loop"
    write_markdown_report(args.output, title, lines, [run_time], echo=True)


if __name__ == "__main__":
    main()
