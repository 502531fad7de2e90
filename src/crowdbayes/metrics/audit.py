r"""Expert audits of inferred labels: a designed sample, and the accuracy it certifies.

The labels alone cannot say how accurate the answers are (the model's own confidence is only as
good as its model of the workers). A small audit can: an expert checks the answer of ``n``
tasks drawn by a design with known inclusion probabilities :math:`\pi_i`, and the accuracy over
*all* ``N`` tasks is estimated with an interval whose validity rests on the draw alone.

**Designs** (:func:`plan_audit`). ``"uniform"``: ``n`` of the ``N`` tasks without replacement,
:math:`\pi_i = n/N`. ``"stratified"``: the tasks sorted by the confidence of their answer
:math:`f_i = \max_k p_{ik}` and cut into ``H`` strata of near-equal size :math:`N_h`; stratum
``h`` gets :math:`n_h \ge 2` tasks without replacement, :math:`\pi_i = n_h/N_h` — allocated in
proportion to :math:`N_h` (``"proportional"``) or to :math:`N_h S_h` with
:math:`S_h^2 = \overline{f(1-f)}_h` the model's own variance of correctness
(``"neyman"``, Neyman 1934). The probabilities are exact: nothing but the strata (fixed before
the draw) and the counts enter them. Proportional allocation is the default: Neyman's leaves two
or three audits to the confident strata, too few to estimate their variance when the model is
overconfident there (in the replays of ``benchmarks/active/audit_coverage.py --design
stratified-neyman`` the 90% interval held the accuracy in as few as 0.68 of the audits, and was
wider on average).

**Estimate** (:func:`audit_accuracy`). With :math:`y_i = 1[\text{expert label} = \text{answer}]`
on the audited set :math:`S` and the model's confidence :math:`f_i` on every task, the
prediction-powered estimate (PPI, Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023,
*Science* 382:669; PPI++, Angelopoulos, Duchi & Zrnic 2024, arXiv:2311.01453) of the accuracy
:math:`\theta = N^{-1}\sum_i y_i` uses the predictions everywhere and the audit as the
correction, weighted by Horvitz & Thompson (1952) for the design:

.. math::
    \hat\theta_\lambda = \frac1N\Big(\lambda \sum_{i=1}^N f_i
        + \sum_{i \in S} \frac{y_i - \lambda f_i}{\pi_i}\Big).

It is unbiased for every fixed :math:`\lambda` whatever the quality of :math:`f` (the second
sum is the HT estimate of :math:`\sum_i (y_i - \lambda f_i)`); :math:`\lambda = 0` is the
audit-only HT estimate, :math:`\lambda = 1` PPI, and PPI++'s power tuning takes the
:math:`\lambda` that minimises the estimated variance,
:math:`\hat\lambda = \widehat{\mathrm{Cov}}(\hat T_y, \hat T_f) / \widehat{\mathrm{Var}}(\hat T_f)`
clipped to [0, 1] (with every task's :math:`f_i` known, the "unlabelled" mean has no sampling
error, so PPI++'s factor :math:`1 + n/N` is 1; this is also the difference/regression estimator
of survey sampling, Särndal, Swensson & Wretman 1992, ch. 6). The variance of a total
:math:`\hat T_z = \sum_{S} z_i/\pi_i` under stratified sampling without replacement is
estimated per stratum from :math:`u_i = z_i/\pi_i`,

.. math::
    \hat V(\hat T_z) = \sum_h (1 - \bar\pi_h)\, \frac{n_h}{n_h - 1} \sum_{i \in S_h}
        (u_i - \bar u_h)^2,

which is :math:`N_h^2 (1 - n_h/N_h) s_h^2 / n_h` for equal :math:`\pi` in a stratum (Cochran
1977, 5.9). The interval is of the score type, as Wilson's (1927) for a proportion: a Wald
interval :math:`\hat\theta \pm z \hat V^{1/2}/N` has too little coverage for the small audits
and the accuracies near 1 that matter here (an audit without an error has :math:`\hat V = 0`),
because the variance estimate falls with the estimate. The variance is instead taken at each
candidate accuracy :math:`t`, the part of it the audit's binomial spread makes replaced by its
value at :math:`t`:

.. math::
    V(t) = \hat V_e + c\,\big(t(1-t) - \hat p(1-\hat p)\big), \qquad
    c = N^{-2} \sum_h (1 - \bar\pi_h)\, \hat N_h^2 / n_h,

with :math:`\hat V_e` the estimated variance of :math:`\hat\theta_\lambda` (of the residual
:math:`y - \lambda f`), :math:`\hat p = \sum_S y_i/\pi_i / \sum_S 1/\pi_i` the audit's
weighted share right (Hájek 1971) and :math:`c` the variance
of the HT mean of a unit-variance variable (:math:`\hat N_h = \sum_{S_h} 1/\pi_i`); the
interval is :math:`\{t : (\hat\theta - t)^2 \le z^2 V(t)\}`, the roots of a quadratic, with
:math:`z` the normal quantile and, for the tuned :math:`\lambda`, :math:`\hat V_e` scaled by
:math:`(n - H)/(n - H - 1)`: the residual of a fitted regression coefficient has one degree of
freedom less than the :math:`n - H` of the strata's means (Särndal et al. 1992, 6.6).
For :math:`\lambda = 0` under uniform sampling it is the Wilson
interval (with the finite-population correction); the prediction lowers it by what the model's
confidence explains. (Student's quantile at the residual's degrees of freedom in place of the
scaling was tried: over 2,000 seeded audits per set and size on the shared sets both kept the
coverage at 0.88 or more in every row; the scaling was narrower — narrower than Wilson's on
average on 10 of 12 sets against 9; `benchmarks/active/audit_coverage.py`.)

**Few errors.** A score interval still misses where the audit holds one or two errors among
thirty tasks and the accuracy is near 1 (a set of 177 tasks with one wrong answer: the 17% of
audits that catch it gave an upper bound below the truth). As in Brown, Cai & DasGupta's (2001)
modified Wilson interval, when the audited tasks of the domain number :math:`n \le 50` and
hold :math:`x \in \{1, 2\}` errors (:math:`x \le 3` for :math:`n \le 100`), the upper bound is
raised to the Poisson one, :math:`1 - \chi^2_{2x,\,\alpha/2} / (2n)`, and likewise the lower
bound with :math:`x` right answers; it only widens the interval, and only for such audits.

**Per class.** The accuracy of the tasks *answered* class ``c`` is a domain mean: the same
formulas with :math:`y_i, f_i` set to zero outside the domain, :math:`N_c` (known) in place
of :math:`N`, and in :math:`c` the domain's audited tasks and :math:`\hat N_h` per stratum.

**How many more audited tasks would halve the interval.** Scaling every :math:`n_h` by
:math:`k` scales :math:`u` by :math:`1/k`, so :math:`\hat V(k) = A/k - B` with
:math:`A = \sum_h n_h s_{u,h}^2` and :math:`B = \sum_h \bar\pi_h n_h s_{u,h}^2`; the half width
is halved at :math:`k = 4A/(A + 3B)` — :math:`k = 4`, three times the audit more, when the
sampling fractions are small; :math:`4/(1 + 3n/N)` for an audit whose residual has no spread —
capped at auditing every task.

References: Brown, L. D., Cai, T. T. & DasGupta, A. (2001). Interval estimation for a
binomial proportion. *Statistical Science* 16(2):101–133.

For comparison the audit alone gives the Wilson (1927) score interval of the audited share
right, with the finite-population correction (:math:`n` replaced by :math:`n/(1 - n/N)`),
valid for a self-weighting design (uniform, or proportional allocation).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._utils import as_generator

__all__ = [
    "AUDIT_ALLOCATIONS",
    "AUDIT_DESIGNS",
    "answers_of",
    "audit_accuracy",
    "check_audit",
    "plan_audit",
]

AUDIT_DESIGNS = ("stratified", "uniform")
AUDIT_ALLOCATIONS = ("proportional", "neyman")
#: audited tasks per stratum (at most five strata) of the default stratified design
TASKS_PER_STRATUM = 10
MAX_STRATA = 5


def answers_of(
    posteriors: pd.DataFrame, answers: pd.Series | None = None
) -> tuple[pd.Series, np.ndarray]:
    """Each task's answer (``answers``, default its most probable class, the first of a tie)
    and the probability :math:`f_i` that it is right (its posterior probability), from a
    tasks × classes table."""
    if not isinstance(posteriors, pd.DataFrame) or posteriors.shape[1] < 2:
        raise TypeError("posteriors must be a DataFrame of class probabilities (tasks x classes)")
    values = posteriors.to_numpy(dtype=np.float64)
    if len(values) == 0:
        raise ValueError("posteriors: no task")
    if not np.isfinite(values).all():
        raise ValueError("posteriors: missing or infinite probabilities")
    if answers is None:
        codes = values.argmax(axis=1)
    else:
        codes = posteriors.columns.get_indexer(answers.reindex(posteriors.index))
        if (codes < 0).any():
            raise ValueError("answers: a task's answer is not one of the posteriors' classes")
    answer = pd.Series(posteriors.columns[codes], index=posteriors.index, name="answer")
    return answer, values[np.arange(len(values)), codes]


# ---------------------------------------------------------------------------- the design
def plan_audit(
    posteriors: pd.DataFrame,
    n: int,
    *,
    design: str = "stratified",
    allocation: str = "proportional",
    n_strata: int | None = None,
    answers: pd.Series | None = None,
    random_state=None,
) -> pd.DataFrame:
    """Draw ``n`` tasks for an expert to check (module docstring: the designs).

    Returns a DataFrame with one row per drawn task, in random order: ``task``,
    ``inclusion_probability`` (exact), ``stratum`` (0 = least confident) and ``answer``.
    ``n_strata`` defaults to one per :data:`TASKS_PER_STRATUM` audited tasks, at most
    :data:`MAX_STRATA`. ``answers`` defaults to each task's most probable class.
    """
    answer, confidence = answers_of(posteriors, answers)
    total = len(answer)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"audit size must be a positive integer; got {n!r}")
    if n > total:
        raise ValueError(f"audit size {n} is larger than the {total} tasks")
    if design not in AUDIT_DESIGNS:
        raise ValueError(f"design must be one of {AUDIT_DESIGNS}; got {design!r}")
    if allocation not in AUDIT_ALLOCATIONS:
        raise ValueError(f"allocation must be one of {AUDIT_ALLOCATIONS}; got {allocation!r}")
    rng = as_generator(random_state)
    if design == "uniform":
        strata = np.zeros(total, dtype=np.int64)
        sizes = np.array([n])
    else:
        default = min(MAX_STRATA, max(1, n // TASKS_PER_STRATUM))
        h = default if n_strata is None else int(n_strata)
        if not 1 <= h <= max(1, min(n, total) // 2):
            raise ValueError(f"n_strata must lie in [1, {max(1, n // 2)}] for n={n}; got {h}")
        strata = _confidence_strata(confidence, h)
        weights = np.bincount(strata).astype(np.float64)
        if allocation == "neyman":
            f = confidence
            spread = np.sqrt(np.bincount(strata, weights=f * (1 - f)) / weights)
            weights = weights * np.maximum(spread, 1e-3)
        sizes = _allocate(n, np.bincount(strata), weights)
    chosen = np.concatenate(
        [
            rng.choice(np.flatnonzero(strata == h), size=int(k), replace=False)
            for h, k in enumerate(sizes)
        ]
    )
    chosen = rng.permutation(chosen)
    population = np.bincount(strata)
    table = pd.DataFrame(
        {
            "task": answer.index[chosen],
            "inclusion_probability": sizes[strata[chosen]] / population[strata[chosen]],
            "stratum": strata[chosen],
            "answer": answer.to_numpy()[chosen],
        }
    )
    return table


def _confidence_strata(confidence: np.ndarray, h: int) -> np.ndarray:
    """``h`` strata of near-equal size by increasing confidence (ties by task order)."""
    order = np.argsort(confidence, kind="stable")
    strata = np.empty(len(confidence), dtype=np.int64)
    for code, part in enumerate(np.array_split(order, h)):
        strata[part] = code
    return strata


def _allocate(n: int, sizes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Integers ``n_h`` summing to ``n`` close to ``n w_h / sum(w)``, with ``2 <= n_h <= N_h``
    (or ``N_h`` for a stratum smaller than 2): each unit goes to the stratum furthest below its
    share."""
    alloc = np.minimum(sizes, 2)
    target = n * weights / weights.sum()
    for _ in range(n - int(alloc.sum())):
        room = np.where(alloc < sizes, target - alloc, -np.inf)
        alloc[int(np.argmax(room))] += 1
    return alloc


