r"""The fast M-step and the predictive confusions of :class:`OrdinalDawidSkene`.

**M-step.** Every worker's objective
:math:`f_j(b_j, \eta_j) = \sum_{c,x} n_{jcx}\log\theta_{jcx} + \log p(b_j) + \log p(\eta_j)`
(:func:`~crowdbayes.annotators.ordinal.ordinal_worker_log_posterior`) depends on its own two
parameters only, so all workers take a Newton step at once
(:math:`\delta_j = -H_j^{-1}\nabla f_j`, a 2 × 2 solve each), halved until it raises
:math:`f_j` (and dropped when a gradient step does better, e.g. where :math:`H_j` is not
negative definite). Warm-started at the previous M-step's answer, one or two steps
converge: a generalised EM (Dempster et al. 1977, sec. 3; Lange 1995's EM gradient algorithm)
that never decreases the log-posterior, at a cost of a few evaluations of the :math:`W × K × K`
cells per iteration where a joint L-BFGS over all :math:`2W` parameters needed dozens.

**Predictive confusions.** EM plugs the MAP :math:`(\hat b_j, \hat\eta_j)` into
:math:`\theta_j`; a worker seen on three tasks then speaks with the authority of a perfectly
known one, and the task posteriors are over-confident. The posterior predictive
:math:`\bar\theta_{jcx} = E[\theta_{jcx}(b_j, \eta_j)]` under the Laplace approximation
:math:`N(\hat b_j, \sigma_{b,j}^2) \times N(\hat\eta_j, \sigma_{\eta,j}^2)` averages the worker's
matrix over what its labels leave open (Gauss–Hermite quadrature, :func:`predictive_log_confusion`);
the final posteriors use it (MacKay 1992's moderation, here of a confusion matrix).
"""

from __future__ import annotations

import numpy as np

from ...annotators.ordinal import (
    ordinal_log_confusion,
    ordinal_worker_log_posterior,
    worker_hessian,
)

#: pseudo-count per grade of the Dirichlet prior of a worker's random answers' distribution
#: :math:`\xi_j` (Dirichlet(1 + this): its mode adds this count to each grade)
RANDOM_GRADE_PSEUDO_COUNT = 1.0

__all__ = [
    "RANDOM_GRADE_PSEUDO_COUNT",
    "newton_worker_map",
    "predictive_log_confusion",
    "probit_counts",
    "random_grades",
    "random_responsibilities",
    "worker_log_confusion",
    "worker_update",
]


def newton_worker_map(
    counts: np.ndarray,
    start: np.ndarray,
    prior: tuple[float, float, float],
    *,
    steps: int = 1,
    tol: float = 1e-9,
) -> np.ndarray:
    """Raise every worker's log-posterior from ``start`` (W, 2) by at most ``steps`` safeguarded
    Newton steps (module docstring); never ends below ``start``. Returns the new (W, 2)."""
    params = np.array(start, np.float64)
    value, gradient = ordinal_worker_log_posterior(params, counts, prior)
    for _ in range(steps):
        hessian = worker_hessian(params, counts, prior)
        with np.errstate(all="ignore"):
            newton = -np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
            concave = (np.linalg.eigvalsh(hessian) < 0).all(axis=1)
        # outside the concave region (or when the solve failed) climb the gradient instead,
        # scaled by the curvature's size so that the step is in the right units
        scale = 1.0 / np.maximum(np.abs(np.diagonal(hessian, axis1=1, axis2=2)).max(axis=1), 1.0)
        move = np.where(
            (concave & np.isfinite(newton).all(axis=1))[:, None], newton, scale[:, None] * gradient
        )
        move = np.clip(move, -2.0, 2.0)
        improved = np.zeros(len(params), bool)
        for _ in range(20):  # halve until every worker's step raises its objective
            todo = ~improved
            if not todo.any():
                break
            proposal = params[todo] + move[todo]
            new_value, new_gradient = ordinal_worker_log_posterior(proposal, counts[todo], prior)
            better = new_value > value[todo]
            rows = np.flatnonzero(todo)[better]
            params[rows], value[rows] = proposal[better], new_value[better]
            gradient[rows] = new_gradient[better]
            improved[rows] = True
            move[todo & ~improved] *= 0.5
            if np.abs(move[~improved]).max(initial=0.0) < 1e-10:
                break
        if np.abs(gradient).max(initial=0.0) < tol:
            break
    return params


