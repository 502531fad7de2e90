r"""Uncertainty of a leaderboard: three covariances or draws of the parameters, and the ranks.

- **Laplace** (the Bayesian posterior's Gaussian approximation at its mode): :math:`M^{-1}`,
  ``M`` minus the Hessian of the log posterior.
- **Sandwich** (Huber 1967; the arena's intervals, Chiang et al. 2024):
  :math:`M^{-1} J M^{-1}`, :math:`J = \sum_r n_r u_r u_r^\top` the outer products of the
  one-battle gradients ``u_r`` of the counted rows: robust to a misspecified likelihood.
- **Bootstrap** (Efron 1979) over the deduplicated battles: a replicate draws the ``N``
  battles again, i.e. counts :math:`(n^*_r) \sim \mathrm{Multinomial}(N, n_r / N)` over the
  counted rows, and refits by Newton from the full-data mode (a few steps each: the objective
  changes little). Percentile intervals. With covariates on many distinct rows (continuous
  covariates make nearly every battle its own row) a replicate is not refitted to convergence
  but takes :data:`K_STEPS` Newton steps with the full-data Hessian held fixed: the *k-step
  bootstrap* (:func:`kstep_draws`).

Scores are reported centred (their mean 0), so every covariance is projected:
:math:`P\,\Sigma_{ss} P` with :math:`P = I - \tfrac1n 11^\top`.

**Sparse path** (boards above ``SPARSE_MODELS`` models, minus the Hessian a
:class:`._battles_fit.SparseHessian`; Laplace only, :func:`sparse_laplace`): no dense inverse.
The centred scores' variances are the diagonal of :math:`P M^{-1} P`,
:math:`(P\Sigma P)_{ii} = \Sigma_{ii} - 2(\Sigma u)_i/n + u^\top\Sigma u/n^2` (``u`` the
scores' indicator: one solve); :math:`\Sigma_{ii}` exactly, by conjugate-gradient solves of
identity columns in blocks, while that costs little (:data:`EXACT_VARIANCE_WORK`), and above by
Hutchinson's (1990) stochastic diagonal estimator (Bekas, Kokiopoulou & Saad 2007) with a
control variate: with ``D``, ``O`` the diagonal and off-diagonal parts of the sparse score
block, :math:`G = D^{-1} - D^{-1}OD^{-1} + D^{-1}OD^{-1}OD^{-1}` (the Neumann series to second
order, whose diagonal :math:`1/D_i + \sum_j O_{ij}^2/(D_i^2 D_j)` is exact and cheap), and
:math:`\Sigma_{ii} \approx G_{ii} + \tfrac1K\sum_k v_{ki}\,[(\Sigma - G) v_k]_i` over ``K``
Rademacher probes :math:`v_k` (:data:`N_PROBES` solves at once). The estimate is unbiased; its
error comes only from the off-diagonal entries of :math:`\Sigma - G` (the Neumann series'
third and later terms: paths of three or more comparisons, small on a well-mixed comparison
graph where each model meets many others), and its Monte Carlo standard error is returned with
it (0.2% of a variance for 100,000 models in about 200 battles each, with 32 probes; the tests
check it against the exact variances). The covariates' and θ's covariance block is exact (one
solve per parameter). Draws for the ranks are then independent Gaussians with these marginal
variances (the scores' correlations, of order :math:`1/d` between opponents and far smaller
otherwise, are left out): :func:`independent_draws`.

Ranks: a model's rank in a draw is one plus the number of models with a higher score; from
draws of the scores (Gaussian for Laplace and sandwich, the replicates for the bootstrap) come
each model's rank interval, P(rank 1) and the whole table P(rank = r).
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from ...data.battles import TIE
from ._battles_fit import BattleProblem, Cholesky, Mode, SparseHessian

#: bootstrap replicates refitted together (memory: this many Hessians)
BOOTSTRAP_BATCH = 50
#: Newton steps of a k-step bootstrap replicate (:func:`kstep_draws`)
K_STEPS = 2
#: with covariates, boards of more counted rows than this take the k-step bootstrap (a full
#: refit costs a pass over the rows per Newton step and replicate)
KSTEP_ROWS = 20_000
#: sparse path: score variances by exact solves while models × stored Hessian entries is at
#: most this (a solve per model, each O(entries) per iteration), estimated above
EXACT_VARIANCE_WORK = 5e8
#: sparse path: identity columns per block of exact solves; probes of the estimator
VARIANCE_BLOCK, N_PROBES = 256, 32

__all__ = [
    "centred_covariance",
    "independent_draws",
    "sparse_laplace",
    "sandwich_covariance",
    "bootstrap_draws",
    "kstep_draws",
    "gaussian_draws",
    "rank_draws",
    "rank_table",
]


def centred_covariance(cov: np.ndarray, n: int) -> np.ndarray:
    """The covariance of the centred scores from one of all parameters (first ``n`` scores),
    the other parameters' rows and columns kept (their covariance with the centred scores)."""
    out = cov.copy()
    mean_rows = out[:n].mean(axis=0)
    out[:n] -= mean_rows
    out[:, :n] -= out[:, :n].mean(axis=1, keepdims=True)
    return out


