"""The Bradley–Terry posterior mode and its Laplace variances: the encoded comparisons
(:class:`_Design`) and Newton's method on the scores and the tie strength (:class:`_ScoreProblem`),
shared by :class:`~.bradley_terry.BradleyTerry` and :class:`~.crowd_bt.CrowdBT`.

The objective is ``Σ_n F_n(d_n, θ) − |s|²/(2σ²) − (θ − μ)²/(2τ²)`` with ``F_n`` the weighted
Davidson log-likelihood of comparison ``n`` (:mod:`._davidson`), ``d_n`` its pair's score
difference and ``θ = log ν`` the log tie strength; minus its Hessian is the comparison graph's
weighted Laplacian plus the prior precision (and θ's row), sparse and positive definite.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ...data.comparisons import Comparisons
from ._davidson import weighted_terms

if TYPE_CHECKING:  # scipy is imported when a fit needs it (0.1 s)
    import scipy.sparse as sp

__all__ = ["NEWTON_STEPS", "NEWTON_TOL", "TIE_PRIOR_MEAN", "TIE_PRIOR_SD", "observed_weights"]

#: prior of θ = log ν (the tie strength): N(log 0.5, 2²), wide; it keeps θ finite when the data
#: have few or no ties
TIE_PRIOR_MEAN, TIE_PRIOR_SD = float(np.log(0.5)), 2.0
#: Newton steps per M-step at most, and their tolerance on the largest coordinate change
NEWTON_STEPS, NEWTON_TOL = 50, 1e-9
#: columns of the identity solved at once for the posterior variances (sparse path)
_VARIANCE_BLOCK = 512
#: relative residual of the conjugate-gradient solve of a Newton system
_CG_RTOL = 1e-11
#: the posterior variances come from a dense Cholesky factor up to this many scores (O(n³)
#: flops and n² doubles: 5,000 scores take 200 MB and about 2 s), from sparse LU solves above
_DENSE_VARIANCE_LIMIT = 5000


@dataclass
class _Design:
    """The encoded comparisons a fit works on, each oriented so that ``left < right`` (a
    swapped comparison swaps its left and right outcomes), and the distinct pairs they share:
    the likelihood depends on a comparison only through its pair's score difference and its
    outcome weights, which add up within a pair."""

    n_items: int
    left: np.ndarray  # per pair
    right: np.ndarray  # per pair
    pair: np.ndarray  # per comparison: its pair
    outcome: np.ndarray  # per comparison: 0 left, 1 right, 2 tie (in the pair's orientation)
    answer: np.ndarray  # per comparison: the same in the user's orientation (what was clicked)
    worker: np.ndarray
    n_workers: int

    @classmethod
    def of(cls, data: Comparisons) -> _Design:
        answer = np.where(data.outcome > 0, 0, np.where(data.outcome < 0, 1, 2))
        swap = data.left_codes > data.right_codes
        low = np.where(swap, data.right_codes, data.left_codes)
        high = np.where(swap, data.left_codes, data.right_codes)
        outcome = np.where(swap & (answer < 2), 1 - answer, answer)
        keys, pair = np.unique(low * data.n_items + high, return_inverse=True)
        return cls(
            data.n_items,
            keys // data.n_items,
            keys % data.n_items,
            pair.astype(np.int64),
            outcome.astype(np.int64),
            answer.astype(np.int64),
            data.worker_codes,
            data.n_workers,
        )

    @property
    def n_pairs(self) -> int:
        return len(self.left)

    def diff(self, s: np.ndarray) -> np.ndarray:
        """Score difference of every pair."""
        return s[self.left] - s[self.right]

    def pair_weights(self, weights: np.ndarray) -> np.ndarray:
        """(3, n_pairs) outcome weights summed within pairs from (3, n_comparisons) ones."""
        return np.stack([np.bincount(self.pair, w, self.n_pairs) for w in weights])


class _ScoreProblem:
    """The M-step over the scores (and θ): maximise
    ``Σ F_n(d_n, θ) − |s|²/(2σ²) − (θ − μ)²/(2τ²)`` for fixed outcome weights (given per pair,
    :meth:`_Design.pair_weights`)."""

    def __init__(self, design: _Design, prior_var: float, fit_theta: bool) -> None:
        self.design, self.prior_var, self.fit_theta = design, prior_var, fit_theta
        # The sparsity pattern of minus the Hessian, fixed: diagonal, both triangles of every
        # pair, and θ's row and column. Its CSC order is computed once.
        n = design.n_items
        items = np.arange(n)
        rows = [items, design.left, design.right]
        cols = [items, design.right, design.left]
        self.size = n
        if fit_theta:
            last = np.full(n + 1, n)
            rows += [np.arange(n + 1), last[:n]]
            cols += [last, items]
            self.size = n + 1
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        self._order = np.lexsort((rows, cols))
        self._indices = rows[self._order].astype(np.int32)
        self._indptr = np.searchsorted(cols[self._order], np.arange(self.size + 1)).astype(np.int32)

    def value(self, s: np.ndarray, theta: float, weights: np.ndarray) -> float:
        value = weighted_terms(self.design.diff(s), theta, weights)[0]
        return value + self._log_prior(s, theta)

    def _log_prior(self, s: np.ndarray, theta: float) -> float:
        value = -0.5 * float(s @ s) / self.prior_var
        if self.fit_theta:
            value -= 0.5 * ((theta - TIE_PRIOR_MEAN) / TIE_PRIOR_SD) ** 2
        return value

    def hessian(self, s: np.ndarray, theta: float, weights: np.ndarray):
        """Gradient and minus the Hessian (sparse, positive definite) at ``(s, θ)``."""
        d = self.design
        n = d.n_items
        _, g_d, c_d, g_t, c_t, cross = weighted_terms(d.diff(s), theta, weights)
        grad = np.bincount(d.left, g_d, n) - np.bincount(d.right, g_d, n) - s / self.prior_var
        diagonal = np.bincount(d.left, c_d, n) + np.bincount(d.right, c_d, n)
        values = [diagonal + 1.0 / self.prior_var, -c_d, -c_d]
        if self.fit_theta:
            grad = np.append(grad, g_t - (theta - TIE_PRIOR_MEAN) / TIE_PRIOR_SD**2)
            column = np.bincount(d.left, cross, n) - np.bincount(d.right, cross, n)
            values += [np.append(column, c_t + 1.0 / TIE_PRIOR_SD**2), column]
        import scipy.sparse as sp

        data = np.concatenate(values)[self._order]
        matrix = sp.csc_matrix((data, self._indices, self._indptr), shape=(self.size, self.size))
        return grad, matrix

    def newton_step(self, s: np.ndarray, theta: float, weights: np.ndarray):
        """One damped Newton step; returns ``(s, θ, value, largest change)``. The step is halved
        until the objective does not decrease, so the iterates are monotone."""
        before = self.value(s, theta, weights)
        grad, matrix = self.hessian(s, theta, weights)
        step = _solve_positive_definite(matrix, grad)
        scale = 1.0
        for _ in range(40):
            new_s = s + scale * step[: self.design.n_items]
            new_theta = theta + scale * step[-1] if self.fit_theta else theta
            value = self.value(new_s, new_theta, weights)
            if value >= before:
                return new_s, new_theta, value, scale * float(np.abs(step).max())
            scale *= 0.5
        return s, theta, before, 0.0

    def maximise(self, s: np.ndarray, theta: float, weights: np.ndarray):
        """Newton's method to the mode (at most :data:`NEWTON_STEPS` steps)."""
        value = self.value(s, theta, weights)
        for _ in range(NEWTON_STEPS):
            s, theta, value, change = self.newton_step(s, theta, weights)
            if change < NEWTON_TOL:
                break
        return s, theta, value

    def variances(self, s: np.ndarray, theta: float, weights: np.ndarray) -> np.ndarray:
        """Laplace posterior variance of each score: the diagonal of the inverse of minus the
        Hessian at the mode. Every entry of that inverse is non-zero on a connected comparison
        graph, so its cost is cubic in the number of items: by a dense Cholesky factor
        (LAPACK ``potrf``/``potri``) up to :data:`_DENSE_VARIANCE_LIMIT` scores, by sparse LU
        solves a block of identity columns at a time above (less memory, more time on random
        comparison graphs, whose LU factors fill in)."""
        _, matrix = self.hessian(s, theta, weights)
        n, size = self.design.n_items, self.size
        if size <= _DENSE_VARIANCE_LIMIT:
            return _inverse_diagonal(matrix.toarray())[:n]
        from scipy.sparse.linalg import splu

        lu = splu(matrix)
        out = np.empty(n)
        for start in range(0, n, _VARIANCE_BLOCK):
            stop = min(start + _VARIANCE_BLOCK, n)
            rhs = np.zeros((size, stop - start))
            rhs[np.arange(start, stop), np.arange(stop - start)] = 1.0
            out[start:stop] = lu.solve(rhs)[np.arange(start, stop), np.arange(stop - start)]
        return out


