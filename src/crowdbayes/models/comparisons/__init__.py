"""Scores of items from pairwise comparisons, with ties and unreliable workers.

- :class:`BradleyTerry` — Bradley–Terry (1952) with Davidson (1970) ties: posterior mode and
  Laplace intervals of the item scores;
- :class:`CrowdBT` — the same with a Beta posterior over each worker's probability of answering
  faithfully (otherwise at random, or flipped as in Crowd-BT, Chen et al. 2013), fitted by
  variational Bayes;
- :class:`Leaderboard` — a leaderboard from pairwise battles (an arena's votes): scores with
  Davidson or half-win ties and style covariates, intervals of scores and ranks three ways,
  robustness to removing a few battles.

Unlike :mod:`crowdbayes.models.gp_preference` these models need no item features: each
compared item gets its own score.
"""

from ..._catalogue import ModelEntry
from ..._utils import lazy_exports

#: the family's models as the command line offers them (:mod:`crowdbayes._catalogue`)
COMMAND_LINE = (
    ModelEntry(
        "prefs",
        "bt",
        "crowdbayes.models.comparisons.bradley_terry:BradleyTerry",
        "Bradley-Terry scores with Davidson ties, Laplace intervals (no item features)",
        ("--max-iter", "--tol", "--tie-model"),
    ),
    ModelEntry(
        "prefs",
        "crowd-bt",
        "crowdbayes.models.comparisons.crowd_bt:CrowdBT",
        "Crowd-BT: Bradley-Terry with each worker's reliability (VB; no item features)",
        ("--max-iter", "--tol", "--tie-model", "--noise"),
    ),
    ModelEntry(
        "leaderboard",
        "bt",
        "crowdbayes.models.comparisons.leaderboard:Leaderboard",
        "Leaderboard from battles: Bradley-Terry scores, ties (Davidson or half), style "
        "covariates, score and rank intervals (Laplace, sandwich, bootstrap)",
        (
            "--tie-model",
            "--scale",
            "--anchor",
            "--interval",
            "--prior-scale",
            "--min-battles",
            "--level",
            "--max-iter",
            "--tol",
        ),
    ),
)

#: the module of every public name, and the names it defines (imported on first use)
_EXPORTS = {
    ".bradley_terry": ("BradleyTerry",),
    ".crowd_bt": ("CrowdBT",),
    ".leaderboard": ("Leaderboard",),
    ".simulate_battles": ("SimulatedBattles", "simulate_battles"),
    ".simulate": ("SimulatedComparisons", "simulate_crowd_comparisons"),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
