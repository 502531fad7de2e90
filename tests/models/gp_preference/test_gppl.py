"""GPPL by SVI, full-batch VI and Laplace (the GPPL model given three strategies): SVI against
VI, VI against EP and Laplace, recovery of simulated utilities, length-scale optimisation,
predictions, persistence and bad input (the engine's pieces are tested in ``tests/gp``)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr
from scipy.stats import spearmanr

from crowdbayes.base import load
from crowdbayes.exceptions import ConvergenceWarning, DataWarning, NotFittedError
from crowdbayes.gp import EP, SVI, VI, Laplace, PairCounts, laplace_approximation
from crowdbayes.kernels import Matern32
from crowdbayes.models.gp_preference import GPPL, GPPLVI, GPPLLaplace, GPPreferenceEP

# E[s] pinned at 1 (a tight gamma prior), so VI, EP and Laplace share the prior N(0, K)
FIXED_SCALE = {"shape_s0": 1e5, "rate_s0": 1e5}


def simulate(n_items=40, n_pairs=300, seed=0, lengthscale=1.0):
    """Items with 2 features, utilities drawn from the GP prior, probit comparisons."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 3, (n_items, 2))
    K = Matern32([lengthscale, lengthscale])(X)
    f = np.linalg.cholesky(K + 1e-8 * np.eye(n_items)) @ rng.standard_normal(n_items)
    left = rng.integers(0, n_items, n_pairs)
    right = rng.integers(0, n_items, n_pairs)
    keep = left != right
    left, right = left[keep], right[keep]
    won = rng.random(len(left)) < ndtr((f[left] - f[right]) / np.sqrt(2))
    comparisons = pd.DataFrame({"left": left, "right": right, "label": np.where(won, left, right)})
    items = pd.DataFrame(X, columns=["x0", "x1"], index=pd.RangeIndex(n_items, name="item"))
    return comparisons, items, f


@pytest.fixture(scope="module")
def small():
    return simulate()


@pytest.fixture(scope="module")
def vi_fit(small):
    comparisons, items, _ = small
    return GPPLVI(kernel=Matern32([1.0, 1.0]), **FIXED_SCALE).fit(comparisons, items)


# ---------------------------------------------------------------------- strategies agree
def test_each_estimator_is_given_its_strategy():
    """The estimators differ only in the inference strategy their parameters build."""
    assert GPPL(n_inducing=7, batch_size=None, tol=None)._inference() == SVI(
        n_inducing=7, batch_size=None, tol=None
    )
    assert GPPLVI(max_iter=5)._inference() == VI(max_iter=5)
    assert GPPLLaplace(tol=1e-8)._inference() == Laplace(tol=1e-8)
    assert GPPreferenceEP(damping=0.3)._inference() == EP(damping=0.3)


def test_svi_with_all_items_and_full_batches_converges_to_vi(small, vi_fit):
    comparisons, items, _ = small
    svi = GPPL(
        kernel=Matern32([1.0, 1.0]),
        n_inducing=len(items),
        batch_size=None,
        forgetting_rate=0.5,
        tol=1e-9,
        max_iter=1000,
        random_state=0,
        **FIXED_SCALE,
    ).fit(comparisons, items)
    assert svi.converged_ and vi_fit.converged_
    assert len(svi.inducing_points_) == len(items)
    np.testing.assert_allclose(svi.utility_["mean"], vi_fit.utility_["mean"], atol=1e-5)
    np.testing.assert_allclose(svi.utility_["sd"], vi_fit.utility_["sd"], atol=1e-5)
    assert svi.lower_bound_ == pytest.approx(vi_fit.lower_bound_, abs=1e-4)


def test_svi_with_free_scale_converges_to_vi(small):
    """The gamma scale updates agree too (prior Gamma(2, 2))."""
    comparisons, items, _ = small
    kernel = Matern32([1.0, 1.0])
    vi = GPPLVI(kernel=kernel, tol=1e-10).fit(comparisons, items)
    svi = GPPL(
        kernel=kernel,
        n_inducing=len(items),
        batch_size=None,
        forgetting_rate=0.5,
        tol=1e-10,
        max_iter=2000,
    ).fit(comparisons, items)
    assert svi.converged_
    # SVI's factor is factorised with safe_cholesky's 1e-8 relative jitter, VI's (whitened,
    # then in natural parameters) without: their fixed points differ by ~2e-6 in E[s] here,
    # and agree to ~4e-8 with the jitter at 1e-12
    assert svi.scale_.mean == pytest.approx(vi.scale_.mean, rel=3e-6)
    assert vi.scale_.mean != pytest.approx(1.0, rel=0.01)
    np.testing.assert_allclose(svi.utility_["mean"], vi.utility_["mean"], atol=1e-5)