# Gauss–Hermite nodes and weights for E f(Z), Z ~ N(0, 1) (probabilists' Hermite, 5 points)
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(5)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def predictive_log_confusion(params: np.ndarray, sd: np.ndarray, n_classes: int) -> np.ndarray:
    r"""Log of :math:`E[\theta_{jcx}]` (workers, true grade, reported grade) under independent
    normal posteriors of :math:`b_j` and :math:`\eta_j` with means ``params`` and s.d. ``sd``
    (5 × 5 Gauss–Hermite nodes; module docstring). With ``sd`` zero it is the plug-in
    :func:`~crowdbayes.annotators.ordinal.ordinal_log_confusion`."""
    sd = np.where(np.isfinite(sd), sd, 0.0)
    total = np.zeros((len(params), n_classes, n_classes))
    for node_b, weight_b in zip(_NODES, _WEIGHTS, strict=True):
        for node_eta, weight_eta in zip(_NODES, _WEIGHTS, strict=True):
            point = params + sd * np.array([node_b, node_eta])
            total += weight_b * weight_eta * np.exp(ordinal_log_confusion(point, n_classes))
    with np.errstate(divide="ignore"):
        return np.log(total)


def random_responsibilities(params: np.ndarray, n_classes: int) -> np.ndarray:
    r"""(W, K, K) posterior probability that a label in cell (c, x) was a random answer,
    :math:`\rho_{jcx} = \epsilon_j\xi_{jx} / ((1-\epsilon_j)\theta_{jcx} + \epsilon_j\xi_{jx})`,
    for ``params`` columns (bias, log-precision, random share :math:`\epsilon`, then the random
    answers' distribution :math:`\xi_j`, :func:`random_grades`)."""
    probit = np.exp(ordinal_log_confusion(params[:, :2], n_classes))
    return _responsibilities(probit, params[:, 2], random_grades(params, n_classes))


def _responsibilities(probit: np.ndarray, share: np.ndarray, spam: np.ndarray) -> np.ndarray:
    """:func:`random_responsibilities` from the probit matrices, shares and (W, 1, K) ξ."""
    random = share[:, None, None] * spam
    return random / (random + (1 - share[:, None, None]) * probit)


def random_grades(params: np.ndarray, n_classes: int) -> np.ndarray:
    r"""(W, 1, K) distribution :math:`\xi_j` of each worker's random answers: ``params``
    columns 3 to 3 + K, uniform where there are none."""
    if params.shape[1] >= 3 + n_classes:
        return params[:, None, 3 : 3 + n_classes]
    return np.full((len(params), 1, n_classes), 1.0 / n_classes)


def probit_counts(params: np.ndarray, counts: np.ndarray) -> np.ndarray:
    r"""The expected counts the ordered-probit part explains (all of them without a random
    share, i.e. when ``params`` has two columns)."""
    if params.shape[1] == 2:
        return counts
    return counts * (1 - random_responsibilities(params, counts.shape[1]))


def worker_log_confusion(
    params: np.ndarray, n_classes: int, sd: np.ndarray | None = None
) -> np.ndarray:
    r"""Log-confusion (workers, true, reported) of ordered-probit workers (``params`` columns
    bias, log-precision) who, with probability :math:`\epsilon_j` (a third column, if any),
    answer from their own distribution :math:`\xi_j` over the grades (the columns after it;
    uniform when there are none, as in files saved before ξ):
    :math:`\log((1-\epsilon_j)\theta_{jcx} + \epsilon_j\xi_{jx})`. With
    ``sd`` (the s.d. of bias and log-precision) :math:`\theta_j` is the predictive matrix
    (:func:`predictive_log_confusion`)."""
    if sd is None:
        log_probit = ordinal_log_confusion(params[:, :2], n_classes)
    else:
        log_probit = predictive_log_confusion(params[:, :2], sd, n_classes)
    if params.shape[1] == 2:
        return log_probit
    share = params[:, 2][:, None, None]
    random = share * random_grades(params, n_classes)
    with np.errstate(divide="ignore"):
        return np.log((1 - share) * np.exp(log_probit) + random)


