"""Plackett–Luce models: bounds, the variational algorithm, baselines, predictions, persistence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_expit, logsumexp

from crowdbayes import (
    NotFittedError,
    PlackettLuceGibbs,
    PlackettLuceMAP,
    PlackettLuceMM,
    PlackettLuceVI,
    Rankings,
    load,
)
from crowdbayes.models.plackett_luce import variational_bound_fit
from crowdbayes.models.plackett_luce._base import logistic_gaussian_mean
from crowdbayes.models.plackett_luce._bounds import (
    jj_lambda,
    jj_lambda_derivative,
    pair_log_bound,
    softmax_log_bound,
)
from crowdbayes.models.plackett_luce._stages import stage_log_proba
from pl_simulate import simulate_rankings, simulate_tables


# -- Lemma 1 --------------------------------------------------------------------------------------
def test_pair_bound_never_exceeds_log_sigmoid_and_is_tight_at_zeta():
    rng = np.random.default_rng(0)
    margin = rng.normal(scale=4, size=20000)
    zeta = np.abs(rng.normal(scale=4, size=20000))
    assert np.all(pair_log_bound(margin, zeta) <= log_expit(margin) + 1e-12)
    np.testing.assert_allclose(pair_log_bound(margin, np.abs(margin)), log_expit(margin), atol=1e-9)


def test_softmax_bound_never_exceeds_log_probability():
    rng = np.random.default_rng(1)
    for _ in range(3000):
        m = rng.integers(3, 9)
        u = rng.normal(scale=rng.uniform(0.1, 5), size=m)
        alpha = rng.normal(scale=3)
        xi = np.abs(rng.normal(scale=3, size=m))
        c = rng.integers(m)
        assert softmax_log_bound(u, c, alpha, xi) <= u[c] - logsumexp(u) + 1e-10


def test_lambda_and_its_derivative():
    xi = np.array([0.0, 1e-8, 1e-4, 0.5, 3.0, 40.0])
    assert jj_lambda(0.0) == pytest.approx(0.125)
    np.testing.assert_allclose(jj_lambda(xi[1:]), np.tanh(xi[1:] / 2) / (4 * xi[1:]), rtol=1e-12)
    h = 1e-6
    grid = np.array([0.01, 0.5, 3.0, 10.0])
    numeric = (jj_lambda(grid + h) - jj_lambda(grid - h)) / (2 * h)
    np.testing.assert_allclose(jj_lambda_derivative(grid), numeric, rtol=1e-5, atol=1e-10)


# -- Algorithm 1 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("set_size, n_ranked", [(2, 1), (4, 1), (5, 3)])
def test_lower_bound_never_decreases(set_size, n_ranked):
    rankings, _ = simulate_rankings(2, set_size=set_size, n_ranked=n_ranked, n_queries=150)
    model = PlackettLuceVI(eta=0.5, tol=1e-9, max_iter=400).fit(rankings)
    history = np.array(model.bound_history_)
    assert np.all(np.diff(history) >= -1e-8 * np.abs(history[1:]))
    assert model.converged_


def test_bound_is_below_the_log_evidence():
    """L̄ ≤ log p(D | η), the evidence computed by quadrature in one dimension."""
    rankings, _ = simulate_rankings(3, n_features=1, set_size=3, n_queries=40, scale=0.8)
    eta = 2.0
    model = PlackettLuceVI(eta=eta, tol=1e-10).fit(rankings)
    grid = np.linspace(-8, 8, 20001)
    X = rankings.X[:, 0]
    members = X[rankings.stage_items][:, None] * grid[None, :]

    log_lik = stage_log_proba(members, rankings.stage_offsets).sum(axis=0)
    log_prior = -0.5 * eta * grid**2 + 0.5 * np.log(eta / (2 * np.pi))
    log_evidence = logsumexp(log_lik + log_prior) + np.log(grid[1] - grid[0])
    assert model.lower_bound_ <= log_evidence
    # Bouchard's bound is loose for sets of three (about 0.7 nats per top-query here)
    assert model.lower_bound_ > log_evidence - rankings.n_stages


def _jaakkola_jordan_logistic(D: np.ndarray, eta: float, n_iter: int = 500):
    """Textbook variational Bayesian logistic regression (Bishop 2006, §10.6) on rows D with all
    labels 1."""
    d = D.shape[1]
    xi = np.ones(len(D))
    for _ in range(n_iter):
        lam = np.tanh(xi / 2) / (4 * xi)
        precision = eta * np.eye(d) + 2 * (D * lam[:, None]).T @ D
        cov = np.linalg.inv(precision)
        mean = cov @ (D.sum(axis=0) / 2)
        xi = np.sqrt(np.einsum("ld,de,le->l", D, cov + np.outer(mean, mean), D))
    return mean, cov


def test_pairs_coincide_with_jaakkola_jordan_logistic_vi():
    rankings, _ = simulate_rankings(4, set_size=2, n_queries=300)
    model = PlackettLuceVI(eta=1.5, tol=1e-12, max_iter=2000).fit(rankings)
    starts = rankings.stage_offsets[:-1]
    D = rankings.X[rankings.stage_items[starts]] - rankings.X[rankings.stage_items[starts + 1]]
    mean, cov = _jaakkola_jordan_logistic(D, 1.5)
    np.testing.assert_allclose(model.coef_.to_numpy(), mean, atol=1e-8)
    np.testing.assert_allclose(model.coef_cov_.to_numpy(), cov, atol=1e-8)


def test_centring_tightens_the_set_bound_and_leaves_pairs_unchanged():
    """Eq. 3 ignores a shift of every feature vector, and so does the centred fit; the paper's
    bound on sets of three or more does not, and centring makes it tighter (higher L̄)."""
    table, features, _ = simulate_tables(9, set_size=4, n_queries=200)
    shifted = features.copy()
    shifted[shifted.columns[1:]] += 5.0

    def fit(items, centre, data=table):
        return PlackettLuceVI(eta=1.0, tol=1e-10, centre=centre).fit(Rankings(data, items))

    centred, moved = fit(features, True), fit(shifted, True)
    np.testing.assert_allclose(moved.coef_, centred.coef_, atol=1e-8)
    np.testing.assert_allclose(moved.coef_cov_, centred.coef_cov_, atol=1e-8)
    assert moved.lower_bound_ == pytest.approx(centred.lower_bound_, rel=1e-10)
    assert moved.lower_bound_ > fit(shifted, False).lower_bound_ + 1.0

    pairs, pair_features, _ = simulate_tables(10, set_size=2, n_queries=200)
    pair_features[pair_features.columns[0]] += 5.0
    np.testing.assert_allclose(
        fit(pair_features, True, pairs).coef_cov_, fit(pair_features, False, pairs).coef_cov_
    )


def test_newton_and_the_papers_alternation_reach_the_same_posterior():
    rankings, _ = simulate_rankings(5, set_size=5, n_ranked=2, n_queries=200)
    fits = [
        variational_bound_fit(rankings, rankings.X, eta=1.0, tol=1e-10, inner=inner)
        for inner in ("newton", "alternate")
    ]
    np.testing.assert_allclose(fits[0].mean, fits[1].mean, atol=1e-7)
    np.testing.assert_allclose(fits[0].cov, fits[1].cov, atol=1e-8)
    assert fits[0].lower_bound == pytest.approx(fits[1].lower_bound, rel=1e-9)


def test_eta_auto_picks_the_bound_maximum():
    rankings, _ = simulate_rankings(6, set_size=3, n_queries=200)
    model = PlackettLuceVI(eta="auto", eta_grid=[0.01, 0.1, 1.0, 10.0, 100.0]).fit(rankings)
    curve = model.eta_curve_
    assert list(curve.columns) == ["eta", "lower_bound", "n_iter", "converged"]
    assert model.eta_ == curve.loc[curve["lower_bound"].idxmax(), "eta"]
    assert model.lower_bound_ == pytest.approx(curve["lower_bound"].max())


@pytest.mark.parametrize("seed, set_size", [(0, 2), (1, 3), (2, 5), (3, 3)])
def test_eta_auto_stops_past_the_best_with_the_whole_grids_choice(monkeypatch, seed, set_size):
    """The descent stops ETA_PATIENCE values after the best ceiling without a better one, and
    picks the η (and the fit) that the whole grid does."""
    from crowdbayes.models.plackett_luce import vi

    rankings, _ = simulate_rankings(seed, set_size=set_size, n_queries=200)
    stopped, patience = PlackettLuceVI(eta="auto").fit(rankings), vi.ETA_PATIENCE
    monkeypatch.setattr(vi, "ETA_PATIENCE", 10**6)
    whole = PlackettLuceVI(eta="auto").fit(rankings)
    assert len(whole.eta_curve_) == len(vi.DEFAULT_ETA_GRID)
    best = int(np.flatnonzero(np.isclose(np.sort(vi.DEFAULT_ETA_GRID)[::-1], stopped.eta_))[0])
    assert len(stopped.eta_curve_) == min(len(vi.DEFAULT_ETA_GRID), best + 1 + patience)
    assert stopped.eta_ == whole.eta_
    np.testing.assert_allclose(stopped.coef_.to_numpy(), whole.coef_.to_numpy(), rtol=1e-12)


def test_pairwise_intervals_cover_the_truth_at_about_their_level():
    """Moderate signal, pairs: the Jaakkola–Jordan posterior is calibrated. (With larger sets
    Bouchard's bound inflates θ; the coverage there is measured in the benchmarks.)"""
    covered = []
    for seed in range(12):
        rankings, theta = simulate_rankings(
            100 + seed, n_features=10, n_items=200, n_queries=1500, set_size=2, scale=0.2
        )
        interval = PlackettLuceVI(eta=1 / 0.2**2).fit(rankings).coef_interval(0.9)
        covered.append((interval["lower"] < theta) & (theta < interval["upper"]))
    assert 0.85 <= np.mean(covered) <= 0.95


@pytest.mark.slow
@pytest.mark.parametrize("set_size, scale", [(5, 1.0), (4, 0.3), (2, 1.0)])
def test_gaussian_method_intervals_cover_the_truth_for_any_set_size(set_size, scale):
    """Exact-ELBO Gaussian VI is calibrated where Bouchard's bound is not (sets of 3+)."""
    covered = []
    for seed in range(8):
        rankings, theta = simulate_rankings(
            200 + seed, n_features=10, n_items=200, n_queries=800, set_size=set_size, scale=scale
        )
        model = PlackettLuceVI(eta=1 / scale**2, method="gaussian").fit(rankings)
        interval = model.coef_interval(0.9)
        covered.append((interval["lower"] < theta) & (theta < interval["upper"]))
    assert 0.85 <= np.mean(covered) <= 0.95


def test_gaussian_method_matches_the_exact_posterior_in_one_dimension():
    rankings, _ = simulate_rankings(15, n_features=1, set_size=4, n_queries=60, scale=0.8)
    eta = 1.0
    model = PlackettLuceVI(eta=eta, method="gaussian", n_draws=400).fit(rankings)
    grid = np.linspace(-6, 6, 24001)
    members = rankings.X[rankings.stage_items, 0][:, None] * grid[None, :]
    log_post = stage_log_proba(members, rankings.stage_offsets).sum(axis=0) - eta * grid**2 / 2
    weights = np.exp(log_post - log_post.max())
    weights /= weights.sum()
    mean = weights @ grid
    sd = np.sqrt(weights @ (grid - mean) ** 2)
    assert model.coef_.iloc[0] == pytest.approx(mean, abs=0.05 * sd)
    assert model.coef_sd_.iloc[0] == pytest.approx(sd, rel=0.05)


def test_vi_and_map_agree_on_the_direction_and_map_recovers_theta():
    rankings, theta = simulate_rankings(7, n_queries=2000, set_size=4)
    map_fit = PlackettLuceMAP(eta=1.0).fit(rankings)
    vi_fit = PlackettLuceVI(eta=1.0).fit(rankings)
    np.testing.assert_allclose(map_fit.coef_.to_numpy(), theta, atol=0.15)
    vi_mean, map_mean = vi_fit.coef_.to_numpy(), map_fit.coef_.to_numpy()
    cosine = vi_mean @ map_mean / np.linalg.norm(vi_mean) / np.linalg.norm(map_mean)
    assert cosine > 0.99


def test_map_gradient_matches_finite_differences():
    from crowdbayes.models.plackett_luce.map import map_objective

    rankings, _ = simulate_rankings(8, set_size=4, n_queries=50)
    theta = np.random.default_rng(0).normal(size=rankings.X.shape[1])
    _, gradient = map_objective(theta, rankings, rankings.X, 0.7)
    h = 1e-6
    numeric = [
        (
            map_objective(theta + h * e, rankings, rankings.X, 0.7)[0]
            - map_objective(theta - h * e, rankings, rankings.X, 0.7)[0]
        )
        / (2 * h)
        for e in np.eye(len(theta))
    ]
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-6)