def test_minibatch_svi_approaches_vi(small, vi_fit):
    comparisons, items, _ = small
    svi = GPPL(
        kernel=Matern32([1.0, 1.0]),
        n_inducing=len(items),
        batch_size=60,
        max_iter=600,
        tol=None,
        random_state=1,
        **FIXED_SCALE,
    ).fit(comparisons, items)
    a, b = svi.utility_["mean"], vi_fit.utility_["mean"]
    assert np.corrcoef(a, b)[0, 1] > 0.995
    assert np.max(np.abs(a - b)) < 0.15 * np.max(np.abs(b))


def test_auto_batch_takes_full_batches_on_many_comparisons_per_item():
    """With many comparisons per item the default batch ("auto") is the full batch (the same
    fit as ``batch_size=None``), which meets the tolerance in a few steps where mini-batches
    take many passes; both are near the optimum (a full-batch fit to a tight tolerance)."""
    comparisons, items, _ = simulate(n_items=60, n_pairs=1500, seed=3)
    options = {"n_inducing": 30, "random_state": 0}
    auto = GPPL(**options).fit(comparisons, items)
    full = GPPL(batch_size=None, **options).fit(comparisons, items)
    pd.testing.assert_frame_equal(auto.utility_, full.utility_, check_exact=True)
    assert auto.converged_ and auto.n_iter_ <= 10
    mini = GPPL(batch_size=100, **options).fit(comparisons, items)
    assert mini.converged_ and mini.n_iter_ > 5 * auto.n_iter_
    tight = GPPL(batch_size=None, forgetting_rate=0.0, tol=1e-8, max_iter=500, **options)
    tight.fit(comparisons, items)
    left, right = comparisons["left"], comparisons["right"]
    optimum = tight.predict_proba(left, right)
    assert np.abs(auto.predict_proba(left, right) - optimum).max() < 0.03
    assert np.abs(mini.predict_proba(left, right) - optimum).max() < 0.06


def test_vi_posterior_means_close_to_ep_and_laplace(small, vi_fit):
    """The linearised likelihood shrinks utilities a little relative to EP (≈10% here);
    the ordering and the shape agree closely."""
    comparisons, items, _ = small
    ep = GPPreferenceEP(kernel=Matern32([1.0, 1.0])).fit(comparisons, items)
    codes = np.unique(comparisons[["left", "right"]].to_numpy())
    K = Matern32([1.0, 1.0])(items.to_numpy()[codes])
    data_left = np.searchsorted(codes, comparisons["left"].to_numpy())
    data_right = np.searchsorted(codes, comparisons["right"].to_numpy())
    outcome = np.where(comparisons["label"] == comparisons["left"], 1, -1)
    laplace = laplace_approximation(K, PairCounts.from_comparisons(data_left, data_right, outcome))
    vi = vi_fit.utility_["mean"].to_numpy()[codes]
    for other in (ep.utility_["mean"].to_numpy()[codes], laplace.posterior.mean):
        assert np.corrcoef(vi, other)[0, 1] > 0.995
        assert spearmanr(vi, other)[0] > 0.99
        assert np.max(np.abs(vi - other)) < 0.2 * np.max(np.abs(other))
    np.testing.assert_allclose(
        vi_fit.utility_["sd"].to_numpy()[codes], ep.utility_["sd"].to_numpy()[codes], rtol=0.15
    )


def test_recovers_simulated_utilities():
    comparisons, items, f = simulate(n_items=80, n_pairs=2500, seed=7)
    model = GPPL(n_inducing=40, batch_size=250, max_iter=300, tol=None, random_state=0)
    model.fit(comparisons, items)
    assert spearmanr(model.utility_["mean"], f)[0] >= 0.9


def test_seeded_and_reproducible(small):
    comparisons, items, _ = small
    options = {"n_inducing": 15, "batch_size": 40, "max_iter": 30, "tol": None}
    a = GPPL(random_state=3, **options).fit(comparisons, items).utility_
    b = GPPL(random_state=3, **options).fit(comparisons, items).utility_
    c = GPPL(random_state=4, **options).fit(comparisons, items).utility_
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["mean"], c["mean"])


