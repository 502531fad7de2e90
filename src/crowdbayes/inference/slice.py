"""Univariate slice sampling with stepping out (Neal 2003), applied one coordinate at a time,
to one target or to many independent targets at once."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "slice_sample_coordinates",
    "slice_sample_rows",
    "elliptical_slice_rows",
    "gaussian_reference",
]


def slice_sample_coordinates(
    x: np.ndarray,
    log_density: Callable[[np.ndarray], float],
    rng: np.random.Generator,
    *,
    width: float = 1.0,
    max_steps: int = 32,
) -> np.ndarray:
    """One sweep of coordinate-wise slice sampling; returns a new point (``x`` is not modified).

    For each coordinate: draw the slice level ``log u = f(x) − Exp(1)``, step out an interval of
    ``width`` until both ends fall below the level (at most ``max_steps`` steps each side), then
    sample uniformly from it, shrinking towards the current point on rejection. Leaves the
    distribution with log-density ``log_density`` invariant (Neal 2003, Ann. Statist. 31(3)).
    """
    x = np.array(x, dtype=float)
    current = log_density(x)
    if not np.isfinite(current):
        raise ValueError(f"slice sampler started at a point of zero density: {x}")
    for d in range(x.size):
        level = current - rng.exponential()
        origin = x.flat[d]
        left = origin - width * rng.random()
        right = left + width

        def at(value: float, d: int = d) -> float:
            trial = x.copy()
            trial.flat[d] = value
            return log_density(trial)

        for _ in range(max_steps):
            if at(left) <= level:
                break
            left -= width
        for _ in range(max_steps):
            if at(right) <= level:
                break
            right += width
        while True:
            proposal = left + (right - left) * rng.random()
            value = at(proposal)
            if value > level:
                x.flat[d] = proposal
                current = value
                break
            if proposal < origin:
                left = proposal
            else:
                right = proposal
            if right - left < 1e-12:  # numerically collapsed onto the current point
                break
    return x


def slice_sample_rows(
    x: np.ndarray,
    log_density: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
    *,
    current: np.ndarray | None = None,
    width: float = 1.0,
    max_steps: int = 32,
    batch: int = 4,
    dims: Sequence[int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""One sweep of coordinate-wise slice sampling of ``B`` independent targets at once.

    ``x`` has shape ``(B, D)``: row ``b`` is a point of the ``b``-th target, whose log-density
    is column ``b`` of ``log_density(points)`` for ``points`` of shape ``(M, B, D)`` (the
    function returns ``(M, B)``: every target evaluated at ``M`` points of its own in one call).
    For each coordinate ``d`` every row runs the univariate slice sampler of Neal (2003) with
    stepping out, the same kernel as :func:`slice_sample_coordinates` for one target:

    * level :math:`\log u_b = f_b(x_b) - E_b`, :math:`E_b \sim \mathrm{Exp}(1)`;
    * an interval :math:`[L, L + w]`, :math:`L = x_{bd} - wU`, stepped out on each side until
      its end falls below the level, at most ``max_steps`` steps a side: the left end becomes
      :math:`L - iw` for the first :math:`i \ge 0` with :math:`f(L - iw) \le \log u` (and
      likewise on the right);
    * uniform proposals from the interval, shrunk towards :math:`x_{bd}` on rejection, until one
      lies above the level.

    Both are done ``batch`` points at a time, so that one density call serves every row and
    usually settles a coordinate in two calls. Stepping out evaluates one position on each side,
    then the next ``batch`` positions on each side while needed, and keeps the first below the
    level (the positions are fixed in advance, so evaluations past it change nothing).
    Shrinkage draws ``batch`` proposals uniformly from the interval at the start of the call and
    goes through them in order: a proposal outside the interval shrunk so far is skipped, which
    makes each proposal used uniform on the current interval (rejection sampling), exactly as a
    sequentially drawn one; the first above the level is accepted and the others shrink the
    interval. So each row's update has the distribution of the one-target sampler and leaves its
    target invariant (Neal 2003, Ann. Statist. 31(3), §4.1 and §4.2.2); the targets must be
    independent (their joint density a product over rows).

    ``dims`` restricts the sweep to those coordinates (in that order). ``current`` may pass
    ``log_density(x[None])[0]`` when it is already known. Returns the new points and their
    log-densities (``x`` is not modified).
    """
    x, current = _start(x, log_density, current, "slice")
    n_rows, n_dims = x.shape
    offsets = np.arange(batch)[:, None]
    for d in range(n_dims) if dims is None else dims:
        level = current - rng.exponential(size=n_rows)
        origin = x[:, d].copy()
        left = origin - width * rng.random(n_rows)
        right = left + width
        # steps[side, b]: how far that side has stepped out; done[side, b]: settled
        steps = np.zeros((2, n_rows), dtype=np.int64)
        done = np.zeros((2, n_rows), dtype=bool)
        first, count = 0, 1  # one position a side first: it usually settles both
        while first < max_steps:
            count = min(count, max_steps - first)
            step = first + offsets[:count]
            trial = np.broadcast_to(x, (2 * count, n_rows, n_dims)).copy()
            trial[:count, :, d] = left - width * step
            trial[count:, :, d] = right + width * step
            below = log_density(trial).reshape(2, count, n_rows) <= level
            hit = below.any(axis=1)  # (2, rows)
            steps = np.where(
                done, steps, np.where(hit, first + below.argmax(axis=1), first + count)
            )
            done |= hit
            if done.all():
                break
            first, count = first + count, batch
        left = left - width * steps[0]
        right = right + width * steps[1]
        waiting = np.ones(n_rows, dtype=bool)
        trial = np.broadcast_to(x, (batch, n_rows, n_dims)).copy()
        while waiting.any():
            proposals = left + (right - left) * rng.random((batch, n_rows))
            trial[:, :, d] = proposals
            values = log_density(trial)
            for proposal, value in zip(proposals, values, strict=True):
                used = waiting & (proposal > left) & (proposal < right)
                accept = used & (value > level)
                x[accept, d] = proposal[accept]
                current[accept] = value[accept]
                reject = used & ~accept
                below = reject & (proposal < origin)
                left = np.where(below, proposal, left)
                right = np.where(reject & ~below, proposal, right)
                # numerically collapsed onto the current point: keep it
                waiting &= ~accept & (right - left >= 1e-12)
    return x, current


