"""Leaderboard(interval="exact"): the Metropolis–Hastings draws of the exact posterior against
quadrature on a grid (three models; two models with a covariate and Davidson ties), where it
departs from Laplace, reproducibility, refusals, the effective sample size, and coverage.

Needs ``"exact"`` in ``leaderboard.INTERVALS`` and the dispatch in ``Leaderboard._draws_of``
(:mod:`crowdbayes.models.comparisons._leaderboard_exact`).

The Monte Carlo tolerances: a quantile ``x_q`` estimated from a chain of effective size ``E``
has standard error ``sqrt(q(1-q)/E) / f(x_q)`` (``f`` the marginal density there, from the
grid), a probability ``sqrt(p(1-p)/E)``; the checks allow 4.5 standard errors (a false failure
about once in 150,000 per check) plus the grid's resolution.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special

from crowdbayes.data import Battles
from crowdbayes.exceptions import ConvergenceWarning
from crowdbayes.models.comparisons import Leaderboard, simulate_battles
from crowdbayes.models.comparisons._battles_fit import BattleProblem
from crowdbayes.models.comparisons._leaderboard_exact import (
    BLOCK,
    BURN_IN,
    MAX_EXACT_MODELS,
    effective_sample_size,
    exact_draws,
    log_posterior,
)
from crowdbayes.models.comparisons._solver import TIE_PRIOR_MEAN, TIE_PRIOR_SD
from models.comparisons.test_leaderboard import battle_design, quiet_fit

LEVEL = 0.9
ALPHA = (1 - LEVEL) / 2
N_SE = 4.5


# ------------------------------------------------------------------------------ the grid
def battle_log_likelihood(d: np.ndarray, outcome: np.ndarray, theta) -> np.ndarray:
    """Per-battle log-likelihood by brute force (Davidson 1970: p_a ∝ e^{d/2}, p_b ∝ e^{-d/2},
    p_tie ∝ ν; ``theta=None``: a tie is half a win each, plain Bradley–Terry)."""
    if theta is None:
        y = np.array([1.0, 0.0, 0.5])[outcome]
        return y * special.log_expit(d) + (1 - y) * special.log_expit(-d)
    log_z = np.logaddexp(np.logaddexp(d / 2, -d / 2), theta)
    logp = np.stack([d / 2 - log_z, -d / 2 - log_z, theta + 0 * d - log_z])
    return np.take_along_axis(logp, outcome[None, None, :].repeat(d.shape[0], 1), 0)[0]


def grid_posterior(axes: list[np.ndarray], log_density) -> tuple[np.ndarray, np.ndarray]:
    """The grid's points (points × axes) and normalised posterior weights, from the log
    density of a block of points (evaluated in blocks)."""
    mesh = np.meshgrid(*axes, indexing="ij")
    points = np.stack([m.ravel() for m in mesh], axis=1)
    log_w = np.concatenate([log_density(block) for block in np.array_split(points, 64)])
    weight = np.exp(log_w - log_w.max())
    return points, weight / weight.sum()


def weighted_quantile(values: np.ndarray, weight: np.ndarray, q: float) -> float:
    order = np.argsort(values)
    cumulative = np.cumsum(weight[order])
    return float(np.interp(q, cumulative - weight[order] / 2, values[order]))


def density_at(values: np.ndarray, weight: np.ndarray, x: float, width: float) -> float:
    return float(weight[np.abs(values - x) < width].sum() / (2 * width))


def quantile_tolerance(values, weight, q, ess, resolution) -> float:
    """N_SE Monte Carlo standard errors of the q-quantile plus the grid's resolution."""
    x = weighted_quantile(values, weight, q)
    sd = np.sqrt(weight @ (values - weight @ values) ** 2)
    f = density_at(values, weight, x, 0.15 * sd)
    return N_SE * np.sqrt(q * (1 - q) / ess) / f + resolution