# -- feature-less models --------------------------------------------------------------------------
def _pairwise(seed: int, n_items: int = 25, n_pairs: int = 1500):
    rng = np.random.default_rng(seed)
    strength = rng.normal(size=n_items)
    pairs = []
    for _ in range(n_pairs):
        i, j = rng.choice(n_items, 2, replace=False)
        won = rng.random() < 1 / (1 + np.exp(strength[j] - strength[i]))
        pairs.append((i, j) if won else (j, i))
    table = pd.DataFrame(pairs, columns=["left", "right"])
    table["label"] = table["left"]
    return table, pairs


def test_mm_agrees_with_choix():
    choix = pytest.importorskip("choix")
    table, pairs = _pairwise(0)
    model = PlackettLuceMM(tol=1e-13).fit(Rankings.from_pairs(table))
    reference = choix.mm_pairwise(25, pairs, alpha=0.0, max_iter=100000, tol=1e-13)
    ours = model.log_scores_.reindex(range(25)).to_numpy()
    np.testing.assert_allclose(ours, reference - reference.mean(), atol=1e-6)


def test_mm_on_rankings_agrees_with_choix():
    choix = pytest.importorskip("choix")
    rng = np.random.default_rng(1)
    strength = rng.normal(size=15)
    data = [tuple(rng.permutation(15)[:5]) for _ in range(400)]
    data = [tuple(sorted(s, key=lambda i: -(strength[i] + rng.gumbel()))) for s in data]
    rows = [(q, item, r + 1) for q, order in enumerate(data) for r, item in enumerate(order)]
    table = pd.DataFrame(rows, columns=["query", "item", "rank"])
    model = PlackettLuceMM(tol=1e-13).fit(Rankings(table))
    reference = choix.mm_rankings(15, data, alpha=0.0, max_iter=100000, tol=1e-13)
    ours = model.log_scores_.reindex(range(15)).to_numpy()
    np.testing.assert_allclose(ours, reference - reference.mean(), atol=1e-6)


