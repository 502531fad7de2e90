"""GPPL on UKPConvArg1, leave-one-topic-out (32 folds), with sentence-embedding features.

Protocol (Simpson & Gurevych, 2018, Sec. 6; 2020, Sec. 5.3): for each of the 32 topic/stance
folds, train on the pairs of the other 31 folds and predict the held-out fold's gold pairs
(those of UKPConvArg1Strict, also when training on the crowd labels of UKPConvArgCrowdSample;
no argument is shared between folds, so every test item is unseen and predicted from its
features). With crowdGPPL the held-out fold's crowd labels (ties excluded) are also predicted
for their own workers (personal accuracy; workers never seen in training get the consensus).
Item features: the 384-dimensional all-MiniLM-L6-v2 embeddings of the argument texts
(``load_ukpconvarg(variant, embed=True)``), not the papers' 32,310 linguistic + GloVe
features. Metrics over all held-out pairs pooled (the papers average per fold; both are
printed): accuracy of ``p_left > ½``, the cross-entropy error (CEE, natural log), and per
fold Kendall τ and Pearson r between the predicted utilities and the gold ranking score
(``-pagerank``: lower PageRank = more convincing in these files), averaged over folds.

Usage (from the repository root, CROWDBAYES_DATA pointing at ``../shared/data``)::

    nice -n 19 .venv/bin/python benchmarks/prefs/prefs_ukpconvarg.py [--variant strict]
        [--model gppl|crowdgppl] [--folds 32 | --fold-numbers 1,14,21] [--inducing 200]
        [--components 20] [--batch-size 1000] [--max-iter 1000] [--tol TOL] [--output PATH]

``--fold-numbers`` runs only the listed folds (1-based, in the order the full run prints
them) with the seeds the full run gives them, so a few folds reproduce the full run's rows.

Without ``--output`` the report goes to the temporary folder; committed results are written
only when the path is given explicitly.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau, pearsonr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import markdown_table, resolve_data_root, write_markdown_report
from crowdbayes.datasets.prefs import load_ukpconvarg
from crowdbayes.exceptions import ConvergenceWarning, DataWarning
from crowdbayes.models.gp_preference import GPPL, CrowdGPPL


def _model(args: argparse.Namespace, seed: int):
    options = {
        "lengthscale": args.lengthscale,
        "n_inducing": args.inducing,
        "batch_size": args.batch_size,
        "ties": "half" if args.variant == "crowdsample" else "drop",
        "random_state": seed,
        "max_iter": args.max_iter,
    }
    if args.tol is not None:
        options["tol"] = args.tol
    if args.model == "crowdgppl":
        return CrowdGPPL(args.components, **options)
    return GPPL(**options)


def run_fold(data, gold: pd.DataFrame, features: pd.DataFrame, topic: str, args, seed) -> dict:
    pairs = data.pairs
    train, crowd_test = pairs[pairs["topic"] != topic], pairs[pairs["topic"] == topic]
    crowd_test = crowd_test[crowd_test["label"] != "equal"]
    test = gold[gold["topic"] == topic]
    columns = (
        ["worker", "left", "right", "label"] if "worker" in pairs else ["left", "right", "label"]
    )
    model = _model(args, seed)
    start, cpu_start = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(train[columns].reset_index(drop=True), features)
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    p = model.predict_proba(test["left"], test["right"]).to_numpy()
    y = (test["label"] == test["left"]).to_numpy()
    eps = 1e-12
    cee = -np.mean(np.where(y, np.log(np.maximum(p, eps)), np.log(np.maximum(1 - p, eps))))
    personal = {}
    if isinstance(model, CrowdGPPL):
        # each held-out label predicted for its own worker (consensus for workers never
        # seen in training: the documented fallback, counted here)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            q = model.predict_proba(
                crowd_test["left"], crowd_test["right"], workers=crowd_test["worker"]
            )
        own = (crowd_test["label"] == crowd_test["left"]).to_numpy()
        personal = {
            "n_crowd_test": len(crowd_test),
            "personal_accuracy": float(np.mean((q.to_numpy() > 0.5) == own)),
            "personal_correct": int(np.sum((q.to_numpy() > 0.5) == own)),
            "unseen_workers": int((~crowd_test["worker"].isin(model.worker_ids_)).sum()),
        }
    ranking = data.ranking[data.ranking["topic"] == topic]
    utility = model.predict_utility(list(ranking.index))["mean"]
    return {
        "topic": topic,
        "n_test": len(test),
        "correct": int(np.sum((p > 0.5) == y)),
        "accuracy": float(np.mean((p > 0.5) == y)),
        "cee": float(cee),
        "cee_sum": float(cee * len(test)),
        "kendall_tau": float(kendalltau(utility, -ranking["pagerank"])[0]),
        "pearson_r": float(pearsonr(utility, -ranking["pagerank"])[0]),
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "n_iter": model.n_iter_,
        "converged": bool(model.converged_) and not caught,
        **personal,
    }


def _fold_numbers(text: str) -> list[int]:
    """``--fold-numbers``: comma-separated positive integers."""
    try:
        numbers = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--fold-numbers takes comma-separated fold numbers such as 1,14,21; got {text!r}"
        ) from None
    if not numbers or min(numbers) < 1 or len(set(numbers)) != len(numbers):
        raise argparse.ArgumentTypeError(
            f"--fold-numbers takes distinct fold numbers from 1; got {text!r}"
        )
    return numbers


def _chosen_folds(args: argparse.Namespace, n_topics: int) -> list[int]:
    """0-based indices of the folds to run: ``--fold-numbers`` or the first ``--folds``."""
    if args.fold_numbers is None:
        return list(range(min(args.folds, n_topics)))
    too_large = [n for n in args.fold_numbers if n > n_topics]
    if too_large:
        raise SystemExit(f"--fold-numbers: {too_large} beyond the {n_topics} folds of this set")
    return [n - 1 for n in args.fold_numbers]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=["strict", "crowdsample"], default="strict")
    parser.add_argument("--model", choices=["gppl", "crowdgppl"], default="gppl")
    parser.add_argument("--folds", type=int, default=32, help="first N folds (for quick runs)")
    parser.add_argument(
        "--fold-numbers",
        type=_fold_numbers,
        default=None,
        help="only these folds, 1-based as printed (e.g. 1,14,21); seeds as in the full run",
    )
    parser.add_argument("--inducing", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--components", type=int, default=20)
    parser.add_argument("--lengthscale", default="scaled_median")
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument(
        "--tol", type=float, default=None, help="the model's tol (default: its own)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    resolve_data_root()
    data = load_ukpconvarg(args.variant, embed=True)
    features = data.features.astype(np.float64).rename_axis("item")
    # consensus is scored on the gold (UKPConvArgStrict) pairs of the held-out fold, as in
    # the papers; crowd labels are used only for training and the personal predictions
    gold = data.pairs if args.variant == "strict" else load_ukpconvarg("strict").pairs
    chosen = _chosen_folds(args, len(data.topics))
    rows = []
    for k in chosen:
        topic = data.topics[k]
        row = run_fold(data, gold, features, topic, args, args.seed + k)
        rows.append(row)
        print(
            f"{k + 1:2d}/{len(data.topics)} {topic[:50]:50s} acc {row['accuracy']:.3f} "
            f"cee {row['cee']:.3f} tau {row['kendall_tau']:.3f} {row['seconds']:.1f}s "
            f"(cpu {row['cpu_seconds']:.1f}s, {row['n_iter']} it)",
            flush=True,
        )
    table = pd.DataFrame(rows)
    pooled_acc = table["correct"].sum() / table["n_test"].sum()
    pooled_cee = table["cee_sum"].sum() / table["n_test"].sum()
    title = (
        f"{args.model} on UKPConvArg{'Strict' if args.variant == 'strict' else 'CrowdSample'}"
        f", leave-one-topic-out ({len(table)} folds), MiniLM embeddings"
    )
    settings = (
        f"- settings: inducing {args.inducing}, batch {args.batch_size}, length-scales "
        f"{args.lengthscale}, max_iter {args.max_iter}, tol {args.tol or 'default'}, "
        f"seed {args.seed}"
        + (f", components {args.components}" if args.model == "crowdgppl" else "")
        + (f", folds {','.join(map(str, args.fold_numbers))} only" if args.fold_numbers else "")
    )
    lines = [
        "| metric | pooled over pairs | mean over folds |",
        "| --- | --- | --- |",
        f"| accuracy | {pooled_acc:.4f} | {table['accuracy'].mean():.4f} |",
        f"| CEE | {pooled_cee:.4f} | {table['cee'].mean():.4f} |",
        f"| Kendall τ (utility vs gold rank score) | | {table['kendall_tau'].mean():.4f} |",
        f"| Pearson r (utility vs gold rank score) | | {table['pearson_r'].mean():.4f} |",
        f"| fit seconds per fold | | {table['seconds'].mean():.2f} |",
        f"| fit CPU seconds per fold | | {table['cpu_seconds'].mean():.2f} |",
        *(
            [
                "| personal accuracy (held-out crowd labels, each for its own worker) | "
                f"{table['personal_correct'].sum() / table['n_crowd_test'].sum():.4f} | "
                f"{table['personal_accuracy'].mean():.4f} |",
                f"| held-out crowd labels by workers unseen in training | "
                f"{int(table['unseen_workers'].sum())} of {int(table['n_crowd_test'].sum())} | |",
            ]
            if "personal_correct" in table
            else []
        ),
        f"| folds converged (tol) | | {int(table['converged'].sum())} of {len(table)} |",
        "",
        "Per fold:",
        "",
        markdown_table(
            table.drop(columns=["cee_sum", "correct", "personal_correct"], errors="ignore"),
            index=False,
        ),
    ]
    output = args.output or Path(tempfile.gettempdir()) / f"prefs_ukpconvarg_{args.variant}.md"
    write_markdown_report(output, title, lines, [settings], echo=True)


if __name__ == "__main__":
    main()
