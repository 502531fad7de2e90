r"""The comparisons family of the defaults report: the model the docs start with against win
counts.

Without item features (``prefs fit``'s default, GPPL, needs them) the start is ``--model
crowd-bt`` (:class:`~crowdbayes.models.comparisons.CrowdBT` at its defaults); with features
the default ``gppl`` (:class:`~crowdbayes.models.gp_preference.GPPL`). The baseline scores an
item by its win share, :math:`(w_i + t_i/2)/n_i` (a tie counts half; an item never compared
scores 1/2).

- Shared set: the UKPConvArg1 crowd labels against the UKPConvArgRank gold, read by
  ``benchmarks/prefs/comparisons_ukp.py`` (``_frame``, ``_spearman``); the unit is the fold
  (topic), the metric the Spearman :math:`\rho` within it.
- Simulated: Crowd-BT comparisons
  (:func:`~crowdbayes.models.comparisons.simulate.simulate_crowd_comparisons`) with 30%
  spammers, and with 15% adversaries (workers who always name the worse item), few
  comparisons per item; GP comparisons with features (``benchmarks/_prefs_data.py``: one
  consensus, and two opposed groups of workers). The unit is an item, scored by the share of
  its pairs with the other items ordered as the true utilities order them
  (:func:`_protocol.item_concordance`), pooled over the seeds.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from _prefs_data import simulate, simulate_crowd
from crowdbayes.models.comparisons.simulate import simulate_crowd_comparisons

__all__ = ["PREF_SCENARIOS", "win_share", "draw_prefs", "fit_default"]

PREF_SCENARIOS = {
    "Crowd-BT, 40 items, 30% spammers, ~15 comparisons per item": "crowd-bt",
    "Crowd-BT, 40 items, 15% adversaries, ~15 comparisons per item": "crowd-bt",
    "GP utility with 3 features, 60 items, 600 comparisons": "gppl",
    "GP utility, two opposed groups of workers, 60 items, 600 comparisons": "gppl",
}


def win_share(comparisons: pd.DataFrame) -> pd.Series:
    """Each compared item's share of wins, a tie counting half (module docstring)."""
    items = pd.concat([comparisons["left"], comparisons["right"]])
    played = items.value_counts()
    won = comparisons["label"][comparisons["label"] != "equal"].value_counts()
    tied = comparisons[comparisons["label"] == "equal"]
    half = pd.concat([tied["left"], tied["right"]]).value_counts() / 2
    wins = won.reindex(played.index, fill_value=0) + half.reindex(played.index, fill_value=0)
    return (wins / played).astype(float)


def draw_prefs(name: str, seed: int):
    """``(comparisons, item features or None, true utility per item)`` of one draw."""
    if name.startswith("Crowd-BT"):
        rng = np.random.default_rng(seed)
        n_workers = 20
        bad = rng.random(n_workers) < (0.3 if "spammers" in name else 0.15)
        reliability = np.where(bad & ("spammers" in name), 0.0, 0.9)
        sim = simulate_crowd_comparisons(
            40, n_workers, 15, reliability=reliability, random_state=seed
        )
        table = sim.comparisons.copy()
        if "adversaries" in name:
            liar = table["worker"].isin([f"w{j}" for j in np.flatnonzero(bad)])
            better = np.where(
                sim.scores[table["left"]].to_numpy() > sim.scores[table["right"]].to_numpy(),
                table["left"],
                table["right"],
            )
            worse = np.where(better == table["left"], table["right"], table["left"])
            table.loc[liar, "label"] = worse[liar.to_numpy()]
        return table, None, sim.scores
    if "opposed" in name:
        table, items = simulate_crowd(60, 600, seed=seed)
        f = np.sin(2 * items["x0"]) + np.cos(items["x1"]) + 0.5 * items["x2"]
    else:
        table, items, f = simulate(60, 600, seed=seed)
    for column in ("left", "right", "label"):
        table[column] = table[column].astype(int)
    return table, items, pd.Series(np.asarray(f), index=items.index)


def fit_default(model: str, table: pd.DataFrame, items) -> tuple[pd.Series, float]:
    """The item scores of the default (``crowd-bt`` or ``gppl``) and its fit time."""
    from crowdbayes.models.comparisons import CrowdBT
    from crowdbayes.models.gp_preference import GPPL

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        if model == "crowd-bt":
            fitted = CrowdBT().fit(table)
        else:
            fitted = GPPL(random_state=0).fit(table, items)
        return fitted.utility_["mean"], time.perf_counter() - start
