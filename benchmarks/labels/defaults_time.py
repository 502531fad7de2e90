"""Time at defaults (issue 40 point 4): every model of ``crowdbayes.list_models()`` fitted
with its default settings on 10,000 simulated judgments, and the two models with their own
targets.

Data:

- labels: ``simulate_labels(2000, 50, 5, random_state=0)`` (2,000 tasks × 5 labels = 10,000
  binary labels); ``crowd-classifier`` gets 20 features per task (the true class shifts the
  mean of the first 5);
- values: ``simulate_values(2000, 50, 5, random_state=0)`` (10,000 answers);
- every other family (rankings, comparisons, the leaderboard, links): the data of
  ``benchmarks/scale/scaling.py`` at 10,000 judgments (``fit_arguments(name, 10000)``, imported
  from there: 10,000 top-1 choices, comparisons or links; the leaderboard gets Bradley–Terry's
  comparisons, relabelled to 20 players: ``leaderboard_battles``) with
  ``model_parameters(name)`` (a Gamma(2, 1) prior for ``PlackettLuceMM``)
  except the torch models' epochs, left at their default (20);
- CrowdClassifier, own target: 1,000 tasks × 5 labels and 100 features (< 3 s);
- dpm-gp (``CommunityPreferences``), own target: 150 comparisons of 12 items by 10 workers,
  and by 150 workers (one comparison each: the sampler's cost grows with the workers) (< 10 s);
  the first of them pays the first-call costs (imports), as a command-line run does.

Each fit runs once in this process, after one small warm-up fit of the same model (imports and
first-call costs are not timed), with the catalogue's command-line settings
(``ModelEntry.cli_defaults``); where those differ from the estimator's defaults (pl-vi, scdc,
bayes-scdc) the estimator's defaults are timed too. dpm-gp on 10,000 comparisons runs in a
fresh process with a time limit (``--slow-timeout``; ``scaling.fit_child``: a daemonic
process, so its chains run one after another there). Wall and CPU seconds are reported (CPU of
this process and of the chain processes it forked and joined). The bound is 2 s, except for the
samplers (hierarchical, pl-gibbs, dpm-gp) and the torch models (scdc, bayes-scdc), which are
timed but not bounded. The verdict compares the wall time with the bound, or the CPU time when
the 1-minute load average (the larger of before and after the fit) is above 2: the machine is
shared, and then the wall clock measures the other work too.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/labels/defaults_time.py [--only NAME ...]
        [--slow-timeout 120] [--output benchmarks/labels/results/defaults_time.md]

``--only`` takes command-line names (``pl-vi``) or class names (``PlackettLuceVI``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scale"))  # scaling

from scaling import _cpu_seconds, fit_arguments, fit_child, model_parameters

from _common import load_average, results_dir, run_isolated, write_markdown_report

RESULTS = results_dir(__file__)
BOUND_S = 2.0
#: above this 1-minute load average the verdict uses the CPU time
BUSY_LOAD = 2.0
UNBOUNDED = {"hierarchical", "pl-gibbs", "dpm-gp", "scdc", "bayes-scdc"}
#: the models of the other families, by command (their data come from ``scaling``)
OTHER_COMMANDS = ("rank", "prefs", "leaderboard", "cluster")
DATA_TEXT = {
    "rank": "10,000 top-1 choices",
    "prefs": "10,000 comparisons",
    "leaderboard": "10,000 comparisons",
    "cluster": "10,000 links",
}
TORCH = {"SCDC", "BayesSCDC"}
#: fitted in a fresh process with a time limit (minutes at 10,000 comparisons)
ISOLATED = {"CommunityPreferences"}
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


def timed(fit) -> tuple[float, float]:
    """Wall and CPU seconds of ``fit()`` (CPU: this process and its joined children)."""
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit()
    return time.perf_counter() - start, _cpu_seconds() - cpu_start


def wanted(entry, only: set[str] | None) -> bool:
    return not only or entry.name in only or entry.class_name in only


def catalogue_fits(only: set[str] | None):
    """(name, data, fit of 10,000 judgments, warm-up fit) for every labels/values model."""
    from crowdbayes import Labels
    from crowdbayes._catalogue import model_entries
    from crowdbayes.datasets import simulate_values

    labels, features, gold = label_data(2000, 20)
    small_labels, small_features, small_gold = label_data(60, 20, seed=1)
    values = simulate_values(2000, 50, 5, random_state=0).values
    small_values = simulate_values(60, 20, 3, random_state=1).values
    for entry in model_entries("labels") + model_entries("values"):
        if not wanted(entry, only):
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
            "10,000 values" if entry.command == "values" else "10,000 labels",
            lambda cls=cls, s=settings, d=data: cls(**s).fit(*d),
            lambda cls=cls, s=settings, d=small: cls(**s).fit(*d),
        )


def _single_thread_torch() -> None:
    import torch

    torch.set_num_threads(1)


def other_fits(only: set[str] | None):
    """(name, data, fit of 10,000 judgments, warm-up fit) for every model of the other
    families, on ``scaling``'s data: the command line's settings, and the estimator's defaults
    where those differ."""
    from crowdbayes._catalogue import model_entries

    for entry in [e for command in OTHER_COMMANDS for e in model_entries(command)]:
        if not wanted(entry, only) or entry.class_name in ISOLATED:
            continue
        cls, name = entry.load_class(), entry.class_name
        if name == "Leaderboard":
            data, small = leaderboard_battles(10_000), leaderboard_battles(200)
        else:
            data, small = fit_arguments(name, 10_000), fit_arguments(name, 200)
        base = {} if name in TORCH else model_parameters(name)
        variants = [("", {**base, **entry.cli_defaults})]
        if entry.cli_defaults:
            variants = [(" [CLI defaults]", variants[0][1]), (" [estimator defaults]", base)]
        for suffix, settings in variants:
            if name in TORCH:
                _single_thread_torch()
            yield (
                f"{entry.name} ({name}){suffix}",
                "2,000 points, 10,000 links" if name in TORCH else DATA_TEXT[entry.command],
                lambda cls=cls, s=settings, d=data: cls(**s).fit(*d),
                lambda cls=cls, s=settings, d=small: cls(**s).fit(*d),
            )


def leaderboard_battles(n: int, n_models: int = 20) -> tuple:
    """``n`` battles among ``n_models`` models, the leaderboard's shape (many battles, few
    players; on ``scaling``'s 1,000 items some never lose and its default maximum-likelihood
    scores do not exist): Bradley–Terry's comparisons of ``scaling`` with item ``k`` played by
    model ``k mod n_models``, self-battles dropped."""
    table = fit_arguments("BradleyTerry", n + n // 5)[0]

    def player(item: pd.Series) -> pd.Series:  # item "i<k>" → player "m<k mod n_models>"
        return "m" + (item.str[1:].astype(int) % n_models).astype(str)

    table = table.assign(**{c: player(table[c]) for c in ("left", "right", "label")})
    return (table[table["left"] != table["right"]].head(n).reset_index(drop=True),)


def isolated_fits(only: set[str] | None, timeout: float):
    """(name, data, outcome): the models of :data:`ISOLATED`, each in a fresh process with a
    time limit (``scaling.fit_child``, its data and parameters)."""
    from crowdbayes._catalogue import model_entries

    for entry in [e for command in OTHER_COMMANDS for e in model_entries(command)]:
        if wanted(entry, only) and entry.class_name in ISOLATED:
            name = entry.class_name
            outcome = run_isolated(fit_child, (name, 10_000), timeout=timeout)
            yield f"{entry.name} ({name})", DATA_TEXT[entry.command], outcome


def own_target_fits(only: set[str] | None):
    from crowdbayes.models.communities.estimator import CommunityPreferences
    from crowdbayes.models.labels import CrowdClassifier

    if not only or "crowd-classifier" in only:
        labels, features = classifier_data()
        yield (
            "crowd-classifier-1000x100",
            "1,000 tasks × 100 features",
            lambda: CrowdClassifier().fit(labels, features),
            lambda: None,
        )
    if not only or "dpm-gp" in only:
        for n_workers in (10, 150):
            pairs = preference_data(n_workers=n_workers)
            fit = lambda pairs=pairs: CommunityPreferences(random_state=0).fit(pairs)  # noqa: E731
            data = f"150 comparisons, {n_workers} workers"
            yield f"dpm-gp-150-by-{n_workers}", data, fit, lambda: None


def bound_of(name: str) -> float | None:
    """The row's bound in seconds; None: timed, not bounded."""
    if name in OWN_TARGETS:
        return OWN_TARGETS[name]
    command_name = name.split(" ")[0]
    return None if command_name in UNBOUNDED else BOUND_S