def three_model_grid(frame: pd.DataFrame, ids: pd.Index, davidson: bool, half: float):
    """The exact posterior of three models' centred scores (flat prior; Davidson's θ with
    its prior) on a grid over the two free differences (and θ), ±``half`` around 0."""
    D, _ = battle_design(frame, ids)
    outcome = frame["winner"].map({"model_a": 0, "model_b": 1, "tie": 2}).to_numpy()
    rows, count = np.unique(np.column_stack([D, outcome]), axis=0, return_counts=True)
    D, outcome = rows[:, :3], rows[:, 3].astype(int)
    g = np.linspace(-half, half, 241 if not davidson else 161)
    axes = [g, g] + ([np.linspace(-5.0, 2.0, 36)] if davidson else [])

    def log_density(points):
        S = np.column_stack([points[:, :2], np.zeros(len(points))])
        theta = points[:, 2:3] if davidson else None
        value = battle_log_likelihood(S @ D.T, outcome, theta) @ count
        if davidson:
            value -= 0.5 * ((points[:, 2] - TIE_PRIOR_MEAN) / TIE_PRIOR_SD) ** 2
        return value

    points, weight = grid_posterior(axes, log_density)
    S = np.column_stack([points[:, :2], np.zeros(len(points))])
    return S - S.mean(axis=1, keepdims=True), weight, g[1] - g[0]


