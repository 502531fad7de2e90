r"""Ordered-probit workers: a confusion matrix over ordered grades from a bias and a precision.

A task's true grade is :math:`c \in \{0, \dots, K-1\}`. Worker :math:`j` perceives it with an
offset and Gaussian noise, :math:`y = c + b_j + \varepsilon/\sqrt{\tau_j}`,
:math:`\varepsilon \sim N(0, 1)`, and reports the grade whose bin holds :math:`y`; the bins have
the fixed cut points :math:`\gamma_x = x + \tfrac12` (:math:`\gamma_{-1} = -\infty`,
:math:`\gamma_{K-1} = +\infty`), so an unbiased precise worker reports the true grade. Hence

.. math::
    \theta_{jcx} = P(x \mid c) = \Phi\big(\sqrt{\tau_j}(\gamma_x - c - b_j)\big)
                 - \Phi\big(\sqrt{\tau_j}(\gamma_{x-1} - c - b_j)\big),

a cumulative-link (ordered-probit) model of each worker's labels (McCullagh 1980; for several
raters of ordinal data, Johnson & Albert 1999, ch. 5, and Lakshminarayanan & Teh 2013), which
ties the :math:`K(K-1)` free cells of a Dawid–Skene confusion matrix to two numbers: the bias
:math:`b_j` (grades; > 0 rates too high) and the precision :math:`\tau_j` (its noise s.d. is
:math:`1/\sqrt{\tau_j}` grades). Mistakes by one grade are then far likelier than mistakes by
three, the structure a nominal confusion matrix has to learn cell by cell.

Priors: :math:`b_j \sim N(0, s_b^2)`, :math:`\eta_j = \log\tau_j \sim N(m_\eta, s_\eta^2)`. Given
the expected counts :math:`n_{jcx}` of an E-step
(:func:`~crowdbayes.annotators.confusion_statistics`),
:func:`ordinal_worker_map` maximises each worker's
:math:`\sum_{c,x} n_{jcx}\log\theta_{jcx} + \log p(b_j) + \log p(\eta_j)` (an EM M-step) and
returns the Laplace approximation's standard deviations (inverse Hessian at the mode).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "log_ndtr_diff",
    "ordinal_log_confusion",
    "ordinal_worker_log_posterior",
    "ordinal_worker_map",
]

_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)


def log_ndtr_diff(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    r"""``log(Φ(high) − Φ(low))`` for ``high > low``, accurate in both tails (the upper tail
    is computed as :math:`\Phi(-low) - \Phi(-high)`)."""
    from scipy.special import log_ndtr

    high, low = np.broadcast_arrays(np.asarray(high, float), np.asarray(low, float))
    flip = low > 0
    top = np.where(flip, -low, high)
    bottom = np.where(flip, -high, low)
    log_top, log_bottom = log_ndtr(top), log_ndtr(bottom)
    with np.errstate(divide="ignore"):
        return log_top + np.log(-np.expm1(log_bottom - log_top))


def _cuts(n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Upper and lower cut point of each reported grade x, relative to true grade c:
    arrays (K true, K reported) of :math:`\\gamma_x - c` and :math:`\\gamma_{x-1} - c`."""
    grades = np.arange(n_classes, dtype=np.float64)
    upper = np.append(grades[:-1] + 0.5, np.inf)
    lower = np.insert(grades[:-1] + 0.5, 0, -np.inf)
    return upper[None, :] - grades[:, None], lower[None, :] - grades[:, None]


