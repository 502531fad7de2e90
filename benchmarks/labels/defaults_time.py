"""Time at defaults (issue 40 point 4): every ``labels``/``values`` model of the command line's
catalogue fitted with its default settings on 10,000 simulated judgments, and the two models
with their own targets.

Data:

- labels: ``simulate_labels(2000, 50, 5, random_state=0)`` (2,000 tasks × 5 labels = 10,000
  binary labels); ``crowd-classifier`` gets 20 features per task (the true class shifts the
  mean of the first 5);
- values: ``simulate_values(2000, 50, 5, random_state=0)`` (10,000 answers);
- CrowdClassifier, own target: 1,000 tasks × 5 labels and 100 features (< 3 s);
- dpm-gp (``CommunityPreferences``), own target: 150 comparisons of 12 items by 10 workers,
  and by 150 workers (one comparison each: the sampler's cost grows with the workers) (< 10 s);
  the first of them pays the first-call costs (imports), as a command-line run does.

Each fit runs once in this process, after one small warm-up fit of the same model (imports and
first-call costs are not timed), with the catalogue's command-line settings
(``ModelEntry.cli_defaults``). The bound is 2 s, except for the samplers (hierarchical,
pl-gibbs, dpm-gp) and the torch models, which are timed but not bounded. The load average is
printed with the times: on a shared machine compare ratios within one run.

Usage (from the repository root)::

    .venv/bin/python benchmarks/labels/defaults_time.py [--only NAME ...]
        [--output benchmarks/labels/results/defaults_time.md]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common

from _common import load_average, results_dir, write_markdown_report

RESULTS = results_dir(__file__)
BOUND_S = 2.0
UNBOUNDED = {"hierarchical", "pl-gibbs", "dpm-gp"}
OWN_TARGETS = {
    "crowd-classifier-1000x100": 3.0,
    "dpm-gp-150-by-10": 10.0,
    "dpm-gp-150-by-150": 10.0,
}


def label_data(n_tasks: int, n_features: int, seed: int = 0):
    from crowdbayes.datasets import simulate_labels

    sim = simulate_labels(n_tasks, 50, 5, random_state=seed)
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_tasks, n_features))
    X[:, :5] += 0.8 * np.asarray(sim.truth)[:, None]
    features = pd.DataFrame(X, index=pd.Index(range(n_tasks), name="task"))
    features.columns = [f"f{j}" for j in range(n_features)]
    return sim.labels, features, pd.Series(np.asarray(sim.truth)[::10], index=range(0, n_tasks, 10))


def classifier_data(
    n_tasks: int = 1000, n_features: int = 100, n_classes: int = 10, class_scale: float = 1.0
):
    """1–3 labels per task from workers of accuracy about 0.7, and features from Gaussian
    classes (class means N(0, 1) per feature, unit noise): nearly separable, as 100 real
    features of a few hundred items often are, so every classifier fit needs many steps."""
    from crowdbayes import Labels
    from crowdbayes.datasets import simulate_labels

    sim = simulate_labels(n_tasks, 50, 3, n_classes=n_classes, accuracy_mean=0.7, random_state=0)
    rng = np.random.default_rng(0)
    keep = rng.random(len(sim.labels)) < 2 / 3  # 1-3 labels per task (the first always kept)
    keep[::3] = True
    means = rng.normal(scale=class_scale, size=(n_classes, n_features))
    X = means[np.asarray(sim.truth)] + rng.normal(size=(n_tasks, n_features))
    features = pd.DataFrame(X, index=pd.Index(range(n_tasks), name="task"))
    features.columns = [f"f{j}" for j in range(n_features)]
    return Labels(sim.labels[keep]), features


def preference_data(n_pairs: int = 150, n_items: int = 12, n_workers: int = 10, seed: int = 0):
    """``n_pairs`` comparisons of ``n_items`` items by workers of two opposite tastes."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=n_items)
    workers = rng.integers(0, n_workers, n_pairs)
    taste = np.where(workers % 2 == 0, 1.0, -1.0)
    first = rng.integers(0, n_items, n_pairs)
    second = (first + rng.integers(1, n_items, n_pairs)) % n_items
    margin = taste * (quality[first] - quality[second])
    wins = rng.random(n_pairs) < 1 / (1 + np.exp(-margin))
    return pd.DataFrame(
        {"worker": workers, "left": first, "right": second, "label": np.where(wins, first, second)}
    )


