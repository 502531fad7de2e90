"""Speed and peak memory of Plackett–Luce fits: crowdbayes vs choix on Bradley–Terry data, and
the variational Plackett–Luce model with item features.

Section ``bt`` — synthetic Bradley–Terry data (seeded): N items with strengths θ_i ~ N(0, 1);
M comparisons, each between a uniformly random pair of distinct items, the left one winning with
probability σ(θ_left − θ_right). Sizes 1,000 items / 100,000 comparisons and 10,000 items /
1,000,000 comparisons. The same maximum-likelihood problem is solved by

- choix ``ilsr_pairwise(N, data, alpha=0)`` and ``mm_pairwise(N, data, alpha=0)`` (default
  ``tol=1e-8``: mean absolute change of the centred log-scores; ``data`` a list of
  ``[winner, loser]`` pairs of Python ints, built before the clock starts);
- crowdbayes ``PlackettLuceMM()`` (shape=1, rate=0: maximum likelihood; ``tol=1e-10`` on the
  largest change of a log-score), fit only (a ``Rankings`` built with ``Rankings.from_pairs``
  before the clock starts) and end to end (``Rankings.from_pairs`` on the ``left, right, label``
  DataFrame plus the fit, both timed).

The maximum-likelihood estimate exists iff the comparison graph (an edge loser → winner per
comparison) is strongly connected; the script checks this (scipy ``connected_components``) and,
only where it fails, regularises both sides with ``--reg`` (choix ``alpha=reg``, crowdbayes
``shape=1+reg, rate=reg``), which the report then says. Iterations of choix are counted by
wrapping ``choix.convergence.NormOfDifferenceTest.__call__`` (called once per iteration). The
centred log-scores of every fit are compared (max absolute difference).

Section ``vi`` — 100,000 top-1 queries ("which of these 5 is best?") with 50 item features
x ~ N(0, I), true weights θ ~ N(0, I/50), the chosen item drawn from the Plackett–Luce (softmax)
probabilities: (a) the 5 items of a query drawn from 10,000 shared items, (b) 5 items unique to
each query (500,000 items). ``PlackettLuceVI(eta=1.0)`` (defaults otherwise: tol=1e-6,
Newton inner solver) is timed fit only (``Rankings`` with the item table built before) and end
to end (``fit(long_table, items=item_table)``); ``PlackettLuceMAP(eta=1.0)`` fit only, for
reference.

Each fit runs in a fresh 'spawn' subprocess (``_common.run_isolated``) with a time limit
(``--timeout``, counted after imports and data generation); a fit that exceeds it is reported as
``timeout``. Peak memory = peak RSS during the fit minus RSS just before it, in the fit's own
process (kernel VmHWM reset via /proc/self/clear_refs, cross-checked by a 2 ms polling thread).

Usage (from the repository root; do not run other benchmarks at the same time)::

    .venv/bin/python benchmarks/rank/rank_speed.py [--timeout 900] [--repeats 3] [--choix-repeats 1]
        [--only bt vi] [--scale 1.0] [--target] [--output benchmarks/rank/results/rank_speed.md]

``--target`` runs only the rows of the speed target (10,000 items / 1,000,000 comparisons:
choix ILSR and the two ``PlackettLuceMM`` fits), as in
``benchmarks/rank/results/rank_speed_target.md``.

``--scale s`` multiplies every size (items, comparisons, queries; not the 50 features, not the
set size 5) by s, for quick checks; without ``--output`` a scaled or partial run writes to the
temporary folder, never over the committed ``benchmarks/rank/results/rank_speed.md``.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import warnings
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np

from _common import (
    PeakRSS,
    exit_on_sigterm,
    fingerprint_lines,
    format_mib,
    load_average,
    measure_repeated,
    results_dir,
    src_fingerprint,
    write_markdown_report,
)

RESULTS = results_dir(__file__)

SECTIONS = ("bt", "vi")
BT_SIZES = ((1_000, 100_000), (10_000, 1_000_000))  # (items, comparisons)
BT_SEED = 0
VI_QUERIES, VI_SET_SIZE, VI_FEATURES, VI_SHARED_ITEMS = 100_000, 5, 50, 10_000
VI_SEED = 0
VI_ETA = 1.0
SPEED_TARGET = 200.0  # PlackettLuceMM vs choix ILSR on the larger BT size (issue 45)
VI_TARGET = 30.0  # seconds
AGREE_TOL = 1e-6  # max |Δ centred log-score| between crowdbayes and choix ILSR
#: ``--target``: only the larger size, only these fits (the speed target's rows)
TARGET_FITS = ("choix_ilsr", "cb_mm_e2e", "cb_mm_fit")
_NOT_RUN = {"status": "not run"}
# choix MM stops at a mean change of 1e-8 per iteration while converging slowly, so its own
# error is larger (see the ML residual column): its difference is reported, not judged; the
# agreement with choix MM run to convergence (tol 1e-13) is a unit test
# (tests/test_plackett_luce.py::test_mm_agrees_with_choix)
AGREE_TOL_MM = None

BT_FITS = {
    # key -> (row label, library)
    "choix_ilsr": ("choix `ilsr_pairwise`", "choix"),
    "choix_mm": ("choix `mm_pairwise`", "choix"),
    "cb_mm_e2e": ("crowdbayes `PlackettLuceMM`, end to end (DataFrame)", "crowdbayes"),
    "cb_mm_fit": ("crowdbayes `PlackettLuceMM`, fit only (Rankings pre-built)", "crowdbayes"),
}
VI_FITS = {
    "cb_vi_e2e": f"crowdbayes `PlackettLuceVI(eta={VI_ETA:g})`, end to end (DataFrames)",
    "cb_vi_fit": f"crowdbayes `PlackettLuceVI(eta={VI_ETA:g})`, fit only (Rankings pre-built)",
    "cb_map_fit": f"crowdbayes `PlackettLuceMAP(eta={VI_ETA:g})`, fit only (Rankings pre-built)",
}


# --------------------------------------------------------------------------- data
def bt_data(n_items: int, n_comparisons: int, seed: int = BT_SEED) -> dict:
    """Bradley–Terry comparisons: uniformly random pairs of distinct items, winner by
    σ(θ_left − θ_right), θ ~ N(0, 1)."""
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(n_items)
    left = rng.integers(0, n_items, n_comparisons)
    right = (left + rng.integers(1, n_items, n_comparisons)) % n_items  # never == left
    left_wins = rng.random(n_comparisons) < expit(theta[left] - theta[right])
    winner = np.where(left_wins, left, right)
    loser = np.where(left_wins, right, left)
    return {"theta": theta, "left": left, "right": right, "winner": winner, "loser": loser}


def strongly_connected(n_items: int, winner: np.ndarray, loser: np.ndarray) -> int:
    """Number of strongly connected components of the graph loser → winner (1: the ML exists)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(winner)), (loser, winner)), shape=(n_items, n_items))
    n_components, _ = connected_components(graph.tocsr(), directed=True, connection="strong")
    return int(n_components)