def _ranking_table(seed: int, n_items: int = 15, n_queries: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strength = rng.normal(size=n_items)
    rows = []
    for q in range(n_queries):
        shown = rng.permutation(n_items)[:5]
        order = sorted(shown, key=lambda i: -(strength[i] + rng.gumbel()))
        rows += [(q, item, r + 1.0 if r < 2 else np.nan) for r, item in enumerate(order)]
    return pd.DataFrame(rows, columns=["query", "item", "rank"])


def test_squarem_reaches_the_plain_mm_fixed_point():
    rankings = Rankings(_ranking_table(4))
    fast = PlackettLuceMM(shape=2.0, rate=1.0, tol=1e-12).fit(rankings)
    plain = PlackettLuceMM(shape=2.0, rate=1.0, tol=1e-12, accelerate=False).fit(rankings)
    np.testing.assert_allclose(fast.scores_, plain.scores_, rtol=1e-8)
    assert fast.n_iter_ * 3 < plain.n_iter_


def test_gibbs_on_partial_rankings_centres_on_the_map_scores():
    rankings = Rankings(_ranking_table(5, n_queries=1500))
    gibbs = PlackettLuceGibbs(rate=1.0, n_samples=800, random_state=1).fit(rankings)
    mm = PlackettLuceMM().fit(rankings)
    np.testing.assert_allclose(gibbs.log_scores_, mm.log_scores_, atol=0.06)


def test_mm_refuses_data_without_a_maximum_likelihood():
    table = pd.DataFrame({"left": ["a", "a"], "right": ["b", "c"], "label": ["a", "a"]})
    with pytest.raises(ValueError, match="never wins .*use a Gamma prior"):
        PlackettLuceMM().fit(Rankings.from_pairs(table))
    PlackettLuceMM(shape=2.0, rate=1.0).fit(Rankings.from_pairs(table))


def test_gibbs_and_vi_posterior_means_agree():
    """One-hot features make VI a model of per-item log-scores; with plenty of data the Gamma
    and Gaussian priors matter little and the centred posterior means agree."""
    table, _ = _pairwise(2, n_items=15, n_pairs=3000)
    rankings = Rankings.from_pairs(table)
    gibbs = PlackettLuceGibbs(rate=1.0, n_samples=1500, random_state=0).fit(rankings)
    onehot = pd.DataFrame(np.eye(15), index=rankings.item_ids).add_prefix("item")
    vi = PlackettLuceVI(eta=0.6).fit(Rankings.from_pairs(table, onehot))
    vi_centred = vi.coef_.to_numpy() - vi.coef_.mean()
    assert gibbs.summary_["rhat"].max() < 1.05
    np.testing.assert_allclose(vi_centred, gibbs.log_scores_.to_numpy(), atol=0.08)


def test_gibbs_is_reproducible_with_a_seed():
    table, _ = _pairwise(3, n_items=8, n_pairs=200)
    rankings = Rankings.from_pairs(table)
    a = PlackettLuceGibbs(n_samples=50, n_warmup=10, random_state=5).fit(rankings).samples_
    b = PlackettLuceGibbs(n_samples=50, n_warmup=10, random_state=5).fit(rankings).samples_
    np.testing.assert_array_equal(a, b)


def test_gibbs_chains_in_processes_give_the_same_draws():
    """Each chain has its own generator: one process or two (three chains), the same draws."""
    table, _ = _pairwise(4, n_items=8, n_pairs=200)
    rankings = Rankings.from_pairs(table)
    options = dict(n_samples=40, n_warmup=10, n_chains=3, random_state=2)
    alone = PlackettLuceGibbs(n_jobs=1, **options).fit(rankings).samples_
    forked = PlackettLuceGibbs(n_jobs=2, **options).fit(rankings).samples_
    np.testing.assert_array_equal(alone, forked)
    assert not np.array_equal(alone[0], alone[1])  # the chains are not copies


# -- predictions ----------------------------------------------------------------------------------
def test_logistic_gaussian_mean_matches_monte_carlo():
    rng = np.random.default_rng(0)
    mean, var = np.array([-3.0, 0.0, 0.4, 2.5]), np.array([0.0, 4.0, 0.3, 9.0])
    draws = mean[:, None] + np.sqrt(var)[:, None] * rng.standard_normal((4, 400000))
    np.testing.assert_allclose(
        logistic_gaussian_mean(mean, var), (1 / (1 + np.exp(-draws))).mean(axis=1), atol=2e-3
    )


def test_predict_proba_is_the_posterior_expectation():
    rankings, _ = simulate_rankings(9, n_queries=100)
    model = PlackettLuceVI(eta=1.0).fit(rankings)
    left, right = rankings.item_ids[:5], rankings.item_ids[5:10]
    p = model.predict_proba(left, right)
    draws = model._draws(model._items(None)[1], 100000, np.random.default_rng(0))
    codes_l = rankings.item_ids.get_indexer(left)
    codes_r = rankings.item_ids.get_indexer(right)
    expected = (1 / (1 + np.exp(-(draws[codes_l] - draws[codes_r])))).mean(axis=1)
    np.testing.assert_allclose(p, expected, atol=3e-3)
    np.testing.assert_allclose(model.predict_proba(right, left), 1 - p, atol=1e-12)


def test_rank_summary_and_scores():
    rankings, theta = simulate_rankings(10, n_queries=600)
    model = PlackettLuceVI(eta=1.0).fit(rankings)
    table = model.rank(k=5, random_state=0)
    assert list(table.columns) == [
        "score_mean",
        "score_sd",
        "position_mean",
        "position_lower",
        "position_upper",
        "p_top_k",
        "top_k",
    ]
    assert table["top_k"].sum() == 5 and len(table) == rankings.n_items
    assert (table["position_lower"] <= table["position_upper"]).all()
    assert table["position_mean"].between(1, rankings.n_items).all()
    assert table["position_mean"].is_monotonic_increasing
    assert table["p_top_k"].sum() == pytest.approx(5.0)
    truth = pd.Series(rankings.X @ theta, index=rankings.item_ids)
    assert truth[table.index[:5]].min() > truth.quantile(0.8)
    scores = model.predict_utility()
    np.testing.assert_allclose(scores["mean"], rankings.X @ model.coef_.to_numpy())


def test_many_new_items_are_scored_without_their_full_covariance():
    """score() and predict_proba() over a large item table equal the brute-force moments
    (x_i' Σ x_i; the difference's mean and variance) while never forming the items × items
    covariance (the README check: 2 pairs among 27,924 cars built a 6 GB matrix)."""
    import crowdbayes.models.plackett_luce._base as base

    rankings, _ = simulate_rankings(12, n_queries=100)
    model = PlackettLuceVI(eta=1.0).fit(rankings)
    rng = np.random.default_rng(0)
    n = 2 * base._BLOCK + 7  # three blocks, the last a short one
    X = rng.normal(size=(n, 5))
    items = pd.DataFrame(X, columns=[f"x{j}" for j in range(5)], index=[f"i{k}" for k in range(n)])
    mu, cov = model.coef_.to_numpy(), model.coef_cov_.to_numpy()
    scores = model.predict_utility(items)
    np.testing.assert_allclose(scores["mean"], X @ mu)
    np.testing.assert_allclose(scores["sd"], np.sqrt(np.einsum("ij,jk,ik->i", X, cov, X)))
    shapes = []
    moments = type(model)._moments
    model._moments = lambda handle: (shapes.append(handle.shape), moments(model, handle))[1]
    left, right = ["i3", "i4000", "i3"], ["i17", "i3", "i4102"]
    p = model.predict_proba(left, right, items=items)
    assert shapes == [(4, 5)]  # the four items asked about
    diff = items.loc[left].to_numpy() - items.loc[right].to_numpy()
    expected = logistic_gaussian_mean(diff @ mu, np.einsum("ij,jk,ik->i", diff, cov, diff))
    np.testing.assert_allclose(p, expected, rtol=1e-10)


def test_new_items_are_scored_from_their_features():
    rankings, _ = simulate_rankings(11, n_queries=100)
    model = PlackettLuceMAP().fit(rankings)
    new = pd.DataFrame({"x0": [1.0], "x1": [0], "x2": [0], "x3": [0], "x4": [0]}, index=["new"])
    assert model.predict_utility(new).loc["new", "mean"] == pytest.approx(model.coef_["x0"])
    with pytest.raises(ValueError, match=r"missing feature column\(s\) \['x4'\]"):
        model.predict_utility(new.drop(columns="x4"))


def test_choice_log_proba_of_a_point_estimate_is_the_softmax():
    rankings, _ = simulate_rankings(12, n_queries=50, set_size=3)
    model = PlackettLuceMAP().fit(rankings)
    u = rankings.X @ model.coef_.to_numpy()
    first = u[rankings.stage_items[:3]]
    assert model.choice_log_proba(rankings)[0] == pytest.approx(first[0] - logsumexp(first))


# -- contract and persistence ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "model",
    [PlackettLuceVI(), PlackettLuceMAP(), PlackettLuceMM(), PlackettLuceGibbs(n_samples=20)],
)
def test_not_fitted(model):
    with pytest.raises(NotFittedError):
        model.predict_utility()


