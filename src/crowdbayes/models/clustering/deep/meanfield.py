r"""The local mean field of BayesSCDC: q(x_i) and q(z_i) of a minibatch at fixed globals
(Luo et al. 2018, §3.1, Eqs. 12 and 14; the structured VAE of Johnson et al. 2016).

A recognition network gives every item a Gaussian potential
:math:`\psi(x_i) = \langle r(o_i;\phi), t(x_i)\rangle` with diagonal precision :math:`J_i` and
linear term :math:`h_i = J_i \cdot \mathrm{mean}_i` (Eq. 9). At fixed globals (NIW factors
:math:`q(\mu_k, \Sigma_k)`, Dirichlet :math:`q(\pi)`) the optimal local factors alternate

* Eq. 12: :math:`q(x_i) = \mathcal N` with precision :math:`\sum_k r_{ik}\mathbb E[\Sigma_k^{-1}]
  + J_i` and linear term :math:`\sum_k r_{ik}\mathbb E[\Sigma_k^{-1}\mu_k] + h_i`
  (:func:`gaussian_posterior`);
* Eq. 14: :math:`\log r_{ik} = \mathbb E\log\pi_k + \mathbb E\log\mathcal N(x_i\mid\mu_k,
  \Sigma_k) + \sum_{l \ni i}\mathbb E[w_l]\, r_{j(l)k}` + const
  (:func:`gaussian_expected_loglik` and the link messages), with the weights of
  :func:`~crowdbayes.annotators.two_coin.link_message_weights`.

:func:`local_meanfield` runs these rounds from a start that sees the recognition potential
alone; each round cannot lower the local bound (:func:`local_bound`). The partners'
:math:`r_j` come from a table of every item's latest :math:`q(z_j)` (:func:`table_messages`):
partners in the minibatch are updated live, the others keep the belief from their last visit.
Everything is torch, so that the rounds run on the model's device.

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS. (Eqs. 9, 12, 14.)
Johnson, M. J., Duvenaud, D., Wiltschko, A., Adams, R. P. & Datta, S. R. (2016). Composing
graphical models with neural networks for structured representations and fast inference.
NeurIPS.
"""

from __future__ import annotations

import numpy as np
import torch

from ._conjugate import NIWExpectations

__all__ = [
    "gaussian_expected_loglik",
    "gaussian_posterior",
    "local_meanfield",
    "local_bound",
    "table_messages",
    "padded_product",
]

_LOG_2PI = float(np.log(2 * np.pi))


def gaussian_expected_loglik(
    e: NIWExpectations, mean: torch.Tensor, second: torch.Tensor
) -> torch.Tensor:
    r""":math:`\mathbb E\log\mathcal N(x_i\mid\mu_k,\Sigma_k)` under q(x_i) (moments ``mean``
    (n,d), ``second`` (n,d,d)) and the NIW factors (torch tensors); returns (n, K)."""
    d = mean.shape[-1]
    return (
        -0.5 * torch.einsum("kij,nji->nk", e.prec, second)
        + mean @ e.prec_mean.T
        - 0.5 * e.mean_prec_mean
        + 0.5 * e.logdet_prec
        - 0.5 * d * _LOG_2PI
    )


