"""What to show next to a Plackett–Luce model: ``crowdbayes rank next`` replayed on the recorded
car choices, against random sets.

Data: the stated car choices of McFadden & Train (2000) (``$CROWDBAYES_DATA/prefs/car_choice``;
4,654 respondents, each chose one of six hypothetical cars; 17 car features, the cars unique to
their set). Model: :class:`crowdbayes.PlackettLuceVI` (``rank next``'s default model), its prior
precision η fixed to the value ``eta="auto"`` (the command's default) chooses on all the data,
so that every refit is one fit and not thirteen.

Protocol (:func:`crowdbayes.active.rankings.replay_choice_sets`): ``--start`` recorded sets
drawn at random are revealed; each round an arm chooses ``--batch`` of the sets not revealed
yet, the replay reveals the choice each respondent actually made, and the model is refitted,
until every set is revealed. Arms:

- ``random``: sets drawn uniformly;
- ``information``: ``rank next`` at its defaults — never-shown items first (on this data every
  candidate set shows six new cars, so this never decides) then the expected information gain
  about the utilities (BALD, 256 seeded posterior draws), best first;
- ``coverage`` (``--arms``): never-shown items first, ties in a random order — on this data
  the same design as ``random`` (a check of the replay, not a strategy).

Metric: the top-10 overlap — the share of the ten cars of highest posterior mean utility (among
all 27,924) that are also among the ten of the fit to all 4,654 sets. Reported per arm: the mean
curve, and per seed the number of sets after which the overlap is 10/10 and stays there to the
end ("reach and hold"; also at 9/10), with the ratio to ``random`` on the same seed (the same
starting sets). The issue's criterion: the full-data top-10 overlap with at most 60% of the
sets random selection needs.

Usage (from the repository root; two shared cores)::

    OMP_NUM_THREADS=1 CROWDBAYES_DATA=/work/shared/data nice -n 19 .venv/bin/python \\
        benchmarks/active/rank_next_replay.py --jobs 2 \\
        --output benchmarks/active/results/rank_next_replay.md

A CSV of every round is written beside the report (``.csv.gz``); ``--from-csv PATH --arms
A,B`` writes the report of those arms from such a CSV without replaying.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np
import pandas as pd

from _common import (
    load_average,
    markdown_table,
    resolve_data_root,
    results_dir,
    run_in_processes,
    write_markdown_report,
)

RESULTS = results_dir(__file__)
TOP = 10


def _data():
    from crowdbayes.datasets import load_car_choice

    return load_car_choice()


def _top(model, items) -> set:
    return set(model.predict_utility(items)["mean"].nlargest(TOP).index)


def reference() -> tuple[float, set, float]:
    """η chosen by ``eta="auto"`` on all the sets, the top ten of that fit, its CPU seconds."""
    from crowdbayes import PlackettLuceVI

    data = _data()
    start = time.process_time()
    full = PlackettLuceVI(eta="auto").fit(data.rankings, items=data.items)
    return float(full.eta_), _top(full, data.items), time.process_time() - start


def replay(arm: str, seed: int, eta: float, top: set, start: int, batch: int) -> pd.DataFrame:
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from crowdbayes import PlackettLuceVI
    from crowdbayes.active.rankings import replay_choice_sets

    data = _data()
    strategy = {"random": "random", "coverage": "random"}.get(arm, arm)  # else a strategy
    clock = time.process_time()
    record = replay_choice_sets(
        PlackettLuceVI(eta=eta),
        data.rankings,
        data.items,
        start=start,
        batch=batch,
        score=lambda model: len(_top(model, data.items) & top) / TOP,
        strategy=strategy,
        coverage=arm != "random",
        random_state=seed,
    )
    cpu = time.process_time() - clock
    return record.assign(arm=arm, seed=seed, cpu=cpu)


def held_from(record: pd.DataFrame, level: float) -> int:
    """The sets after which the overlap is at least ``level`` and stays so to the end."""
    below = np.flatnonzero(record["score"].to_numpy() < level - 1e-9)
    n = record["n_sets"].to_numpy()
    return int(n[0] if not below.size else n[min(below[-1] + 1, len(n) - 1)])


def first_at(record: pd.DataFrame, level: float) -> int:
    reached = np.flatnonzero(record["score"].to_numpy() >= level - 1e-9)
    return int(record["n_sets"].to_numpy()[reached[0]])


def summary(rounds: pd.DataFrame, total: int) -> list[str]:
    lines = []
    curve = rounds.pivot_table(index="n_sets", columns="arm", values="score", aggfunc="mean")
    shown = [k for k in range(len(curve)) if k % 5 == 0 or k == len(curve) - 1]
    curve = curve.iloc[shown]
    curve.index = [f"{n} ({n / total:.0%})" for n in curve.index]
    lines += [
        "## Mean top-10 overlap with the full-data fit, by sets revealed",
        "",
        "(every fifth round; every round in the CSV)",
        "",
        markdown_table(curve.rename_axis("sets revealed"), digits=2),
        "",
    ]
    rows = []
    for (arm, seed), record in rounds.groupby(["arm", "seed"]):
        record = record.sort_values("n_sets")
        rows.append(
            {
                "arm": arm,
                "seed": seed,
                "10/10 held from": held_from(record, 1.0),
                "10/10 first": first_at(record, 1.0),
                "9/10 held from": held_from(record, 0.9),
                "CPU s": float(record["cpu"].iloc[0]),
            }
        )
    needs = pd.DataFrame(rows)
    random = needs[needs["arm"] == "random"].set_index("seed")
    for column in ("10/10 held from", "9/10 held from"):
        needs[f"{column} / random"] = (
            needs[column].to_numpy() / random.loc[needs["seed"], column].to_numpy()
        )
    lines += [
        "## Sets each arm needs, per seed (the same starting sets for every arm of a seed)",
        "",
        markdown_table(needs, digits=2, index=False),
        "",
    ]
    by_arm = needs.groupby("arm")
    agg = pd.DataFrame(
        {
            "10/10 held from (median)": by_arm["10/10 held from"].median(),
            "as a share of the sets": by_arm["10/10 held from"].median() / total,
            "ratio to random (median over seeds)": by_arm["10/10 held from / random"].median(),
            "ratio to random (mean)": by_arm["10/10 held from / random"].mean(),
            "9/10 held from (median)": by_arm["9/10 held from"].median(),
            "9/10 ratio to random (median)": by_arm["9/10 held from / random"].median(),
        }
    )
    lines += ["## Summary", "", markdown_table(agg.rename_axis("arm"), digits=3), ""]
    ratio = agg.loc["information", "ratio to random (median over seeds)"]
    verdict = "met" if ratio <= 0.6 else "not met"
    lines += [
        f"Criterion (10/10 held with at most 60% of the sets random needs, median over seeds): "
        f"ratio {ratio:.2f} — **{verdict}**.",
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--start", type=int, default=47, help="sets revealed first (1%%)")
    parser.add_argument("--batch", type=int, default=93, help="sets per round (2%%)")
    parser.add_argument("--arms", default="random,information,coverage")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--output", type=Path, default=RESULTS / "rank_next_replay.md")
    parser.add_argument(
        "--from-csv", type=Path, help="write the report of the --arms in this CSV (no replay)"
    )
    args = parser.parse_args()
    resolve_data_root()
    began = time.time()
    eta, top, seconds = reference()
    total = _data().rankings["query"].nunique()
    arms = args.arms.split(",")
    if args.from_csv is not None:
        rounds = pd.read_csv(args.from_csv)
        rounds = rounds[rounds["arm"].isin(arms)]
        args.seeds = rounds["seed"].nunique()
    else:
        calls = [(a, s, eta, top, args.start, args.batch) for s in range(args.seeds) for a in arms]
        rounds = pd.concat(run_in_processes(replay, calls, args.jobs), ignore_index=True)
        rounds.to_csv(args.output.with_suffix(".csv.gz"), index=False)
    lines = [
        f"Full-data fit: PlackettLuceVI(eta='auto') chose η = {eta:.4g} ({seconds:.1f} CPU s); "
        f"its top ten: {', '.join(sorted(top))}. Every replay refits "
        f"PlackettLuceVI(eta={eta:.4g}).",
        f"Replay: {args.start} random sets first, then {args.batch} per round, to all {total}; "
        f"{args.seeds} seeds; arms {', '.join(arms)}.",
        "",
        *summary(rounds, total),
    ]
    details = [
        f"- run time {time.time() - began:.0f} s wall; load average at the end {load_average()}"
    ]
    write_markdown_report(
        args.output,
        "`crowdbayes rank next` replayed on the car choices: sets needed for the full-data top 10",
        lines,
        details,
        echo=True,
    )


if __name__ == "__main__":
    main()
