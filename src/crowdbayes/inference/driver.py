"""One iteration driver for every EM / VB / Gibbs / SVI loop in crowdbayes.

The algorithm supplies a ``step`` that performs one iteration and returns the value of the
objective it monitors (log-likelihood, log-posterior, ELBO) or ``None``; the driver handles the
iteration budget, the tolerance, callbacks, the progress bar, the history and the
:class:`~crowdbayes.exceptions.ConvergenceWarning`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from ..exceptions import ConvergenceWarning

__all__ = ["IterationResult", "run_iterations"]


@dataclass
class IterationResult:
    """What a loop did: objective history, iterations run, whether the tolerance was met."""

    history: list[float] = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False


def run_iterations(
    step: Callable[[int], float | None],
    *,
    max_iter: int,
    tol: float | None = None,
    monitor: str = "objective",
    min_iter: int = 1,
    progress: bool = False,
    desc: str = "iterations",
    callback: Callable[[int, float | None], bool | None] | None = None,
    warn_name: str | None = None,
) -> IterationResult:
    """Run ``step(iteration)`` up to ``max_iter`` times.

    With ``monitor="objective"`` the step returns the objective and converged means it changed by
    less than ``tol * max(1, |objective|)`` between two iterations; with ``monitor="change"``
    the step returns the size of its own update (e.g. the largest change of a probability) and
    converged means that is below ``tol``. Only checked when ``tol`` is not None and after
    ``min_iter`` iterations. ``callback(iteration, objective)`` may return True to stop
    early. Emits a :class:`ConvergenceWarning` naming ``warn_name`` if a tolerance was given and
    never met.
    """
    if max_iter < 1:
        raise ValueError(f"max_iter must be at least 1; got {max_iter}")
    if monitor not in ("objective", "change"):
        raise ValueError(f"monitor must be 'objective' or 'change'; got {monitor!r}")
    result = IterationResult()
    bar = tqdm(total=max_iter, desc=desc, disable=not progress, leave=False)
    try:
        previous = None
        for iteration in range(max_iter):
            value = step(iteration)
            result.n_iter = iteration + 1
            bar.update(1)
            if value is not None:
                value = float(value)
                result.history.append(value)
                bar.set_postfix(objective=f"{value:.6g}", refresh=False)
                if (
                    tol is not None
                    and result.n_iter >= min_iter
                    and math.isfinite(value)
                    and _has_converged(monitor, value, previous, tol)
                ):
                    result.converged = True
                    break
                previous = value
            if callback is not None and callback(iteration, value):
                break
    finally:
        bar.close()
    if tol is not None and not result.converged and warn_name is not None:
        warnings.warn(
            f"{warn_name} did not converge in {max_iter} iterations (tol={tol}); "
            "increase max_iter or tol",
            ConvergenceWarning,
            stacklevel=3,
        )
    return result


def _has_converged(monitor: str, value: float, previous: float | None, tol: float) -> bool:
    if monitor == "change":
        return value < tol
    return previous is not None and abs(value - previous) < tol * max(1.0, abs(value))
