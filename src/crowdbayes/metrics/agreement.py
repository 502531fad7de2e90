"""Agreement among workers: Krippendorff's α, Fleiss' κ, Cohen's κ, agreement with the consensus.

Every statistic here works on the long-format :class:`~crowdbayes.Labels` (or a ``task, worker,
label`` table): a task has whichever labels it got, so missing values need no coding. A task
(the *unit*) with fewer than two labels carries no information about agreement and is left
out; a worker who labelled a task twice (``duplicates="keep"``) contributes both labels.

Notation: ``n_uc`` is the number of labels of class ``c`` on task ``u`` and ``m_u = Σ_c n_uc``.

- **Krippendorff's α** (Krippendorff 2004, ch. 11; 2011): with the coincidence matrix
  ``o_ck = Σ_u (n_uc n_uk − [c = k] n_uc) / (m_u − 1)``, its margins ``n_c = Σ_k o_ck`` and
  ``n = Σ_c n_c``, ``α = 1 − D_o / D_e = 1 − (n − 1) Σ_ck o_ck δ²_ck / Σ_ck n_c n_k δ²_ck``.
  The level of measurement sets the distance δ²: nominal ``[c ≠ k]``; ordinal
  ``(Σ_{g=c..k} n_g − (n_c + n_k)/2)²`` over the classes in their declared order; interval
  ``(c − k)²``; ratio ``((c − k)/(c + k))²`` (numeric classes for the last two).
- **Fleiss' κ** (Fleiss 1971): ``κ = (P̄ − P_e) / (1 − P_e)`` with each task's agreement
  ``P_u = Σ_c n_uc (n_uc − 1) / (m_u (m_u − 1))``, ``P̄`` their mean, ``p_c = Σ_u n_uc / Σ_u m_u``
  and ``P_e = Σ_c p_c²``. Fleiss defined it for the same number of ratings on every subject;
  with unequal numbers each task's ``P_u`` uses its own ``m_u`` (and with equal numbers this is
  Fleiss' statistic exactly). ``P̄`` alone is the *pairwise percent agreement*.
- **Cohen's κ** (Cohen 1960) of two workers over the tasks both labelled:
  ``κ = (p_o − p_e) / (1 − p_e)``, ``p_o`` the share of those tasks on which they agree and
  ``p_e = Σ_c p_a(c) p_b(c)`` from each worker's own class shares there. In crowd data most
  pairs share few tasks, so the summary averages κ over the pairs sharing at least
  ``min_common`` tasks (Light's 1971 average of pairwise κ, restricted to those pairs).
- **Agreement with the consensus**: the share of a worker's labels equal to the consensus of
  their task — by default the majority of the *other* labels of the task (a tie between ``t``
  classes counts ``1/t`` for each), or a given answer per task such as a model's ``labels_`` —
  and the worker's Cohen's κ against it.

Confidence intervals come from the bootstrap over tasks (Efron & Tibshirani 1993): tasks are
drawn with replacement and the statistic recomputed from the drawn tasks' sufficient
statistics. Tasks are the units that are independent in crowd data; each statistic above is a
function of per-task sums, so a replicate costs one weighted sum. α, Fleiss' κ, the percent
agreement and a worker's agreement get the percentile interval (the central ``confidence``
quantiles of the ``n_boot`` replicates). The κ of a pair of workers or of a worker against the
consensus is a ratio of few counts whose bootstrap distribution sits off the estimate (a pair
sharing 16 tasks loses a minority class in many replicates), so these get the normal interval
``estimate ± z·sd`` of the replicates instead, which is centred on the estimate.

References
----------
Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and Psychological
Measurement 20(1), 37–46.
Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological
Bulletin 76(5), 378–382.
Krippendorff, K. (2004). Content Analysis: An Introduction to Its Methodology (2nd ed.), ch. 11.
Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
Communication, University of Pennsylvania.
Light, R. J. (1971). Measures of response agreement for qualitative data. Psychological
Bulletin 76(5), 365–377.
Efron, B., & Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..data import Labels, as_labels
from ..data.io import TableLike

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = [
    "LEVELS",
    "agreement_table",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "worker_agreement",
]

#: Krippendorff's levels of measurement
LEVELS = ("nominal", "ordinal", "interval", "ratio")
#: the largest bootstrap work (labels paired on a task × replicates) done for the pairwise
#: Cohen's κ
_COHEN_BOOTSTRAP_BUDGET = 3e8
#: the largest weight matrix (replicates × tasks) drawn at once
_BATCH_ENTRIES = 4e6


def _labels(labels: Labels | TableLike) -> Labels:
    labels = as_labels(labels)
    if labels.label_codes is None:
        raise ValueError("agreement: the labels were compacted (no per-label codes left)")
    return labels


def _counts(labels: Labels) -> np.ndarray:
    """(n_tasks, K) label counts of every task."""
    return labels.vote_counts().T


# ------------------------------------------------------------------------ the bootstrap
def _bootstrap(
    per_unit: np.ndarray | sp.spmatrix,
    statistic: Callable[[np.ndarray], np.ndarray],
    n_boot: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """``statistic`` of ``n_boot`` resampled sums of the rows of ``per_unit`` (one row a task).

    Each replicate draws as many tasks as there are, with replacement; its sums are the
    weighted sums of the rows, the weights being how often each task was drawn.
    """
    import scipy.sparse as sp

    n = per_unit.shape[0]
    batch = int(max(1, min(n_boot, _BATCH_ENTRIES // max(n, 1))))
    transposed = per_unit.T.tocsr() if sp.issparse(per_unit) else None
    results = []
    for start in range(0, n_boot, batch):
        b = min(batch, n_boot - start)
        draws = rng.integers(0, n, size=(b, n)) + (np.arange(b) * n)[:, None]
        weights = np.bincount(draws.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)
        sums = (transposed @ weights.T).T if transposed is not None else weights @ per_unit
        results.append(np.asarray(statistic(np.asarray(sums))))
    return np.concatenate(results, axis=0)


def _interval(
    replicates: np.ndarray, confidence: float, estimate: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The bootstrap interval of ``confidence`` mass, column by column, from the finite
    replicates (NaN where none is finite).

    Without ``estimate``: the percentile interval (the central quantiles of the replicates).
    With it: the normal interval ``estimate ± z·sd(replicates)`` (Efron & Tibshirani 1993,
    §13.2), used for the ratios of few counts (a pair's or a worker's κ) whose bootstrap
    distribution is shifted from the estimate, so that percentiles would miss it.
    """
    from scipy.stats import norm

    tail = (1 - confidence) / 2
    finite = np.where(np.isfinite(replicates), replicates, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns give NaN
        if estimate is None:
            lower, upper = np.nanquantile(finite, [tail, 1 - tail], axis=0)
            return lower, upper
        spread = norm.ppf(1 - tail) * np.nanstd(finite, axis=0, ddof=1)
    return estimate - spread, estimate + spread


def _check_bootstrap(n_boot: int, confidence: float) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        raise ValueError(f"n_boot must be a non-negative integer; got {n_boot!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}")


# ------------------------------------------------------------------------ Krippendorff's α
def _class_values(labels: Labels, level: str) -> np.ndarray:
    """The classes as numbers, for the interval and ratio distances."""
    values = pd.to_numeric(pd.Series(list(labels.classes)), errors="coerce").to_numpy(float)
    if np.isnan(values).any():
        raise ValueError(
            f"krippendorff_alpha: level {level!r} needs numeric classes; got "
            f"{list(labels.classes)[:6]}"
        )
    return values


def _distance(level: str, labels: Labels, totals: np.ndarray | None = None) -> np.ndarray:
    """δ²_ck between classes (K, K); the ordinal distance needs the class totals ``n_c``."""
    k = labels.n_classes
    if level == "nominal":
        return 1.0 - np.eye(k)
    if level == "ordinal":
        cumulative = np.concatenate([[0.0], np.cumsum(totals)])
        classes = np.arange(k)
        low, high = np.minimum.outer(classes, classes), np.maximum.outer(classes, classes)
        between = cumulative[high + 1] - cumulative[low]
        return (between - (totals[:, None] + totals[None, :]) / 2) ** 2
    values = _class_values(labels, level)
    difference = values[:, None] - values[None, :]
    if level == "interval":
        return difference**2
    total = values[:, None] + values[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total != 0, (difference / np.where(total != 0, total, 1)) ** 2, 0.0)


def _alpha_per_unit(labels: Labels, level: str) -> tuple[np.ndarray, Callable]:
    """Per-task sufficient statistics of α and the function from their sums to α.

    With a fixed distance (nominal, interval, ratio) a task needs only ``Σ_ck o_uck δ²_ck``
    and its class counts (the margins of its coincidences); the ordinal distance depends on
    the margins, so a task keeps its whole coincidence matrix.
    """
    counts = _counts(labels)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    k = labels.n_classes
    # o_u = (n_u n_uᵀ − diag(n_u)) / (m_u − 1), as a flat (units, K²) array
    coincidences = (counts[:, :, None] * counts[:, None, :]).reshape(len(counts), k * k)
    coincidences[:, :: k + 1] -= counts
    coincidences /= (m - 1)[:, None]
    if level == "ordinal":

        def ordinal(sums: np.ndarray) -> np.ndarray:
            o = sums.reshape(-1, k, k)
            totals = o.sum(axis=2)
            out = np.empty(len(o))
            for r in range(len(o)):
                delta = _distance("ordinal", labels, totals[r])
                n = totals[r].sum()
                expected = totals[r] @ delta @ totals[r]
                out[r] = 1 - (n - 1) * (o[r] * delta).sum() / expected if expected > 0 else np.nan
            return out

        return coincidences, ordinal
    delta = _distance(level, labels)
    per_unit = np.column_stack([coincidences @ delta.ravel(), counts])

    def fixed(sums: np.ndarray) -> np.ndarray:
        observed, totals = sums[:, 0], sums[:, 1:]
        n = totals.sum(axis=1)
        expected = np.einsum("rc,ck,rk->r", totals, delta, totals)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)

    return per_unit, fixed


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")


