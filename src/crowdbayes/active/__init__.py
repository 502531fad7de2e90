"""Adaptive collection: decide what to ask next, and replay real data to measure it.

The models say how valuable each candidate question is (:meth:`crowdbayes.Estimator.suggest`);
this package runs the loop around them — collect → refit → ask → stop — without reaching into
a model's internals:

- :func:`simulate` replays a pool of real answers held back from the model: each round the
  strategy asks, the pool reveals matching unused answers, the model is refitted, and the
  accuracy against gold and the model's own gold-free estimate are recorded against budget;
- :class:`LabelPool` (class labels) and :class:`PairPool` (pairwise comparisons) are the pools;
- :class:`WarmRefit` refits each round from the previous fit, with cold fits on a geometric
  schedule that replace it when their objective is higher;
- ``"round_robin"`` and ``"random"`` are the model-free baselines a pool can play
  (:class:`PairPool` also ``"item_coverage"``: the pairs of the items compared least).
"""

from .labels import LabelPool
from .pairs import PairPool
from .replay import Pool, WarmRefit, simulate

__all__ = ["simulate", "Pool", "WarmRefit", "LabelPool", "PairPool"]
