r"""Two-coin workers for pairwise must-link / cannot-link judgments.

Worker :math:`m` has a sensitivity :math:`\alpha_m` and a specificity :math:`\beta_m`
(Raykar et al. 2010; Luo et al. 2018, Eq. 1): for a pair of items with cluster indicators
:math:`z_i, z_j`,

.. math::
    p(L = 1 \mid z_i = z_j) = \alpha_m, \qquad p(L = 0 \mid z_i \ne z_j) = \beta_m .

With :math:`s = z_i^\top z_j \in \{0, 1\}` the log-likelihood of one link is linear in
:math:`s`, :math:`\log p(L \mid s) = s\,w + c`, where

.. math::
    w &= \log\frac{1-\alpha_m}{\beta_m}
        + L\Big(\log\frac{\alpha_m}{1-\alpha_m} + \log\frac{\beta_m}{1-\beta_m}\Big), \\
    c &= L \log(1-\beta_m) + (1-L)\log\beta_m .

Under Beta posteriors :math:`q(\alpha_m) = \mathrm{Beta}(a_{m1}, a_{m2})`,
:math:`q(\beta_m) = \mathrm{Beta}(b_{m1}, b_{m2})` the expectations of :math:`w` and :math:`c`
need only :math:`\mathbb{E}\log\alpha_m = \psi(a_{m1}) - \psi(a_{m1} + a_{m2})` and its three
siblings; :math:`\mathbb{E}[w]` is the weight of the message from :math:`q(z_j)` to
:math:`q(z_i)` in the mean-field update of Luo et al. (2018), Eq. 14, and
:math:`\mathbb{E}[c]` the constant of their Eq. 20. Given the expected agreement
:math:`\bar s_l = \mathbb{E}[z_i]^\top\mathbb{E}[z_j]` of every link, the conjugate updates are
(their Eqs. 28–29 at step size one)

.. math::
    a_{m} &= a^0 + \textstyle\sum_{l \in m} \bar s_l\,(L_l,\; 1 - L_l), \\
    b_{m} &= b^0 + \textstyle\sum_{l \in m} (1 - \bar s_l)\,(1 - L_l,\; L_l).

Beta parameters are stored as (n_workers, 2) arrays ``[[a1, a2], ...]`` — Dirichlet rows of
length two — so the Dirichlet helpers of :mod:`crowdbayes.maths` apply unchanged.

References
----------
Raykar, V. C. et al. (2010). Learning from crowds. JMLR 11, 1297–1322.
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..maths import dirichlet_expected_log, dirichlet_kl

__all__ = [
    "TwoCoinExpectations",
    "two_coin_expectations",
    "link_message_weights",
    "link_expected_log_likelihood",
    "two_coin_statistics",
    "two_coin_posterior",
    "two_coin_kl",
]


class TwoCoinExpectations(NamedTuple):
    """Per-worker expected log-parameters under q(α) q(β), each of shape (n_workers,)."""

    log_alpha: np.ndarray
    log1m_alpha: np.ndarray
    log_beta: np.ndarray
    log1m_beta: np.ndarray


def two_coin_expectations(alpha: np.ndarray, beta: np.ndarray) -> TwoCoinExpectations:
    """E[log α], E[log(1−α)], E[log β], E[log(1−β)] under Beta rows ``alpha``, ``beta``.

    Parameters
    ----------
    alpha, beta : ndarray, shape (n_workers, 2)
        Beta parameters ``[a1, a2]`` of q(α_m) and ``[b1, b2]`` of q(β_m).
    """
    e_alpha, e_beta = dirichlet_expected_log(alpha), dirichlet_expected_log(beta)
    return TwoCoinExpectations(e_alpha[:, 0], e_alpha[:, 1], e_beta[:, 0], e_beta[:, 1])


def link_message_weights(
    expected: TwoCoinExpectations, worker_codes: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""Weight :math:`\mathbb{E}[w_l]` and constant :math:`\mathbb{E}[c_l]` of every link.

    :math:`\mathbb{E}\log p(L_l \mid s) = s\,\mathbb{E}[w_l] + \mathbb{E}[c_l]`: the weight is
    the message weight of Luo et al. (2018), Eq. 14; a positive weight pulls the two items into
    the same cluster, a negative one pushes them apart.

    Returns
    -------
    weights, offsets : ndarray, shape (n_links,)
    """
    m = worker_codes
    label = labels.astype(np.float64)
    weights = (
        expected.log1m_alpha[m]
        - expected.log_beta[m]
        + label
        * (
            expected.log_alpha[m]
            - expected.log1m_alpha[m]
            + expected.log_beta[m]
            - expected.log1m_beta[m]
        )
    )
    offsets = label * expected.log1m_beta[m] + (1.0 - label) * expected.log_beta[m]
    return weights, offsets


def link_expected_log_likelihood(
    agreement: np.ndarray, weights: np.ndarray, offsets: np.ndarray
) -> float:
    r""":math:`\sum_l \bar s_l\,\mathbb{E}[w_l] + \mathbb{E}[c_l]`: the expected log-likelihood
    of all links under mean-field q(z) (Luo et al. 2018, Eq. 20), with ``agreement`` the
    per-link :math:`\bar s_l = \mathbb{E}[z_i]^\top \mathbb{E}[z_j]`."""
    return float(agreement @ weights + offsets.sum())


def two_coin_statistics(
    agreement: np.ndarray, worker_codes: np.ndarray, labels: np.ndarray, n_workers: int
) -> tuple[np.ndarray, np.ndarray]:
    r"""Expected counts behind the Beta updates.

    Returns ``(alpha_counts, beta_counts)``, each (n_workers, 2):
    ``alpha_counts[m] = Σ_l s̄_l (L_l, 1 − L_l)`` (must-links and cannot-links on pairs
    expected to share a cluster) and ``beta_counts[m] = Σ_l (1 − s̄_l) (1 − L_l, L_l)``
    (cannot-links and must-links on pairs expected to differ), sums over worker m's links.
    """
    label = labels.astype(np.float64)
    same, diff = agreement, 1.0 - agreement
    columns = (same * label, same * (1.0 - label), diff * (1.0 - label), diff * label)
    counts = np.stack(
        [np.bincount(worker_codes, weights=c, minlength=n_workers) for c in columns], axis=1
    )
    return counts[:, :2], counts[:, 2:]


def two_coin_posterior(prior: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Conjugate Beta update: ``prior`` (2,) or (n_workers, 2) plus expected ``counts``."""
    return np.asarray(prior, dtype=np.float64) + counts


def two_coin_kl(posterior: np.ndarray, prior: np.ndarray) -> float:
    """Σ_m KL(Beta(posterior_m) ‖ Beta(prior)) (Luo et al. 2018, Eq. 25)."""
    return float(dirichlet_kl(posterior, np.asarray(prior, dtype=np.float64)).sum())