def timed(fit) -> float:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit()
    return time.perf_counter() - start


def catalogue_fits(only: set[str] | None):
    """(name, fit of 10,000 judgments, warm-up fit) for every labels/values model."""
    from crowdbayes import Labels
    from crowdbayes._catalogue import model_entries
    from crowdbayes.datasets import simulate_values

    labels, features, gold = label_data(2000, 20)
    small_labels, small_features, small_gold = label_data(60, 20, seed=1)
    values = simulate_values(2000, 50, 5, random_state=0).values
    small_values = simulate_values(60, 20, 3, random_state=1).values
    for entry in model_entries("labels") + model_entries("values"):
        if only and entry.name not in only:
            continue
        cls = entry.load_class()
        settings = dict(entry.cli_defaults)
        if entry.command == "values":
            data, small = (values,), (small_values,)
        elif entry.name == "ordinal-ds":
            data, small = (Labels(labels, ordered=True),), (Labels(small_labels, ordered=True),)
        elif entry.name == "gold-mv":
            data, small = (Labels(labels, gold=gold),), (Labels(small_labels, gold=small_gold),)
        elif cls.tags.features == "required":
            data, small = (labels, features), (small_labels, small_features)
        else:
            data, small = (labels,), (small_labels,)
        yield (
            entry.name,
            lambda cls=cls, s=settings, d=data: cls(**s).fit(*d),
            lambda cls=cls, s=settings, d=small: cls(**s).fit(*d),
        )


def own_target_fits(only: set[str] | None):
    from crowdbayes.models.communities.estimator import CommunityPreferences
    from crowdbayes.models.labels import CrowdClassifier

    if not only or "crowd-classifier" in only:
        labels, features = classifier_data()
        yield (
            "crowd-classifier-1000x100",
            lambda: CrowdClassifier().fit(labels, features),
            lambda: None,
        )
    if not only or "dpm-gp" in only:
        for n_workers in (10, 150):
            pairs = preference_data(n_workers=n_workers)
            fit = lambda pairs=pairs: CommunityPreferences(random_state=0).fit(pairs)  # noqa: E731
            yield f"dpm-gp-150-by-{n_workers}", fit, lambda: None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="model names to time (default: all)")
    parser.add_argument("--output", default=str(RESULTS / "defaults_time.md"))
    args = parser.parse_args()
    only = set(args.only) if args.only else None
    rows = ["| model | data | seconds | bound (s) | verdict |", "|---|---|---:|---:|---|"]
    over = []
    for fits in (catalogue_fits(only), own_target_fits(only)):
        for name, fit, warm_up in fits:
            try:
                timed(warm_up)
                seconds = timed(fit)
            except Exception as error:  # noqa: BLE001 — reported, the other models still run
                rows.append(f"| {name} | | error: {type(error).__name__}: {error} | | |")
                print(name, "error", error, flush=True)
                continue
            bound = OWN_TARGETS.get(name, None if name in UNBOUNDED else BOUND_S)
            verdict = "timed" if bound is None else ("ok" if seconds < bound else "OVER")
            if verdict == "OVER":
                over.append(name)
            data = "own target" if name in OWN_TARGETS else "10,000 judgments"
            bound_text = "—" if bound is None else f"{bound:g}"
            rows.append(f"| {name} | {data} | {seconds:.2f} | {bound_text} | {verdict} |")
            print(f"{name}: {seconds:.2f} s ({verdict}); load {load_average()}", flush=True)
    lines = [
        f"Load average at the end: {load_average()}.",
        "",
        *rows,
        "",
        "Over their bound: " + (", ".join(over) if over else "none") + ".",
    ]
    write_markdown_report(args.output, "Time at defaults (issue 40 point 4)", lines, echo=True)


if __name__ == "__main__":
    main()