def test_feature_models_need_features():
    rankings, _ = simulate_rankings(13, n_queries=20)
    bare = Rankings(
        pd.DataFrame({"query": [1, 1], "item": ["a", "b"], "rank": [1, 2]}),
    )
    with pytest.raises(ValueError, match="PlackettLuceVI needs item features"):
        PlackettLuceVI().fit(bare)


@pytest.mark.parametrize(
    "model, with_features",
    [
        (PlackettLuceVI(eta=0.5), True),
        (PlackettLuceVI(eta=0.5, item_effects=True), True),
        (PlackettLuceMAP(eta=0.5), True),
        (PlackettLuceMM(shape=2.0, rate=1.0), False),
        (PlackettLuceGibbs(n_samples=30, n_warmup=5, random_state=1), False),
    ],
)
def test_save_and_load_round_trip(tmp_path, model, with_features):
    rankings, _ = simulate_rankings(14, n_queries=80)
    model.fit(rankings if with_features else Rankings(_long(rankings)))
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = load(path)
    assert type(loaded) is type(model)
    ids = model.predict_utility().index[:4]
    np.testing.assert_allclose(
        loaded.predict_proba(ids[:2], ids[2:4]), model.predict_proba(ids[:2], ids[2:4])
    )
    with np.load(path, allow_pickle=False) as archive:  # the safe format needs no pickle
        assert "__header__" in archive.files