def vi_data(n_queries: int, n_items: int | None, seed: int = VI_SEED) -> dict:
    """Top-1 choices among ``VI_SET_SIZE`` items with ``VI_FEATURES`` features; ``n_items``
    shared items, or (None) items unique to each query. Returns the long table, the item table
    and the true weights."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    m, d = VI_SET_SIZE, VI_FEATURES
    theta = rng.standard_normal(d) / np.sqrt(d)
    if n_items is None:
        n_items = n_queries * m
        members = np.arange(n_items).reshape(n_queries, m)
    else:
        members = rng.integers(0, n_items, (n_queries, m))
        while True:  # redraw the sets that repeat an item
            ordered = np.sort(members, axis=1)
            bad = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
            if not bad.size:
                break
            members[bad] = rng.integers(0, n_items, (bad.size, m))
    X = rng.standard_normal((n_items, d))
    utilities = X[members] @ theta  # (n_queries, m)
    chosen = np.argmax(utilities + rng.gumbel(size=utilities.shape), axis=1)
    rank = np.full((n_queries, m), np.nan)
    rank[np.arange(n_queries), chosen] = 1.0
    long = pd.DataFrame(
        {
            "query": np.repeat(np.arange(n_queries), m),
            "item": members.ravel(),
            "rank": rank.ravel(),
        }
    )
    items = pd.DataFrame(X, columns=[f"x{k:02d}" for k in range(d)])
    items.insert(0, "item", np.arange(n_items))
    return {"long": long, "items": items, "theta": theta, "n_items": n_items}


# --------------------------------------------------------------------------- children
def _count_choix_iterations() -> list[int]:
    """Count the iterations of choix's ILSR/MM loops: each calls the convergence test once."""
    from choix import convergence

    calls = [0]
    original = convergence.NormOfDifferenceTest.__call__

    def counting(self, params, update=True):
        calls[0] += 1
        return original(self, params, update)

    convergence.NormOfDifferenceTest.__call__ = counting
    return calls


