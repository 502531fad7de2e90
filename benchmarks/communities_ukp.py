"""A first measurement of ``CommunityPreferences`` on the UKPConvArg1 per-worker crowd labels.

Data: ``$CROWDBAYES_DATA/prefs/ukpconvarg1/derived/crowd_labels.tsv.gz`` (one row per worker
judgment: ``arg1_id, arg2_id, turkID, value`` in ``a1/a2/equal``), restricted to ``--folds``
folds (topic stances; arguments are compared only within a fold) so that the GP over the
arguments stays small; item features are the MiniLM sentence embeddings of the arguments
(:func:`crowdbayes.datasets.prefs.load_ukpconvarg_features`, cached on disk).

Split: for every worker with at least two non-tie labels in these folds, one random non-tie
label is held out (seeded). Ties are dropped from training. Models, all on the same training
labels and the same kernel (Matérn-3/2, ``scaled_median`` length-scale):

- ``CommunityPreferences`` (personal predictions, averaged over membership draws),
- pooled ``GPPreferenceEP`` (one preference function for everybody),
- ``GPPreferenceEP`` per worker (fitted on that worker's training labels only; a worker with
  no training label gets ½).

Reports held-out accuracy (ties at ½ count as half right) and log-loss, for workers with few
(≤ ``--few``) and many training labels. Writes ``benchmarks/results/communities_ukp.md``.

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/communities_ukp.py --folds 3
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from _common import (  # noqa: E402
    RESULTS,
    command_line,
    load_average,
    machine_lines,
    resolve_data_root,
    write_report,
)
from crowdbayes.datasets.prefs import load_ukpconvarg, load_ukpconvarg_features  # noqa: E402
from crowdbayes.models.communities import CommunityPreferences  # noqa: E402
from crowdbayes.models.gp_preference import GPPreferenceEP  # noqa: E402


def scores(p: np.ndarray, left_won: np.ndarray) -> tuple[float, float]:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    correct = np.where(p == 0.5, 0.5, (p > 0.5) == left_won)
    log_loss = -np.mean(np.where(left_won, np.log(p), np.log1p(-p)))
    return float(np.mean(correct)), float(log_loss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=3, help="first N folds (sorted by name)")
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
    features = load_ukpconvarg_features(load_ukpconvarg("strict").arguments)
    items = features.loc[sorted(set(frame.left) | set(frame.right))].astype(np.float64)
    decided = frame[frame.label != "equal"]
    rng = np.random.default_rng(args.seed)
    test_rows = [rng.choice(rows.index) for _, rows in decided.groupby("worker") if len(rows) >= 2]
    test = frame.loc[test_rows]
    train = frame.drop(index=test_rows)
    train = train[train.label != "equal"]
    n_train = train.groupby("worker").size().reindex(test.worker).fillna(0).to_numpy()
    left_won = (test.label == test.left).to_numpy()
    kernel = {"kernel": "matern32", "lengthscale": "scaled_median"}
    results, times = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = CommunityPreferences(
            **kernel,
            concentration_prior=(1.0, 1.0),
            n_sweeps=args.sweeps,
            burn_in=args.burn_in,
            random_state=args.seed,
        ).fit(train, items=items)
        times["CommunityPreferences"] = time.perf_counter() - start
        known = test.worker.isin(model.worker_ids_).to_numpy()
        p = np.full(len(test), 0.5)
        p[known] = model.predict_proba(
            test.left[known], test.right[known], worker=test.worker[known].tolist()
        ).to_numpy()
        p[~known] = model.predict_proba(test.left[~known], test.right[~known]).to_numpy()
        results["CommunityPreferences"] = p
        start = time.perf_counter()
        pooled = GPPreferenceEP(**kernel).fit(train, items=items)
        times["pooled GPPreferenceEP"] = time.perf_counter() - start
        results["pooled GPPreferenceEP"] = pooled.predict_proba(test.left, test.right).to_numpy()
        start = time.perf_counter()
        p = np.full(len(test), 0.5)
        for worker, rows in train.groupby("worker"):
            mask = (test.worker == worker).to_numpy()
            if mask.any():
                own = GPPreferenceEP(**kernel).fit(rows, items=items)
                p[mask] = own.predict_proba(test.left[mask], test.right[mask]).to_numpy()
        times["GPPreferenceEP per worker"] = time.perf_counter() - start
        results["GPPreferenceEP per worker"] = p
    lines = ["# CommunityPreferences on UKPConvArg1 crowd labels (first measurement)", ""]
    lines += [f"- command: `{command_line()}`", *machine_lines()]
    lines += [
        f"- folds: {', '.join(folds)}; {len(items)} arguments; training: {len(train)} non-tie "
        f"labels by {train.worker.nunique()} workers; test: {len(test)} held-out labels (one "
        f"per worker with ≥ 2 non-tie labels)",
        f"- CommunityPreferences: {args.sweeps} sweeps ({args.burn_in} burn-in) × 2 chains, "
        f"λ ~ Gamma(1, 1); posterior of the number of communities: "
        + ", ".join(f"{k}: {v:.2f}" for k, v in model.n_communities_.items())
        + f"; point partition sizes {np.bincount(model.partition_).tolist()}",
        "",
        "| model | fit (s) | acc. few | log-loss few | acc. many | log-loss many | acc. all |",
        "|---|---|---|---|---|---|---|",
    ]
    few = n_train <= args.few
    for name, p in results.items():
        a_few, l_few = scores(p[few], left_won[few])
        a_many, l_many = scores(p[~few], left_won[~few])
        a_all, _ = scores(p, left_won)
        lines.append(
            f"| {name} | {times[name]:.1f} | {a_few:.3f} | {l_few:.3f} | {a_many:.3f} | "
            f"{l_many:.3f} | {a_all:.3f} |"
        )
    lines += [
        "",
        f"- few: ≤ {args.few} training labels ({int(few.sum())} test labels); many: "
        f"{int((~few).sum())} test labels",
        f"- load average at end {load_average()}",
    ]
    print("\n".join(lines))
    write_report(args.output, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
