"""The k-step bootstrap of boards with covariates (Andrews 2002): its per-row gradients against
the Davidson terms, its replicates against full refits of the same resampled counts (the error
shrinks by a factor per step; percentile endpoints within a few percent of the interval width),
its resampling against the multinomial's moments, the coverage of its intervals on simulation,
and that a fitted Leaderboard takes it above KSTEP_ROWS counted rows."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from crowdbayes.data import Battles
from crowdbayes.models.comparisons import Leaderboard, simulate_battles
from crowdbayes.models.comparisons import _leaderboard_intervals as intervals
from crowdbayes.models.comparisons._battles_fit import BattleProblem


def covariate_problem(tie_model="davidson", n_models=12, n_battles=4000, seed=1):
    sim = simulate_battles(
        n_models, n_battles, popularity=1.0, coef=(0.3, -0.2), tie_strength=0.26, random_state=seed
    )
    battles = Battles(sim.battles, covariates=list(sim.coef.index))
    problem = BattleProblem(battles.counts(), tie_model, None)
    return problem, problem.maximise(tol=1e-12), sim, battles


def centred_scores(draws, n):
    out = draws.copy()
    out[:, :n] -= out[:, :n].mean(axis=1, keepdims=True)
    return out


@pytest.mark.parametrize("tie_model", ["davidson", "half"])
def test_row_scores_equal_the_davidson_terms(tie_model):
    problem, mode, _, _ = covariate_problem(tie_model)
    z = mode.z + np.random.default_rng(0).normal(0, 0.3, problem.size)  # away from the mode too
    g_d, g_t, _ = problem.battle_scores(z)
    mine_d, mine_t = intervals.row_scores(problem, z)
    np.testing.assert_allclose(mine_d, g_d, atol=1e-14)
    np.testing.assert_allclose(mine_t, g_t, atol=1e-14)


@pytest.mark.parametrize("tie_model", ["davidson", "half"])
def test_k_step_replicates_approach_full_refits(tie_model):
    problem, mode, _, _ = covariate_problem(tie_model)
    rng = np.random.default_rng(0)
    weights = [intervals.resampled_rows(rng, problem.counts.count) for _ in range(150)]
    full = np.array(
        [problem.maximise(mode.z, problem.pair_weights(w), tol=1e-12).z for w in weights]
    )
    full = centred_scores(full, problem.n)
    sd = full.std(axis=0)
    errors, endpoints = [], []
    quantiles = np.quantile(full, [0.05, 0.95], axis=0)
    width = quantiles[1] - quantiles[0]
    for k in (1, 2, 3):
        steps = centred_scores(
            np.array([intervals.kstep(problem, mode, w, k) for w in weights]), problem.n
        )
        errors.append((np.abs(steps - full) / sd).max())
        mine = np.quantile(steps, [0.05, 0.95], axis=0)
        endpoints.append((np.abs(mine - quantiles) / width).max())
    # each step shrinks the error by a factor (O(N^-1/2) per step), and two steps (the
    # default) put the 90% percentile endpoints within 2% of the interval's width
    assert errors[1] < errors[0] / 3 and errors[2] < errors[1] / 3
    assert intervals.K_STEPS == 2 and endpoints[1] < 0.02
    assert endpoints[2] < endpoints[0]


def test_resampled_rows_have_the_multinomial_moments():
    counts = np.array([5, 100, 300, 0, 20])
    total, p = counts.sum(), counts / counts.sum()
    rng = np.random.default_rng(3)
    draws = np.array([intervals.resampled_rows(rng, counts) for _ in range(20_000)])
    assert (draws.sum(axis=1) == total).all() and (draws[:, 3] == 0).all()
    mean_sd = np.sqrt(total * p * (1 - p) / len(draws))
    assert (np.abs(draws.mean(axis=0) - total * p) <= 4 * mean_sd + 1e-12).all()
    var = total * p * (1 - p)
    np.testing.assert_allclose(draws.var(axis=0)[p > 0], var[p > 0], rtol=0.06)


def test_k_step_intervals_cover_true_scores_and_coefficients():
    covered = []
    for seed in range(12):
        problem, mode, sim, _ = covariate_problem(n_models=10, n_battles=3000, seed=100 + seed)
        draws = intervals.kstep_draws(problem, mode, 300, np.random.default_rng(seed))
        lower, upper = np.quantile(draws, [0.05, 0.95], axis=0)
        truth = np.concatenate([sim.scores.to_numpy() - sim.scores.mean(), sim.coef.to_numpy()])
        k = len(truth)
        covered.append((lower[:k] <= truth) & (truth <= upper[:k]))
    coverage = np.concatenate(covered).mean()
    assert 0.82 <= coverage <= 0.97, coverage


def test_leaderboard_takes_the_k_step_bootstrap_above_kstep_rows(monkeypatch):
    _, _, sim, battles = covariate_problem(n_models=8, n_battles=1500, seed=5)
    monkeypatch.setattr(intervals, "KSTEP_ROWS", 100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Leaderboard(interval="bootstrap", n_bootstrap=40, random_state=0).fit(battles)
    problem, mode = model._fitted_problem()
    expected = intervals.kstep_draws(problem, mode, 40, np.random.default_rng(0))
    np.testing.assert_allclose(model._draws, expected, atol=1e-12)
    assert (model.style_["lower"] < model.style_["coef"]).all()
    assert (model.style_["coef"] < model.style_["upper"]).all()