def _long(rankings: Rankings) -> pd.DataFrame:
    pairs = rankings.pairs()
    return pd.DataFrame(
        {
            "query": np.repeat(np.arange(len(pairs)), 2),
            "item": np.column_stack([pairs["winner"], pairs["loser"]]).ravel(),
            "rank": np.tile([1.0, 2.0], len(pairs)),
        }
    )


def test_load_refuses_other_files(tmp_path):
    path = tmp_path / "x.npz"
    np.savez(path, a=np.arange(3))
    with pytest.raises(ValueError, match="not a crowdbayes model file"):
        load(path)


@pytest.mark.parametrize("decimals", [0, 1, None])
def test_draw_positions_equal_a_stable_sort(decimals):
    from crowdbayes.models.plackett_luce._base import draw_positions

    draws = np.random.default_rng(3).standard_normal((300, 40))
    if decimals is not None:  # many ties, and two items tied in every draw
        draws = np.round(draws, decimals)
        draws[7] = draws[2]
    order = np.argsort(-draws, axis=0, kind="stable")
    expected = np.empty_like(order)
    np.put_along_axis(expected, order, np.arange(1, len(draws) + 1)[:, None], axis=0)
    np.testing.assert_array_equal(draw_positions(draws), expected)


def test_accelerated_and_plain_bound_iterations_agree():
    rankings, _ = simulate_rankings(4, set_size=4, n_ranked=2, n_queries=200)
    plain = PlackettLuceVI(eta=0.3, tol=1e-10, max_iter=2000, accelerate=False).fit(rankings)
    fast = PlackettLuceVI(eta=0.3, tol=1e-10, max_iter=2000).fit(rankings)
    assert fast.converged_ and plain.converged_
    assert fast.lower_bound_ == pytest.approx(plain.lower_bound_, rel=1e-10)
    np.testing.assert_allclose(fast.coef_, plain.coef_, atol=1e-7)
    np.testing.assert_allclose(fast.coef_cov_, plain.coef_cov_, atol=1e-9)
    assert 3 * fast.n_iter_ < plain.n_iter_
