"""Accuracy and log-loss of label aggregation on the real label sets, crowdbayes vs crowd-kit.

For every label set under ``$CROWDBAYES_DATA/labels/`` that has gold labels, each model is fitted
to the full label table (task and worker ids read as strings) in its own fresh subprocess with a
time limit, and scored on the gold tasks with ``crowdbayes.metrics.accuracy`` and
``crowdbayes.metrics.log_loss`` (probabilities clipped to [1e-15, 1]). The gold is used only for
scoring, never given to a model.

Models (default settings unless stated):

- crowdbayes: MajorityVote(ties="random", random_state=0), DawidSkene(),
  BayesianDawidSkene(), HierarchicalAnnotation(random_state=0), CommunityDawidSkene();
- crowd-kit 1.4.2: MajorityVote(), DawidSkene(n_iter=100), GLAD(), MACE().

and the methods of issue 18, each beside crowd-kit's implementation of the same method:

- crowdbayes GLAD(), MACE() (EM), MACE(variational=True), KOS(random_state=0) and
  MMSR(random_state=0), Wawa(random_state=0), ZeroBasedSkill(random_state=0),
  GoldMajorityVote(random_state=0);
- crowd-kit KOS(), MMSR(), Wawa(), ZeroBasedSkill(), GoldMajorityVote() (crowd-kit 1.4.2's Wawa
  and ZeroBasedSkill crash with the current scikit-learn; the report then compares ours with
  crowd-kit's MajorityVote).

KOS is binary: on sets with more classes its fit is reported as "n/a". The gold-trained
majority votes (``*_gmv``) are the one exception to "gold is never given": they get the gold of
a seeded random half of the gold tasks (the same half for both libraries) and are scored on the
other half only.

``--models new`` selects the issue-18 models and their crowd-kit counterparts (plus crowd-kit
MajorityVote).

Usage (from the repository root)::

    .venv/bin/python benchmarks/labels/labels_accuracy.py [--timeout 300] [--datasets rte dog ...]
        [--models cb_mv ck_ds ...] [--output benchmarks/labels/results/labels_accuracy.md]

Writes a markdown report (and a CSV of the raw numbers next to it).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np
import pandas as pd

from _common import (
    exit_on_sigterm,
    fingerprint_lines,
    load_average,
    resolve_data_root,
    results_dir,
    run_isolated,
    src_fingerprint,
    write_markdown_report,
)

RESULTS = results_dir(__file__)

# key -> (column label, library, description)
MODELS = {
    "cb_mv": ("cb MV", "crowdbayes", "MajorityVote(ties='random', random_state=0)"),
    "cb_ds": ("cb DS", "crowdbayes", "DawidSkene()"),
    "cb_bds": ("cb BDS", "crowdbayes", "BayesianDawidSkene()"),
    "cb_ha": ("cb HA", "crowdbayes", "HierarchicalAnnotation(random_state=0)"),
    "cb_cds": ("cb CDS", "crowdbayes", "CommunityDawidSkene()"),
    "ck_mv": ("ck MV", "crowd-kit", "MajorityVote()"),
    "ck_ds": ("ck DS", "crowd-kit", "DawidSkene(n_iter=100)"),
    "ck_glad": ("ck GLAD", "crowd-kit", "GLAD()"),
    "ck_mace": ("ck MACE", "crowd-kit", "MACE()"),
    "cb_glad": ("cb GLAD", "crowdbayes", "GLAD()"),
    "cb_mace": ("cb MACE", "crowdbayes", "MACE()"),
    "cb_mace_vb": ("cb MACE-VB", "crowdbayes", "MACE(variational=True)"),
    "cb_kos": ("cb KOS", "crowdbayes", "KOS(random_state=0)"),
    "ck_kos": ("ck KOS", "crowd-kit", "KOS()"),
    "cb_mmsr": ("cb MMSR", "crowdbayes", "MMSR(random_state=0)"),
    "ck_mmsr": ("ck MMSR", "crowd-kit", "MMSR()"),
    "cb_wawa": ("cb Wawa", "crowdbayes", "Wawa(random_state=0)"),
    "ck_wawa": ("ck Wawa", "crowd-kit", "Wawa()"),
    "cb_zbs": ("cb ZBS", "crowdbayes", "ZeroBasedSkill(random_state=0)"),
    "ck_zbs": ("ck ZBS", "crowd-kit", "ZeroBasedSkill()"),
    "cb_gmv": ("cb GoldMV", "crowdbayes", "GoldMajorityVote(random_state=0)"),
    "ck_gmv": ("ck GoldMV", "crowd-kit", "GoldMajorityVote()"),
    "ck_mv_half": (
        "ck MV½",
        "crowd-kit",
        "MajorityVote() scored on the held-out gold half",
    ),
}
#: the issue-18 models and what each is compared with: (ours, crowd-kit's same method, the
#: fallback when crowd-kit's crashes)
PAIRS = (
    ("cb_glad", "ck_glad", None),
    ("cb_mace", "ck_mace", None),
    ("cb_mace_vb", "ck_mace", None),
    ("cb_kos", "ck_kos", None),
    ("cb_mmsr", "ck_mmsr", None),
    ("cb_wawa", "ck_wawa", "ck_mv"),
    ("cb_zbs", "ck_zbs", "ck_mv"),
    ("cb_gmv", "ck_gmv", "ck_mv_half"),
)
#: Bayesian variant -> its point-estimate counterpart (lower mean log-loss expected)
BAYES_VS_POINT = (("cb_mace_vb", "cb_mace"),)
NEW = ("ck_mv", "ck_mv_half", *dict.fromkeys(k for pair in PAIRS for k in pair[:2]))
BINARY_ONLY = ("cb_kos", "ck_kos")
GOLD_TRAINED = ("cb_gmv", "ck_gmv")
#: scored on the held-out half of the gold only
HELD_OUT = (*GOLD_TRAINED, "ck_mv_half")
BAYESIAN = ("cb_bds", "cb_ha", "cb_cds")
REFERENCE = "ck_ds"
EPS = 1e-15


def _make_model(key: str):
    if key.startswith("cb_"):
        import crowdbayes as cb

        return {
            "cb_mv": lambda: cb.MajorityVote(ties="random", random_state=0),
            "cb_ds": lambda: cb.DawidSkene(),
            "cb_bds": lambda: cb.BayesianDawidSkene(),
            "cb_ha": lambda: cb.HierarchicalAnnotation(random_state=0),
            "cb_cds": lambda: cb.CommunityDawidSkene(),
            "cb_glad": lambda: cb.GLAD(),
            "cb_mace": lambda: cb.MACE(),
            "cb_mace_vb": lambda: cb.MACE(variational=True),
            "cb_kos": lambda: cb.KOS(random_state=0),
            "cb_mmsr": lambda: cb.MMSR(random_state=0),
            "cb_wawa": lambda: cb.Wawa(random_state=0),
            "cb_zbs": lambda: cb.ZeroBasedSkill(random_state=0),
            "cb_gmv": lambda: cb.GoldMajorityVote(random_state=0),
        }[key]()
    from crowdkit import aggregation as ck

    return {
        "ck_mv": lambda: ck.MajorityVote(),
        "ck_mv_half": lambda: ck.MajorityVote(),
        "ck_ds": lambda: ck.DawidSkene(n_iter=100),
        "ck_glad": lambda: ck.GLAD(),
        "ck_mace": lambda: ck.MACE(),
        "ck_kos": lambda: ck.KOS(),
        "ck_mmsr": lambda: ck.MMSR(),
        "ck_wawa": lambda: ck.Wawa(),
        "ck_zbs": lambda: ck.ZeroBasedSkill(),
        "ck_gmv": lambda: ck.GoldMajorityVote(),
    }[key]()


def gold_split(gold: pd.Series) -> tuple[pd.Series, pd.Series]:
    """The gold given to the gold-trained models (a seeded random half) and the rest (scored)."""
    given = np.random.default_rng(0).random(len(gold)) < 0.5
    return gold[given], gold[~given]


def _aligned(predicted, classes: list) -> tuple[pd.Series, pd.DataFrame]:
    """The model's labels and probabilities indexed by task id as strings, with one probability
    column for every class (a class the model never produced gets probability 0)."""
    labels, probas = predicted
    labels = labels.copy()
    labels.index = labels.index.map(str)
    probas = probas.copy()
    probas.index = probas.index.map(str)
    extra = [c for c in probas.columns if c not in classes]
    if extra:
        raise ValueError(f"probability columns {extra} are not classes {classes}")
    probas = probas.reindex(columns=classes, fill_value=0.0)
    return labels, probas


def _child(conn, key: str, dataset: str) -> None:
    """Fit one model to one label set and send back its scores (runs in a fresh process)."""
    try:
        from crowdbayes.datasets import load_labels
        from crowdbayes.metrics import accuracy, log_loss

        ds = load_labels(dataset)
        frame = ds.labels  # task, worker as str; label as read
        gold = ds.gold.copy()
        gold.index = gold.index.map(str)
        classes = sorted(set(frame["label"].tolist()) | set(gold.tolist()))
        if key in BINARY_ONLY and len(classes) != 2:
            conn.send(("n/a", f"binary only; {len(classes)} classes"))
            return
        fit_args: tuple = (frame,)
        if key in HELD_OUT:
            given, gold = gold_split(gold)
            if key in GOLD_TRAINED:
                fit_args = (frame, given)
        model = _make_model(key)
        fingerprint = src_fingerprint()  # the sources this process imported
        conn.send(("ready", None))

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            if hasattr(model, "fit_predict_proba"):
                probas = model.fit_predict_proba(*fit_args)
            else:  # crowd-kit's KOS and MMSR give labels only: probabilities 0 or 1
                hard = model.fit_predict(*fit_args)
                probas = pd.get_dummies(hard).astype(np.float64)
            seconds = time.perf_counter() - start
        labels, probas = _aligned((model.labels_, probas), classes)
        row_sums = probas.loc[gold.index].sum(axis=1).to_numpy()
        n_iter = getattr(model, "n_iter_", None)
        if n_iter is None and hasattr(model, "loss_history_"):
            n_iter = len(model.loss_history_)
        notes = sorted({f"{w.category.__name__}: {str(w.message)[:90]}" for w in caught})
        conn.send(
            (
                "ok",
                {
                    "accuracy": accuracy(gold, labels),
                    "log_loss": log_loss(gold, probas, eps=EPS),
                    "seconds": seconds,
                    "n_iter": None if n_iter is None else int(n_iter),
                    "n_gold": len(gold),  # the scored gold tasks
                    "row_sum_error": float(np.max(np.abs(row_sums - 1.0))),
                    "notes": notes,
                    "src": fingerprint,
                },
            )
        )
    except Exception as err:  # reported, not raised: one failure must not stop the benchmark
        conn.send(("error", f"{type(err).__name__}: {str(err)[:200]}"))


# --------------------------------------------------------------------------- report
def _fmt(value: float, digits: int) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


MARKS = "¹²³⁴⁵⁶⁷⁸⁹"


def _cell(result: dict, metric: str, digits: int) -> str:
    mark = MARKS[result["reused"]] if "reused" in result else ""
    if result["status"] == "ok":
        return _fmt(result[metric], digits) + mark
    return result["status"] + mark


def _read_results(path: Path) -> pd.DataFrame:
    """An earlier run's CSV, its ``status`` read as written ("n/a" is a status, not a NaN)."""
    frame = pd.read_csv(path)
    frame["status"] = pd.read_csv(path, usecols=["status"], keep_default_na=False)["status"]
    return frame


