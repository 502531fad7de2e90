"""Adaptive collection: decide what to ask next, and replay real data to measure it.

The models say how valuable each candidate question is (:meth:`crowdbayes.Estimator.suggest`);
this package runs the loop around them — collect → refit → ask → stop — without reaching into
a model's internals:

- :func:`simulate` replays a pool of real answers held back from the model: each round the
  strategy asks, the pool reveals matching unused answers, the model is refitted, and the
  accuracy against gold and the model's own gold-free estimate are recorded against budget;
- :class:`LabelPool` (class labels) and :class:`PairPool` (pairwise comparisons) are the pools;
- :func:`suggest_sets` chooses which choice sets to show a Plackett–Luce model next (coverage
  first, then the expected information gain about the utilities), and
  :func:`replay_choice_sets` replays recorded choices (:mod:`.rankings`);
- :func:`suggest_links` chooses which item pairs to ask about for crowd clustering (the
  expected reduction in the entropy of the pair's cluster assignments, :mod:`.links`);
- :class:`WarmRefit` refits each round from the previous fit, with cold fits on a geometric
  schedule that replace it when their objective is higher;
- ``"round_robin"`` and ``"random"`` are the model-free baselines a pool can play
  (:class:`PairPool` also ``"item_coverage"``: the pairs of the items compared least).
"""

from .labels import LabelPool
from .links import suggest_links
from .pairs import PairPool
from .rankings import ChoiceSets, replay_choice_sets, suggest_sets
from .replay import Pool, WarmRefit, simulate

__all__ = [
    "simulate",
    "Pool",
    "WarmRefit",
    "LabelPool",
    "PairPool",
    "ChoiceSets",
    "suggest_sets",
    "replay_choice_sets",
    "suggest_links",
]