def verdict(wall: float, cpu: float, bound: float | None, load: float) -> str:
    """ok/OVER against the bound: on the CPU time when ``load`` > :data:`BUSY_LOAD`."""
    if bound is None:
        return "timed"
    basis, seconds = ("CPU", cpu) if load > BUSY_LOAD else ("wall", wall)
    return f"{'ok' if seconds < bound else 'OVER'} ({basis})"


def row(name: str, data: str, wall: float, cpu: float, load: float) -> tuple[str, str]:
    bound = bound_of(name)
    outcome = verdict(wall, cpu, bound, load)
    bound_text = "—" if bound is None else f"{bound:g}"
    text = f"| {name} | {data} | {wall:.2f} | {cpu:.2f} | {load:.1f} | {bound_text} | {outcome} |"
    return text, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="model names to time (default: all)")
    parser.add_argument(
        "--slow-timeout", type=float, default=120.0, help="time limit of dpm-gp's 10,000 fit (s)"
    )
    parser.add_argument("--output", default=str(RESULTS / "defaults_time.md"))
    args = parser.parse_args()
    only = set(args.only) if args.only else None
    rows = [
        "| model | data | wall (s) | CPU (s) | load | bound (s) | verdict |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    over = []

    def record(name: str, data: str, wall: float, cpu: float, load: float) -> None:
        text, outcome = row(name, data, wall, cpu, load)
        rows.append(text)
        if outcome.startswith("OVER"):
            over.append(name)
        print(
            f"{name}: {wall:.2f} s, CPU {cpu:.2f} s ({outcome}); load {load_average()}", flush=True
        )

    for fits in (catalogue_fits(only), other_fits(only), own_target_fits(only)):
        for name, data, fit, warm_up in fits:
            try:
                timed(warm_up)
                load = os.getloadavg()[0]
                wall, cpu = timed(fit)
            except Exception as error:  # noqa: BLE001 — reported, the other models still run
                rows.append(f"| {name} | {data} | error: {type(error).__name__}: {error} | | | | |")
                print(name, "error", error, flush=True)
                continue
            record(name, data, wall, cpu, max(load, os.getloadavg()[0]))
    for name, data, (status, payload) in isolated_fits(only, args.slow_timeout):
        if status == "ok":
            record(name, data, *payload, os.getloadavg()[0])
        else:
            rows.append(f"| {name} | {data} | {status}: {payload} | | | — | timed |")
            print(name, status, payload, flush=True)
    lines = [
        f"Load average at the end: {load_average()}. Verdict: against the bound on the wall "
        f"time, or on the CPU time (marked) when the 1-minute load average was above "
        f"{BUSY_LOAD:g}.",
        "",
        *rows,
        "",
        "Over their bound: " + (", ".join(over) if over else "none") + ".",
    ]
    write_markdown_report(args.output, "Time at defaults (issue 40 point 4)", lines, echo=True)


if __name__ == "__main__":
    main()