def laplace_covariance(mode: Mode, n: int) -> np.ndarray:
    return centred_covariance(np.linalg.inv(mode.matrix), n)


def sparse_laplace(
    hessian: SparseHessian,
    rng: np.random.Generator,
    *,
    exact_work: float | None = None,
    n_probes: int | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """The Laplace variances of the centred scores (n,), the exact covariance of the other
    parameters, and the largest relative Monte Carlo standard error of a score variance (0
    when exact), from minus the Hessian in sparse form (module docstring)."""
    n, size = hessian.n, hessian.shape[0]
    exact_work = EXACT_VARIANCE_WORK if exact_work is None else exact_work
    n_probes = N_PROBES if n_probes is None else n_probes
    units = np.zeros((size, size - n + 1))
    units[:n, 0] = 1.0
    units[np.arange(n, size), np.arange(1, size - n + 1)] = 1.0
    solved = hessian.solve(units)
    sigma_u, other = solved[:n, 0], solved[n:, 1:]
    error = 0.0
    if n * hessian.matrix.nnz <= exact_work:
        diagonal = np.empty(n)
        for start in range(0, n, VARIANCE_BLOCK):
            stop = min(start + VARIANCE_BLOCK, n)
            columns = np.zeros((size, stop - start))
            columns[np.arange(start, stop), np.arange(stop - start)] = 1.0
            diagonal[start:stop] = hessian.solve(columns)[
                np.arange(start, stop), np.arange(stop - start)
            ]
    else:
        diagonal, error = _estimated_diagonal(hessian, rng, n_probes)
    variance = diagonal - 2.0 * sigma_u / n + sigma_u.sum() / n**2
    return np.clip(variance, 0.0, None), (other + other.T) / 2, error


def _estimated_diagonal(
    hessian: SparseHessian, rng: np.random.Generator, n_probes: int
) -> tuple[np.ndarray, float]:
    """Hutchinson's estimate of the scores' part of diag(M⁻¹) with the second-order Neumann
    control variate (module docstring), and its largest relative standard error."""
    n, size = hessian.n, hessian.shape[0]
    block = hessian.matrix[:n, :n].tocsr()
    block.sum_duplicates()  # rows of one pair with different covariates
    d = block.diagonal()
    import scipy.sparse as sp  # the sparse path only: a small board's fit never imports scipy

    off = (block - sp.diags(d)).tocsr()
    squared = off.multiply(off)
    control_diagonal = 1.0 / d + (squared @ (1.0 / d)) / d**2
    probes = np.zeros((size, n_probes))
    probes[:n] = rng.choice((-1.0, 1.0), (n, n_probes))
    solved = hessian.solve(probes)[:n]
    w = probes[:n] / d[:, None]
    y = (off @ w) / d[:, None]
    control = w - y + (off @ y) / d[:, None]
    terms = probes[:n] * (solved - control)
    estimate = control_diagonal + terms.mean(axis=1)
    se = terms.std(axis=1, ddof=1) / np.sqrt(n_probes)
    return estimate, float(np.max(se / np.abs(estimate)))


def independent_draws(
    mean: np.ndarray,
    score_variance: np.ndarray,
    other_cov: np.ndarray,
    n_draws: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """(n_draws, parameters) Gaussian draws with the scores independent of each other and of
    the other parameters, which are jointly Gaussian with ``other_cov`` (sparse path)."""
    n = len(score_variance)
    out = np.empty((n_draws, len(mean)))
    out[:, :n] = mean[:n] + rng.standard_normal((n_draws, n)) * np.sqrt(score_variance)
    if len(mean) > n:
        out[:, n:] = gaussian_draws(mean[n:], other_cov, n_draws, rng)
    return out


def sandwich_covariance(problem: BattleProblem, mode: Mode) -> np.ndarray:
    """:math:`M^{-1} J M^{-1}` (module docstring), centred."""
    scores = problem.score_matrix(mode.z)
    count = problem.counts.count.astype(np.float64)
    meat = (scores.T @ scores.multiply(count[:, None])).toarray()
    inverse = np.linalg.inv(mode.matrix)
    return centred_covariance(inverse @ meat @ inverse, problem.n)


def gaussian_draws(
    mean: np.ndarray, cov: np.ndarray, n_draws: int, rng: np.random.Generator
) -> np.ndarray:
    """(n_draws, len(mean)) Gaussian draws (the covariance may be singular: centred scores)."""
    values, vectors = np.linalg.eigh((cov + cov.T) / 2)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    return mean + rng.standard_normal((n_draws, len(mean))) @ root.T


def multinomial_counts(rng: np.random.Generator, counts: np.ndarray, size: int) -> np.ndarray:
    r"""(size, rows) draws of :math:`\mathrm{Multinomial}(N, n_r/N)`, :math:`N = \sum_r n_r`,
    by Poissonisation (about twice as fast as drawing the multinomial directly): draw
    :math:`X_r \sim \mathrm{Poisson}(n_r)`, total ``T``; given ``T`` the battles are ``T``
    independent draws from :math:`n_r/N`, so removing ``T − N`` of them uniformly at random
    (``T > N``) or adding ``N − T`` independent draws (``T < N``) leaves ``N`` independent
    draws: exactly the multinomial, whatever ``T``. The correction touches about
    :math:`\sqrt N` battles."""
    total = int(counts.sum())
    X = rng.poisson(counts.astype(np.float64), size=(size, len(counts)))
    cumulative_p = np.cumsum(counts) / total
    for row, drawn in zip(X, X.sum(axis=1), strict=True):
        if drawn > total:
            positions = rng.choice(drawn, drawn - total, replace=False)
            which = np.searchsorted(np.cumsum(row), positions, side="right")
            row -= np.bincount(which, minlength=len(row))
        elif drawn < total:
            which = np.searchsorted(cumulative_p, rng.random(total - drawn), side="right")
            row += np.bincount(np.minimum(which, len(row) - 1), minlength=len(row))
    return X


def bootstrap_draws(
    problem: BattleProblem,
    mode: Mode,
    n_bootstrap: int,
    rng: np.random.Generator,
    *,
    tol: float = 1e-10,
    batch: int = BOOTSTRAP_BATCH,
) -> np.ndarray:
    r"""(n_bootstrap, parameters) refits on multinomial resamples of the counted battles
    (module docstring), the scores centred.

    Each replicate starts from one Newton step off the full-data mode with the full-data
    Hessian, :math:`\hat z + M^{-1} \sum_r (n^*_r - n_r) u_r` (the gradient at the mode is
    linear in the counts: one sparse product for a whole batch), then takes Newton steps.
    Without covariates the replicates are refitted :data:`BOOTSTRAP_BATCH` at a time
    (:meth:`BattleProblem.batch_maximise`); a replicate that full steps do not settle is
    refitted alone with the line search, and is all NaN if it has no finite maximum."""
    if problem.k and problem.counts.n_rows > KSTEP_ROWS:
        return kstep_draws(problem, mode, n_bootstrap, rng)
    counts = problem.counts.count.astype(np.float64)
    scores = problem.score_matrix(mode.z)
    factor = Cholesky(mode.matrix)
    out = np.empty((n_bootstrap, problem.size))
    for start in range(0, n_bootstrap, batch):
        size = min(batch, n_bootstrap - start)
        replicates = multinomial_counts(rng, problem.counts.count, size).astype(np.float64)
        shift = (scores.T @ (replicates - counts).T).T
        Z = mode.z + factor.solve(shift.T).T
        done = np.zeros(size, dtype=bool)
        try:
            if not problem.k:
                weights = problem.batch_weights(replicates)
                Z, done = problem.batch_maximise(Z, weights, tol=tol)
            else:
                for r in range(size):
                    Z[r], done[r] = _chord(problem, Z[r], replicates[r], tol)
        except np.linalg.LinAlgError:  # a replicate's battles split: refit each alone
            done[:] = False
        for r in np.flatnonzero(~done):
            Z[r] = _refit_alone(problem, mode, replicates[r], tol)
        out[start : start + size] = Z
    out[:, : problem.n] -= out[:, : problem.n].mean(axis=1, keepdims=True)
    return out


def resampled_rows(rng: np.random.Generator, counts: np.ndarray) -> np.ndarray:
    r"""One draw of :math:`\mathrm{Multinomial}(N, n_r/N)` over the counted rows: ``N``
    battles drawn uniformly with replacement, each mapped to its row and counted (O(N), no
    Poisson draws: the cheaper draw when most rows hold one battle)."""
    total = int(counts.sum())
    battles = rng.integers(0, total, total)
    if total != len(counts):  # battle -> row
        battles = np.repeat(np.arange(len(counts)), counts)[battles]
    return np.bincount(battles, minlength=len(counts)).astype(np.float64)


def row_scores(problem: BattleProblem, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The one-battle gradient of each counted row at ``z``, as ``(g_d, g_θ)`` (the row's
    gradient is :math:`g_d (e_a - e_b, x_r) \oplus g_\theta`), with one exponential per row.

    With :math:`h = d/2`, :math:`\nu = e^\theta` (0 for half-win ties) and :math:`Z = e^h +
    e^{-h} + \nu`, Davidson's outcome probabilities are :math:`p_a = e^h/Z`, :math:`p_b =
    e^{-h}/Z`, :math:`p_t = \nu/Z`, so :math:`\partial_d \log p_o = y_o - (p_a - p_b)/2`
    with :math:`y = \tfrac12, -\tfrac12, 0` for a win of a, of b, a tie (a half-win tie has
    the same derivative, the mean of a's and b's), and :math:`\partial_\theta \log p_o =
    [o = t] - p_t`. Written with :math:`m = e^{-|d|/2}`: :math:`p_a - p_b =
    \mathrm{sign}(d)(1 - m^2)/(1 + m^2 + \nu m)`, :math:`p_t = \nu m/(1 + m^2 + \nu m)`
    (no overflow)."""
    c = problem.counts
    s, beta, theta = problem.split(z)
    d = s[c.a] - s[c.b] + c.X @ beta
    m = np.exp(-0.5 * np.abs(d))
    nu_m = np.exp(theta) * m
    inverse = 1.0 / (1.0 + m * m + nu_m)
    y = np.array([0.5, -0.5, 0.0])[c.outcome]
    g_d = y - 0.5 * np.sign(d) * (1.0 - m * m) * inverse
    g_t = (c.outcome == TIE) - nu_m * inverse if problem.davidson else np.zeros(c.n_rows)
    return g_d, g_t


def _weighted_gradient(problem: BattleProblem, z, weight, g_d, g_t) -> np.ndarray:
    """The objective's gradient at ``z`` for row counts ``weight``, from the rows' one-battle
    gradients ``(g_d, g_θ)`` at ``z`` (:func:`row_scores`), the prior's included."""
    c, n, k = problem.counts, problem.n, problem.k
    grad = problem.prior_gradient(z)
    wg = weight * g_d
    grad[:n] += np.bincount(c.a, wg, n) - np.bincount(c.b, wg, n)
    grad[n : n + k] += c.X.T @ wg
    if problem.davidson:
        grad[-1] += weight @ g_t
    return grad


def kstep_draws(
    problem: BattleProblem,
    mode: Mode,
    n_bootstrap: int,
    rng: np.random.Generator,
    *,
    k: int = K_STEPS,
) -> np.ndarray:
    r"""(n_bootstrap, parameters) k-step bootstrap replicates (Davidson & MacKinnon 1999;
    Andrews 2002), the scores centred.

    A replicate draws row counts :math:`n^*` (:func:`resampled_rows`: the multinomial
    bootstrap over the battles) and, instead of maximising its objective :math:`\ell^*`, takes
    ``k`` Newton steps from the full-data mode :math:`\hat z` with the full-data Hessian held
    fixed:

    .. math:: z^*_{j+1} = z^*_j + M^{-1} \nabla \ell^*(z^*_j), \qquad z^*_0 = \hat z,

    ``M`` minus the full data's Hessian at :math:`\hat z` (factorised once). The gradient is a
    pass over the rows (:func:`row_scores`: one exponential a row, no Hessian), and at
    :math:`\hat z` the rows' gradients are computed once for all replicates. The replicate's
    maximiser :math:`\hat z^*` is :math:`O_p(N^{-1/2})` from :math:`\hat z` and each step
    contracts the error by :math:`\|I - M^{-1} M^*\| = O_p(N^{-1/2})` (the replicate's
    Hessian differs from the full data's by resampling noise and by the move from
    :math:`\hat z`), so :math:`z^*_k - \hat z^* = O_p(N^{-(k+1)/2})`: with :data:`K_STEPS`
    = 2 the replicates are within :math:`O_p(N^{-3/2})` of full refits, far below the
    bootstrap's own :math:`O_p(N^{-1/2})` spread — what Andrews (2002, Econometrica 70:119–162,
    "Higher-order improvements of a computationally attractive k-step bootstrap for extremum
    estimators") shows to leave the bootstrap's higher-order accuracy intact when ``k`` grows
    with the order wanted (with a fixed Hessian, one order of :math:`N^{-1/2}` per step);
    Davidson & MacKinnon (1999, "Bootstrap testing in nonlinear models", International
    Economic Review 40:487–508) use the same one- and two-step estimates.

    Cost: ``k`` passes over the counted rows per replicate, none of them building a Hessian
    (a full refit builds one and takes several passes), so 1,000 replicates of two million
    distinct battles with covariates take about a minute. A replicate whose steps leave a
    non-finite value is NaN."""
    factor = Cholesky(mode.matrix)
    at_mode = row_scores(problem, mode.z)
    out = np.empty((n_bootstrap, problem.size))
    for r in range(n_bootstrap):
        weight = resampled_rows(rng, problem.counts.count)
        out[r] = kstep(problem, mode, weight, k, factor=factor, at_mode=at_mode)
    out[:, : problem.n] -= out[:, : problem.n].mean(axis=1, keepdims=True)
    return out


def kstep(
    problem: BattleProblem, mode: Mode, weight: np.ndarray, k: int, *, factor=None, at_mode=None
) -> np.ndarray:
    """One replicate of :func:`kstep_draws` with row counts ``weight`` (``factor``: the
    :class:`Cholesky` factor of ``mode.matrix``, ``at_mode``: :func:`row_scores` at the mode, when
    already computed); all NaN if a step leaves a non-finite value."""
    if factor is None:
        factor = Cholesky(mode.matrix)
    z = mode.z
    for step in range(k):
        g_d, g_t = at_mode if step == 0 and at_mode is not None else row_scores(problem, z)
        grad = _weighted_gradient(problem, z, weight, g_d, g_t)
        z = z + factor.solve(grad)
    return z if np.all(np.isfinite(z)) else np.full(problem.size, np.nan)


def _refit_alone(problem: BattleProblem, mode: Mode, count, tol: float) -> np.ndarray:
    """One replicate refitted by damped Newton from the full-data mode; NaN when it has no
    finite maximum (without a prior: a model that wins or loses all its resampled battles,
    or battles that split into groups that never meet)."""
    try:
        fit = problem.maximise(mode.z, problem.pair_weights(count), tol=tol)
    except np.linalg.LinAlgError:
        return np.full(problem.size, np.nan)
    return fit.z if fit.converged and np.all(np.isfinite(fit.z)) else np.full(problem.size, np.nan)


def _chord(problem: BattleProblem, z, count, tol: float, max_iter: int = 30):
    """A replicate with covariates refitted from ``z``: minus its Hessian is built once, at
    ``z`` (the one-step start is close to the replicate's mode), and kept for the following
    steps (the chord method: one pass over the rows per step, no Hessian to rebuild), which
    converge linearly at the rate of the Hessian's change from ``z`` to the mode, itself of
    the order of that distance; stops when a step is below ``sqrt(tol)``."""
    weights = problem.pair_weights(count)
    _, grad, matrix = problem.gradient_and_matrix(z, weights)
    factor = Cholesky(matrix)
    for _ in range(max_iter):
        step = factor.solve(grad)
        z = z + step
        if np.abs(step).max() ** 2 < tol:
            return z, bool(np.all(np.isfinite(z)))
        grad = problem.gradient(z, weights)[1]
    return z, False


def normal_interval(mean: np.ndarray, sd: np.ndarray, level: float):
    # the normal quantile; scipy.special and scipy.stats cost 0.2 s and 1 s to import
    z = NormalDist().inv_cdf(0.5 + level / 2)
    return mean - z * sd, mean + z * sd


def rank_draws(scores: np.ndarray) -> np.ndarray:
    """(draws, models) ranks: 1 + how many models score higher in the same draw."""
    order = np.argsort(-scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    rows = np.arange(scores.shape[0])[:, None]
    ranks[rows, order] = np.arange(1, scores.shape[1] + 1)
    return ranks


def rank_table(ranks: np.ndarray, models: np.ndarray) -> np.ndarray:
    """(len(models), ranks) P(model has rank r) from rank draws (draws × all models), for the
    chosen model codes only (a table of every model is models² numbers)."""
    n_draws, n = ranks.shape
    chosen = ranks[:, models]
    flat = np.arange(len(models))[None, :] * n + (chosen - 1)
    return np.bincount(flat.ravel(), minlength=len(models) * n).reshape(len(models), n) / n_draws
