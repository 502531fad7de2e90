r"""Conjugate global factors of BayesSCDC: Dirichlet q(π), Normal-inverse-Wishart q(μ_k, Σ_k).

The Beta factors q(α_m), q(β_m) of the workers live in :mod:`crowdbayes.annotators.two_coin`
(Dirichlet rows of length two); the Dirichlet helpers are those of :mod:`crowdbayes.maths`.
Everything here is small (K × d × d) and stays in float64 numpy (only the minibatch statistics
of :func:`niw_statistics` are summed on the device of the batch).

NIW in natural coordinates
--------------------------
:math:`\mathrm{NIW}(\mu, \Sigma \mid m, \kappa, S, \nu) \propto |\Sigma|^{-(\nu+d+2)/2}
\exp\{-\tfrac12\mathrm{tr}(S\Sigma^{-1}) - \tfrac\kappa2(\mu-m)^\top\Sigma^{-1}(\mu-m)\}`
is an exponential family with statistics
:math:`t = (-\tfrac12\Sigma^{-1},\ \Sigma^{-1}\mu,\ -\tfrac12\mu^\top\Sigma^{-1}\mu,\
-\tfrac12\log|\Sigma|)` and natural parameters
:math:`\eta = (S + \kappa m m^\top,\ \kappa m,\ \kappa,\ \nu + d + 2)` (Johnson et al. 2016;
Luo et al. 2018, Eq. 5 and Appendix A). :class:`NIW` stores ``(A, b, kappa, nu)`` =
:math:`(S + \kappa m m^\top, \kappa m, \kappa, \nu)`; the constant shift :math:`d + 2` of the
last coordinate does not change a convex combination, so the natural-gradient step
:math:`\eta \leftarrow (1-\rho)\eta + \rho(\eta^0 + \hat t)` (Luo et al. 2018, Eq. 17; Hoffman
et al. 2013) acts on the stored tuple directly. With a Gaussian ``x`` assigned to component k
with weight :math:`r` the expected statistics add
:math:`(r\,\mathbb{E}[xx^\top],\ r\,\mathbb{E}[x],\ r,\ r)`.

References
----------
Johnson, M. J. et al. (2016). Composing graphical models with neural networks for structured
representations and fast inference. NeurIPS.
Hoffman, M. D., Blei, D. M., Wang, C. & Paisley, J. (2013). Stochastic variational inference.
JMLR 14.
Luo, Y. et al. (2018). Semi-crowdsourced clustering with deep generative models. NeurIPS.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import digamma, multigammaln

__all__ = [
    "NIW",
    "NIWExpectations",
    "niw_from_standard",
    "niw_to_standard",
    "niw_expected_stats",
    "niw_log_partition",
    "niw_kl",
    "niw_statistics",
    "natural_step",
]

_LOG_2PI = float(np.log(2 * np.pi))


class NIW(NamedTuple):
    """K Normal-inverse-Wishart factors in natural coordinates (see the module docstring)."""

    A: np.ndarray  # (K, d, d)  S + κ m mᵀ
    b: np.ndarray  # (K, d)     κ m
    kappa: np.ndarray  # (K,)
    nu: np.ndarray  # (K,)


class NIWExpectations(NamedTuple):
    """E[Σ⁻¹] (K,d,d), E[Σ⁻¹μ] (K,d), E[μᵀΣ⁻¹μ] (K,), E[log|Σ⁻¹|] (K,)."""

    prec: np.ndarray
    prec_mean: np.ndarray
    mean_prec_mean: np.ndarray
    logdet_prec: np.ndarray


def niw_from_standard(m, kappa, S, nu) -> NIW:
    """Natural coordinates from location ``m`` (K,d), concentration ``kappa`` (K,), scale
    ``S`` (K,d,d) and degrees of freedom ``nu`` (K,)."""
    m, kappa = np.asarray(m, float), np.asarray(kappa, float)
    S, nu = np.asarray(S, float), np.asarray(nu, float)
    A = S + kappa[:, None, None] * m[:, :, None] * m[:, None, :]
    return NIW(A, kappa[:, None] * m, kappa.copy(), nu.copy())


def niw_to_standard(niw: NIW) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(m, kappa, S, nu)`` from natural coordinates."""
    m = niw.b / niw.kappa[:, None]
    S = niw.A - niw.b[:, :, None] * m[:, None, :]
    return m, niw.kappa, 0.5 * (S + np.swapaxes(S, 1, 2)), niw.nu


