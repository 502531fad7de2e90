"""HierarchicalAnnotation: the sampler of this tree against the one of an older commit, in one run.

The older sampler is run from its own source (``git archive <--old-rev> src``, default
``fd1202a``: coordinate-wise slice sampling of each hyperparameter row through scipy's
logsumexp, chains one after another) and the new one from this working tree; every fit runs in
a fresh subprocess with ``PYTHONPATH`` pointing at the source it measures, and the clock covers
``fit`` only (data loaded and encoded before it). Sections (``--sections``, default all):

- ``rte``: default settings (4 chains × (200 + 300) sweeps) on RTE, seeds 0 and 1: wall time,
  accuracy and log-loss on the gold tasks, largest split-R-hat of the traced quantities.
- ``mc``: the posterior against Monte-Carlo error, on RTE and dog (both fits of each seed
  above; the chains' own running means are captured, so each side has 8 independent chain
  means per quantity): for every task probability and every worker confusion mean,
  ``z = (new − old) / sqrt(se_new² + se_old²)`` with ``se = sd(chain means) / sqrt(8)``;
  reported: the share of ``|z| > 3`` and the share expected by chance (Student t, 7 degrees of
  freedom per side: se estimated from 8 chains), and the largest ``|z|``.
- ``sim10``: ``simulate_labels(2000, 50, 5, n_classes=10, random_state=0)`` (10,000 labels,
  10 classes): the new sampler with default settings; the old one's marginal cost per sweep
  (one chain: fit of 5 + 45 sweeps minus fit of 5 + 20, over 25) times the 2,000 sweeps of the
  default settings, as its estimated time.
- ``big``: ``simulate_labels(100_000, 1_000, 10, n_classes=2, random_state=0)`` (1,000,000
  labels), the same way.
- ``parallel``: the new sampler with ``n_jobs=1`` and ``n_jobs=2`` on RTE and on the 10-class
  set, `--repeats` fits of each alternating, each fit in a fresh process: median speed-up, and
  a check that the results are identical.
- ``gold``: every label set with gold, default settings, seed 0, old and new: accuracy and
  log-loss on the gold tasks and their differences.

Every fit's raw numbers (wall and CPU time of the fit's process and its chain processes, R-hat,
accuracy, log-loss) also go, one JSON line each, to ``<output stem>_fits.jsonl`` beside the
report: on a loaded machine the CPU times are the steadier measure.

Run from the repository root, alone on the machine (timings)::

    CROWDBAYES_DATA=../shared/data nice -n 19 .venv/bin/python \\
        benchmarks/labels/hierarchical_speed.py
        [--sections rte mc sim10 big parallel gold] [--old-rev fd1202a] [--timeout 900]
        [--output benchmarks/labels/results/hierarchical_speed.md]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np
from scipy import stats

from _common import REPO, load_average, resolve_data_root, results_dir, write_markdown_report

RESULTS = results_dir(__file__)

SECTIONS = ("rte", "mc", "sim10", "big", "parallel", "gold")
TIMES = ("seconds", "cpu_seconds")
SIM10 = {"n_tasks": 2000, "n_workers": 50, "labels_per_task": 5, "n_classes": 10}
BIG = {"n_tasks": 100_000, "n_workers": 1_000, "labels_per_task": 10, "n_classes": 2}
DEFAULT_SWEEPS = 4 * (200 + 300)
SHORT = {"n_chains": 1, "n_warmup": 5, "n_samples": 20}
LONG = {"n_chains": 1, "n_warmup": 5, "n_samples": 45}
# every fit's raw numbers (CPU time too), one JSON line each, beside the report
FITS = RESULTS / "hierarchical_speed_fits.jsonl"


# ------------------------------------------------------------------------------ the worker
def worker(spec: dict) -> dict:
    """One fit, in this process (run with PYTHONPATH at the source being measured)."""
    import crowdbayes
    from crowdbayes import HierarchicalAnnotation, Labels
    from crowdbayes.metrics import accuracy, log_loss

    if spec.get("no_cut"):
        # the sampler alone, without the cut of single-label tasks (issue 16) that came after
        # the rewrite: every task counts towards θ, π and α, as in the old sampler
        from crowdbayes.models.labels import _gibbs

        _gibbs.counted_tasks = lambda labels, settings: None

    gold = None
    if "dataset" in spec:
        from crowdbayes.datasets import load_labels

        data = load_labels(spec["dataset"])
        labels, gold = Labels(data.labels), data.gold
        table = Labels(data.labels).to_frame() if hasattr(Labels, "to_frame") else data.labels
        single_worker_tasks = bool((table.groupby("task")["worker"].nunique() < 2).any())
    else:
        from crowdbayes.datasets import simulate_labels

        labels = simulate_labels(**spec["simulate"], random_state=0).to_labels()
        single_worker_tasks = False
    captured = []
    if spec.get("capture"):
        original = HierarchicalAnnotation._summarise

        def capture(self, labels_, chains):
            captured.extend(
                {"probas": c.probas.mean.tolist(), "confusion": c.confusion.mean.tolist()}
                for c in chains
            )
            return original(self, labels_, chains)

        HierarchicalAnnotation._summarise = capture
    model = HierarchicalAnnotation(**spec["params"])
    cpu_start = _cpu_seconds()
    start = time.perf_counter()
    model.fit(labels)
    seconds = time.perf_counter() - start
    out = {
        "seconds": seconds,
        "cpu_seconds": _cpu_seconds() - cpu_start,
        "source": str(Path(crowdbayes.__file__).parent),
        "max_split_rhat": float(model.diagnostics_["rhat"].max()),
        "max_rhat": float(model.max_rhat_),
        "has_single_worker_tasks": single_worker_tasks,
        "probas_hash": float(np.abs(model.probas_.to_numpy()).sum()),
        "chains": captured,
    }
    if gold is not None:
        out["accuracy"] = float(accuracy(gold, model.labels_))
        out["log_loss"] = float(log_loss(gold, model.probas_))
    side = "new" if Path(out["source"]).resolve().is_relative_to(REPO) else "old"
    raw = {"side": side, **{k: v for k, v in spec.items() if k != "capture"}}
    raw.update({k: v for k, v in out.items() if k not in ("chains", "source")})
    with Path(os.environ.get("HIERARCHICAL_SPEED_FITS", FITS)).open("a", encoding="utf-8") as fits:
        fits.write(json.dumps(raw) + "\n")
    return out


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (the forked chain processes)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


# ------------------------------------------------------------------------------ the driver
class Runner:
    def __init__(self, old_src: Path, timeout: float) -> None:
        self.sources = {"old": old_src, "new": REPO / "src"}
        self.timeout = timeout

    def fit(self, side: str, spec: dict) -> dict:
        env = dict(os.environ, PYTHONPATH=str(self.sources[side]))
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = "1"
        command = [sys.executable, __file__, "--worker", json.dumps(spec)]
        try:
            done = subprocess.run(
                command, env=env, capture_output=True, text=True, timeout=self.timeout, check=True
            )
        except subprocess.TimeoutExpired:
            return {"seconds": float("nan"), "timeout": True}
        except subprocess.CalledProcessError as err:
            raise RuntimeError(f"{side} {spec} failed:\n{err.stderr[-3000:]}") from err
        result = json.loads(done.stdout.strip().splitlines()[-1])
        expected = str(self.sources[side].resolve() / "crowdbayes")
        if str(Path(result["source"]).resolve()) != expected:
            raise RuntimeError(f"{side} imported {result['source']}, not {expected}")
        print(f"  {side} {spec}: {result['seconds']:.2f} s", file=sys.stderr, flush=True)
        return result


def extract_old(rev: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", rev, "src"], cwd=REPO, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def mc_comparison(old: list[dict], new: list[dict]) -> dict:
    """z-scores of the difference of pooled means, se from the spread of independent chains."""
    rows = {}
    for key in ("probas", "confusion"):
        a = np.array([np.ravel(c[key]) for fit in old for c in fit["chains"]])
        b = np.array([np.ravel(c[key]) for fit in new for c in fit["chains"]])
        se = np.sqrt(a.var(axis=0, ddof=1) / len(a) + b.var(axis=0, ddof=1) / len(b))
        diff = b.mean(axis=0) - a.mean(axis=0)
        usable = se > 1e-9  # quantities that never move (e.g. probabilities at 0 or 1)
        z = np.abs(diff[usable] / se[usable])
        df = min(len(a), len(b)) - 1
        rows[key] = {
            "quantities": int(diff.size),
            "compared": int(usable.sum()),
            "chains": (len(a), len(b)),
            "share_beyond_3se": float((z > 3).mean()),
            "expected_by_chance": float(2 * stats.t.sf(3, df)),
            "max_abs_z": float(z.max()),
            "max_abs_diff": float(np.abs(diff).max()),
        }
    return rows


def recorded_fit(path: Path, dataset: str) -> dict:
    """The ``cb_ha`` row of a ``labels_accuracy.py`` CSV for ``dataset``."""
    import pandas as pd

    table = pd.read_csv(path)
    row = table[(table["dataset"] == dataset) & (table["model"] == "cb_ha")].iloc[0]
    return {"accuracy": row["accuracy"], "log_loss": row["log_loss"], "seconds": row["seconds"]}


def marginal_per_sweep(runner: Runner, side: str, data: dict) -> float:
    short = runner.fit(side, {**data, "params": {**SHORT, "random_state": 0}})
    long = runner.fit(side, {**data, "params": {**LONG, "random_state": 0}})
    return (long["seconds"] - short["seconds"]) / (LONG["n_samples"] - SHORT["n_samples"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--old-rev", default="fd1202a")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--repeats", type=int, default=5, help="fits per n_jobs (parallel)")
    parser.add_argument("--mc-seeds", type=int, nargs="+", default=[0, 1], help="seeds (mc)")
    parser.add_argument("--output", type=Path, default=RESULTS / "hierarchical_speed.md")
    parser.add_argument(
        "--old-csv",
        type=Path,
        help="gold section: take the old sampler's results from a labels_accuracy.py CSV",
    )
    args = parser.parse_args()
    os.environ.setdefault("CROWDBAYES_DATA", str(resolve_data_root()))
    fits = args.output.with_name(f"{args.output.stem}_fits.jsonl")
    fits.unlink(missing_ok=True)
    os.environ["HIERARCHICAL_SPEED_FITS"] = str(fits)
    details = [f"- old sampler: `git archive {args.old_rev} src`; new: this working tree"]
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        runner = Runner(extract_old(args.old_rev, Path(tmp)), args.timeout)
        fits: dict[tuple, dict] = {}

        def default_fit(side, dataset, seed):
            key = (side, dataset, seed)
            if key not in fits:
                spec = {"dataset": dataset, "params": {"random_state": seed}, "capture": True}
                fits[key] = runner.fit(side, spec)
            return fits[key]

        if "rte" in args.sections:
            lines += ["## RTE, default settings (4 chains × 500 sweeps)", ""]
            lines += ["| seed | old (s) | new (s) | old / new | CPU old / new (s) | "]
            lines[-1] += (
                "accuracy old / new | log-loss old / new | max split-R-hat old / new | load |"
            )
            lines += ["|" + " --- |" * 9]
            for seed in (0, 1):
                old, new = default_fit("old", "rte", seed), default_fit("new", "rte", seed)
                lines.append(
                    f"| {seed} | {old['seconds']:.2f} | {new['seconds']:.2f} | "
                    f"{old['seconds'] / new['seconds']:.1f} | "
                    f"{old['cpu_seconds']:.2f} / {new['cpu_seconds']:.2f} | "
                    f"{old['accuracy']:.4f} / {new['accuracy']:.4f} | "
                    f"{old['log_loss']:.4f} / {new['log_loss']:.4f} | "
                    f"{old['max_split_rhat']:.4f} / {new['max_split_rhat']:.4f} | "
                    f"{load_average()} |"
                )
            lines.append("")
        if "mc" in args.sections:
            seeds = ", ".join(map(str, args.mc_seeds))
            lines += [f"## Posterior against Monte-Carlo error (seeds {seeds}, 4 chains each)", ""]
            lines += ["| data | quantity | compared | chains old/new | share |z|>3 | "]
            lines[-1] += "expected by chance | max |z| | max |diff| | max split-R-hat old / new |"
            lines += ["|" + " --- |" * 9]
            for dataset in ("rte", "dog"):
                old = [default_fit("old", dataset, s) for s in args.mc_seeds]
                new = [default_fit("new", dataset, s) for s in args.mc_seeds]
                rhat = (
                    f"{max(f['max_split_rhat'] for f in old):.4f} / "
                    f"{max(f['max_split_rhat'] for f in new):.4f}"
                )
                for key, row in mc_comparison(old, new).items():
                    lines.append(
                        f"| {dataset} | {key} | {row['compared']} of {row['quantities']} | "
                        f"{row['chains'][0]}/{row['chains'][1]} | {row['share_beyond_3se']:.4f} | "
                        f"{row['expected_by_chance']:.4f} | {row['max_abs_z']:.2f} | "
                        f"{row['max_abs_diff']:.4f} | {rhat} |"
                    )
                times = [f"{f['seconds']:.1f}" for f in old + new]
                lines.append(f"| {dataset} | fit times (s), old then new | {times} |||||||")
            lines.append("")
        for name, data, target in (("sim10", SIM10, 5.0), ("big", BIG, 60.0)):
            if name not in args.sections:
                continue
            spec = {"simulate": data}
            new = runner.fit("new", {**spec, "params": {"random_state": 0}})
            per_sweep = marginal_per_sweep(runner, "old", spec)
            estimate = per_sweep * DEFAULT_SWEEPS
            lines += [
                f"## {name}: simulate_labels({data}), default settings",
                "",
                f"- new: {new['seconds']:.2f} s (target < {target:g} s: "
                f"{'PASS' if new['seconds'] < target else 'FAIL'}; CPU {new['cpu_seconds']:.2f} s "
                f"in all processes); max split-R-hat "
                f"{new['max_split_rhat']:.4f}; load {load_average()}",
                f"- old: {per_sweep:.4f} s per sweep (marginal, one chain) × {DEFAULT_SWEEPS} "
                f"sweeps = {estimate:.1f} s estimated; old / new = {estimate / new['seconds']:.0f}",
                "",
            ]
        if "parallel" in args.sections:
            lines += ["## Parallel chains (new sampler, default settings but n_jobs)", ""]
            lines += [
                "Wall time, and CPU time of the fit's process and its chain processes "
                "(the work to share: on two otherwise idle cores n_jobs=2 would take about "
                "half its CPU time, the 4 chains being alike).",
                "",
                f"Medians of {args.repeats} fits each, alternating n_jobs=1 and n_jobs=2, every "
                "fit in a fresh process; `identical`: the same posterior in every fit.",
                "",
                "| data | n_jobs=1 wall (s) | CPU (s) | n_jobs=2 wall (s) | CPU (s) | "
                "wall speed-up | CPU(1) / (CPU(2) / 2) | identical | wall range 1 / 2 (s) | load |",
                "|" + " --- |" * 10,
            ]
            for label, spec in (("rte", {"dataset": "rte"}), ("sim10", {"simulate": SIM10})):
                # alternate the two settings, each fit in a fresh process; medians of the repeats
                fits = {1: [], 2: []}
                for _ in range(args.repeats):
                    for n_jobs in (1, 2):
                        params = {"random_state": 0, "n_jobs": n_jobs}
                        fits[n_jobs].append(runner.fit("new", {**spec, "params": params}))
                one, two = (
                    {key: float(np.median([f[key] for f in fits[n]])) for key in TIMES}
                    for n in (1, 2)
                )
                same = len({f["probas_hash"] for f in fits[1] + fits[2]}) == 1
                spans = ([f["seconds"] for f in fits[n]] for n in (1, 2))
                walls = " / ".join(f"{min(s):.2f}–{max(s):.2f}" for s in spans)
                lines.append(
                    f"| {label} | {one['seconds']:.2f} | {one['cpu_seconds']:.2f} | "
                    f"{two['seconds']:.2f} | {two['cpu_seconds']:.2f} | "
                    f"{one['seconds'] / two['seconds']:.2f} | "
                    f"{one['cpu_seconds'] / (two['cpu_seconds'] / 2):.2f} | {same} | {walls} | "
                    f"{load_average()} |"
                )
            lines.append("")
        if "gold" in args.sections:
            lines += ["## Label sets with gold, default settings, seed 0", ""]
            if args.old_csv:
                lines += [
                    f"Old side read from `{args.old_csv}` (model `cb_ha`, the old sampler with "
                    "seed 0; rerun it without `--old-csv` to refit it).",
                    "",
                ]
            lines += [
                "`new, no cut`: the new sampler with every task counted towards θ, π and α, as "
                "in the old sampler (fitted only on the sets with tasks that one worker "
                "labelled; elsewhere the cut of issue 16 changes nothing); `new`: the default, "
                "with the cut.",
                "",
                "| set | accuracy old | new, no cut | new | log-loss old | new, no cut | new | "
                "old (s) | new (s) |",
                "|" + " --- |" * 9,
            ]
            root = Path(os.environ["CROWDBAYES_DATA"]) / "labels"
            for folder in sorted(p for p in root.iterdir() if (p / "gold.csv").is_file()):
                if args.old_csv:
                    old = recorded_fit(args.old_csv, folder.name)
                else:
                    old = default_fit("old", folder.name, 0)
                new = default_fit("new", folder.name, 0)
                uncut = new
                if new.get("has_single_worker_tasks"):
                    spec = {"dataset": folder.name, "params": {"random_state": 0}}
                    uncut = runner.fit("new", {**spec, "no_cut": True})
                if any(f.get("timeout") for f in (old, new, uncut)):
                    lines.append(f"| {folder.name} | timeout ||||||||")
                    continue
                lines.append(
                    f"| {folder.name} | {old['accuracy']:.4f} | {uncut['accuracy']:.4f} | "
                    f"{new['accuracy']:.4f} | {old['log_loss']:.4f} | "
                    f"{uncut['log_loss']:.4f} | {new['log_loss']:.4f} | "
                    f"{old['seconds']:.1f} | {new['seconds']:.1f} |"
                )
            lines.append("")
    lines.append(f"Load average at the end: {load_average()}")
    title = "HierarchicalAnnotation: new sampler against the old one"
    write_markdown_report(args.output, title, lines, details, echo=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(worker(json.loads(sys.argv[2]))))
    else:
        main()
