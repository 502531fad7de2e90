"""Anderson acceleration of a fixed-point iteration ``x ← g(x)`` (Anderson, 1965; Walker & Ni,
2011, Sec. 3, the "type II" form with differences).

With the residuals ``f_j = g(x_j) - x_j`` of the last ``m + 1`` iterates, their differences
``ΔF = [f_{k-m+1} - f_{k-m}, …, f_k - f_{k-1}]`` and those of the images ``ΔG``, the next
iterate is

.. math:: x_{k+1} = g(x_k) - ΔG\\, γ, \\qquad γ = \\arg\\min_γ \\lVert f_k - ΔF\\, γ \\rVert_2,

the image of the combination of past iterates whose (linearised) residual is smallest; with
no history it is the plain step ``g(x_k)``. For a linear contraction this is GMRES on
``x - g(x) = 0`` (Walker & Ni, 2011, Sec. 4), so a slowly contracting direction — such as the
scale of an EM-like update — no longer sets the pace. The history is cleared whenever a
residual grows (a restart: far from the fixed point the linear model behind ``γ`` does not
hold), and a fixed point of ``g`` is a fixed point of the accelerated iteration.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Anderson"]


class Anderson:
    """The iterates of Anderson acceleration with memory ``depth`` (module docstring): call
    :meth:`next` with each ``x_k`` and its image ``g(x_k)``."""

    def __init__(self, depth: int = 5) -> None:
        if depth < 1:
            raise ValueError(f"Anderson: depth must be at least 1; got {depth}")
        self.depth = depth
        self._last: tuple[np.ndarray, np.ndarray] | None = None
        self._dF: list[np.ndarray] = []
        self._dG: list[np.ndarray] = []

    def next(self, x: np.ndarray, gx: np.ndarray) -> np.ndarray:
        """``x_{k+1}`` from ``x_k`` and ``g(x_k)`` (and the history)."""
        f = gx - x
        if self._last is not None:
            f_old, g_old = self._last
            if np.linalg.norm(f) > np.linalg.norm(f_old):
                self._dF, self._dG = [], []
            else:
                self._dF = [*self._dF, f - f_old][-self.depth :]
                self._dG = [*self._dG, gx - g_old][-self.depth :]
        self._last = (f, gx)
        if not self._dF:
            return gx
        gamma = np.linalg.lstsq(np.column_stack(self._dF), f, rcond=None)[0]
        return gx - np.column_stack(self._dG) @ gamma