def _pairable_or_raise(per_unit: np.ndarray, what: str) -> None:
    if per_unit.shape[0] == 0:
        raise ValueError(f"{what}: no task has labels from two or more workers")


def krippendorff_alpha(labels: Labels | TableLike, level: str = "nominal") -> float:
    """Krippendorff's α of the labels at a level of measurement (module docstring).

    Parameters
    ----------
    labels : Labels, DataFrame or path
        Long format ``task, worker, label``.
    level : {"nominal", "ordinal", "interval", "ratio"}
        ``ordinal`` orders the classes as declared (``labels.classes``); ``interval`` and
        ``ratio`` need numeric classes.

    Returns
    -------
    float
        1 for perfect agreement, 0 for agreement at chance, negative below chance; NaN when
        every pairable label has the same class (no variation to agree on).
    """
    _check_level(level)
    labels = _labels(labels)
    per_unit, finish = _alpha_per_unit(labels, level)
    _pairable_or_raise(per_unit, "krippendorff_alpha")
    return float(finish(per_unit.sum(axis=0)[None, :])[0])


# ------------------------------------------------------------------------ Fleiss' κ
def _fleiss_per_unit(labels: Labels) -> np.ndarray:
    """Per pairable task: ``P_u``, 1 and its class counts (the sums give P̄ and p_c)."""
    counts = _counts(labels)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    agreement = (counts * (counts - 1)).sum(axis=1) / (m * (m - 1))
    return np.column_stack([agreement, np.ones(len(m)), counts])


