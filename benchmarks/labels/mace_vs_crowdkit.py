"""MACE at its defaults against crowd-kit's MACE and majority vote (issue 40).

Every shared label set with gold (``$CROWDBAYES_DATA/labels/``, via
``crowdbayes.datasets.load_labels``) and simulated spammer-heavy crowds with many workers
(``crowdbayes.models.labels._mace_scenarios.simulate_spammer_crowd``: 2,000 tasks, 200
workers, 5 labels per task, 60% or 80% spammers answering uniformly or always one class,
binary and 4-class, ``--seeds``). Each model is fitted to all labels; gold (or the simulated
truth) only scores: accuracy of the most probable class.

Models: crowdbayes ``MajorityVote(ties="random", random_state=0)``; ``MACE()`` now;
``MACE(n_restarts=0, strategy_prior=1.0, learn_strategy_prior=False, learn_prevalence=True)``,
the defaults before issue 40 (one EM run from the vote shares, a flat strategy prior); crowd-kit
1.4.2 ``MACE()`` (VB, 10 restarts of 50 iterations) on the table as given and on the table
recoded by ``_mace_scenarios.appearance_sorted`` (where its index bug does not bite); and the
candidate defaults ``CANDIDATES`` that the leave-one-set-out tables choose among: for each set,
the candidate with the best worst margin against a crowd-kit column on all *other* sets (ties:
the best mean margin) is chosen and judged on the left-out set.

crowd-kit's MACE takes minutes on the large sets (pandas group-bys, 10 × 50 iterations), so its
accuracies are kept in ``--ck-cache`` and ``--ck-aligned-cache`` (CSVs keyed by set name and a
fingerprint of the label table it was given) and reused when the same table comes back.

Usage (from the repository root)::

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/labels/mace_vs_crowdkit.py \\
        [--datasets rte web ...] [--seeds 0 1] [--no-sims] \\
        [--output benchmarks/labels/results/mace_vs_crowdkit.md]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import pandas as pd

from _common import resolve_data_root, results_dir, write_markdown_report

RESULTS = results_dir(__file__)
SHARED = "bluebird wsd temp rte dog duchenne web d_possent d_product s_adult trec s_rel".split()
#: the defaults before issue 40
BEFORE = {
    "n_restarts": 0,
    "strategy_prior": 1.0,
    "learn_strategy_prior": False,
    "learn_prevalence": True,
}
#: candidate defaults for the leave-one-set-out choice (name -> MACE keyword arguments)
CANDIDATES = {
    "EM, 1 run, Dir(1)": BEFORE,
    "EM, 10 restarts, Dir(1)": {"learn_strategy_prior": False, "learn_prevalence": True},
    "EM, 10 restarts, Dir(10)": {
        "strategy_prior": 10.0,
        "learn_strategy_prior": False,
        "learn_prevalence": True,
    },
    "EM, 10 restarts, Dir(10), uniform classes": {
        "strategy_prior": 10.0,
        "learn_strategy_prior": False,
        "learn_prevalence": False,
    },
    "EM, 10 restarts, Dir(β) learned, learned classes (MACE())": {},
    "EM, 10 restarts, Dir(β) learned, uniform classes": {"learn_prevalence": False},
    "EM, 10 restarts, Dir(β) learned, class prior by BIC": {"learn_prevalence": "auto"},
    "VB, 10 restarts, Dir(10)": {
        "variational": True,
        "strategy_prior": 10.0,
        "n_restarts": 10,
        "learn_prevalence": True,
    },
}
#: the crowd-kit columns: its MACE() on the table as given, and on the recoded table
#: (``_mace_scenarios.appearance_sorted``) where it fits the model it describes
REFERENCES = ("crowd-kit", "crowd-kit aligned")


def fingerprint(frame: pd.DataFrame) -> str:
    """SHA-256 (12 hex digits) of a label table's rows."""
    text = frame[["task", "worker", "label"]].astype(str).to_csv(index=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def shared_sets(names):
    from crowdbayes.datasets import load_labels

    for name in names:
        data = load_labels(name)
        yield name, data.labels, data.gold


def simulated_sets(seeds):
    from crowdbayes.models.labels._mace_scenarios import simulate_spammer_crowd

    for k, share, kind, seed in itertools.product(
        (2, 4), (0.6, 0.8), ("uniform", "one-class"), seeds
    ):
        crowd = simulate_spammer_crowd(
            n_classes=k, spammer_share=share, spammer_kind=kind, random_state=seed
        )
        yield f"sim K={k} spam={share:.0%} {kind} seed={seed}", crowd.labels, crowd.truth


def aligned_for_crowdkit(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` recoded for crowd-kit's MACE (``_mace_scenarios.appearance_sorted``)."""
    from crowdbayes.models.labels._mace_scenarios import appearance_sorted

    return appearance_sorted(frame)


def crowdkit_accuracy(name, frame, gold, cache: pd.DataFrame) -> tuple[float, float | None]:
    """crowd-kit's MACE() accuracy (from the cache when the table matches) and its fit time
    (None when cached)."""
    from crowdbayes.metrics import accuracy

    key = fingerprint(frame)
    hit = cache[(cache["set"] == name) & (cache["fingerprint"] == key)]
    if len(hit):
        return float(hit["accuracy"].iloc[0]), None
    from crowdkit.aggregation import MACE as CrowdKitMACE

    start = time.perf_counter()
    labels = CrowdKitMACE().fit_predict(frame)
    seconds = time.perf_counter() - start
    value = accuracy(gold, labels)
    cache.loc[len(cache)] = [name, key, value, seconds]
    return value, seconds


def read_cache(path: Path) -> pd.DataFrame:
    """A crowd-kit accuracy cache (empty when the file is missing)."""
    if path.is_file():
        return pd.read_csv(path, dtype={"fingerprint": str})
    return pd.DataFrame(columns=["set", "fingerprint", "accuracy", "seconds"])


def fit_accuracy(model, frame, gold) -> tuple[float, float]:
    from crowdbayes.metrics import accuracy

    start = time.perf_counter()
    model.fit(frame)
    return accuracy(gold, model.labels_), time.perf_counter() - start


def leave_one_out(table: pd.DataFrame, reference: str) -> pd.DataFrame:
    """For each set: the candidate chosen on the other sets (best worst margin against the
    ``reference`` column, then best mean margin) and its margin on the left-out set."""
    margins = pd.DataFrame(
        {name: table[name] - table[reference] for name in CANDIDATES}, index=table.index
    )
    rows = []
    for left_out in margins.index:
        others = margins.drop(index=left_out)
        score = others.min().round(6) * 1e6 + others.mean()
        chosen = score.idxmax()
        rows.append(
            {
                "left out": left_out,
                "chosen on the others": chosen,
                "its worst margin there": others[chosen].min(),
                "margin on the left-out set": margins.loc[left_out, chosen],
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="*", default=SHARED)
    parser.add_argument("--seeds", nargs="*", type=int, default=[0])
    parser.add_argument("--no-sims", action="store_true")
    parser.add_argument("--ck-cache", default=str(RESULTS / "mace_vs_crowdkit_crowdkit.csv"))
    parser.add_argument(
        "--ck-aligned-cache", default=str(RESULTS / "mace_vs_crowdkit_crowdkit_aligned.csv")
    )
    parser.add_argument("--output", default=str(RESULTS / "mace_vs_crowdkit.md"))
    args = parser.parse_args()
    resolve_data_root()
    warnings.simplefilter("ignore")

    from crowdbayes import MACE, MajorityVote

    caches = {
        reference: (Path(path), read_cache(Path(path)))
        for reference, path in zip(REFERENCES, (args.ck_cache, args.ck_aligned_cache), strict=True)
    }
    sets = list(shared_sets(args.datasets))
    if not args.no_sims:
        sets += list(simulated_sets(args.seeds))
    rows, seconds = [], []
    for name, frame, gold in sets:
        row = {"set": name, "scored": int(gold.index.isin(frame["task"]).sum())}
        row["majority vote"], _ = fit_accuracy(
            MajorityVote(ties="random", random_state=0), frame, gold
        )
        row["before"], _ = fit_accuracy(MACE(**BEFORE), frame, gold)
        ours = MACE()
        row["MACE()"], ours_time = fit_accuracy(ours, frame, gold)
        row["class prior"] = ours.class_prior_
        row["crowd-kit"], ck_time = crowdkit_accuracy(name, frame, gold, caches["crowd-kit"][1])
        row["crowd-kit aligned"], _ = crowdkit_accuracy(
            name, aligned_for_crowdkit(frame), gold, caches["crowd-kit aligned"][1]
        )
        for path, cache in caches.values():
            cache.to_csv(path, index=False)
        for candidate, kwargs in CANDIDATES.items():
            row[candidate], _ = fit_accuracy(MACE(**kwargs), frame, gold)
        rows.append(row)
        seconds.append({"set": name, "MACE()": ours_time, "crowd-kit": ck_time})
        print(
            f"{name}: MV {row['majority vote']:.4f} before {row['before']:.4f} "
            f"now {row['MACE()']:.4f} crowd-kit {row['crowd-kit']:.4f} "
            f"(aligned {row['crowd-kit aligned']:.4f})",
            flush=True,
        )
    table = pd.DataFrame(rows).set_index("set")
    margins = {ref: table["MACE()"] - table[ref] for ref in REFERENCES}
    lines = [
        "Accuracy on the gold tasks (shared sets) or on every task (simulated), all labels "
        "given to each model. `before`: `MACE(n_restarts=0, strategy_prior=1.0, "
        "learn_strategy_prior=False, learn_prevalence=True)`, the defaults before issue 40. "
        "`crowd-kit`: its `MACE()` on the table as given; `aligned`: on the same table with the"
        " worker ids and classes recoded so that their sorted order is their order of first "
        "appearance (`_mace_scenarios.appearance_sorted`: crowd-kit 1.4.2 reads its spam counts"
        " back in sorted order into arrays indexed in order of appearance, so on a table as "
        "given each worker gets another's strategy). Bar: `MACE()` at least crowd-kit − 0.005 "
        "everywhere.",
        "",
        "| set | scored | majority vote | before | MACE() | its class prior | crowd-kit "
        "| crowd-kit aligned | MACE() − crowd-kit | MACE() − aligned |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]

    def cell(value: float) -> str:
        return f"{value:+.4f}" + ("" if value >= -0.005 else " **below**")

    for name, row in table.iterrows():
        lines.append(
            f"| {name} | {int(row['scored'])} | {row['majority vote']:.4f} | {row['before']:.4f} | "
            f"{row['MACE()']:.4f} | {row['class prior']} | {row['crowd-kit']:.4f} | "
            f"{row['crowd-kit aligned']:.4f} | "
            + " | ".join(cell(margins[ref][name]) for ref in REFERENCES)
            + " |"
        )
    shared = table.index.isin(args.datasets)
    columns = ["majority vote", "before", "MACE()", *REFERENCES]
    for label, mask in (("shared sets", shared), ("simulated sets", ~shared)):
        if mask.any():
            part = table[mask]
            lines.append(
                f"| mean over the {label} | | "
                + " | ".join(f"{part[c].mean():.4f}" for c in columns[:3])
                + " | | "
                + " | ".join(f"{part[c].mean():.4f}" for c in columns[3:])
                + " | "
                + " | ".join(f"{margins[ref][mask].mean():+.4f}" for ref in REFERENCES)
                + " |"
            )
    lines.append("")
    for ref in REFERENCES:
        margin = margins[ref]
        lines.append(
            f"Worst margin against {ref}: {margin.min():+.4f} ({margin.idxmin()}); sets below "
            f"the bar: {int((margin < -0.005).sum())} of {len(margin)}."
        )
        lines.append("")
    lines += [
        "## The candidate defaults",
        "",
        "| set | " + " | ".join(CANDIDATES) + " |",
        "|---|" + "---:|" * len(CANDIDATES),
    ]
    for name, row in table.iterrows():
        lines.append(f"| {name} | " + " | ".join(f"{row[c]:.4f}" for c in CANDIDATES) + " |")
    for ref in REFERENCES:
        worst = {c: (table[c] - table[ref]).min() for c in CANDIDATES}
        lines.append(
            f"| worst margin against {ref} | "
            + " | ".join(f"{worst[c]:+.4f}" for c in CANDIDATES)
            + " |"
        )
    for ref in REFERENCES:
        loo = leave_one_out(table, ref)
        held = (loo["margin on the left-out set"] >= -0.005).sum()
        lines += [
            "",
            f"## Leave one set out, against {ref}",
            "",
            f"For each set, the candidate with the best worst margin against {ref} on the other "
            "sets (ties: best mean margin), judged on the left-out set.",
            "",
            "| left out | chosen on the others | its worst margin there "
            "| margin on the left-out set |",
            "|---|---|---:|---:|",
        ]
        for _, row in loo.iterrows():
            lines.append(
                f"| {row['left out']} | {row['chosen on the others']} | "
                f"{row['its worst margin there']:+.4f} | {row['margin on the left-out set']:+.4f} |"
            )
        lines += [
            "",
            f"A choice made without the set still meets the bar on it on {held} of {len(loo)} "
            "sets.",
        ]
    lines += [
        "",
        "## Fit time (seconds; crowd-kit's blank when taken from the cache)",
        "",
        "| set | MACE() | crowd-kit |",
        "|---|---:|---:|",
    ]
    for item in seconds:
        ck = "" if item["crowd-kit"] is None else f"{item['crowd-kit']:.1f}"
        lines.append(f"| {item['set']} | {item['MACE()']:.2f} | {ck} |")
    table.to_csv(Path(args.output).with_suffix(".csv"))
    write_markdown_report(args.output, "MACE against crowd-kit's MACE and majority vote", lines)


if __name__ == "__main__":
    main()
