"""BayesSCDC on the pinwheel data (Luo et al. 2018, §5.1; issue 6 acceptance target 1).

Per seed: ``make_pinwheel`` (5 arms × 100 points), 100 random points annotated by 20 workers
× 49 pairs with α = β = 0.9 (``simulate_pair_links``), BayesSCDC with K = 15, d = 2, MLPs of
2 × 40, batch 50. Rows: with annotations, and without annotations (with ``--n-init``
restarts and with a single start); ``--scdc`` adds SCDC with annotations. Accuracy (best
one-to-one matching), NMI, clusters used, seconds per fit.

    .venv/bin/python benchmarks/cluster/cluster_pinwheel.py                  # 5 seeds
    .venv/bin/python benchmarks/cluster/cluster_pinwheel.py --seeds 0 --epochs 40

Prints a markdown report; ``--output FILE`` also writes it; ``--plot FILE`` draws the first
seed's clusters (truth, a single start without annotations, with annotations: the paper's
Fig. 2).

``--cli`` instead runs the command line as a new user would (issue 19): the same data and
links written to CSV, ``crowdbayes cluster fit --model bayes-scdc --clusters 15`` with every
other option at its default, once per ``--cli-epochs`` value (none: the default epochs), and
reports accuracy, NMI, clusters used, restarts that collapsed and warnings::

    .venv/bin/python benchmarks/cluster/cluster_pinwheel.py --cli --cli-epochs 0 50 100 200

``--jobs N`` runs the command lines in N processes (one torch thread each; on a machine with
N free cores the 20 runs above take about as long as the slowest one).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np  # noqa: E402
import torch  # noqa: E402

from _common import load_average, run_in_processes, write_markdown_report  # noqa: E402
from crowdbayes.datasets.clustering import make_pinwheel, simulate_pair_links  # noqa: E402
from crowdbayes.metrics.clustering import (  # noqa: E402
    normalized_mutual_info,
    unsupervised_accuracy,
)
from crowdbayes.models.clustering.deep import SCDC, BayesSCDC  # noqa: E402


def one_run(seed: int, with_links: bool, n_init: int, args, model_class=BayesSCDC) -> dict:
    X, y = make_pinwheel(random_state=seed)
    rng = np.random.default_rng(seed)
    annotated = rng.choice(len(X), size=100, replace=False)
    sim = simulate_pair_links(
        y,
        n_workers=20,
        pairs_per_worker=49,
        alpha=0.9,
        beta=0.9,
        items=annotated,
        random_state=seed,
    )
    links = sim.to_links(observations=X) if with_links else None
    model = model_class(
        n_clusters=15,
        latent_dim=2,
        hidden=(40, 40),
        decoder="gaussian",
        epochs=args.epochs,
        batch_size=50,
        warmup_epochs=max(args.epochs // 5, 1),
        n_init=n_init,
        device=args.device,
        random_state=seed,
    )
    start = time.perf_counter()
    model.fit(X, links)
    seconds = time.perf_counter() - start
    pred = model.assignments_.to_numpy()
    return {
        "X": X,
        "y": y,
        "pred": pred,
        "annotated": annotated,
        "acc": unsupervised_accuracy(y, pred),
        "nmi": normalized_mutual_info(y, pred),
        "used": model.n_clusters_used_,
        "seconds": seconds,
    }


def cli_run(seed: int, epochs: int, folder: Path) -> dict:
    """``crowdbayes cluster fit`` on the pinwheel of ``seed`` written to CSV (``one_run``'s
    data and links), ``--clusters 15`` and ``--epochs epochs`` (0: the default), in a folder of
    its own under ``folder`` (runs may go in parallel)."""
    import warnings

    folder = folder / f"seed{seed}_epochs{epochs}"
    folder.mkdir()

    import pandas as pd

    from crowdbayes.cli import main as cli_main

    X, y = make_pinwheel(random_state=seed)
    rng = np.random.default_rng(seed)
    annotated = rng.choice(len(X), size=100, replace=False)
    sim = simulate_pair_links(y, n_workers=20, pairs_per_worker=49, alpha=0.9, beta=0.9,
                              items=annotated, random_state=seed)  # fmt: skip
    links, features = folder / f"links{seed}.csv", folder / f"features{seed}.csv"
    sim.to_links(observations=X).to_frame().to_csv(links, index=False)
    pd.DataFrame({"item": np.arange(len(X)), "x0": X[:, 0], "x1": X[:, 1]}).to_csv(
        features, index=False
    )
    out = folder / f"clusters{seed}_{epochs}.csv"
    argv = ["cluster", "fit", "--links", str(links), "--features", str(features), "--model",
            "bayes-scdc", "--clusters", "15", "--seed", str(seed), "--out", str(out),
            "--no-progress"]  # fmt: skip
    if epochs:
        argv += ["--epochs", str(epochs)]
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = cli_main(argv)
    seconds = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"crowdbayes {' '.join(argv)} exited with {code}")
    table = pd.read_csv(out).sort_values("item")
    pred = table["cluster"].to_numpy()
    notes = [str(w.message).split(". ")[0][:60] for w in caught if "collapse" in str(w.message)]
    accuracy = unsupervised_accuracy(y, pred)
    print(
        f"epochs {epochs or 'default'} seed {seed}: {accuracy:.3f} ({seconds:.0f} s)",
        file=sys.stderr,
        flush=True,
    )
    return {
        "acc": accuracy,
        "nmi": normalized_mutual_info(y, pred),
        "used": int(np.unique(pred).size),
        "seconds": seconds,
        "warnings": "; ".join(notes) or "—",
        "argv": " ".join(argv[:-3] if not epochs else argv),
    }


def cli_report(args) -> list[str]:
    import tempfile

    lines = [
        "| epochs | seed | accuracy | NMI | clusters used | seconds | collapse warning |",
        "|---|---|---|---|---|---|---|",
    ]
    runs = [(epochs, seed) for epochs in args.cli_epochs for seed in args.seeds]
    with tempfile.TemporaryDirectory() as tmp:
        # the longest runs first; one torch thread per process
        rows = run_in_processes(
            cli_run,
            [(seed, epochs, Path(tmp)) for epochs, seed in runs],
            args.jobs,
            initializer=torch.set_num_threads,
            initargs=(1,),
            first=lambda call: -(call[1] or 20),
        )
    results = dict(zip(runs, rows, strict=True))
    summary = []
    for epochs in args.cli_epochs:
        rows = [results[epochs, seed] for seed in args.seeds]
        for seed, row in zip(args.seeds, rows, strict=True):
            lines.append(
                f"| {epochs or 'default (20)'} | {seed} | {row['acc']:.3f} | {row['nmi']:.3f} "
                f"| {row['used']} | {row['seconds']:.1f} | {row['warnings']} |"
            )
        accs = [r["acc"] for r in rows]
        used = [r["used"] for r in rows]
        summary.append(
            f"| {epochs or 'default (20)'} | {np.mean(accs):.3f} | {min(accs):.3f} | "
            f"{min(used)}–{max(used)} |"
        )
    lines += ["", "Per epoch setting, over the seeds:", ""]
    lines += ["| epochs | mean accuracy | lowest accuracy | clusters used |", "|---|---|---|---|"]
    return lines + summary


def plot_clusters(panels: list[tuple[str, dict]], path: Path) -> None:
    """One scatter per fit of the first seed, points coloured by cluster."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.6))
    for ax, (title, row) in zip(np.atleast_1d(axes), panels, strict=True):
        X = row["X"]
        ax.scatter(X[:, 0], X[:, 1], c=row["pred"], cmap="tab20", s=6)
        if title.startswith("with annotations"):
            marked = X[row["annotated"]]
            ax.scatter(marked[:, 0], marked[:, 1], facecolors="none", edgecolors="k", s=18,
                       linewidths=0.5, label="annotated")  # fmt: skip
            ax.legend(fontsize=7, loc="lower right")
        ax.set_title(title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--n-init", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--scdc", action="store_true", help="also run SCDC (with links)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None, help="PNG of the first seed's fits")
    parser.add_argument("--cli", action="store_true", help="run the command line (module doc)")
    parser.add_argument("--cli-epochs", type=int, nargs="+", default=[0])
    parser.add_argument(
        "--jobs", type=int, default=1, help="--cli runs in parallel processes (1 thread each)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    threads = [f"- torch threads: {torch.get_num_threads()}, load at start: {load_average()}"]
    if args.cli:
        title = "`crowdbayes cluster fit --model bayes-scdc --clusters 15` on pinwheel"
        write_markdown_report(args.output, title, cli_report(args), threads, echo=True)
        return
    lines = [
        "| setting | seed | accuracy | NMI | clusters used | seconds |",
        "|---|---|---|---|---|---|",
    ]
    settings = [
        (f"links, n_init={args.n_init}", True, args.n_init),
        (f"no links, n_init={args.n_init}", False, args.n_init),
        ("no links, n_init=1", False, 1),
    ]
    settings = [(*row, BayesSCDC) for row in settings]
    if args.scdc:
        settings.append((f"SCDC, links, n_init={args.n_init}", True, args.n_init, SCDC))
    summary, first = [], {}
    for name, with_links, n_init, model_class in settings:
        rows = []
        for seed in args.seeds:
            row = one_run(seed, with_links, n_init, args, model_class)
            rows.append(row)
            first.setdefault(name, row)
            lines.append(
                f"| {name} | {seed} | {row['acc']:.3f} | {row['nmi']:.3f} | {row['used']} | "
                f"{row['seconds']:.1f} |"
            )
            print(lines[-1], file=sys.stderr, flush=True)
        acc = np.mean([r["acc"] for r in rows])
        nmi = np.mean([r["nmi"] for r in rows])
        used = [r["used"] for r in rows]
        summary.append(f"| {name} | {acc:.3f} | {nmi:.3f} | {min(used)}–{max(used)} |")
    lines += ["", "Mean over seeds (paper: 0.966 accuracy / 0.94 NMI with links):", ""]
    lines += ["| setting | accuracy | NMI | clusters used |", "|---|---|---|---|", *summary]
    if args.plot is not None:
        seed = args.seeds[0]
        truth = dict(first[settings[0][0]], pred=first[settings[0][0]]["y"])
        panels = [(f"truth (seed {seed})", truth)]
        single = first["no links, n_init=1"]
        panels.append((f"without annotations, one start: NMI {single['nmi']:.2f}", single))
        name = settings[0][0]
        panels.append((f"with annotations ({name}): NMI {first[name]['nmi']:.2f}", first[name]))
        plot_clusters(panels, args.plot)
        lines.append(f"- plot: {args.plot}")
    title = "BayesSCDC on pinwheel (5 × 100 points, 980 links on 100 points)"
    write_markdown_report(args.output, title, lines, threads, echo=True)


if __name__ == "__main__":
    main()