def _fleiss(sums: np.ndarray) -> np.ndarray:
    p_bar = sums[:, 0] / sums[:, 1]
    shares = sums[:, 2:] / sums[:, 2:].sum(axis=1, keepdims=True)
    p_e = (shares**2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_e < 1, (p_bar - p_e) / (1 - p_e), np.nan)


def _percent_agreement(sums: np.ndarray) -> np.ndarray:
    return sums[:, 0] / sums[:, 1]


def fleiss_kappa(labels: Labels | TableLike) -> float:
    """Fleiss' κ of the labels (module docstring); tasks with one label are left out.

    Returns
    -------
    float
        1 for perfect agreement, 0 at chance; NaN when every label has the same class.
    """
    per_unit = _fleiss_per_unit(_labels(labels))
    _pairable_or_raise(per_unit, "fleiss_kappa")
    return float(_fleiss(per_unit.sum(axis=0)[None, :])[0])


# ------------------------------------------------------------------------ Cohen's κ
def _indicators(labels: Labels) -> list[sp.csc_matrix]:
    """For each class c the (n_tasks, n_workers) counts of worker j's labels c on task i."""
    import scipy.sparse as sp

    shape = (labels.n_tasks, labels.n_workers)
    matrices = []
    for c in range(labels.n_classes):
        rows = labels.label_codes == c
        data = np.ones(int(rows.sum()))
        matrices.append(
            sp.csc_matrix((data, (labels.task_codes[rows], labels.worker_codes[rows])), shape)
        )
    return matrices


