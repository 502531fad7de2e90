"""What to ask next, for pairs: budget–accuracy curves of question strategies on UKPConvArg,
and the time of one collection round.

Protocol (Simpson & Gurevych, 2018, Experiment 5): for each topic/stance fold, the pool is the
comparisons of the other 31 folds and the score is the accuracy on the held-out fold's gold
pairs (UKPConvArg1Strict; no argument is shared between folds, so every test item is predicted
from its features). Start from ``--start`` random comparisons of the pool; each round the
strategy asks ``--batch`` pairs, the pool reveals a matching unused comparison for each
(:class:`crowdbayes.active.pairs.PairPool`), and the model is refitted warm (``fit(...,
init=model)``) until ``--budget`` comparisons have been seen. Item features: the
384-dimensional all-MiniLM-L6-v2 embeddings of the argument texts (the paper's linguistic +
GloVe features are not available). Strategies: the model's own (``information`` = BALD,
``uncertainty`` = least confident, as in the paper, ``power``, ``mixed``), the pool's
model-free baselines (``random``; ``round_robin``, the pairs compared least;
``item_coverage``, the pairs of the items compared least) and, with ``--variant crowd``, the
model's strategies choosing the worker too (``<strategy>+workers``).

``--variant strict``: the pool is UKPConvArg1Strict (one gold label per pair), the model GPPL.
``--variant crowd``: the pool is every raw MTurk label of UKPConvArg1
(``$CROWDBAYES_DATA/prefs/ukpconvarg1/derived/crowd_labels.tsv.gz``, about five noisy workers
per pair, ties included and counted as half a win each), the model crowdGPPL; a worker-blind
question is answered by a random one of the pair's unused labels, a worker-aware one only by
that worker's label.

Reported: mean accuracy over folds against the number of comparisons seen, the number of
comparisons where the mean curve first reaches 0.70, the area under the curve, each
strategy's smallest margin over ``random`` at the recorded budgets, the model's gold-free
estimate beside the accuracy, and the seconds per round.

``--speed``: one collection round (``suggest`` from the default candidates + warm refit with
the new answers) with 5,000 observed pairs, on (a) 1,000 synthetic items with 3 features (the
data of ``prefs_speed.py``) and (b) the 1,052 UKPConvArg arguments with their 384 MiniLM
features (5,000 pairs of UKPConvArg1Strict observed, answers from the rest); median and
largest of several rounds, with the cold fit's time and a check that the warm model agrees
with a cold fit on the same data.

Usage (from the repository root; ``nice -n 19`` on a shared machine)::

    nice -n 19 .venv/bin/python benchmarks/active/active_pairs.py --variant strict --folds 8 \\
        --output benchmarks/active/results/active_pairs_strict.md \\
        --plot benchmarks/active/results/active_pairs_strict.png
    nice -n 19 .venv/bin/python benchmarks/active/active_pairs.py --variant crowd --folds 8 \\
        --output benchmarks/active/results/active_pairs_crowd.md \\
        --plot benchmarks/active/results/active_pairs_crowd.png
    nice -n 19 .venv/bin/python benchmarks/active/active_pairs.py --speed \\
        --output benchmarks/active/results/active_pairs_speed.md

``--jobs N`` runs the (fold, strategy) replays in N processes (set ``OMP_NUM_THREADS=1``).
Without ``--output`` the report goes to the temporary folder. A CSV of every round is written
beside the report (``.csv.gz``); ``--from-csv PATH`` writes the report from such a CSV (of one
run, or of several runs on the same folds concatenated) without replaying. Beside each
strategy's smallest margin over ``random`` the summary counts the budgets where it is below
``random`` by more than two standard errors of the per-fold differences (the folds paired):
with 8 folds a mean difference of 0.03 is within noise, with all 32 it is not.
With ``<strategy>+workers`` beside ``<strategy>`` the report compares the two, folds paired
(area per fold, budgets above or below by more than two standard errors). ``--first-fold K``
replays folds ``K, ..., K + N - 1`` (with ``--folds N``), so that a long run can be split and
its CSVs concatenated. ``--replicate R`` (R ≥ 1) replays with another seed for the
strategies' own draws (``random``, ``power``, ``mixed``) on the same folds and starting
comparisons; a CSV holding several replicates is averaged over them within each fold.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import ndtr
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import (
    load_average,
    markdown_table,
    resolve_data_root,
    run_in_processes,
    write_markdown_report,
)
from _prefs_data import simulate as speed_data
from crowdbayes.active import simulate
from crowdbayes.active.pairs import PairPool
from crowdbayes.datasets.prefs import load_ukpconvarg
from crowdbayes.exceptions import ConvergenceWarning, DataWarning
from crowdbayes.models.gp_preference import GPPL, CrowdGPPL

#: the budgets shown in the summary table
SHOWN = (10, 20, 50, 100, 150, 200, 300, 400, 600, 800, 1000)
TARGET = 0.70


# --------------------------------------------------------------------------- data
def strict_pool(data) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pool, gold) tables of every pair of UKPConvArg1Strict, with their topic."""
    pairs = data.pairs[["left", "right", "label", "topic"]]
    return pairs, pairs


