"""crowdGPPL's SVI updates and bound through per-worker Gram matrices (same maths as
:mod:`._crowd_svi`, fewer products when workers answer many comparisons each).

Every mini-batch product of :class:`~._crowd_svi.CrowdSVI` is a sum over comparisons ``p`` of
terms ``e_p r_p r_pᵀ`` (``r_p = A_{a_p} - A_{b_p}`` the projection rows of the compared items)
whose weight ``e_p`` is a per-comparison factor times a factor of the comparison's worker
``j_p``. With the per-worker Gram matrices of the batch (Simpson & Gurevych, 2020, Eqs. 32–37;
``g_p`` the slope of the linearised likelihood, ``Q_p`` its noise)

.. math:: G_j = Σ_{p: j_p = j} (g_p^2 / Q_p) \\, r_p r_pᵀ,

the data precisions of the consensus and of each item component are
``π Σ_j G_j`` and ``π Σ_j E[w_{c,j}²] G_j`` (Eqs. 32, 34), and the precision message of
``w_{c,j}`` needs, of the comparisons' variances ``Var[Δv_c]``, only

.. math:: Σ_{p: j_p = j} (g_p^2 / Q_p) \\, r_pᵀ S_c r_p = \\langle S_c, G_j \\rangle

(Eq. 36). One iteration then costs ``O(B M² + C (J_B M² + M³))`` for ``J_B`` workers in the
batch, instead of ``O(C (B M² + M³))``: one Gram pass over the batch rather than two ``(B, M)``
by ``(M, M)`` products per component. The worker messages are summed per worker before the
worker model sees them (exact: a worker's comparisons share ``w_{c,j}``, and with worker
features the same projection row). The bound's ``Σ_p g_p² Var[d_p] / Q_p`` (2020, Eq. 30 with
Eq. 11) is, with the Gram matrices of all comparisons per worker (weights ``g_p²/Q_p`` at the
bound's linearisation point),
``⟨S_t, Σ_j G_j⟩ + Σ_c Σ_j E[w_{c,j}²] ⟨S_c, G_j⟩ + Σ_p (g_p²/Q_p) Σ_c Var[w_{c,j_p}] Δv̂_{c,p}²``.

The products run in double precision (the per-pair route's mini-batch products are single
precision), so fits agree with it to its single-precision rounding. Each route is taken where it
costs less: the Gram route while the batch has at most :attr:`WorkerGramSVI.max_worker_share`
workers per comparison and their Gram matrices fit in :attr:`WorkerGramSVI.max_gram_bytes`;
the bound where :meth:`WorkerGramSVI._gram_bound` estimates it cheaper.
"""

from __future__ import annotations

import math

import numpy as np

from ...gp import expected_linear_loglik, probit_linearisation
from ...gp.factors import natural_step
from ._crowd_svi import CrowdSVI, _DiagonalWorkers

__all__ = ["WorkerGramSVI"]


def _symmetric(flat: np.ndarray, scale: float) -> np.ndarray:
    """``scale (X + Xᵀ)/2`` for ``X`` given flattened: exactly symmetric, as
    :func:`~crowdbayes.gp.factors.natural_step` needs (``X`` is symmetric up to rounding)."""
    M = math.isqrt(flat.size)
    matrix = flat.reshape(M, M)
    out = np.add(matrix, matrix.T)
    out *= 0.5 * scale
    return out


def _worker_grams(rows_at, weights: np.ndarray, group: np.ndarray, n_groups: int, chunk: int):
    """``(j, G_j)`` for every non-empty group ``j``: ``G_j = Σ_{p in j} weights_p r_p r_pᵀ``
    (``weights ≥ 0``), ``rows_at(positions)`` giving the rows ``r_p``; one syrk per group and
    chunk of at most ``chunk`` rows."""
    order = np.argsort(group, kind="stable")
    edges = np.searchsorted(group[order], np.arange(n_groups + 1))
    root = np.sqrt(np.maximum(weights, 0.0))
    for j in range(n_groups):
        gram = None
        for lo in range(edges[j], edges[j + 1], chunk):
            pick = order[lo : min(lo + chunk, edges[j + 1])]
            part = rows_at(pick) * root[pick, None]
            term = part.T @ part  # the same array twice: syrk, exactly symmetric
            gram = term if gram is None else np.add(gram, term, out=gram)
        if gram is not None:
            yield j, gram


