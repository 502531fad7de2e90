r"""How few battles decide a pair of adjacent ranks: the approximate maximum influence
perturbation of Broderick, Giordano & Meager (2020), verified by refitting.

At the mode :math:`\hat z` of :math:`\Phi(z) = \sum_r n_r \ell_r(z) + \log p(z)` (``n_r`` battles
of counted row ``r``, one-battle log-likelihood :math:`\ell_r`), removing :math:`m_r \le n_r`
battles of each row moves the mode, to first order (one Newton step from :math:`\hat z`, the
gradient there becoming :math:`-\sum_r m_r u_r`, :math:`u_r = \nabla\ell_r(\hat z)`), by

.. math::
    \Delta z \approx -M^{-1} \textstyle\sum_r m_r u_r ,

``M`` minus the Hessian at the mode. The gap :math:`g = s_i - s_j > 0` of models ``i`` above
``j`` then changes by :math:`\sum_r m_r \delta_r`, :math:`\delta_r = -(e_i - e_j)^\top M^{-1}
u_r`. The fewest battles that close the gap take whole rows in order of most negative
:math:`\delta_r` until :math:`\sum m_r\delta_r \le -g` (the last row in part): a linear
knapsack solved greedily. The removal is then checked by refitting without those battles.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._battles_fit import BattleProblem, Mode, solve

__all__ = ["flip_table", "influence", "removal_to_flip"]


def influence(problem: BattleProblem, mode: Mode, i: int, j: int) -> np.ndarray:
    """:math:`\\delta_r` of every counted row: the first-order change of :math:`s_i - s_j`
    when one battle of row ``r`` is removed."""
    contrast = np.zeros(problem.size)
    contrast[i], contrast[j] = 1.0, -1.0
    v = solve(mode.matrix, contrast)  # dense or sparse (conjugate gradients)
    return -(problem.score_matrix(mode.z) @ v)


def removal_to_flip(gap: float, delta: np.ndarray, count: np.ndarray) -> np.ndarray | None:
    """Battles to remove from each row (greedy, module docstring) so that the predicted gap is
    below 0; None when removing every battle that narrows it is not enough."""
    order = np.argsort(delta, kind="stable")
    order = order[delta[order] < 0]
    change = np.cumsum(delta[order] * count[order])
    last = int(np.searchsorted(-change, gap))  # first row where the cumulative change ≤ -gap
    if last >= len(order):
        return None
    removed = np.zeros(len(count), dtype=np.int64)
    removed[order[:last]] = count[order[:last]]
    before = change[last - 1] if last else 0.0
    need = int(np.floor((gap + before) / -delta[order[last]])) + 1
    removed[order[last]] = min(need, int(count[order[last]]))
    return removed


def _swaps(problem: BattleProblem, mode: Mode, removed, i: int, j: int, tol: float) -> bool:
    weights = problem.pair_weights(problem.counts.count - removed)
    try:
        fit = problem.maximise(mode.z, weights, max_iter=200, tol=tol)
    except np.linalg.LinAlgError:  # the removal disconnected the comparison graph
        return False
    return bool(fit.z[i] < fit.z[j])


def flip_table(problem: BattleProblem, mode: Mode, pairs, *, tol: float) -> pd.DataFrame:
    """One row per ``(i, j)`` in ``pairs`` (``i`` ranked just above ``j``): ``rank`` (of
    ``i``), ``battles_to_flip`` (the influence approximation; NaN if even all the battles
    that narrow the gap would not close it to first order) and ``verified``."""
    rows = []
    for rank, (i, j) in enumerate(pairs, start=1):
        gap = float(mode.z[i] - mode.z[j])
        removed = removal_to_flip(gap, influence(problem, mode, i, j), problem.counts.count)
        if removed is None:
            rows.append((rank, np.nan, False))
            continue
        rows.append((rank, float(removed.sum()), _swaps(problem, mode, removed, i, j, tol)))
    return pd.DataFrame(rows, columns=["rank", "battles_to_flip", "verified"])
