r"""Newton's method for Bradley–Terry on counted battles, with ties and covariates.

The parameters are ``z = (s, β, θ)``: a score per model, a coefficient per covariate and, for
Davidson ties, the log tie strength θ. A counted row ``r`` (models ``a < b``, covariates
``x_r``, ``n_r`` battles) has the difference :math:`d_r = s_a - s_b + x_r^\top\beta` and enters
the objective with its outcome's count as weight (:func:`._davidson.weighted_terms`):

- ``tie_model="davidson"``: Davidson (1970), weights ``(n_r, 0, 0)``, ``(0, n_r, 0)`` or
  ``(0, 0, n_r)``;
- ``tie_model="half"``: plain Bradley–Terry (1952) with a tie counted as half a win for each side
  (the convention of the Chatbot Arena, Chiang et al. 2024): weights ``(n_r/2, n_r/2, 0)``,
  :math:`\theta = -\infty`; this is the arena's logistic regression.

Without covariates the rows of one pair add up (the likelihood depends on a pair only through
:math:`d`), so a Newton step costs O(pairs + models³) whatever the number of battles.

The scores are identified only up to a shift. With ``prior_var`` (shrinkage) the prior
:math:`s_i \sim N(0, \sigma^2)` fixes it; without, the objective gets
:math:`-\tfrac{1}{2}(\sum_i s_i)^2`, which leaves the likelihood's maximiser unchanged but
centres it (:math:`\sum_i s_i = 0`) and makes minus the Hessian :math:`M` positive definite;
on the centred scores :math:`P M^{-1} P` (``P`` the centring projector) is then the
pseudo-inverse of the likelihood's information, the Laplace covariance.

**Sparse path** (``sparse=True``, large boards): minus the Hessian is kept as
:class:`SparseHessian` — the comparison graph's weighted Laplacian (a scipy sparse matrix, with
the covariates' and θ's few dense rows and columns) plus the centring term :math:`c\,u u^\top`
(``u`` the scores' indicator) applied as a rank-one product — and Newton systems are solved by
conjugate gradients with a Jacobi preconditioner (Hestenes & Stiefel 1952; several right-hand
sides at once, each with its own step lengths): O(pairs) per iteration, no dense matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...data.battles import TIE, BattleCounts
from ._davidson import outcome_log_probs, weighted_terms
from ._solver import TIE_PRIOR_MEAN, TIE_PRIOR_SD

if TYPE_CHECKING:  # scipy is imported when needed: 0.1 s, most of a small board's fit
    import scipy.sparse as sp

__all__ = ["BattleProblem", "Cholesky", "Mode", "SparseHessian", "solve"]

#: weight of the centring term when the scores have no prior
_CENTRING = 1.0
#: relative residual at which a conjugate-gradient solve stops, and its most iterations
CG_RTOL, CG_MAX_ITER = 1e-12, 2000
#: up to this many parameters a dense system is factorised by numpy (no scipy import), above
#: by scipy's ``cho_factor`` (whose triangular solves are cheaper than numpy's general ones)
NUMPY_CHOLESKY = 500


class SparseHessian:
    r"""Minus the Hessian as ``matrix + c·uuᵀ``: ``matrix`` sparse symmetric, ``u`` the
    indicator of the scores (the first ``n`` parameters) and ``c`` the centring weight (0 with
    a prior). Positive definite; :meth:`solve` by Jacobi-preconditioned conjugate gradients."""

    def __init__(self, matrix: sp.csr_matrix, n: int, centring: float) -> None:
        self.matrix, self.n, self.centring = matrix, n, centring
        self.diagonal = matrix.diagonal().copy()
        self.diagonal[:n] += centring
        self.shape = matrix.shape

    def dot(self, x: np.ndarray) -> np.ndarray:
        out = self.matrix @ x
        if self.centring:
            out[: self.n] += self.centring * x[: self.n].sum(axis=0)
        return out

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``M⁻¹ rhs`` (one vector, or one per column) by preconditioned conjugate gradients,
        each column to a relative residual :data:`CG_RTOL`; raises ``LinAlgError`` if a
        column has not got there in :data:`CG_MAX_ITER` iterations."""
        B = np.asarray(rhs, dtype=np.float64)
        single = B.ndim == 1
        B = B[:, None] if single else B
        inverse = 1.0 / self.diagonal[:, None]
        out = np.zeros_like(B)
        columns = np.arange(B.shape[1])  # those still iterating; the arrays hold only them
        X, R = np.zeros_like(B), B.copy()
        Z = inverse * R
        P = Z.copy()
        rz = np.einsum("ij,ij->j", R, Z)
        target = CG_RTOL * np.sqrt(np.einsum("ij,ij->j", B, B))
        for _ in range(CG_MAX_ITER + 1):
            done = np.sqrt(np.einsum("ij,ij->j", R, R)) <= target
            if done.any():
                out[:, columns[done]] = X[:, done]
                keep = ~done
                columns, X, R, P, rz, target = (
                    columns[keep],
                    X[:, keep],
                    R[:, keep],
                    P[:, keep],
                    rz[keep],
                    target[keep],
                )
            if not columns.size:
                return out[:, 0] if single else out
            Q = self.dot(P)
            alpha = rz / np.einsum("ij,ij->j", P, Q)
            X += alpha * P
            R -= alpha * Q
            Z = inverse * R
            new = np.einsum("ij,ij->j", R, Z)
            P = Z + (new / rz) * P
            rz = new
        raise np.linalg.LinAlgError(
            f"conjugate gradients did not converge in {CG_MAX_ITER} iterations"
        )


