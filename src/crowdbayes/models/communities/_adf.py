"""Expected likelihood of one user's comparisons under Gaussian beliefs about the utilities.

For a Gaussian ``N(f; m, S)`` over the utilities of the items a user compared, the evidence of
their comparisons ``D_u`` is

.. math:: p(D_u) = \\int \\prod_{k} ℓ_k(f_{l_k} - f_{r_k}) \\, N(f; m, S) \\, df,

the bracketed integral of Abbasnejad et al. (2013, Eq. 19). We estimate it by assumed-density
filtering (ADF; Opper, 1998; Minka, 2001, Sec. 3.1), the single forward pass of sequential EP:
the pairs are taken in turn, each multiplies its likelihood ``ℓ_k`` into the current Gaussian,
the result is projected back to a Gaussian by matching its moments along the difference
direction ``a_k = e_{l_k} - e_{r_k}``, and

.. math:: \\log p(D_u) ≈ \\sum_k \\log Ẑ_k, \\qquad
   Ẑ_k = \\int ℓ_k(d) N(d; a_k^T m_{k-1}, a_k^T S_{k-1} a_k) \\, dd,

the chain rule ``p(D_u) = Π_k p(y_k | y_{<k})`` with Gaussian beliefs. The rank-one update with
``c = S a``, ``v = aᵀ S a`` and tilted moments ``(m̂, v̂)`` of the difference is
``m ← m + c (m̂ - aᵀm)/v``, ``S ← S - c cᵀ (v - v̂)/v²``. The moments come from the shared
probit likelihood (:func:`~crowdbayes.gp.tilted_moments`), so
repeated pairs and ties are handled as in EP. All candidate communities are filtered at once
(a leading batch axis): the cost for one user is ``O(C P s²)`` for ``C`` communities, ``P``
pairs and ``s`` items by rank-one updates; :func:`_filter` does it in ``O(C P² s)``.
"""

from __future__ import annotations

import numpy as np

from ...gp import PairCounts, probit_terms, tilted_moments

__all__ = ["adf_log_evidence", "adf_filter"]


def adf_log_evidence(
    mean: np.ndarray, cov: np.ndarray, pairs: PairCounts, alpha: float
) -> np.ndarray:
    """ADF estimate of ``log ∫ Π_k ℓ_k(f_l - f_r) N(f; mean_c, cov_c) df`` for each ``c``.

    Parameters
    ----------
    mean : ndarray (C, s)
        Means of ``C`` Gaussian beliefs over the ``s`` items ``pairs`` index.
    cov : ndarray (C, s, s)
        Their covariances.
    pairs : PairCounts
        The user's comparisons, item codes in ``[0, s)``, filtered in their order: grouped by
        pair, or one per comparison (then a single win has the closed form, no quadrature).
    alpha : float
        Probit scale ``√2 σ``.

    Returns
    -------
    ndarray (C,)
    """
    return _filter(mean, cov, pairs, alpha, with_cov=False)[0]


def adf_filter(
    mean: np.ndarray, cov: np.ndarray, pairs: PairCounts, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`adf_log_evidence` together with the filtered beliefs: returns ``(log evidence
    (C,), mean (C, s), cov (C, s, s))`` after all the comparisons (copies; inputs untouched)."""
    return _filter(mean, cov, pairs, alpha, with_cov=True)


def _filter(mean, cov, pairs: PairCounts, alpha: float, with_cov: bool):
    """The filter with the covariance kept as ``S_k = S_0 - Σ_{t<k} d_t c_t c_tᵀ``: step ``k``
    needs only ``S_k a_k = S_0 a_k - Σ_t d_t c_t (c_tᵀ a_k)``, ``O(C k s)``, and the final
    covariance, when asked for, is one matrix product. For ``P`` pairs that is ``O(C P² s)``
    instead of ``O(C P s²)`` for rank-one updates of the whole matrix (a user compares fewer
    pairs than there are items), and dense matrix products instead of memory-bound updates."""
    mean = np.array(mean, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    cov = 0.5 * (cov + cov.transpose(0, 2, 1))  # exactly symmetric: a column read as a row
    n_beliefs, n_items = mean.shape
    n_pairs = len(pairs.left)
    columns = np.empty((n_beliefs, n_pairs, n_items))  # c_t = S_t a_t
    shrink = np.empty((n_beliefs, n_pairs))  # d_t = (v_t - v̂_t) / v_t²
    total = np.zeros(n_beliefs)
    for k, (i, j, wins, losses) in enumerate(
        zip(pairs.left, pairs.right, pairs.wins, pairs.losses, strict=True)
    ):
        col = cov[:, i] - cov[:, j]
        if k:
            weights = shrink[:, None, :k] * (columns[:, None, :k, i] - columns[:, None, :k, j])
            col -= (weights @ columns[:, :k])[:, 0]
        m = mean[:, i] - mean[:, j]
        v = np.maximum(col[:, i] - col[:, j], 1e-12)
        if wins + losses == 1.0 and wins * losses == 0.0:
            # one win or loss: the closed form of tilted_moments, without its dispatch
            sign = 1.0 if wins else -1.0
            scale = np.sqrt(alpha**2 + v)
            log_z, r, curv = probit_terms(sign * m / scale)
            m_hat = m + sign * v * r / scale
            v_hat = v - v * v * curv / scale**2
        else:
            log_z, m_hat, v_hat = tilted_moments(
                m, v, np.full_like(m, wins), np.full_like(m, losses), alpha
            )
        total += log_z
        mean += col * ((m_hat - m) / v)[:, None]
        columns[:, k], shrink[:, k] = col, (v - v_hat) / v**2
    if not with_cov:
        return total, mean, None
    downdate = (columns * shrink[:, :, None]).transpose(0, 2, 1) @ columns
    return total, mean, cov - downdate
