"""How fast the command line answers: ``--help`` and a small fit, against importing numpy and
pandas (issue 39: "a CLI that answers in a blink").

Each pair of commands runs alternately (A, B, A, B, ...) in fresh processes, after one warm-up
of each, and every pair's ratio A/B is taken: the median of the ratios holds when the
machine's speed drifts between runs. The targets:

- ``crowdbayes --help`` and ``crowdbayes labels fit --help``: at most 1.5 × ``python -c
  "import numpy"`` (building the parser imports neither numpy nor pandas);
- ``crowdbayes labels fit LABELS --model mv -o OUT`` on 150 labels of the bundled RTE set, end
  to end: at most 1.5 × ``python -c "import pandas"``.

Usage (from the repository root; on an idle machine)::

    .venv/bin/python benchmarks/cli/startup.py [--runs 21]
        [--output benchmarks/cli/results/startup.md]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import REPO, results_dir, write_markdown_report

#: the largest ratio each comparison may have (issue 39)
TARGET = 1.5


def wall_time(command: list[str]) -> float:
    """Seconds one run of ``command`` takes, as a whole process."""
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def compare(a: list[str], b: list[str], runs: int) -> dict:
    """``runs`` alternating runs of ``a`` and ``b`` after one warm-up each: their median times
    and the median, lowest and highest of the pairwise ratios a/b."""
    wall_time(a), wall_time(b)
    times_a, times_b = [], []
    for _ in range(runs):
        times_a.append(wall_time(a))
        times_b.append(wall_time(b))
    ratios = [x / y for x, y in zip(times_a, times_b, strict=True)]
    return {
        "a": statistics.median(times_a),
        "b": statistics.median(times_b),
        "ratio": statistics.median(ratios),
        "low": min(ratios),
        "high": max(ratios),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="counted runs of each command")
    parser.add_argument("--output", type=Path, default=results_dir(__file__) / "startup.md")
    args = parser.parse_args()
    python = sys.executable
    crowdbayes = str(Path(python).with_name("crowdbayes"))
    folder = Path(tempfile.mkdtemp(prefix="crowdbayes_startup_"))
    labels = folder / "labels.csv"
    bundled = REPO / "src" / "crowdbayes" / "datasets" / "bundled" / "rte" / "labels.csv"
    lines = bundled.read_text(encoding="utf-8").splitlines()[:151]  # the header and 150 labels
    labels.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = folder / "tasks.csv"
    numpy, pandas = [python, "-c", "import numpy"], [python, "-c", "import pandas"]
    cases = [
        ("`crowdbayes --help`", [crowdbayes, "--help"], "`import numpy`", numpy),
        (
            "`crowdbayes labels fit --help`",
            [crowdbayes, "labels", "fit", "--help"],
            "`import numpy`",
            numpy,
        ),
        (
            "`crowdbayes labels fit LABELS --model mv -o OUT` (150 labels)",
            [crowdbayes, "labels", "fit", str(labels), "--model", "mv", "-o", str(out)]
            + ["--force", "--quiet"],
            "`import pandas`",
            pandas,
        ),
    ]
    rows = [
        "| command | median (s) | against | its median (s) | ratio (median [min, max] of "
        f"{args.runs} pairs) | target ≤ {TARGET} |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, command, against, baseline in cases:
        result = compare(command, baseline, args.runs)
        met = "yes" if result["ratio"] <= TARGET else "**no**"
        rows.append(
            f"| {name} | {result['a']:.3f} | {against} | {result['b']:.3f} | "
            f"{result['ratio']:.2f} [{result['low']:.2f}, {result['high']:.2f}] | {met} |"
        )
        print(rows[-1], flush=True)
    text = [
        "Each pair ran alternately in fresh processes after one warm-up of each; the ratio is "
        "the median of the pairwise ratios (command / baseline), with the lowest and highest.",
        "",
        *rows,
    ]
    write_markdown_report(args.output, "Start-up of the command line", text)


if __name__ == "__main__":
    main()
