"""Bradley–Terry with unreliable workers on the UKPConvArg1 crowd labels, against crowd-kit.

Data: ``$CROWDBAYES_DATA/prefs/ukpconvarg1/derived/crowd_labels.tsv.gz``: every raw MTurk
assignment of UKPConvArg1 (84,445 labels on 16,927 pairs of 1,052 arguments, 3,815 workers;
``value`` = ``a1``, ``a2`` or ``equal``), as ``worker, left, right, label`` with ``label`` the
preferred argument's id or ``"equal"``. Gold: the UKPConvArgRank scores of
UKPConvArg1-Ranking-CSV (``load_ukpconvarg().ranking``); a *lower* PageRank there means *more*
convincing, so the gold score is ``-pagerank``.

All models are fitted once to all 32 folds together (an argument is only ever compared with
arguments of its own fold) and their item scores compared with the gold scores by Spearman's ρ
**within each fold**, averaged over the 32 folds (the gold PageRank is computed per fold, so
only within-fold orders mean anything); the Spearman ρ pooled over all 1,052 arguments is shown
too. crowd-kit 1.4.2's ``BradleyTerry`` and ``NoisyBradleyTerry`` take only labels naming an
item, so they get the labels without ties (65,340); the crowdbayes models are run both on
those and on all labels with ties (Davidson ties).

Usage (from the repository root)::

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/prefs/comparisons_ukp.py \\
        [--output benchmarks/prefs/results/comparisons_ukp.md]
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

from _common import (  # noqa: E402
    load_average,
    markdown_table,
    resolve_data_root,
    results_dir,
    write_markdown_report,
)

RESULTS = results_dir(__file__)


def _frame(root: Path) -> tuple[pd.DataFrame, pd.Series]:
    raw = pd.read_csv(root / "prefs/ukpconvarg1/derived/crowd_labels.tsv.gz", sep="\t")
    frame = pd.DataFrame(
        {
            "worker": raw.turkID.astype(str),
            "left": raw.arg1_id.astype(str),
            "right": raw.arg2_id.astype(str),
            "label": np.select(
                [raw.value == "a1", raw.value == "a2"],
                [raw.arg1_id.astype(str), raw.arg2_id.astype(str)],
                "equal",
            ),
        }
    )
    return frame, raw.fold


def _spearman(scores: pd.Series, gold: pd.DataFrame) -> tuple[pd.Series, float, int]:
    """Spearman ρ within each fold, pooled ρ, and the number of arguments scored."""
    joined = gold.join(scores.rename("score"), how="inner")
    per_fold = pd.Series(
        {
            topic: spearmanr(part["score"], part["gold"])[0]
            for topic, part in joined.groupby("topic")
            if len(part) > 2
        }
    )
    return per_fold, float(spearmanr(joined.score, joined.gold)[0]), len(joined)


def _bootstrap(differences: np.ndarray, seed: int = 0, draws: int = 10_000) -> tuple:
    """95 % interval of the mean of per-fold differences, resampling the folds."""
    rng = np.random.default_rng(seed)
    means = differences[rng.integers(len(differences), size=(draws, len(differences)))].mean(1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=RESULTS / "comparisons_ukp.md")
    parser.add_argument("--ck-iter", type=int, default=100, help="crowd-kit n_iter")
    args = parser.parse_args(argv)
    root = resolve_data_root()
    from crowdkit.aggregation import BradleyTerry as CKBradleyTerry
    from crowdkit.aggregation import NoisyBradleyTerry as CKNoisyBT

    from crowdbayes.datasets.prefs import load_ukpconvarg
    from crowdbayes.models.comparisons import BradleyTerry, CrowdBT

    frame, _ = _frame(root)
    no_ties = frame[frame.label != "equal"].reset_index(drop=True)
    ranking = load_ukpconvarg("strict").ranking
    gold = pd.DataFrame({"gold": -ranking["pagerank"], "topic": ranking["topic"]})
    runs = [
        ("crowd-kit BradleyTerry", f"n_iter={args.ck_iter}", "no ties", no_ties,
         lambda d: CKBradleyTerry(n_iter=args.ck_iter).fit_predict(d)),
        ("crowd-kit NoisyBradleyTerry", f"n_iter={args.ck_iter}", "no ties", no_ties,
         lambda d: CKNoisyBT(n_iter=args.ck_iter).fit_predict(d)),
        ("crowdbayes BradleyTerry", "tie_model='none'", "no ties", no_ties,
         lambda d: BradleyTerry(tie_model="none").fit(d).utility_["mean"]),
        ("crowdbayes CrowdBT", "noise='random', tie_model='none'", "no ties", no_ties,
         lambda d: CrowdBT(noise="random", tie_model="none").fit(d).utility_["mean"]),
        ("crowdbayes CrowdBT", "noise='flip', tie_model='none'", "no ties", no_ties,
         lambda d: CrowdBT(noise="flip", tie_model="none").fit(d).utility_["mean"]),
        ("crowdbayes BradleyTerry", "defaults (Davidson ties)", "all", frame,
         lambda d: BradleyTerry().fit(d).utility_["mean"]),
        ("crowdbayes CrowdBT", "noise='random' (Davidson ties)", "all", frame,
         lambda d: CrowdBT(noise="random").fit(d).utility_["mean"]),
        ("crowdbayes CrowdBT", "defaults (noise='flip', Davidson ties)", "all", frame,
         lambda d: CrowdBT().fit(d).utility_["mean"]),
    ]  # fmt: skip
    rows, folds = [], []
    started = time.perf_counter()
    for name, settings, labels, data, fit in runs:
        print(name, settings, labels, flush=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            scores = fit(data)
            seconds = time.perf_counter() - start
        per_fold, pooled_rho, n_items = _spearman(pd.Series(scores), gold)
        fold_rho = float(per_fold.mean())
        folds.append(per_fold)
        rows.append(
            {
                "model": name,
                "settings": settings,
                "labels": f"{labels} ({len(data):,})",
                "Spearman ρ, mean over folds": fold_rho,
                "Spearman ρ, pooled": pooled_rho,
                "arguments": n_items,
                "fit time (s)": seconds,
                "warnings": ", ".join(sorted({w.category.__name__ for w in caught})) or "—",
            }
        )
        print(f"  rho {fold_rho:.4f} (pooled {pooled_rho:.4f}) in {seconds:.1f} s", flush=True)
    table = pd.DataFrame(rows)
    ck = table[table.model.str.startswith("crowd-kit")]["Spearman ρ, mean over folds"]
    best_ck = float(ck.max())
    best_folds = folds[int(ck.idxmax())]
    checks = []
    for row, per_fold in zip(rows, folds, strict=True):
        if row["model"].startswith("crowdbayes CrowdBT"):
            rho = row["Spearman ρ, mean over folds"]
            verdict = "PASS" if rho >= best_ck else "FAIL"
            diff = (per_fold - best_folds.reindex(per_fold.index)).to_numpy()
            low, high = _bootstrap(diff)
            checks.append(
                f"{verdict}: {row['model']} ({row['settings']}, {row['labels']}) ρ {rho:.4f} ≥ "
                f"best crowd-kit ρ {best_ck:.4f}; difference {rho - best_ck:+.4f}, 95 % "
                f"bootstrap interval over the 32 folds [{low:+.4f}, {high:+.4f}]"
            )
    details = [
        f"- load average at the end {load_average()}; total run time "
        f"{time.perf_counter() - started:.0f} s",
    ]
    report = [
        (__doc__ or "").split("\n\n")[1].replace("\n", " "),
        "",
        (__doc__ or "").split("\n\n")[2].replace("\n", " "),
        "",
        markdown_table(table, digits=4, index=False),
        "",
        "## Acceptance (CrowdBT against the better of crowd-kit's BT and NoisyBT)",
        "",
        "The default `CrowdBT()` (noise='flip', Davidson ties, all labels) is the one the issue's "
        "acceptance is about; the other rows are shown for completeness. The interval resamples "
        "the folds (paired per-fold differences, 10,000 draws, seed 0).",
        "",
        "```",
        *checks,
        "```",
    ]
    title = "Bradley–Terry with unreliable workers on the UKPConvArg1 crowd labels"
    write_markdown_report(args.output, title, report, details)
    print("\n".join(checks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
