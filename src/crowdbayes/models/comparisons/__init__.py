"""Scores of items from pairwise comparisons, with ties and unreliable workers.

- :class:`BradleyTerry` — Bradley–Terry (1952) with Davidson (1970) ties: posterior mode and
  Laplace intervals of the item scores;
- :class:`CrowdBT` — the same with a Beta posterior over each worker's probability of answering
  faithfully (otherwise at random, or flipped as in Crowd-BT, Chen et al. 2013), fitted by
  variational Bayes.

Unlike :mod:`crowdbayes.models.gp_preference` these models need no item features: each
compared item gets its own score.
"""

from .bradley_terry import BradleyTerry, CrowdBT
from .simulate import SimulatedComparisons, simulate_crowd_comparisons

__all__ = ["BradleyTerry", "CrowdBT", "SimulatedComparisons", "simulate_crowd_comparisons"]