class WorkerGramSVI(CrowdSVI):
    """:class:`~._crowd_svi.CrowdSVI` with its updates and bound through per-worker Gram
    matrices (module docstring) where those cost less; the per-pair route otherwise."""

    #: the Gram route when the batch has at most this many workers per comparison
    max_worker_share = 0.1
    #: ... and its Gram matrices take at most this many bytes: two passes over them per
    #: component are memory-bound once they leave the cache (M = 200, batches of 1,000, one
    #: thread: 20 workers 1.0 against 2.0 s CPU a fit, 50 workers 1.8 against 2.1 s, 100
    #: workers 2.7 against 2.0 s, 200 workers 5.0 against 2.0 s)
    max_gram_bytes = 1 << 24

    def _gram_route(self, n_pairs: int, n_workers: int) -> bool:
        M = self.projection.n_inducing
        return (
            n_workers <= self.max_worker_share * n_pairs
            and n_workers * M * M * 8 <= self.max_gram_bytes
        )

    def _gram_bound(self) -> bool:
        """Whether the bound's Gram route costs less, in multiply-adds over ``M``: a syrk over
        the ``P`` pairs and ``F = 1 + C`` traces per worker, ``P M/2 + F J M``, against ``A S``
        per factor and the per-pair look-ups (about four per pair and factor, or the dense
        ``(N, N)`` product), ``F (N M + min(N², 4 P))``."""
        F, M = 1 + self.C, self.projection.n_inducing
        N, P, J = len(self.A), len(self.left), len(self.worker_counts)
        return P * M / 2 + F * J * M <= F * (N * M + min(N * N, 4 * P))

    def _worker_update_args(self, present: np.ndarray, n_batch: np.ndarray, weight: float):
        """The ``counts`` argument of the worker model's update when it gets one summed row per
        worker: the diagonal workers scale by ``n_j / n_j^{batch}`` (their own comparisons in
        all and in the batch), the inducing workers by the batch weight."""
        if not isinstance(self.workers, _DiagonalWorkers):
            return weight
        counts = np.zeros(len(self.worker_counts))
        counts[present] = self.worker_counts[present] / n_batch
        return counts

    # ---------------------------------------------------------------- one SVI step
    def update(self, rho: float, idx, weight: float) -> None:
        """One natural-gradient step on the comparisons ``idx`` (weight ``P / P_n``), block by
        block as :meth:`CrowdSVI.update`, the products through the batch's per-worker Gram
        matrices."""
        pairs = self.pairs
        who = pairs.worker[idx]
        present, group, n_batch = np.unique(who, return_inverse=True, return_counts=True)
        if not self._gram_route(len(who), len(present)):
            super().update(rho, idx, weight)
            return
        K_inv, J = self.projection.K_inv, len(present)
        rows = self.A[self.left[idx]] - self.A[self.right[idx]]
        y, q = pairs.y[idx], self.noise_var[idx]
        dt = rows @ self.t.mean
        dv = (rows @ self.v_means().T).T
        w_mean_j, w_var_j = self.workers.moments(present)
        w_mean = w_mean_j[:, group]
        d_cur = dt + np.sum(dv * w_mean, axis=0)
        p, g = probit_linearisation(d_cur, self.alpha)
        base = y - p + g * d_cur  # the target of the whole difference d
        g_q = g / q
        gg_q = g * g_q
        grams = np.empty((J, rows.shape[1] ** 2))
        for j, gram in _worker_grams(rows.__getitem__, gg_q, group, J, len(who)):
            grams[j] = gram.ravel()
        # consensus t (2020, Eqs. 34–35)
        self.t = natural_step(
            self.t,
            self.scale_t.mean * K_inv,
            _symmetric(grams.sum(axis=0), weight),
            rows.T @ (weight * g_q * (base - g * (d_cur - dt))),
            rho,
        )
        d_cur += rows @ self.t.mean - dt
        counts = self._worker_update_args(present, n_batch, weight)
        ones = np.ones(J)
        for c in range(self.C):
            # item component v_c (Eqs. 32–33)
            own = dv[c] * w_mean[c]
            second_w = w_mean_j[c] ** 2 + w_var_j[c]
            self.V[c] = natural_step(
                self.V[c],
                self.scales_v[c].mean * K_inv,
                _symmetric(second_w @ grams, weight),
                rows.T @ (weight * g_q * w_mean[c] * (base - g * (d_cur - own))),
                rho,
            )
            self.scales_v[c] = self.prior_v.update(K_inv, self.V[c])
            dv_c = rows @ self.V[c].mean
            d_cur += dv_c * w_mean[c] - own
            own = dv_c * w_mean[c]
            # worker component w_c (Eqs. 36–37), summed per worker
            quadratic = np.maximum(grams @ self.V[c].cov.ravel(), 0.0)
            self.workers.update(
                c,
                present,
                np.bincount(group, gg_q * dv_c**2, minlength=J) + quadratic,
                np.bincount(group, g_q * dv_c * (base - g * (d_cur - own)), minlength=J),
                ones,
                rho,
                counts,
                self.prior_w,
            )
            w_mean_j[c], w_var_j[c] = self.workers.component_moments(c, present)
            w_mean[c] = w_mean_j[c, group]
            d_cur += dv_c * w_mean[c] - own
        self.scale_t = self.prior_t.update(K_inv, self.t)

    # ---------------------------------------------------------------- the bound
    def bound(self, linearisation: np.ndarray | None = None) -> float:
        """:meth:`CrowdSVI.bound`, its variance term through per-worker Gram matrices of all
        comparisons when that costs less (module docstring)."""
        if not self._gram_bound():
            return super().bound(linearisation)
        n_pairs, n_workers = len(self.left), len(self.worker_counts)
        factors = [self.t, *self.V]
        means = self.A @ np.stack([f.mean for f in factors]).T  # (N, 1 + C)
        d = means[self.left] - means[self.right]  # (P, 1 + C)
        who = self.pairs.worker
        w_mean, w_var = self.workers.moments()  # (C, J)
        mean = d[:, 0] + np.sum(d[:, 1:] * w_mean[:, who].T, axis=1)
        y, q = self.pairs.y, self.noise_var
        loglik = expected_linear_loglik(y, q, mean, np.zeros(n_pairs), self.alpha, linearisation)
        _, g = probit_linearisation(mean if linearisation is None else linearisation, self.alpha)
        c_p = g * g / q
        # Σ_p c_p Var[d_p]: the variances of Δv̂ through the Gram matrices, Var[w] Δv̂² per pair
        spread = float(np.sum(c_p * np.sum(w_var[:, who].T * d[:, 1:] ** 2, axis=1)))
        covs = np.stack([f.cov.ravel() for f in factors])  # (1 + C, M²)
        coef = np.vstack([np.ones(n_workers), w_mean**2 + w_var])  # (1 + C, J)
        A, left, right = self.A, self.left, self.right

        def rows_at(pick: np.ndarray) -> np.ndarray:
            return A[left[pick]] - A[right[pick]]

        for j, gram in _worker_grams(rows_at, c_p, who, n_workers, self.chunk):
            traces = covs @ gram.ravel()  # ⟨S_k, G_j⟩ for every factor k
            spread += float(coef[:, j] @ np.maximum(traces, 0.0))
        return loglik - 0.5 * spread - self.kl()