def _pair_tables(labels: Labels, min_common: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The worker pairs (a < b) sharing at least ``min_common`` labelled tasks and, for each,
    the (K, K) table of how often a said c while b said d on the same task."""
    import scipy.sparse as sp

    indicators = _indicators(labels)
    total = sum(indicators[1:], indicators[0])
    shared = sp.triu((total > 0).astype(np.float64).T @ (total > 0).astype(np.float64), k=1)
    shared = shared.tocoo()
    keep = shared.data >= min_common
    a, b = shared.row[keep].astype(np.int64), shared.col[keep].astype(np.int64)
    k = labels.n_classes
    tables = np.zeros((len(a), k, k))
    for c in range(k):
        left = indicators[c].T.tocsr()
        for d in range(k):
            product = (left @ indicators[d]).tocsr()
            tables[:, c, d] = np.asarray(product[a, b]).ravel()
    return a, b, tables


def _kappa_of_tables(tables: np.ndarray) -> np.ndarray:
    """Cohen's κ of (..., K, K) contingency tables."""
    n = tables.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = np.trace(tables, axis1=-2, axis2=-1) / n
        p_e = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1) / n**2
        return np.where(p_e < 1, (p_o - p_e) / (1 - p_e), np.nan)


def cohen_kappa(labels: Labels | TableLike, *, min_common: int = 10) -> pd.DataFrame:
    """Cohen's κ of every pair of workers sharing at least ``min_common`` tasks.

    Returns
    -------
    DataFrame
        One row a pair: ``worker_a``, ``worker_b`` (the user's ids), ``n_common`` (tasks both
        labelled; repeated labels of a worker count once per pairing), ``agreement`` (``p_o``)
        and ``kappa`` (NaN where both workers gave one and the same class throughout), sorted
        by ``kappa``.
    """
    if isinstance(min_common, bool) or not isinstance(min_common, (int, np.integer)):
        raise ValueError(f"min_common must be a positive integer; got {min_common!r}")
    if min_common < 1:
        raise ValueError(f"min_common must be a positive integer; got {min_common!r}")
    labels = _labels(labels)
    a, b, tables = _pair_tables(labels, int(min_common))
    n = tables.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        agreement = np.trace(tables, axis1=1, axis2=2) / n
    table = pd.DataFrame(
        {
            "worker_a": labels.workers[a],
            "worker_b": labels.workers[b],
            "n_common": n.astype(np.int64),
            "agreement": agreement,
            "kappa": _kappa_of_tables(tables),
        }
    )
    return table.sort_values("kappa", kind="stable").reset_index(drop=True)


def _co_labels(labels: Labels) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of labels on the same task, as two arrays of label rows."""
    order = np.argsort(labels.task_codes, kind="stable")
    tasks = labels.task_codes[order]
    sizes = np.bincount(tasks, minlength=labels.n_tasks)
    starts = np.cumsum(sizes) - sizes
    per_label = sizes[tasks]
    first = np.repeat(np.arange(len(order)), per_label)
    offset = np.arange(len(first)) - np.repeat(np.cumsum(per_label) - per_label, per_label)
    second = starts[tasks[first]] + offset
    return order[first], order[second]


def _co_label_count(labels: Labels) -> int:
    sizes = np.bincount(labels.task_codes, minlength=labels.n_tasks).astype(np.int64)
    return int((sizes * sizes).sum())


def _cohen_per_unit(labels: Labels, a: np.ndarray, b: np.ndarray) -> sp.csr_matrix:
    """Per task, its contributions to every kept pair's (K, K) table: a sparse
    (n_tasks, n_pairs·K²) matrix whose column sums are the pairs' tables."""
    import scipy.sparse as sp

    k = labels.n_classes
    first, second = _co_labels(labels)
    wa, wb = labels.worker_codes[first], labels.worker_codes[second]
    ordered = wa < wb
    first, second, wa, wb = first[ordered], second[ordered], wa[ordered], wb[ordered]
    shape = (labels.n_workers, labels.n_workers)
    lookup = sp.csr_matrix((np.arange(1, len(a) + 1, dtype=np.float64), (a, b)), shape)
    pair = np.asarray(lookup[wa, wb]).ravel().astype(np.int64) - 1
    kept = pair >= 0
    first, second, pair = first[kept], second[kept], pair[kept]
    columns = pair * k * k + labels.label_codes[first] * k + labels.label_codes[second]
    return sp.csr_matrix(
        (np.ones(len(columns)), (labels.task_codes[first], columns)),
        shape=(labels.n_tasks, max(len(a), 1) * k * k),
    )