def _child_bt(conn, spec: dict) -> None:
    """One timed Bradley–Terry fit in a fresh process (see ``run_isolated``)."""
    try:
        n, kind, reg = spec["n_items"], spec["kind"], spec["reg"]
        data = bt_data(n, spec["n_comparisons"])
        calls = None
        if kind.startswith("choix"):
            import choix

            calls = _count_choix_iterations()
            pairs = np.column_stack([data["winner"], data["loser"]]).tolist()
            function = choix.ilsr_pairwise if kind == "choix_ilsr" else choix.mm_pairwise

            def fit():
                return function(n, pairs, alpha=reg)

        else:
            import pandas as pd

            import crowdbayes as cb

            frame = pd.DataFrame(
                {
                    "left": data["left"],
                    "right": data["right"],
                    "label": data["winner"],  # the preferred item's id
                }
            )
            model = cb.PlackettLuceMM(shape=1.0 + reg, rate=reg)
            if kind == "cb_mm_fit":
                rankings = cb.Rankings.from_pairs(frame)

                def fit():
                    return model.fit(rankings)

            else:

                def fit():
                    return model.fit(cb.Rankings.from_pairs(frame))

        del data
        gc.collect()
        fingerprint = src_fingerprint()
        conn.send(("ready", None))

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with PeakRSS() as mem:
                start, cpu_start = time.perf_counter(), time.process_time()
                result = fit()
                seconds = time.perf_counter() - start
                cpu_seconds = time.process_time() - cpu_start

        if calls is not None:
            log_scores = np.asarray(result, dtype=np.float64)
            iterations, converged = calls[0], True  # choix raises when it does not converge
        else:
            log_scores = model.log_scores_.reindex(pd.RangeIndex(n)).to_numpy()
            iterations, converged = int(model.n_iter_), bool(model.converged_)
        conn.send(
            (
                "ok",
                {
                    "seconds": seconds,
                    "cpu_seconds": cpu_seconds,
                    "hwm_mib": mem.hwm_mib,
                    "polled_mib": mem.polled_mib,
                    "iterations": iterations,
                    "converged": converged,
                    "log_scores": log_scores - np.mean(log_scores),
                    "warnings": sorted({w.category.__name__ for w in caught}),
                    "src": fingerprint,
                },
            )
        )
    except Exception as err:
        conn.send(("error", f"{type(err).__name__}: {str(err)[:300]}"))


def _child_vi(conn, spec: dict) -> None:
    """One timed feature-model fit in a fresh process (see ``run_isolated``)."""
    try:
        import crowdbayes as cb

        data = vi_data(spec["n_queries"], spec["n_items"])
        kind = spec["kind"]
        model = (
            cb.PlackettLuceMAP(eta=VI_ETA) if kind == "cb_map_fit" else cb.PlackettLuceVI(VI_ETA)
        )
        if kind.endswith("_e2e"):
            long, items = data["long"], data["items"]

            def fit():
                return model.fit(long, items=items)

        else:
            rankings = cb.Rankings(data["long"], data["items"])

            def fit():
                return model.fit(rankings)

        theta = data["theta"]
        del data
        gc.collect()
        fingerprint = src_fingerprint()
        conn.send(("ready", None))

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with PeakRSS() as mem:
                start, cpu_start = time.perf_counter(), time.process_time()
                fit()
                seconds = time.perf_counter() - start
                cpu_seconds = time.process_time() - cpu_start

        coef = model.coef_.to_numpy()
        conn.send(
            (
                "ok",
                {
                    "seconds": seconds,
                    "cpu_seconds": cpu_seconds,
                    "hwm_mib": mem.hwm_mib,
                    "polled_mib": mem.polled_mib,
                    "iterations": int(model.n_iter_),
                    "converged": bool(model.converged_),
                    "coef": coef,
                    "coef_sd": model.coef_sd_.to_numpy(),
                    "theta": theta,
                    "lower_bound": getattr(model, "lower_bound_", None),
                    "bound_history": getattr(model, "bound_history_", None),
                    "warnings": sorted({w.category.__name__ for w in caught}),
                    "src": fingerprint,
                },
            )
        )
    except Exception as err:
        conn.send(("error", f"{type(err).__name__}: {str(err)[:300]}"))


# --------------------------------------------------------------------------- measuring
SOURCES: set[str] = set()  # source fingerprints seen by the measured processes


def _measure(child, spec: dict, repeats: int, timeout: float) -> dict:
    result = measure_repeated(child, spec, repeats, timeout, SOURCES)
    if result["status"] == "ok":
        result["converged"] = all(r["converged"] for r in result["runs"])
    return result


def _peak(m: dict) -> float:
    return m["hwm_mib"] if m.get("hwm_mib") is not None else m["polled_mib"]


