"""How every model's fit time grows with its data: three sizes a factor 10 apart.

For every estimator of ``crowdbayes.list_models()`` the script simulates data of three sizes
``n``, ``10 n``, ``100 n`` (the number of judgments: labels, comparisons, top-queries or links;
items, tasks and workers grow with them as listed below), fits the model at its default
settings (the deep clustering models with ``epochs=5``, see below) in a fresh 'spawn' process
with a time limit, and reports the wall time, the growth exponent between consecutive sizes
``log(t₂/t₁) / log 10`` and a log–log plot. An exponent above 1.15 between the two largest
sizes is flagged.

Data (seeded; ``n`` judgments):

- labels: ``simulate_labels(n // 10, max(20, n // 100), 10)`` — ten labels per task, a worker
  per hundred labels (two classes; KOS needs two); ``OrdinalDawidSkene`` the same labels as
  four ordered grades, ``ContinuousAggregation`` ``simulate_values`` of the same shape,
  ``CrowdClassifier`` ``simulate_crowd_labels`` with 10 features, ``GoldMajorityVote`` the
  truth of a tenth of the tasks as gold;
- comparisons (GP preference models, Bradley–Terry): ``n`` random pairs of ``max(20, n // 10)``
  items with 3 features, probit answers from a smooth utility, 20 workers;
  ``CommunityPreferences`` the same with 20 workers in two opposed communities;
- rankings: ``n`` top-1 choices among 5 items from ``max(20, n // 10)`` items (5 features for
  the feature models);
- links: ``LinkClustering`` ``n`` must/cannot links among ``max(30, n // 5)`` items of 5
  clusters by 20 workers; ``SCDC``/``BayesSCDC`` pinwheel points (``n // 5`` of them, 5
  clusters) with ``n`` links among them, ``epochs=5`` (their cost is epochs × points; the
  default number of epochs would only scale every size alike); ``PlackettLuceMM`` with a
  Gamma(2, 1) prior (see :func:`model_parameters`).

Usage (from the repository root; nothing else running)::

    .venv/bin/python benchmarks/scale/scaling.py [--base 2000] [--timeout 300] [--only GPPL KOS]
        [--output benchmarks/scale/results/scaling.md]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import (  # noqa: E402
    load_average,
    markdown_table,
    results_dir,
    run_isolated,
    write_markdown_report,
)

RESULTS = results_dir(__file__)

FLAG = 1.15
#: the deep clustering models' epochs here (their time is linear in epochs)
DEEP_EPOCHS = 5


# ---------------------------------------------------------------------------------- data
def _labels(n: int, seed: int):
    from crowdbayes.datasets import simulate_labels

    return simulate_labels(max(10, n // 10), max(20, n // 100), 10, random_state=seed)


def _comparisons(n: int, seed: int, communities: bool = False):
    from scipy.special import ndtr

    rng = np.random.default_rng(seed)
    n_items = max(20, n // 10)
    X = rng.uniform(0, 3, (n_items, 3))
    f = np.sin(2 * X[:, 0]) + np.cos(X[:, 1]) + 0.5 * X[:, 2]
    worker = rng.integers(0, 20, n)
    left = rng.integers(0, n_items, n)
    right = (left + rng.integers(1, n_items, n)) % n_items
    diff = f[left] - f[right]
    if communities:
        diff = diff + np.where(worker % 2 == 0, 1.0, -1.0) * (X[left, 0] - X[right, 0])
    won = rng.random(n) < ndtr(diff / np.sqrt(2))
    ids = np.array([f"i{k}" for k in range(n_items)])
    table = pd.DataFrame(
        {
            "worker": [f"w{k}" for k in worker],
            "left": ids[left],
            "right": ids[right],
        }
    )
    table["label"] = np.where(won, table["left"], table["right"])
    items = pd.DataFrame(X, index=pd.Index(ids, name="item"), columns=["x0", "x1", "x2"])
    return table, items


def _rankings(n: int, seed: int, n_features: int | None):
    rng = np.random.default_rng(seed)
    n_items = max(20, n // 10)
    X = rng.normal(size=(n_items, n_features or 1))
    utility = X @ rng.normal(size=X.shape[1]) if n_features else rng.normal(size=n_items)
    members = np.argsort(rng.random((n, n_items)), axis=1)[:, :5] if n_items <= 200 else None
    if members is None:
        members = rng.integers(0, n_items, (n, 5))
        # distinct members per query: resample the clashes
        for _ in range(20):
            clash = (np.sort(members, axis=1)[:, 1:] == np.sort(members, axis=1)[:, :-1]).any(1)
            if not clash.any():
                break
            members[clash] = rng.integers(0, n_items, (int(clash.sum()), 5))
        members = members[~(np.sort(members, 1)[:, 1:] == np.sort(members, 1)[:, :-1]).any(1)]
    chosen = np.argmax(utility[members] + rng.gumbel(size=members.shape), axis=1)
    query = np.repeat(np.arange(len(members)), 5)
    rank = np.full(members.shape, np.nan)
    rank[np.arange(len(members)), chosen] = 1.0
    table = pd.DataFrame(
        {"query": query, "item": [f"i{k}" for k in members.ravel()], "rank": rank.ravel()}
    )
    if not n_features:
        return (table,)
    names = [f"x{k}" for k in range(n_features)]
    items = pd.DataFrame(X, index=pd.Index([f"i{k}" for k in range(n_items)], name="item"))
    items.columns = names
    return table, items


def _links(n: int, seed: int):
    from crowdbayes.datasets.clustering import simulate_pair_links

    n_items = max(30, n // 5)
    truth = np.arange(n_items) % 5
    sim = simulate_pair_links(
        truth, n_workers=20, pairs_per_worker=max(1, n // 20), random_state=seed
    )
    return (sim.to_links(),)


def _features_and_links(n: int, seed: int):
    from crowdbayes.datasets.clustering import make_pinwheel, simulate_pair_links

    n_points = max(50, n // 5)
    X, y = make_pinwheel(5, n_points // 5, random_state=seed)
    sim = simulate_pair_links(y, n_workers=20, pairs_per_worker=max(1, n // 20), random_state=seed)
    return X, sim.to_links(observations=X)


def fit_arguments(name: str, n: int, seed: int = 0) -> tuple:
    """The arguments of ``fit`` for model ``name`` with ``n`` judgments."""
    if name in ("GPPL", "CrowdGPPL", "GPPLVI", "GPPLLaplace", "GPPreferenceEP"):
        return _comparisons(n, seed)
    if name == "CommunityPreferences":
        return _comparisons(n, seed, communities=True)
    if name in ("BradleyTerry", "CrowdBT"):
        return (_comparisons(n, seed)[0],)
    if name in ("PlackettLuceVI", "PlackettLuceMAP"):
        return _rankings(n, seed, n_features=5)
    if name in ("PlackettLuceMM", "PlackettLuceGibbs"):
        return _rankings(n, seed, n_features=None)
    if name == "LinkClustering":
        return _links(n, seed)
    if name in ("SCDC", "BayesSCDC"):
        return _features_and_links(n, seed)
    sim = _labels(n, seed)
    if name == "ContinuousAggregation":
        from crowdbayes.datasets import simulate_values

        values = simulate_values(sim.truth.size, len(sim.workers), 10, random_state=seed)
        return (values.values,)
    if name == "OrdinalDawidSkene":
        from crowdbayes import Labels

        return (Labels(sim.labels, classes=[0, 1], ordered=True),)
    if name == "GoldMajorityVote":
        return sim.labels, sim.truth.iloc[: max(1, sim.truth.size // 10)]
    if name == "CrowdClassifier":
        from crowdbayes.datasets import simulate_crowd_labels

        rng = np.random.default_rng(seed)
        truth = sim.truth.to_numpy()
        features = pd.DataFrame(truth[:, None] + rng.normal(size=(truth.size, 10)))
        crowd, _ = simulate_crowd_labels(
            truth, labels_per_task=(10, 10), n_workers=max(20, n // 100), random_state=seed
        )
        return crowd, features
    return (sim.labels,)


def model_parameters(name: str) -> dict:
    """Defaults, except: the deep models' epochs (above) and a Gamma(2, 1) prior for
    ``PlackettLuceMM`` (random choices leave items that never win, where the default maximum
    likelihood does not exist)."""
    if name in ("SCDC", "BayesSCDC"):
        return {"epochs": DEEP_EPOCHS}
    return {"shape": 2.0, "rate": 1.0} if name == "PlackettLuceMM" else {}


# ---------------------------------------------------------------------------------- child
def fit_child(conn, name: str, n: int) -> None:
    try:
        import crowdbayes

        if name in ("SCDC", "BayesSCDC"):
            import torch

            torch.set_num_threads(1)
        cls = {c.__name__: c for c in crowdbayes.list_models()}[name]
        args = fit_arguments(name, n)
        conn.send(("ready", None))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start, cpu_start = time.perf_counter(), _cpu_seconds()
            cls(**model_parameters(name)).fit(*args)
            seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
        conn.send(("ok", (seconds, cpu)))
    except Exception as err:  # noqa: BLE001 - reported in the table
        conn.send(("error", f"{type(err).__name__}: {err}"))


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (forked chain processes)."""
    import resource

    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