def _standardised(params: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The cut points in units of each worker's noise: (W, K, K) upper and lower, and √τ."""
    bias, log_precision = params[:, 0], params[:, 1]
    scale = np.exp(0.5 * log_precision)[:, None, None]
    upper, lower = _cuts(n_classes)
    with np.errstate(invalid="ignore"):  # inf - finite stays inf
        high = scale * (upper[None] - bias[:, None, None])
        low = scale * (lower[None] - bias[:, None, None])
    return high, low, scale


def ordinal_log_confusion(params: np.ndarray, n_classes: int) -> np.ndarray:
    """Log-confusion (workers, true grade, reported grade) of workers with ``params[:, 0]``
    biases and ``params[:, 1]`` log-precisions (module docstring)."""
    high, low, _ = _standardised(np.asarray(params, np.float64), n_classes)
    return log_ndtr_diff(high, low)


def _log_phi(u: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(u), -0.5 * u * u - _LOG_SQRT_2PI, -np.inf)


def ordinal_worker_log_posterior(
    params: np.ndarray, counts: np.ndarray, prior: tuple[float, float, float]
) -> tuple[np.ndarray, np.ndarray]:
    r"""Each worker's log-posterior (up to a constant) and its gradient in (b, η).

    ``counts`` (W, K, K) are the expected label counts :math:`n_{jcx}`; ``prior`` is
    :math:`(s_b, m_\eta, s_\eta)`. With :math:`u = \sqrt\tau(\gamma - c - b)` at either cut,
    :math:`\partial\theta/\partial b = -\sqrt\tau(\phi(u_+) - \phi(u_-))` and
    :math:`\partial\theta/\partial\eta = \tfrac12(u_+\phi(u_+) - u_-\phi(u_-))`.
    Returns ``(value (W,), gradient (W, 2))``.
    """
    bias_sd, eta_mean, eta_sd = prior
    params = np.asarray(params, np.float64)
    n_classes = counts.shape[1]
    high, low, scale = _standardised(params, n_classes)
    log_theta = log_ndtr_diff(high, low)
    used = counts > 0
    safe = np.where(used, log_theta, 0.0)
    value = (counts * safe).sum(axis=(1, 2))
    ratio_high = np.exp(np.where(used, _log_phi(high) - safe, -np.inf))
    ratio_low = np.exp(np.where(used, _log_phi(low) - safe, -np.inf))
    d_bias = -(counts * scale * (ratio_high - ratio_low)).sum(axis=(1, 2))
    # u·φ(u) → 0 at the infinite end cuts, where the ratios are 0 already
    u_ratio = (
        np.where(np.isfinite(high), high, 0.0) * ratio_high
        - np.where(np.isfinite(low), low, 0.0) * ratio_low
    )
    d_eta = 0.5 * (counts * u_ratio).sum(axis=(1, 2))
    bias, eta = params[:, 0], params[:, 1]
    value = value - 0.5 * (bias / bias_sd) ** 2 - 0.5 * ((eta - eta_mean) / eta_sd) ** 2
    d_bias = d_bias - bias / bias_sd**2
    d_eta = d_eta - (eta - eta_mean) / eta_sd**2
    return value, np.column_stack([d_bias, d_eta])


def ordinal_worker_map(
    counts: np.ndarray,
    start: np.ndarray,
    prior: tuple[float, float, float],
    *,
    tol: float = 1e-10,
    max_iter: int = 500,
) -> tuple[np.ndarray, np.ndarray]:
    """MAP (b, η) of every worker from expected counts, starting at ``start`` (W, 2).

    The workers' objectives are independent; one L-BFGS run on their sum (analytic gradient)
    finds every mode, and never ends above its starting value, so an EM that uses it never
    decreases its objective. Returns ``(params (W, 2), sd (W, 2))``, the standard deviations
    from the Laplace approximation (each worker's 2 × 2 Hessian by central differences of the
    gradient).
    """
    from scipy.optimize import minimize

    start = np.asarray(start, np.float64)
    shape = start.shape

    def negative(flat: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = ordinal_worker_log_posterior(flat.reshape(shape), counts, prior)
        return -float(value.sum()), -gradient.ravel()

    result = minimize(
        negative,
        start.ravel(),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-8},
    )
    params = result.x.reshape(shape)
    value = ordinal_worker_log_posterior(params, counts, prior)[0]
    before = ordinal_worker_log_posterior(start, counts, prior)[0]
    worse = ~(value >= before)  # never worse than where it began, worker by worker
    params[worse] = start[worse]
    return _newton_polish(params, counts, prior)


def _newton_polish(
    params: np.ndarray, counts: np.ndarray, prior: tuple[float, float, float], steps: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """A few Newton steps per worker from L-BFGS's answer (kept only where they raise that
    worker's objective), then the Laplace s.d. at the result."""
    value, gradient = ordinal_worker_log_posterior(params, counts, prior)
    for _ in range(steps):
        hessian = worker_hessian(params, counts, prior)
        with np.errstate(all="ignore"):
            move = -np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
        move = np.where(np.isfinite(move), np.clip(move, -1.0, 1.0), 0.0)
        proposal = params + move
        new_value, new_gradient = ordinal_worker_log_posterior(proposal, counts, prior)
        better = new_value > value
        params = np.where(better[:, None], proposal, params)
        value = np.where(better, new_value, value)
        gradient = np.where(better[:, None], new_gradient, gradient)
    return params, laplace_sd(params, counts, prior)


def worker_hessian(
    params: np.ndarray, counts: np.ndarray, prior: tuple[float, float, float], step: float = 1e-5
) -> np.ndarray:
    """Each worker's 2 × 2 Hessian of the log-posterior, by central differences of the
    analytic gradient (symmetrised)."""
    hessian = np.empty((len(params), 2, 2))
    for d in range(2):
        shift = np.zeros(2)
        shift[d] = step
        _, plus = ordinal_worker_log_posterior(params + shift, counts, prior)
        _, minus = ordinal_worker_log_posterior(params - shift, counts, prior)
        hessian[:, :, d] = (plus - minus) / (2 * step)
    return 0.5 * (hessian + hessian.transpose(0, 2, 1))


def laplace_sd(
    params: np.ndarray, counts: np.ndarray, prior: tuple[float, float, float]
) -> np.ndarray:
    """Posterior standard deviations of (b, η) per worker from the Laplace approximation
    (the square roots of the diagonal of the inverse negative Hessian at the mode)."""
    covariance = np.linalg.inv(-worker_hessian(params, counts, prior))
    return np.sqrt(np.clip(np.diagonal(covariance, axis1=1, axis2=2), 0.0, None))
