"""Issue 40, points 4 and 5: the default ``LinkClustering`` fit on 10,000 links, and the
simulated checks of ``results/cluster_link_vb_search.md`` that the faster search must keep.

1. Time at defaults: ``LinkClustering()`` on the data of ``benchmarks/labels/defaults_time.py``
   (``scaling.fit_arguments("LinkClustering", 10000)``: 10,000 links among 2,000 items of 5
   clusters by 20 workers), at every seed of ``--seeds`` (the default fit draws its seed at
   random, so several are timed), after one warm-up fit on 200 links: CPU seconds, final ELBO,
   clusters used and the number of restarts (at K, then those at K' = 15).
2. Simulated tasks in the MNIST scheme (``simulate_link_tasks``: 2,000 items in 10 clusters,
   70 tasks × 36 items, 35 workers, ``random_state`` = seed, sorted and independent two-coin
   links), fitted with ``LinkClustering(10, random_state=seed)``: per-task NMI, ELBO, the final
   ELBO of every restart and CPU seconds.

Usage (from the repository root)::

    .venv/bin/python benchmarks/cluster/cluster_link_vb_speed.py
        [--seeds 0 1 2 3 4 5 6 7] [--sim-seeds 0 1 2 3 4] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scale"))  # scaling

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scaling import fit_arguments  # noqa: E402

from _common import load_average, results_dir, write_markdown_report  # noqa: E402
from crowdbayes.datasets.clustering import simulate_link_tasks, task_groupings  # noqa: E402
from crowdbayes.exceptions import DataWarning  # noqa: E402
from crowdbayes.metrics.clustering import per_task_nmi  # noqa: E402
from crowdbayes.models.clustering import LinkClustering  # noqa: E402
from crowdbayes.models.clustering.link_vb import kernel_available  # noqa: E402


def timed_fit(model, links):
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(links)
    return time.process_time() - start


def defaults_rows(seeds) -> list[str]:
    (links,) = fit_arguments("LinkClustering", 10_000)
    timed_fit(LinkClustering(), fit_arguments("LinkClustering", 200)[0])  # warm-up
    lines = [
        "| seed | CPU s | ELBO | clusters used | restarts (K + K') | load |",
        "|---:|---:|---:|---:|---|---:|",
    ]
    for seed in seeds:
        model = LinkClustering(random_state=seed)
        seconds = timed_fit(model, links)
        n_wide = len(model.restart_elbos_) - model.n_init
        lines.append(
            f"| {seed} | {seconds:.2f} | {model.elbo_:.1f} | {model.n_clusters_used_} | "
            f"{model.n_init} + {n_wide} | {load_average().split()[0]} |"
        )
        print(lines[-1], flush=True)
    return lines


def simulated_rows(seeds) -> list[str]:
    truth = pd.Series(np.repeat(np.arange(10), 200), index=[f"i{j}" for j in range(2000)])
    lines = [
        "| links | seed | per-task NMI | ELBO | restart ELBOs | CPU s |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for sort in (True, False):
        for seed in seeds:
            sim = simulate_link_tasks(
                truth, n_tasks=70, items_per_task=36, n_workers=35, sort=sort, random_state=seed
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataWarning)  # a few repeated pairs, kept
                links = sim.to_links()
            model = LinkClustering(10, random_state=seed)
            seconds = timed_fit(model, links)
            nmi = per_task_nmi(task_groupings(sim.links), truth, model.assignments_)
            restarts = ", ".join(f"{e:.1f}" for e in model.restart_elbos_)
            lines.append(
                f"| {'sorted' if sort else 'independent'} | {seed} | "
                f"{nmi['inferred'].mean():.4f} | {model.elbo_:.2f} | {restarts} | {seconds:.1f} |"
            )
            print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    parser.add_argument("--sim-seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--out", default=str(results_dir(__file__) / "cluster_link_vb_speed.md"))
    args = parser.parse_args()
    lines = [
        f"Compiled VB loop built: {kernel_available()}.",
        "",
        "## 1. Default fit on 10,000 links (the data of defaults_time.py)",
        "",
        *defaults_rows(args.seeds),
        "",
        "## 2. Simulated tasks in the MNIST scheme, LinkClustering(10, random_state=seed)",
        "",
        *simulated_rows(args.sim_seeds),
    ]
    write_markdown_report(args.out, "LinkClustering: time at defaults and simulated checks", lines)


if __name__ == "__main__":
    main()