def niw_expected_stats(niw: NIW) -> NIWExpectations:
    r"""Expected statistics under NIW: :math:`\mathbb{E}[\Sigma^{-1}] = \nu S^{-1}`,
    :math:`\mathbb{E}[\Sigma^{-1}\mu] = \nu S^{-1} m`,
    :math:`\mathbb{E}[\mu^\top\Sigma^{-1}\mu] = d/\kappa + \nu\, m^\top S^{-1} m`,
    :math:`\mathbb{E}\log|\Sigma^{-1}| = \sum_{i=1}^d \psi(\tfrac{\nu+1-i}{2}) + d\log 2 -
    \log|S|`."""
    m, kappa, S, nu = niw_to_standard(niw)
    d = m.shape[1]
    S_inv = np.linalg.inv(S)
    prec = nu[:, None, None] * S_inv
    prec_mean = np.einsum("kij,kj->ki", prec, m)
    mean_prec_mean = d / kappa + np.einsum("ki,ki->k", m, prec_mean)
    _, logdet_S = np.linalg.slogdet(S)
    i = np.arange(1, d + 1)
    logdet_prec = digamma((nu[:, None] + 1 - i) / 2).sum(axis=1) + d * np.log(2.0) - logdet_S
    return NIWExpectations(prec, prec_mean, mean_prec_mean, logdet_prec)


def niw_log_partition(niw: NIW) -> np.ndarray:
    r""":math:`\log Z = \tfrac d2\log 2\pi - \tfrac d2\log\kappa + \tfrac{\nu d}{2}\log 2 +
    \log\Gamma_d(\nu/2) - \tfrac\nu2\log|S|`, per component."""
    m, kappa, S, nu = niw_to_standard(niw)
    d = m.shape[1]
    _, logdet_S = np.linalg.slogdet(S)
    gamma_d = np.array([multigammaln(v / 2, d) for v in nu])
    return (
        0.5 * d * (_LOG_2PI - np.log(kappa))
        + 0.5 * nu * d * np.log(2.0)
        + gamma_d
        - (0.5 * nu * logdet_S)
    )


def niw_kl(q: NIW, p: NIW) -> np.ndarray:
    r"""KL(q ‖ p) per component, :math:`\langle\eta_q - \eta_p, \mathbb{E}_q t\rangle -
    \log Z_q + \log Z_p`. ``p`` may hold a single component (broadcast)."""
    e = niw_expected_stats(q)
    K = q.A.shape[0]
    pA, pb = np.broadcast_to(p.A, q.A.shape), np.broadcast_to(p.b, q.b.shape)
    pk, pn = np.broadcast_to(p.kappa, (K,)), np.broadcast_to(p.nu, (K,))
    inner = (
        -0.5 * np.einsum("kij,kji->k", q.A - pA, e.prec)
        + np.einsum("ki,ki->k", q.b - pb, e.prec_mean)
        - 0.5 * (q.kappa - pk) * e.mean_prec_mean
        + 0.5 * (q.nu - pn) * e.logdet_prec
    )
    p_full = NIW(np.array(pA), np.array(pb), np.array(pk, float), np.array(pn, float))
    return inner - niw_log_partition(q) + niw_log_partition(p_full)


def niw_statistics(resp, mean, second) -> NIW:
    r"""Expected NIW statistics of Gaussian ``q(x_i)`` (means (n,d), second moments
    :math:`\mathbb{E}[x_i x_i^\top]` (n,d,d)) weighted by responsibilities ``resp`` (n,K).

    Takes numpy arrays or torch tensors and returns the same kind, so that a minibatch on a GPU
    is summed there and only the K × d × d statistics travel to the host."""
    n, d = mean.shape
    counts = resp.sum(0)
    second_sums = (resp.T @ second.reshape(n, d * d)).reshape(-1, d, d)
    return NIW(second_sums, resp.T @ mean, counts, counts * 1.0)  # `* 1.0`: a copy of either kind


def natural_step(current: tuple, prior: tuple, stats: tuple, rho: float, scale: float) -> tuple:
    r"""One stochastic natural-gradient step on a conjugate factor:
    :math:`\eta \leftarrow (1-\rho)\,\eta + \rho\,(\eta^0 + s\,\hat t)`, field by field
    (``scale`` :math:`s` = N/|B| makes the minibatch statistics unbiased). With ``rho = 1`` and
    the full data (``scale = 1``) this is the closed-form mean-field update."""
    fields = [
        (1.0 - rho) * c + rho * (np.asarray(p) + scale * s)
        for c, p, s in zip(current, prior, stats, strict=True)
    ]
    return type(current)(*fields) if hasattr(current, "_fields") else tuple(fields)