def crowd_pool(root: Path, data) -> pd.DataFrame:
    """Every raw MTurk label: worker, left, right, label (id or 'equal'), topic."""
    raw = pd.read_csv(root / "prefs/ukpconvarg1/derived/crowd_labels.tsv.gz", sep="\t")
    left, right = raw.arg1_id.astype(str), raw.arg2_id.astype(str)
    return pd.DataFrame(
        {
            "worker": raw.turkID.astype(str),
            "left": left,
            "right": right,
            "label": np.select([raw.value == "a1", raw.value == "a2"], [left, right], "equal"),
            "topic": data.arguments["topic"].reindex(left).to_numpy(),
        }
    )


def make_model(args, seed: int):
    options = {"lengthscale": args.lengthscale, "random_state": seed}
    if args.model == "crowdgppl":
        return CrowdGPPL(args.components, ties="half", **options)
    return GPPL(ties="half" if args.variant == "crowd" else "drop", **options)


def warm_refit(model, pool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(*pool.fit_args(), init=model if model.is_fitted() else None)


# --------------------------------------------------------------------------- the replay
def run_replays(args, pool_table, gold_table, features, topics) -> pd.DataFrame:
    """Every (fold, strategy) replay; ``args.jobs`` of them at a time in separate processes."""
    runs = [
        (k, topic, name)
        for k, topic in enumerate(topics, start=args.first_fold)
        for name in args.strategies
    ]
    replay = partial(
        one_replay, args, pool_table, gold_table, features, args.first_fold + len(topics)
    )
    return pd.concat(run_in_processes(replay, runs, args.jobs), ignore_index=True)


def one_replay(args, pool_table, gold_table, features, n_folds, k, topic, name) -> pd.DataFrame:
    """The replay of strategy ``name`` on fold ``k`` (``topic`` held out)."""
    pool = pool_table[pool_table["topic"] != topic].drop(columns="topic")
    gold = gold_table[gold_table["topic"] == topic]
    strategy, worker_aware = name.removesuffix("+workers"), name.endswith("+workers")
    replay_pool = PairPool(pool, gold, features, start=args.start, random_state=args.seed + k)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        record = simulate(
            make_model(args, args.seed + k),
            replay_pool,
            batch=args.batch,
            budget=args.budget,
            strategy=strategy,
            worker_aware=worker_aware,
            refit=warm_refit,
            random_state=args.seed + k + 1000 * args.replicate,
        )
    seconds = time.perf_counter() - start
    at = record.set_index("n_answers")["accuracy"]
    print(
        f"{k + 1}/{n_folds} {topic[:40]:40s} {name:22s} "
        + " ".join(f"{b}:{at.get(b, np.nan):.3f}" for b in (10, 50, 100, args.budget))
        + f" ({seconds:.0f} s, load {load_average()})",
        flush=True,
    )
    return record.assign(fold=k, topic=topic, strategy=name, replicate=args.replicate)


def summarise(
    table: pd.DataFrame, budget: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """Mean curves over folds, the summary per strategy, and the worker-aware strategies
    against their worker-blind ones (:func:`worker_aware_table`)."""
    curves = table.pivot_table(
        index="n_answers", columns="strategy", values="accuracy", aggfunc="mean"
    )
    estimates = table.pivot_table(
        index="n_answers", columns="strategy", values="estimated_accuracy", aggfunc="mean"
    )
    by_fold = table.pivot_table(index=["fold", "n_answers"], columns="strategy", values="accuracy")
    shown = [b for b in SHOWN if b in curves.index and b <= budget]
    summary = []
    for name in curves.columns:
        curve = curves[name].dropna()
        above = curve.to_numpy() >= TARGET
        stays = np.flatnonzero(~above)
        stays_from = (
            curve.index[stays[-1] + 1] if len(stays) and stays[-1] + 1 < len(curve) else None
        )
        if not len(stays):
            stays_from = curve.index[0]
        row = {
            "strategy": name,
            f"labels to reach {TARGET:.2f}": str(curve.index[above][0]) if above.any() else "never",
            f"and stay above {TARGET:.2f}": "never" if stays_from is None else str(stays_from),
            "area (mean accuracy over budgets)": float(curve.mean()),
        }
        if "random" in curves.columns and name != "random":
            margin = (curve - curves["random"]).dropna()
            row["smallest margin over random"] = float(margin.min())
            row["at labels"] = str(margin.idxmin())
            row["budgets below random"] = f"{int((margin < 0).sum())} of {len(margin)}"
            below = margin_below_random(by_fold, name)
            row["of them by > 2 s.e. (folds paired)"] = f"{int(below.sum())}"
        seconds = table[table["strategy"] == name]["seconds"]
        row["seconds per round"] = float(seconds[table["round"] > 0].mean())
        summary.append(row)
    at_budgets = curves.loc[shown].rename_axis("labels")
    gold_free = estimates.loc[shown].rename_axis("labels")
    gold_free.columns = [f"{c} (estimate)" for c in gold_free.columns]
    return pd.DataFrame(summary), at_budgets.join(gold_free), worker_aware_table(by_fold)


def margin_below_random(by_fold: pd.DataFrame, name: str) -> pd.Series:
    """Per budget, whether strategy ``name``'s mean accuracy is below ``random``'s by more than
    twice the standard error of the mean of the per-fold differences (the folds paired: the
    same held-out topic and starting comparisons). ``by_fold``: accuracy per (fold, budget)
    and strategy, averaged over replicates."""
    mean, error, count = paired_gap(by_fold, name, "random")
    return (mean < -2.0 * error) & (count > 1)


def paired_gap(by_fold: pd.DataFrame, name: str, reference: str):
    """Per budget: the mean over folds of ``name``'s accuracy minus ``reference``'s, the
    standard error of that mean, and the number of folds with both."""
    gap = (by_fold[name] - by_fold[reference]).dropna().groupby(level="n_answers")
    count = gap.count()
    return gap.mean(), gap.std().fillna(0.0) / np.sqrt(count), count


def worker_aware_table(by_fold: pd.DataFrame) -> pd.DataFrame | None:
    """Each ``<strategy>+workers`` against ``<strategy>`` on the same folds (paired): areas, the
    mean and per-fold differences of area, and the budgets where the worker-aware curve is
    above or below by more than two standard errors of the per-fold differences. ``by_fold``:
    accuracy per (fold, budget) and strategy; None without such a pair."""
    names = set(by_fold.columns)
    pairs = [(n, n.removesuffix("+workers")) for n in sorted(names) if n.endswith("+workers")]
    pairs = [(aware, blind) for aware, blind in pairs if blind in names]
    if not pairs:
        return None
    rows = []
    for aware, blind in pairs:
        both = by_fold[[aware, blind]].dropna()
        area = both.groupby(level="fold").mean()
        difference = area[aware] - area[blind]
        mean, error, count = paired_gap(by_fold, aware, blind)
        significant = count > 1
        rows.append(
            {
                "worker-aware": aware,
                "worker-blind": blind,
                "folds": len(area),
                "area, aware": float(area[aware].mean()),
                "area, blind": float(area[blind].mean()),
                "difference (s.e.)": f"{difference.mean():+.4f} "
                f"({difference.std() / np.sqrt(len(difference)):.4f})",
                "folds where aware is higher": f"{int((difference > 0).sum())} of {len(area)}",
                "budgets aware above by > 2 s.e.": int(((mean > 2.0 * error) & significant).sum()),
                "budgets aware below by > 2 s.e.": int(((mean < -2.0 * error) & significant).sum()),
            }
        )
    return pd.DataFrame(rows)


def worker_aware_section(compared: pd.DataFrame | None) -> list[str]:
    """The report's lines on worker-aware against worker-blind selection (none without)."""
    if compared is None:
        return []
    return [
        "## Worker-aware against worker-blind selection (folds paired)",
        "",
        markdown_table(compared, digits=4, index=False),
        "",
    ]


def plot(table: pd.DataFrame, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, group in table.groupby("strategy"):
        mean = group.groupby("n_answers")["accuracy"].mean()
        estimate = group.groupby("n_answers")["estimated_accuracy"].mean()
        (line,) = ax.plot(mean.index, mean.to_numpy(), label=name)
        ax.plot(estimate.index, estimate.to_numpy(), ls=":", color=line.get_color(), lw=1)
    ax.axhline(TARGET, color="grey", lw=0.6, ls="--")
    ax.set_xlabel("comparisons seen")
    ax.set_ylabel("mean accuracy on held-out gold pairs")
    ax.set_title(title + "\n(dotted: the model's gold-free estimate)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


# --------------------------------------------------------------------------- speed
def time_rounds(model, observed, items, answer, rounds: int, n: int) -> tuple[dict, pd.DataFrame]:
    """``rounds`` rounds of suggest(n) + answers + warm refit after a cold fit; the timings
    and the comparisons observed at the end."""
    start = time.perf_counter()
    model.fit(observed, items)
    cold = time.perf_counter() - start
    suggest_s, refit_s, iterations = [], [], []
    for r in range(rounds):
        start = time.perf_counter()
        asked = model.suggest(n, random_state=r)
        middle = time.perf_counter()
        observed = pd.concat([observed, answer(asked)], ignore_index=True)
        model.fit(observed, items, init=model)
        end = time.perf_counter()
        suggest_s.append(middle - start)
        refit_s.append(end - middle)
        iterations.append(model.n_iter_)
    total = np.add(suggest_s, refit_s)
    return {
        "cold fit s": cold,
        "round s (median)": float(np.median(total)),
        "round s (max)": float(np.max(total)),
        "suggest s (median)": float(np.median(suggest_s)),
        "warm refit s (median)": float(np.median(refit_s)),
        "warm iterations (median)": float(np.median(iterations)),
        "cold iterations": None,
    }, observed


def speed(args) -> str:
    """The speed table (module docstring)."""
    observed, items, f = speed_data(1000, 5000)
    answer_rng = np.random.default_rng(1)

    def simulated(asked: pd.DataFrame) -> pd.DataFrame:
        left, right = asked["left"].to_numpy(), asked["right"].to_numpy()
        p = ndtr((f[left] - f[right]) / np.sqrt(2))
        label = np.where(answer_rng.random(len(asked)) < p, left, right)
        return pd.DataFrame({"left": left, "right": right, "label": label})

    sets = [("synthetic, 1,000 items x 3 features", observed, items, simulated)]
    data = load_ukpconvarg("strict", embed=True)
    features = data.features.astype(np.float64).rename_axis("item")
    strict = data.pairs[["left", "right", "label"]].sample(frac=1.0, random_state=0)
    rest = strict.iloc[5000:]
    held = {
        frozenset((a, b)): label
        for a, b, label in zip(rest.left, rest.right, rest.label, strict=True)
    }

    def from_pool(asked: pd.DataFrame) -> pd.DataFrame:
        # a pair with a held-back gold label gets it; any other pair (arguments of different
        # topics were never compared) is answered by its left item: only the time matters
        pairs = zip(asked["left"], asked["right"], strict=True)
        label = [held.get(frozenset(p), p[0]) for p in pairs]
        return pd.DataFrame({"left": asked["left"], "right": asked["right"], "label": label})

    sets.append(("UKPConvArg, 1,052 items x 384 features", strict.iloc[:5000], features, from_pool))
    rows = []
    for name, observed, item_table, answer in sets:
        for label, cls, params in (
            ("GPPL", GPPL, {}),
            ("CrowdGPPL (C = 20)", CrowdGPPL, {"n_components": 20}),
        ):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", (ConvergenceWarning, DataWarning))
                model = cls(random_state=0, **params)
                timing, final = time_rounds(model, observed, item_table, answer, args.rounds, 10)
                cold = cls(random_state=0, **params).fit(final, item_table)
                other = cls(random_state=1, **params).fit(final, item_table)
            timing["cold iterations"] = cold.n_iter_
            u_warm, u_cold = model.utility_["mean"], cold.utility_["mean"]
            rows.append(
                {
                    "data": name,
                    "model": label,
                    **timing,
                    "spearman warm vs cold": float(spearmanr(u_warm, u_cold)[0]),
                    "spearman cold seed 0 vs 1": float(
                        spearmanr(other.utility_["mean"], u_cold)[0]
                    ),
                    "load after": load_average(),
                }
            )
            print(rows[-1], flush=True)
    return markdown_table(pd.DataFrame(rows), digits=3, index=False)


# --------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=["strict", "crowd"], default="strict")
    parser.add_argument("--model", choices=["gppl", "crowdgppl"], default=None)
    parser.add_argument("--strategies", default=None, help="comma-separated")
    parser.add_argument("--folds", type=int, default=8, help="the first N topic folds")
    parser.add_argument(
        "--first-fold", type=int, default=0, help="start at this fold (0-based; --folds after it)"
    )
    parser.add_argument("--start", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--budget", type=int, default=400)
    parser.add_argument("--components", type=int, default=20)
    parser.add_argument("--lengthscale", default="auto", help="the model's (default auto)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--speed", action="store_true")
    parser.add_argument("--rounds", type=int, default=5, help="--speed: rounds timed")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--jobs", type=int, default=1, help="replays run in parallel processes")
    parser.add_argument(
        "--replicate",
        type=int,
        default=0,
        help="another draw of the strategies' own randomness (same folds and starts)",
    )
    parser.add_argument(
        "--from-csv",
        type=Path,
        default=None,
        help="summarise the rounds of an earlier run (its CSV) instead of replaying",
    )
    args = parser.parse_args()
    root = resolve_data_root()
    output = args.output or Path(tempfile.gettempdir()) / (
        "active_pairs_speed.md" if args.speed else f"active_pairs_{args.variant}.md"
    )
    if args.speed:
        body = speed(args)
        title = "One collection round for pairs: suggest + warm refit, 5,000 observed pairs"
        end = f"- load average at the end: {load_average()}"
        write_markdown_report(output, title, [body], [end], echo=True)
        return
    args.model = args.model or ("crowdgppl" if args.variant == "crowd" else "gppl")
    default = (
        "information,information+workers,uncertainty,random"
        if args.variant == "crowd"
        else "information,uncertainty,random"
    )
    args.strategies = (args.strategies or default).split(",")
    data = load_ukpconvarg("strict", embed=True)
    features = data.features.astype(np.float64).rename_axis("item")
    gold = data.pairs[["left", "right", "label", "topic"]]
    pool = crowd_pool(root, data) if args.variant == "crowd" else gold
    if args.from_csv:
        table = pd.read_csv(args.from_csv)
        args.strategies = list(pd.unique(table["strategy"]))
        args.folds = table["fold"].nunique()
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            folds = data.topics[args.first_fold : args.first_fold + args.folds]
            table = run_replays(args, pool, gold, features, folds)
    output.parent.mkdir(parents=True, exist_ok=True)
    rounds = output.with_suffix(".csv.gz")
    if args.from_csv is None or args.from_csv.resolve() != rounds.resolve():
        table.to_csv(rounds, index=False, float_format="%.6g")
    summary, at_budgets, worker_aware = summarise(table, args.budget)
    title = (
        f"{args.model} on UKPConvArg{'Strict' if args.variant == 'strict' else ' crowd labels'}"
        f", {args.folds} folds, start {args.start}, +{args.batch} per round"
    )
    if args.plot:
        plot(table, args.plot, title)
    details = [
        f"- load average at the end: {load_average()}",
        f"- pool: {len(pool)} comparisons ({args.variant}); gold: UKPConvArg1Strict pairs "
        f"of the held-out fold; model {args.model} with its defaults"
        + (f" (C = {args.components}, ties half)" if args.model == "crowdgppl" else "")
        + f", length-scales {args.lengthscale}",
    ]
    lines = [
        "## Summary (mean over folds)",
        "",
        markdown_table(summary, index=False),
        "",
        "## Mean accuracy (and the model's gold-free estimate) at some budgets",
        "",
        markdown_table(at_budgets),
        "",
        *worker_aware_section(worker_aware),
        f"Every round: `{rounds.name}`" + (f"; curves: `{args.plot.name}`." if args.plot else "."),
    ]
    write_markdown_report(output, f"What to ask next: {title}", lines, details, echo=True)


if __name__ == "__main__":
    main()
