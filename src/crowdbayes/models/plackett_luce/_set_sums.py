"""The sums over top-queries that the feature-less Plackett–Luce algorithms need.

For scores ``s`` and top-queries ``l`` with choice sets ``A_l``:

- the set totals ``T_l = Σ_{t∈A_l} s_t``;
- per item, a per-set value summed over the sets that contain the item,
  ``Σ_l δ_li v_l`` (Hunter 2004, Eq. 3.5 uses ``v_l = 1/T_l``; Caron & Doucet 2012 the
  arrival times ``z_l``);
- the log-normaliser of the likelihood, ``Σ_l log T_l``.

For pairs (Bradley–Terry data) these are two gathers and two ``bincount``\\ s in numpy, or one
pass of the compiled kernel ``_pair_kernel.c`` that reads each comparison once (two 32-bit
codes) and keeps no temporary array of the comparisons' length; without the kernel (no C
compiler at install time) the numpy code gives the same sums (to rounding). Other sets use
segment reductions by ``bincount`` over the stage of every member.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ...data.rankings import Rankings

try:
    from . import _pair_kernel as _kernel
except ImportError:  # no compiler at install time: the numpy path
    _kernel = None

__all__ = ["SetSums", "kernel_available"]


def kernel_available() -> bool:
    """Whether the compiled pair kernel was built."""
    return _kernel is not None


class SetSums:
    """The sums over the top-queries of one :class:`~crowdbayes.data.Rankings` (module
    docstring). ``use_kernel=False`` keeps to numpy even where the kernel was built (tests).

    :meth:`log_totals` remembers the totals of the last two score vectors it saw, so that an
    :meth:`inverse_totals_per_item` at one of them (as SQUAREM's next map is, at the point
    whose objective it just compared) does not recompute them."""

    def __init__(self, rankings: Rankings, *, use_kernel: bool = True) -> None:
        self.n_items = rankings.n_items
        self.only_pairs = rankings.only_pairs
        self.items = rankings.stage_items
        self.n_stages = rankings.n_stages
        self._remembered: list[tuple[np.ndarray, np.ndarray]] = []
        self._pairs32 = None
        if not self.only_pairs:
            self.member_stage = rankings.stage_of_member
        elif use_kernel and _kernel is not None and self.n_items < 2**31:
            self._pairs32 = rankings.stage_items.astype(np.int32)

    @cached_property
    def winners(self) -> np.ndarray:
        return np.ascontiguousarray(self.items[0::2])

    @cached_property
    def losers(self) -> np.ndarray:
        return np.ascontiguousarray(self.items[1::2])

    @cached_property
    def _scratch(self) -> np.ndarray:
        """One value per top-query, reused (no fresh array of that size per call)."""
        return np.empty(self.n_stages)

    @cached_property
    def _losers_scores(self) -> np.ndarray:
        return np.empty(self.n_stages)

    # ------------------------------------------------------------------ plain sums
    def totals(self, scores: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``T_l = Σ_{t∈A_l} s_t`` for every top-query (into ``out`` if given)."""
        if not self.only_pairs:
            totals = np.bincount(self.member_stage, scores[self.items], self.n_stages)
            if out is None:
                return totals
            out[...] = totals
            return out
        if out is None:
            return scores[self.winners] + scores[self.losers]
        np.take(scores, self.winners, out=out)
        np.take(scores, self.losers, out=self._losers_scores)
        return np.add(out, self._losers_scores, out=out)

    def per_item(self, per_stage: np.ndarray) -> np.ndarray:
        """``Σ_l δ_li v_l``: every set's value summed over the items it contains."""
        if self.only_pairs:
            return np.bincount(self.winners, per_stage, self.n_items) + np.bincount(
                self.losers, per_stage, self.n_items
            )
        return np.bincount(self.items, per_stage[self.member_stage], self.n_items)

    # ------------------------------------------------------------------ the MM sums
    def inverse_totals_per_item(self, log_scores: np.ndarray) -> np.ndarray:
        """``Σ_l δ_li / T_l`` at ``s = exp(log_scores)`` (the denominator of Hunter's MM
        update)."""
        totals = self._recall(log_scores)
        scores = np.exp(log_scores)
        if self._pairs32 is None:
            if totals is None:
                totals = self.totals(scores, out=self._scratch)
            return self.per_item(np.divide(1.0, totals, out=self._scratch))
        out = np.empty(self.n_items)
        _kernel.mm_pass(scores, self._pairs32, out, totals)
        return out

    def log_totals(self, log_scores: np.ndarray) -> float:
        """``Σ_l log T_l`` at ``s = exp(log_scores)``; the totals are remembered for the next
        :meth:`inverse_totals_per_item` at the same array (which must not be changed in
        place in between)."""
        buffer = self._buffer()
        scores = np.exp(log_scores)
        if self._pairs32 is None:
            self.totals(scores, out=buffer)
            value = float(np.log(buffer, out=self._scratch).sum())
        else:
            value = _kernel.log_totals(scores, self._pairs32, buffer)
        self._remembered.append((log_scores, buffer))
        return value

    def _buffer(self) -> np.ndarray:
        """A totals buffer: the oldest remembered one's (forgotten) once two are kept."""
        if len(self._remembered) < 2:
            return np.empty(self.n_stages)
        return self._remembered.pop(0)[1]

    def _recall(self, log_scores: np.ndarray) -> np.ndarray | None:
        for known, totals in self._remembered:
            if known is log_scores:
                return totals
        return None
