r"""A roofline note per family at 1M judgments: achieved memory traffic of one iteration of each
family's main kernel against this machine's measured memory bandwidth (issue 45).

For every kernel the script counts, from the arrays' actual item sizes, the bytes one iteration
*must* move per judgment (label, comparison, battle, link, answer), times one iteration at 1M
judgments, and reports ``bytes per judgment × judgments ÷ seconds`` against the bandwidth of a
STREAM-like copy measured in the same run (McCalpin 1995: arrays far larger than the last-level
cache, best of several repeats, a copy counted as one read and one write per element).

Two byte counts per kernel:

- **streamed** — the compulsory traffic: the per-judgment arrays read once (codes, values,
  weights) and the per-task outputs written once, each counted once per iteration. These
  arrays grow with the judgments, so at scale they must come from (or go to) memory; this is
  the count compared with the bandwidth. (At 1M some of them, 4–8 MB, still fit in a 32 MiB
  L3; the report says so where it matters.)
- **touched** — streamed plus the gathers and scatters into the small per-worker / per-item
  tables (θ rows, scores, counts, q(z) rows) that the kernel reads at every judgment. Those
  tables fit in L2 or L3 at these sizes, so these bytes are cache traffic, not DRAM traffic;
  ``touched ÷ time`` says how fast the kernel walks its inputs at any cache level.

The formulas (``s(x)``: item size in bytes of array ``x``; ``K`` classes; ``T`` tasks; ``N``
judgments):

- labels, ``confusion_pass`` (the fused E+M pass of ``DawidSkene`` / ``BayesianDawidSkene``,
  unit counts, vector path): streamed per label ``s(indices) + (s(indptr) + 8K)·T/N`` (the
  column code of each label; per task its row pointer and its K responsibilities written);
  touched adds ``8S`` (the padded θ row, ``S`` = 8 for K = 5) and ``2·8C`` (the count row read
  and written, ``C`` = 4 for K = 5). The fit-level rows (``DawidSkene``, ``BayesianDawidSkene``:
  time per iteration from fits with ``max_iter`` = k and k + d, ``tol=None``) use the same bytes.
- labels, ``mace_local_step`` (MACE's E-step and expected counts; numpy): streamed per label
  ``s(task) + s(worker) + s(label) + 8K·T/N`` (the three codes read once, the posteriors written).
- rankings, ``_pair_kernel.mm_pass`` (Hunter's MM sums for Plackett–Luce on pairs): streamed
  per comparison ``2·4`` (the two int32 codes); touched adds ``2·8`` (the two scores gathered)
  and ``2·2·8`` (the two denominators read and written). The fit-level row (``PlackettLuceMM``
  with its SQUAREM cycles) counts the kernel calls of one iteration: ``mm_pass`` 8 B (16 B when
  it reads remembered totals), ``log_totals`` 16 B (codes read, totals written).
- pairwise comparisons, ``BradleyTerry``'s Newton step on its counted rows (distinct pairs,
  their three outcome weights summed): streamed per pair ``E·(s(left) + s(right) + 3·8)`` for
  the ``E`` objective evaluations (counted), ``s(left) + s(right) + 3·8 + 2·8`` for the Hessian
  (the two off-diagonal values written) and ``I·2·(8 + 4)`` for the ``I`` conjugate-gradient
  iterations (each reads both off-diagonal entries of the sparse matrix: value and index);
  the per-pair bytes times the pairs, divided by the comparisons, give bytes per comparison.
- leaderboard, the battle counting pass ``BattleCounts.of`` (the distinct oriented
  ``(pair, outcome)`` rows and their counts; what every leaderboard fit starts from): streamed
  per battle ``s(a) + s(b) + s(outcome)`` (the three codes read once; the count table of
  ``3·n²`` entries is in cache).
- links, one sweep of the links-only VB (``iterate_link_vb`` on a ``LinkGraph``):
  streamed per link ``s(left) + s(right) + s(worker) + s(label) + 2·(s(indices) +
  s(link_of_entry)) + 2·8`` (the link's codes, its two CSR entries, the two per-link weights
  written); touched adds ``4·8K`` (q(z) rows gathered: two for the agreements, one per
  direction for the messages).
- numbers, ``ContinuousAggregation`` (one sweep of the bias–noise VB plus its ELBO; fit-level
  timing): streamed per answer ``s(task) + s(worker) + s(value)`` (Gaussian noise).

GPPL is not in the table: its SVI step works on mini-batches of pairs against inducing points
(``prefs_speed.md``: 10,000 pairs), it has no pass over 1M judgments to put on a roofline.

Where a kernel reaches less than half of the copy bandwidth the report says why, backed by a
measurement taken in the same run (the same kernel with its lookup table in L1 / L2 / beyond,
the share of one transcendental or scatter pass, the parts of a Newton step).

Usage (from the repository root, on an otherwise idle machine; under a minute)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
        .venv/bin/python benchmarks/roofline/roofline.py [--repeats 5] [--scale 1.0]
        [--only labels rankings comparisons leaderboard links numbers]
        [--output benchmarks/roofline/results/roofline.md]

``--scale s`` multiplies the judgment counts by s (quick checks); a scaled or partial run
writes to the temporary folder unless ``--output`` is given.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

_BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_BENCH))  # _common
for _folder in ("labels", "rank", "leaderboard"):  # the speed benchmarks' data generators
    sys.path.insert(0, str(_BENCH / _folder))

from _common import load_average, results_dir, write_markdown_report  # noqa: E402

RESULTS = results_dir(__file__)
DEFAULT_OUTPUT = RESULTS / "roofline.md"

N_JUDGMENTS = 1_000_000
STREAM_ELEMENTS = 40_000_000  # 320 MB per float64 array, ten times the 32 MiB L3
STREAM_REPEATS = 5
LABEL_CLASSES = 5
BT_ITEMS = 10_000  # rank_speed's larger Bradley–Terry size: 10,000 items, 1M comparisons
ARENA_MODELS = 200  # an arena-sized leaderboard (the Kaggle arena has about 130 models)
LINK_ITEMS, LINK_CLUSTERS, LINK_WORKERS = 100_000, 10, 1_000
VALUE_WORKERS, VALUES_PER_TASK = 1_000, 10


# --------------------------------------------------------------------------- timing
def time_call(fn: Callable[[], object], repeats: int, warmup: int = 1) -> list[float]:
    """Wall seconds of ``repeats`` calls of ``fn`` after ``warmup`` untimed ones, back to
    back as a fit's iterations run (one garbage collection before, none between: a collection
    between calls would walk the heap and evict the kernel's data from the caches)."""
    gc.collect()
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def per_iteration(fit: Callable[[int], object], k: int, extra: int, repeats: int) -> list[float]:
    """Seconds per iteration of a fit: ``(t(k + extra) − t(k)) / extra`` for fits with
    ``max_iter`` = k and k + extra (``fit(n)`` runs exactly n iterations), pairs interleaved,
    so set-up and the work after the loop cancel. One value per repeat."""
    fit(k)  # warm-up: imports, caches
    out = []
    for _ in range(repeats):
        short = time_call(lambda: fit(k), 1, warmup=0)[0]
        long = time_call(lambda: fit(k + extra), 1, warmup=0)[0]
        out.append((long - short) / extra)
    return out


