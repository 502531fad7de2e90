"""One iteration driver for every EM / VB / Gibbs / SVI loop in crowdbayes.

The algorithm supplies a ``step`` that performs one iteration and returns the value of the
objective it monitors (log-likelihood, log-posterior, ELBO) or ``None``; the driver handles the
iteration budget, the tolerance, callbacks, progress, the history and the
:class:`~crowdbayes.exceptions.ConvergenceWarning`.

Progress (``progress=True``) takes one of two forms, chosen when a loop starts:

- a tqdm bar when stderr is a terminal (or in a Jupyter kernel, where tqdm draws a widget);
- otherwise (CI logs, pipes, files) plain lines on stderr: one every
  :data:`PROGRESS_INTERVAL` seconds with the iteration, the objective and the time elapsed, and
  one when the loop ends. The clock is shared by consecutive loops (η grids, restarts, chains),
  so a long fit made of many short loops still reports every few seconds.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from ..exceptions import ConvergenceWarning

__all__ = ["IterationResult", "PROGRESS_INTERVAL", "run_iterations"]

#: seconds between two progress lines when stderr is not a terminal
PROGRESS_INTERVAL = 3.0
#: when the last progress line was written (``time.monotonic``), shared by every loop
_last_line: list[float | None] = [None]


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
    never met. ``progress`` shows a bar on a terminal and progress lines elsewhere (module
    docstring); ``desc`` names the loop in both.
    """
    if max_iter < 1:
        raise ValueError(f"max_iter must be at least 1; got {max_iter}")
    if monitor not in ("objective", "change"):
        raise ValueError(f"monitor must be 'objective' or 'change'; got {monitor!r}")
    result = IterationResult()
    bar = _progress(progress, max_iter, desc, monitor)
    try:
        previous = None
        for iteration in range(max_iter):
            value = step(iteration)
            result.n_iter = iteration + 1
            if value is not None:
                value = float(value)
                result.history.append(value)
            bar.update(value)
            if value is not None:
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
    except BaseException:
        bar.close(None)
        raise
    bar.close(result)
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


# ------------------------------------------------------------------------------ progress
def _on_terminal() -> bool:
    """Whether a bar can be drawn: stderr is a terminal, or a Jupyter kernel shows widgets."""
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty()) or "ipykernel" in sys.modules


class _Silent:
    def update(self, value: float | None) -> None:
        pass

    def close(self, result: IterationResult | None) -> None:
        pass


class _Bar:
    """A tqdm bar with the objective after it."""

    def __init__(self, total: int, desc: str) -> None:
        from tqdm.auto import tqdm

        self._bar = tqdm(total=total, desc=desc, leave=False)

    def update(self, value: float | None) -> None:
        self._bar.update(1)
        if value is not None:
            self._bar.set_postfix(objective=f"{value:.6g}", refresh=False)

    def close(self, result: IterationResult | None) -> None:
        self._bar.close()


class _Lines:
    """Progress lines on stderr: every :data:`PROGRESS_INTERVAL` seconds and at the end."""

    def __init__(self, total: int, desc: str, monitor: str) -> None:
        self.total, self.desc, self.monitor = total, desc, monitor
        self.start = time.monotonic()
        self.iteration, self.value = 0, None
        if _last_line[0] is None or self.start - _last_line[0] > PROGRESS_INTERVAL:
            _last_line[0] = self.start  # a new fit: its first line comes after one interval

    def _write(self, text: str) -> None:
        value = "" if self.value is None else f", {self.monitor} {self.value:.8g}"
        elapsed = time.monotonic() - self.start
        print(f"{self.desc}: {text}{value}, {elapsed:.1f} s", file=sys.stderr, flush=True)
        _last_line[0] = time.monotonic()

    def update(self, value: float | None) -> None:
        self.iteration += 1
        if value is not None:
            self.value = value
        if time.monotonic() - _last_line[0] >= PROGRESS_INTERVAL:
            self._write(f"iteration {self.iteration}/{self.total}")

    def close(self, result: IterationResult | None) -> None:
        if result is None:  # the loop raised: its error says the rest
            return
        status = " (converged)" if result.converged else ""
        self._write(f"done, {result.n_iter} iteration{'s' if result.n_iter != 1 else ''}{status}")


def _progress(progress: bool, total: int, desc: str, monitor: str) -> _Silent | _Bar | _Lines:
    if not progress:
        return _Silent()
    return _Bar(total, desc) if _on_terminal() else _Lines(total, desc, monitor)
