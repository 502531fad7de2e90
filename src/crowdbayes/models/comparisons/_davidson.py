r"""The Bradley–Terry likelihood with Davidson ties, as pure functions of the score differences.

Items have scores :math:`s`; a comparison of ``left`` and ``right`` has :math:`d = s_l - s_r` and,
with tie strength :math:`\nu = e^\theta` (Davidson 1970),

.. math::
    p(\text{left}) = \frac{e^{d/2}}{Z},\quad p(\text{right}) = \frac{e^{-d/2}}{Z},\quad
    p(\text{tie}) = \frac{\nu}{Z},\qquad Z = e^{d/2} + e^{-d/2} + \nu .

Without ties (:math:`\nu = 0`, ``theta = -inf``) this is the plain Bradley–Terry model,
:math:`p(\text{left}) = \sigma(d)`.

A comparison enters the fit with non-negative weights :math:`(w_L, w_R, w_T)` on the three
outcomes (its observed outcome with weight 1 for the plain model; with worker noise, the
posterior probability that the answer was faithful, and for the "flip" noise model the rest on
the opposite outcome). Its contribution to the objective is

.. math::
    F = (w_L - w_R)\,d/2 + w_T\,\theta - W \log Z,\qquad W = w_L + w_R + w_T,

concave in :math:`(d, \theta)` (a log-sum-exp of affine functions, negated), with

.. math::
    \partial_d F = \tfrac12(w_L - w_R) - \tfrac12 W (p_L - p_R),\quad
    -\partial_d^2 F = \tfrac14 W\big[(p_L + p_R) - (p_L - p_R)^2\big],

    \partial_\theta F = w_T - W p_T,\quad -\partial_\theta^2 F = W p_T (1 - p_T),\quad
    -\partial_d\partial_\theta F = -\tfrac12 W (p_L - p_R) p_T .
"""

from __future__ import annotations

import numpy as np

__all__ = ["outcome_log_probs", "weighted_terms"]


def _log_normaliser(d: np.ndarray, theta: float) -> np.ndarray:
    half = 0.5 * d
    if np.isneginf(theta):
        return np.logaddexp(half, -half)
    return np.logaddexp(np.logaddexp(half, -half), theta)


def outcome_log_probs(d: np.ndarray, theta: float) -> np.ndarray:
    """(3, n) log-probabilities of left, right and tie for score differences ``d``."""
    log_z = _log_normaliser(d, theta)
    half = 0.5 * d
    return np.stack([half - log_z, -half - log_z, np.full_like(d, theta) - log_z])


def weighted_terms(
    d: np.ndarray, theta: float, weights: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, float, float, np.ndarray]:
    """Value and derivatives of :math:`\\sum_n F_n` (module docstring).

    ``weights`` is (3, n): the weights of left, right and tie. Returns ``(value, grad_d,
    curv_d, grad_theta, curv_theta, cross)`` where ``grad_d`` and ``curv_d`` are per
    comparison (``curv`` = minus the second derivative, ≥ 0) and ``cross`` is
    :math:`-\\partial_d\\partial_\\theta F_n`; the θ terms are 0 without ties.
    """
    w_left, w_right, w_tie = weights
    total = w_left + w_right + w_tie
    log_z = _log_normaliser(d, theta)
    half = 0.5 * d
    p_left, p_right = np.exp(half - log_z), np.exp(-half - log_z)
    diff = p_left - p_right
    grad_d = 0.5 * (w_left - w_right) - 0.5 * total * diff
    curv_d = 0.25 * total * ((p_left + p_right) - diff * diff)
    value = float(((w_left - w_right) * half - total * log_z).sum())
    if np.isneginf(theta):
        zeros = np.zeros_like(d)
        return value, grad_d, curv_d, 0.0, 0.0, zeros
    p_tie = np.exp(theta - log_z)
    value += float(theta * w_tie.sum()) if w_tie.any() else 0.0
    grad_theta = float((w_tie - total * p_tie).sum())
    curv_theta = float((total * p_tie * (1.0 - p_tie)).sum())
    cross = -0.5 * total * diff * p_tie
    return value, grad_d, curv_d, grad_theta, curv_theta, cross
