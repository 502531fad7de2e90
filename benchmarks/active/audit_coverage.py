"""Audits on the shared label sets: the coverage and width of the accuracy interval (issue 43).

For each set the default label model of ``crowdbayes labels fit`` (``HierarchicalAnnotation``,
seed 0) is fitted once on every label. Its answers on the gold tasks are the population an
audit samples (where gold covers every task, the accuracy over all tasks; where it covers a
selected subset — duchenne, s_adult, s_rel, trec — the accuracy on the gold tasks): the model's
posteriors of the gold tasks go to :func:`crowdbayes.metrics.audit.plan_audit`, the gold of
the drawn tasks plays the expert, and :func:`crowdbayes.metrics.audit.audit_accuracy` gives the
90% interval. Audit sizes 30, 100 and 300, capped at half the gold tasks; ``--audits`` seeded
audits per set and size. Reported: the true accuracy on the gold tasks, the coverage of the
PPI++ interval and of the audit-only Wilson interval, their mean widths and the ratio, and the
mean "more audited tasks to halve the interval" against the size that does halve the mean
width (found by running the audits at that size).

Usage (from the repository root)::

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/active/audit_coverage.py \\
        [--sets rte dog] [--audits 200] [--design stratified|stratified-neyman|uniform] \\
        [--output benchmarks/active/results/audit_coverage.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common

from _common import markdown_table, write_markdown_report  # noqa: E402
from crowdbayes.datasets import load_labels  # noqa: E402
from crowdbayes.metrics.audit import audit_accuracy, plan_audit  # noqa: E402
from crowdbayes.models.labels import HierarchicalAnnotation  # noqa: E402

SETS = (
    "bluebird", "d_possent", "d_product", "dog", "duchenne", "rte",
    "s_adult", "s_rel", "temp", "trec", "web", "wsd",
)  # fmt: skip
SIZES = (30, 100, 300)
TARGET_COVERAGE = 0.88


def replay(posteriors: pd.DataFrame, gold: pd.Series, n: int, audits: int, design: str):
    """``audits`` seeded audits of ``n`` gold tasks: one row of the overall estimate each.
    ``design``: uniform, stratified, or stratified-neyman."""
    rows = []
    kind, _, allocation = design.partition("-")
    for seed in range(audits):
        plan = plan_audit(
            posteriors, n, design=kind, allocation=allocation or "proportional", random_state=seed
        )
        plan["label"] = gold.reindex(plan["task"]).to_numpy()
        rows.append(audit_accuracy(posteriors, plan, level=0.9).loc["all"])
    return pd.DataFrame(rows)


def run_set(name: str, audits: int, design: str) -> list[dict]:
    data = load_labels(name)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = HierarchicalAnnotation(random_state=0, progress=False).fit(data.labels)
    seconds = time.perf_counter() - start
    gold = data.gold[data.gold.index.isin(model.probas_.index)]
    posteriors = model.probas_.loc[gold.index]
    truth = float((model.labels_.loc[gold.index] == gold).mean())
    rows = []
    for n in sorted({min(size, len(gold) // 2) for size in SIZES}):
        start_audits = time.perf_counter()
        table = replay(posteriors, gold, n, audits, design)
        width = table["upper"] - table["lower"]
        wilson = table["wilson_upper"] - table["wilson_lower"]
        rows.append(
            {
                "set": name,
                "gold tasks": len(gold),
                "all tasks": model.probas_.shape[0],
                "accuracy": truth,
                "n": n,
                "coverage": float(((table["lower"] <= truth) & (truth <= table["upper"])).mean()),
                "Wilson coverage": float(
                    ((table["wilson_lower"] <= truth) & (truth <= table["wilson_upper"])).mean()
                ),
                "width": float(width.mean()),
                "Wilson width": float(wilson.mean()),
                "width ratio": float(width.mean() / wilson.mean()),
                "HT width": float((table["audit_only_upper"] - table["audit_only_lower"]).mean()),
                "mean λ": float(table["lambda"].mean()),
                "more to halve": float(table["more_to_halve"].mean()),
                "fit s": seconds,
                "audits s": time.perf_counter() - start_audits,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--audits", type=int, default=200)
    parser.add_argument(
        "--design", default="stratified", choices=["stratified", "stratified-neyman", "uniform"]
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        results = pool.map(run_set, args.sets, [args.audits] * len(args.sets),
                           [args.design] * len(args.sets))  # fmt: skip
        rows = [row for rows in results for row in rows]
    table = pd.DataFrame(rows)
    narrower = table.groupby("set")["width ratio"].max() < 1
    on_average = table.groupby("set")["width ratio"].mean() < 1
    by_size = table.groupby("set")["width ratio"].apply(lambda r: (r < 1).sum())
    lines = [
        f"Design {args.design}; {args.audits} seeded audits per set and size; 90% intervals; "
        "sizes capped at half the gold tasks. coverage: the PPI++ interval "
        "(`crowdbayes.metrics.audit.audit_accuracy`) holds the accuracy of the model's answers "
        "on the gold tasks; Wilson: the audit-only binomial (Wilson score, finite-population "
        "corrected) interval; HT width: the audit-only Horvitz–Thompson interval (λ = 0) "
        "with the same variance rules; more to halve: the mean of the audit's own estimate of "
        "how many more audited tasks would halve the interval.",
        "",
        markdown_table(table.set_index("set"), digits=3),
        "",
        f"Coverage ≥ {TARGET_COVERAGE}: {(table['coverage'] >= TARGET_COVERAGE).sum()} of "
        f"{len(table)} (set, size) rows; lowest {table['coverage'].min():.3f}. "
        f"Wilson coverage ≥ {TARGET_COVERAGE}: "
        f"{(table['Wilson coverage'] >= TARGET_COVERAGE).sum()} of {len(table)}.",
        f"Narrower than Wilson on average over the sizes: {int(on_average.sum())} of "
        f"{len(on_average)} sets (not: {', '.join(on_average.index[~on_average]) or 'none'}); "
        f"at every size: {int(narrower.sum())} of {len(narrower)} sets; "
        f"(set, size) rows narrower: {int(by_size.sum())} of {len(table)}; mean width ratio "
        f"{table['width ratio'].mean():.3f}.",
        f"Total time {time.perf_counter() - start:.0f} s ({args.jobs} processes).",
    ]
    write_markdown_report(args.output, "Audit coverage", lines, echo=True)


if __name__ == "__main__":
    main()
