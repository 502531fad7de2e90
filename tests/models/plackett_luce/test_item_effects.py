"""PlackettLuceVI(item_effects=True): log s_i = θᵀx_i + u_i, u_i ~ N(0, σ²), σ by the bound."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes import PlackettLuceVI, Rankings
from crowdbayes.models.plackett_luce import variational_bound_fit
from crowdbayes.models.plackett_luce.item_effects import ItemEffectPrior
from crowdbayes.models.plackett_luce.vi import BoundPrior, bound_global_update
from pl_simulate import simulate_tables


def _hidden(seed: int, hidden: int = 2, **options):
    """Rankings whose utility uses ``hidden`` features the model is not given, and the truth."""
    table, features, theta = simulate_tables(seed, **options)
    truth = pd.Series(features.to_numpy() @ theta, index=features.index)
    return Rankings(table, features.iloc[:, : features.shape[1] - hidden]), truth


def _concordance(scores: pd.Series, truth: pd.Series) -> float:
    s, t = scores.reindex(truth.index).to_numpy(), truth.to_numpy()
    upper = np.triu_indices(len(t), 1)
    ds, dt = np.sign(s[:, None] - s[None, :])[upper], np.sign(t[:, None] - t[None, :])[upper]
    return float(np.mean((ds * dt > 0) + 0.5 * (ds == 0)))


def test_sigma_derivative_matches_finite_differences_and_sigma_zero_is_the_features_bound():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    weight, shift = rng.uniform(0, 2, 30), rng.normal(size=30)
    prior = ItemEffectPrior(0.7, X)
    for sigma2 in (0.05, 0.8, 6.0):
        h = 1e-5
        up = prior.posterior(weight, shift, sigma2 * np.exp(h))[3]
        down = prior.posterior(weight, shift, sigma2 * np.exp(-h))[3]
        slope = prior.posterior(weight, shift, sigma2)[4]
        assert slope == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-8)
    stats = {"precision": (X * weight[:, None]).T @ X, "shift": X.T @ shift, "bound": 0.0}
    mean, cov, bound = bound_global_update(stats, BoundPrior.of(0.7, 3))
    found = prior.posterior(weight, shift, 0.0)
    np.testing.assert_allclose(found[0], mean, rtol=1e-10)
    np.testing.assert_allclose(found[1], cov, rtol=1e-10)
    assert found[3] == pytest.approx(bound, rel=1e-12)


def test_informative_features_take_sigma_to_zero_and_give_the_features_fit():
    table, features, _ = simulate_tables(0)  # top choices of 4: Bouchard's bound either way
    rankings = Rankings(table, features)
    plain = PlackettLuceVI(eta=1.0, tol=1e-9).fit(rankings)
    with_effects = PlackettLuceVI(eta=1.0, tol=1e-9, item_effects=True).fit(rankings)
    assert with_effects.sigma_ < 1e-3
    np.testing.assert_allclose(with_effects.coef_, plain.coef_, atol=1e-4)
    assert with_effects.lower_bound_ == pytest.approx(plain.lower_bound_, abs=1e-4)
    assert plain.sigma_ is None and plain.item_effects_ is None


@pytest.mark.parametrize("accelerate", [True, False])
def test_bound_never_decreases_and_sigma_is_the_em_fixed_point(accelerate):
    rankings, _ = _hidden(1, n_queries=300)
    model = PlackettLuceVI(
        eta=1.0, tol=1e-8, max_iter=3000, item_effects=True, accelerate=accelerate
    )
    model.fit(rankings)
    history = np.array(model.bound_history_)
    assert model.converged_
    assert np.all(np.diff(history) >= -1e-9 * np.abs(history[1:]))
    # at an inner maximum σ² = mean of E[u_i²] over the items the rankings show
    effects = model.item_effects_
    assert 0.3 < model.sigma_ < 20
    np.testing.assert_allclose(
        np.mean(effects["mean"] ** 2 + effects["sd"] ** 2), model.sigma_**2, rtol=1e-4
    )


def test_item_effects_rank_by_the_rankings_when_features_are_missing():
    rankings, truth = _hidden(0)
    plain = PlackettLuceVI(eta="auto").fit(rankings)
    effects = PlackettLuceVI(eta="auto", item_effects=True).fit(rankings)
    before = _concordance(plain.predict_utility()["mean"], truth)
    after = _concordance(effects.predict_utility()["mean"], truth)
    assert after > before + 0.1 and after > 0.8


def test_pairs_and_full_rankings_fit():
    table, features, _ = simulate_tables(2, n_ranked=4, n_queries=80)
    model = PlackettLuceVI(eta=1.0, item_effects=True).fit(table, features)
    assert model.converged_ and model.sigma_ is not None
    pairs = Rankings(table, features).pairs().rename(columns={"winner": "left"})
    pairs["right"], pairs["label"] = pairs.pop("loser"), pairs["left"]
    model = PlackettLuceVI(eta=1.0, item_effects=True).fit(Rankings.from_pairs(pairs, features))
    assert model.converged_


def test_new_items_are_scored_by_the_features_with_the_item_effect_variance():
    rankings, _ = _hidden(3)
    model = PlackettLuceVI(eta=1.0, item_effects=True).fit(rankings)
    mu, cov = model.coef_.to_numpy(), model.coef_cov_.to_numpy()
    new = pd.DataFrame([[0.5, -1.0, 2.0]], columns=model.feature_names_, index=["new"])
    x = new.to_numpy()[0]  # on the features' scale, as without item effects
    scored = model.predict_utility(new).loc["new"]
    assert scored["mean"] == pytest.approx(x @ mu)
    assert scored["sd"] ** 2 == pytest.approx(x @ cov @ x + model.sigma_**2)
    # a training item: x_iᵀθ + u_i, u_i as item_effects_ describes it
    item = rankings.item_ids[0]
    row, x0 = model.item_effects_.loc[item], rankings.X[0]
    u_mean = (row["scale"] - 1) * (x0 - model.centre_.to_numpy()) @ mu + row["offset"]
    assert row["mean"] == pytest.approx(u_mean)
    assert model.predict_utility().loc[item, "mean"] == pytest.approx(x0 @ mu + u_mean)


def test_probabilities_are_the_expectation_under_the_draws():
    rankings, _ = _hidden(4, n_queries=200)
    model = PlackettLuceVI(eta=1.0, item_effects=True).fit(rankings)
    names = model.feature_names_
    table = pd.DataFrame(rankings.X[:3], columns=names, index=rankings.item_ids[:3])
    table.loc["new"] = [0.1, 0.2, -0.3]  # not in the rankings
    ids, handle = model._items(table)
    draws = model._draws(handle, 200000, np.random.default_rng(0))
    left, right = [0, 1, 3], [1, 2, 0]
    p = model.predict_proba(ids[left], ids[right], table)
    expected = (1 / (1 + np.exp(-(draws[left] - draws[right])))).mean(axis=1)
    np.testing.assert_allclose(p, expected, atol=3e-3)


def test_refusals_name_the_problem():
    rankings, _ = _hidden(5, n_queries=50)
    with pytest.raises(ValueError, match="item_effects=True needs method='bound'"):
        PlackettLuceVI(item_effects=True, method="gaussian").fit(rankings)
    with pytest.raises(ValueError, match="item_effects=True is in-memory only"):
        PlackettLuceVI(item_effects=True).check_bound_params()
    with pytest.raises(ValueError, match="prior_mean not supported"):
        variational_bound_fit(
            rankings, rankings.X, eta=1.0, prior_mean=np.ones(3), item_effects=True
        )


def test_auto_adds_item_effects_to_sets_of_three_or_more_with_the_bound_only():
    top, features, _ = simulate_tables(6, n_queries=60)
    full, _, _ = simulate_tables(6, n_queries=60, n_ranked=4)  # its last stages are pairs
    fitted = PlackettLuceVI(eta=1.0, item_effects="auto").fit(top, features)
    assert fitted.item_effects_ is not None
    assert PlackettLuceVI(eta=1.0, item_effects="auto").fit(full, features).item_effects_ is None
    gaussian = PlackettLuceVI(eta=1.0, item_effects="auto", method="gaussian", n_draws=8)
    assert gaussian.fit(top, features).item_effects_ is None


def test_posterior_draws_are_the_features_draws_without_item_effects_and_add_u_with_them():
    table, features, _ = simulate_tables(7, n_queries=100)
    plain = PlackettLuceVI(eta=1.0).fit(table, features)
    rows = features.iloc[[3, 5, 7]]
    draws = plain.posterior_draws(rows, 40, np.random.default_rng(1))
    thetas = np.random.default_rng(1).multivariate_normal(
        plain.coef_.to_numpy(), plain.coef_cov_.to_numpy(), size=40, method="cholesky"
    )
    np.testing.assert_array_equal(draws, rows.to_numpy() @ thetas.T)
    rankings, _ = _hidden(7)
    effects = PlackettLuceVI(eta=1.0, item_effects=True).fit(rankings)
    draws = effects.posterior_draws(None, 40000, np.random.default_rng(2))
    scored = effects.predict_utility()
    np.testing.assert_allclose(draws.mean(axis=1), scored["mean"], atol=0.05 * effects.sigma_)
    np.testing.assert_allclose(draws.std(axis=1), scored["sd"], rtol=0.03)