# ------------------------------------------------------------------------ the consensus
def _consensus_shares(labels: Labels, consensus: pd.Series | None) -> tuple[np.ndarray, np.ndarray]:
    """For every label, whether it is compared and the consensus of its task as class shares
    (n_labels, K): the majority of the task's *other* labels (ties shared), or ``consensus``."""
    k = labels.n_classes
    if consensus is None:
        others = _counts(labels)[labels.task_codes] - np.eye(k)[labels.label_codes]
        compared = others.sum(axis=1) > 0
        modes = others == others.max(axis=1, keepdims=True)
        shares = modes / modes.sum(axis=1, keepdims=True)
        return compared, np.where(compared[:, None], shares, 0.0)
    if not isinstance(consensus, pd.Series):
        raise TypeError(
            f"consensus must be a pandas Series of classes indexed by task; got "
            f"{type(consensus).__name__}"
        )
    per_task = consensus.reindex(labels.tasks)
    codes = labels.classes.get_indexer(per_task.to_numpy())
    known = per_task.notna().to_numpy()
    unknown = np.flatnonzero(known & (codes < 0))
    if unknown.size:
        bad = pd.unique(per_task.to_numpy()[unknown])[:5]
        raise ValueError(
            f"consensus: {unknown.size} task(s) have a class outside {list(labels.classes)}: "
            f"{list(bad)}"
        )
    compared = known[labels.task_codes]
    shares = np.zeros((labels.n_labels, k))
    shares[compared, codes[labels.task_codes[compared]]] = 1.0
    return compared, shares


