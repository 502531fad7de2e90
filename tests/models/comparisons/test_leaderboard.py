"""Leaderboard: equal to evalica and to a half-win logistic regression, Laplace against the
exact posterior of three models, the bootstrap against its exact distribution, recovery on
simulation (scores, ranks, style coefficients), shrinkage, partial_fit, robustness, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from crowdbayes.data import Battles
from crowdbayes.exceptions import DataWarning
from crowdbayes.models.comparisons import Leaderboard, simulate_battles
from crowdbayes.models.comparisons._leaderboard_robustness import influence
from crowdbayes.models.comparisons._solver import TIE_PRIOR_MEAN, TIE_PRIOR_SD


def quiet_fit(model, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(data)


def centred(x):
    return x - x.mean()


def battle_design(frame: pd.DataFrame, ids: pd.Index):
    """Per-battle ±1 design matrix and outcome weights (a's share of the win: 1, 0 or ½)."""
    n = len(frame)
    D = np.zeros((n, len(ids)))
    D[np.arange(n), ids.get_indexer(frame["model_a"])] = 1.0
    D[np.arange(n), ids.get_indexer(frame["model_b"])] = -1.0
    y = frame["winner"].map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5}).to_numpy()
    return D, y


def logistic_regression(D: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Half-win logistic regression by plain Newton on every battle, the last score fixed at
    0, returned centred (the brute force the collapsed fit must equal)."""
    X = D[:, :-1]
    w = np.zeros(X.shape[1])
    for _ in range(100):
        p = special.expit(X @ w)
        step = np.linalg.solve((X * (p * (1 - p))[:, None]).T @ X, X.T @ (y - p))
        w += step
        if np.abs(step).max() < 1e-13:
            break
    return centred(np.append(w, 0.0))


# ------------------------------------------------------------------------------ equality
def test_half_ties_equal_evalica_and_logistic_regression():
    evalica = pytest.importorskip("evalica")
    sim = simulate_battles(25, 8000, popularity=1.0, random_state=1)
    frame = sim.battles
    model = quiet_fit(Leaderboard(tie_model="half"), frame)
    ours = model.utility_["mean"]
    winners = {"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y, "tie": evalica.Winner.Draw}
    result = evalica.bradley_terry(
        frame["model_a"],
        frame["model_b"],
        frame["winner"].map(winners),
        tolerance=1e-12,
        limit=1_000_000,
    )
    theirs = centred(np.log(result.scores.reindex(ours.index)))
    np.testing.assert_allclose(ours.to_numpy(), theirs.to_numpy(), atol=1e-6)
    D, y = battle_design(frame, ours.index)
    np.testing.assert_allclose(ours.to_numpy(), logistic_regression(D, y), atol=1e-6)
    # the board is the same scores, best first
    assert model.board_["score"].is_monotonic_decreasing
    np.testing.assert_allclose(model.board_["score"], ours.loc[model.board_.index])


def test_davidson_fit_is_the_brute_force_mode():
    from scipy.optimize import minimize

    sim = simulate_battles(5, 1500, tie_strength=0.4, random_state=2)
    model = quiet_fit(Leaderboard(), sim.battles)
    ids = model.item_ids_
    D, _ = battle_design(sim.battles, ids)
    outcome = sim.battles["winner"].map({"model_a": 0, "model_b": 1, "tie": 2}).to_numpy()

    def minus_log_posterior(params):
        s, theta = np.append(params[:-1], 0.0), params[-1]
        d = D @ s
        log_z = np.logaddexp(np.logaddexp(d / 2, -d / 2), theta)
        logp = np.stack([d / 2 - log_z, -d / 2 - log_z, theta - log_z])
        prior = 0.5 * ((theta - TIE_PRIOR_MEAN) / TIE_PRIOR_SD) ** 2
        return -logp[outcome, np.arange(len(d))].sum() + prior

    best = minimize(minus_log_posterior, np.zeros(len(ids)), method="BFGS", options={"gtol": 1e-9})
    np.testing.assert_allclose(
        model.utility_["mean"], centred(np.append(best.x[:-1], 0.0)), atol=1e-5
    )
    assert model.tie_strength_ == pytest.approx(np.exp(best.x[-1]), rel=1e-4)
    history = model.objective_history_  # Newton with a line search: never decreasing
    assert len(history) == model.n_iter_ and np.all(np.diff(history) >= -1e-9)
    assert model.convergence_traces()[0][0] == "objective_history_"


# ------------------------------------------------------------------------------ intervals
def test_laplace_against_the_exact_posterior_of_three_models():
    """Half-win ties, flat prior on the two free differences: the posterior on a grid."""
    sim = simulate_battles(3, 300, score_sd=0.5, random_state=3)
    model = quiet_fit(Leaderboard(tie_model="half", credible_level=0.9), sim.battles)
    ids = model.item_ids_
    D, y = battle_design(sim.battles, ids)
    mode = model.utility_["mean"].to_numpy()
    sd = model.utility_["sd"].to_numpy()
    # grid over (s0 - s2, s1 - s2) around the mode, ±6 sd of a difference
    d0, d1 = mode[0] - mode[2], mode[1] - mode[2]
    half = 6 * (sd[0] + sd[2])
    g0 = np.linspace(d0 - half, d0 + half, 201)
    g1 = np.linspace(d1 - half, d1 + half, 201)
    G0, G1 = np.meshgrid(g0, g1, indexing="ij")
    S = np.stack([G0.ravel(), G1.ravel(), np.zeros(G0.size)], axis=1)  # (grid, models)
    logit = S @ D.T  # (grid, battles)
    loglik = (y * special.log_expit(logit) + (1 - y) * special.log_expit(-logit)).sum(axis=1)
    weight = np.exp(loglik - loglik.max())
    weight /= weight.sum()
    C = S - S.mean(axis=1, keepdims=True)  # centred scores at each grid point
    mean = weight @ C
    exact_sd = np.sqrt(weight @ (C - mean) ** 2)
    np.testing.assert_allclose(sd, exact_sd, rtol=0.03)
    np.testing.assert_allclose(mode, mean, atol=0.1 * sd.min())


def test_bootstrap_against_its_exact_distribution_for_two_models():
    """Two models, no ties: a replicate's score gap is logit(K/N), K ~ Binomial(N, p̂), so the
    bootstrap's percentile interval is known exactly."""
    n, wins = 2000, 1400
    frame = pd.DataFrame(
        {
            "model_a": ["p"] * n,
            "model_b": ["q"] * n,
            "winner": ["model_a"] * wins + ["model_b"] * (n - wins),
        }
    )
    model = quiet_fit(
        Leaderboard(tie_model="half", interval="bootstrap", n_bootstrap=4000, random_state=0),
        frame,
    )
    board = model.board_
    lo, hi = stats.binom.ppf([0.05, 0.95], n, wins / n) / n
    # p's centred score is half the gap logit(K / N)
    assert board.loc["p", "lower"] == pytest.approx(special.logit(lo) / 2, abs=0.004)
    assert board.loc["p", "upper"] == pytest.approx(special.logit(hi) / 2, abs=0.004)
    # and it agrees with the Laplace sd 1 / sqrt(N p q) of the gap
    laplace_sd = model.utility_.loc["p", "sd"]
    assert laplace_sd == pytest.approx(0.5 / np.sqrt(n * 0.7 * 0.3), rel=1e-6)
    assert board.loc["p", "rank"] == 1 and board.loc["p", "p_rank1"] == 1.0


def test_three_interval_methods_agree_on_a_well_specified_board():
    sim = simulate_battles(8, 6000, random_state=4)
    model = quiet_fit(Leaderboard(n_bootstrap=300, random_state=1), sim.battles)
    widths = {
        method: (lambda t: t["upper"] - t["lower"])(model.intervals(method))
        for method in ("laplace", "sandwich", "bootstrap")
    }
    assert np.all(np.abs(widths["sandwich"] / widths["laplace"] - 1) < 0.1)
    assert np.all(np.abs(widths["bootstrap"] / widths["laplace"] - 1) < 0.2)
    assert list(model.intervals("sandwich").index) == list(model.board_.index)
    with pytest.raises(ValueError, match="method must be one of"):
        model.intervals("jackknife")


@pytest.mark.slow
@pytest.mark.parametrize("interval", ["laplace", "sandwich", "bootstrap"])
def test_intervals_cover_true_scores_and_ranks(interval):
    """90% intervals over 40 simulated boards of 10 close models (ranks genuinely uncertain)."""
    scores, ranks = [], []
    for rep in range(40):
        sim = simulate_battles(10, 2000, score_sd=0.1, random_state=rep)
        model = Leaderboard(interval=interval, n_bootstrap=200, random_state=rep)
        model = quiet_fit(model, sim.battles)
        board = model.board_.reindex(sim.scores.index)
        truth = sim.scores.to_numpy()
        scores.append((board["lower"] <= truth) & (truth <= board["upper"]))
        true_rank = sim.scores.rank(ascending=False).to_numpy()
        ranks.append((board["rank_lower"] <= true_rank) & (true_rank <= board["rank_upper"]))
    assert 0.85 <= np.mean(scores) <= 0.95
    assert 0.85 <= np.mean(ranks) <= 0.95


def test_rank_summaries_are_consistent():
    sim = simulate_battles(6, 1500, score_sd=0.3, random_state=5)
    model = quiet_fit(Leaderboard(random_state=0), sim.battles)
    table = model.rank_probabilities()
    np.testing.assert_allclose(table.sum(axis=1), 1.0)
    np.testing.assert_allclose(table.sum(axis=0), 1.0)
    np.testing.assert_allclose(table[1], model.board_["p_rank1"])
    board = model.board_
    assert (board["rank_lower"] <= board["rank"]).all() and (
        board["rank"] <= board["rank_upper"]
    ).all()
    assert list(board.columns) == [
        "score",
        "lower",
        "upper",
        "rank",
        "rank_lower",
        "rank_upper",
        "p_rank1",
        "battles",
        "win_rate",
    ]
    rates = model.win_rate_matrix()
    both = rates + rates.T
    off = ~np.eye(len(rates), dtype=bool)
    np.testing.assert_allclose(both.to_numpy()[off], 1.0)
    assert board["battles"].sum() == 2 * 1500
    # the first `top` models only (a dense table of every model does not fit 100,000 models)
    pd.testing.assert_frame_equal(model.win_rate_matrix(top=3), rates.iloc[:3, :3])
    pd.testing.assert_frame_equal(model.rank_probabilities(top=3), table.iloc[:3])
    assert list(table.index) == list(board.index)
    with pytest.raises(ValueError, match="top must be a positive integer"):
        model.win_rate_matrix(top=0)


def test_elo_scale_and_anchor():
    sim = simulate_battles(5, 1500, random_state=6)
    logit = quiet_fit(Leaderboard(random_state=0), sim.battles).board_
    elo = quiet_fit(Leaderboard(scale="elo", random_state=0), sim.battles).board_
    np.testing.assert_allclose(elo["score"], 1000 + 400 / np.log(10) * logit["score"])
    anchored = quiet_fit(
        Leaderboard(scale="elo", anchor="model-002", random_state=0), sim.battles
    ).board_
    assert anchored.loc["model-002", ["score", "lower", "upper"]].tolist() == [1000.0] * 3
    gap = anchored["score"] - anchored.loc["model-002", "score"]
    np.testing.assert_allclose(gap, elo["score"] - elo.loc["model-002", "score"])
    with pytest.raises(ValueError, match="anchor 'nope' is not one of the models"):
        Leaderboard(anchor="nope").fit(sim.battles)


# ------------------------------------------------------------------------------ covariates
def test_style_coefficients_are_recovered():
    coef = np.array([0.5, -0.3, 0.2, 0.0])
    sim = simulate_battles(20, 30_000, coef=coef, popularity=1.0, random_state=7)
    names = list(sim.coef.index)
    battles = Battles(sim.battles, covariates=names)
    model = quiet_fit(Leaderboard(random_state=0), battles)
    style = model.style_
    truth = coef * battles.covariate_scale  # per sd of the difference
    assert list(style.index) == names
    assert ((style["lower"] <= truth) & (truth <= style["upper"])).all()
    np.testing.assert_allclose(style["coef"], truth, atol=0.05)
    scores = model.utility_["mean"].reindex(sim.scores.index)
    assert np.corrcoef(scores, sim.scores)[0, 1] > 0.98
    # the same scores without the covariates are worse
    plain = quiet_fit(Leaderboard(), sim.battles[["model_a", "model_b", "winner"]])
    plain_scores = plain.utility_["mean"].reindex(sim.scores.index)
    assert np.abs(scores - sim.scores).mean() < np.abs(plain_scores - sim.scores).mean()
    assert quiet_fit(Leaderboard(), sim.battles).style_.empty


# ------------------------------------------------------------------------------ shrinkage
def test_prior_shrinks_sparse_models_and_they_are_warned():
    sim = simulate_battles(6, 3000, random_state=8)
    rare = pd.DataFrame(
        {
            "model_a": ["rare"] * 4,
            "model_b": ["model-000"] * 4,
            "winner": ["model_a"] * 3 + ["model_b"],
        }
    )
    frame = pd.concat([sim.battles, rare], ignore_index=True)
    with pytest.warns(DataWarning, match=r"1 model\(s\) have fewer than 50 battles: rare"):
        plain = Leaderboard().fit(frame)
    assert plain.sparse_models_ == ["rare"]
    shrunk = quiet_fit(Leaderboard(prior_scale=0.5), frame)
    assert abs(shrunk.utility_.loc["rare", "mean"]) < abs(plain.utility_.loc["rare", "mean"])
    assert shrunk.utility_.loc["rare", "sd"] < plain.utility_.loc["rare", "sd"]


# ------------------------------------------------------------------------------ updates
@pytest.mark.parametrize("covariates", [False, True])
def test_partial_fit_equals_one_fit_on_all_battles(covariates):
    sim = simulate_battles(8, 4000, coef=[0.4] if covariates else [], random_state=9)
    frame = sim.battles
    first, second = frame.iloc[:2000], frame.iloc[2000:].copy()
    second.loc[second.index[:30], "model_b"] = "newcomer"  # a model seen only in the update
    names = list(sim.coef.index)
    whole = pd.concat([first, second])
    # the update keeps the first fit's standardisation of the covariates: compare raw ones
    full = quiet_fit(Leaderboard(), Battles(whole, covariates=names, standardize=False))
    daily = quiet_fit(Leaderboard(), Battles(first, covariates=names, standardize=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        daily.partial_fit(second)
    assert "newcomer" in daily.board_.index
    pd.testing.assert_frame_equal(
        daily.utility_.sort_index(), full.utility_.sort_index(), atol=1e-8, rtol=1e-7
    )
    if covariates:
        np.testing.assert_allclose(daily.style_["coef"], full.style_["coef"], atol=1e-8)


# ------------------------------------------------------------------------------ robustness
def test_influence_matches_refits_and_flips_are_verified():
    sim = simulate_battles(6, 800, score_sd=0.3, random_state=10)
    model = quiet_fit(Leaderboard(), sim.battles)
    problem, mode = model._fitted_problem()
    top, second = model.item_ids_.get_indexer(model.board_.index[:2])
    delta = influence(problem, mode, top, second)
    gap = mode.z[top] - mode.z[second]
    counts = problem.counts.count
    for row in np.argsort(delta)[:5].tolist() + np.argsort(delta)[-5:].tolist():
        removed = np.zeros_like(counts)
        removed[row] = 1
        refit = problem.maximise(mode.z, problem.pair_weights(counts - removed), tol=1e-12)
        actual = (refit.z[top] - refit.z[second]) - gap
        assert actual == pytest.approx(delta[row], rel=0.05, abs=1e-5)
    table = model.robustness(top_k=3)
    assert list(table.columns) == [
        "rank",
        "model_above",
        "model_below",
        "battles_to_flip",
        "verified",
    ]
    assert list(table["model_above"]) == list(model.board_.index[:3])
    assert (table["battles_to_flip"] > 0).all() and table["verified"].all()
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        model.robustness(top_k=0)


# ------------------------------------------------------------------------------ bad input
def test_unconnected_battles_need_a_prior():
    frame = pd.DataFrame(
        {
            "model_a": ["a", "b", "c", "d"],
            "model_b": ["b", "a", "d", "c"],
            "winner": ["model_a"] * 4,
        }
    )
    with pytest.raises(ValueError, match="2 unconnected groups of models.*prior_scale"):
        Leaderboard().fit(frame)
    assert len(quiet_fit(Leaderboard(prior_scale=1.0), frame).board_) == 4


def test_a_model_that_never_loses_is_refused_in_one_line():
    """Infinite maximum-likelihood scores: refused, naming the models, unless a prior."""
    frame = pd.DataFrame(
        {
            "model_a": ["a", "a", "b", "c"],
            "model_b": ["b", "c", "c", "b"],
            "winner": ["model_a", "model_a", "model_a", "model_a"],
        }
    )
    with pytest.raises(ValueError, match=r"^Leaderboard: a never lost .*prior_scale") as err:
        Leaderboard(min_battles=0).fit(frame)
    assert "\n" not in str(err.value)
    board = quiet_fit(Leaderboard(min_battles=0, prior_scale=2.0), frame).board_
    assert board.index[0] == "a" and np.isfinite(board["score"]).all()


def test_bad_problem_for_the_fit_is_one_line():
    with pytest.raises(ValueError, match="winner value"):
        Leaderboard().fit(pd.DataFrame({"model_a": ["a"], "model_b": ["b"], "winner": ["left"]}))


# ------------------------------------------------------------------------------ bootstrap parts
def test_poissonised_multinomial_has_the_multinomial_moments():
    from crowdbayes.models.comparisons._leaderboard_intervals import multinomial_counts

    counts = np.array([5, 100, 3000, 0, 20])
    total = counts.sum()
    p = counts / total
    draws = multinomial_counts(np.random.default_rng(1), counts, 100_000)
    assert (draws.sum(axis=1) == total).all() and (draws[:, 3] == 0).all()
    mean_sd = np.sqrt(total * p * (1 - p) / len(draws))
    assert (np.abs(draws.mean(axis=0) - total * p) <= 4 * mean_sd + 1e-12).all()
    cov = np.cov(draws.T)
    expected = total * (np.diag(p) - np.outer(p, p))
    var = np.diag(expected)
    mc_sd = np.sqrt((np.outer(var, var) + expected**2) / len(draws))  # of a sample covariance
    assert (np.abs(cov - expected) <= 4 * mc_sd + 1e-12).all()


@pytest.mark.parametrize("tie_model", ["half", "davidson"])
def test_batched_replicate_refits_equal_one_at_a_time(tie_model):
    from crowdbayes.models.comparisons._leaderboard_intervals import multinomial_counts

    sim = simulate_battles(10, 3000, random_state=11)
    model = quiet_fit(Leaderboard(tie_model=tie_model), sim.battles)
    problem, mode = model._fitted_problem()
    replicates = multinomial_counts(np.random.default_rng(0), problem.counts.count, 6)
    Z, done = problem.batch_maximise(
        np.tile(mode.z, (6, 1)), problem.batch_weights(replicates.astype(float)), tol=1e-16
    )
    assert done.sum() == 0 or done.all()
    for r in range(6):
        alone = problem.maximise(mode.z, problem.pair_weights(replicates[r]), tol=1e-12)
        np.testing.assert_allclose(Z[r], alone.z, atol=1e-8)


def test_covariate_bootstrap_refits_by_the_chord_method():

    from crowdbayes.models.comparisons._leaderboard_intervals import _chord, multinomial_counts

    sim = simulate_battles(6, 2000, coef=[0.5, -0.2], random_state=12)
    battles = Battles(sim.battles, covariates=list(sim.coef.index))
    model = quiet_fit(Leaderboard(), battles)
    problem, mode = model._fitted_problem()
    count = multinomial_counts(np.random.default_rng(2), problem.counts.count, 1)[0]
    z, ok = _chord(problem, mode.z, count.astype(float), tol=1e-20, max_iter=200)
    alone = problem.maximise(mode.z, problem.pair_weights(count), tol=1e-12)
    assert ok
    np.testing.assert_allclose(z, alone.z, atol=1e-8)
    boot = quiet_fit(Leaderboard(interval="bootstrap", n_bootstrap=50, random_state=0), battles)
    assert (boot.style_["lower"] < boot.style_["coef"]).all()
    assert (boot.style_["coef"] < boot.style_["upper"]).all()


def test_bootstrap_replicates_without_a_finite_fit_are_left_out_and_warned():
    sim = simulate_battles(6, 60, tie_strength=0, random_state=3)
    model = Leaderboard(interval="bootstrap", n_bootstrap=100, random_state=0, min_battles=0)
    with pytest.warns(DataWarning, match=r"of 100 bootstrap replicates have no finite"):
        model.fit(sim.battles)
    assert len(model._draws) < 100
    assert np.isfinite(model.board_[["lower", "upper"]].to_numpy()).all()


@pytest.mark.parametrize(
    "coef, options",
    [((), {}), ((), {"prior_scale": 1.0}), ((0.3, -0.2), {}), ((0.3,), {"tie_model": "half"})],
)
def test_the_sparse_path_gives_the_dense_scores_sds_and_robustness(monkeypatch, coef, options):
    import crowdbayes.models.comparisons.leaderboard as module

    sim = simulate_battles(30, 3000, coef=coef, random_state=21)
    battles = Battles(sim.battles, covariates=list(sim.coef.index) or None)
    dense = quiet_fit(Leaderboard(random_state=0, **options), battles)
    monkeypatch.setattr(module, "SPARSE_MODELS", 0)
    sparse = quiet_fit(Leaderboard(random_state=0, **options), battles)
    assert sparse.sparse_path_ and not dense.sparse_path_ and sparse.variance_error_ == 0.0
    np.testing.assert_allclose(
        sparse.utility_.to_numpy()[:, :2], dense.utility_.to_numpy()[:, :2], atol=1e-8
    )
    np.testing.assert_allclose(sparse.style_["coef"], dense.style_["coef"], atol=1e-8)
    # the covariates' intervals come from their exact covariance block: Monte Carlo apart
    np.testing.assert_allclose(sparse.style_["lower"], dense.style_["lower"], atol=0.02)
    pd.testing.assert_frame_equal(sparse.robustness(2), dense.robustness(2))


@pytest.mark.slow
def test_the_estimated_sparse_variances_are_close_to_the_exact_ones(monkeypatch):
    import crowdbayes.models.comparisons._leaderboard_intervals as intervals
    import crowdbayes.models.comparisons.leaderboard as module

    monkeypatch.setattr(module, "SPARSE_MODELS", 0)
    battles = Battles(simulate_battles(1000, 60_000, random_state=22).battles)
    exact = quiet_fit(Leaderboard(random_state=0, min_battles=0), battles)
    monkeypatch.setattr(intervals, "EXACT_VARIANCE_WORK", 0)
    estimated = quiet_fit(Leaderboard(random_state=0, min_battles=0), battles)
    assert exact.variance_error_ == 0.0 and 0.0 < estimated.variance_error_ < 0.05
    ratio = estimated.utility_["sd"] / exact.utility_["sd"]
    assert np.abs(ratio - 1).max() < 0.03
    assert abs(ratio.mean() - 1) < 0.002  # unbiased
    np.testing.assert_allclose(estimated.utility_["mean"], exact.utility_["mean"], atol=1e-8)


@pytest.mark.parametrize("interval", ["sandwich", "bootstrap"])
def test_the_sparse_path_refuses_dense_intervals_in_one_line(monkeypatch, interval):
    import crowdbayes.models.comparisons.leaderboard as module

    monkeypatch.setattr(module, "SPARSE_MODELS", 3)
    battles = simulate_battles(5, 500, random_state=23).battles
    with pytest.raises(ValueError, match=r"5\); use interval='laplace'$"):
        Leaderboard(interval=interval).fit(battles)
    model = quiet_fit(Leaderboard(), battles)
    with pytest.raises(ValueError, match=f"{interval} intervals need the dense Hessian"):
        model.intervals(interval)


def test_partial_fit_before_fit_is_a_fit():
    sim = simulate_battles(5, 1000, random_state=13)
    first = quiet_fit(Leaderboard(), sim.battles)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        second = Leaderboard().partial_fit(sim.battles)
    pd.testing.assert_frame_equal(first.utility_, second.utility_)


def test_a_loaded_model_gives_the_same_intervals_ranks_and_robustness(tmp_path):
    from crowdbayes import load

    sim = simulate_battles(6, 1500, coef=[0.3], random_state=14)
    battles = Battles(sim.battles, covariates=list(sim.coef.index))
    model = quiet_fit(Leaderboard(random_state=0, interval="sandwich"), battles)
    model.save(tmp_path / "board.npz")
    loaded = load(tmp_path / "board.npz")
    pd.testing.assert_frame_equal(loaded.board_, model.board_)
    pd.testing.assert_frame_equal(loaded.style_, model.style_)
    pd.testing.assert_frame_equal(loaded.intervals("laplace"), model.intervals("laplace"))
    pd.testing.assert_frame_equal(loaded.rank_probabilities(), model.rank_probabilities())
    pd.testing.assert_frame_equal(loaded.win_rate_matrix(), model.win_rate_matrix())
    pd.testing.assert_frame_equal(loaded.robustness(2), model.robustness(2))
    more = simulate_battles(6, 500, coef=[0.3], random_state=15).battles
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded.partial_fit(more)
    assert loaded.n_battles_ == 2000
