"""Stochastic variational inference for GP preference learning with inducing points (Simpson &
Gurevych, 2018; 2020, Sec. 4.2, Algorithm 1).

Inducing points ``Z`` carry ``q(u) = N(m, S)`` (:mod:`.inducing`); the likelihood is the
linearised probit of :mod:`.linearised`. One SVI iteration (2020, Eqs. 17–18; draft Eqs. 4–5)
draws a mini-batch of ``P_n`` of the ``P`` comparisons without replacement, weights it by
``π = P / P_n`` and moves the natural parameters a step ``ρ_n = (n + delay)^{-r}`` along the
natural gradient (:func:`~.factors.natural_gradient_step`):

.. math::
    S_n^{-1} &= (1 - ρ_n) S_{n-1}^{-1} + ρ_n (ŝ K_{mm}^{-1} + π J^T Q^{-1} J), \\\\
    S_n^{-1} m_n &= (1 - ρ_n) S_{n-1}^{-1} m_{n-1}
        + ρ_n π J^T Q^{-1} (y - Φ(\\hat z) + J m),

``J = diag(g) (A_a - A_b)``, relinearised ``n_inner`` times per mini-batch (the products with
the rows of a proper mini-batch in single precision, :data:`BATCH_DTYPE`). Then ``q(s)`` is
updated (2020, Eq. 15; draft Eqs. 6–7): ``a = a₀ + M/2``,
``b = b₀ + ½ tr(K_mm⁻¹ (S + m mᵀ))``, ``ŝ = a/b``, ``E[ln s] = ψ(a) - ln b``.

A step over every comparison (``batch_size`` None, or ``"auto"`` where that pays:
:func:`resolve_batch_size`) takes the same step sizes, with its products computed through the
compared items where that is cheaper (:class:`~.item_gram.ItemGram`: ``O(N M² + P M)`` in
place of ``O(P M²)``, the same numbers up to rounding).

:func:`run_svi` is the mini-batch driver any model with natural-gradient updates can use
(crowdGPPL runs its block updates through it); :func:`stochastic_variational_inference` is
the update of a single GP utility.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..inference.driver import IterationResult, run_iterations
from .factors import (
    GammaFactor,
    GaussianFactor,
    learning_rate,
    natural_gradient_step,
    natural_step,
)
from .inducing import InducingProjection
from .item_gram import ItemGram
from .linearised import probit_linearisation, relative_change
from .problem import PreferenceProblem

__all__ = [
    "AUTO_BATCH",
    "BATCH_DTYPE",
    "resolve_batch_size",
    "run_svi",
    "stochastic_variational_inference",
]

#: precision of the products with the ``(B, M)`` rows ``A_a - A_b`` of a mini-batch smaller
#: than the data (``Rᵀ R`` by BLAS syrk, ``rows @ m``), as in crowdGPPL: their rounding
#: (about 1e-7 relative) is far below the sampling noise of a mini-batch. The factors, their
#: Cholesky factors and inverses stay in double precision, and so does a full batch (no
#: sampling noise: its fixed point is found to any tolerance).
BATCH_DTYPE = np.float32

#: the mini-batch of ``batch_size="auto"`` where full batches do not pay
#: (:func:`resolve_batch_size`)
AUTO_BATCH = 1000


def resolve_batch_size(
    batch_size: int | str | None, n_items: int, n_pairs: int, n_inducing: int
) -> int | None:
    """``batch_size`` as :func:`run_svi` takes it, for ``n_pairs`` comparisons of ``n_items``
    items and ``n_inducing`` inducing points.

    ``"auto"`` means every comparison in every step (None) where such a step, computed through
    the items (:class:`~.item_gram.ItemGram`, ``O(N M² + P M)``), costs fewer operations than
    one pass through the comparisons row by row (``O(P M²)``, what a pass of mini-batches
    costs), and mini-batches of :data:`AUTO_BATCH` otherwise. A full-batch step has no
    sampling noise, so it meets the tolerance in a handful of steps where mini-batches need
    tens of passes (4 steps against 20 passes of 10 mini-batches on 10,000 comparisons of
    1,000 items, ``benchmarks/prefs/results/prefs_speed.md``): a step that costs less than a
    pass finishes sooner.
    """
    if batch_size != "auto":
        return batch_size
    return None if ItemGram.cheaper(n_items, n_pairs, n_inducing) else AUTO_BATCH


def run_svi(
    update: Callable[[float, np.ndarray | slice, float], None],
    monitored: Callable[[], object],
    n_obs: int,
    rng: np.random.Generator,
    *,
    batch_size: int | None,
    delay: float,
    forgetting_rate: float,
    max_iter: int,
    tol: float | None,
    progress: bool = False,
    desc: str = "SVI",
    warn_name: str | None = None,
    change: Callable[[object, object], float] | None = None,
) -> IterationResult:
    """Drive SVI: ``update(ρ_n, batch_index, P/P_n)`` takes one natural-gradient step on a
    mini-batch of the ``n_obs`` observations drawn without replacement (all of them, as a
    ``slice``, when ``batch_size`` is None or not smaller).

    Convergence is judged once per pass over the data (``⌈P / P_n⌉`` iterations) on
    ``change(monitored(), previous)`` between this pass and the previous one (default: the
    change of a mean vector relative to its size, :func:`~.linearised.relative_change`):
    single mini-batch steps keep moving by the sampling noise.
    """
    change = relative_change if change is None else change
    batch = n_obs if batch_size is None else min(batch_size, n_obs)
    epoch = math.ceil(n_obs / batch)
    snapshot = [monitored()]

    def step(iteration: int) -> float | None:
        rho = learning_rate(iteration + 1, delay, forgetting_rate)
        rows = slice(None) if batch == n_obs else rng.choice(n_obs, batch, replace=False)
        update(rho, rows, n_obs / batch)
        if (iteration + 1) % epoch:
            return None
        current = monitored()
        value = change(current, snapshot[0])
        snapshot[0] = current
        return value

    return run_iterations(
        step,
        max_iter=max_iter,
        tol=tol,
        monitor="change",
        progress=progress,
        desc=desc,
        warn_name=warn_name,
    )


def stochastic_variational_inference(
    problem: PreferenceProblem,
    projection: InducingProjection,
    rng: np.random.Generator,
    *,
    n_inner: int,
    start: tuple[GaussianFactor, GammaFactor] | None = None,
    **schedule,
) -> tuple[GaussianFactor, GammaFactor, IterationResult]:
    """SVI over ``q(u)`` at ``projection.Z`` and ``q(s)`` (module docstring).

    ``start = (factor, scale)`` warm-starts it (else ``q(s)`` is the prior and ``q(u)`` its
    prior ``N(0, K_mm/E[s])``); ``schedule`` holds :func:`run_svi`'s keyword arguments
    (``batch_size``, which may also be ``"auto"``: :func:`resolve_batch_size`; ``delay``,
    ``forgetting_rate``, ``max_iter``, ``tol``, ``progress``, ``desc``, ``warn_name``).
    Returns ``(q(u), q(s), iterations)``.
    """
    pairs = problem.pairs
    alpha = problem.alpha
    prior_scale = problem.prior
    scale = prior_scale if start is None else start[1]
    if start is None:
        factor = GaussianFactor(scale.mean * projection.K_inv, np.zeros(projection.n_inducing))
    else:
        factor = GaussianFactor.from_moments(start[0].mean, start[0].cov)
    noise_var = problem.noise_var
    # A for every compared item: memory O(N M), independent of the number of comparisons
    A = projection.weights(problem.X_items)
    state = {"factor": factor, "scale": scale}
    size = resolve_batch_size(
        schedule.pop("batch_size", None), len(A), len(pairs.y), projection.n_inducing
    )
    full = size is None or size >= len(pairs.y)
    products = _pair_products(A, problem.left, problem.right, full)

    def update(rho: float, rows_idx, weight: float) -> None:
        old, scale = state["factor"], state["scale"]
        products.select(rows_idx)
        y, q = pairs.y[rows_idx], noise_var[rows_idx]
        prior_precision = scale.mean * projection.K_inv
        current = old
        for _ in range(n_inner):
            d_hat = products.differences(current.mean)
            p, g = probit_linearisation(d_hat, alpha)
            current = products.step(
                old,
                prior_precision,
                weight * g * g / q,
                weight * g / q,
                y - p + g * d_hat,
                rho,
            )
        state["scale"] = prior_scale.update(projection.K_inv, current)
        state["factor"] = current

    result = run_svi(
        update, lambda: state["factor"].mean, len(pairs.y), rng, batch_size=size, **schedule
    )
    return state["factor"], state["scale"], result


def _pair_products(A: np.ndarray, left: np.ndarray, right: np.ndarray, full: bool):
    """The products of the SVI steps: through the items (:class:`~.item_gram.ItemGram`) for a
    ``full`` batch where that is cheaper, else row by row (:class:`_BatchRows`; single
    precision for a mini-batch smaller than the data)."""
    if full and ItemGram.cheaper(len(A), len(left), A.shape[1]):
        return _ItemProducts(ItemGram(A, left, right))
    return _BatchRows(A, left, right, np.float64 if full else BATCH_DTYPE)


class _ItemProducts:
    """A full-batch step through the items (:class:`~.item_gram.ItemGram`)."""

    def __init__(self, gram: ItemGram) -> None:
        self.gram = gram

    def select(self, rows_idx) -> None:
        """Every step takes all comparisons (``rows_idx`` is ``slice(None)``)."""

    def differences(self, mean: np.ndarray) -> np.ndarray:
        return self.gram.differences(mean)

    def step(self, old, prior_precision, precision_weights, linear_weights, targets, rho):
        return natural_step(
            old,
            prior_precision,
            self.gram.gram(np.maximum(precision_weights, 0.0)),
            self.gram.project(linear_weights * targets),
            rho,
        )


class _BatchRows:
    """The rows ``A_a - A_b`` of a mini-batch (in the dtype given), in buffers allocated once
    per fit, with a scratch buffer of their shape for :func:`natural_gradient_step` (with
    fresh arrays of the mini-batch's size every iteration, the allocator hands the memory back
    to the system and takes it again, a page fault per 4 KiB: more time than the arithmetic)."""

    def __init__(self, A: np.ndarray, left: np.ndarray, right: np.ndarray, dtype) -> None:
        self.A = A.astype(dtype, copy=False)
        self.left, self.right = left, right
        self._rows = self._other = self.scratch = None

    def select(self, rows_idx) -> None:
        """Gather the rows of the comparisons ``rows_idx`` (a slice or positions)."""
        left, right = self.left[rows_idx], self.right[rows_idx]
        n = len(left)
        if self._rows is None or len(self._rows) != n:
            shape = (n, self.A.shape[1])
            self._rows, self._other, self.scratch = (np.empty(shape, self.A.dtype) for _ in "abc")
        np.take(self.A, left, axis=0, out=self._rows)
        np.take(self.A, right, axis=0, out=self._other)
        np.subtract(self._rows, self._other, out=self._rows)

    def differences(self, mean: np.ndarray) -> np.ndarray:
        return (self._rows @ mean.astype(self._rows.dtype)).astype(np.float64)

    def step(self, old, prior_precision, precision_weights, linear_weights, targets, rho):
        return natural_gradient_step(
            old,
            prior_precision,
            self._rows,
            precision_weights,
            linear_weights,
            targets,
            rho,
            scratch=self.scratch,
        )