def _solve_positive_definite(matrix: sp.csc_matrix, rhs: np.ndarray) -> np.ndarray:
    """``matrix⁻¹ rhs`` for minus the Hessian (sparse, symmetric positive definite: the
    comparison graph's weighted Laplacian plus the prior precision, and θ's row) by conjugate
    gradients with a Jacobi preconditioner, O(comparisons) per iteration; a sparse LU of a
    random comparison graph fills in instead (1.5 s per factorisation for 2,000 items and
    20,000 random pairs, against milliseconds here). Falls back to LU if CG has not met its
    tolerance within ``10 n`` iterations."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import cg, splu

    preconditioner = sp.diags(1.0 / matrix.diagonal())
    step, info = cg(
        matrix, rhs, rtol=_CG_RTOL, atol=0.0, M=preconditioner, maxiter=10 * matrix.shape[0]
    )
    return step if info == 0 else splu(matrix).solve(rhs)


def _inverse_diagonal(dense: np.ndarray) -> np.ndarray:
    """Diagonal of the inverse of a symmetric positive definite matrix, from its Cholesky
    factor (``potri`` writes the inverse's lower triangle in place)."""
    from scipy.linalg import lapack

    factor, info = lapack.dpotrf(dense, lower=1, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"minus the Hessian is not positive definite (potrf {info})")
    inverse, info = lapack.dpotri(factor, lower=1, overwrite_c=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"minus the Hessian is singular (potri {info})")
    return np.diag(inverse).copy()


def observed_weights(design: _Design, faithful: np.ndarray, flip: bool) -> np.ndarray:
    """(3, n_pairs) outcome weights: ``faithful`` on each comparison's observed outcome and,
    for flips, the rest on the opposite one (a tie's opposite is a tie), summed within pairs."""
    n = len(design.outcome)
    weights = np.zeros((3, n))
    columns = np.arange(n)
    weights[design.outcome, columns] = faithful
    if flip:
        opposite = np.array([1, 0, 2])[design.outcome]
        weights[opposite, columns] += 1.0 - faithful
    return design.pair_weights(weights)
