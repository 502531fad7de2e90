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
    function returns ``(M, B)``: every target evaluated at ``M`` points of its own in one call;
    a point's value must not depend on the other points of the call).
    For each coordinate ``d`` every row runs the univariate slice sampler of Neal (2003) with
    stepping out, the same kernel as :func:`slice_sample_coordinates` for one target:

    * level :math:`\log u_b = f_b(x_b) - E_b`, :math:`E_b \sim \mathrm{Exp}(1)`;
    * an interval :math:`[L, L + w]`, :math:`L = x_{bd} - wU`, stepped out on each side until
      its end falls below the level, at most ``max_steps`` steps a side: the left end becomes
      :math:`L - iw` for the first :math:`i \ge 0` with :math:`f(L - iw) \le \log u` (and
      likewise on the right);
    * uniform proposals from the interval, shrunk towards :math:`x_{bd}` on rejection, until one
      lies above the level.

    Both are done in batches of points, so that one density call serves every row and usually
    settles a coordinate in two calls. Stepping out evaluates positions ``0 .. batch`` on each
    side (with the current point when ``current`` is not given), then the next ``batch``
    positions on each side while needed, and keeps the first below the level (the positions
    are fixed in advance, so evaluations past it change nothing).
    Shrinkage draws ``batch`` proposals uniformly from the interval at the start of the call and
    goes through them in order (:func:`_shrink`): a proposal outside the interval shrunk so far
    is skipped, which makes each proposal used uniform on the current interval (rejection
    sampling), exactly as a sequentially drawn one; the first above the level is accepted and
    the others shrink the interval. So each row's update has the distribution of the one-target
    sampler and leaves its target invariant (Neal 2003, Ann. Statist. 31(3), §4.1 and §4.2.2);
    the targets must be independent (their joint density a product over rows).

    The bookkeeping runs row by row on Python floats: cheap for the few rows of the
    hierarchical model's α update (one per class), slower than array operations beyond some tens
    of rows. ``dims`` restricts the sweep to those coordinates (in that order). ``current`` may
    pass ``log_density(x[None])[0]`` when it is already known. Returns the new points and their
    log-densities (``x`` is not modified).
    """
    x = np.array(x, dtype=float)
    n_rows, n_dims = x.shape
    dims = range(n_dims) if dims is None else dims
    if not len(dims):
        return x, _checked(log_density(x[None])[0] if current is None else current, x, "slice")
    for position, d in enumerate(dims):
        exponential = rng.exponential(size=n_rows)
        origin = x[:, d].tolist()
        left = (x[:, d] - width * rng.random(n_rows)).tolist()
        right = [end + width for end in left]
        # the current point (unless given) and the first step-out positions: one call
        start = [origin] if position == 0 and current is None else []
        ends = _step_positions(left, right, width, 0, min(1 + batch, max_steps))
        values = _column_values(x, d, start + ends, log_density)
        if position == 0:  # every row must start where its density is positive
            current = _checked(values.pop(0) if start else current, x, "slice")
        level = (current - exponential).tolist()
        steps = _step_out(x, d, log_density, level, left, right, width, max_steps, batch, values)
        left = [end - width * step for end, step in zip(left, steps[0], strict=True)]
        right = [end + width * step for end, step in zip(right, steps[1], strict=True)]
        accepted, current = list(origin), current.tolist()
        waiting = [True] * n_rows
        while any(waiting):
            proposals = _proposals(left, right, rng.random((batch, n_rows)).tolist())
            values = _column_values(x, d, proposals, log_density)
            _shrink(proposals, values, level, origin, left, right, waiting, accepted, current)
        x[:, d] = accepted
        current = np.array(current)
    return x, current


def _proposals(lower: list[float], upper: list[float], draws: list[list[float]]):
    """Points ``lower + (upper - lower) · u`` of each row's interval for rows of uniforms."""
    return [
        [lo + (hi - lo) * u for lo, hi, u in zip(lower, upper, row, strict=True)] for row in draws
    ]


def _step_positions(left, right, width, first, count) -> list[list[float]]:
    """The ends ``left - w·i`` then ``right + w·i`` of the intervals for ``i`` in
    ``first .. first + count - 1``: the positions one step-out call evaluates."""
    steps = range(first, first + count)
    return [[end - width * i for end in left] for i in steps] + [
        [end + width * i for end in right] for i in steps
    ]


def _column_values(x: np.ndarray, d: int, columns, log_density) -> list[list[float]]:
    """The log-densities at copies of the rows ``x`` (B, D) whose coordinate ``d`` takes, in
    turn, each row of values of ``columns`` (M lists of B): (M, B) as lists."""
    if not columns:
        return []
    points = np.empty((len(columns), *x.shape))
    points[...] = x
    points[:, :, d] = columns
    return log_density(points).tolist()