# --------------------------------------------------------------------------- rows
@dataclass
class Row:
    """One kernel at one size: its bytes per judgment and its times per iteration."""

    family: str
    kernel: str
    judgments: int
    streamed: float  # bytes per judgment per iteration (compulsory)
    seconds: list[float]
    touched: float | None = None  # streamed + cache-resident gathers / scatters
    note: str = ""
    why: list[str] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def rate(self, nbytes: float | None) -> float | None:
        """GB/s (10⁹ bytes per second) for ``nbytes`` per judgment."""
        return None if nbytes is None else nbytes * self.judgments / self.median / 1e9


# --------------------------------------------------------------------------- caches
def cache_sizes() -> str:
    """The data caches of CPU 0 as text (from sysfs), e.g. ``L1 48K, L2 1024K, L3 32768K``."""
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    found = []
    for index in sorted(root.glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            if kind != "Instruction":
                level = (index / "level").read_text().strip()
                found.append(f"L{level} {(index / 'size').read_text().strip()}")
        except OSError:
            continue
    return ", ".join(found) or "unknown"


# --------------------------------------------------------------------------- STREAM
def stream_bandwidth(n: int, repeats: int) -> dict[str, float]:
    """Best-of-``repeats`` GB/s of STREAM's four kernels in numpy on float64 arrays of ``n``
    elements, counted as STREAM counts them (copy, scale 16 B per element; add, triad 24 B).
    numpy's triad ``a = b + s·c`` is two passes (``a = s·c``, then ``a += b``: 40 B moved), so
    it reads lower than STREAM's compiled one; add is the one-pass three-array kernel."""
    a, b, c = np.full(n, 1.0), np.full(n, 2.0), np.full(n, 0.5)  # touched: pages mapped
    kernels = {
        "copy": (lambda: np.copyto(c, a), 16),
        "scale": (lambda: np.multiply(c, 3.0, out=b), 16),
        "add": (lambda: np.add(a, b, out=c), 24),
        "triad": (lambda: (np.multiply(c, 3.0, out=a), np.add(a, b, out=a)), 24),
    }
    out = {}
    for name, (fn, per_element) in kernels.items():
        out[name] = per_element * n / min(time_call(fn, repeats)) / 1e9
    return out


# --------------------------------------------------------------------------- labels
def _simulated_labels(n_labels: int, n_workers: int):
    from labels_speed import PER_TASK

    from crowdbayes.datasets import simulate_labels

    sim = simulate_labels(
        n_labels // PER_TASK, n_workers, PER_TASK, n_classes=LABEL_CLASSES, random_state=0
    )
    return sim.to_labels()


def _pass_inputs(labels):
    """A confusion table and prevalence for one pass: a start that every worker shares."""
    k = labels.n_classes
    confusion = np.full((labels.n_workers, k, k), 0.3 / (k - 1))
    confusion[:, np.arange(k), np.arange(k)] = 0.7
    return np.log(confusion), np.full(k, -np.log(k)), confusion


def _confusion_pass_fn(labels):
    from crowdbayes.annotators.confusion_pass import confusion_pass

    log_confusion, log_prevalence, confusion = _pass_inputs(labels)
    return lambda: confusion_pass(labels, log_confusion, log_prevalence, confusion=confusion)


def labels_rows(n: int, repeats: int) -> list[Row]:
    from labels_speed import N_WORKERS

    import crowdbayes as cb
    from crowdbayes.annotators.confusion_pass import _layout, kernel_available, row_stride
    from crowdbayes.maths import dirichlet_expected_log, dirichlet_kl
    from crowdbayes.models.labels._confusion import _entropy
    from crowdbayes.models.labels.mace import mace_local_step

    if not kernel_available():
        raise SystemExit("the compiled confusion kernel is missing: build the package first")
    labels = _simulated_labels(n, N_WORKERS)
    k, t = labels.n_classes, labels.n_tasks
    layout = _layout(labels, row_stride(k))
    per_task = (layout.indptr.itemsize + 8 * k) * t / n
    # the vector pass (unit counts) never reads the counts array `data`; the generic one does
    streamed = layout.indices.itemsize + per_task + (0 if layout.unit_counts else 8)
    stride = row_stride(k)
    count_stride = 4 if k == 5 else stride
    touched = streamed + 8 * stride + 2 * 8 * count_stride
    rows = []

    kernel = Row(
        "labels",
        "`confusion_pass` (fused E+M, C, 1 thread)",
        n,
        streamed,
        time_call(_confusion_pass_fn(labels), repeats),
        touched,
        note=f"{N_WORKERS:,} workers, K = {k}, {t:,} tasks",
    )
    # the same pass with the θ table in L1 (10 workers), L2 (the 1,000 above) and beyond L2
    # (100,000 workers: a 32 MB table): is the pass bound by its gathers' latency?
    per_label = {}
    for workers in (10, N_WORKERS, 100_000):
        other = labels if workers == N_WORKERS else _simulated_labels(n, workers)
        table_kib = other.n_workers * k * stride * 8 / 1024
        per_label[workers] = (
            statistics.median(time_call(_confusion_pass_fn(other), repeats)) / n * 1e9,
            table_kib,
        )
        del other
    lines = ", ".join(
        f"{w:,} workers (θ table {kib:,.0f} KiB): {ns:.2f} ns/label"
        for w, (ns, kib) in per_label.items()
    )
    kernel.why.append(
        f"Same pass, same {n:,} labels, only the θ table's size changed (caches per core: "
        f"{cache_sizes()}): {lines}. The streamed "
        "bytes are the same in all three, so the time goes with where the gathered θ rows and "
        "scattered count rows live (cache latency and the per-label multiply/add work), not "
        "with DRAM bandwidth."
    )
    rows.append(kernel)

    def ds_fit(model_class):
        def fit(iterations: int):
            return model_class(max_iter=iterations, tol=None).fit(labels)

        return fit

    resp = _confusion_pass_fn(labels)().resp
    entropy = statistics.median(time_call(lambda: _entropy(resp, resp), repeats))
    alpha = 1.0 + 100.0 * np.random.default_rng(0).random((labels.n_workers, k, k))
    tables = statistics.median(
        time_call(lambda: (dirichlet_expected_log(alpha), dirichlet_kl(alpha, np.ones(k))), repeats)
    )
    for name, model_class in (
        ("DawidSkene", cb.DawidSkene),
        ("BayesianDawidSkene", cb.BayesianDawidSkene),
    ):
        row = Row(
            "labels",
            f"`{name}` iteration (fit, max_iter difference)",
            n,
            streamed,
            per_iteration(ds_fit(model_class), 2, 10, repeats),
            touched,
            note="the pass above plus the M-step and the driver",
        )
        extra = ""
        if model_class.needs_entropy:
            extra = (
                f" Its ELBO needs the entropy of q(c), `-Σ r log r` over the {k}×{t:,} "
                f"responsibilities (a `log` per cell, numpy): {entropy * 1e3:.2f} ms alone; "
                f"E log θ and KL(q(θ)‖p(θ)) of the {labels.n_workers:,}×{k}×{k} Dirichlet "
                f"table (digamma and log-gamma per cell, twice): {tables * 1e3:.2f} ms — "
                "transcendental work on the worker tables, the same at any number of labels."
            )
        rest = row.median - kernel.median
        spread = max(row.seconds) - min(row.seconds)
        if abs(rest) <= spread:
            what = (
                f"The iteration is the pass above ({kernel.median * 1e3:.2f} ms): the rest, "
                f"{rest * 1e3:+.2f} ms, is within the spread of the iteration's time, so the "
                "reasons are the pass's."
            )
        else:
            what = (
                f"The iteration is the pass above ({kernel.median * 1e3:.2f} ms) and "
                f"{rest * 1e3:.2f} ms of per-iteration work on the per-worker tables and the "
                "driver."
            )
        row.why.append(what + extra)
        rows.append(row)

    # MACE's local step (numpy)
    w = labels.n_workers
    log_trust = np.full(w, np.log(0.7))
    log_spam = np.full(w, np.log(0.3))
    log_strategy = np.full((w, k), -np.log(k))
    codes = labels.task_codes.itemsize + labels.worker_codes.itemsize + labels.label_codes.itemsize
    mace = Row(
        "labels",
        "`mace_local_step` (MACE E-step + counts, numpy)",
        n,
        codes + 8 * k * t / n,
        time_call(lambda: mace_local_step(labels, log_trust, log_spam, log_strategy), repeats),
        note="K = 5",
    )
    x = np.full(n, -1.0)
    y = np.full(n, -2.0)
    out = np.empty(n)
    logaddexp = statistics.median(time_call(lambda: np.logaddexp(x, y, out=out), repeats))
    copy = statistics.median(time_call(lambda: np.copyto(out, x), repeats))
    bincount = statistics.median(
        time_call(lambda: np.bincount(labels.task_codes, x, labels.n_tasks), repeats)
    )
    mace.why.append(
        f"`mace_local_step` and `mace_counts` make about 20 numpy passes over per-label "
        f"arrays (gathers by worker code, `logaddexp`, `exp`, five `bincount`s). Measured on "
        f"{n:,} doubles: one `logaddexp` "
        f"{logaddexp * 1e3:.1f} ms, one per-task `bincount` {bincount * 1e3:.1f} ms, one copy "
        f"{copy * 1e3:.2f} ms — the transcendental and scatter passes, not the bytes, set the "
        f"time."
    )
    rows.append(mace)
    return rows


# --------------------------------------------------------------------------- rankings
class _CountingKernel:
    """Stands in for ``_pair_kernel`` during a fit: counts its calls and the seconds in them."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel
        self.calls = {"mm_pass": 0, "mm_pass_totals": 0, "log_totals": 0}
        self.seconds = 0.0

    def mm_pass(self, scores, pairs, out, totals):
        self.calls["mm_pass" if totals is None else "mm_pass_totals"] += 1
        start = time.perf_counter()
        result = self.kernel.mm_pass(scores, pairs, out, totals)
        self.seconds += time.perf_counter() - start
        return result

    def log_totals(self, scores, pairs, totals):
        self.calls["log_totals"] += 1
        start = time.perf_counter()
        result = self.kernel.log_totals(scores, pairs, totals)
        self.seconds += time.perf_counter() - start
        return result


def _bt_items(n: int) -> int:
    """Items of the Bradley–Terry data: ``BT_ITEMS`` at 1M comparisons, in proportion below (a
    scaled check keeps 100 comparisons per item, so that every item wins and loses)."""
    return max(100, BT_ITEMS * n // N_JUDGMENTS)


def _mm_pass_per_comparison(n_items: int, n: int, repeats: int) -> float:
    from rank_speed import bt_data

    from crowdbayes.models.plackett_luce import _set_sums

    data = bt_data(n_items, n)
    pairs = np.column_stack([data["winner"], data["loser"]]).astype(np.int32).ravel()
    scores = np.exp(np.random.default_rng(0).standard_normal(n_items))
    den = np.empty(n_items)
    seconds = time_call(lambda: _set_sums._kernel.mm_pass(scores, pairs, den, None), repeats)
    return statistics.median(seconds) / n * 1e9


def rank_rows(n: int, repeats: int) -> list[Row]:
    from rank_speed import bt_data

    import crowdbayes as cb
    from crowdbayes.models.plackett_luce import _set_sums

    if not _set_sums.kernel_available():
        raise SystemExit("the compiled pair kernel is missing: build the package first")
    import pandas as pd

    data = bt_data(_bt_items(n), n)
    frame = pd.DataFrame({"left": data["left"], "right": data["right"], "label": data["winner"]})
    rankings = cb.Rankings.from_pairs(frame)
    sums = _set_sums.SetSums(rankings)
    log_s = np.random.default_rng(0).standard_normal(rankings.n_items) * 0.1
    kernel_bytes = 2 * sums._pairs32.itemsize
    row = Row(
        "rankings",
        "`_pair_kernel.mm_pass` (PL-MM sums, C)",
        n,
        kernel_bytes,
        time_call(lambda: sums.inverse_totals_per_item(log_s), repeats),
        kernel_bytes + 2 * 8 + 2 * 2 * 8,
        note=f"{rankings.n_items:,} items",
    )
    per = {m: _mm_pass_per_comparison(m, n, repeats) for m in (100, BT_ITEMS, 10_000_000)}
    row.why.append(
        f"Same pass over {n:,} comparisons with only the number of items changed, so that the "
        f"score and denominator tables (16 B per item) sit in L1, L2 or beyond L3 (caches per "
        f"core: {cache_sizes()}): "
        + ", ".join(f"{m:,} items {ns:.2f} ns/comparison" for m, ns in per.items())
        + ". The 8 streamed bytes per comparison are the same in all three: with the tables "
        "in cache a division and two read-modify-write scatters per comparison set the pace "
        "(compute and latency); with them in DRAM every comparison waits for random loads. "
        "Neither is a bandwidth limit."
    )

    def fit(iterations: int):
        return cb.PlackettLuceMM(max_iter=iterations, tol=None).fit(rankings)

    # kernel calls and seconds in the kernel of one iteration: a 12-iteration fit minus a
    # 2-iteration one, / 10 (repeated; the median of the in-kernel seconds)
    original = _set_sums._kernel
    in_kernel = []
    try:
        for _ in range(repeats):
            counted = []
            for iterations in (12, 2):
                _set_sums._kernel = _CountingKernel(original)
                fit(iterations)
                counted.append(_set_sums._kernel)
            long_fit, short_fit = counted
            in_kernel.append((long_fit.seconds - short_fit.seconds) / 10)
    finally:
        _set_sums._kernel = original
    calls = {name: (long_fit.calls[name] - short_fit.calls[name]) / 10 for name in long_fit.calls}
    fit_bytes = (
        kernel_bytes * calls["mm_pass"]
        + (kernel_bytes + 8) * calls["mm_pass_totals"]  # the codes and the remembered totals
        + (kernel_bytes + 8) * calls["log_totals"]  # the codes read, the totals written
    )
    passes = sum(calls.values())
    fit_row = Row(
        "rankings",
        "`PlackettLuceMM` iteration (SQUAREM cycle, fit, max_iter difference)",
        n,
        fit_bytes,
        per_iteration(fit, 2, 10, repeats),
        note="kernel calls per iteration: "
        + ", ".join(f"{name} {value:.1f}" for name, value in calls.items()),
    )
    kernel_ms = statistics.median(in_kernel) * 1e3
    fit_row.why.append(
        f"An iteration is {passes:.0f} kernel passes over the comparisons, each bound like the "
        f"pass above (compute and latency, not bandwidth): timed inside the fit, "
        f"{kernel_ms:.2f} ms per iteration are in the kernel ({kernel_ms / passes:.2f} ms per "
        f"pass) of the {fit_row.median * 1e3:.2f} ms; the rest is the per-item work of the "
        "SQUAREM cycle and the driver."
    )
    return [row, fit_row]


# --------------------------------------------------------------------------- comparisons
def comparison_rows(n: int, repeats: int) -> list[Row]:
    import pandas as pd
    from rank_speed import bt_data
    from scipy.sparse import diags
    from scipy.sparse.linalg import cg

    import crowdbayes as cb
    from crowdbayes.models.comparisons import _solver
    from crowdbayes.models.comparisons._solver import (
        TIE_PRIOR_MEAN,
        _Design,
        _ScoreProblem,
        observed_weights,
    )

    data = bt_data(_bt_items(n), n)
    frame = pd.DataFrame({"left": data["left"], "right": data["right"], "label": data["winner"]})
    design = _Design.of(cb.Comparisons(frame))
    problem = _ScoreProblem(design, 2.0**2, fit_theta=True)
    weights = observed_weights(design, np.ones(len(design.outcome)), flip=False)
    # the state after one step from the start (the first step is not typical)
    s, theta, _, _ = problem.newton_step(np.zeros(design.n_items), TIE_PRIOR_MEAN, weights)
    pairs = design.n_pairs

    # what one step does: objective evaluations and CG iterations (counted on an untimed step)
    evaluations = [0]
    value = problem.value

    def counted_value(*args):
        evaluations[0] += 1
        return value(*args)

    problem.value = counted_value
    problem.newton_step(s, theta, weights)
    del problem.value
    grad, matrix = problem.hessian(s, theta, weights)
    cg_iterations = [0]
    cg(
        matrix,
        grad,
        rtol=_solver._CG_RTOL,
        atol=0.0,
        M=diags(1.0 / matrix.diagonal()),
        maxiter=10 * matrix.shape[0],
        callback=lambda _: cg_iterations.__setitem__(0, cg_iterations[0] + 1),
    )
    codes = design.left.itemsize + design.right.itemsize + 3 * 8
    per_pair = evaluations[0] * codes + (codes + 2 * 8) + cg_iterations[0] * 2 * (8 + 4)
    # bytes per judgment: the pairs' traffic spread over the comparisons
    step = Row(
        "pairwise comparisons",
        "`BradleyTerry` Newton step on counted pairs (numpy + scipy CG)",
        n,
        per_pair * pairs / n,
        time_call(lambda: problem.newton_step(s, theta, weights), repeats),
        note=f"{design.n_items:,} items, {pairs:,} distinct pairs; per step "
        f"{evaluations[0]} objective evaluations, {cg_iterations[0]} CG iterations",
    )
    parts = {
        "objective": (lambda: problem.value(s, theta, weights), codes),
        "gradient + Hessian": (lambda: problem.hessian(s, theta, weights), codes + 16),
        "CG solve": (
            lambda: _solver._solve_positive_definite(matrix, grad),
            cg_iterations[0] * 2 * (8 + 4),
        ),
    }
    measured = []
    for name, (fn, nbytes) in parts.items():
        seconds = statistics.median(time_call(fn, repeats))
        measured.append(
            f"{name} {seconds * 1e3:.1f} ms ({nbytes * pairs / seconds / 1e9:.2f} GB/s)"
        )
    matvec = statistics.median(time_call(lambda: matrix @ grad, repeats))
    # the matrix is symmetric: its transpose is the same matrix read as CSR (a gather per row
    # instead of a scatter per column)
    matvec_csr = statistics.median(time_call(lambda: matrix.T @ grad, repeats))
    solve = statistics.median(
        time_call(lambda: _solver._solve_positive_definite(matrix, grad), repeats)
    )
    step.why.append(
        "Parts of the step (streamed GB/s of each): "
        + ", ".join(measured)
        + ". The objective and the Hessian are chains of numpy passes over the pairs with "
        "three `logaddexp` and three `exp` per pair (the Davidson terms, `_davidson.py`) and "
        f"`bincount` scatters. A CG iteration ({solve / cg_iterations[0] * 1e3:.2f} ms) is "
        f"about one sparse mat-vec: {matvec * 1e3:.2f} ms for the CSC matrix the solver "
        f"builds (a scatter into the output per entry), {matvec_csr * 1e3:.2f} ms for the "
        "same symmetric matrix read as CSR (`matrix.T`, a gather per entry); both read 12 B "
        "per entry plus an item value gathered from cache."
    )
    return [step]


# --------------------------------------------------------------------------- leaderboard
def leaderboard_rows(n: int, repeats: int) -> list[Row]:
    from leaderboard_speed import sparse_battles

    from crowdbayes.data.battles import BattleCounts, Battles, oriented_keys

    frame, _ = sparse_battles(ARENA_MODELS, n)
    battles = Battles(frame)
    a, b, outcome, m = battles.a, battles.b, battles.outcome, battles.n_models
    streamed = a.itemsize + b.itemsize + outcome.itemsize
    row = Row(
        "leaderboard",
        "battle counting pass `BattleCounts.of` (numpy)",
        n,
        streamed,
        time_call(lambda: BattleCounts.of(m, a, b, outcome, None), repeats),
        note=f"{m} models; codes {a.dtype}, {b.dtype}, {outcome.dtype}",
    )
    _, key = oriented_keys(m, a, b, outcome)
    keys = statistics.median(time_call(lambda: oriented_keys(m, a, b, outcome), repeats))
    count = statistics.median(time_call(lambda: np.bincount(key, None, 3 * m * m), repeats))
    copy = statistics.median(time_call(lambda: a.copy(), repeats))
    row.why.append(
        f"The counting is 14 numpy passes over the battles: 13 for the keys "
        f"(`oriented_keys`: three casts to int32, compare, min, max, two multiplies, two adds, "
        f"compare, and, xor: {keys * 1e3:.1f} ms) and a `bincount` of them ({count * 1e3:.1f} "
        f"ms; a scatter-increment per battle into a {3 * m * m * 8 / 1024:,.0f} KiB table in "
        f"cache), against {copy * 1e3:.2f} ms to copy one code column. A single fused pass "
        "(read three codes, increment one slot) would stream the same bytes once."
    )
    return [row]


# --------------------------------------------------------------------------- links
def link_rows(n: int, repeats: int) -> list[Row]:
    import pandas as pd

    from crowdbayes.datasets.clustering import simulate_pair_links
    from crowdbayes.models.clustering.link_graph import LinkGraph
    from crowdbayes.models.clustering.link_vb import (
        LinkStatistics,
        _softmax_rows,
        iterate_link_vb,
        link_global_update,
        link_local_stats,
        link_messages,
        link_weights,
    )

    rng = np.random.default_rng(0)
    truth = rng.integers(0, LINK_CLUSTERS, LINK_ITEMS)
    sim = simulate_pair_links(
        truth, n_workers=LINK_WORKERS, pairs_per_worker=n // LINK_WORKERS, random_state=0
    )
    links = sim.links
    worker = pd.factorize(links["worker"])[0]
    labels = links["label"].to_numpy().astype(np.int64)
    graph, _ = LinkGraph.build(
        LINK_ITEMS,
        int(worker.max()) + 1,
        links["left"].to_numpy(),
        links["right"].to_numpy(),
        worker,
        labels,
    )
    n_links = graph.left.size
    k = LINK_CLUSTERS
    resp = rng.dirichlet(np.ones(k), LINK_ITEMS)
    priors = (np.full(k, 1.0), np.array([1.0, 1.0]), np.array([1.0, 1.0]))
    sizes = graph.left.itemsize + graph.right.itemsize + graph.worker.itemsize
    streamed = (
        sizes
        + graph.labels.itemsize
        + 2 * (graph.indices.itemsize + graph.link_of_entry.itemsize)
        + 2 * 8
    )

    def fit(iterations: int):
        source = LinkStatistics(graph)
        return iterate_link_vb(resp, priors, source, graph.bounds, max_iter=iterations, tol=None)

    row = Row(
        "links",
        "links-only VB sweep (`iterate_link_vb`, numpy + scipy)",
        n_links,
        streamed,
        per_iteration(fit, 2, 3, repeats),
        streamed + 4 * 8 * k,
        note=f"{LINK_ITEMS:,} items, K = {k}, {graph.n_colours} colour classes",
    )
    source = LinkStatistics(graph)
    state, _ = fit(2)
    globals_ = link_global_update(source.stats(state.resp), state.resp, priors)
    weighted = link_weights(graph, globals_)
    weigh = statistics.median(time_call(lambda: link_weights(graph, globals_), repeats))
    stats = statistics.median(
        time_call(lambda: link_local_stats(graph, state.resp, weighted), repeats)
    )
    messages = statistics.median(
        time_call(
            lambda: [
                link_messages(graph, c, weighted[0], state.resp) for c in range(graph.n_colours)
            ],
            repeats,
        )
    )
    agreement = statistics.median(time_call(lambda: graph.agreement(state.resp), repeats))
    softmax = statistics.median(time_call(lambda: _softmax_rows(state.log_resp), repeats))
    copies_mb = 2 * n_links * k * 8 / 1e6
    row.why.append(
        f"Parts of a sweep: link weights {weigh * 1e3:.0f} ms (about ten numpy passes: "
        f"gathers of per-worker expectations by worker code, the label cast and algebra), "
        f"statistics {stats * 1e3:.0f} ms (two q(z) row gathers of {8 * k} B per link, an "
        f"einsum, four per-worker `bincount`s), messages over the "
        f"{graph.n_colours} colour classes {messages * 1e3:.0f} ms (a CSR matrix rebuilt per "
        "class and a sparse × dense product gathering a q(z) row per entry). The gathers of "
        f"q(z) rows from an {LINK_ITEMS * k * 8 / 2**20:.0f} MiB table (L3, random) and the "
        "numpy temporaries, not the streamed codes, set the time: the agreements alone "
        f"(`LinkGraph.agreement`: `einsum` over `resp[left]` and `resp[right]`, two gathered "
        f"copies of {copies_mb / 2:.0f} MB each, written and read back) take "
        f"{agreement * 1e3:.0f} ms. Per item, the q(z) updates of all "
        f"{LINK_ITEMS:,}×{k} cells (a softmax: `exp` and `log` per cell) take "
        f"{softmax * 1e3:.0f} ms."
    )
    return [row]


# --------------------------------------------------------------------------- numbers
def value_rows(n: int, repeats: int) -> list[Row]:
    from crowdbayes.annotators.continuous import (
        BiasNoisePrior,
        bias_noise_start,
        bias_noise_sweep,
        elbo,
    )
    from crowdbayes.data import Values
    from crowdbayes.datasets import simulate_values
    from crowdbayes.models.labels import ContinuousAggregation

    sim = simulate_values(n // VALUES_PER_TASK, VALUE_WORKERS, VALUES_PER_TASK, random_state=0)
    values = Values(sim.values)
    tasks, workers = values.task_codes, values.worker_codes
    streamed = tasks.itemsize + workers.itemsize + values.values.itemsize
    model = ContinuousAggregation()
    noise = model.get_params()["noise"]

    def fit(iterations: int):
        return ContinuousAggregation(max_iter=iterations, tol=None).fit(values)

    row = Row(
        "numbers",
        f"`ContinuousAggregation` VB sweep + ELBO (noise={noise}, fit, max_iter difference)",
        len(tasks),
        streamed,
        per_iteration(fit, 2, 10, repeats),
        note=f"{values.n_tasks:,} tasks, {values.n_workers:,} workers",
    )
    x = np.asarray(values.values, dtype=np.float64)
    prior = BiasNoisePrior()
    state = bias_noise_start(tasks, workers, x, values.n_tasks, values.n_workers, prior)
    sweep = statistics.median(
        time_call(lambda: bias_noise_sweep(state, tasks, workers, x, prior), repeats)
    )
    bound = statistics.median(time_call(lambda: elbo(state, tasks, workers, x, prior), repeats))
    bincount = statistics.median(time_call(lambda: np.bincount(tasks, x, values.n_tasks), repeats))
    gather = statistics.median(time_call(lambda: x[tasks], repeats))
    copy = statistics.median(time_call(lambda: x.copy(), repeats))
    row.why.append(
        f"The sweep (`bias_noise_sweep`: six `bincount`s, four gathers by code and the "
        f"element-wise algebra between them, each a numpy pass over {len(x):,} answers) takes "
        f"{sweep * 1e3:.1f} ms and the ELBO {bound * 1e3:.1f} ms; on their own one per-task "
        f"`bincount` takes {bincount * 1e3:.1f} ms and one gather by task code "
        f"{gather * 1e3:.1f} ms, against {copy * 1e3:.2f} ms for a copy of the values: the "
        "iteration is the sum of many numpy passes, scatters and gathers the slowest of them, "
        "each re-reading the codes the iteration needs once."
    )
    return [row]


FAMILIES = {
    "labels": labels_rows,
    "rankings": rank_rows,
    "comparisons": comparison_rows,
    "leaderboard": leaderboard_rows,
    "links": link_rows,
    "numbers": value_rows,
}


# --------------------------------------------------------------------------- report
def _table(rows: list[Row], copy: float) -> list[str]:
    lines = [
        "| kernel | judgments | streamed B/judgment | touched B/judgment | time per iteration, "
        "ms (min–max) | streamed GB/s | of copy bandwidth | touched GB/s | notes |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        streamed_rate = r.rate(r.streamed)
        touched_rate = r.rate(r.touched)
        touched = "" if r.touched is None else f"{r.touched:.1f}"
        lines.append(
            f"| {r.kernel} | {r.judgments:,} | {r.streamed:.1f} | {touched} | "
            f"{r.median * 1e3:.2f} ({min(r.seconds) * 1e3:.2f}–{max(r.seconds) * 1e3:.2f}) | "
            f"{streamed_rate:.2f} | {streamed_rate / copy:.0%} | "
            f"{'' if touched_rate is None else f'{touched_rate:.2f}'} | {r.note} |"
        )
    return lines


def report_lines(
    stream: dict[str, float], elements: int, rows: list[Row], elapsed: float
) -> list[str]:
    copy = stream["copy"]
    lines = [
        "## Memory bandwidth (STREAM-like, numpy, one thread)",
        "",
        f"float64 arrays of {elements:,} elements ({elements * 8 / 1e6:.0f} MB "
        f"each), best of {STREAM_REPEATS}; bytes counted as STREAM counts them (copy and scale "
        "16 B per element, add and triad 24 B; numpy's triad is two passes).",
        "",
        "| kernel | GB/s |",
        "| --- | ---: |",
        *(f"| {name} | {value:.2f} |" for name, value in stream.items()),
        "",
        f'The roofline below is the copy figure, {copy:.2f} GB/s; "below half" means a '
        f"streamed rate under {copy / 2:.2f} GB/s. Caches per core: {cache_sizes()}.",
        "",
        "Byte counts (module docstring of `benchmarks/roofline/roofline.py` for the formulas): "
        "*streamed* is the compulsory traffic of one iteration (per-judgment arrays read once, "
        "per-task outputs written once) and is what is compared with the copy bandwidth; "
        "*touched* adds the gathers and scatters into the per-worker / per-item tables that "
        "live in cache at these sizes.",
        "",
        "At 1M judgments some kernels' streamed arrays (4–8 MB: the DS column codes and "
        "responsibilities, the PL-MM int32 pairs) fit in the 32 MiB L3, so iterations run back "
        "to back may find them there and need not go to DRAM at all; the copy bandwidth is "
        "then a bound the kernel could not reach even from DRAM, and a kernel far below it is "
        "limited by something else, which each note names.",
        "",
    ]
    families = list(dict.fromkeys(r.family for r in rows))
    for family in families:
        mine = [r for r in rows if r.family == family]
        lines += [f"## {family}", "", *_table(mine, copy), ""]
        for r in mine:
            rate = r.rate(r.streamed)
            if rate >= copy / 2:
                lines.append(f"- {r.kernel}: at or above half the copy bandwidth.")
                continue
            lines.append(f"- {r.kernel}: {rate / copy:.0%} of copy, below half. " + " ".join(r.why))
        lines.append("")
    lines += [
        "## Not measured",
        "",
        "- GPPL (`prefs`): its SVI step works on mini-batches against 200 inducing points "
        "(`prefs_speed.md`: 10,000 pairs in all); there is no pass over 1M judgments to put "
        "on this roofline, and a step's cost is the inducing-point linear algebra, not memory "
        "traffic.",
        "- GLAD: its M-step is an L-BFGS run of up to 25 evaluations per EM iteration, so an "
        "iteration's bytes depend on the line search; left out to keep the run short.",
        "",
        f"Run time {elapsed:.0f} s.",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", nargs="+", choices=sorted(FAMILIES), default=None)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    output = args.output
    if output is None:
        partial = args.scale != 1.0 or args.only is not None
        output = Path(tempfile.gettempdir()) / "roofline.md" if partial else DEFAULT_OUTPUT
    n = max(10_000, int(round(N_JUDGMENTS * args.scale)))
    started = time.perf_counter()
    elements = max(1_000_000, int(STREAM_ELEMENTS * min(1.0, args.scale)))
    stream = stream_bandwidth(elements, STREAM_REPEATS)
    print("STREAM-like GB/s: " + ", ".join(f"{k} {v:.2f}" for k, v in stream.items()), flush=True)
    rows: list[Row] = []
    for name, measure in FAMILIES.items():
        if args.only is not None and name not in args.only:
            continue
        for row in measure(n, args.repeats):
            rate = row.rate(row.streamed)
            print(
                f"{row.family}: {row.kernel}: {row.streamed:.1f} B/judgment, "
                f"{row.median * 1e3:.2f} ms, {rate:.2f} GB/s ({rate / stream['copy']:.0%})",
                flush=True,
            )
            rows.append(row)
        gc.collect()
    elapsed = time.perf_counter() - started
    write_markdown_report(
        output,
        "Roofline per family at 1M judgments",
        report_lines(stream, elements, rows, elapsed),
        details=[f"- load average at the end: {load_average()}; run time {elapsed:.0f} s"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
