"""Figures of fitted models (matplotlib, the ``plot`` extra: ``pip install 'crowdbayes[plot]'``).

Each function takes a fitted model (and, where it helps, the data or gold labels) and returns a
:class:`matplotlib.figure.Figure` whose title and axis labels say what is shown. The figures
read models only through their public fitted attributes and methods. A figure the model has
nothing for (a convergence trace of majority vote, length-scales of a model without features)
raises ``ValueError`` saying so.

============================  ==================================================================
label models                  :func:`worker_reliability`, :func:`confusion_matrices`,
                              :func:`class_probabilities`, :func:`calibration` (with gold),
                              :func:`label_counts` (the data)
Plackett–Luce, GP preferences :func:`ranked_items`, :func:`feature_weights`
leaderboards from battles     :func:`board_scores`, :func:`win_rates`,
                              :func:`rank_probabilities`, :func:`style_coefficients`
communities of preferences    :func:`community_members`, :func:`community_utilities`
crowd clustering              :func:`cluster_embedding`, :func:`worker_alpha_beta`
any iterative model           :func:`convergence` (objective, chains, R-hat)
============================  ==================================================================
"""

from .convergence import convergence
from .groups import cluster_embedding, community_members, community_utilities, worker_alpha_beta
from .items import feature_weights, ranked_items
from .labels import (
    calibration,
    class_probabilities,
    confusion_matrices,
    label_counts,
    worker_reliability,
)
from .leaderboard import board_scores, rank_probabilities, style_coefficients, win_rates

__all__ = [
    "board_scores",
    "calibration",
    "class_probabilities",
    "cluster_embedding",
    "community_members",
    "community_utilities",
    "confusion_matrices",
    "convergence",
    "feature_weights",
    "label_counts",
    "rank_probabilities",
    "ranked_items",
    "style_coefficients",
    "worker_alpha_beta",
    "win_rates",
    "worker_reliability",
]