# ---------------------------------------------------------------------------- the estimate
def audit_accuracy(
    posteriors: pd.DataFrame,
    audit: pd.DataFrame,
    *,
    level: float = 0.9,
    answers: pd.Series | None = None,
) -> pd.DataFrame:
    """The accuracy of the answers over all tasks from an expert audit (module docstring).

    ``audit`` has ``task``, ``inclusion_probability`` and ``label`` (the expert's class), and
    optionally ``stratum`` (the design's strata; without it the tasks of equal inclusion
    probability form a stratum, which is exact for :func:`plan_audit`'s designs unless two
    strata share a probability, and conservative then). ``answers`` defaults to each task's
    most probable class.

    Returns one row for ``"all"`` then one per answered class: ``tasks`` (:math:`N_d`),
    ``audited``, ``estimate``, ``lower``, ``upper`` (the PPI++ interval at ``level``),
    ``lambda``, ``more_to_halve`` (audited tasks to add, by the same design, to halve the
    interval), ``audit_only`` (the HT estimate, :math:`\\lambda = 0`), ``audit_only_lower``,
    ``audit_only_upper`` (its interval, same variance rules), ``wilson_lower``,
    ``wilson_upper`` (the audit-only Wilson interval).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level!r}")
    answer, f = answers_of(posteriors, answers)
    codes = posteriors.columns.get_indexer(answer)
    sample = check_audit(audit, posteriors.index, posteriors.columns)
    where = posteriors.index.get_indexer(sample["task"])
    y = (sample["label_code"].to_numpy() == codes[where]).astype(np.float64)
    pi = sample["inclusion_probability"].to_numpy(np.float64)
    strata = _strata(sample, pi)
    rows = {"all": _domain(y, f[where], pi, strata, f, np.ones(len(y), bool), level, len(y))}
    for j, c in enumerate(posteriors.columns):
        members = codes == j
        if members.any():
            rows[c] = _domain(y, f[where], pi, strata, f[members], codes[where] == j, level, len(y))
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("answered")
    # auditing every task leaves no interval: never more than the tasks not audited yet
    table["more_to_halve"] = table["more_to_halve"].clip(upper=len(posteriors) - len(y))
    return table


def check_audit(audit: pd.DataFrame, tasks: pd.Index, classes: pd.Index) -> pd.DataFrame:
    """The audit table checked against the tasks and classes (a ``ValueError`` of one line
    for anything wrong), with ``inclusion_probability`` as numbers and ``label_code`` the
    position of each label among ``classes`` (labels matched as text)."""
    if not isinstance(audit, pd.DataFrame):
        raise TypeError(f"audit must be a DataFrame; got {type(audit).__name__}")
    for name in ("task", "inclusion_probability", "label"):
        if name not in audit.columns:
            raise ValueError(f"audit: column {name!r} is missing; got {list(audit.columns)}")
    if len(audit) == 0:
        raise ValueError("audit: no audited task")
    if audit["task"].duplicated().any():
        raise ValueError(f"audit: task {audit['task'][audit['task'].duplicated()].iloc[0]!r} twice")
    unknown = pd.Index(tasks).get_indexer(pd.Index(audit["task"])) < 0
    if unknown.any():
        raise ValueError(
            f"audit: {int(unknown.sum())} task(s) not among the {len(tasks)} tasks, e.g. "
            f"{audit['task'][unknown].iloc[0]!r}"
        )
    pi = pd.to_numeric(audit["inclusion_probability"], errors="coerce").to_numpy(np.float64)
    bad = ~((pi > 0) & (pi <= 1))
    if bad.any():
        raise ValueError(
            "audit: inclusion_probability must lie in (0, 1] on every row; got "
            f"{audit['inclusion_probability'].iloc[int(np.argmax(bad))]!r}"
        )
    blank = audit["label"].isna() | (audit["label"].astype(str).str.strip() == "")
    if blank.any():
        raise ValueError(
            f"audit: {int(blank.sum())} audited task(s) without a label, e.g. "
            f"{audit['task'][blank].iloc[0]!r} (the design needs every drawn task checked)"
        )
    names = {str(c): j for j, c in enumerate(classes)}
    codes = audit["label"].map(lambda v: names.get(str(v).strip(), -1)).to_numpy(np.int64)
    if (codes < 0).any():
        raise ValueError(
            f"audit: label {audit['label'].iloc[int(np.argmax(codes < 0))]!r} is not one of the "
            f"classes {list(classes)}"
        )
    represented = float((1.0 / pi).sum())
    if abs(represented - len(tasks)) > 0.5 + 1e-9 * len(tasks):
        raise ValueError(
            f"audit: the inclusion probabilities stand for {represented:.1f} tasks (the sum of "
            f"1/inclusion_probability), the input has {len(tasks)}: plan the audit on "
            "these labels, and keep every drawn task"
        )
    checked = audit.assign(inclusion_probability=pi, label_code=codes)
    return checked.reset_index(drop=True)


def _strata(sample: pd.DataFrame, pi: np.ndarray) -> np.ndarray:
    """Stratum codes (the ``stratum`` column, else equal inclusion probabilities); a stratum
    with one audited task is merged into its neighbour of closest probability (collapsed
    strata, Cochran 1977, 5A.12: a conservative variance)."""
    if "stratum" in sample.columns and sample["stratum"].notna().all():
        keys = sample["stratum"].astype(str).to_numpy()
    else:
        keys = np.round(pi, 12)
    _, codes = np.unique(keys, return_inverse=True)
    order = np.argsort([pi[codes == h].mean() for h in range(codes.max() + 1)])
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    codes = rank[codes]
    while codes.max() > 0:
        counts = np.bincount(codes)
        if counts.min() >= 2:
            break
        lone = int(np.argmin(counts))
        codes[codes == lone] = lone - 1 if lone > 0 else 1
        _, codes = np.unique(codes, return_inverse=True)
    return codes.ravel()


def _covariance(values, pi, strata, n_h) -> np.ndarray:
    """Per stratum :math:`n_h s^2_{u,h}` (strata × m × m) of :math:`u = z/\\pi` for the
    columns ``z`` of ``values``; :math:`\\hat V` of the HT totals is their sum weighted by
    :math:`1 - \\bar\\pi_h`. ``n_h``: the audited tasks per stratum (two or more)."""
    u = values / pi[:, None]
    terms = np.zeros((len(n_h), u.shape[1], u.shape[1]))
    for h in range(len(n_h)):
        dev = u[strata == h] - u[strata == h].mean(axis=0)
        terms[h] = n_h[h] * (dev.T @ dev) / max(n_h[h] - 1, 1)
    return terms


def _domain(y, f_sample, pi, strata, f_domain, inside, level, n_total) -> dict:
    """The estimates of one domain (all tasks, or those answered one class)."""
    size = len(f_domain)
    row = {"tasks": size, "audited": int(inside.sum())}
    from scipy import stats  # imported when used: metrics imports light

    z = stats.norm.ppf(0.5 + level / 2)
    n_h = np.bincount(strata)
    pi_bar = np.bincount(strata, weights=pi) / n_h
    yd, fd = np.where(inside, y, 0.0), np.where(inside, f_sample, 0.0)
    terms = _covariance(np.column_stack([yd, fd]), pi, strata, n_h)
    cov = ((1 - pi_bar)[:, None, None] * terms).sum(axis=0)
    lam = float(np.clip(cov[0, 1] / cov[1, 1], 0.0, 1.0)) if cov[1, 1] > 0 else 1.0
    design = (pi, strata, n_h, pi_bar, inside, size, z, 1 - level)
    # the audit's weighted share right in the domain (Hájek): the binomial spread's centre
    p_hat = float((yd / pi).sum() / (inside / pi).sum()) if inside.any() else np.nan
    ppi = _interval(yd, fd, lam, f_domain.sum(), design, p_hat, tuned=True)
    alone = _interval(yd, fd, 0.0, 0.0, design, p_hat, tuned=False)
    k = ppi.pop("k")
    more = int(np.ceil((k - 1.0) * n_total - 1e-9)) if np.isfinite(k) else np.nan
    row.update(ppi)
    row.update(
        {
            "lambda": lam,
            "more_to_halve": more,
            "audit_only": alone["estimate"],
            "audit_only_lower": alone["lower"],
            "audit_only_upper": alone["upper"],
        }
    )
    row.update(_wilson(yd[inside], size, stats.norm.ppf(0.5 + level / 2)))
    return row


def _interval(yd, fd, lam, f_total, design, p_hat, tuned: bool) -> dict:
    """:math:`\\hat\\theta_\\lambda`, its score-type interval (module docstring) and the
    factor ``k`` of the audit size that halves the interval; ``p_hat`` is the audit's
    weighted share right; ``tuned``: λ was estimated from the audit (one degree of freedom
    less for the residual's variance)."""
    pi, strata, n_h, pi_bar, inside, size, z, alpha = design
    if not inside.any():
        return {"estimate": np.nan, "lower": np.nan, "upper": np.nan, "k": np.nan}
    e = yd - lam * fd
    estimate = float((lam * f_total + (e / pi).sum()) / size)
    terms = _covariance(e[:, None], pi, strata, n_h)[:, 0, 0]
    a, b = terms.sum(), (pi_bar * terms).sum()
    v_e = (a - b) / size**2
    audited = np.bincount(strata[inside], minlength=len(n_h))
    if tuned:  # a regression residual: n - H degrees of freedom less one for lambda
        free = int(inside.sum()) - int((audited > 0).sum())
        v_e *= free / max(free - 1, 1)
    weight = np.bincount(strata[inside], weights=1 / pi[inside], minlength=len(n_h))
    seen = audited > 0
    c = float(((1 - pi_bar[seen]) * weight[seen] ** 2 / audited[seen]).sum() / size**2)
    p = min(max(p_hat, 0.0), 1.0)
    lower, upper = _score_interval(estimate, v_e - c * p * (1 - p), c, z)
    lower, upper = _few_errors(lower, upper, yd[inside], alpha)
    fraction = float(inside.sum() / size)
    k = 4 * a / (a + 3 * b) if a > 0 else 4 / (1 + 3 * fraction)
    return {"estimate": estimate, "lower": lower, "upper": upper, "k": k}


def _score_interval(estimate: float, shift: float, c: float, z: float) -> tuple[float, float]:
    """The :math:`t \\in [0, 1]` with :math:`(\\hat\\theta - t)^2 \\le z^2 (s + c\\,t(1-t))`:
    the roots of :math:`(1 + z^2 c) t^2 - (2\\hat\\theta + z^2 c) t + \\hat\\theta^2 - z^2 s`
    (Wilson's interval for :math:`s = 0`, :math:`c = 1/n`)."""
    quad = 1 + z**2 * c
    lin = 2 * estimate + z**2 * c
    const = estimate**2 - z**2 * shift
    disc = lin**2 - 4 * quad * const
    if disc < 0:  # the variance at the estimate itself is negative: no spread left to show
        return max(min(estimate, 1.0), 0.0), max(min(estimate, 1.0), 0.0)
    root = np.sqrt(disc)
    return max((lin - root) / (2 * quad), 0.0), min((lin + root) / (2 * quad), 1.0)


def _few_errors(lower: float, upper: float, correct: np.ndarray, alpha: float):
    """The bounds widened to the Poisson ones where the audit holds one or two errors (or right
    answers) among at most 50 tasks, up to three among at most 100 (module docstring, "Few
    errors"; Brown, Cai & DasGupta 2001)."""
    from scipy import stats

    n = len(correct)
    right = int(correct.sum())
    for count, is_upper in ((n - right, True), (right, False)):
        if (n <= 50 and count in (1, 2)) or (50 < n <= 100 and count in (1, 2, 3)):
            bound = float(stats.chi2.ppf(alpha / 2, 2 * count)) / (2 * n)
            if is_upper:
                upper = max(upper, 1.0 - bound)
            else:
                lower = min(lower, bound)
    return lower, upper


def _wilson(correct: np.ndarray, size: int, z: float) -> dict:
    """The audit-only Wilson score interval, with the finite-population correction."""
    n = len(correct)
    if n == 0:
        return {"wilson_lower": np.nan, "wilson_upper": np.nan}
    p = correct.mean()
    fraction = n / size
    if fraction >= 1:
        return {"wilson_lower": float(p), "wilson_upper": float(p)}
    m = n / (1 - fraction)
    centre = (p + z**2 / (2 * m)) / (1 + z**2 / m)
    half = z / (1 + z**2 / m) * np.sqrt(p * (1 - p) / m + z**2 / (4 * m**2))
    return {"wilson_lower": max(centre - half, 0.0), "wilson_upper": min(centre + half, 1.0)}
