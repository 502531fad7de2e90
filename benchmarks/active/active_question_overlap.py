"""Do information gain and entropy ask different questions? (issue 16, labels replay).

The labels replay (``active_labels.py``) found the default strategy (expected information gain
on the task's class, ``information``) and plain uncertainty sampling (the entropy of the class
posterior, ``uncertainty``) within 0.001–0.01 of each other in area on every set. This script
measures why: at the same fitted posterior, which tasks each strategy would ask next.

For binary classes and one confusion matrix θ for every question (a task-only question: the
answering worker is unknown, so ``suggest`` uses the label-weighted mean worker), the
information gain :math:`I(c; x) = H(p) - \\sum_x q_x H(p'(x))` is a function of the task's
one free probability :math:`p_1` alone, with a single maximum (at 0.5 when θ is symmetric), and
so is the entropy :math:`H(p_1)`. Two unimodal functions of the same scalar order tasks alike
on each side of their peaks: the two strategies can only differ on tasks on opposite sides of
the peaks, by how far the peaks lie apart. With more classes, information gain also weighs
*which* classes are confused against what the typical worker tells apart.

For every set with gold, three seeds: one random label per task (the replay's start), then the
states reached by round-robin after 10%, 30% and 60% of the held-back labels (at the start
itself every task has the same posterior, so every strategy asks a random batch); at each, a
fit of
``BayesianDawidSkene`` and the next batch (5% of the tasks, as in the replay) of each strategy
over the tasks with a held-back label. Reported: the share of the information batch that
entropy would also ask (and the knowledge-gradient ``accuracy`` strategy, for contrast), and
the Spearman correlation of the two scores over all candidates.

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/active/active_question_overlap.py \\
        --output benchmarks/active/results/active_question_overlap.md
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import markdown_table, resolve_data_root, write_markdown_report  # noqa: E402
from crowdbayes.active import LabelPool  # noqa: E402
from crowdbayes.datasets import load_labels  # noqa: E402
from crowdbayes.models.labels import BayesianDawidSkene  # noqa: E402

SETS = (
    "bluebird", "d_possent", "d_product", "dog", "duchenne", "rte",
    "s_adult", "s_rel", "temp", "trec", "web", "wsd",
)  # fmt: skip
# share of the held-back labels revealed by round-robin; not the start itself: at one label per
# task every task has the prior's posterior (the cut of single-worker tasks), all scores tie and
# every strategy asks a random batch
STAGES = (0.1, 0.3, 0.6)
CONTRASTS = ("uncertainty", "accuracy")


def advance(pool: LabelPool, share: float, batch: int, rng: np.random.Generator) -> None:
    """Reveal round-robin batches until ``share`` of the held-back labels are seen."""
    target = pool.n_observed + int(round(share * pool.n_remaining))
    while pool.n_observed < target and pool.n_remaining:
        n = min(batch, target - pool.n_observed)
        pool.reveal(pool.baseline("round_robin", n, rng), rng)


def compare(model, candidates, n: int, seed: int) -> dict:
    """Share of the ``information`` batch each contrast would also ask, and the Spearman
    correlation of the information and entropy scores over every candidate."""
    asked = {}
    for strategy in ("information", *CONTRASTS):
        asked[strategy] = model.suggest(
            len(candidates), candidates=candidates, strategy=strategy, random_state=seed
        )
    top = set(asked["information"]["task"].iloc[:n])
    row = {
        f"shared with {name}": len(top & set(asked[name]["task"].iloc[:n])) / n
        for name in CONTRASTS
    }
    scores = [asked[s].set_index("task")["score"] for s in ("information", "uncertainty")]
    row["spearman"] = spearmanr(scores[0], scores[1].reindex(scores[0].index)).statistic
    return row


def measure(name: str, seeds: int, share_per_round: float) -> list[dict]:
    data = load_labels(name)
    rows = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        pool = LabelPool(data.labels, data.gold, start=1, random_state=seed)
        n = max(1, int(round(share_per_round * pool.observed()["task"].nunique())))
        done = 0.0
        for stage in STAGES:
            advance(pool, (stage - done) / (1 - done), n, rng)
            done = stage
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = BayesianDawidSkene().fit(*pool.fit_args())
            row = compare(model, pool.candidates(False), n, seed)
            rows.append(
                {"set": name, "classes": len(model.classes_), "seed": seed, "stage": stage, **row}
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--batch", type=float, default=0.05, help="share of the tasks per round")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    resolve_data_root()
    started = time.time()
    rows = pd.DataFrame([r for name in args.sets for r in measure(name, args.seeds, args.batch)])
    columns = [f"shared with {c}" for c in CONTRASTS] + ["spearman"]
    per_set = rows.groupby(["set", "classes"])[columns].mean()
    per_stage = rows.assign(binary=rows["classes"] == 2).groupby(["binary", "stage"])[columns]
    run_time = f"- total run time {time.time() - started:.0f} s"
    lines = [
        __doc__.split("\n\n")[1],
        "",
        __doc__.split("\n\n")[2],
        "",
        f"## Per set (mean over {args.seeds} seeds and the stages {list(STAGES)})",
        "",
        markdown_table(per_set.reset_index(), digits=3, index=False),
        "",
        "## Binary against multi-class sets, by stage",
        "",
        markdown_table(per_stage.mean().reset_index(), digits=3, index=False),
    ]
    title = "Information gain against entropy: the questions each would ask"
    write_markdown_report(args.output, title, lines, [run_time], echo=True)


if __name__ == "__main__":
    main()