class Cholesky:
    r"""The Cholesky factor :math:`M = LL^\top` of a dense symmetric positive definite
    matrix, for solves :math:`M^{-1} b = L^{-\top}(L^{-1} b)`; ``LinAlgError`` if ``M`` is not
    positive definite. Up to :data:`NUMPY_CHOLESKY` rows by numpy (LAPACK ``potrf``, then the
    two triangular systems by ``gesv``: O(n³) each, under a millisecond at a few hundred rows),
    so that a small board's fit never imports scipy; above, scipy's ``cho_factor`` and
    ``cho_solve`` (``potrf``/``potrs``)."""

    def __init__(self, matrix: np.ndarray) -> None:
        matrix = np.asarray(matrix, dtype=np.float64)
        self._scipy = None
        if len(matrix) > NUMPY_CHOLESKY:
            from scipy.linalg import cho_factor

            self._scipy = cho_factor(matrix, lower=True, check_finite=False)
        else:
            self._lower = np.linalg.cholesky(matrix)

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``M⁻¹ rhs`` (a vector, or one column per right-hand side)."""
        if self._scipy is not None:
            from scipy.linalg import cho_solve

            return cho_solve(self._scipy, rhs, check_finite=False)
        return np.linalg.solve(self._lower.T, np.linalg.solve(self._lower, rhs))


def solve(matrix, rhs: np.ndarray) -> np.ndarray:
    """``matrix⁻¹ rhs`` for minus a Hessian, dense (:class:`Cholesky`) or
    :class:`SparseHessian`."""
    if isinstance(matrix, SparseHessian):
        return matrix.solve(rhs)
    return Cholesky(matrix).solve(rhs)


@dataclass
class Mode:
    """A Newton fit's result: the parameters, minus the Hessian there, steps, convergence."""

    z: np.ndarray
    matrix: np.ndarray
    n_iter: int
    converged: bool
    value: float
    history: tuple = ()  # the objective after each step


