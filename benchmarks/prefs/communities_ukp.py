"""A first measurement of ``CommunityPreferences`` on the UKPConvArg1 per-worker crowd labels.

Data: ``$CROWDBAYES_DATA/prefs/ukpconvarg1/derived/crowd_labels.tsv.gz`` (one row per worker
judgment: ``arg1_id, arg2_id, turkID, value`` in ``a1/a2/equal``), restricted to the first
``--folds`` folds (topic stances; arguments are compared only within a fold; default all 32),
fitted either jointly (one GP over all the selected arguments) or, with ``--per-fold``, fold
by fold (a GP over each fold's ~33 arguments; a worker's community is then per topic); item
features are the MiniLM sentence embeddings of the arguments
(:func:`crowdbayes.datasets.prefs.load_ukpconvarg_features`, cached on disk).

Split: for every worker with at least two non-tie labels in these folds, one random non-tie
label is held out (seeded). Ties are dropped from training. Models, all on the same training
labels and the same kernel (Matérn-3/2, ``scaled_median`` length-scale):

- ``CommunityPreferences`` (personal predictions, averaged over membership draws),
- pooled ``GPPreferenceEP`` (one preference function for everybody),
- ``GPPreferenceEP`` per worker (fitted on that worker's training labels only; a worker with
  no training label gets ½).

Reports held-out accuracy (ties at ½ count as half right) and log-loss, for workers with few
(≤ ``--few``) and many training labels. Writes ``benchmarks/prefs/results/communities_ukp.md``.

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/prefs/communities_ukp.py --per-fold
    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/prefs/communities_ukp.py --folds 4
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import (  # noqa: E402
    load_average,
    resolve_data_root,
    results_dir,
    write_markdown_report,
)
from crowdbayes.datasets.prefs import load_ukpconvarg, load_ukpconvarg_features  # noqa: E402
from crowdbayes.models.communities import CommunityPreferences  # noqa: E402
from crowdbayes.models.gp_preference import GPPreferenceEP  # noqa: E402

RESULTS = results_dir(__file__)


def scores(p: np.ndarray, left_won: np.ndarray) -> tuple[float, float]:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    correct = np.where(p == 0.5, 0.5, (p > 0.5) == left_won)
    log_loss = -np.mean(np.where(left_won, np.log(p), np.log1p(-p)))
    return float(np.mean(correct)), float(log_loss)


MODELS = ("CommunityPreferences", "pooled GPPreferenceEP", "GPPreferenceEP per worker")
KERNEL = {"kernel": "matern32", "lengthscale": "scaled_median"}


def evaluate(train: pd.DataFrame, test: pd.DataFrame, items: pd.DataFrame, args):
    """Held-out ``P(left ≻ right)`` of the three models fitted to ``train``; their fit times;
    a one-line summary of the community posterior."""
    probs, times = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = CommunityPreferences(
            **KERNEL,
            concentration_prior=(1.0, 1.0),
            n_sweeps=args.sweeps,
            burn_in=args.burn_in,
            n_inducing=args.n_inducing,
            random_state=args.seed,
        ).fit(train, items=items)
        times[MODELS[0]] = time.perf_counter() - start
        known = test.worker.isin(model.worker_ids_).to_numpy()
        p = np.full(len(test), 0.5)
        if known.any():
            p[known] = model.predict_proba(
                test.left[known], test.right[known], worker=test.worker[known].tolist()
            ).to_numpy()
        if (~known).any():
            p[~known] = model.predict_proba(test.left[~known], test.right[~known]).to_numpy()
        probs[MODELS[0]] = p
        start = time.perf_counter()
        pooled = GPPreferenceEP(**KERNEL).fit(train, items=items)
        times[MODELS[1]] = time.perf_counter() - start
        probs[MODELS[1]] = pooled.predict_proba(test.left, test.right).to_numpy()
        start = time.perf_counter()
        p = np.full(len(test), 0.5)
        for worker, rows in train.groupby("worker"):
            mask = (test.worker == worker).to_numpy()
            if mask.any():
                own = GPPreferenceEP(**KERNEL).fit(rows, items=items)
                p[mask] = own.predict_proba(test.left[mask], test.right[mask]).to_numpy()
        times[MODELS[2]] = time.perf_counter() - start
        probs[MODELS[2]] = p
    post = model.n_communities_
    summary = (
        f"{len(items)} arguments, {train.worker.nunique()} workers, K mode {post.idxmax()} "
        f"(P {post.max():.2f}), partition sizes {np.bincount(model.partition_).tolist()[:6]}"
    )
    return probs, times, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--folds", type=int, default=32, help="first N folds (sorted by name); 32: all"
    )
    parser.add_argument(
        "--per-fold",
        action="store_true",
        help="fit every model to each fold on its own (arguments are compared only within a "
        "fold); default: one fit to all the selected folds together",
    )
    parser.add_argument("--n-inducing", type=int, default=None, help="CommunityPreferences")
    parser.add_argument("--few", type=int, default=5, help="'few' = at most this many labels")
    parser.add_argument("--sweeps", type=int, default=20)
    parser.add_argument("--burn-in", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=RESULTS / "communities_ukp.md")
    args = parser.parse_args()
    root = resolve_data_root()
    raw = pd.read_csv(root / "prefs/ukpconvarg1/derived/crowd_labels.tsv.gz", sep="\t")
    folds = sorted(raw.fold.unique())[: args.folds]
    raw = raw[raw.fold.isin(folds)]
    frame = pd.DataFrame(
        {
            "worker": raw.turkID.astype(str),
            "left": raw.arg1_id.astype(str),
            "right": raw.arg2_id.astype(str),
            "label": np.select(
                [raw.value == "a1", raw.value == "a2"], [raw.arg1_id, raw.arg2_id], "equal"
            ),
        }
    ).reset_index(drop=True)
    fold_of = raw.fold.to_numpy()  # aligned with frame's index
    features = load_ukpconvarg_features(load_ukpconvarg("strict").arguments)
    items = features.loc[sorted(set(frame.left) | set(frame.right))].astype(np.float64)
    decided = frame[frame.label != "equal"]
    rng = np.random.default_rng(args.seed)
    test_rows = [rng.choice(rows.index) for _, rows in decided.groupby("worker") if len(rows) >= 2]
    test = frame.loc[test_rows]
    train = frame.drop(index=test_rows)
    train = train[train.label != "equal"]
    if args.per_fold:
        groups = [
            (fold, fold_of[train.index] == fold, fold_of[test.index] == fold) for fold in folds
        ]
    else:
        groups = [("all", np.ones(len(train), bool), np.ones(len(test), bool))]
    results = {name: np.full(len(test), 0.5) for name in MODELS}
    times = dict.fromkeys(MODELS, 0.0)
    n_train = np.zeros(len(test))
    done = np.zeros(len(test), dtype=bool)
    summaries = []
    for name, in_train, in_test in groups:
        in_train, in_test = np.asarray(in_train), np.asarray(in_test)
        part_train, part_test = train[in_train], test[in_test]
        n_train[in_test] = (
            part_train.groupby("worker").size().reindex(part_test.worker).fillna(0).to_numpy()
        )
        if part_test.empty or part_train.empty:
            continue
        fold_items = items.loc[
            sorted(
                set(part_train.left)
                | set(part_train.right)
                | set(part_test.left)
                | set(part_test.right)
            )
        ]
        probs, seconds, summary = evaluate(part_train, part_test, fold_items, args)
        for model_name in MODELS:
            results[model_name][in_test] = probs[model_name]
            times[model_name] += seconds[model_name]
        done |= in_test
        summaries.append(f"{name}: {summary}")
        print(f"{name}: {summary}; {seconds}", flush=True)
        # the report so far (a long run stopped early still leaves its finished folds)
        report(args, folds, summaries, items, train, test, done, n_train, results, times)


def report(args, folds, summaries, items, train, test, done, n_train, results, times):
    test, n_train = test[done], n_train[done]
    left_won = (test.label == test.left).to_numpy()
    details = [
        f"- folds: {len(summaries)} of {len(folds)} selected done ({', '.join(folds)}); "
        f"{len(items)} arguments; training: {len(train)} non-tie labels by "
        f"{train.worker.nunique()} workers; test (done folds): {len(test)} held-out labels (one "
        f"per worker with ≥ 2 non-tie labels)",
        f"- CommunityPreferences: {args.sweeps} sweeps ({args.burn_in} burn-in) × 2 chains, "
        f"λ ~ Gamma(1, 1), inducing items: {args.n_inducing or 'none (exact EP)'}; "
        + ("one fit per fold" if args.per_fold else "one fit to all selected folds together"),
        "- communities (number's posterior mode, point partition's largest sizes): "
        + "; ".join(summaries),
    ]
    lines = [
        "| model | fit (s) | acc. few | log-loss few | acc. many | log-loss many | acc. all |",
        "|---|---|---|---|---|---|---|",
    ]
    few = n_train <= args.few
    for name, p in results.items():
        p = p[done]
        a_few, l_few = scores(p[few], left_won[few])
        a_many, l_many = scores(p[~few], left_won[~few])
        a_all, _ = scores(p, left_won)
        lines.append(
            f"| {name} | {times[name]:.1f} | {a_few:.3f} | {l_few:.3f} | {a_many:.3f} | "
            f"{l_many:.3f} | {a_all:.3f} |"
        )
    lines += [
        "",
        f"- few: ≤ {args.few} training labels in the data the models saw ({int(few.sum())} "
        f"test labels); many: {int((~few).sum())} test labels",
        f"- load average at end {load_average()}",
    ]
    print("\n".join(lines[-4 - len(results) :]), flush=True)
    title = "CommunityPreferences on UKPConvArg1 crowd labels"
    write_markdown_report(args.output, title, lines, details)


if __name__ == "__main__":
    main()
