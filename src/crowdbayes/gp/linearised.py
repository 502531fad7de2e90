"""The linearised probit likelihood of GPPL's variational inference (Simpson & Gurevych, 2020,
Sec. 4.1, Eqs. 7–11).

The label ``y_p ∈ {0, ½, 1}`` of a comparison is treated as a Gaussian observation
``y_p ~ N(Φ(z_p), Q_p)`` of its probability, linearised about the current mean difference (the
extended Kalman filter of Steinberg & Bonilla, 2014):

.. math:: Φ(z_p) ≈ Φ(\\hat z_p) + g_p (d_p - \\hat d_p), \\qquad g_p = φ(\\hat z_p) / α,

with ``d_p = f(a_p) - f(b_p)``, ``z_p = d_p / α`` (the exact derivative; the drafts print ``φ``
without ``1/α`` or a logistic form, 2020 Eq. 10). ``Q_p`` is the variance of the Bernoulli
predictive under a beta posterior (2020, Eq. 8), ``Q_p = (γ + y_p)(λ + 1 - y_p) / (γ + λ + 1)²``,
where ``Beta(γ, λ)`` matches the prior mean ½ and variance of ``Φ(z_p)``; for ``d ~ N(0, v)``
that variance has the closed form ``arcsin(v / (α² + v)) / (2π)`` (Owen, 1980, the
bivariate-normal orthant), so no numerical integration is needed. ``Q`` is fixed for a whole
fit (also across length-scale changes), so the bound stays one function of the kernel
parameters.

The bound (2020, Eq. 30 with the linearised likelihood of Eq. 11)

.. math:: \\mathcal L = Σ_p \\big[\\ln N(y_p; Φ(\\hat z_p), Q_p)
    - \\tfrac12 g_p^2 \\operatorname{Var}_q[d_p] / Q_p\\big]
    - \\operatorname{KL}(q(u) \\| p(u | s)) - \\operatorname{KL}(q(s) \\| p(s))

is monitored by SVI and full-batch VI (:func:`~crowdbayes.gp.problem.linearised_bound`) and
maximised over the log length-scales (:func:`~crowdbayes.gp.strategies.maximise_bound`).
"""

from __future__ import annotations

import math

import numpy as np

from .inducing import prior_difference_variance

__all__ = [
    "probit_linearisation",
    "beta_noise_variance",
    "prior_difference_variance",
    "expected_linear_loglik",
    "relative_change",
]

_LOG_2PI = math.log(2.0 * math.pi)


def probit_linearisation(mean_diff: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``(Φ(ẑ), g)``: the probability at the mean difference and its slope ``φ(ẑ)/α``."""
    from scipy.special import ndtr

    z = np.asarray(mean_diff, dtype=np.float64) / alpha
    return ndtr(z), np.exp(-0.5 * z * z) / (math.sqrt(2.0 * math.pi) * alpha)


def beta_noise_variance(prior_var_diff: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    """Observation noise ``Q_p`` of the Gaussian likelihood approximation (2020, Eq. 8).

    ``Beta(γ, λ)`` matches the prior moments of ``Φ(d/α)`` for ``d ~ N(0, v)``: mean ½ and
    variance ``arcsin(v/(α² + v)) / (2π)``, so ``γ = λ = (¼ / var - 1) / 2``; then
    ``Q = (γ + y)(λ + 1 - y) / (γ + λ + 1)²``. ``γ + λ`` is floored at 0.05 so that a very
    vague prior cannot make ``Q`` vanish for a hard label.
    """
    v = np.maximum(np.asarray(prior_var_diff, dtype=np.float64), 1e-12) / alpha**2
    var = np.arcsin(v / (1.0 + v)) / (2.0 * math.pi)
    total = np.maximum(0.25 / var - 1.0, 0.05)
    half = 0.5 * total
    y = np.asarray(y, dtype=np.float64)
    return (half + y) * (half + 1.0 - y) / (total + 1.0) ** 2


def expected_linear_loglik(
    y: np.ndarray,
    noise_var: np.ndarray,
    mean_diff: np.ndarray,
    var_diff: np.ndarray,
    alpha: float,
    linearisation: np.ndarray | None = None,
) -> float:
    """``Σ_p E_q[ln N(y_p; Φ(z̃_p) + g_p (d_p - d̃_p), Q_p)]`` (2020, Eq. 11 under ``q``) for
    differences with mean ``mean_diff`` and variance ``var_diff`` under ``q``, the likelihood
    linearised at ``d̃ = linearisation`` (default: the mean, ``d̃ = E_q[d]``)."""
    lin = mean_diff if linearisation is None else linearisation
    p, g = probit_linearisation(lin, alpha)
    return float(
        np.sum(
            -0.5 * (_LOG_2PI + np.log(noise_var))
            - 0.5 * ((y - p - g * (mean_diff - lin)) ** 2 + g * g * var_diff) / noise_var
        )
    )


def relative_change(new: np.ndarray, old: np.ndarray) -> float:
    """Root-mean-square change of a mean vector relative to its root-mean-square size
    (floored at 1/10, so a posterior that stays near zero counts as converged)."""
    size = max(0.1, float(np.sqrt(np.mean(new * new))))
    return float(np.sqrt(np.mean((new - old) ** 2)) / size)