def rank1_probabilities(C: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return np.bincount(np.argmax(C, axis=1), weight, C.shape[1])


# ------------------------------------------------------------------------------ the target
@pytest.mark.parametrize(
    "options",
    [
        {"tie_model": "davidson"},
        {"tie_model": "half"},
        {"tie_model": "davidson", "coef": (0.4, -0.3)},
        {"tie_model": "half", "coef": (0.4,), "prior_var": 0.5},
    ],
)
def test_the_batched_log_posterior_is_the_fit_objective(options):
    options = dict(options)
    coef = options.pop("coef", ())
    sim = simulate_battles(6, 400, coef=coef, random_state=5)
    names = [c for c in sim.battles.columns if c not in ("model_a", "model_b", "winner")]
    counts = Battles(sim.battles, covariates=names or None).counts()
    problem = BattleProblem(counts, options["tie_model"], options.get("prior_var"))
    Z = np.random.default_rng(0).normal(0.0, 1.0, (7, problem.size))
    expected = [problem.value(z) for z in Z]
    np.testing.assert_allclose(log_posterior(problem, Z), expected, rtol=1e-12)


# ------------------------------------------------------------------------------ quadrature
@pytest.mark.parametrize("tie_model", ["half", "davidson"])
def test_exact_marginals_and_rank1_match_quadrature_for_three_models(tie_model):
    sim = simulate_battles(3, 60, score_sd=0.6, random_state=11)
    model = quiet_fit(
        Leaderboard(tie_model=tie_model, interval="exact", min_battles=0, random_state=0),
        sim.battles,
    )
    ids = model.item_ids_
    C, weight, spacing = three_model_grid(sim.battles, ids, tie_model == "davidson", half=4.0)
    assert weight[np.abs(C).max(axis=1) > 2.5].sum() < 1e-6  # the grid holds the posterior
    board = model.board_.loc[ids]
    ess = model.exact_ess_
    assert ess >= 1000 and 0.2 < model.exact_acceptance_ <= 1
    for i, model_id in enumerate(ids):
        for column, q in (("lower", ALPHA), ("upper", 1 - ALPHA)):
            exact = weighted_quantile(C[:, i], weight, q)
            tolerance = quantile_tolerance(C[:, i], weight, q, ess, spacing)
            assert board.loc[model_id, column] == pytest.approx(exact, abs=tolerance), (
                model_id,
                column,
            )
    p1 = rank1_probabilities(C, weight)
    tolerance = N_SE * np.sqrt(p1 * (1 - p1) / ess) + 0.01
    np.testing.assert_array_less(np.abs(board["p_rank1"].to_numpy() - p1), tolerance)


def test_exact_departs_from_laplace_in_the_direction_quadrature_does():
    """Eight battles: a skewed posterior (the top model's upper tail is long)."""
    winners = ["model_a"] * 3 + ["model_b"] + ["model_a"] * 2 + ["model_b", "model_a"]
    frame = pd.DataFrame(
        {
            "model_a": ["p", "p", "p", "p", "q", "q", "p", "p"],
            "model_b": ["q", "q", "q", "q", "r", "r", "r", "r"],
            "winner": winners,
        }
    )
    fits = {
        interval: quiet_fit(
            Leaderboard(tie_model="half", interval=interval, min_battles=0, random_state=1),
            frame,
        )
        for interval in ("laplace", "exact")
    }
    ids = fits["exact"].item_ids_
    C, weight, spacing = three_model_grid(frame, ids, False, half=14.0)
    assert weight[np.abs(C).max(axis=1) > 9.0].sum() < 1e-5  # the grid holds the posterior
    ess = fits["exact"].exact_ess_
    moved = 0
    for i, model_id in enumerate(ids):
        for column, q in (("lower", ALPHA), ("upper", 1 - ALPHA)):
            exact = weighted_quantile(C[:, i], weight, q)
            tolerance = quantile_tolerance(C[:, i], weight, q, ess, spacing)
            laplace = fits["laplace"].board_.loc[model_id, column]
            sampled = fits["exact"].board_.loc[model_id, column]
            assert sampled == pytest.approx(exact, abs=tolerance)
            if abs(exact - laplace) > tolerance:  # quadrature says Laplace is off here
                assert np.sign(sampled - laplace) == np.sign(exact - laplace)
                assert abs(sampled - exact) < abs(laplace - exact) / 2
                moved += 1
    assert moved >= 2  # the case is non-Gaussian enough to tell


def test_covariate_and_tie_strength_against_quadrature_for_two_models():
    """Two models, one covariate, Davidson ties: the posterior of (s_p - s_q, β, θ) on a 3-d
    grid; the board's and style_'s intervals against its marginals."""
    rng = np.random.default_rng(3)
    n = 150
    x = rng.standard_normal(n)
    d = 0.4 + 0.7 * x
    nu = 0.5
    logits = np.stack([d / 2, -d / 2, np.full(n, np.log(nu))])
    p = np.exp(logits - special.logsumexp(logits, axis=0))
    outcome = (rng.random(n) > np.cumsum(p, axis=0)[:-1]).sum(axis=0)
    frame = pd.DataFrame(
        {
            "model_a": "p",
            "model_b": "q",
            "winner": np.array(["model_a", "model_b", "tie"])[outcome],
            "length": x,
        }
    )
    model = quiet_fit(
        Leaderboard(interval="exact", min_battles=0, random_state=2),
        Battles(frame, covariates=["length"]),
    )
    X = Battles(frame, covariates=["length"]).X[:, 0]  # standardised as the fit has it
    codes = model.item_ids_.get_indexer(frame["model_a"])
    sign = np.where(codes == 0, 1.0, -1.0)  # the battles' d in terms of s_0 - s_1
    gap = np.linspace(-1.2, 2.0, 81)
    beta = np.linspace(-0.4, 1.8, 81)
    theta = np.linspace(-2.6, 0.4, 41)

    def log_density(points):
        d = sign * points[:, :1] + points[:, 1:2] * X
        value = battle_log_likelihood(d, outcome, points[:, 2:3]).sum(axis=1)
        return value - 0.5 * ((points[:, 2] - TIE_PRIOR_MEAN) / TIE_PRIOR_SD) ** 2

    points, weight = grid_posterior([gap, beta, theta], log_density)
    edge = np.isin(points[:, 0], gap[[0, -1]]) | np.isin(points[:, 1], beta[[0, -1]])
    edge |= np.isin(points[:, 2], theta[[0, -1]])
    assert weight[edge].sum() < 1e-5  # the grid holds the posterior
    ess = model.exact_ess_
    score = points[:, 0] / 2  # model 0's centred score
    for column, q in (("lower", ALPHA), ("upper", 1 - ALPHA)):
        exact = weighted_quantile(score, weight, q)
        tolerance = quantile_tolerance(score, weight, q, ess, (gap[1] - gap[0]) / 2)
        assert model.board_.loc[model.item_ids_[0], column] == pytest.approx(exact, abs=tolerance)
        exact = weighted_quantile(points[:, 1], weight, q)
        tolerance = quantile_tolerance(points[:, 1], weight, q, ess, beta[1] - beta[0])
        assert model.style_.loc["length", column] == pytest.approx(exact, abs=tolerance)


# ------------------------------------------------------------------------------ behaviour
def test_seeded_draws_are_reproducible_and_saved(tmp_path):
    from crowdbayes import load

    sim = simulate_battles(8, 300, coef=(0.3,), random_state=4)
    fit = lambda seed: quiet_fit(  # noqa: E731
        Leaderboard(interval="exact", min_battles=0, random_state=seed), sim.battles
    )
    first, again, other = fit(7), fit(7), fit(8)
    pd.testing.assert_frame_equal(first.board_, again.board_)
    pd.testing.assert_frame_equal(first.style_, again.style_)
    pd.testing.assert_frame_equal(first.rank_probabilities(), again.rank_probabilities())
    assert not np.allclose(first.board_["lower"], other.board_["lower"])
    # intervals("exact") from another interval's fit: the same seeded draws
    laplace = quiet_fit(Leaderboard(min_battles=0, random_state=7), sim.battles)
    pd.testing.assert_frame_equal(laplace.intervals("exact"), first.intervals("exact"))
    first.save(tmp_path / "board.npz")
    loaded = load(tmp_path / "board.npz")
    pd.testing.assert_frame_equal(loaded.board_, first.board_)
    pd.testing.assert_frame_equal(loaded.intervals("exact"), first.intervals("exact"))
    assert loaded.exact_ess_ == first.exact_ess_


def test_large_boards_and_improper_posteriors_are_refused_in_one_line():
    sim = simulate_battles(MAX_EXACT_MODELS + 1, 3000, random_state=0)
    with pytest.raises(ValueError, match=r"at most 50 models \(this board has 51\).*'laplace'"):
        quiet_fit(Leaderboard(interval="exact"), sim.battles)
    assert len(quiet_fit(Leaderboard(), sim.battles).board_) == MAX_EXACT_MODELS + 1
    frame = pd.DataFrame(  # "a" never loses: its score is unbounded without a prior
        {
            "model_a": ["a", "a", "b", "c"],
            "model_b": ["b", "c", "c", "b"],
            "winner": ["model_a", "model_a", "model_a", "model_a"],
        }
    )
    with pytest.raises(ValueError, match=r"a never lost.*prior_scale"):  # the fit refuses
        quiet_fit(Leaderboard(interval="exact", min_battles=0), frame)
    problem = BattleProblem(Battles(frame).counts(), "davidson", None)  # the sampler too
    mode = problem.maximise(max_iter=3)
    with pytest.raises(ValueError, match=r"improper.*set prior_scale"):
        exact_draws(problem, mode, np.random.default_rng(0))
    shrunk = quiet_fit(Leaderboard(interval="exact", prior_scale=1.0, min_battles=0), frame)
    assert shrunk.board_.index[0] == "a" and np.isfinite(shrunk.board_["upper"]).all()


def test_a_short_chain_is_warned():
    sim = simulate_battles(5, 200, random_state=1)
    counts = Battles(sim.battles).counts()
    problem = BattleProblem(counts, "davidson", None)
    mode = problem.maximise()
    with pytest.warns(ConvergenceWarning, match="effective sample size"):
        result = exact_draws(problem, mode, np.random.default_rng(0), max_proposals=300)
    assert result.n_proposals == 300 and result.ess < 1000
    assert np.allclose(result.draws[:, :5].sum(axis=1), 0.0)  # scores centred


def test_effective_sample_size_of_autoregressive_chains():
    """AR(1) with coefficient ρ: ESS = N (1 - ρ)/(1 + ρ)."""
    rng = np.random.default_rng(0)
    N, rho = 40_000, np.array([0.0, 0.5, 0.9])
    chain = np.empty((N, 3))
    chain[0] = rng.standard_normal(3)
    noise = rng.standard_normal((N, 3)) * np.sqrt(1 - rho**2)
    for t in range(1, N):
        chain[t] = rho * chain[t - 1] + noise[t]
    expected = N * (1 - rho) / (1 + rho)
    np.testing.assert_allclose(effective_sample_size(chain), expected, rtol=0.12)
    assert effective_sample_size(np.ones((100, 1)))[0] == 100


def test_exact_intervals_are_calibrated_over_boards_drawn_from_the_prior():
    """Scores drawn from the prior N(0, 1), no ties, few battles: the exact posterior's 90%
    intervals cover the true centred scores 90% of the time on average over boards drawn from
    the prior (Cook, Gelman & Rubin 2006)."""
    covered, total = 0, 0
    for rep in range(100):
        sim = simulate_battles(5, 40, score_sd=1.0, tie_strength=0.0, random_state=100 + rep)
        model = quiet_fit(
            Leaderboard(
                tie_model="half", prior_scale=1.0, interval="exact", min_battles=0, random_state=rep
            ),
            sim.battles,
        )
        board = model.board_
        truth = sim.scores.loc[board.index]
        covered += int(((board["lower"] <= truth) & (truth <= board["upper"])).sum())
        total += len(board)
    # 500 intervals, five per board (correlated): sd of the rate about 0.015 (measured)
    assert abs(covered / total - LEVEL) < 0.05, covered / total


def test_a_well_populated_board_takes_one_block_without_a_warning():
    sim = simulate_battles(10, 3000, random_state=9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = Leaderboard(interval="exact", min_battles=0, random_state=0).fit(sim.battles)
    assert model.exact_ess_ >= 1000 and model.exact_acceptance_ > 0.5
    assert len(model._draws) == BLOCK - BURN_IN
