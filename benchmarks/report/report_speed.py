"""How fast the quality report is built, and how big it is (issue 17's speed acceptance).

Each case runs the ``crowdbayes report labels`` command in a fresh process (``--no-progress``)
and reads what it prints: the fit's wall time and the report's (``build`` plus the atomic
write); the whole command's wall time (start-up, reading the data, the fit, the report) is
timed around the process. Cases:

- RTE (800 tasks, 8,000 labels; Snow et al. 2008) with ``--model hierarchical`` (the default)
  and ``--model bayes-ds``, scored against the set's gold: target, the report under 10 s
  beyond the fit;
- 1,000,000 simulated labels (``simulate_labels(100_000, 1_000, 10, n_classes=K,
  random_state=0)``, written to CSV with their true classes as ``--eval-gold``) with
  ``--model bayes-ds``, K = 2 and 5: target, the whole command under 60 s and the HTML under
  5 MB.

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/report/report_speed.py
    .venv/bin/python benchmarks/report/report_speed.py --repeats 1
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import load_average, resolve_data_root, results_dir, write_markdown_report  # noqa: E402

RESULTS = results_dir(__file__)

_PRINTED = re.compile(
    r"fit in (?P<fit>[0-9.]+) s; report built in (?P<report>[0-9.]+) s "
    r"\((?P<figures>\d+) figures, (?P<mb>[0-9.]+) MB\)"
)


def simulated(folder: Path, k: int) -> tuple[Path, Path]:
    from crowdbayes.datasets import simulate_labels

    sim = simulate_labels(100_000, 1_000, 10, n_classes=k, random_state=0)
    labels, gold = folder / f"labels_k{k}.csv", folder / f"gold_k{k}.csv"
    sim.labels.to_csv(labels, index=False)
    sim.truth.rename("label").rename_axis("task").to_csv(gold)
    return labels, gold


def run(arguments: list[str], out: Path) -> dict:
    command = [str(Path(sys.executable).parent / "crowdbayes"), "report", "labels", *arguments]
    command += ["--out", str(out), "--no-progress"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    found = _PRINTED.search(done.stdout)
    if found is None:
        raise RuntimeError(f"unexpected output: {done.stdout!r} {done.stderr!r}")
    return {
        "wall": wall,
        "fit": float(found["fit"]),
        "report": float(found["report"]),
        "figures": int(found["figures"]),
        "bytes": out.stat().st_size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS / "report_speed.md")
    args = parser.parse_args()
    resolve_data_root()
    runs_line = (
        f"- each case run {args.repeats}x as a fresh `crowdbayes report labels ... "
        "--no-progress` process; medians (min-max in brackets)"
    )
    lines = [
        "| case | arguments | whole command (s) | fit (s) | report (s) | HTML (MB) | figures |",
        "|---|---|---|---|---|---|---|",
    ]
    checks = []
    with tempfile.TemporaryDirectory(prefix="crowdbayes-report-speed-") as folder:
        folder = Path(folder)
        cases = [
            ("RTE", ["--dataset", "rte", "--model", "hierarchical", "--seed", "0"]),
            ("RTE", ["--dataset", "rte", "--model", "bayes-ds"]),
        ]
        for k in (2, 5):
            labels, gold = simulated(folder, k)
            cases.append(
                (
                    f"1M labels, K={k}",
                    [str(labels), "--model", "bayes-ds", "--eval-gold", str(gold)],
                )
            )
        for name, arguments in cases:
            runs = [run(arguments, folder / "report.html") for _ in range(args.repeats)]

            def cell(key: str, runs=runs) -> str:
                values = [r[key] for r in runs]
                return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

            shown = " ".join(a if "/" not in a else Path(a).name for a in arguments)
            megabytes = max(r["bytes"] for r in runs) / 1e6
            lines.append(
                f"| {name} | `{shown}` | {cell('wall')} | {cell('fit')} | {cell('report')} | "
                f"{megabytes:.2f} | {runs[0]['figures']} |"
            )
            print(lines[-1], flush=True)
            report = statistics.median(r["report"] for r in runs)
            wall = statistics.median(r["wall"] for r in runs)
            if name == "RTE":
                checks.append(
                    (
                        report < 10,
                        f"{name} `{shown}`: report {report:.2f} s beyond the fit (target < 10 s)",
                    )  # fmt: skip
                )
            else:
                checks.append((wall < 60, f"{name}: whole command {wall:.2f} s (target < 60 s)"))
            checks.append((megabytes < 5, f"{name} `{shown}`: HTML {megabytes:.2f} MB (< 5 MB)"))
    lines += ["", "## Acceptance targets", "", "```"]
    lines += [f"{'PASS' if ok else 'FAIL'}: {text}" for ok, text in checks]
    lines += ["```", "", f"- load average at the end {load_average()}"]
    title = "Quality report: speed and size (issue 17)"
    write_markdown_report(args.output, title, lines, [runs_line])
    print("\n".join(lines[-len(checks) - 3 :]))


if __name__ == "__main__":
    main()