def worker_update(
    counts: np.ndarray,
    params: np.ndarray,
    prior: tuple[float, float, float],
    share_prior: tuple[float, float] | None,
) -> np.ndarray:
    r"""One M-step for every worker. Without ``share_prior``: :func:`newton_worker_map` on
    (bias, log-precision). With a Beta ``share_prior`` :math:`(a, b)` on the random share: one
    ECM cycle (Meng & Rubin 1993) of the two-component worker, each step raising the
    log-posterior with the others held: the share :math:`\epsilon_j` by Newton on its own
    log-posterior (:func:`_share_newton`); the random answers' distribution by an EM step,
    :math:`\xi_{jx} \propto \sum_c n_{jcx}\rho_{jcx} + a_\xi` (the Dirichlet(1 + a_ξ) mode,
    :data:`RANDOM_GRADE_PSEUDO_COUNT`) with the responsibilities :math:`\rho` of
    :func:`random_responsibilities`; then the probit part's Newton step on the counts it
    explains, :math:`n_{jcx}(1-\rho_{jcx})`. ``params`` columns: bias, log-precision, share,
    :math:`\xi_j` (K columns)."""
    if share_prior is None:
        return newton_worker_map(counts, params[:, :2], prior)
    probit = np.exp(ordinal_log_confusion(params[:, :2], counts.shape[1]))
    spam = random_grades(params, counts.shape[1])
    share = _share_newton(counts, probit, params[:, 2], spam, share_prior)
    random_counts = (counts * _responsibilities(probit, share, spam)).sum(axis=1)
    random_counts += RANDOM_GRADE_PSEUDO_COUNT
    spam = (random_counts / random_counts.sum(axis=1, keepdims=True))[:, None, :]
    rho = _responsibilities(probit, share, spam)
    bias_precision = newton_worker_map(counts * (1 - rho), params[:, :2], prior)
    return np.column_stack([bias_precision, share, spam[:, 0]])


def _share_log_posterior(counts, probit, share, share_prior, spam):
    r"""Each worker's log-posterior in its random share :math:`\epsilon` (probit part fixed),
    with its first two derivatives."""
    a, b = share_prior
    e = share[:, None, None]
    mixture = (1 - e) * probit + e * spam
    slope = spam - probit
    value = (counts * np.log(mixture)).sum(axis=(1, 2))
    value += (a - 1) * np.log(share) + (b - 1) * np.log1p(-share)
    d1 = (counts * slope / mixture).sum(axis=(1, 2)) + (a - 1) / share - (b - 1) / (1 - share)
    d2 = -(counts * (slope / mixture) ** 2).sum(axis=(1, 2))
    d2 = d2 - (a - 1) / share**2 - (b - 1) / (1 - share) ** 2
    return value, d1, d2


def _share_newton(counts, probit, share, spam, share_prior, steps: int = 3) -> np.ndarray:
    r"""The random shares' update: a few safeguarded Newton steps on each worker's observed
    log-posterior in :math:`\epsilon_j` (concave: a sum of logs of functions linear in
    :math:`\epsilon_j`, and the Beta log-prior), kept inside (0, 1) and only where they raise
    it. Plain EM for a mixing share creeps when the components overlap; Newton converges in
    a step or two. ``probit``: the workers' (W, K, K) probit matrices; ``spam``: their (W, 1,
    K) random answers' distributions."""
    share = np.clip(share, 1e-9, 1 - 1e-9)
    value, d1, d2 = _share_log_posterior(counts, probit, share, share_prior, spam)
    for _ in range(steps):
        with np.errstate(divide="ignore", invalid="ignore"):
            proposal = share - d1 / np.where(d2 < 0, d2, -np.inf)
        proposal = np.clip(np.where(np.isfinite(proposal), proposal, share), 1e-9, 1 - 1e-9)
        new_value, new_d1, new_d2 = _share_log_posterior(
            counts, probit, proposal, share_prior, spam
        )
        better = new_value > value
        share = np.where(better, proposal, share)
        value = np.where(better, new_value, value)
        d1, d2 = np.where(better, new_d1, d1), np.where(better, new_d2, d2)
    return share
