"""The products of a full-batch SVI step through the compared items instead of the comparisons.

An SVI step with the linearised likelihood (:mod:`.svi`) needs, over the comparisons ``p`` of
its batch, the weighted Gram matrix and the weighted sum of the difference rows
``D_p = A_{l_p} - A_{r_p}`` (``A = K_xm K_mm⁻¹``, one row per compared item):

.. math:: G = Σ_p w_p D_p^T D_p, \\qquad h = Σ_p v_p D_p^T, \\qquad \\hat d_p = D_p m.

Row by row (``Rᵀ R`` with ``R = diag(√w) D``) that is ``O(P M²)`` for ``P`` comparisons and
``M`` inducing points. Each row is a difference of two item rows, ``D = E A`` for the signed
incidence matrix ``E`` (``E_{p l_p} = 1``, ``E_{p r_p} = -1``), so

.. math:: G = A^T L_w A, \\qquad L_w = E^T \\operatorname{diag}(w) E
    = \\operatorname{diag}(\\deg_w) - W - W^T,

``L_w`` the weighted Laplacian of the comparison graph over the ``N`` compared items
(``W_{lr} = Σ_{p: (l_p, r_p) = (l, r)} w_p``, ``\\deg_w`` the weights summed per item), with
``P + N`` non-zeros; likewise ``h = Aᵀ Eᵀ v`` and ``\\hat d = E (A m)``. That costs
``O(P M + N M²)``: when every item is in several comparisons, a full pass over the data costs
about what one mini-batch of ``N`` comparisons costs row by row (the graph-Laplacian form of
the pairwise Gram matrix, e.g. Chu & Ghahramani, 2005, Sec. 2 for the Hessian of a pairwise
likelihood). The products are the same up to rounding; :meth:`ItemGram.cheaper` says which
form costs fewer operations.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ItemGram"]


class ItemGram:
    """``G``, ``h`` and ``d̂`` of all comparisons (module docstring) for the item rows ``A``
    (N, M) and each comparison's items ``left``, ``right`` (positions in ``A``)."""

    def __init__(self, A: np.ndarray, left: np.ndarray, right: np.ndarray) -> None:
        self.A = np.ascontiguousarray(A, dtype=np.float64)
        self.left, self.right = left, right

    @staticmethod
    def cheaper(n_items: int, n_pairs: int, n_inducing: int) -> bool:
        """Whether the item form takes fewer multiply-adds than the rows for all comparisons:
        ``N M²`` (one general product) plus ``4 P M`` (the sparse products, the item
        means), against ``P M² / 2`` (a symmetric rank-``P`` update) plus ``2 P M``
        (gathering the rows)."""
        m = n_inducing
        return n_items * m * m + 4 * n_pairs * m < n_pairs * m * m / 2 + 2 * n_pairs * m

    def differences(self, mean: np.ndarray) -> np.ndarray:
        """``d̂ = D m`` for every comparison, through the item means ``A m``."""
        at_items = self.A @ mean
        return at_items[self.left] - at_items[self.right]

    def laplacian_rows(self, weights: np.ndarray) -> np.ndarray:
        """``L_w A`` (N, M): the weighted Laplacian times the item rows, ``O(P M)``."""
        from scipy.sparse import csr_matrix

        n = len(self.A)
        # W with duplicates summed (the sparse constructor adds repeated pairs)
        W = csr_matrix((weights, (self.left, self.right)), shape=(n, n))
        degree = np.bincount(self.left, weights, n) + np.bincount(self.right, weights, n)
        LA = self.A * degree[:, None]
        LA -= W @ self.A
        LA -= W.T @ self.A
        return LA

    def gram(self, weights: np.ndarray) -> np.ndarray:
        """``G = Aᵀ L_w A`` (exactly symmetric) for non-negative ``weights`` per comparison."""
        G = self.A.T @ self.laplacian_rows(weights)
        G += G.T.copy()
        G *= 0.5
        return G

    def triangular_gram(self, weights: np.ndarray) -> np.ndarray:
        """``G = Aᵀ L_w A`` (exactly symmetric) for a lower-triangular ``A``, such as a
        Cholesky factor ``L`` of the prior covariance (``Lᵀ W L``, the whitened data precision
        of :mod:`.posterior`): ``Aᵀ`` is applied by BLAS ``trmm``, half the multiply-adds of
        a general product."""
        from scipy.linalg import blas

        # Gᵀ = (L_w A)ᵀ A: the transposes of the row-major arrays are column-major views
        # (upper-triangular Aᵀ), which BLAS takes without copying
        G = blas.dtrmm(1.0, self.A.T, self.laplacian_rows(weights).T, side=1, lower=0, trans_a=1)
        return 0.5 * (G + G.T)

    def project(self, values: np.ndarray) -> np.ndarray:
        """``h = Σ_p v_p D_pᵀ = Aᵀ (Eᵀ v)``."""
        n = len(self.A)
        per_item = np.bincount(self.left, values, n) - np.bincount(self.right, values, n)
        return self.A.T @ per_item
