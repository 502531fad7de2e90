"""Leaderboard against arena-rank (the arena's own JAX ranking library, from the package index) on
the same battles, in one run (issue 44).

arena-rank pins its own jax and numpy versions, so it lives in a virtual environment of its own
and runs as a subprocess of this script (``--arena-python``). Create that environment once::

    python3.11 -m venv /work/venvs/arena-rank
    /work/venvs/arena-rank/bin/pip install arena-rank

Data: the battles of ``leaderboard_speed.py`` (``make_battles_csv.py``: ``--n-battles``
(2,000,000) battles, ``--n-models`` (200) models of Zipf-like popularity, Davidson ties ν = 0.26
— about 10% —, four standard-normal style covariates, seed 0), written once to a CSV file that
both sides read. Each measurement is a fresh process (this script with ``--child``; arena-rank's
under its own Python), best of ``--repeats``; both sides single-threaded (``OMP_NUM_THREADS=1``
and XLA's CPU thread pool off: ``XLA_FLAGS``); JAX's 64-bit mode is on (arena-rank sets it).

What arena-rank does (``arena_rank 0.1.1``):

- ``BradleyTerry``: the half-win Bradley–Terry likelihood (a tie is outcome 0.5), no penalty,
  fitted by L-BFGS (optax; ``ftol = gtol = 1e-9``, at most 1,000 iterations) on the rows
  deduplicated by ``PairDataset.from_pandas``, from all ratings 0 (so they stay centred: the
  gradient sums to 0); Elo scale ``400 / ln 10`` per logit around 1000. Sandwich intervals
  :math:`H^{-1} J H^{-1}` with ``1e-5·N`` added to the Hessian's diagonal (its null direction
  made invertible); bootstrap: multinomial counts over the deduplicated rows, each replicate
  refitted by L-BFGS from 0 in a ``multiprocessing`` pool.
- ``ContextualBradleyTerry`` (style control): every battle its own row, features z-scored
  (population sd), the same half-win likelihood with ``x·β`` added to the logit; by default
  inverse pair-frequency weights (``1 / max(pair count, 50)``, normalised to mean 1) and an L2
  penalty ``reg/2·|β|²`` on the *mean* loss (``reg = 1``: per battle, as strong as a prior of
  sd 1 on each coefficient from every battle). Sandwich intervals as above (``hessian_reg =
  1e-5`` on the mean loss's Hessian).

So the comparison of scores is (1) without covariates, arena-rank's defaults against
``Leaderboard(tie_model="half")`` (no prior, centred): the same maximum-likelihood problem;
(2) with the four covariates, ``ContextualBradleyTerry(reg=0)`` on an unweighted dataset
(``reweighted=False``) against ``Leaderboard(tie_model="half")`` with the covariates: again the
same problem; its defaults (weights and penalty) are shown beside for the coefficients they
give. Scores are compared centred, in logits. Intervals: both sides' sandwich at 95% (arena-rank's
default level), compared as standard deviations of the centred scores.

Usage (from the repository root; an idle machine)::

    .venv/bin/python benchmarks/leaderboard/arena_rank_compare.py \\
        [--arena-python /work/venvs/arena-rank/bin/python] [--n-battles 2000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# XLA's CPU backend: one thread (the measurement is single-threaded on both sides)
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

HERE = Path(__file__).resolve().parent
ARENA_PYTHON = "/work/venvs/arena-rank/bin/python"
#: the interval level of the comparison (arena-rank's default significance 0.05)
LEVEL = 0.95
#: Elo points per logit (arena-rank's scale 400, base 10)
ELO = 400 / math.log(10)


# ------------------------------------------------------------------------------ children
class _Clock:
    """Wall and CPU seconds of the stages of a measurement."""

    def __init__(self, out: dict) -> None:
        self.out = out

    def start(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def stop(self, name: str) -> None:
        self.out[f"{name}_s"] = time.perf_counter() - self.wall
        self.out[f"{name}_cpu_s"] = time.process_time() - self.cpu


def _arena_child(task: str, csv: str, covariates: list[str], n_bootstrap: int) -> dict:
    """One arena-rank measurement (runs under arena-rank's Python: imports nothing of ours)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import pandas as pd
    from arena_rank.models.bradley_terry import BradleyTerry, fit_single_bootstrap_sample
    from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
    from arena_rank.utils.data_utils import ContextualPairDataset, PairDataset

    def ready(tree):
        return jax.tree_util.tree_map(lambda x: x.block_until_ready(), tree)

    out: dict = {}
    clock = _Clock(out)
    clock.start()
    # "_tight": converged far beyond the defaults (no relative-change stop, gradient 1e-11)
    tight = {"ftol": 0.0, "gtol": 1e-11, "max_iter": 20_000} if task.endswith("_tight") else {}
    if task.startswith("bt"):
        frame = pd.read_csv(csv, usecols=["model_a", "model_b", "winner"])
        dataset = PairDataset.from_pandas(frame)
        ready(dataset.counts)

        def model():
            return BradleyTerry(n_competitors=len(dataset.competitors), **tight)

    else:
        frame = pd.read_csv(csv, usecols=["model_a", "model_b", "winner", *covariates])
        matched = task != "cbt_default"
        dataset = ContextualPairDataset.from_pandas(frame, covariates, reweighted=not matched)
        ready(dataset.features)

        def model():
            reg = 0.0 if matched else 1.0
            return ContextualBradleyTerry(
                len(dataset.competitors), len(covariates), reg=reg, **tight
            )

    clock.stop("read")
    fitted = model()
    clock.start()
    ready(fitted.fit(dataset).params)
    clock.stop("fit_cold")  # the first fit: JIT compilation included
    if tight:  # fitted once
        out["fit_s"], out["fit_cpu_s"] = out["fit_cold_s"], out["fit_cold_cpu_s"]
    else:
        fitted = model()
        clock.start()
        ready(fitted.fit(dataset).params)
        clock.stop("fit")
    clock.start()
    if task == "bt_bootstrap":
        # compute_ratings_and_cis(ci_method="bootstrap") maps fit_single_bootstrap_sample over
        # a fork-started multiprocessing pool, which deadlocked here after JAX had started its
        # threads (JAX warns of it); the same replicates (its multinomial counts, its
        # function) run here one after the other, in this process
        total = jnp.sum(dataset.counts)
        counts = jax.random.multinomial(
            jax.random.PRNGKey(42),
            n=int(total),
            p=dataset.counts / total,
            shape=(n_bootstrap, dataset.counts.shape[0]),
            dtype=fitted.dtype,
        )
        for i in range(n_bootstrap):
            ready(fit_single_bootstrap_sample(counts[i], fitted, dataset))
        result = {"variances": jnp.full(len(dataset.competitors), jnp.nan)}
    else:
        result = fitted.compute_ratings_and_cis(dataset, 1 - LEVEL, ci_method="sandwich")
        ready(result["rating_lower"])
    clock.stop("interval")
    if task != "bt_bootstrap":  # its sandwich without the ridge (pseudo-inverse instead)
        out["sd_no_ridge"] = _arena_sd_no_ridge(fitted, dataset).tolist()
    out["ids"] = [str(c) for c in dataset.competitors]
    out["scores"] = np.asarray(fitted.params["ratings"]).tolist()  # logits
    out["sd"] = (np.sqrt(np.asarray(result["variances"])) / ELO).tolist()
    if "coeffs" in fitted.params:
        out["coef"] = np.asarray(fitted.params["coeffs"]).tolist()
    return out


def _arena_sd_no_ridge(fitted, dataset):
    """arena-rank's sandwich sd of the scores (logits) from its own Hessian and gradient
    covariance with ``hessian_reg = 0``, the Hessian pseudo-inverted."""
    import numpy as np

    ratings, n = fitted.params["ratings"], fitted.n_competitors
    if "coeffs" in fitted.params:
        n_obs = dataset.pairs.shape[0]
        H, J = fitted.compute_hessian_and_covariance(
            ratings,
            fitted.params["coeffs"],
            dataset.pairs,
            dataset.features,
            dataset.outcomes,
            dataset.weights,
            fitted.reg,
            0.0,
            n,
            fitted.n_features,
            n_obs,
        )
    else:
        n_obs = 1
        H, J = fitted.compute_hessian_and_covariance(
            ratings,
            dataset.pairs,
            dataset.outcomes,
            dataset.counts,
            dataset.opt_weights,
            0.0,
            n,
        )
    inverse = np.linalg.pinv(np.asarray(H))
    return np.sqrt(np.diag(inverse @ np.asarray(J) @ inverse)[:n] / n_obs)


def _ours_child(task: str, csv: str, covariates: list[str], n_bootstrap: int) -> dict:
    """One crowdbayes measurement (this repository's environment)."""
    import warnings

    import numpy as np
    import pandas as pd

    from crowdbayes.data import Battles
    from crowdbayes.models.comparisons import Leaderboard
    from crowdbayes.models.comparisons._leaderboard_intervals import sandwich_covariance

    warnings.simplefilter("ignore")
    out: dict = {}
    clock = _Clock(out)
    clock.start()
    battles = Battles(csv, covariates=covariates if task == "cbt" else None)
    battles.counts()
    clock.stop("read")
    settings = {"tie_model": "half", "credible_level": LEVEL, "random_state": 0}
    clock.start()
    model = Leaderboard(interval="laplace", **settings).fit(battles)
    clock.stop("fit")  # Newton + Laplace intervals + rank draws
    clock.start()
    if task == "bt_bootstrap":
        Leaderboard(interval="bootstrap", n_bootstrap=n_bootstrap, **settings).fit(battles)
    else:
        model = Leaderboard(interval="sandwich", **settings).fit(battles)
    clock.stop("interval")  # a whole fit with those intervals
    z = _normal_quantile(0.5 + LEVEL / 2)
    board = model.board_
    out["ids"] = [str(i) for i in model.utility_.index]
    out["scores"] = model.utility_["mean"].tolist()
    out["sd"] = ((board["upper"] - board["lower"]) / (2 * z)).reindex(model.utility_.index).tolist()
    if task != "bt_bootstrap":  # the sandwich's own sd (the board's bounds are draws' quantiles)
        n = len(model.item_ids_)
        variance = np.diag(sandwich_covariance(*model._fitted_problem()))[:n]
        exact = pd.Series(np.sqrt(variance), index=model.item_ids_)
        out["sd_exact"] = exact.reindex(model.utility_.index).tolist()
    out["iterations"] = int(model.n_iter_)
    if task == "cbt":
        out["coef"] = model.style_["coef"].tolist()
        out["coef_sd"] = ((model.style_["upper"] - model.style_["lower"]) / (2 * z)).tolist()
        out["covariate_scale"] = np.asarray(battles.covariate_scale).tolist()
    return out


def _normal_quantile(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def child_main(argv: list[str]) -> None:
    """``--child SIDE TASK CSV OUT N_BOOTSTRAP COV1,COV2...``: one measurement, its JSON to OUT."""
    side, task, csv, out, n_bootstrap, covariates = argv
    run = _arena_child if side == "arena" else _ours_child
    result = run(task, csv, covariates.split(","), int(n_bootstrap))
    result["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(out).write_text(json.dumps(result))


# ------------------------------------------------------------------------------ parent
def measure(python: str, side: str, task: str, csv: Path, args, repeats: int) -> dict:
    """Best of ``repeats`` fresh processes (by the fit time); the process's wall and CPU
    seconds beside the child's own timings."""
    from leaderboard_speed import COVARIATES, _process_times

    runs = []
    for i in range(repeats):
        out = csv.parent / f"{side}-{task}-{i}.json"
        command = [python, str(Path(__file__).resolve()), "--child"]
        command += [side, task, str(csv), str(out), str(args.n_bootstrap_of[side])]
        command.append(",".join(COVARIATES))
        wall, cpu = _process_times(command, HERE)
        result = json.loads(out.read_text())
        result.update(process_s=wall, process_cpu_s=cpu)
        runs.append(result)
        print(
            f"  {side} {task} [{i + 1}/{repeats}]: fit {result['fit_s']:.2f} s, intervals "
            f"{result['interval_s']:.2f} s, process {wall:.1f} s (CPU {cpu:.1f} s)",
            flush=True,
        )
    return min(runs, key=lambda r: r["fit_s"] + r["interval_s"])


def agreement(ours: dict, theirs: dict) -> dict:
    """Largest differences of the centred scores (logits) and the sd ratios, by model id."""
    import numpy as np
    import pandas as pd

    a = pd.Series(ours["scores"], index=ours["ids"])
    b = pd.Series(theirs["scores"], index=theirs["ids"]).reindex(a.index)
    sd_b = pd.Series(theirs["sd"], index=theirs["ids"]).reindex(a.index)
    found = {"max_abs": float(np.abs((a - a.mean()) - (b - b.mean())).max())}
    no_ridge = pd.Series(theirs["sd_no_ridge"], index=theirs["ids"]).reindex(a.index)
    exact = pd.Series(ours["sd_exact"], index=ours["ids"])
    board = pd.Series(ours["sd"], index=ours["ids"])
    for name, ratio in (
        ("sd_ratio", sd_b / exact),
        ("sd_ratio_no_ridge", no_ridge / exact),
        ("sd_ratio_board", sd_b / board),
    ):
        found[name] = (float(ratio.min()), float(ratio.median()), float(ratio.max()))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arena-python", default=ARENA_PYTHON)
    parser.add_argument("--n-battles", type=int, default=2_000_000)
    parser.add_argument("--n-models", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-bootstrap", type=int, default=1000, help="our replicates")
    parser.add_argument("--arena-bootstrap", type=int, default=20, help="arena-rank replicates")
    parser.add_argument("--output", default=str(HERE / "results" / "arena_rank_compare.md"))
    args = parser.parse_args()
    if not Path(args.arena_python).exists():
        raise SystemExit(
            f"no Python at {args.arena_python}: create arena-rank's environment (module "
            "docstring) or pass --arena-python"
        )
    args.n_bootstrap_of = {"ours": args.n_bootstrap, "arena": args.arena_bootstrap}
    sys.path.insert(0, str(HERE))  # leaderboard_speed: the data's constants, the timers
    sys.path.insert(0, str(HERE.parent))  # _common
    import pandas as pd
    from leaderboard_speed import COEF

    from _common import load_average, markdown_table, write_markdown_report

    version = subprocess.run(
        [
            args.arena_python,
            "-c",
            "import importlib.metadata as m; print(m.version('arena-rank'), "
            "m.version('jax'), m.version('numpy'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    load_start = load_average()
    me, arena, r = sys.executable, args.arena_python, args.repeats
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "battles.csv"
        clock = time.perf_counter()
        subprocess.run(
            [me, str(HERE / "make_battles_csv.py"), str(csv)]
            + ["--n-battles", str(args.n_battles), "--n-models", str(args.n_models)],
            check=True,
        )
        print(f"data: {args.n_battles:,} battles in {time.perf_counter() - clock:.1f} s")
        res = {
            "ours_bt": measure(me, "ours", "bt", csv, args, r),
            "arena_bt": measure(arena, "arena", "bt", csv, args, r),
            "ours_boot": measure(me, "ours", "bt_bootstrap", csv, args, 1),
            "arena_boot": measure(arena, "arena", "bt_bootstrap", csv, args, 1),
            "ours_cbt": measure(me, "ours", "cbt", csv, args, r),
            "arena_cbt": measure(arena, "arena", "cbt_matched", csv, args, r),
            "arena_cbt_default": measure(arena, "arena", "cbt_default", csv, args, 1),
            "arena_bt_tight": measure(arena, "arena", "bt_tight", csv, args, 1),
            "arena_cbt_tight": measure(arena, "arena", "cbt_tight", csv, args, 1),
        }
    bt = agreement(res["ours_bt"], res["arena_bt"])
    cbt = agreement(res["ours_cbt"], res["arena_cbt"])
    bt_tight = agreement(res["ours_bt"], res["arena_bt_tight"])
    cbt_tight = agreement(res["ours_cbt"], res["arena_cbt_tight"])
    cbt_tight["coef"] = max(
        abs(x - y)
        for x, y in zip(res["ours_cbt"]["coef"], res["arena_cbt_tight"]["coef"], strict=True)
    )

    def both(result, stage):
        wall, cpu = result.get(f"{stage}_s"), result.get(f"{stage}_cpu_s")
        return "" if wall is None else f"{wall:.2f} ({cpu:.2f})"

    def row(name, result):
        return {
            "measurement": name,
            "read + count": both(result, "read"),
            "fit": both(result, "fit"),
            "first fit (JIT)": both(result, "fit_cold"),
            "sandwich": both(result, "interval"),
            "process": f"{result['process_s']:.1f} ({result['process_cpu_s']:.1f})",
            "peak MiB": result["peak_mib"],
        }

    table = pd.DataFrame(
        [
            row("crowdbayes, no covariates", res["ours_bt"]),
            row("arena-rank BradleyTerry", res["arena_bt"]),
            row("crowdbayes, 4 covariates", res["ours_cbt"]),
            row("arena-rank Contextual (reg=0, unweighted)", res["arena_cbt"]),
            row("arena-rank Contextual (defaults)", res["arena_cbt_default"]),
        ]
    ).set_index("measurement")
    ours_boot = res["ours_boot"]["interval_cpu_s"] - res["ours_boot"]["fit_cpu_s"]
    arena_boot = res["arena_boot"]["interval_cpu_s"]
    arena_per = arena_boot / args.arena_bootstrap
    scales = res["ours_cbt"]["covariate_scale"]
    truth = [round(c * s, 4) for c, s in zip(COEF, scales, strict=True)]
    coefs = pd.DataFrame(
        {
            "true (per sd)": truth,
            "crowdbayes": res["ours_cbt"]["coef"],
            "crowdbayes sd": res["ours_cbt"]["coef_sd"],
            "arena-rank (reg=0, unweighted)": res["arena_cbt"]["coef"],
            "arena-rank (defaults: weights, reg=1)": res["arena_cbt_default"]["coef"],
        },
        index=pd.Index([f"style_{j}" for j in range(len(truth))], name="covariate"),
    )
    shrink = math.hypot(*res["arena_cbt"]["coef"]) / math.hypot(*res["arena_cbt_default"]["coef"])
    speed = res["arena_bt"]["fit_cpu_s"] / res["ours_bt"]["fit_cpu_s"]
    speed_cov = res["arena_cbt"]["fit_cpu_s"] / res["ours_cbt"]["fit_cpu_s"]
    lines = [
        f"arena-rank {version[0]} (jax {version[1]}, numpy {version[2]}) in its own "
        f"environment (`{args.arena_python}`); {args.n_battles:,} simulated battles, "
        f"{args.n_models} models (Zipf-like popularity), about 10% ties, 4 style covariates "
        "(`make_battles_csv.py`, the data of `leaderboard_speed.py`); ties as half wins on "
        f"both sides. Each row: best of {args.repeats} fresh processes (1 for the defaults "
        "and the converged rows); single-threaded on both sides. Seconds as *wall (CPU)*: "
        "on a shared machine the CPU seconds are the steadier measure.",
        "",
        "- *read + count*: the CSV read and the battles deduplicated (arena-rank: "
        "`pd.read_csv` + `PairDataset.from_pandas` / `ContextualPairDataset.from_pandas`; "
        "crowdbayes: `Battles(csv).counts()`); *fit*: arena-rank's L-BFGS, JIT already "
        "compiled (the first fit, compilation included, beside it); crowdbayes: "
        "`Leaderboard(tie_model='half').fit` — Newton, Laplace intervals and rank draws "
        "included; *intervals*: arena-rank's sandwich after the fit; crowdbayes: a whole fit "
        f"with `interval='sandwich'` (fit, sandwich, rank draws); both at {LEVEL:.0%}.",
        "",
        markdown_table(table, digits=2),
        "",
        f"- **fit** (CPU seconds): arena-rank / crowdbayes = {speed:.1f}× without covariates, "
        f"{speed_cov:.1f}× with the four covariates. arena-rank's `fit` compiles its L-BFGS "
        "loop again at every call (`lbfgs_minimize` defines the jitted loop inside), so the "
        "second fit costs about what the first does.",
        f"- **scores** (centred logits, same problem): largest |difference| "
        f"{bt['max_abs']:.2e} without covariates ({bt['max_abs'] * ELO:.2e} Elo points), "
        f"{cbt['max_abs']:.2e} with them (arena-rank `reg=0`, unweighted), at arena-rank's "
        "default stopping rule (relative change of the loss below 1e-9: the L-BFGS stops "
        "before the scores of rarely played models settle). Fitted to a gradient of 1e-11 "
        f"(`ftol=0, gtol=1e-11`, {res['arena_bt_tight']['fit_cold_cpu_s']:.1f} and "
        f"{res['arena_cbt_tight']['fit_cold_cpu_s']:.1f} CPU s): {bt_tight['max_abs']:.2e} and "
        f"{cbt_tight['max_abs']:.2e}; style coefficients to {cbt_tight['coef']:.2e}. "
        f"crowdbayes Newton steps: {res['ours_bt']['iterations']} and "
        f"{res['ours_cbt']['iterations']}.",
        f"- **sandwich sd**, arena-rank / crowdbayes over the models (min, median, max): "
        f"{_triple(bt['sd_ratio'])} without covariates, {_triple(cbt['sd_ratio'])} with them; "
        f"at the converged fits {_triple(bt_tight['sd_ratio'])} and "
        f"{_triple(cbt_tight['sd_ratio'])}. crowdbayes's sd here is its sandwich "
        "covariance's own (`M⁻¹JM⁻¹`, centred). arena-rank adds `1e-5·N` to its Hessian's "
        "diagonal before inverting; its own Hessian and gradient covariance without that "
        "ridge (pseudo-inverted) give, at the converged fits, ratios "
        f"{_triple(bt_tight['sd_ratio_no_ridge'])} and "
        f"{_triple(cbt_tight['sd_ratio_no_ridge'])}. Against the half-widths of "
        "crowdbayes's board intervals (quantiles of 2,000 Gaussian draws, so with Monte Carlo "
        f"error) the ratios are {_triple(bt['sd_ratio_board'])} and "
        f"{_triple(cbt['sd_ratio_board'])}.",
        f"- **bootstrap** (CPU seconds): crowdbayes {args.n_bootstrap} replicates in "
        f"{ours_boot:.1f} s (a bootstrap fit less a plain one); arena-rank "
        f"{args.arena_bootstrap} replicates in {arena_boot:.1f} s, {arena_per:.2f} s each, so "
        f"{args.n_bootstrap} ≈ {arena_per * args.n_bootstrap:.0f} s (extrapolated): ratio ≈ "
        f"{arena_per * args.n_bootstrap / ours_boot:.0f}×. arena-rank's own bootstrap "
        "(`compute_ratings_and_cis(ci_method='bootstrap')`) maps its "
        "`fit_single_bootstrap_sample` over a fork-started `multiprocessing` pool, which "
        "deadlocked here (JAX warns that fork after its threads started will); the replicates "
        "are its own multinomial counts and function, run one after another in one process.",
        "",
        "**Style coefficients** (per sd of each covariate's difference; crowdbayes's with "
        "their sandwich sd). The battles are simulated with Davidson ties, so the half-win "
        "model's coefficients are attenuated against the true ones on both sides; arena-rank's "
        f"defaults (`reg=1` on the mean loss, pair weights) give coefficients {shrink:.1f}× "
        "smaller (ratio of the vectors' lengths):",
        "",
        markdown_table(coefs, digits=4),
        "",
        f"- load average at the start: {load_start}; at the end: {load_average()}.",
    ]
    write_markdown_report(
        args.output, "Leaderboard against arena-rank (issue 44)", lines, echo=True
    )


def _triple(values) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main(sys.argv[2:])
    else:
        main()
