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
- ``top``: ``rank next --strategy top`` — the greedy batch that most lowers the posterior
  variance of the utility differences among the cars whose place in the top 10 is in doubt
  (:mod:`crowdbayes.active.rankings`);
- ``thompson`` (``--arms``): ``rank next --strategy thompson`` — top-two Thompson sampling of
  the top-10 set: each slot of the batch contrasts the top tens of two posterior draws that
  disagree and asks the set that most lowers the variance of their contested utility
  differences;
- ``coverage`` (``--arms``): never-shown items first, ties in a random order — on this data
  the same design as ``random`` (a check of the replay, not a strategy); any other strategy
  of :func:`~crowdbayes.active.rankings.suggest_sets` is an arm by its name (``power``: drawn
  with probability proportional to the information gain, the stochastic acquisition of
  Kirsch et al. 2023; ``mixed``: best first and uniform draws alternating), and
  ``NAME@EPS`` is strategy NAME with a share EPS of each batch drawn uniformly
  (``suggest_sets(explore=EPS)``).
- ``sampled`` (``rank next``'s default): each batch drawn with probability proportional to the
  information gain mixed with a uniform share (0.5; ``sampled@EPS``: EPS), the refits
  importance-weighted by LURE weights over the 4,654 recorded sets; ``sampled-ratio`` weighs by
  the plain ratios ``rank next`` writes, ``sampled-none`` not at all.

``--synthetic SEED`` replays choices drawn from the fit to the recorded ones instead (the same
sets; a model that holds), against the fit to all the drawn choices. ``--static N`` replays
nothing: N sets chosen at once under the full-data posterior by each strategy (and at random)
are fitted alone, on the recorded and on drawn choices, and the report gives how far each fit
lies from the full-data one (δᵀS⁻¹δ) — whether a design's sets answer as all the sets do.

Metric: the top-10 overlap — the share of the ten cars of highest posterior mean utility (among
all 27,924) that are also among the ten of the fit to all 4,654 sets. Reported per arm: the mean
curve, and per seed the number of sets after which the overlap is 10/10 and stays there to the
end ("reach and hold"; also at 9/10), with the ratio to ``random`` on the same seed (the same
starting sets), and the paired differences from ``random`` over the seeds with their standard
errors: in the sets needed, and in the overlap at every budget (the worst budget per arm). The
issue's criterion: the full-data top-10 overlap with at most 60% of the sets random selection
needs.

Usage (from the repository root; two shared cores)::

    OMP_NUM_THREADS=1 CROWDBAYES_DATA=/work/shared/data nice -n 19 .venv/bin/python \\
        benchmarks/active/rank_next_replay.py --jobs 2 \\
        --output benchmarks/active/results/rank_next_replay.md

A CSV of every round is written beside the report (``.csv.gz``); ``--from-csv PATH [PATH …]
--arms A,B`` writes the report of those arms from such CSVs without replaying (``--first-seed``
and ``--seeds`` split a replay into runs whose CSVs are then read together).
"""

from __future__ import annotations

import argparse
import dataclasses
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


def _data(synthetic: int | None = None):
    """The car choices; with ``synthetic``, the same sets with each choice drawn (seeded) from
    Plackett–Luce at the posterior mean θ of the fit to the recorded choices (a well-specified
    model: the recorded choices' deviations from it removed)."""
    from crowdbayes.datasets import load_car_choice

    data = load_car_choice()
    if synthetic is None:
        return data
    from crowdbayes import PlackettLuceVI

    fit = PlackettLuceVI(eta="auto").fit(data.rankings, items=data.items)
    table = data.rankings
    utility = fit.predict_utility(data.items)["mean"].reindex(table["item"]).to_numpy()
    noisy = utility + np.random.default_rng(synthetic).gumbel(size=len(table))
    best = pd.Series(noisy).groupby(table["query"].to_numpy()).transform("max").to_numpy()
    table = table.assign(rank=np.where(noisy == best, 1.0, np.nan))
    return dataclasses.replace(data, rankings=table)


def _top(model, items) -> set:
    return set(model.predict_utility(items)["mean"].nlargest(TOP).index)


def reference(synthetic: int | None = None) -> tuple[float, set, float]:
    """η chosen by ``eta="auto"`` on all the sets, the top ten of that fit, its CPU seconds."""
    from crowdbayes import PlackettLuceVI

    data = _data(synthetic)
    start = time.process_time()
    full = PlackettLuceVI(eta="auto").fit(data.rankings, items=data.items)
    return float(full.eta_), _top(full, data.items), time.process_time() - start


def replay(
    arm: str, seed: int, eta: float, top: set, start: int, batch: int, synthetic: int | None
) -> pd.DataFrame:
    import os

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from crowdbayes import PlackettLuceVI
    from crowdbayes.active.rankings import replay_choice_sets

    data = _data(synthetic)
    full = PlackettLuceVI(eta=eta).fit(data.rankings, items=data.items)
    centre, precision = full.coef_.to_numpy(), np.linalg.inv(full.coef_cov_.to_numpy())
    distances = []

    def score(model) -> float:
        """The top-10 overlap; the distance from the full-data fit is kept on the side."""
        gap = model.coef_.to_numpy() - centre
        distances.append(float(gap @ precision @ gap))
        return len(_top(model, data.items) & top) / TOP

    name, _, share = arm.partition("@")  # "thompson@0.5": a share 0.5 of each batch uniform
    name, _, weights = name.partition("-")  # "sampled-ratio": the weights rank next writes
    strategy = {"random": "random", "coverage": "random"}.get(name, name)  # else a strategy
    clock = time.process_time()
    record = replay_choice_sets(
        PlackettLuceVI(eta=eta),
        data.rankings,
        data.items,
        start=start,
        batch=batch,
        score=score,
        strategy=strategy,
        coverage=arm != "random",
        explore=float(share) if share else None,
        weights=weights or "lure",
        random_state=seed,
    )
    cpu = time.process_time() - clock
    return record.assign(arm=arm, seed=seed, cpu=cpu, distance=distances)


def static_designs(eta: float, n: int, synthetic: int | None) -> list[dict]:
    """``n`` sets chosen at once under the full-data posterior — the best ``n`` by information
    gain, the greedy batch of the top-10 boundary, and four uniform draws — each fitted alone:
    how far its θ lies from the full-data fit's, δᵀ S⁻¹ δ (δ the difference of the posterior
    means, S the subset fit's posterior covariance; about the number of features times
    (1 − f)/f for a random share f of the sets if the model holds), and its top-10 overlap."""
    from crowdbayes import PlackettLuceVI
    from crowdbayes.active.rankings import (
        ChoiceSets,
        boundary_design,
        boundary_weight,
        choice_fisher_factors,
        choice_information,
        top_membership,
        utility_draws,
    )

    data = _data(synthetic)
    full = PlackettLuceVI(eta=eta).fit(data.rankings, items=data.items)
    top = _top(full, data.items)
    sets = ChoiceSets.from_table(data.rankings, set_column="query", item_column="item")
    every = utility_draws(full, data.items.index, 256, 0, features=data.items)
    X = data.items.to_numpy()
    rows = data.items.index.get_indexer(sets.items)
    info, _, _ = choice_information(every[rows][sets.members], sets.offsets)
    G = choice_fisher_factors(X[rows], sets, full.coef_.to_numpy())
    weight = boundary_weight(X, top_membership(every, TOP))
    designs = {
        "information": np.argsort(-info)[:n],
        "top": boundary_design(G, full.coef_cov_.to_numpy(), weight, n)[0],
    }
    for seed in range(4):
        designs[f"random {seed}"] = np.random.default_rng(seed).permutation(len(sets))[:n]
    out = []
    for name, chosen in designs.items():
        keep = data.rankings["query"].isin(sets.ids[chosen])
        fit = PlackettLuceVI(eta=eta).fit(data.rankings[keep], items=data.items)
        delta = fit.coef_.to_numpy() - full.coef_.to_numpy()
        out.append(
            {
                "choices": "recorded" if synthetic is None else f"drawn (seed {synthetic})",
                "design": name,
                "sets": n,
                "δᵀ S⁻¹ δ": float(delta @ np.linalg.solve(fit.coef_cov_.to_numpy(), delta)),
                "top-10 overlap": len(_top(fit, data.items) & top) / TOP,
            }
        )
    return out


def held_from(record: pd.DataFrame, level: float) -> float:
    """The sets after which the overlap is at least ``level`` and stays so to the end (inf
    when the last round is below it: a weighted fit to every set need not be the full-data
    fit)."""
    below = np.flatnonzero(record["score"].to_numpy() < level - 1e-9)
    n = record["n_sets"].to_numpy()
    if below.size and below[-1] == len(n) - 1:
        return np.inf
    return float(n[0] if not below.size else n[below[-1] + 1])


def first_at(record: pd.DataFrame, level: float) -> float:
    """The sets at which the overlap first reaches ``level`` (inf: never)."""
    reached = np.flatnonzero(record["score"].to_numpy() >= level - 1e-9)
    return float(record["n_sets"].to_numpy()[reached[0]]) if reached.size else np.inf


def paired(values: pd.DataFrame) -> pd.DataFrame:
    """Per arm against ``random`` (columns: arms, rows: seeds): the mean paired difference, its
    standard error (sd of the differences / √seeds) and the difference in standard errors."""
    diff = values.drop(columns="random").sub(values["random"], axis=0)
    se = diff.std(ddof=1) / np.sqrt(diff.count())  # the seeds each arm has (NaN: not run)
    se = se.where(se > 1e-12, 0.0)  # equal differences on every seed: ±inf, not 10¹⁵
    return pd.DataFrame({"mean": diff.mean(), "se": se, "t": diff.mean() / se})


def worst_budget(rounds: pd.DataFrame) -> pd.DataFrame:
    """Per arm, the budget where its overlap falls furthest below random's in paired standard
    errors (the paired difference of the top-10 overlap at each number of sets revealed)."""
    rows = []
    for n_sets, at in rounds.groupby("n_sets"):
        stats = paired(at.pivot_table(index="seed", columns="arm", values="score"))
        rows += [{"arm": a, "n_sets": n_sets, **stats.loc[a]} for a in stats.index]
    table = pd.DataFrame(rows)
    table["t"] = table["t"].fillna(0.0)  # equal on every seed: no difference
    worst = table.loc[table.groupby("arm")["t"].idxmin()].set_index("arm")
    best = table.loc[table.groupby("arm")["t"].idxmax()].set_index("arm")
    return pd.DataFrame(
        {
            "worst budget": worst["n_sets"],
            "overlap − random there": worst["mean"],
            "paired s.e.": worst["se"],
            "in s.e.": worst["t"],
            "best budget": best["n_sets"],
            "overlap − random at best": best["mean"],
            "in s.e. at best": best["t"],
        }
    )


#: the stretches of a collection the mean overlap is compared over (shares of all the sets)
STRETCHES = ((0.0, 1.0, "whole collection"), (0.0, 0.2, "first 20%"), (0.2, 0.55, "20–55%"),
             (0.55, 1.0, "last 45%"))  # fmt: skip


def mean_over_stretches(rounds: pd.DataFrame, total: int, *, ratio: bool = False) -> pd.DataFrame:
    """Per arm and stretch of the collection, the paired difference from random of the mean
    top-10 overlap over the rounds in it (one number per seed, so no comparison is repeated
    over budgets): mean, paired s.e. and the difference in s.e. With ``ratio``, of the mean log
    distance from the full-data fit instead, shown as the geometric-mean ratio to random's."""
    values = "distance" if ratio else "score"
    rows = []
    for low, high, name in STRETCHES:
        inside = rounds[(rounds["n_sets"] >= low * total) & (rounds["n_sets"] <= high * total)]
        if ratio:  # the last round of every arm is the full-data fit itself: distance 0
            inside = inside[inside["n_sets"] < total]
            inside = inside.assign(distance=np.log(inside[values]))
        per_seed = inside.groupby(["seed", "arm"])[values].mean().unstack("arm")
        stats = paired(per_seed.dropna(axis=1, how="all"))
        for arm in stats.index:
            rows.append({"arm": arm, "stretch": name, **stats.loc[arm]})
    table = pd.DataFrame(rows)
    cells = table[["mean", "se", "t"]].to_numpy()
    table["cell"] = (
        [f"×{np.exp(m):.2f} (log ± {e:.2f}, {t:+.1f})" for m, e, t in cells]
        if ratio
        else [f"{m:+.3f} ± {e:.3f} ({t:+.1f})" for m, e, t in cells]
    )
    return table.pivot(index="arm", columns="stretch", values="cell")[[s[2] for s in STRETCHES]]


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
        "## Never below random? The paired difference of the overlap at each budget",
        "",
        "Per arm, the budget (sets revealed) where the mean paired difference of its top-10 "
        "overlap from random's is lowest in paired standard errors, and where it is highest.",
        "",
        markdown_table(worst_budget(rounds), digits=3),
        "",
        "Over stretches of the collection (the mean overlap over the rounds in each, minus "
        "random's, paired by seed: mean ± s.e. (in s.e.); one comparison per stretch, not one "
        "per budget):",
        "",
        markdown_table(mean_over_stretches(rounds, total)),
        "",
    ]
    if "distance" in rounds and rounds["distance"].notna().any():
        lines += [
            "## How far each refit lies from the full-data fit",
            "",
            "(θ − θ_full)ᵀ S_full⁻¹ (θ − θ_full), θ the refit's posterior mean, θ_full and S_full "
            "the fit to all 4,654 sets at the same η: per arm and stretch, the geometric mean "
            "over the rounds in it as a ratio to random's (below 1: closer), with the paired "
            "s.e. of the log ratio and the log ratio in s.e. (arms replayed before this column "
            "was recorded are left out):",
            "",
            markdown_table(mean_over_stretches(rounds, total, ratio=True)),
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
    ratio = by_arm["10/10 held from / random"]
    held = needs.pivot_table(index="seed", columns="arm", values="10/10 held from")
    difference = paired(held)
    agg = pd.DataFrame(
        {
            "seeds": by_arm["seed"].nunique(),
            "10/10 held from (median)": by_arm["10/10 held from"].median(),
            "as a share of the sets": by_arm["10/10 held from"].median() / total,
            "ratio to random (median over seeds)": ratio.median(),
            "ratio to random (mean)": ratio.mean(),
            "ratio s.e.": ratio.std(ddof=1) / np.sqrt(ratio.count()),
            "sets − random (mean)": difference["mean"],
            "paired s.e.": difference["se"],
            "9/10 held from (median)": by_arm["9/10 held from"].median(),
            "9/10 ratio to random (median)": by_arm["9/10 held from / random"].median(),
        }
    )
    lines += ["## Summary", "", markdown_table(agg.rename_axis("arm"), digits=3), ""]
    for arm in agg.index.drop("random"):
        value, mean, se = agg.loc[
            arm, ["ratio to random (median over seeds)", "ratio to random (mean)", "ratio s.e."]
        ]
        verdict = "met" if value <= 0.6 else "not met"
        lines += [
            f"Criterion for `{arm}` (10/10 held with at most 60% of the sets random needs, "
            f"median over seeds): ratio {value:.2f} (mean {mean:.2f} ± {se:.2f} s.e.) — "
            f"**{verdict}**.",
            "",
        ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first … first+seeds-1")
    parser.add_argument("--start", type=int, default=47, help="sets revealed first (1%%)")
    parser.add_argument("--batch", type=int, default=93, help="sets per round (2%%)")
    parser.add_argument("--arms", default="random,information,top")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--output", type=Path, default=RESULTS / "rank_next_replay.md")
    parser.add_argument(
        "--from-csv",
        type=Path,
        nargs="+",
        help="write the report of the --arms in these CSVs (no replay; rows of an arm and seed "
        "in several: the first CSV's)",
    )
    parser.add_argument(
        "--synthetic",
        type=int,
        help="replay choices drawn with this seed from the fit to the recorded ones",
    )
    parser.add_argument(
        "--static",
        type=int,
        help="instead of replaying: N sets chosen at once under the full-data posterior, "
        "fitted alone, on the recorded and on drawn choices (how far each fit lies from the "
        "full-data one)",
    )
    args = parser.parse_args()
    resolve_data_root()
    began = time.time()
    eta, top, seconds = reference(args.synthetic)
    if args.static is not None:
        table = pd.DataFrame(
            static_designs(eta, args.static, None) + static_designs(eta, args.static, 1)
        )
        write_markdown_report(
            args.output,
            f"Sets chosen at once by each strategy, fitted alone: {args.static} of the car "
            "choice sets against the full-data fit",
            [markdown_table(table, digits=3, index=False), ""],
            [f"- run time {time.time() - began:.0f} s wall"],
            echo=True,
        )
        return
    total = _data().rankings["query"].nunique()
    arms = args.arms.split(",")
    if args.from_csv is not None:
        rounds = pd.concat([pd.read_csv(p) for p in args.from_csv], ignore_index=True)
        rounds = rounds.drop_duplicates(["arm", "seed", "round"])
        rounds = rounds[rounds["arm"].isin(arms)]
        # an arm may have fewer seeds than random: each is paired with random on its own seeds
        args.seeds = rounds["seed"].nunique()
    else:
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        calls = [
            (a, s, eta, top, args.start, args.batch, args.synthetic) for s in seeds for a in arms
        ]
        rounds = pd.concat(run_in_processes(replay, calls, args.jobs), ignore_index=True)
        rounds.to_csv(args.output.with_suffix(".csv.gz"), index=False)
    choices = (
        "the recorded choices"
        if args.synthetic is None
        else f"choices drawn (seed {args.synthetic}) from the fit to the recorded ones"
    )
    lines = [
        f"Full-data fit: PlackettLuceVI(eta='auto') chose η = {eta:.4g} ({seconds:.1f} CPU s); "
        f"its top ten: {', '.join(sorted(top))}. Every replay refits "
        f"PlackettLuceVI(eta={eta:.4g}).",
        f"Replay of {choices}: {args.start} random sets first, then {args.batch} per round, "
        f"to all {total}; {args.seeds} seeds (per arm: the summary's seeds); arms "
        f"{', '.join(arms)}.",
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