# ---------------------------------------------------------------------- length-scales
def test_lengthscale_optimisation_raises_the_bound(small):
    comparisons, items, _ = small
    start = GPPLVI(kernel=Matern32([0.2, 0.2])).fit(comparisons, items)
    tuned = GPPLVI(kernel=Matern32([0.2, 0.2]), optimize_lengthscale=True).fit(comparisons, items)
    assert tuned.lower_bound_ > start.lower_bound_ + 1.0
    assert (tuned.lengthscale_ > 0.2).all()


# ---------------------------------------------------------------------- predictions
def test_predictions_for_new_items_and_pairs(small, vi_fit):
    comparisons, items, _ = small
    new = pd.DataFrame({"x0": [0.5, 2.5], "x1": [1.0, 0.2]}, index=["n1", "n2"])
    utility = vi_fit.predict_utility(new)
    # ids in an 'item' column, as every feature table takes them
    as_column = vi_fit.predict_utility(new.rename_axis("item").reset_index())
    pd.testing.assert_frame_equal(as_column, utility)
    cov = vi_fit.predict_cov(new)
    np.testing.assert_allclose(np.diag(cov), utility["sd"] ** 2, rtol=1e-8)
    # far from every item the prior comes back: mean 0, variance 1/E[s]
    far = vi_fit.predict_utility(pd.DataFrame({"x0": [100.0], "x1": [100.0]}, index=["far"]))
    assert far["mean"].iloc[0] == pytest.approx(0.0, abs=1e-8)
    assert far["sd"].iloc[0] ** 2 == pytest.approx(1 / vi_fit.scale_.mean, rel=1e-6)
    # pair probabilities: the posterior variance of the difference pulls them toward ½
    p = vi_fit.predict_proba([0, 1, "n1"], [1, 2, 0], items=new)
    both = pd.concat([vi_fit.predict_utility([0, 1, 2]), utility])
    cov_all = vi_fit.predict_cov(pd.concat([items.loc[[0, 1, 2]], new]))
    for (a, b), value in p.items():
        a_idx, b_idx = list(cov_all.index).index(a), list(cov_all.index).index(b)
        var = (
            cov_all.iloc[a_idx, a_idx] + cov_all.iloc[b_idx, b_idx] - 2 * cov_all.iloc[a_idx, b_idx]
        )
        diff = both.loc[a, "mean"] - both.loc[b, "mean"]
        assert value == pytest.approx(ndtr(diff / np.sqrt(2 + var)), rel=1e-6)
        assert abs(value - 0.5) < abs(ndtr(diff / np.sqrt(2)) - 0.5)


@pytest.mark.parametrize(
    "make",
    [
        lambda: GPPL(n_inducing=12, batch_size=50, max_iter=40, tol=None, random_state=0),
        lambda: GPPLVI(),
        lambda: GPPLLaplace(),
    ],
    ids=["GPPL", "GPPLVI", "GPPLLaplace"],
)
def test_save_and_load_round_trip(small, tmp_path, make):
    """``crowdbayes.base.load`` restores each estimator: identical utilities, predictions for
    known and new items, covariances and length-scales."""
    comparisons, items, _ = small
    model = make().fit(comparisons, items)
    path = tmp_path / "gppl.npz"
    model.save(path)
    back = load(path)
    assert type(back) is type(model) and back.get_params() == model.get_params()
    pd.testing.assert_frame_equal(back.utility_, model.utility_, check_exact=True)
    new = pd.DataFrame({"x0": [0.5], "x1": [1.0]}, index=["n1"])
    pd.testing.assert_series_equal(
        back.predict_proba([0, "n1"], [3, 2], items=new),
        model.predict_proba([0, "n1"], [3, 2], items=new),
        check_exact=True,
    )
    pd.testing.assert_frame_equal(
        back.predict_cov([0, 5]), model.predict_cov([0, 5]), check_exact=True
    )
    pd.testing.assert_series_equal(back.lengthscale_, model.lengthscale_)
    assert back.lower_bound_ == model.lower_bound_ and back.scale_ == model.scale_
    other = GPPLVI if type(model) is not GPPLVI else GPPL
    with pytest.raises(ValueError, match=f"holds a {type(model).__name__} model; expected a"):
        other.load(path)


def test_without_features_every_item_is_an_inducing_point():
    comparisons = pd.DataFrame(
        {
            "left": ["a", "b", "c", "a"] * 5,
            "right": ["b", "c", "a", "c"] * 5,
            "label": ["a", "b", "a", "a"] * 5,
        }
    )
    model = GPPLVI().fit(comparisons)
    assert model.utility_["mean"].idxmax() == "a"
    assert model.lengthscale_ is None
    with pytest.raises(ValueError, match="not seen in fit"):
        model.predict_utility(["z"])


