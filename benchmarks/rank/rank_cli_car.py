"""``crowdbayes rank fit`` on the car choice data as a newcomer runs it: raw features, defaults.

The car-choice set (McFadden & Train 2000; 4,654 people each choose 1 of 6 cars, 17 item
features as ``load_car_choice`` returns them — not standardised: range ~240, speed ~100,
indicators 0/1) is written to two CSV files (``query,item,rank`` and ``item,<features>``) and

1. the command ``crowdbayes rank fit RANKINGS --items ITEMS --out OUT`` (defaults: ``pl-vi``,
   ``eta`` auto over 13 values) is run ``--repeats`` times as a whole process; wall and CPU
   time (user + system of the child) are reported;
2. ``PlackettLuceVI(eta="auto")`` is fitted in this process with ``centre=True`` (the default)
   and ``centre=False`` (Algorithm 1 on the features as given, Guo et al. 2019), reporting time,
   outer iterations over the grid, the chosen η, the bound at the chosen η, and the largest
   difference of the posterior means.

Usage (from the repository root)::

    .venv/bin/python benchmarks/rank/rank_cli_car.py [--repeats 3] [--output PATH]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np

from _common import load_average, resolve_data_root, results_dir, write_markdown_report

RESULTS = results_dir(__file__)


def _write_inputs(folder: Path) -> tuple[Path, Path]:
    from crowdbayes.datasets import load_car_choice

    data = load_car_choice()
    rankings, items = folder / "rankings.csv", folder / "items.csv"
    data.rankings.to_csv(rankings, index=False)
    data.items.rename_axis("item").reset_index().to_csv(items, index=False)
    return rankings, items


def _run_command(rankings: Path, items: Path, out: Path) -> tuple[float, float]:
    exe = Path(sys.executable).with_name("crowdbayes")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [
            str(exe),
            "rank",
            "fit",
            str(rankings),
            "--items",
            str(items),
            "--out",
            str(out),
            "--force",
            "--no-progress",
        ],  # fmt: skip
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _fit(centre: bool):
    import warnings

    from crowdbayes import PlackettLuceVI
    from crowdbayes.datasets import load_car_choice

    data = load_car_choice()
    start = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = PlackettLuceVI(eta="auto", centre=centre).fit(data.rankings, items=data.items)
    seconds = time.process_time() - start
    return model, seconds, len(caught)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS / "rank_cli_car.md")
    args = parser.parse_args()
    resolve_data_root()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    with tempfile.TemporaryDirectory() as tmp:
        rankings, items = _write_inputs(Path(tmp))
        runs = [_run_command(rankings, items, Path(tmp) / "out.csv") for _ in range(args.repeats)]
    walls, cpus = np.array(runs).T
    lines = [
        "## The command, as a whole process",
        "",
        "| runs | wall median (min–max) s | CPU median (min–max) s |",
        "| --- | --- | --- |",
        f"| {len(runs)} | {np.median(walls):.1f} ({walls.min():.1f}–{walls.max():.1f}) | "
        f"{np.median(cpus):.1f} ({cpus.min():.1f}–{cpus.max():.1f}) |",
        "",
        "Wall time counts waiting for a core when the machine is loaded; CPU time does not "
        f"(load average after the runs: {load_average()}).",
        "",
    ]

    fits = {centre: _fit(centre) for centre in (True, False)}
    lines += [
        "## The fit alone (CPU seconds of this process)",
        "",
        "| centre | CPU s | outer iterations (13 values of η) | η chosen | bound at η | "
        "ConvergenceWarnings |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for centre, (model, seconds, warned) in fits.items():
        lines.append(
            f"| {centre} | {seconds:.1f} | {int(model.eta_curve_['n_iter'].sum())} | "
            f"{model.eta_:.4g} | {model.lower_bound_:.2f} | {warned} |"
        )
    gap = np.max(np.abs(fits[True][0].coef_ - fits[False][0].coef_))
    lines += [
        "",
        f"Largest difference of the posterior means between the two: {gap:.2e} "
        "(the model is the same; Bouchard's bound on the 6-car sets is tighter centred).",
    ]
    title = "`crowdbayes rank fit` on the car choice data, defaults, raw features"
    write_markdown_report(args.output, title, lines, echo=True)


if __name__ == "__main__":
    main()
