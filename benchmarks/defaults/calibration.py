"""Calibration of the Bayesian label defaults (issue 40): claimed against actual accuracy, with
and without the exponent learnt from held-out labels (``crowdbayes.models.labels._calibration``),
per simulated scenario of ``_label_scenarios.py`` and per shared set with gold.

Gap = mean posterior probability of the reported class − accuracy, on the gold tasks (every
task of a simulated set); > 0 is over-confidence. Target: |gap| ≤ 0.03 for the hierarchical
default on both task-difficulty scenarios (draws pooled). Each model is fitted twice with the
same seed, ``calibrate=False`` and ``calibrate=True`` (the same chains, so the answers must
agree: the accuracy columns are checked equal), and BayesianDawidSkene likewise. Nothing is
tuned on these sets: the exponent is chosen per fit from the labels alone (the smaller of the
held-out exponent and the task-difficulty model's), and the method's only constants are the
ranges it searches — exponents from 0.05, log easiness in [−5, 3], spreads of log easiness in
[0, 3] — none of which binds here.

Usage (from the repository root)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 CROWDBAYES_DATA=../shared/data \\
        .venv/bin/python benchmarks/defaults/calibration.py [--seeds 2] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # _common
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from _label_scenarios import LABEL_SCENARIOS, simulate_label_scenario  # noqa: E402
from _labels import load_shared_set  # noqa: E402

from _common import load_average, resolve_data_root, results_dir, write_markdown_report  # noqa: E402
from crowdbayes.models.labels import BayesianDawidSkene, HierarchicalAnnotation  # noqa: E402

MODELS = {
    "hierarchical": lambda calibrate: HierarchicalAnnotation(random_state=0, calibrate=calibrate),
    "bayes-ds": lambda calibrate: BayesianDawidSkene(calibrate=calibrate),
}


def evaluate(draws) -> dict:
    """Per model and setting: claimed confidence and correctness per gold task (draws pooled),
    the exponents and the mean fit time."""
    out = {}
    for name, make in MODELS.items():
        for calibrate in (False, True):
            confidence, correct, exponents, seconds = [], [], [], []
            for labels, truth in draws:
                start = time.perf_counter()
                model = make(calibrate).fit(labels)
                seconds.append(time.perf_counter() - start)
                confidence.append(model.probas_.max(axis=1).reindex(truth.index).to_numpy())
                correct.append((model.labels_.reindex(truth.index) == truth).to_numpy())
                exponents.append(model.calibration_exponent_)
            out[name, calibrate] = {
                "confidence": np.concatenate(confidence),
                "correct": np.concatenate(correct).astype(float),
                "exponents": exponents,
                "seconds": float(np.mean(seconds)),
            }
        before, after = out[name, False]["correct"], out[name, True]["correct"]
        if not np.array_equal(before, after):
            raise AssertionError(f"{name}: calibration changed an answer")
    return out


def calibration_cost(repeats: int = 7) -> list[str]:
    """The time of the calibration step alone (the expected counts, the held-out pieces and
    the search) after a hierarchical fit on 10,000 labels (``defaults_time.py``'s data): the
    whole extra cost of ``calibrate=True``, timed apart from the sweeps whose time a loaded
    machine makes too noisy to difference."""
    from crowdbayes import Labels
    from crowdbayes.datasets import simulate_labels

    labels = Labels(simulate_labels(2000, 50, 5, random_state=0).labels)
    model = HierarchicalAnnotation(random_state=0, calibrate=False).fit(labels)
    probas = model.probas_.to_numpy().T
    alpha = model.prior_mean_.to_numpy() * model.prior_scale_.to_numpy()[:, None]
    model.calibrate = True
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        exponent = model._calibration(labels, probas, alpha)
        times.append(time.perf_counter() - start)
    return [
        f"Calibration step after the hierarchical fit on 10,000 labels "
        f"(`simulate_labels(2000, 50, 5, random_state=0)`): min {min(times):.3f} s, median "
        f"{np.median(times):.3f} s of {repeats} (exponent {exponent:.3f}); the fit itself "
        f"took {model_seconds(labels):.2f} s here."
    ]


def model_seconds(labels) -> float:
    start = time.perf_counter()
    HierarchicalAnnotation(random_state=0, calibrate=False).fit(labels)
    return time.perf_counter() - start


def gap(result: dict) -> float:
    return float(result["confidence"].mean() - result["correct"].mean())


def table_rows(name: str, source: str, out: dict) -> str:
    cells = [name, source]
    for model in MODELS:
        raw, cal = out[model, False], out[model, True]
        exponents = "/".join(f"{a:.2f}" for a in cal["exponents"])
        cells += [
            f"{raw['correct'].mean():.3f}",
            f"{gap(raw):+.3f}",
            f"{gap(cal):+.3f}",
            exponents,
        ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=2, help="draws per simulated scenario")
    parser.add_argument("--quick", action="store_true", help="the difficulty scenarios only")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    started = time.perf_counter()
    scenarios = [s for s in LABEL_SCENARIOS if not args.quick or "difficulty" in s.name]
    todo = [
        (s.name, "simulated", [(d.labels, d.truth) for d in map(
            lambda seed, s=s: simulate_label_scenario(s, seed), range(args.seeds))])
        for s in scenarios
    ]  # fmt: skip
    if not args.quick:
        root = resolve_data_root()
        shared = sorted(p.name for p in (root / "labels").iterdir() if (p / "gold.csv").is_file())
        todo += [(name, "shared", [load_shared_set(name)]) for name in shared]
    header = ["set", "source"]
    for model in MODELS:
        header += [
            f"{model} accuracy",
            "gap before",
            "gap after",
            "exponent(s)",
        ]
    lines = [
        f"Gap = mean claimed probability of the answer − accuracy on the gold tasks; {args.seeds} "
        "draw(s) per simulated scenario, pooled. 'before': `calibrate=False`; 'after': "
        "`calibrate=True` (the exponent learnt from the labels, one per draw). Accuracy "
        "is the same with and without (checked).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + " --- |" * len(header),
    ]
    target = {}
    for name, source, draws in todo:
        out = evaluate(draws)
        if "difficulty" in name:
            target[name] = gap(out["hierarchical", True])
        lines.append(table_rows(name, source, out))
        print(lines[-1], flush=True)
    worst = max(abs(g) for g in target.values())
    lines += ["", *calibration_cost()]
    lines += [
        "",
        f"Hierarchical default, task-difficulty scenarios after calibration: worst |gap| "
        f"{worst:.3f}; target ≤ 0.03: **{'met' if worst <= 0.03 else 'not met'}** ("
        + ", ".join(f"{n}: {g:+.3f}" for n, g in target.items())
        + ").",
    ]
    details = [
        f"- total run time {time.perf_counter() - started:.0f} s; load average at the end "
        f"{load_average()}"
    ]
    name = "calibration_quick.md" if args.quick else "calibration.md"
    output = args.output or results_dir(__file__) / name
    write_markdown_report(output, "Calibration of the Bayesian label defaults", lines, details)


if __name__ == "__main__":
    main()