# ---------------------------------------------------------------------- bad input
def test_errors_and_warnings(small):
    comparisons, items, _ = small
    with pytest.raises(NotFittedError, match="GPPL is not fitted yet"):
        GPPL().predict_proba([0], [1])
    for params, message in [
        ({"n_inducing": 0}, "'n_inducing' must be an integer in [1, inf); got 0"),
        (
            {"batch_size": 0},
            "'batch_size' must be one of 'auto' or an integer in [1, inf) or None; got 0",
        ),
        ({"forgetting_rate": 2.0}, "'forgetting_rate' must be a number in [0, 1]; got 2.0"),
        ({"ties": "keep"}, "'ties' must be one of 'drop', 'half'; got 'keep'"),
        ({"noise": 0.0}, "'noise' must be a number in (0, inf); got 0.0"),
        ({"kernel": "cosine"}, "'kernel' must be one of 'matern32', 'rbf' or a Kernel"),
    ]:
        with pytest.raises(ValueError, match=re.escape(f"GPPL: parameter {message}")):
            GPPL(**params).fit(comparisons, items)
    ties = comparisons.head(10).assign(label="equal")
    with pytest.raises(ValueError, match="all 10 comparisons are ties"):
        GPPL().fit(ties, items)
    mixed = pd.concat([comparisons, ties])
    with pytest.warns(DataWarning, match="dropped 10 tie"):
        GPPLVI().fit(mixed, items)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        half = GPPLVI(ties="half").fit(mixed, items)
    assert half.n_ties_dropped_ == 0
    with pytest.warns(ConvergenceWarning, match="GPPL did not converge in 2 iterations"):
        GPPL(max_iter=2, tol=1e-12).fit(comparisons, items)
    bad = items.copy()
    bad.iloc[3, 0] = np.nan
    with pytest.raises(ValueError, match="items"):
        GPPL().fit(comparisons, bad)
    model = GPPLVI().fit(comparisons, items)
    with pytest.raises(ValueError, match="feature column"):
        model.predict_utility(pd.DataFrame({"x0": [1.0]}, index=["n"]))
    with pytest.raises(ValueError, match="1 left and 2 right"):
        model.predict_proba([0], [1, 2])


def test_progress_bar_over_svi_iterations(small, capsys):
    comparisons, items, _ = small
    GPPL(n_inducing=10, batch_size=100, max_iter=6, tol=None, progress=True).fit(comparisons, items)
    assert "GPPL SVI" in capsys.readouterr().err


def test_gppl_laplace_matches_the_laplace_engine_and_predicts(small):
    """GPPLLaplace is the Laplace engine on the training items with the GPPL API: the same
    mode and covariance at the compared items, GP predictions elsewhere."""
    comparisons, items, f = small
    kernel = Matern32([1.0, 1.0])
    model = GPPLLaplace(kernel=kernel, **FIXED_SCALE).fit(comparisons, items)
    codes = np.unique(comparisons[["left", "right"]].to_numpy())
    K = kernel(items.to_numpy()[codes]) / model.scale_.mean
    outcome = np.where(comparisons["label"] == comparisons["left"], 1, -1)
    direct = laplace_approximation(
        K,
        PairCounts.from_comparisons(
            np.searchsorted(codes, comparisons["left"].to_numpy()),
            np.searchsorted(codes, comparisons["right"].to_numpy()),
            outcome,
        ),
    )
    np.testing.assert_allclose(
        model.utility_["mean"].to_numpy()[codes], direct.posterior.mean, atol=1e-4
    )
    np.testing.assert_allclose(
        model.utility_["sd"].to_numpy()[codes], np.sqrt(direct.posterior.var), rtol=1e-3
    )
    assert model.converged_ and np.isfinite(model.lower_bound_)
    assert model.lower_bound_ == pytest.approx(direct.log_marginal, rel=1e-4)
    assert spearmanr(model.utility_["mean"], f)[0] > 0.8
    new = pd.DataFrame({"x0": [0.5], "x1": [1.0]}, index=["n1"])
    p = model.predict_proba([0, "n1"], [3, 2], items=new)
    assert ((p > 0) & (p < 1)).all()
    # Laplace has no length-scale gradient here: the estimator offers no such parameter
    assert "optimize_lengthscale" not in model.get_params()