def _mib(m: dict) -> str:
    if m["status"] != "ok":
        return m["status"]
    return f"{format_mib(_peak(m))} (polled {format_mib(m['polled_mib'])})"


def _secs(m: dict, digits: int = 2) -> str:
    if m["status"] != "ok":
        return m["status"]
    if len(m["runs"]) == 1:
        return f"{m['seconds']:.{digits}f}"
    return (
        f"{m['seconds']:.{digits}f} ({m['min_seconds']:.{digits}f}–{m['max_seconds']:.{digits}f})"
    )


def _cpu(m: dict) -> str:
    return f"{m['cpu_seconds']:.2f}" if m["status"] == "ok" else m["status"]


def _iters(m: dict) -> str:
    return ", ".join(map(str, m.get("iterations_all", []))) or "—"


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _max_diff(a: dict, b: dict) -> float | None:
    if a["status"] != "ok" or b["status"] != "ok":
        return None
    return float(np.max(np.abs(a["log_scores"] - b["log_scores"])))


def _fmt_diff(value: float | None) -> str:
    return "—" if value is None else f"{value:.1e}"


def _scaled(value: int, scale: float, minimum: int) -> int:
    return max(int(round(value * scale)), minimum)


# --------------------------------------------------------------------------- sections
def ml_residual(log_scores: np.ndarray, winner: np.ndarray, loser: np.ndarray) -> float:
    """Largest violation of the maximum-likelihood equations of Bradley–Terry,
    max_i |wins_i − Σ_{comparisons of i} P(i wins)|, in wins (0 at the exact MLE)."""
    from scipy.special import expit

    n = len(log_scores)
    p_winner = expit(log_scores[winner] - log_scores[loser])
    expected = np.bincount(winner, p_winner, n) + np.bincount(loser, 1.0 - p_winner, n)
    return float(np.max(np.abs(np.bincount(winner, minlength=n) - expected)))


def _memory_growth(sizes, results, checks) -> list[str]:
    """Peak memory at both sizes: the table lines; the acceptance lines go to ``checks``."""
    (n0, m0), (n1, m1) = sizes
    cmp_growth, sq_growth = m1 / m0, (n1 / n0) ** 2
    midpoint = float(np.sqrt(cmp_growth * sq_growth))
    dense = n1 * n1 * 8 / 2**20  # one dense items × items float64 matrix, MiB
    mem_rows = []
    for key, (label, _) in BT_FITS.items():
        small, large = results[(n0, m0)][key], results[(n1, m1)][key]
        per_cmp = [
            f"{_peak(f) * 2**20 / mm:.0f}" if f["status"] == "ok" else "—"
            for f, mm in ((small, m0), (large, m1))
        ]
        growth = "—"
        if small["status"] == "ok" and large["status"] == "ok":
            growth = f"{_peak(large) / max(_peak(small), 1e-9):.1f}×"
        mem_rows.append(
            f"| {label} | {_mib(small)} | {_mib(large)} | {per_cmp[0]} | {per_cmp[1]} | {growth} |"
        )
    for key in ("cb_mm_e2e", "cb_mm_fit"):
        small, large = results[(n0, m0)][key], results[(n1, m1)][key]
        what = "end to end" if key.endswith("e2e") else "fit only"
        if small["status"] != "ok" or large["status"] != "ok":
            checks.append(f"FAIL: PlackettLuceMM ({what}) peak memory: a fit did not finish")
            continue
        growth = _peak(large) / max(_peak(small), 1e-9)
        ok = growth <= midpoint and _peak(large) < dense
        checks.append(
            f"{_verdict(ok)}: PlackettLuceMM ({what}) peak memory {n0:,}/{m0:,} → {n1:,}/{m1:,}: "
            f"+{format_mib(_peak(small))} → +{format_mib(_peak(large))} MiB = {growth:.1f}× "
            f"(comparisons ×{cmp_growth:g}, items² ×{sq_growth:g}; target: growth ≤ "
            f"{midpoint:.1f}× = their geometric mean, and below one dense items² float64 "
            f"matrix, {dense:.0f} MiB)"
        )
    return [
        "### Peak memory against problem size",
        "",
        f"Peak memory (MiB) at both sizes, bytes per comparison, and the growth factor; from "
        f"{n0:,}/{m0:,} to {n1:,}/{m1:,} the comparisons grow ×{cmp_growth:g} and items² "
        f"×{sq_growth:g}.",
        "",
        f"| fit | {n0:,} / {m0:,} | {n1:,} / {m1:,} | bytes per comparison ({m0:,}) | "
        f"bytes per comparison ({m1:,}) | growth |",
        "|---|---|---|---|---|---|",
        *mem_rows,
        "",
    ]