def _start(x, log_density, current, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Copies of the rows' points and their log-densities (computed unless given); every row
    must start where its density is positive."""
    x = np.array(x, dtype=float)
    if current is None:
        current = log_density(x[None])[0]
    current = np.array(current, dtype=float)
    if not np.isfinite(current).all():
        raise ValueError(f"{name} sampler started at a point of zero density: {x}")
    return x, current


def elliptical_slice_rows(
    x: np.ndarray,
    log_likelihood: Callable[[np.ndarray], np.ndarray],
    mean: np.ndarray,
    chol: np.ndarray,
    rng: np.random.Generator,
    *,
    current: np.ndarray | None = None,
    batch: int = 4,
) -> tuple[np.ndarray, np.ndarray]:
    r"""One elliptical slice sampling step (Murray, Adams & MacKay 2010) for ``B`` independent
    targets at once.

    Target ``b`` has density :math:`\mathcal N(x; \mu_b, \Sigma_b)\,L_b(x)` on
    :math:`\mathbb R^D`, with ``mean`` :math:`\mu` (B, D), ``chol`` the Cholesky factors of
    :math:`\Sigma` (B, D, D) and ``log_likelihood(points)`` returning :math:`\log L_b` (M, B) for
    ``points`` (M, B, D), as in :func:`slice_sample_rows`. For every row: draw
    :math:`\nu \sim \mathcal N(0, \Sigma_b)`, the level :math:`\log u = \log L_b(x) - E`,
    :math:`E \sim \mathrm{Exp}(1)`, an angle bracket :math:`[\phi - 2\pi, \phi]` with
    :math:`\phi \sim U(0, 2\pi)`, and take the first angle :math:`\theta` (drawn uniformly in the
    bracket, which shrinks towards 0 on each rejection) with
    :math:`\log L_b(\mu + (x-\mu)\cos\theta + \nu\sin\theta) > \log u`.

    ``batch`` angles are drawn from the bracket at the start of a call and evaluated together;
    they are then taken in order, skipping those outside the bracket shrunk so far (rejection
    sampling from the current bracket, so each used angle is uniform on it as in the sequential
    algorithm). Any Gaussian leaves the target invariant — a good fit only makes the moves
    bolder — so :math:`\mu, \Sigma` may be, e.g., moments of warm-up draws.

    Returns the new points and their log-likelihoods.
    """
    x, current = _start(x, log_likelihood, current, "elliptical slice")
    n_rows, n_dims = x.shape
    nu = np.einsum("bde,be->bd", chol, rng.standard_normal((n_rows, n_dims)))
    offset = x - mean
    level = current - rng.exponential(size=n_rows)
    upper = 2 * np.pi * rng.random(n_rows)
    lower = upper - 2 * np.pi
    waiting = np.ones(n_rows, dtype=bool)
    angle = np.zeros(n_rows)
    while waiting.any():
        angles = lower + (upper - lower) * rng.random((batch, n_rows))
        points = mean + offset * np.cos(angles)[:, :, None] + nu * np.sin(angles)[:, :, None]
        values = log_likelihood(points)
        for trial, value in zip(angles, values, strict=True):
            used = waiting & (trial > lower) & (trial < upper)
            accept = used & (value > level)
            angle[accept] = trial[accept]
            current[accept] = value[accept]
            reject = used & ~accept
            negative = reject & (trial < 0)
            lower = np.where(negative, trial, lower)
            upper = np.where(reject & ~negative, trial, upper)
            # numerically collapsed onto the current point: keep it
            waiting &= ~accept & (upper - lower >= 1e-12)
    x = mean + offset * np.cos(angle)[:, None] + nu * np.sin(angle)[:, None]
    return x, current


def gaussian_reference(
    x: np.ndarray,
    log_density: Callable[[np.ndarray], np.ndarray],
    *,
    step: float = 1e-2,
    inflate: float = 1.5,
) -> tuple[np.ndarray, np.ndarray]:
    r"""A Gaussian approximation to each of ``B`` independent targets near ``x`` (B, D), for
    :func:`elliptical_slice_rows`: one Newton step and the Laplace covariance.

    Gradient :math:`g` and Hessian :math:`H` by central differences of step ``step`` (one call
    of ``log_density`` at :math:`2D^2 + 1` points per row); then
    :math:`\mu = x - H^{-1}g` and :math:`\Sigma = -\text{inflate}\cdot H^{-1}` (Laplace's method
    at the mode, which :math:`\mu` approximates for a near-Gaussian target). A row whose
    :math:`-H` is not positive definite, or whose differences are not finite (e.g. at the edge
    of the support), gets :math:`\mu = x`, :math:`\Sigma = I`. Returns ``(mean, chol)``.
    """
    x = np.asarray(x, dtype=float)
    n_rows, n_dims = x.shape
    eye = np.eye(n_dims) * step
    i, j = np.triu_indices(n_dims, 1)
    shifts = np.concatenate(
        [
            np.zeros((1, n_dims)),
            eye,
            -eye,
            eye[i] + eye[j],
            eye[i] - eye[j],
            -eye[i] + eye[j],
            -eye[i] - eye[j],
        ]
    )
    values = log_density(x[None] + shifts[:, None, :])  # (points, rows)
    centre, plus, minus = values[0], values[1 : 1 + n_dims], values[1 + n_dims : 1 + 2 * n_dims]
    pp, pm, mp, mm = np.split(values[1 + 2 * n_dims :], 4)
    with np.errstate(invalid="ignore"):  # -inf - -inf outside the support: caught below
        gradient = (plus - minus).T / (2 * step)
        hessian = np.empty((n_rows, n_dims, n_dims))
        diagonal = np.arange(n_dims)
        hessian[:, diagonal, diagonal] = ((plus - 2 * centre + minus) / step**2).T
        hessian[:, i, j] = ((pp - pm - mp + mm) / (4 * step**2)).T
        hessian[:, j, i] = hessian[:, i, j]
    mean = x.copy()
    chol = np.broadcast_to(np.eye(n_dims), (n_rows, n_dims, n_dims)).copy()
    for b in range(n_rows):
        if not (np.isfinite(hessian[b]).all() and np.isfinite(gradient[b]).all()):
            continue
        try:
            np.linalg.cholesky(-hessian[b])  # is -H positive definite?
        except np.linalg.LinAlgError:
            continue
        covariance = np.linalg.inv(-hessian[b])
        mean[b] = x[b] + covariance @ gradient[b]
        chol[b] = np.sqrt(inflate) * np.linalg.cholesky((covariance + covariance.T) / 2)
    return mean, chol
