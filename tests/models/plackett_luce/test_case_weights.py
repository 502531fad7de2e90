"""Case weights in Plackett–Luce: a query of weight k counts as k copies of it."""

import numpy as np
import pandas as pd
import pytest

from crowdbayes import PlackettLuceMAP, PlackettLuceVI, Rankings


def _choices(
    seed: int, n_queries: int = 60, n_items: int = 12, d: int = 3, sizes=(2, 3, 4), missed=0.0
):
    """Top-1 choices (and a few full rankings) among random sets of items with features;
    ``missed``: the sd of a utility per item that the features do not explain."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_items, d))
    theta = rng.normal(size=d)
    own = missed * rng.normal(size=n_items)
    rows = []
    for q in range(n_queries):
        size = int(rng.choice(sizes))
        members = rng.choice(n_items, size, replace=False)
        order = members[np.argsort(-(X[members] @ theta + own[members] + rng.gumbel(size=size)))]
        ranked = size if q % 5 == 0 else 1  # every fifth query a full ranking
        for position, item in enumerate(order):
            rank = position + 1 if position < ranked else np.nan
            rows.append((f"q{q}", f"i{item}", rank))
    table = pd.DataFrame(rows, columns=["query", "item", "rank"])
    items = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)]).assign(
        item=[f"i{i}" for i in range(n_items)]
    )
    return table, items


def _replicated(table: pd.DataFrame, copies: dict) -> pd.DataFrame:
    """Every query ``copies[q]`` times over, as distinct queries."""
    parts = [
        table[table["query"] == q].assign(query=f"{q}#{k}")
        for q, n in copies.items()
        for k in range(n)
    ]
    return pd.concat(parts, ignore_index=True)


@pytest.mark.parametrize(
    "params",
    [
        {"eta": 1.0},
        {"eta": "auto", "eta_grid": (0.3, 1.0, 3.0)},
        {"eta": 1.0, "method": "gaussian", "n_draws": 16},
        {"eta": 1.0, "item_effects": True},
    ],
    ids=["bound", "auto", "gaussian", "item-effects"],
)
def test_integer_weights_equal_copies(params):
    """Whole-number weights give the fit of the data with each query repeated that often:
    the same posterior, bound and η (every top-query's term is multiplied by its weight)."""
    table, items = _choices(0)
    rng = np.random.default_rng(1)
    queries = table["query"].unique()
    copies = dict(zip(queries, rng.integers(1, 4, len(queries)).tolist(), strict=True))
    weighted = table.assign(weight=table["query"].map(copies))
    a = PlackettLuceVI(**params).fit(Rankings(weighted, items, weight="weight"))
    b = PlackettLuceVI(**params).fit(Rankings(_replicated(table, copies), items))
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(a.coef_cov_, b.coef_cov_, rtol=1e-5, atol=1e-8)
    assert a.eta_ == b.eta_
    if params.get("method") != "gaussian":
        assert a.lower_bound_ == pytest.approx(b.lower_bound_, rel=1e-7)


def test_integer_weights_equal_copies_with_item_effects_the_features_miss():
    """Item effects that the bound keeps (σ well above its floor), so that the level move of
    every α runs with weights."""
    table, items = _choices(0, n_queries=80, d=2, sizes=(3, 4), missed=2.0)
    queries = table["query"].unique()
    copies = dict(zip(queries, np.random.default_rng(1).integers(1, 4, len(queries)).tolist(),
                      strict=True))  # fmt: skip
    weighted = table.assign(weight=table["query"].map(copies))
    a = PlackettLuceVI(eta=1.0, item_effects=True).fit(Rankings(weighted, items, weight="weight"))
    b = PlackettLuceVI(eta=1.0, item_effects=True).fit(Rankings(_replicated(table, copies), items))
    assert a.sigma_ > 0.5 and a.sigma_ == pytest.approx(b.sigma_, rel=1e-6)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        a.item_effects_["mean"], b.item_effects_["mean"].loc[a.item_effects_.index], atol=1e-6
    )


def test_unit_weights_change_nothing():
    table, items = _choices(2)
    plain = PlackettLuceVI(eta=1.0).fit(Rankings(table, items))
    ones = PlackettLuceVI(eta=1.0).fit(Rankings(table.assign(weight=1.0), items, weight="weight"))
    np.testing.assert_array_equal(plain.coef_, ones.coef_)
    np.testing.assert_array_equal(plain.coef_cov_, ones.coef_cov_)


def test_fractional_weights_weigh_less():
    """Weights below one are less evidence: the posterior is wider and nearer the prior."""
    table, items = _choices(3)
    full = PlackettLuceVI(eta=1.0).fit(Rankings(table, items))
    half = PlackettLuceVI(eta=1.0).fit(Rankings(table.assign(w=0.5), items, weight="w"))
    assert np.trace(half.coef_cov_) > 1.5 * np.trace(full.coef_cov_)
    assert np.linalg.norm(half.coef_) < np.linalg.norm(full.coef_)


def test_bad_weights_are_refused():
    table, items = _choices(4)
    with pytest.raises(ValueError, match="no column 'w'"):
        Rankings(table, items, weight="w")
    bad = table.assign(weight=1.0)
    bad.loc[3, "weight"] = 0.0
    with pytest.raises(
        ValueError, match=r"must hold positive numbers: 1 row\(s\) do not \(first: row"
    ):
        Rankings(bad, items, weight="weight")
    text = table.assign(weight="heavy")
    with pytest.raises(ValueError, match="must hold positive numbers.*'heavy'"):
        Rankings(text, items, weight="weight")
    with pytest.raises(ValueError, match="true/false"):
        Rankings(table.assign(weight=True), items, weight="weight")
    mixed = table.assign(weight=1.0)
    mixed.loc[mixed.index[1], "weight"] = 2.0  # a row of q0, whose first row has 1
    with pytest.raises(ValueError, match="query 'q0' has more than one 'weight'"):
        Rankings(mixed, items, weight="weight")


def test_a_model_without_weights_refuses_them():
    table, items = _choices(5)
    rankings = Rankings(table.assign(weight=2.0), items, weight="weight")
    assert PlackettLuceVI().tags.case_weights and not PlackettLuceMAP().tags.case_weights
    with pytest.raises(ValueError, match="PlackettLuceMAP does not take case weights"):
        PlackettLuceMAP().fit(rankings)