def run_bt(args) -> tuple[list[str], list[str], list[str]]:
    """The Bradley–Terry section: report lines, acceptance lines, notes."""
    sizes = [(_scaled(n, args.scale, 3), _scaled(m, args.scale, 10)) for n, m in BT_SIZES]
    bt_fits = BT_FITS
    if args.target:
        sizes = sizes[-1:]
        bt_fits = {key: BT_FITS[key] for key in TARGET_FITS}
    rows, checks, notes, graph_lines = [], [], [], []
    results: dict[tuple[int, int], dict[str, dict]] = {}
    any_reg = False
    for n, m in sizes:
        data = bt_data(n, m)
        n_components = strongly_connected(n, data["winner"], data["loser"])
        wins = np.bincount(data["winner"], minlength=n)
        seen = wins + np.bincount(data["loser"], minlength=n)
        reg = 0.0 if n_components == 1 else args.reg
        any_reg = any_reg or reg > 0
        graph_lines.append(
            f"- {n:,} items / {m:,} comparisons: comparisons per item {seen.min()}–{seen.max()} "
            f"(mean {2 * m / n:.0f}), wins per item {wins.min()}–{wins.max()}; strongly connected "
            f"components of the graph loser → winner: {n_components} → "
            + (
                "the maximum-likelihood estimate exists; choix `alpha=0`, crowdbayes "
                "`PlackettLuceMM(shape=1, rate=0)`"
                if reg == 0
                else f"**not strongly connected, so no maximum-likelihood estimate: regularised "
                f"with choix `alpha={reg:g}` and crowdbayes `PlackettLuceMM(shape={1 + reg:g}, "
                f"rate={reg:g})`** (choix MM's alpha is the same pseudo-count, ILSR's adds "
                "pseudo-rates to its Markov chain, so the estimates differ by O(alpha))"
            )
        )
        print(f"BT {n:,} items / {m:,} comparisons (reg={reg:g})", flush=True)
        fits = {}
        for key, (label, library) in bt_fits.items():
            spec = {
                "kind": key,
                "n_items": n,
                "n_comparisons": m,
                "reg": reg,
                "label": f"{label} {n}/{m}",
            }
            repeats = args.choix_repeats if library == "choix" else args.repeats
            fits[key] = _measure(_child_bt, spec, repeats, args.timeout)
            if fits[key]["status"] == "ok":
                fits[key]["residual"] = ml_residual(
                    fits[key]["log_scores"], data["winner"], data["loser"]
                )
        del data
        results[(n, m)] = fits
        ilsr, choix_mm = fits["choix_ilsr"], fits.get("choix_mm", _NOT_RUN)
        for key, (label, _) in bt_fits.items():
            f = fits[key]
            time_ratio = mem_ratio = mm_ratio = "—"
            if key.startswith("cb") and f["status"] == "ok":
                if ilsr["status"] == "ok":
                    time_ratio = f"{ilsr['seconds'] / f['seconds']:.1f}×"
                    mem_ratio = f"{_peak(ilsr) / max(_peak(f), 1e-9):.1f}×"
                else:
                    time_ratio = f"> {args.timeout / f['seconds']:.0f}× ({ilsr['status']})"
                if choix_mm["status"] == "ok":
                    mm_ratio = f"{choix_mm['seconds'] / f['seconds']:.1f}×"
                elif choix_mm is not _NOT_RUN:
                    mm_ratio = f"> {args.timeout / f['seconds']:.0f}× ({choix_mm['status']})"
            vs_ilsr = _fmt_diff(_max_diff(f, ilsr)) if key != "choix_ilsr" else "—"
            vs_mm = "—" if key == "choix_mm" else _fmt_diff(_max_diff(f, choix_mm))
            residual = f"{f['residual']:.1e}" if f["status"] == "ok" else "—"
            rows.append(
                f"| {n:,} | {m:,} | {label} | {_secs(f)} | {_cpu(f)} | {_mib(f)} | {_iters(f)} | "
                f"{time_ratio} | {mm_ratio} | {mem_ratio} | {vs_ilsr} | {vs_mm} | {residual} |"
            )
            if f["status"] != "ok":
                notes.append(f"- {n:,}/{m:,}, {label}: {f['status']}: {f['detail']}")
            elif not f["converged"]:
                notes.append(f"- {n:,}/{m:,}, {label}: did not converge")
            if f["status"] == "ok" and f["warnings"]:
                notes.append(f"- {n:,}/{m:,}, {label}: warnings {', '.join(f['warnings'])}")
        # agreement (the two crowdbayes fits give the same scores; the fit-only one is checked)
        cb = fits["cb_mm_fit"]
        if cb["status"] == "ok":
            for ref_key, limit in (("choix_ilsr", AGREE_TOL), ("choix_mm", AGREE_TOL_MM)):
                if ref_key not in fits:
                    continue
                ref = fits[ref_key]
                if ref["status"] != "ok":
                    checks.append(
                        f"n/a: {n:,}/{m:,} agreement with {BT_FITS[ref_key][0]}: {ref['status']}"
                    )
                    continue
                diff = _max_diff(cb, ref)
                if limit is None:
                    checks.append(
                        f"INFO: {n:,}/{m:,} crowdbayes `PlackettLuceMM` vs "
                        f"{BT_FITS[ref_key][0]} at choix's default stopping rule: max |Δ centred "
                        f"log-score| = {diff:.1e}; ML-equation residual {cb['residual']:.1e} "
                        f"vs {ref['residual']:.1e} (choix MM stops early; run to tol 1e-13 it "
                        "agrees to 1e-6, see the unit tests)"
                    )
                    continue
                ok = diff <= limit or reg > 0
                checks.append(
                    f"{_verdict(ok)}: {n:,}/{m:,} crowdbayes `PlackettLuceMM` vs "
                    f"{BT_FITS[ref_key][0]}: max |Δ centred log-score| = {diff:.1e} "
                    f"(target ≤ {limit:g}"
                    + (", not applied: regularised" if reg > 0 else "")
                    + f"); ML-equation residual {cb['residual']:.1e} vs {ref['residual']:.1e}"
                )
        else:
            checks.append(f"FAIL: {n:,}/{m:,} crowdbayes `PlackettLuceMM` fit: {cb['status']}")

    # speed target on the larger size
    n, m = sizes[-1]
    fits = results[(n, m)]
    ilsr = fits["choix_ilsr"]
    for key in ("cb_mm_e2e", "cb_mm_fit"):
        f = fits[key]
        what = "end to end" if key.endswith("e2e") else "fit only"
        if f["status"] != "ok":
            checks.append(f"FAIL: PlackettLuceMM ({what}) {n:,}/{m:,}: {f['status']}")
        elif ilsr["status"] == "ok":
            ratio = ilsr["seconds"] / f["seconds"]
            spread = ""
            if len(f["runs"]) > 1:
                spread = (
                    f" ({ilsr['seconds'] / f['max_seconds']:.0f}–"
                    f"{ilsr['seconds'] / f['min_seconds']:.0f}× over the {len(f['runs'])} "
                    "processes)"
                )
            checks.append(
                f"{_verdict(ratio >= SPEED_TARGET)}: PlackettLuceMM ({what}) {n:,}/{m:,}: "
                f"choix ILSR {ilsr['seconds']:.2f} s / crowdbayes {f['seconds']:.3f} s = "
                f"{ratio:.1f}×{spread} (target ≥ {SPEED_TARGET:g}×)"
            )
        else:
            bound = args.timeout / f["seconds"]
            ok = ilsr["status"] == "timeout" and bound >= SPEED_TARGET
            checks.append(
                f"{_verdict(ok)}: PlackettLuceMM ({what}) {n:,}/{m:,}: choix ILSR "
                f"{ilsr['status']} (> {args.timeout:g} s) / crowdbayes {f['seconds']:.3f} s "
                f"> {bound:.1f}× (target ≥ {SPEED_TARGET:g}×)"
            )

    # memory: grows with the comparisons, not with items squared (both sizes needed)
    memory = [] if args.target else _memory_growth(sizes, results, checks)
    lines = [
        "## Bradley–Terry: maximum likelihood, crowdbayes `PlackettLuceMM` vs choix",
        "",
        f"Data: `bt_data(N, M, seed={BT_SEED})` in this script: θ_i ~ N(0, 1), M uniformly "
        "random pairs of distinct items, the left item winning with probability "
        "σ(θ_left − θ_right).",
        "",
        *graph_lines,
        "",
        "Stopping rules (each library's default): choix ILSR and MM stop when the mean absolute "
        "change of the centred log-scores is ≤ 1e-8; crowdbayes `PlackettLuceMM(tol=1e-10)` when "
        "no log-score moves by more than 1e-10. choix is given a list of `[winner, loser]` "
        "Python ints (built before the clock starts); crowdbayes end to end times "
        "`Rankings.from_pairs(df)` on the `left, right, label` DataFrame (integer ids) plus the "
        "fit; fit only times `PlackettLuceMM().fit(rankings)`. Iterations of choix: calls of its "
        "convergence test (one per iteration). Ratios: choix time (or peak memory) / this fit's "
        "(`> k×` when choix hit the time limit). Δ: max absolute difference of the centred "
        "log-scores between this fit and the named one. ML residual: max_i |wins_i − Σ P(i "
        "wins)| over items, how far the fit is from solving the likelihood equations (0 at the "
        "exact maximum-likelihood estimate), a solver-independent check of which fit is closer.",
        "",
        "| items | comparisons | fit | wall time (s) | CPU time (s) | peak memory (MiB) | "
        "iterations | ILSR time / this | choix MM time / this | ILSR memory / this | "
        "Δ vs ILSR | Δ vs choix MM | ML residual |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        *memory,
    ]
    if any_reg:
        notes.append("- a comparison graph was not strongly connected: see the data lines above")
    return lines, checks, notes