class BattleProblem:
    """The log posterior of ``z = (s, β, θ)`` given counted battles (module docstring)."""

    def __init__(
        self, counts: BattleCounts, tie_model: str, prior_var: float | None, sparse: bool = False
    ) -> None:
        self.counts = counts
        self.sparse = sparse
        self.n = counts.n_models
        self.k = counts.X.shape[1]
        self.davidson = tie_model == "davidson"
        self.size = self.n + self.k + int(self.davidson)
        self.prior_var = prior_var
        self._signed = self._unsigned = self._pattern = None
        self.set_counts(counts.count)

    # ------------------------------------------------------------------ rows and weights
    def row_weights(self, count: np.ndarray) -> np.ndarray:
        """(3, rows) outcome weights of the counted rows with counts ``count``."""
        c = self.counts
        weights = np.zeros((3, c.n_rows))
        if self.davidson:
            weights[c.outcome, np.arange(c.n_rows)] = count
            return weights
        tie = c.outcome == TIE
        weights[c.outcome[~tie], np.flatnonzero(~tie)] = count[~tie]
        weights[0, tie] = weights[1, tie] = 0.5 * count[tie]
        return weights

    def set_counts(self, count: np.ndarray) -> None:
        """Use the counted rows with counts ``count`` (pairs summed when no covariates)."""
        c = self.counts
        weights = self.row_weights(np.asarray(count, dtype=np.float64))
        if self.k:
            self.a, self.b, self.X, self.weights = c.a, c.b, c.X, weights
            return
        keys, pair = np.unique(c.a * self.n + c.b, return_inverse=True)
        self._pair = pair.ravel()
        self.a, self.b = keys // self.n, keys % self.n
        self.X = np.zeros((len(keys), 0))
        self.weights = np.stack([np.bincount(self._pair, w, len(keys)) for w in weights])

    def pair_weights(self, count: np.ndarray) -> np.ndarray:
        """Weights per term of the objective for other row counts (same rows)."""
        weights = self.row_weights(np.asarray(count, dtype=np.float64))
        if self.k:
            return weights
        return np.stack([np.bincount(self._pair, w, len(self.a)) for w in weights])

    # ------------------------------------------------------------------ objective
    def split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        theta = z[-1] if self.davidson else -np.inf
        return z[: self.n], z[self.n : self.n + self.k], theta

    def diff(self, z: np.ndarray) -> np.ndarray:
        s, beta, _ = self.split(z)
        return s[self.a] - s[self.b] + self.X @ beta

    def _prior(self, z: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Value, gradient and minus the Hessian's diagonal / rank-one part of the prior."""
        s, _, theta = self.split(z)
        grad = np.zeros(self.size)
        if self.prior_var is None:
            total = s.sum()
            value = -0.5 * _CENTRING * total**2
            grad[: self.n] = -_CENTRING * total
        else:
            value = -0.5 * float(s @ s) / self.prior_var
            grad[: self.n] = -s / self.prior_var
        if self.davidson:
            value -= 0.5 * ((theta - TIE_PRIOR_MEAN) / TIE_PRIOR_SD) ** 2
            grad[-1] = -(theta - TIE_PRIOR_MEAN) / TIE_PRIOR_SD**2
        return value, grad

    def prior_gradient(self, z: np.ndarray) -> np.ndarray:
        """The gradient of the prior (or of the centring term) at ``z``."""
        return self._prior(z)[1]

    def value(self, z: np.ndarray, weights: np.ndarray | None = None) -> float:
        weights = self.weights if weights is None else weights
        _, _, theta = self.split(z)
        return weighted_terms(self.diff(z), theta, weights)[0] + self._prior(z)[0]

    def gradient(self, z: np.ndarray, weights: np.ndarray | None = None):
        """Value and gradient of the objective, and the per-term derivatives
        (:func:`._davidson.weighted_terms`) they came from."""
        weights = self.weights if weights is None else weights
        n, k = self.n, self.k
        _, _, theta = self.split(z)
        terms = weighted_terms(self.diff(z), theta, weights)
        value, g_d, _, g_t, _, _ = terms
        prior_value, grad = self._prior(z)
        grad[:n] += np.bincount(self.a, g_d, n) - np.bincount(self.b, g_d, n)
        if k:
            grad[n : n + k] = self.X.T @ g_d
        if self.davidson:
            grad[-1] += g_t
        return value + prior_value, grad, terms

    def gradient_and_matrix(self, z: np.ndarray, weights: np.ndarray | None = None):
        """Value, gradient and minus the Hessian (positive definite) of the objective: dense,
        or a :class:`SparseHessian` for a sparse problem."""
        if self.sparse:
            return self._gradient_and_sparse(z, weights)
        n, k, size = self.n, self.k, self.size
        value, grad, (_, _, c_d, _, c_t, cross) = self.gradient(z, weights)
        matrix = np.zeros((size, size))
        flat = np.concatenate([self.a * size + self.b, self.b * size + self.a])
        block = np.bincount(flat, np.concatenate([-c_d, -c_d]), size * n)
        matrix[:n] = block.reshape(n, size)
        matrix[np.arange(n), np.arange(n)] = np.bincount(self.a, c_d, n) + np.bincount(
            self.b, c_d, n
        )
        if self.prior_var is None:
            matrix[:n, :n] += _CENTRING
        else:
            matrix[np.arange(n), np.arange(n)] += 1.0 / self.prior_var
        if k:
            cx = c_d[:, None] * self.X
            side = self._incidence()[0].T @ cx  # Σ_r c_r (e_a − e_b) x_rᵀ
            matrix[:n, n : n + k] = side
            matrix[n : n + k, :n] = side.T
            matrix[n : n + k, n : n + k] = self.X.T @ cx
        if self.davidson:
            column = np.zeros(size - 1)
            column[:n] = np.bincount(self.a, cross, n) - np.bincount(self.b, cross, n)
            column[n : n + k] = self.X.T @ cross
            matrix[:-1, -1] = matrix[-1, :-1] = column
            matrix[-1, -1] = c_t + 1.0 / TIE_PRIOR_SD**2
        return value, grad, matrix

    def _gradient_and_sparse(self, z: np.ndarray, weights: np.ndarray | None):
        """:meth:`gradient_and_matrix` with minus the Hessian as a :class:`SparseHessian`: the
        same entries, the centring term kept as a rank-one product."""
        n, k, size = self.n, self.k, self.size
        value, grad, (_, _, c_d, _, c_t, cross) = self.gradient(z, weights)
        signed, unsigned = self._incidence()
        diagonal = unsigned.T @ c_d
        if self.prior_var is not None:
            diagonal = diagonal + 1.0 / self.prior_var
        rows = [np.arange(n), self.a, self.b]
        cols = [np.arange(n), self.b, self.a]
        vals = [diagonal, -c_d, -c_d]
        dense_rows = []  # the covariates' and θ's rows over all parameters
        if k:
            side = signed.T @ (c_d[:, None] * self.X)  # Σ_r c_r (e_a − e_b) x_rᵀ
            for j in range(k):
                dense_rows.append(np.concatenate([side[:, j], self.X.T @ (c_d * self.X[:, j])]))
        if self.davidson:
            column = np.concatenate([signed.T @ cross, self.X.T @ cross])
            for j in range(k):
                dense_rows[j] = np.append(dense_rows[j], column[n + j])
            dense_rows.append(np.append(column, c_t + 1.0 / TIE_PRIOR_SD**2))
        everything = np.arange(size)
        for j, row in enumerate(dense_rows):
            rows += [np.full(size, n + j), everything[:n]]
            cols += [everything, np.full(n, n + j)]
            vals += [row, row[:n]]
        if self._pattern is None:  # the sparsity pattern is fixed: its CSR order, once
            rows, cols = np.concatenate(rows), np.concatenate(cols)
            order = np.lexsort((cols, rows))
            indptr = np.searchsorted(rows[order], np.arange(size + 1))
            self._pattern = order, cols[order].astype(np.int64), indptr.astype(np.int64)
        order, indices, indptr = self._pattern
        data = np.concatenate(vals)[order]
        import scipy.sparse as sp

        matrix = sp.csr_matrix((data, indices, indptr), shape=(size, size))
        centring = _CENTRING if self.prior_var is None else 0.0
        return value, grad, SparseHessian(matrix, n, centring)

    # ------------------------------------------------------------------ Newton
    def maximise(
        self,
        z: np.ndarray | None = None,
        weights: np.ndarray | None = None,
        *,
        max_iter: int = 100,
        tol: float = 1e-10,
        line_search: bool = True,
    ) -> Mode:
        """Damped Newton from ``z`` (zeros, and θ at its prior mean, by default) until the
        largest coordinate change is below ``tol``; the step is halved until the objective does
        not decrease (``line_search``; a bootstrap replicate started at the full-data mode
        takes full steps)."""
        if z is None:
            z = np.zeros(self.size)
            if self.davidson:
                z[-1] = TIE_PRIOR_MEAN
        value, grad, matrix = self.gradient_and_matrix(z, weights)
        converged, n_iter, history = False, 0, []
        for n_iter in range(1, max_iter + 1):  # noqa: B007
            step = solve(matrix, grad)
            scale = 1.0
            while True:
                new = z + scale * step
                if not line_search:
                    new_value, new_grad, new_matrix = self.gradient_and_matrix(new, weights)
                    break
                if scale == 1.0:  # usually taken: its gradient and matrix at once
                    new_value, new_grad, new_matrix = self.gradient_and_matrix(new, weights)
                    if new_value >= value - 1e-12 * abs(value):
                        break
                else:
                    new_value = self.value(new, weights)
                    if new_value >= value - 1e-12 * abs(value) or scale < 1e-10:
                        new_value, new_grad, new_matrix = self.gradient_and_matrix(new, weights)
                        break
                scale *= 0.5
            change = scale * float(np.abs(step).max())
            z, value, grad, matrix = new, new_value, new_grad, new_matrix
            history.append(value)
            if change < tol:
                converged = True
                break
        return Mode(z, matrix, n_iter, converged, value, tuple(history))

    # ------------------------------------------------------------------ many refits at once
    def batch_weights(self, counts: np.ndarray) -> np.ndarray:
        """(3, B, pairs) weights of ``B`` replicate row counts ``(B, rows)`` (no covariates:
        each counted row is one (pair, outcome), so its count lands in one slot)."""
        c = self.counts
        weights = np.zeros((3, counts.shape[0], len(self.a)))
        for outcome in (0, 1, 2):
            rows = np.flatnonzero(c.outcome == outcome)
            pairs = self._pair[rows]
            if self.davidson or outcome < TIE:
                weights[outcome][:, pairs] = counts[:, rows]
            else:  # a tie, half a win each
                weights[0][:, pairs] += 0.5 * counts[:, rows]
                weights[1][:, pairs] += 0.5 * counts[:, rows]
        return weights

    def _incidence(self):
        """Sparse (terms × models) signed incidence ``e_a − e_b`` of the objective's terms
        (pairs, or counted rows with covariates) and its absolute value."""
        if self._signed is None:
            import scipy.sparse as sp

            m = len(self.a)
            rows = np.concatenate([np.arange(m), np.arange(m)])
            cols = np.concatenate([self.a, self.b])
            signs = np.concatenate([np.ones(m), -np.ones(m)])
            self._signed = sp.csr_matrix((signs, (rows, cols)), shape=(m, self.n))
            self._unsigned = abs(self._signed)
        return self._signed, self._unsigned

    def _batch_terms(self, Z: np.ndarray, weights: np.ndarray):
        """Per-pair derivatives of ``B`` objectives at once: ``(g_d, c_d, g_θ, c_θ, cross)``,
        each (B, pairs) or (B,)."""
        s = Z[:, : self.n]
        d = s[:, self.a] - s[:, self.b]
        if not self.davidson:  # one call: the tie strength is the same (none) in every one
            _, g_d, c_d, _, _, _ = weighted_terms(d, -np.inf, weights)
            return g_d, c_d, None, None, None
        parts = [weighted_terms(d[r], Z[r, -1], weights[:, r])[1:] for r in range(len(Z))]
        g_d, c_d, g_t, c_t, cross = (np.array(p) for p in zip(*parts, strict=True))
        return g_d, c_d, g_t, c_t, cross

    def batch_maximise(
        self, Z: np.ndarray, weights: np.ndarray, *, max_iter: int = 20, tol: float = 1e-10
    ) -> tuple[np.ndarray, np.ndarray]:
        """Newton's method (full steps) on ``B`` objectives at once from ``Z`` (B, size), for a
        problem without covariates: the B Hessians are built and solved as one stack. Stops
        when every step is below ``sqrt(tol)`` (quadratic convergence: the error left is then
        about the step squared). Returns ``(Z, converged)`` (converged per objective)."""
        n, size = self.n, self.size
        signed, unsigned = self._incidence()
        Z = Z.copy()
        diagonal = np.arange(n)
        converged = np.zeros(len(Z), dtype=bool)
        for _ in range(max_iter):
            g_d, c_d, g_t, c_t, cross = self._batch_terms(Z, weights)
            grad = (signed.T @ g_d.T).T
            matrix = np.zeros((len(Z), size, size))
            matrix[:, self.a, self.b] = -c_d
            matrix[:, self.b, self.a] = -c_d
            matrix[:, diagonal, diagonal] = (unsigned.T @ c_d.T).T
            s = Z[:, :n]
            if self.prior_var is None:
                grad -= _CENTRING * s.sum(axis=1, keepdims=True)
                matrix[:, :n, :n] += _CENTRING
            else:
                grad -= s / self.prior_var
                matrix[:, diagonal, diagonal] += 1.0 / self.prior_var
            if self.davidson:
                theta = Z[:, -1]
                grad = np.column_stack([grad, g_t - (theta - TIE_PRIOR_MEAN) / TIE_PRIOR_SD**2])
                column = (signed.T @ cross.T).T
                matrix[:, :n, -1] = matrix[:, -1, :n] = column
                matrix[:, -1, -1] = c_t + 1.0 / TIE_PRIOR_SD**2
            step = np.linalg.solve(matrix, grad[..., None])[..., 0]
            Z += step
            converged = np.abs(step).max(axis=1) ** 2 < tol
            if converged.all():
                break
        return Z, converged & np.isfinite(Z).all(axis=1)

    # ------------------------------------------------------------------ per-battle scores
    def battle_scores(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The gradient of one battle's log-likelihood for each counted row, as ``(g_d, g_θ,
        design)``: the row's gradient is ``g_d·(e_a − e_b, x_r) ⊕ g_θ``."""
        c = self.counts
        s, beta, theta = self.split(z)
        d = s[c.a] - s[c.b] + c.X @ beta
        _, g_d, _, _, _, _ = weighted_terms(d, theta, self.row_weights(np.ones(c.n_rows)))
        g_t = np.zeros(c.n_rows)
        if self.davidson:
            p_tie = np.exp(outcome_log_probs(d, theta)[2])
            g_t = (c.outcome == TIE) - p_tie
        return g_d, g_t, d

    def score_matrix(self, z: np.ndarray):
        """Sparse (rows × parameters) matrix of each counted row's one-battle gradient."""
        import scipy.sparse as sp

        c = self.counts
        g_d, g_t, _ = self.battle_scores(z)
        rows = np.arange(c.n_rows)
        parts_r, parts_c, parts_v = [rows, rows], [c.a, c.b], [g_d, -g_d]
        for j in range(self.k):
            parts_r.append(rows)
            parts_c.append(np.full(c.n_rows, self.n + j))
            parts_v.append(g_d * c.X[:, j])
        if self.davidson:
            parts_r.append(rows)
            parts_c.append(np.full(c.n_rows, self.size - 1))
            parts_v.append(g_t)
        return sp.csr_matrix(
            (np.concatenate(parts_v), (np.concatenate(parts_r), np.concatenate(parts_c))),
            shape=(c.n_rows, self.size),
        )
