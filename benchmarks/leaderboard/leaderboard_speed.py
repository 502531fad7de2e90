"""Leaderboard speed at arena size against evalica (issue 44), in one run.

Data: simulated battles (:func:`crowdbayes.models.comparisons.simulate_battles`):
``--n-battles`` (2,000,000) battles between ``--n-models`` (200) models of very uneven,
Zipf-like popularity (probability ∝ rank⁻¹), Davidson ties (ν = 0.26: about 10%), four
standard-normal style covariates, written once to a CSV file. Each measurement runs in a fresh
process (``_common.run_isolated``), with its peak resident memory above the process's baseline:

0. **the whole command against the plain script**: ``crowdbayes leaderboard fit CSV -o
   board.csv --interval laplace --robustness 0 --tie-model half`` (scores only: import, read,
   count, fit, Laplace intervals and ranks, the board written) against
   ``evalica_fit_csv.py`` (``pandas.read_csv`` of the whole CSV + ``evalica.bradley_terry`` +
   the scores written), each a fresh process, ``--command-runs`` times in turn (A B A B ...)
   after one warm-up each; wall and CPU (user + system) seconds from ``os.wait4``, medians and
   the ratio per pair. Both run with Python's bytecode cache, as an installed package has it
   (``pip`` compiles it at install): the warm-ups write it to a temporary
   ``PYTHONPYCACHEPREFIX`` (``PYTHONDONTWRITEBYTECODE`` dropped), so a checkout whose
   ``__pycache__`` is stale or absent does not recompile the modules in every counted run;
1. **fit from the CSV, no covariates** — ``Leaderboard(tie_model="half").fit(Battles(csv))``
   (read, count, Newton, Laplace intervals and ranks) against a script doing
   ``pandas.read_csv(csv)`` + ``evalica.bradley_terry`` (half-win ties, its defaults), and the
   library fit alone on battles already read;
2. **equality**: centred log scores of evalica (``tolerance=1e-12``, a high iteration limit)
   against ours (``tie_model="half"``, no prior);
3. **bootstrap**: ``--n-bootstrap`` (1,000) seeded multinomial replicates over the counted
   battles, refitted (``interval="bootstrap"``, the fit included), against
   ``evalica.bootstrap(evalica.bradley_terry, ..., n_resamples=--evalica-resamples)``
   extrapolated linearly to the same number of replicates (it resamples the 2M battles: one
   replicate costs about one full fit, so 1,000 of them take hours);
4. **with the four covariates**: the fit from the CSV, and ``--cov-bootstrap`` (default
   ``--n-bootstrap``) bootstrap replicates — the k-step bootstrap (two Newton steps from the
   full-data mode with its Hessian fixed, :func:`._leaderboard_intervals.kstep_draws`), as
   every battle is its own counted row —, extrapolated to ``--n-bootstrap`` if fewer.

With ``--sparse-only``, instead: **the sparse path at scale** — ``--sparse-items`` (100,000)
models, ``--sparse-battles`` (10,000,000) battles between uniformly random distinct pairs (every
model in about 200 battles; true scores N(0, 1), Davidson ties ν = 0.26), generated directly;
the time to read them into :class:`~crowdbayes.data.battles.Battles`, and the time of
``Leaderboard(min_battles=0).fit(battles)`` (count, Newton by conjugate gradients, Laplace
variances from the sparse Hessian, rank draws), the scores' error and the intervals' coverage of the
true scores; written to ``results/leaderboard_sparse.md``.

Usage (from the repository root; an idle machine)::

    .venv/bin/python benchmarks/leaderboard/leaderboard_speed.py \\
        [--output benchmarks/leaderboard/results/leaderboard_speed.md]
    .venv/bin/python benchmarks/leaderboard/leaderboard_speed.py --sparse-only
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common

from _common import (  # noqa: E402
    PeakRSS,
    load_average,
    markdown_table,
    results_dir,
    run_isolated,
    write_markdown_report,
)

RESULTS = results_dir(__file__)
COVARIATES = [f"style_{j}" for j in range(4)]
COEF = (0.3, -0.2, 0.1, 0.0)
#: Davidson tie strength giving about 10% ties on this board
TIE_STRENGTH = 0.26


# ------------------------------------------------------------------------------ children
def _evalica_winners(frame: pd.DataFrame):
    import evalica

    codes = {"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    return frame["winner"].map(codes)


def _child(conn, spec: dict) -> None:
    """One measurement (``spec["task"]``) in a fresh process: sends ``ready``, then
    ``("ok", {"seconds", "peak_mib", ...})``."""
    warnings.simplefilter("ignore")
    import evalica

    from crowdbayes.data import Battles
    from crowdbayes.models.comparisons import Leaderboard

    task, csv = spec["task"], spec["csv"]
    extra: dict = {}
    prepared = None
    if task in ("ours_fit", "ours_bootstrap", "ours_cov_bootstrap"):
        covariates = COVARIATES if task == "ours_cov_bootstrap" else None
        prepared = Battles(csv, covariates=covariates)
        prepared.counts()
    if task in ("evalica_bootstrap", "equality"):
        prepared = pd.read_csv(csv, usecols=["model_a", "model_b", "winner"])
    conn.send(("ready", None))
    with PeakRSS() as peak:
        start, cpu = time.perf_counter(), time.process_time()
        if task == "ours_fit_csv":
            model = Leaderboard(tie_model="half").fit(Battles(csv))
            extra["iterations"] = model.n_iter_
        elif task == "evalica_fit_csv":  # the plain script: read the CSV, fit
            frame = pd.read_csv(csv)
            result = evalica.bradley_terry(
                frame["model_a"], frame["model_b"], _evalica_winners(frame)
            )
            extra["iterations"] = int(result.iterations)
        elif task == "ours_fit":
            model = Leaderboard(tie_model="half").fit(prepared)
            extra["iterations"] = model.n_iter_
        elif task == "ours_bootstrap":
            Leaderboard(tie_model="half").fit(prepared)
            extra["fit_seconds"] = time.perf_counter() - start
            Leaderboard(
                tie_model="half", interval="bootstrap", n_bootstrap=spec["n"], random_state=0
            ).fit(prepared)
        elif task == "evalica_bootstrap":
            evalica.bootstrap(
                evalica.bradley_terry,
                prepared["model_a"],
                prepared["model_b"],
                _evalica_winners(prepared),
                n_resamples=spec["n"],
                bootstrap_method="percentile",
                random_state=0,
            )
        elif task == "ours_cov_fit_csv":
            model = Leaderboard().fit(Battles(csv, covariates=COVARIATES))
            extra["style"] = model.style_["coef"].round(4).tolist()
            extra["scale"] = Battles(csv, covariates=COVARIATES).covariate_scale.tolist()
        elif task == "ours_cov_bootstrap":
            extra["rows"] = prepared.counts().n_rows
            Leaderboard().fit(prepared)
            extra["fit_seconds"] = time.perf_counter() - start
            Leaderboard(interval="bootstrap", n_bootstrap=spec["n"], random_state=0).fit(prepared)
        elif task == "equality":
            result = evalica.bradley_terry(
                prepared["model_a"],
                prepared["model_b"],
                _evalica_winners(prepared),
                tolerance=1e-12,
                limit=1_000_000,
            )
            ours = Leaderboard(tie_model="half").fit(Battles(csv)).utility_["mean"]
            theirs = np.log(result.scores.reindex(ours.index))
            extra["max_abs_diff"] = float(np.abs(ours - (theirs - theirs.mean())).max())
            extra["evalica_iterations"] = int(result.iterations)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak_mib = peak.hwm_mib if peak.hwm_mib is not None else peak.polled_mib
    conn.send(("ok", {"seconds": seconds, "cpu": cpu, "peak_mib": peak_mib, **extra}))


def _process_times(command: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of ``command`` run as a fresh process in ``cwd``."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(command)}")
    return wall, usage.ru_utime + usage.ru_stime


def whole_commands(csv: Path, runs: int) -> dict:
    """The command against the plain evalica script, in turn, after a warm-up each."""
    out = csv.parent
    ours = [
        str(Path(sys.executable).with_name("crowdbayes")),
        *("leaderboard", "fit", csv.name, "-o", "board.csv", "--force"),
        *("--interval", "laplace", "--robustness", "0", "--tie-model", "half"),
    ]
    script = Path(__file__).resolve().with_name("evalica_fit_csv.py")
    theirs = [sys.executable, str(script), csv.name, "evalica_scores.csv"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(out / "pycache")  # written by the warm-ups (module doc)
    _process_times(ours, out, env), _process_times(theirs, out, env)
    pairs = []
    for i in range(runs):
        pairs.append((_process_times(ours, out, env), _process_times(theirs, out, env)))
        print(f"  command [{i + 1}/{runs}]: {pairs[-1]}", flush=True)
    median = statistics.median
    return {
        "commands": (
            " ".join(["crowdbayes", *ours[1:]]),
            " ".join(["python", "benchmarks/leaderboard/evalica_fit_csv.py", *theirs[2:]]),
        ),
        "wall": (median(p[0][0] for p in pairs), median(p[1][0] for p in pairs)),
        "cpu": (median(p[0][1] for p in pairs), median(p[1][1] for p in pairs)),
        "wall_ratio": median(p[1][0] / p[0][0] for p in pairs),
        "cpu_ratio": median(p[1][1] / p[0][1] for p in pairs),
    }


def measure(task: str, csv: Path, repeats: int, n: int = 0, timeout: float = 3600) -> dict:
    runs = []
    for i in range(repeats):
        status, payload = run_isolated(_child, ({"task": task, "csv": str(csv), "n": n},), timeout)
        if status != "ok":
            raise SystemExit(f"{task}: {status}: {payload}")
        runs.append(payload)
        print(
            f"  {task} [{i + 1}/{repeats}]: {payload['seconds']:.2f} s "
            f"(CPU {payload['cpu']:.2f} s)",
            flush=True,
        )
    best = min(runs, key=lambda r: r["seconds"])
    return {**best, "median": float(np.median([r["seconds"] for r in runs])), "runs": len(runs)}


# ------------------------------------------------------------------------------ sparse path
def sparse_battles(n_items: int, n_battles: int, seed: int = 0):
    """Battles between uniformly random distinct pairs, as categorical columns, and the true
    centred scores."""
    from crowdbayes.models.comparisons._davidson import outcome_log_probs

    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(n_items)
    scores -= scores.mean()
    a = rng.integers(0, n_items, n_battles)
    b = (a + rng.integers(1, n_items, n_battles)) % n_items
    cumulative = np.cumsum(
        np.exp(outcome_log_probs(scores[a] - scores[b], np.log(TIE_STRENGTH))), 0
    )
    outcome = (rng.random(n_battles) > cumulative[:-1]).sum(axis=0)
    ids = pd.Index([f"m{i:06d}" for i in range(n_items)])
    frame = pd.DataFrame(
        {
            "model_a": pd.Categorical.from_codes(a, ids),
            "model_b": pd.Categorical.from_codes(b, ids),
            "winner": pd.Categorical.from_codes(outcome, ["model_a", "model_b", "tie"]),
        }
    )
    return frame, pd.Series(scores, index=ids)


def sparse_main(args) -> None:
    import resource

    from crowdbayes.data.battles import Battles
    from crowdbayes.models.comparisons import Leaderboard

    load_start = load_average()
    start = time.perf_counter()
    frame, truth = sparse_battles(args.sparse_items, args.sparse_battles)
    made = time.perf_counter() - start
    start = time.perf_counter()
    battles = Battles(frame)
    read = time.perf_counter() - start
    del frame
    model = Leaderboard(min_battles=0, random_state=0)
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(battles)
    fit, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
    board = model.board_
    error = board["score"] - truth.loc[board.index]
    covered = (board["lower"] <= truth.loc[board.index]) & (
        truth.loc[board.index] <= board["upper"]
    )
    sd = model.utility_["sd"]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"fit {fit:.1f} s", flush=True)
    lines = [
        f"- data: {args.sparse_items:,} models, {args.sparse_battles:,} battles between uniformly "
        f"random distinct pairs (about {2 * args.sparse_battles / args.sparse_items:.0f} per "
        f"model), Davidson ties ν = {TIE_STRENGTH}; generated in {made:.1f} s, read into "
        f"`Battles` in {read:.1f} s.",
        f"- **fit with Laplace intervals** (`Leaderboard(min_battles=0).fit(battles)`: count, "
        f"Newton by conjugate gradients, score variances from the sparse Hessian, "
        f"{len(model._draws)} rank draws): **{fit:.1f} s** wall, {fit_cpu:.1f} s CPU; sparse "
        f"path: {model.sparse_path_}; Newton steps: {model.n_iter_} (converged: "
        f"{model.converged_}).",
        f"- score variances: Hutchinson estimate with a Neumann control variate; largest "
        f"relative standard error of a variance {model.variance_error_:.2%}.",
        f"- against the true scores: RMSE {np.sqrt(np.mean(error**2)):.4f}, mean Laplace sd "
        f"{sd.mean():.4f}; 90% intervals cover {covered.mean():.3f} of the true scores.",
        f"- peak resident memory of the process (data included): {peak:.1f} GiB.",
        f"- load average at the start: {load_start}; at the end: {load_average()}.",
    ]
    write_markdown_report(
        args.output or str(RESULTS / "leaderboard_sparse.md"),
        "Leaderboard sparse path at scale (issue 44)",
        lines,
        echo=True,
    )


# ------------------------------------------------------------------------------ main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-battles", type=int, default=2_000_000)
    parser.add_argument("--n-models", type=int, default=200)
    parser.add_argument("--n-bootstrap", type=int, default=1000)
    parser.add_argument("--evalica-resamples", type=int, default=5)
    parser.add_argument("--cov-bootstrap", type=int, default=None)
    parser.add_argument("--command-runs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=None)
    parser.add_argument("--sparse-only", action="store_true")
    parser.add_argument("--sparse-items", type=int, default=100_000)
    parser.add_argument("--sparse-battles", type=int, default=10_000_000)
    args = parser.parse_args()
    if args.sparse_only:
        return sparse_main(args)
    args.output = args.output or str(RESULTS / "leaderboard_speed.md")
    if args.cov_bootstrap is None:
        args.cov_bootstrap = args.n_bootstrap
    load_start = load_average()

    from crowdbayes.models.comparisons import simulate_battles

    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "battles.csv"
        start = time.perf_counter()
        sim = simulate_battles(
            args.n_models,
            args.n_battles,
            popularity=1.0,
            coef=COEF,
            tie_strength=TIE_STRENGTH,
            random_state=0,
        )
        sim.battles.to_csv(csv, index=False)
        ties = float((sim.battles["winner"] == "tie").mean())
        print(
            f"data: {args.n_battles} battles, {ties:.1%} ties, {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        del sim
        r = args.repeats
        commands = whole_commands(csv, args.command_runs)
        res = {
            "ours_fit_csv": measure("ours_fit_csv", csv, r),
            "evalica_fit_csv": measure("evalica_fit_csv", csv, r),
            "ours_fit": measure("ours_fit", csv, r),
            "equality": measure("equality", csv, 1),
            "ours_bootstrap": measure("ours_bootstrap", csv, r, args.n_bootstrap),
            "evalica_bootstrap": measure("evalica_bootstrap", csv, 1, args.evalica_resamples),
            "ours_cov_fit_csv": measure("ours_cov_fit_csv", csv, r),
            "ours_cov_bootstrap": measure("ours_cov_bootstrap", csv, 1, args.cov_bootstrap),
        }

    per_ev = res["evalica_bootstrap"]["seconds"] / args.evalica_resamples
    ev_boot = per_ev * args.n_bootstrap
    # the bootstrap children fit once without, then once with the replicates: the replicates'
    # own time is the difference
    boot = res["ours_bootstrap"]
    boot_only = boot["seconds"] - 2 * boot["fit_seconds"]
    cov = res["ours_cov_bootstrap"]
    cov_only = cov["seconds"] - 2 * cov["fit_seconds"]
    cov_boot = cov_only / args.cov_bootstrap * args.n_bootstrap
    scales = res["ours_cov_fit_csv"]["scale"]
    truth = [round(c * s, 4) for c, s in zip(COEF, scales, strict=True)]
    rows = [
        ("fit from CSV, no covariates (half ties)", res["ours_fit_csv"], res["evalica_fit_csv"]),
        ("fit only (battles read)", res["ours_fit"], None),
        (f"{args.n_bootstrap} bootstrap replicates (+ 2 fits)", res["ours_bootstrap"], None),
        ("fit from CSV, 4 covariates (Davidson ties)", res["ours_cov_fit_csv"], None),
    ]
    table = pd.DataFrame(
        [
            {
                "measurement": name,
                "crowdbayes s (best)": ours["seconds"],
                "median s": ours["median"],
                "CPU s": ours["cpu"],
                "peak MiB": ours["peak_mib"],
                "evalica s": theirs["seconds"] if theirs else float("nan"),
                "evalica CPU s": theirs["cpu"] if theirs else float("nan"),
                "evalica peak MiB": theirs["peak_mib"] if theirs else float("nan"),
                "ratio evalica / ours": theirs["seconds"] / ours["seconds"]
                if theirs
                else float("nan"),
            }
            for name, ours, theirs in rows
        ]
    )
    (ours_cmd, their_cmd), (ours_wall, their_wall) = commands["commands"], commands["wall"]
    ours_cpu, their_cpu = commands["cpu"]
    lines = [
        f"**The whole command** (scores only), {args.command_runs} fresh processes each in turn "
        "after a warm-up (which writes both sides' bytecode cache, as an install has it), "
        "medians (wall; CPU = user + system):",
        "",
        f"- A: `{ours_cmd}`: {ours_wall:.2f} s wall, {ours_cpu:.2f} s CPU",
        f"- B: `{their_cmd}`: {their_wall:.2f} s wall, {their_cpu:.2f} s CPU",
        f"- B / A per pair (median): wall {commands['wall_ratio']:.2f}×, "
        f"CPU {commands['cpu_ratio']:.2f}×",
        "",
        f"{args.n_battles:,} simulated battles, {args.n_models} models (Zipf-like popularity), "
        f"{ties:.1%} ties, 4 style covariates; best of {args.repeats} fresh processes "
        "(median beside it; CPU s: the process's CPU time in the best run, less sensitive to "
        "other load on the machine); peak = resident memory above the process's baseline.",
        "",
        markdown_table(table.set_index("measurement"), digits=2),
        "",
        f"- **bootstrap**: {args.n_bootstrap} replicates in {boot_only:.2f} s (the row above "
        f"less two fits of {boot['fit_seconds']:.2f} s); evalica.bootstrap: "
        f"{args.evalica_resamples} resamples in {res['evalica_bootstrap']['seconds']:.1f} s "
        f"(CPU {res['evalica_bootstrap']['cpu']:.1f} s), "
        f"{per_ev:.1f} s each, so {args.n_bootstrap} ≈ {ev_boot:.0f} s (extrapolated): "
        f"ratio ≈ {ev_boot / boot_only:.0f}×.",
        f"- **with covariates**: {args.cov_bootstrap} k-step bootstrap replicates (two "
        "Newton steps each from the full-data mode, its Hessian held fixed; every one of the "
        f"{cov['rows']:,} battles is its own counted row) in {cov_only:.1f} s (the child "
        f"{cov['seconds']:.1f} s, CPU {cov['cpu']:.1f} s, two fits of "
        f"{cov['fit_seconds']:.1f} s included)"
        + (
            f", so {args.n_bootstrap} ≈ {cov_boot:.0f} s (extrapolated)."
            if args.cov_bootstrap != args.n_bootstrap
            else "."
        ),
        f"- **equality** with evalica (`tolerance=1e-12`, "
        f"{res['equality']['evalica_iterations']} iterations): largest |difference| of the "
        f"centred log scores = {res['equality']['max_abs_diff']:.2e}.",
        f"- style coefficients (per sd of the difference): {res['ours_cov_fit_csv']['style']}; "
        f"true: {truth}.",
        f"- Newton steps (half ties, no covariates): {res['ours_fit']['iterations']}; "
        f"evalica iterations at its defaults: {res['evalica_fit_csv']['iterations']}.",
        f"- load average at the start: {load_start}; at the end: {load_average()}.",
    ]
    write_markdown_report(
        args.output, "Leaderboard speed against evalica (issue 44)", lines, echo=True
    )


if __name__ == "__main__":
    main()