def _reused(frames: list[pd.DataFrame], name: str, key: str) -> dict | None:
    """The result of (set ``name``, model ``key``) in earlier runs' CSVs: from the first file
    where it is "ok"; else as the first file has it (a timeout stays a timeout); None if no
    file has it. ``reused`` is the file's position."""
    found = []
    for position, frame in enumerate(frames):
        rows = frame[(frame["dataset"] == name) & (frame["model"] == key)]
        if len(rows):
            found.append((position, rows.iloc[0]))
    if not found:
        return None
    position, row = next(((p, r) for p, r in found if r["status"] == "ok"), found[0])
    result = {"status": row["status"], "reused": position}
    if row["status"] != "ok":
        detail = row.get("detail")
        result.update(accuracy=None, log_loss=None, seconds=None)
        result["detail"] = detail if isinstance(detail, str) else "(no detail in the file)"
        return result
    n_iter = row.get("n_iter")
    result.update(
        accuracy=float(row["accuracy"]),
        log_loss=float(row["log_loss"]),
        seconds=float(row["seconds"]),
        n_iter=None if n_iter is None or pd.isna(n_iter) else int(n_iter),
        n_gold=int(row["n_gold"]),
        row_sum_error=0.0,
        notes=[],
    )
    return result


def _results_table(results: dict, datasets: list[str], models: list[str]) -> list[str]:
    header = ["data set", "gold"]
    for key in models:
        header += [f"{MODELS[key][0]} acc", f"{MODELS[key][0]} LL"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in datasets:
        gold = next(
            (results[name][k]["n_gold"] for k in models if results[name][k]["status"] == "ok"),
            "",
        )
        row = [name, str(gold)]
        for key in models:
            row += [
                _cell(results[name][key], "accuracy", 3),
                _cell(results[name][key], "log_loss", 3),
            ]
        lines.append("| " + " | ".join(row) + " |")
    row = ["**mean**", ""]
    for key in models:
        for metric in ("accuracy", "log_loss"):
            values = [
                results[n][key][metric] for n in datasets if results[n][key]["status"] == "ok"
            ]
            text = _fmt(float(np.mean(values)), 3) if values else "—"
            if values and len(values) < len(datasets):
                text += f" ({len(values)}/{len(datasets)})"
            row.append(f"**{text}**")
    lines.append("| " + " | ".join(row) + " |")
    return lines


def _time_table(results: dict, datasets: list[str], models: list[str]) -> list[str]:
    header = ["data set"] + [MODELS[k][0] for k in models]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in datasets:
        row = [name]
        for key in models:
            r = results[name][key]
            if r["status"] == "ok":
                iters = "" if r["n_iter"] is None else f" ({r['n_iter']})"
                mark = MARKS[r["reused"]] if "reused" in r else ""
                row.append(f"{r['seconds']:.2f}{iters}{mark}")
            else:
                row.append(r["status"])
        lines.append("| " + " | ".join(row) + " |")
    row = ["**total**"]
    for key in models:
        done = [results[n][key] for n in datasets if results[n][key]["status"] == "ok"]
        text = f"{sum(r['seconds'] for r in done):.1f}"
        if len(done) < len(datasets):
            text += f" ({len(done)}/{len(datasets)})"
        row.append(f"**{text}**")
    lines.append("| " + " | ".join(row) + " |")
    return lines


def _acceptance(results: dict, datasets: list[str], models: list[str]) -> list[str]:
    if REFERENCE not in models:
        return ["(crowd-kit DawidSkene was not run: no comparison)"]
    ref_ok = [n for n in datasets if results[n][REFERENCE]["status"] == "ok"]
    candidates = []
    for key in BAYESIAN:
        if key not in models:
            continue
        common = [n for n in ref_ok if results[n][key]["status"] == "ok"]
        if not common:
            continue
        acc = np.array([results[n][key]["accuracy"] for n in common])
        ref_acc = np.array([results[n][REFERENCE]["accuracy"] for n in common])
        ll = np.array([results[n][key]["log_loss"] for n in common])
        ref_ll = np.array([results[n][REFERENCE]["log_loss"] for n in common])
        gaps = 100 * (acc - ref_acc)
        worst = int(np.argmin(gaps))
        candidates.append(
            {
                "key": key,
                "n": len(common),
                "of": len(datasets),
                "acc": acc.mean(),
                "ref_acc": ref_acc.mean(),
                "worst_gap": gaps[worst],
                "worst_set": common[worst],
                "ll": ll.mean(),
                "ref_ll": ref_ll.mean(),
                "ll_reduction": 100 * (ref_ll.mean() - ll.mean()) / ref_ll.mean(),
                "ll_reduction_per_set": float(np.mean(100 * (ref_ll - ll) / ref_ll)),
                "ll_better_sets": int(np.sum(ll < ref_ll)),
            }
        )
    if not candidates:
        return ["(no Bayesian crowdbayes model finished: no comparison)"]
    best = max(candidates, key=lambda c: c["acc"])
    lines = [
        f"Reference: crowd-kit {MODELS[REFERENCE][2]}. Best crowdbayes Bayesian model by mean "
        f"accuracy: **{MODELS[best['key']][2]}**.",
        "",
        "| model | sets | mean acc | ck DS mean acc | Δ mean acc (points) | worst per-set gap "
        "(points) | mean LL | ck DS mean LL | LL reduction of the mean | mean per-set LL "
        "reduction | sets with lower LL |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in candidates:
        name = MODELS[c["key"]][2] + (" (best)" if c is best else "")
        lines.append(
            f"| {name} | {c['n']}/{c['of']} | {c['acc']:.4f} | {c['ref_acc']:.4f} | "
            f"{100 * (c['acc'] - c['ref_acc']):+.2f} | {c['worst_gap']:+.2f} ({c['worst_set']}) | "
            f"{c['ll']:.4f} | {c['ref_ll']:.4f} | {c['ll_reduction']:+.1f}% | "
            f"{c['ll_reduction_per_set']:+.1f}% | {c['ll_better_sets']}/{c['n']} |"
        )
    lines += [
        "",
        "- Δ mean acc = mean accuracy of the model minus that of crowd-kit DS, in percentage "
        "points; worst per-set gap = the smallest (most negative) per-set difference "
        "model − crowd-kit DS, in points, with the set where it occurs.",
        "- LL reduction of the mean = (mean LL of ck DS − mean LL of the model) / mean LL of "
        "ck DS; mean per-set LL reduction averages that ratio over the sets instead. Positive "
        "means the model's log-loss is lower.",
    ]
    return lines


def _pair_acceptance(results: dict, datasets: list[str], models: list[str]) -> list[str]:
    """Each issue-18 model against crowd-kit's same method (or its fallback), over the sets
    where both finished; then each Bayesian variant's mean log-loss against its point
    estimate."""
    lines = [
        "| model | compared with | sets | mean acc | their mean acc | Δ (points) | ≥ theirs − 0.5 "
        "points | mean LL | their mean LL |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for ours, theirs, fallback in PAIRS:
        if ours not in models:
            continue
        ref, why = theirs, ""
        ok = [n for n in datasets if theirs in models and results[n][theirs]["status"] == "ok"]
        if not ok and fallback in models:
            ref, why = (
                fallback,
                f" (crowd-kit's {MODELS[theirs][2]} did not run: see notes)",
            )
            ok = [n for n in datasets if results[n][fallback]["status"] == "ok"]
        common = [n for n in ok if results[n][ours]["status"] == "ok"]
        if not common:
            lines.append(f"| {MODELS[ours][0]} | {MODELS[theirs][0]} | 0 | — | — | — | — | — | — |")
            continue
        acc = np.mean([results[n][ours]["accuracy"] for n in common])
        ref_acc = np.mean([results[n][ref]["accuracy"] for n in common])
        ll = np.mean([results[n][ours]["log_loss"] for n in common])
        ref_ll = np.mean([results[n][ref]["log_loss"] for n in common])
        passed = "yes" if acc >= ref_acc - 0.005 else "**no**"
        lines.append(
            f"| {MODELS[ours][0]} | {MODELS[ref][0]}{why} | {len(common)} | {acc:.4f} | "
            f"{ref_acc:.4f} | {100 * (acc - ref_acc):+.2f} | {passed} | {ll:.4f} | {ref_ll:.4f} |"
        )
    lines.append("")
    for bayes, point in BAYES_VS_POINT:
        if bayes not in models or point not in models:
            continue
        common = [
            n
            for n in datasets
            if results[n][bayes]["status"] == "ok" and results[n][point]["status"] == "ok"
        ]
        if not common:
            continue
        ll = np.mean([results[n][bayes]["log_loss"] for n in common])
        ref_ll = np.mean([results[n][point]["log_loss"] for n in common])
        lower = sum(results[n][bayes]["log_loss"] < results[n][point]["log_loss"] for n in common)
        lines.append(
            f"- {MODELS[bayes][2]} vs {MODELS[point][2]}: mean log-loss {ll:.4f} vs {ref_ll:.4f} "
            f"over {len(common)} sets ({'lower' if ll < ref_ll else '**not lower**'}; lower on "
            f"{lower}/{len(common)} sets)."
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per model fit")
    parser.add_argument("--datasets", nargs="*", help="label sets (default: all with gold)")
    parser.add_argument(
        "--models",
        nargs="*",
        choices=[*MODELS, "new"],
        help="default: all; 'new': the issue-18 models and their crowd-kit counterparts",
    )
    parser.add_argument("--output", type=Path, default=RESULTS / "labels_accuracy.md")
    parser.add_argument(
        "--reuse",
        nargs="*",
        type=Path,
        default=[],
        help="CSVs of earlier runs of this script: a (set, model) that one of them has is taken "
        "from it (the first file where it is 'ok', else as the first file has it) instead of "
        "being run; such cells are marked in the report",
    )
    parser.add_argument(
        "--reuse-only",
        nargs="*",
        choices=list(MODELS),
        help="with --reuse: take only these models from the files (default: any)",
    )
    args = parser.parse_args(argv)
    reuse_frames = [_read_results(path) for path in args.reuse]
    if args.reuse_only:
        reuse_frames = [f[f["model"].isin(args.reuse_only)] for f in reuse_frames]
    exit_on_sigterm()

    root = resolve_data_root()
    from crowdbayes.datasets import list_datasets

    listing = list_datasets()
    listing = listing[~listing["bundled"]]
    with_gold = listing[listing["gold_tasks"] > 0]
    skipped = sorted(set(listing["name"]) - set(with_gold["name"]))
    datasets = list(args.datasets) if args.datasets else with_gold["name"].tolist()
    models = list(args.models) if args.models else list(MODELS)
    if "new" in models:
        models = list(dict.fromkeys(k for m in models for k in (NEW if m == "new" else (m,))))
    started = time.perf_counter()

    results: dict[str, dict[str, dict]] = {}
    for name in datasets:
        results[name] = {}
        for key in models:
            reused = _reused(reuse_frames, name, key)
            if reused is not None:
                results[name][key] = reused
                print(f"{name:>15} {MODELS[key][0]:>8}: reused from {args.reuse[reused['reused']]}")
                continue
            status, payload = run_isolated(_child, (key, name), timeout=args.timeout)
            result = {
                "status": status,
                "accuracy": None,
                "log_loss": None,
                "seconds": None,
            }
            if status == "ok":
                result.update(payload)
            else:
                result["detail"] = payload
            results[name][key] = result
            shown = (
                f"acc {payload['accuracy']:.4f}  LL {payload['log_loss']:.4f}  "
                f"{payload['seconds']:.2f} s"
                if status == "ok"
                else f"{status}: {payload}"
            )
            print(f"{name:>15} {MODELS[key][0]:>8}: {shown}", flush=True)

    rows = []
    for name in datasets:
        for key in models:
            r = results[name][key]
            rows.append(
                {
                    "dataset": name,
                    "model": key,
                    "library": MODELS[key][1],
                    "spec": MODELS[key][2],
                    "status": r["status"],
                    "accuracy": r["accuracy"],
                    "log_loss": r["log_loss"],
                    "seconds": r["seconds"],
                    "n_iter": r.get("n_iter"),
                    "n_gold": r.get("n_gold"),
                    "detail": r.get("detail"),
                    "src": r.get("src"),
                    "reused_from": None if "reused" not in r else str(args.reuse[r["reused"]]),
                }
            )
    csv_path = args.output.with_suffix(".csv")
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(csv_path, index=False)

    info = listing.set_index("name")
    sizes = [
        f"{n} ({info.loc[n, 'n_labels']} labels, {info.loc[n, 'n_tasks']} tasks, "
        f"{info.loc[n, 'n_workers']} workers, K={info.loc[n, 'n_classes']})"
        for n in datasets
        if n in info.index
    ]
    notes: dict[str, list[str]] = {}  # note -> models it applies to
    for name in datasets:
        for key in models:
            r = results[name][key]
            if r["status"] != "ok":
                text = f"{name}: {r['status']} — {r['detail']}"
                notes.setdefault(text, []).append(MODELS[key][0])
                continue
            if r["row_sum_error"] > 1e-6:
                text = f"{name}: probability rows sum to 1 only within {r['row_sum_error']:.2g}"
                notes.setdefault(text, []).append(MODELS[key][0])
            for note in r["notes"]:
                if "DataWarning" in note or "Convergence" in note:
                    notes.setdefault(f"{name}: {note}", []).append(MODELS[key][0])
    note_lines = [f"- {text} ({', '.join(who)})" for text, who in notes.items()]

    details = [
        *fingerprint_lines({r["src"] for m in results.values() for r in m.values() if "src" in r}),
        f"- data root: `{root}`; per-model time limit {args.timeout:g} s (each fit in a fresh "
        f"subprocess); load average at the end {load_average()}; total run time "
        f"{time.perf_counter() - started:.0f} s",
    ]
    report = [
        "Every model is fitted to all labels of a set (ids as strings; repeated task–worker "
        "pairs are kept as separate votes by both libraries) and scored on the gold tasks only; "
        "the gold is never given to a model. acc = `crowdbayes.metrics.accuracy`, LL = "
        f"`crowdbayes.metrics.log_loss` (eps={EPS:g}), probability columns aligned by class. "
        "cb = crowdbayes, ck = crowd-kit. A mean marked (n/m) covers only the sets the model "
        "finished.",
        "",
        "Models: "
        + "; ".join(f"{MODELS[k][0]} = {MODELS[k][1]} `{MODELS[k][2]}`" for k in models)
        + ".",
        "",
        "Sets: "
        + "; ".join(sizes)
        + "."
        + (f" Skipped (no gold): {', '.join(skipped)}." if skipped else ""),
        "",
        *(
            [
                "Reused results (not rerun in this invocation; `--reuse`), marked in the tables: "
                + "; ".join(f"{MARKS[i]} from `{path}`" for i, path in enumerate(args.reuse))
                + ". The source fingerprints above are those of the fits run in this invocation "
                "(a reused row carries its own in its file's `src` column, where it has one).",
                "",
            ]
            if args.reuse
            else []
        ),
        "## Accuracy and log-loss on the gold tasks",
        "",
        *_results_table(results, datasets, models),
        "",
        "## Acceptance checks: Bayesian crowdbayes models vs crowd-kit DawidSkene",
        "",
        *_acceptance(results, datasets, models),
        "",
        "## Issue 18: each model against crowd-kit's same method",
        "",
        "Mean over the sets where both finished (KOS: the binary sets; the gold-trained "
        "majority votes are scored on the held-out half of the gold). Where crowd-kit's method "
        "crashed on every set it is compared with crowd-kit's MajorityVote instead, as said in "
        "the row.",
        "",
        *_pair_acceptance(results, datasets, models),
        "",
        "## Wall time of `fit_predict_proba` (seconds; iterations in brackets)",
        "",
        "Fit from the label DataFrame, in the child process after imports and data loading; "
        "crowdbayes times include encoding the labels.",
        "",
        *_time_table(results, datasets, models),
        "",
        "## Notes",
        "",
        *(note_lines or ["- none"]),
        "",
        f"Raw numbers: `{csv_path.name}` (next to this file).",
    ]
    title = "Label aggregation: accuracy and log-loss on the real label sets"
    write_markdown_report(args.output, title, report, details)
    print(f"wrote {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