# ---------------------------------------------------------------------------------- report
def _earlier_run(report: Path) -> str:
    """`` (<date line>, `<command>`)`` of the report a partial run is about to replace."""
    if not report.is_file():
        return ""
    lines = report.read_text(encoding="utf-8").splitlines()
    # the header's `command: `...`` line (older reports: the line after the first ```)
    command = next(
        (line[len("command: `") : -1] for line in lines if line.startswith("command: `")), ""
    )
    command = command or next((b for a, b in zip(lines, lines[1:], strict=False) if a == "```"), "")
    started = next((line[len("- date: ") :] for line in lines if line.startswith("- date: ")), "")
    earlier = re.search(
        r"Rows of .*? the run that wrote the CSV before it( \(.*\))?\.", "\n".join(lines)
    )
    if earlier and earlier.group(1):  # that report was itself a partial rerun: keep its source
        return earlier.group(1)
    return f" ({started}: `{command}`)"


def _number(value):
    """A CSV cell back as a float where it is one (times, exponents), else as it was."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return "" if value != value else value


def exponent(t1: float, t2: float) -> float:
    return math.log(t2 / t1) / math.log(10.0)


def plot(frame: pd.DataFrame, sizes: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 7))
    colours = plt.get_cmap("tab10").colors
    styles, markers = ("-", "--", ":"), "osD^v<>"
    for number, (name, row) in enumerate(frame.iterrows()):
        times = [row[f"CPU {n}"] for n in sizes]
        points = [(n, t) for n, t in zip(sizes, times, strict=True) if isinstance(t, float)]
        if points:
            xs, ys = zip(*points, strict=True)
            ax.loglog(
                xs,
                ys,
                color=colours[number % 10],
                linestyle=styles[number // 10 % 3],
                marker=markers[number % len(markers)],
                label=name if len(points) == len(sizes) else f"{name} (time-out after)",
            )
    reference = np.array(sizes, dtype=float)
    ax.loglog(reference, reference / reference[0] * 0.01, "k-", lw=2.5, alpha=0.4, label="linear")
    ax.set_xlabel("judgments (labels, comparisons, top-queries or links)")
    ax.set_ylabel("fit CPU time (s)")
    ax.set_title("Fit time against data size, every model at its defaults")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=2000, help="the smallest size n")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--only", nargs="*", help="these models only")
    parser.add_argument("--output", type=Path, default=RESULTS / "scaling.md")
    args = parser.parse_args()
    import crowdbayes

    names = names_all = [c.__name__ for c in crowdbayes.list_models()]
    if args.only:
        names = [name for name in names if name in args.only]
    sizes = [args.base, args.base * 10, args.base * 100]
    started = time.perf_counter()
    rows = []
    for name in names:
        row: dict = {"model": name}
        for n in sizes:
            status, payload = run_isolated(fit_child, (name, n), timeout=args.timeout)
            if status == "ok":
                row[str(n)], row[f"CPU {n}"] = payload
                shown = f"{payload[0]:.2f} s (CPU {payload[1]:.2f} s)"
            else:
                row[str(n)] = row[f"CPU {n}"] = status
                shown = f"{status}: {payload}"
            print(f"{name} n={n}: {shown}", flush=True)
            if status != "ok":
                break  # a larger size will not do better
        for prefix, kind in (("", "wall"), ("CPU ", "CPU")):
            for (a, b), label in (((0, 1), "1→2"), ((1, 2), "2→3")):
                ta, tb = row.get(f"{prefix}{sizes[a]}"), row.get(f"{prefix}{sizes[b]}")
                ok = isinstance(ta, float) and isinstance(tb, float) and ta > 0
                row[f"{kind} exp. {label}"] = exponent(ta, tb) if ok else float("nan")
        last = row["CPU exp. 2→3"]
        row["flag"] = "> 1.15" if last == last and last > FLAG else ""
        row["load"] = load_average().split()[0]
        rows.append(row)
    frame = pd.DataFrame(rows).set_index("model")
    table = args.output.with_suffix(".csv")
    rerun = ""
    if args.only and table.is_file():
        # a partial run replaces its models' rows of the last full run (same sizes)
        earlier = pd.read_csv(table, index_col="model")
        if [c for c in earlier.columns if c.isdigit()] != [str(n) for n in sizes]:
            raise SystemExit(f"{table} has other sizes than --base {args.base}")
        earlier = earlier.drop(index=frame.index, errors="ignore").astype(object).map(_number)
        frame = pd.concat([earlier, frame]).loc[
            [n for n in names_all if n in frame.index or n in earlier.index]
        ]
        rerun = (
            f"Rows of {', '.join(args.only)} replaced by a rerun "
            f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, command above); "
            "the other rows are from the run that wrote the CSV before it"
            f"{_earlier_run(args.output)}."
        )
    frame.to_csv(table)
    png = args.output.with_suffix(".png")
    plot(frame, sizes, png)
    end = (
        f"- load average at the end {load_average()}; total run time "
        f"{time.perf_counter() - started:.0f} s; time limit per fit {args.timeout:g} s"
    )
    lines = [
        "Wall and CPU seconds of `fit` (data simulated before the clock starts; one fresh "
        "process per fit; CPU of the fit's process and any chain processes it forked). "
        "Exponent = log10(t_next / t) between sizes a factor 10 apart; 1 is linear; the flag "
        "is on the CPU exponent between the two largest sizes, the steadier measure when "
        "other work shares the cores (`load`: 1-minute load average after the model's last "
        "fit). A time-out or error stops the larger sizes of that model. The fits run in a "
        "daemonic process, so the sampled models run their chains one after another here.",
        "",
        *([rerun, ""] if rerun else []),
        markdown_table(frame, 3),
        "",
        f"![log-log plot]({png.name})",
    ]
    title = "Fit time against data size, every model"
    write_markdown_report(args.output, title, lines, [end], echo=True)


if __name__ == "__main__":
    main()