def gaussian_posterior(resp, e: NIWExpectations, J_rec, h_rec):
    """Eq. 12: q(x_i) from responsibilities and the recognition potential. Returns ``(mean,
    second moment, Cholesky factor L of the precision, entropy)``.

    ``torch.linalg.cholesky`` reads its error flags on the host, which on a GPU waits for it in
    every local iteration; the precision is positive definite by construction (a positive
    diagonal plus a nonnegative mix of E[Σ_k⁻¹]), so ``cholesky_ex`` checks only where that is
    free (CPU). The covariance :math:`L^{-\top}L^{-1}` and the mean come from one batched
    triangular solve and products, plain cuBLAS work that the CUDA graph of the local mean
    field records."""
    precision = torch.einsum("nk,kij->nij", resp, e.prec) + torch.diag_embed(J_rec)
    linear = resp @ e.prec_mean + h_rec
    chol, _ = torch.linalg.cholesky_ex(precision, check_errors=precision.device.type == "cpu")
    eye = torch.eye(chol.shape[-1], dtype=chol.dtype, device=chol.device).expand_as(chol)
    chol_inv = torch.linalg.solve_triangular(chol, eye, upper=False)
    cov = chol_inv.mT @ chol_inv
    mean = (cov @ linear.unsqueeze(-1)).squeeze(-1)
    second = cov + mean.unsqueeze(-1) * mean.unsqueeze(-2)
    d = mean.shape[-1]
    log_diag = torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1)
    entropy = 0.5 * d * (1.0 + _LOG_2PI) - log_diag
    return mean, second, chol, entropy


def local_meanfield(e, log_pi, J_rec, h_rec, n_iter: int, messages=None, track=False):
    """Alternate Eqs. 12 and 14 ``n_iter`` times from a start that sees the recognition
    potential alone. ``messages(resp) -> (n, K)`` returns the link messages given the batch's
    current responsibilities (and stores them for the partners). Returns ``resp`` (n, K) and,
    with ``track``, the local surrogate bound after every round."""
    mean0 = h_rec / J_rec
    second0 = torch.diag_embed(1.0 / J_rec) + mean0.unsqueeze(-1) * mean0.unsqueeze(-2)
    logits = log_pi + gaussian_expected_loglik(e, mean0, second0)
    if messages is not None:
        logits = logits + messages(None)
    resp = torch.softmax(logits, dim=-1)
    if messages is not None:
        messages(resp)
    bounds = []
    for _ in range(n_iter):
        mean, second, _, entropy = gaussian_posterior(resp, e, J_rec, h_rec)
        expected = gaussian_expected_loglik(e, mean, second)
        logits = log_pi + expected
        if messages is not None:
            logits = logits + messages(resp)
        resp = torch.softmax(logits, dim=-1)
        if messages is not None:
            messages(resp)
        if track:
            bounds.append(local_bound(resp, e, log_pi, J_rec, h_rec))
    return resp, bounds


def local_bound(resp, e, log_pi, J_rec, h_rec) -> float:
    r"""Surrogate local bound of one batch without links: :math:`\sum_i \mathbb E[\log p(z_i)
    + \log p(x_i\mid z_i) + \psi(x_i)] + H[q(z_i)] + H[q(x_i)]` (up to the normaliser of
    :math:`\psi`)."""
    mean, second, _, entropy = gaussian_posterior(resp, e, J_rec, h_rec)
    log_resp = torch.log(resp.clamp_min(1e-30))
    potential = (h_rec * mean).sum(-1) - 0.5 * (J_rec * torch.diagonal(second, 0, -2, -1)).sum(-1)
    z_part = (resp * (log_pi + gaussian_expected_loglik(e, mean, second) - log_resp)).sum(-1)
    return float((z_part + potential + entropy).sum())


def table_messages(table: torch.Tensor, rows: torch.Tensor, product):
    """A ``messages`` callback for :func:`local_meanfield`: stores the batch's current q(z)
    at ``rows`` of the table of all items' beliefs (partners in the batch are updated live)
    and returns ``product(table)``, the (|B|, K) link messages, in float32."""

    def messages(resp):
        if resp is not None:
            table[rows] = resp.detach().to(table.dtype)
        return product(table).to(torch.float32)

    return messages


def padded_product(partners: torch.Tensor, weights: torch.Tensor):
    """``table ↦ Σ_slot weights[i, slot] · table[partners[i, slot]]``: the link messages from
    padded (|B|, max degree) entries (:meth:`LinkData.padded_entries`), a product whose shapes
    do not change from batch to batch, unlike a sparse matrix's."""
    return lambda table: (weights.unsqueeze(-1) * table[partners]).sum(1)
