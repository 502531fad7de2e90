"""Leaderboard judges (issue 44): how well Crowd-BT on counted battles rates judges, what it
costs at arena size, and whether judge-weighted scores rank the models better.

1. **Accuracy** (``--seeds`` boards): 12 models, 6,000 battles
   (:func:`crowdbayes.models.comparisons.simulate_battles`), 12 judges
   (:func:`~crowdbayes.models.comparisons._leaderboard_judges.simulate_judges`): eight vote by
   the model with probability 1, .95, .9, .85, .8, .7, .6, .5 and at random (model_a, model_b
   or tie, uniformly) otherwise, two vote at random, two flip nine votes in ten. Per noise model:
   Spearman of the reliabilities (and of the agreement) with the truth, and the range of the
   reliability of each kind of judge.
2. **Judge-weighted scores**: Kendall's tau of the board's scores and of the judge model's
   scores with the true scores, on the same boards, and on boards where one judge of twelve
   votes at random and the others are faithful with probability .5 to 1.
3. **Cost at arena size**: 2,000,000 battles of 200 models of Zipf-like popularity and 100
   judges (95 reliable, 5 random voters): the rows counted, the time of ``Leaderboard.fit`` with
   and without the judge column, and :class:`~crowdbayes.models.comparisons.CrowdBT` (which
   takes the battles one by one) on ``--crowd-bt-battles`` of them for the cost per battle.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/leaderboard/judges.py [--seeds 30]``
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections import defaultdict

import numpy as np
import pandas as pd
from scipy import stats

from crowdbayes.data import Battles
from crowdbayes.models.comparisons import CrowdBT, Leaderboard, simulate_battles
from crowdbayes.models.comparisons._leaderboard_judges import (
    JUDGE_PRIOR_SCALE,
    JudgeRows,
    fit_judges,
    simulate_judges,
)

RELIABILITY = np.array([1.0, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.0, 0.0, 0.1, 0.1])
KIND = ["random"] * 10 + ["flip"] * 2
GROUPS = {
    "faithful >= 0.8": [0, 1, 2, 3, 4],
    "faithful 0.6-0.7": [5, 6],
    "faithful 0.5": [7],
    "random voters": [8, 9],
    "adversaries": [10, 11],
}


def rows_of(battles: Battles) -> JudgeRows:
    return JudgeRows.of(
        battles.judge_ids,
        battles.judge_codes,
        battles.a,
        battles.b,
        battles.outcome,
        battles.n_models,
    )


def accuracy(seeds: int) -> None:
    print(f"## 1-2. Accuracy on {seeds} simulated boards\n")
    taus = defaultdict(list)
    for noise in ("flip", "random"):
        spearman, agreement, by_judge = [], [], defaultdict(list)
        for seed in range(seeds):
            sim = simulate_battles(12, 6000, random_state=seed)
            table = simulate_judges(sim.battles, RELIABILITY, kind=KIND, random_state=seed)
            battles = Battles(table, judge="judge")
            model = Leaderboard(judge_noise=noise).fit(battles)
            judges = model.judges_
            codes = [int(j[-2:]) for j in judges.index]
            truth = RELIABILITY[codes]
            spearman.append(stats.spearmanr(judges["reliability"], truth).statistic)
            agreement.append(stats.spearmanr(judges["agreement"], truth).statistic)
            for code, value in zip(codes, judges["reliability"], strict=True):
                by_judge[code].append(value)
            true = sim.scores.loc[model.item_ids_].to_numpy()
            board = model.board_["score"].loc[model.item_ids_].to_numpy()
            z = model._mode["z"]
            fit = fit_judges(
                rows_of(battles),
                len(true),
                z[: len(true)],
                theta=z[-1],
                noise=noise,
                prior_var=JUDGE_PRIOR_SCALE**2,
            )
            if noise == "flip":
                taus["board"].append(stats.kendalltau(board, true).statistic)
            taus[f"judge model ({noise})"].append(stats.kendalltau(fit.s, true).statistic)
        print(
            f"noise={noise}: Spearman(reliability, truth) min {min(spearman):.3f}, "
            f"mean {np.mean(spearman):.3f}, max {max(spearman):.3f}; "
            f"Spearman(agreement, truth) min {min(agreement):.3f}, mean {np.mean(agreement):.3f}"
        )
        for group, codes in GROUPS.items():
            values = np.concatenate([by_judge[c] for c in codes])
            print(f"  {group}: reliability {values.min():.3f}-{values.max():.3f}")
    print("\nKendall tau of the scores with the true scores (mean, min over boards):")
    for name, values in taus.items():
        print(f"  {name}: mean {np.mean(values):.3f}, min {min(values):.3f}")
    print()


#: one random voter among twelve judges (the milder case of section 2)
MILD = np.array([1.0, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.9, 0.9, 0.9, 0.0])


def mild(seeds: int) -> None:
    board, weighted = [], []
    for seed in range(seeds):
        sim = simulate_battles(12, 6000, random_state=seed)
        table = simulate_judges(sim.battles, MILD, kind="random", random_state=seed)
        battles = Battles(table, judge="judge")
        model = Leaderboard().fit(battles)
        true = sim.scores.loc[model.item_ids_].to_numpy()
        z = model._mode["z"]
        n = len(true)
        fit = fit_judges(rows_of(battles), n, z[:n], theta=z[-1], prior_var=JUDGE_PRIOR_SCALE**2)
        board.append(stats.kendalltau(z[:n], true).statistic)
        weighted.append(stats.kendalltau(fit.s, true).statistic)
    print("one random voter of twelve judges:")
    print(f"  board: mean {np.mean(board):.3f}, min {min(board):.3f}")
    print(f"  judge model (flip): mean {np.mean(weighted):.3f}, min {min(weighted):.3f}\n")


def cost(n_battles: int, crowd_bt_battles: int) -> None:
    print(f"## 3. Cost: {n_battles:,} battles, 200 models, 100 judges\n")
    sim = simulate_battles(200, n_battles, popularity=1.0, random_state=0)
    rng = np.random.default_rng(0)
    reliability = np.r_[rng.uniform(0.6, 1.0, 95), np.zeros(5)]
    table = simulate_judges(sim.battles, reliability, random_state=0)
    battles = Battles(table, judge="judge")
    plain = Battles(table.drop(columns="judge"))
    start = time.perf_counter()
    rows = rows_of(battles)
    counting = time.perf_counter() - start
    print(f"rows (judge, pair, outcome): {len(rows.count):,} (counted in {counting:.2f} s)")
    for name, data in (("without judges", plain), ("with judges (flip)", battles)):
        start = time.perf_counter()
        model = Leaderboard().fit(data)
        print(f"Leaderboard.fit {name}: {time.perf_counter() - start:.2f} s")
    judges = model.judges_
    truth = reliability[[int(j[-2:]) for j in judges.index]]
    rho = stats.spearmanr(judges["reliability"], truth).statistic
    print(
        f"  Spearman(reliability, truth) {rho:.3f}; "
        f"flagged: {', '.join(judges.index[judges['flagged']])}"
    )
    start = time.perf_counter()
    Leaderboard(judge_noise="random").fit(battles)
    print(f"Leaderboard.fit with judges (random): {time.perf_counter() - start:.2f} s")
    part = table.iloc[:crowd_bt_battles]
    label = np.where(
        part["winner"] == "model_a",
        part["model_a"],
        np.where(part["winner"] == "model_b", part["model_b"], "equal"),
    )
    comparisons = pd.DataFrame(
        {"worker": part["judge"], "left": part["model_a"], "right": part["model_b"], "label": label}
    )
    start = time.perf_counter()
    crowd = CrowdBT(noise="flip").fit(comparisons)
    seconds = time.perf_counter() - start
    print(
        f"CrowdBT on {crowd_bt_battles:,} battles one by one: {seconds:.2f} s "
        f"({crowd.n_iter_} iterations, {seconds / crowd.n_iter_ * 1e3:.1f} ms each)"
    )
    start = time.perf_counter()
    Leaderboard().fit(Battles(part, judge="judge"))
    print(
        f"Leaderboard.fit with judges on the same {crowd_bt_battles:,}: "
        f"{time.perf_counter() - start:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--n-battles", type=int, default=2_000_000)
    parser.add_argument("--crowd-bt-battles", type=int, default=200_000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    accuracy(args.seeds)
    mild(args.seeds)
    cost(args.n_battles, args.crowd_bt_battles)
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
