"""Crowd-BT: Bradley–Terry scores with unreliable workers
(crowdbayes.models.comparisons.crowd_bt)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from crowdbayes.models.comparisons import BradleyTerry, CrowdBT, simulate_crowd_comparisons


def test_crowd_bt_objective_never_decreases_and_finds_the_planted_spammer():
    reliability = np.full(12, 0.9)
    reliability[3] = 0.0  # answers at random
    sim = simulate_crowd_comparisons(
        30, 12, 150, reliability=reliability, tie_strength=0.3, random_state=1
    )
    for noise in ("random", "flip"):
        model = CrowdBT(noise=noise).fit(sim.comparisons)
        history = model.objective_history_
        assert np.all(np.diff(history) >= -1e-9 * abs(history[-1])), noise
        table = model.reliability_
        assert table["mean"].idxmin() == "w3", noise
        others = table.drop(index="w3")
        # the spammer's interval lies below every other worker's
        assert table.loc["w3", "upper"] < others["lower"].min(), noise
        faithful = pd.Series(model.faithful_proba_).groupby(sim.comparisons.worker).mean()
        assert faithful.idxmin() == "w3"
    random_model = CrowdBT(noise="random").fit(sim.comparisons)
    assert random_model.reliability_.loc["w3", "mean"] < 0.25
    assert (random_model.reliability_.drop(index="w3")["mean"] > 0.7).all()


def test_random_noise_model_ranks_workers_by_reliability():
    rhos, errors = [], []
    for seed in range(3):
        reliability = np.random.default_rng(seed).uniform(0.3, 1.0, 15)
        sim = simulate_crowd_comparisons(
            30, 15, 150, reliability=reliability, tie_strength=0.3, random_state=seed
        )
        table = CrowdBT(noise="random").fit(sim.comparisons).reliability_
        estimate = table["mean"].reindex(sim.reliability.index)
        rhos.append(spearmanr(estimate, sim.reliability)[0])
        errors.append(float((estimate - sim.reliability).abs().mean()))
    # measured: Spearman 0.94, 0.85, 0.62; mean absolute error 0.08, 0.09, 0.13
    assert np.mean(rhos) > 0.7 and min(rhos) > 0.5, rhos
    assert max(errors) < 0.16, errors


def test_a_spammer_hurts_plain_bradley_terry_more_than_crowd_bt():
    reliability = np.array([0.95, 0.95, 0.95, 0.0, 0.0, 0.0])
    rhos = {"plain": [], "crowd": []}
    for seed in range(3):
        sim = simulate_crowd_comparisons(40, 6, 300, reliability=reliability, random_state=seed)
        truth = sim.scores
        plain = BradleyTerry().fit(sim.comparisons).utility_["mean"].reindex(truth.index)
        crowd = CrowdBT().fit(sim.comparisons).utility_["mean"].reindex(truth.index)
        rhos["plain"].append(spearmanr(plain, truth)[0])
        rhos["crowd"].append(spearmanr(crowd, truth)[0])
    assert np.mean(rhos["crowd"]) > np.mean(rhos["plain"]) + 0.01, rhos
    assert np.mean(rhos["crowd"]) > 0.9, rhos