def worker_agreement(
    labels: Labels | TableLike,
    consensus: pd.Series | None = None,
    *,
    n_boot: int = 0,
    confidence: float = 0.95,
    random_state=None,
) -> pd.DataFrame:
    """Each worker's agreement with the consensus of their tasks (module docstring).

    Parameters
    ----------
    labels : Labels, DataFrame or path
    consensus : Series, optional
        The answer of each task (indexed by task id), e.g. a model's ``labels_``; tasks absent
        from it are not compared. Default: the majority of the task's other labels.
    n_boot : int
        Bootstrap replicates over tasks for the intervals (0: none).
    confidence : float
        Mass of the bootstrap intervals.
    random_state : int, Generator or None

    Returns
    -------
    DataFrame
        Indexed by worker: ``n_labels``, ``n_compared`` (labels on tasks with a consensus),
        ``agreement`` (share equal to it) and ``kappa`` (Cohen's κ against it); with
        ``n_boot`` also ``agreement_lower``/``_upper`` (percentile interval) and
        ``kappa_lower``/``_upper`` (normal interval, module docstring).
        Sorted by agreement, lowest first.
    """
    import scipy.sparse as sp

    _check_bootstrap(n_boot, confidence)
    labels = _labels(labels)
    k, n_workers = labels.n_classes, labels.n_workers
    compared, shares = _consensus_shares(labels, consensus)
    width = 2 + 2 * k  # n_compared, matches, worker's class counts, consensus class shares
    rows = labels.task_codes[compared]
    base = labels.worker_codes[compared] * width
    own = labels.label_codes[compared]
    shares = shares[compared]
    matches = shares[np.arange(len(own)), own]
    columns = np.concatenate(
        [base, base + 1, base + 2 + own, *(base + 2 + k + c for c in range(k))]
    )
    data = np.concatenate([np.ones(len(own)), matches, np.ones(len(own)), shares.T.ravel()])
    per_unit = sp.csr_matrix(
        (data, (np.tile(rows, 3 + k), columns)), shape=(labels.n_tasks, n_workers * width)
    )

    def statistics(sums: np.ndarray) -> np.ndarray:
        s = sums.reshape(len(sums), n_workers, width)
        n = s[..., 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            agreement = s[..., 1] / n
            p_e = (s[..., 2 : 2 + k] * s[..., 2 + k :]).sum(axis=-1) / n**2
            kappa = np.where(p_e < 1, (agreement - p_e) / (1 - p_e), np.nan)
        return np.stack([agreement, kappa], axis=-1)

    point = statistics(np.asarray(per_unit.sum(axis=0)))[0]
    totals = np.asarray(per_unit.sum(axis=0)).reshape(n_workers, width)
    table = pd.DataFrame(
        {
            "n_labels": np.bincount(labels.worker_codes, minlength=n_workers),
            "n_compared": totals[:, 0].astype(np.int64),
            "agreement": point[:, 0],
            "kappa": point[:, 1],
        },
        index=pd.Index(labels.workers, name="worker"),
    )
    if n_boot:
        rng = np.random.default_rng(random_state)
        replicates = _bootstrap(per_unit, statistics, n_boot, rng)
        lower, upper = _interval(replicates[..., 0], confidence)
        table["agreement_lower"], table["agreement_upper"] = lower, upper
        lower, upper = _interval(replicates[..., 1], confidence, point[:, 1])
        table["kappa_lower"], table["kappa_upper"] = lower, upper
    return table.sort_values("agreement", kind="stable")


# ------------------------------------------------------------------------ the summary
def agreement_table(
    labels: Labels | TableLike,
    *,
    levels: Sequence[str] | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    min_common: int = 10,
    random_state=None,
) -> pd.DataFrame:
    """Every agreement statistic of the labels with bootstrap intervals over tasks.

    Parameters
    ----------
    labels : Labels, DataFrame or path
    levels : sequence of str, optional
        Krippendorff's levels to report. Default: nominal, plus ordinal and interval when
        there are more than two classes and all are numbers.
    n_boot : int
        Bootstrap replicates (0: no intervals). The pairwise Cohen's κ gets an interval only
        when its bootstrap stays small (at most 3·10⁸ pairs of labels on a task ×
        replicates); its
        ``note`` says when it was skipped.
    confidence : float
        Mass of the intervals (default 0.95).
    min_common : int
        Worker pairs sharing fewer tasks are left out of the mean pairwise Cohen's κ.
    random_state : int, Generator or None

    Returns
    -------
    DataFrame
        Indexed by ``statistic``: ``estimate``, ``lower``, ``upper``, ``units`` (tasks, or
        worker pairs for Cohen's κ) and ``note`` (the kind of interval where it is the normal
        one, or why there is none).
    """
    _check_bootstrap(n_boot, confidence)
    labels = _labels(labels)
    if levels is None:
        levels = ["nominal"]
        numeric = not pd.to_numeric(pd.Series(list(labels.classes)), errors="coerce").isna().any()
        if numeric and labels.n_classes > 2:
            levels += ["ordinal", "interval"]
    for level in levels:
        _check_level(level)
    rng = np.random.default_rng(random_state)
    rows = []

    def add(name, per_unit, finish, units, normal=False):
        estimate = float(finish(np.asarray(per_unit.sum(axis=0)).reshape(1, -1))[0])
        lower = upper = np.nan
        if n_boot and per_unit.shape[0] > 0:
            replicates = _bootstrap(per_unit, finish, n_boot, rng)[:, None]
            centre = np.array([estimate]) if normal else None
            low, high = _interval(replicates, confidence, centre)
            lower, upper = float(low[0]), float(high[0])
        note = "normal bootstrap interval" if normal and n_boot else ""
        rows.append((name, estimate, lower, upper, units, note))

    fleiss = _fleiss_per_unit(labels)
    _pairable_or_raise(fleiss, "agreement_table")
    for level in levels:
        per_unit, finish = _alpha_per_unit(labels, level)
        add(f"Krippendorff's alpha ({level})", per_unit, finish, len(per_unit))
    add("Fleiss' kappa", fleiss, _fleiss, len(fleiss))
    add("pairwise percent agreement", fleiss, _percent_agreement, len(fleiss))

    a, b, tables = _pair_tables(labels, min_common)
    name = f"mean pairwise Cohen's kappa (pairs sharing >= {min_common} tasks)"
    kappas = _kappa_of_tables(tables)
    usable = np.isfinite(kappas)
    if not usable.any():
        rows.append((name, np.nan, np.nan, np.nan, 0, "no worker pair shares enough tasks"))
    else:
        a, b, k = a[usable], b[usable], labels.n_classes
        if n_boot and _co_label_count(labels) * n_boot <= _COHEN_BOOTSTRAP_BUDGET:
            per_unit = _cohen_per_unit(labels, a, b)

            def mean_kappa(sums: np.ndarray) -> np.ndarray:
                kappa = _kappa_of_tables(sums.reshape(len(sums), len(a), k, k))
                with np.errstate(all="ignore"):
                    return np.nanmean(np.where(np.isfinite(kappa), kappa, np.nan), axis=1)

            add(name, per_unit, mean_kappa, len(a), normal=True)
        else:
            note = "no interval: too many worker pairs for the bootstrap" if n_boot else ""
            rows.append((name, float(kappas[usable].mean()), np.nan, np.nan, len(a), note))
    return pd.DataFrame(
        rows, columns=["statistic", "estimate", "lower", "upper", "units", "note"]
    ).set_index("statistic")