def run_vi(args) -> tuple[list[str], list[str], list[str]]:
    """The feature-model section: report lines, acceptance lines, notes."""
    n_queries = _scaled(VI_QUERIES, args.scale, 10)
    variants = (
        ("shared", _scaled(VI_SHARED_ITEMS, args.scale, 2 * VI_SET_SIZE)),
        ("unique", None),
    )
    rows, checks, notes = [], [], []
    for name, n_items in variants:
        shown_items = n_items if n_items is not None else n_queries * VI_SET_SIZE
        what = f"{n_queries:,} queries, {shown_items:,} {name} items"
        print(f"VI {what}", flush=True)
        fits = {}
        for key, label in VI_FITS.items():
            spec = {
                "kind": key,
                "n_queries": n_queries,
                "n_items": n_items,
                "label": f"{label} ({name} items)",
            }
            fits[key] = _measure(_child_vi, spec, args.repeats, args.timeout)
        reference = fits["cb_map_fit"]
        for key, label in VI_FITS.items():
            f = fits[key]
            if f["status"] != "ok":
                rows.append(
                    f"| {name} | {shown_items:,} | {n_queries:,} | {label} | {f['status']} | "
                    "| | | | | | | | |"
                )
                notes.append(f"- {what}, {label}: {f['status']}: {f['detail']}")
                continue
            per_iter = f["seconds"] / max(f["iterations"], 1)
            error = f["coef"] - f["theta"]
            rmse = float(np.sqrt(np.mean(error**2)))
            vs_map = "—"
            if key != "cb_map_fit" and reference["status"] == "ok":
                vs_map = f"{np.max(np.abs(f['coef'] - reference['coef'])):.1e}"
            coverage = "—"
            bound = "—"
            if key.startswith("cb_vi"):
                z = 1.6448536269514722  # 90% central interval
                inside = np.abs(error) <= z * f["coef_sd"]
                coverage = f"{inside.mean():.2f}"
                bound = f"{f['lower_bound']:.2f}"
                history = np.asarray(f["bound_history"])
                drops = np.diff(history)
                if len(drops) and drops.min() < -1e-8 * max(1.0, abs(history[-1])):
                    notes.append(
                        f"- {what}, {label}: the bound decreased by up to {-drops.min():.2e}"
                    )
            rows.append(
                f"| {name} | {shown_items:,} | {n_queries:,} | {label} | {_secs(f)} | {_cpu(f)} | "
                f"{_mib(f)} | {_iters(f)} | {'yes' if f['converged'] else '**no**'} | "
                f"{per_iter:.3g} | {bound} | {rmse:.4f} | {coverage} | {vs_map} |"
            )
            if f["warnings"]:
                notes.append(f"- {what}, {label}: warnings {', '.join(f['warnings'])}")
        for key in ("cb_vi_e2e", "cb_vi_fit"):
            f = fits[key]
            kind = "end to end" if key.endswith("e2e") else "fit only"
            if f["status"] != "ok":
                checks.append(f"FAIL: PlackettLuceVI ({kind}) on {what}: {f['status']}")
                continue
            ok = f["seconds"] < VI_TARGET and f["converged"]
            checks.append(
                f"{_verdict(ok)}: PlackettLuceVI(eta={VI_ETA:g}) ({kind}) on {what}: "
                f"{f['seconds']:.2f} s, {f['iterations']} iterations, converged="
                f"{f['converged']} (target: converged in < {VI_TARGET:g} s)"
            )
    lines = [
        f"## Plackett–Luce with {VI_FEATURES} item features: top-1 choices among {VI_SET_SIZE}",
        "",
        f"Data: `vi_data(n_queries, n_items, seed={VI_SEED})` in this script: {n_queries:,} "
        f"queries, each showing {VI_SET_SIZE} distinct items; item features x ~ N(0, I_"
        f"{VI_FEATURES}), true weights θ ~ N(0, I/{VI_FEATURES}) (utilities with sd ≈ 1); the "
        "chosen item drawn with probability softmax(xᵀθ) over the set (the others unranked). "
        "`shared`: the items of a query drawn from a common pool; `unique`: every query has its "
        "own items.",
        "",
        f"`PlackettLuceVI(eta={VI_ETA:g})` (defaults: `tol=1e-6` on √(‖Δξ‖² + ‖Δζ‖²), "
        "`max_iter=500`, Newton inner solver); end to end = `fit(long_table, items=item_table)` "
        "(building the `Rankings` with its feature table included); fit only = `fit(rankings)`. "
        "Time per iteration = wall time / iterations (end to end includes the build). "
        "RMSE = root mean square error of the posterior mean (MAP: the estimate) against the "
        "true θ; 90% coverage = share of the 50 coordinates whose true value lies in the "
        "central 90% posterior interval; Δ vs MAP = max |coef_ − MAP coef_|.",
        "",
        "| items | n items | queries | fit | wall time (s) | CPU time (s) | peak memory (MiB) | "
        "iterations | converged | s per iteration | lower bound | RMSE vs true θ | "
        "90% coverage | Δ vs MAP |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    return lines, checks, notes


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per fit")
    parser.add_argument("--repeats", type=int, default=3, help="processes per crowdbayes fit")
    parser.add_argument("--choix-repeats", type=int, default=1, help="processes per choix fit")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply every size by this (quick checks)"
    )
    parser.add_argument(
        "--reg",
        type=float,
        default=1e-3,
        help="regularisation used on both sides only if a comparison graph is not strongly "
        "connected",
    )
    parser.add_argument(
        "--target",
        action="store_true",
        help="only the speed target's rows: the larger size, choix ILSR and the two "
        "PlackettLuceMM fits (no choix MM, no memory growth); implies --only bt",
    )
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.target:
        args.only = ["bt"]
    if not args.scale > 0:
        parser.error("--scale must be positive")
    if args.repeats < 1 or args.choix_repeats < 1:
        parser.error("--repeats and --choix-repeats must be at least 1")
    full = args.scale == 1.0 and set(args.only) == set(SECTIONS) and not args.target
    if args.output is None:
        if full:
            args.output = RESULTS / "rank_speed.md"
        else:
            tag = f"scale{args.scale:g}-" + "-".join(sorted(args.only)) + "-target" * args.target
            args.output = Path(tempfile.gettempdir()) / f"rank_speed-{tag}.md"
    exit_on_sigterm()
    started = time.perf_counter()

    body, checks, notes = [], [], []
    if "bt" in args.only:
        lines, more_checks, more_notes = run_bt(args)
        body += lines
        checks += more_checks
        notes += more_notes
    if "vi" in args.only:
        lines, more_checks, more_notes = run_vi(args)
        body += lines
        checks += more_checks
        notes += more_notes

    total = time.perf_counter() - started
    title = "Plackett–Luce speed: crowdbayes vs choix on Bradley–Terry data, and VI with features"
    scale_note = (
        []
        if args.scale == 1.0
        else [
            f"- **scaled run (`--scale {args.scale:g}`): every size is {args.scale:g}× the "
            "benchmark's; the acceptance targets are meant for the full sizes**"
        ]
    )
    details = [
        f"- choix {_version('choix')}",
        *fingerprint_lines(SOURCES),
        *scale_note,
        f"- load average at the end {load_average()}; total run time {total:.0f} s",
        "- each fit in a fresh 'spawn' subprocess with a time limit of "
        f"{args.timeout:g} s (counted after imports and data generation); wall times are medians "
        "over the processes (min–max in brackets); CPU time = process time of the fit (all "
        f"threads); crowdbayes fits repeated {args.repeats}×, choix fits {args.choix_repeats}×",
        "- peak memory (MiB): peak RSS increase during the fit over the RSS just before it, in "
        "the fit's own process: kernel high-water mark VmHWM after the fit (reset via "
        "/proc/self/clear_refs just before), with the largest VmRSS seen by a 2 ms polling "
        "thread in brackets",
    ]
    report = [
        *body,
        "## Acceptance targets",
        "",
        "```",
        *checks,
        "```",
        "",
        "## Notes",
        "",
        *(notes or ["- none"]),
    ]
    write_markdown_report(args.output, title, report, details)
    print("\n".join(checks))
    return 0


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