def _checked(current, x: np.ndarray, name: str) -> np.ndarray:
    """The rows' log-densities as an array; every row must start where its density is
    positive."""
    current = np.array(current, dtype=float)
    if not np.isfinite(current).all():
        raise ValueError(f"{name} sampler started at a point of zero density: {x}")
    return current


def _step_out(x, d, log_density, level, left, right, width, max_steps, batch, first_values):
    """How many steps of ``width`` each row's interval ``[left, right]`` steps out on each side
    (``[left steps, right steps]``) for coordinate ``d`` in :func:`slice_sample_rows`: the first
    ``i >= 0`` whose end lies at or below the row's level, at most ``max_steps``. Positions
    ``0 .. batch`` a side first, whose values ``first_values`` (:func:`_step_positions`) the
    caller has evaluated, then ``batch`` more a side while any row needs them (which positions
    are evaluated together does not change the answer)."""
    n_rows = x.shape[0]
    steps = [[max_steps] * n_rows, [max_steps] * n_rows]
    waiting = [list(range(n_rows)), list(range(n_rows))]
    values = first_values
    first, count = 0, 1 + batch
    while first < max_steps:
        count = min(count, max_steps - first)
        if first:
            positions = _step_positions(left, right, width, first, count)
            values = _column_values(x, d, positions, log_density)
        for side in (0, 1):
            rows = values[side * count : (side + 1) * count]
            still = []
            for b in waiting[side]:
                i = next((i for i in range(count) if rows[i][b] <= level[b]), None)
                if i is None:
                    still.append(b)
                else:
                    steps[side][b] = first + i
            waiting[side] = still
        if not (waiting[0] or waiting[1]):
            break
        first, count = first + count, batch
    return steps


def _shrink(proposals, values, level, origin, lower, upper, waiting, accepted, current) -> None:
    """Shrinkage of a batch of slice proposals, row by row and in order (in place): a row still
    ``waiting`` uses a proposal inside its interval ``(lower, upper)``, accepts it (into
    ``accepted`` and ``current``) when its value lies above the level and otherwise moves the
    end on the proposal's side of ``origin`` onto it; it stops waiting once it accepts or its
    interval collapses below 1e-12 (keeping the current point)."""
    for proposal_row, value_row in zip(proposals, values, strict=True):
        for b, (proposal, value) in enumerate(zip(proposal_row, value_row, strict=True)):
            if not waiting[b]:
                continue
            if lower[b] < proposal < upper[b]:
                if value > level[b]:
                    accepted[b], current[b], waiting[b] = proposal, value, False
                    continue
                if proposal < origin[b]:
                    lower[b] = proposal
                else:
                    upper[b] = proposal
            # numerically collapsed onto the current point: keep it
            if not upper[b] - lower[b] >= 1e-12:
                waiting[b] = False


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
    bolder — so :math:`\mu, \Sigma` may be, e.g., moments of warm-up draws. When ``current``
    is not given, :math:`\log L_b(x)` is evaluated in the call of the first angles (which do
    not depend on it); as in :func:`slice_sample_rows`, a point's value must not depend on the
    other points of the call.

    Returns the new points and their log-likelihoods.
    """
    x = np.array(x, dtype=float)
    n_rows, n_dims = x.shape
    nu = np.einsum("bde,be->bd", chol, rng.standard_normal((n_rows, n_dims)))
    offset = x - mean
    exponential = rng.exponential(size=n_rows)
    upper = 2 * np.pi * rng.random(n_rows)
    lower, upper = (upper - 2 * np.pi).tolist(), upper.tolist()
    angles = _proposals(lower, upper, rng.random((batch, n_rows)).tolist())
    points = _on_ellipse(mean, offset, nu, angles)
    if current is None:  # with the first angles' points: one call
        values = log_likelihood(np.concatenate([x[None], points])).tolist()
        current = values.pop(0)
    else:
        values = log_likelihood(points).tolist()
    current = _checked(current, x, "elliptical slice")
    level = (current - exponential).tolist()
    origin, angle, current = [0.0] * n_rows, [0.0] * n_rows, current.tolist()
    waiting = [True] * n_rows
    while True:
        _shrink(angles, values, level, origin, lower, upper, waiting, angle, current)
        if not any(waiting):
            break
        angles = _proposals(lower, upper, rng.random((batch, n_rows)).tolist())
        values = log_likelihood(_on_ellipse(mean, offset, nu, angles)).tolist()
    angle = np.array(angle)
    x = mean + offset * np.cos(angle)[:, None] + nu * np.sin(angle)[:, None]
    return x, np.array(current)


def _on_ellipse(mean, offset, nu, angles) -> np.ndarray:
    r"""The points :math:`\mu + (x - \mu)\cos\theta + \nu\sin\theta` (M, B, D) of the rows'
    ellipses at angles (M lists of B)."""
    angles = np.array(angles)
    return mean + offset * np.cos(angles)[:, :, None] + nu * np.sin(angles)[:, :, None]


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
