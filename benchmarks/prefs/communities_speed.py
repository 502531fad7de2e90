"""Time per Gibbs sweep of ``CommunityPreferences`` against the number of users (and items).

Simulated data (:func:`crowdbayes.models.communities.simulate_community_preferences`): users in
planted communities, each with the same number of comparisons. For every size the script
builds the sampler's inputs once, then times, in this process and one after the other,

- the sequential-CRP initialisation of a chain (``init="sequential"``),
- blocked Gibbs sweeps after ``--warmup`` untimed ones (single-user moves + EP refits of
  the changed communities; the
  per-sweep split–merge moves are timed apart, as they do not scale with the users),
- split–merge moves (mean seconds per move).

Two series: users ``--users`` (100..10,000) on ``--items`` items, then items
``--item-grid`` (50..800) for ``--item-users`` users; ``--n-inducing M`` adds the items series
again with every community's EP on ``M`` inducing items.

Run from the repository root on an otherwise idle machine::

    .venv/bin/python benchmarks/prefs/communities_speed.py                       # both series
    .venv/bin/python benchmarks/prefs/communities_speed.py --users 1000 --item-grid  # one size

Writes ``benchmarks/prefs/results/communities_speed.md`` (``--output`` changes it).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np  # noqa: E402

from _common import load_average, results_dir, write_markdown_report  # noqa: E402
from crowdbayes.models.communities import (  # noqa: E402
    CommunityPreferences,
    simulate_community_preferences,
)
from crowdbayes.models.communities.sampler import _Chain  # noqa: E402

RESULTS = results_dir(__file__)


def measure(
    n_users: int,
    n_items: int,
    pairs: int,
    communities: int,
    sweeps: int,
    seed: int,
    n_inducing: int | None = None,
    warmup: int = 2,
):
    sim = simulate_community_preferences(
        n_users, n_items, communities, pairs, noise=0.5, random_state=seed
    )
    model = CommunityPreferences(
        noise=0.5, concentration=0.5, n_chains=1, split_merge=0, n_inducing=n_inducing
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model._prepare(sim.comparisons, sim.items)  # the per-user data and the kernel only
    settings = model._settings()
    settings.split_merge = 0
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    chain = _Chain(model._users, settings, rng)
    init = time.perf_counter() - start
    for _ in range(warmup):  # untimed: the first sweeps from the initial seating move many users
        chain.sweep()
    times, sizes = [], []
    for _ in range(sweeps):
        start = time.perf_counter()
        sizes.append(chain.sweep())
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    moves = 4
    accepted = sum(chain._split_merge() for _ in range(moves))
    split_merge = (time.perf_counter() - start) / moves
    return {
        "users": n_users,
        "items": n_items,
        "inducing": "–" if n_inducing is None else n_inducing,
        "comparisons": len(sim.comparisons),
        "init_s": init,
        "sweep_s": float(np.mean(times)),
        "sweep_min_s": float(np.min(times)),
        "communities": int(sizes[-1]),
        "split_merge_s": split_merge,
        "accepted": accepted,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--users", type=int, nargs="+", default=[100, 250, 500, 1000, 2000, 5000, 10000]
    )
    parser.add_argument("--items", type=int, default=100, help="items of the users series")
    parser.add_argument(
        "--item-grid",
        type=int,
        nargs="*",
        default=[50, 100, 200, 400, 800],
        help="items of the items series (empty: no items series)",
    )
    parser.add_argument("--item-users", type=int, default=1000, help="users of the items series")
    parser.add_argument("--n-inducing", type=int, default=None)
    parser.add_argument("--pairs", type=int, default=20, help="comparisons per user")
    parser.add_argument("--communities", type=int, default=4)
    parser.add_argument("--sweeps", type=int, default=3, help="timed sweeps per size")
    parser.add_argument("--warmup", type=int, default=2, help="untimed sweeps before them")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=RESULTS / "communities_speed.md")
    args = parser.parse_args()
    data = (
        f"- data: {args.communities} planted communities, {args.pairs} comparisons per user, "
        "noise 0.5, 2 item features; sampler `blocked`, λ = 0.5; "
        f"{args.sweeps} timed sweeps after {args.warmup} untimed ones"
    )
    lines = [
        "| users | items | inducing | comparisons | init (s) | sweep mean (s) | sweep min (s) | "
        "ms per user | communities | split–merge (s/move) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    sizes = [(u, args.items, None) for u in args.users]
    sizes += [
        (args.item_users, n, None)
        for n in args.item_grid
        if (args.item_users, n, None) not in sizes
    ]
    if args.n_inducing is not None:
        sizes += [(args.item_users, n, args.n_inducing) for n in args.item_grid]
    rows = []
    for n_users, n_items, n_inducing in sizes:
        row = measure(
            n_users,
            n_items,
            args.pairs,
            args.communities,
            args.sweeps,
            args.seed,
            n_inducing,
            args.warmup,
        )
        rows.append(row)
        text = (
            f"| {row['users']} | {row['items']} | {row['inducing']} | {row['comparisons']} | "
            f"{row['init_s']:.2f} | {row['sweep_s']:.2f} | {row['sweep_min_s']:.2f} | "
            f"{1000 * row['sweep_s'] / row['users']:.2f} | {row['communities']} | "
            f"{row['split_merge_s']:.2f} |"
        )
        print(text, flush=True)
        lines.append(text)
    by_items = {}
    for row in rows:
        if row["inducing"] == "–":
            by_items.setdefault(row["items"], []).append(row)
    lines.append("")
    for n_items, group in by_items.items():
        if len(group) > 2:
            users = np.array([r["users"] for r in group], dtype=float)
            sweep = np.array([r["sweep_s"] for r in group])
            slope, intercept = np.polyfit(users, sweep, 1)
            exponent = np.polyfit(np.log(users), np.log(sweep), 1)[0]
            lines.append(
                f"- {n_items} items: sweep ≈ {intercept:.3f} s + {1000 * slope:.2f} ms × users; "
                f"log-log slope {exponent:.2f} (1 = linear)"
            )
    lines.append(f"- load average at end {load_average()}")
    title = "CommunityPreferences: time per Gibbs sweep"
    write_markdown_report(args.output, title, lines, [data])


if __name__ == "__main__":
    main()
