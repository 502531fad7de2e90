"""The automatic label-model choice (``--model auto``) on every shared label set with gold.

For each set: the accuracy on the gold tasks of every candidate fitted on all labels, the
held-out label scores of :func:`crowdbayes.models.labels.held_out_label_scores` (mean
task-information gain per hidden label; the gold is never used to choose), the choice (the
best candidate that beats majority vote's gain by more than two paired standard errors, else
majority vote), its accuracy minus majority vote's, minus the best single candidate's, and
minus the default of ``labels fit`` (the hierarchical model). A paired bootstrap over gold
tasks (2,000 draws) gives the 95% interval of auto − MV. The column "by log score" names the
candidate the plain mean log predictive probability of the same hidden labels would have
chosen (the criterion before the gain; it rewards predicting a one-button worker) and its
accuracy.

The choice has no parameter tuned on these sets (its candidates and folds are fixed), so each
set's row is already a held-out judgement; the "leave one set out" column asks the other
question the defaults protocol asks: had the candidate list been chosen on the other sets (the
single candidate with the best mean accuracy on them), would auto still be at least as good on
the one left out?

Usage (from the repository root)::

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/labels/auto_choice.py \\
        [--datasets rte dog ...] [--output benchmarks/labels/results/auto_choice.md]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common

import numpy as np
import pandas as pd

from _common import markdown_table, resolve_data_root, results_dir, write_markdown_report

RESULTS = results_dir(__file__)
SINGLE = ("mv", "one-coin", "ds", "bayes-ds", "hierarchical")


def paired_interval(a: np.ndarray, b: np.ndarray, draws: int = 2000, seed: int = 0):
    """95% bootstrap interval of mean(a - b) over paired items."""
    rng = np.random.default_rng(seed)
    diff = a.astype(float) - b.astype(float)
    means = diff[rng.integers(0, len(diff), size=(draws, len(diff)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def run_set(name: str) -> dict:
    from crowdbayes.data import Labels
    from crowdbayes.datasets import load_labels
    from crowdbayes.models.labels.auto import AutoLabelModel, _candidate

    dataset = load_labels(name)
    labels = Labels(dataset.labels)
    gold = dataset.gold
    row: dict = {"set": name, "labels": labels.n_labels, "tasks": labels.n_tasks}
    correct = {}
    for candidate in SINGLE:
        model = _candidate(candidate, 0).fit(labels)
        hit = (model.labels_.reindex(gold.index) == gold).to_numpy()
        correct[candidate] = hit
        row[candidate] = hit.mean()
    start = time.perf_counter()
    auto = AutoLabelModel().fit(labels)
    row["auto seconds"] = time.perf_counter() - start
    hit = (auto.labels_.reindex(gold.index) == gold).to_numpy()
    correct["auto"] = hit
    row["choice"] = auto.choice_
    row["auto"] = hit.mean()
    row["scores"] = ", ".join(
        f"{m} {r.score:.3f} (mv {r.over_baseline:+.3f} ± {r.over_baseline_se:.3f})"
        for m, r in auto.scores_.iterrows()
    )
    by_log = str(auto.scores_["log_score"].idxmax())
    row["by log score"] = f"{by_log} ({row[by_log]:.4f})"
    lower, upper = paired_interval(hit, correct["mv"])
    row["auto − mv"] = hit.mean() - correct["mv"].mean()
    row["95% interval"] = f"[{lower:+.3f}, {upper:+.3f}]"
    row["auto − hierarchical"] = hit.mean() - correct["hierarchical"].mean()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*")
    parser.add_argument("--output", type=Path, default=RESULTS / "auto_choice.md")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    root = resolve_data_root() / "labels"
    names = args.datasets or sorted(p.name for p in root.iterdir() if (p / "gold.csv").is_file())
    rows = []
    for name in names:
        rows.append(run_set(name))
        print({k: v for k, v in rows[-1].items() if k != "scores"}, flush=True)
    table = pd.DataFrame(rows).set_index("set")
    accuracy = table[list(SINGLE) + ["auto"]]
    best_single = accuracy[list(SINGLE)].mean().idxmax()
    # leave one set out: the single model best on the other sets, judged on the one left out
    loso = {}
    for name in table.index:
        others = accuracy.drop(index=name)[list(SINGLE)].mean().idxmax()
        loso[name] = f"{others} ({accuracy.loc[name, 'auto'] - accuracy.loc[name, others]:+.3f})"
    table["LOSO single (auto −)"] = pd.Series(loso)
    lines = [
        "Accuracy on the gold tasks; the choice uses no gold (held-out label scores).",
        "",
        markdown_table(
            table[
                list(SINGLE)
                + [
                    "auto",
                    "choice",
                    "by log score",
                    "auto − mv",
                    "95% interval",
                    "auto − hierarchical",
                ]
                + ["LOSO single (auto −)", "auto seconds"]
            ],
            digits=4,
        ),
        "",
        "Mean accuracy: "
        + ", ".join(f"{m} {accuracy[m].mean():.4f}" for m in accuracy.columns)
        + f". Best single model on average: {best_single}.",
        f"auto ≥ mv on {(table['auto − mv'] >= 0).sum()} of {len(table)} sets; "
        f"mean auto − best single {accuracy['auto'].mean() - accuracy[best_single].mean():+.4f}.",
        "",
        "Held-out label scores (mean task-information gain per hidden label, nats; in brackets "
        "the difference to majority vote's gain and its worker-clustered standard error — a "
        "candidate is chosen over majority vote only when that difference exceeds two):",
        "",
        *[f"- {name}: {scores}" for name, scores in table["scores"].items()],
    ]
    write_markdown_report(args.output, "Automatic label-model choice", lines, echo=True)


if __name__ == "__main__":
    main()
