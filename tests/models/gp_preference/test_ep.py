"""``GPPreferenceEP``: recovery of simulated utilities, predictions for new items and pairs, the
tie policies, length-scale optimisation, persistence and bad input (the EP engine itself is
tested in ``tests/gp/test_ep.py``)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr
from scipy.stats import spearmanr

from crowdbayes.base import load
from crowdbayes.exceptions import DataWarning, NotFittedError
from crowdbayes.models.gp_preference import GPPLVI, GPPreferenceEP


def simulated(seed=0, n=30, p=400, ties=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    utility = np.sin(2 * X[:, 0]) + X[:, 1]
    items = pd.DataFrame(X, index=[f"item{k:02d}" for k in range(n)], columns=["a", "b"])
    left = rng.integers(n, size=p)
    right = (left + 1 + rng.integers(n - 1, size=p)) % n
    wins = rng.random(p) < ndtr((utility[left] - utility[right]) / (np.sqrt(2) * 0.3))
    frame = pd.DataFrame({"left": items.index[left], "right": items.index[right]})
    frame["label"] = np.where(wins, frame["left"], frame["right"])
    frame.loc[: ties - 1, "label"] = "equal"
    return frame, items, utility


def test_estimator_recovers_simulated_utilities_and_predicts():
    frame, items, utility = simulated()
    model = GPPreferenceEP(noise=0.3).fit(frame, items=items)
    assert model.converged_
    assert list(model.utility_.index) == list(items.index)
    assert spearmanr(model.utility_["mean"], utility).statistic >= 0.9
    assert list(model.lengthscale_.index) == ["a", "b"]
    assert np.isfinite(model.log_marginal_likelihood_)
    known = model.predict_utility(["item03", "item01"])
    pd.testing.assert_frame_equal(known, model.utility_.loc[["item03", "item01"]], atol=1e-6)
    p = model.predict_proba(["item00", "item05"], ["item05", "item00"])
    assert p.name == "p_left" and p.index.names == ["left", "right"]
    assert p.iloc[0] + p.iloc[1] == pytest.approx(1.0)
    # a new item described by its features: same as a known item with the same features
    twin = items.loc[["item07"]].rename(index={"item07": "new"})
    new = model.predict_utility(twin)
    np.testing.assert_allclose(new.to_numpy(), model.utility_.loc[["item07"]].to_numpy(), atol=1e-4)
    p_new = model.predict_proba(["new"], ["item02"], items=twin)
    p_old = model.predict_proba(["item07"], ["item02"])
    assert p_new.iloc[0] == pytest.approx(p_old.iloc[0], abs=1e-4)


def test_uncompared_items_in_the_table_get_the_predictive_distribution():
    frame, items, _ = simulated(p=200)
    far = pd.DataFrame({"a": [40.0], "b": [-40.0]}, index=["far"])
    model = GPPreferenceEP(noise=0.3, output_scale=2.0).fit(frame, items=pd.concat([items, far]))
    assert "far" in model.utility_.index and "far" not in model.posterior_cov_.index
    # far from every compared item the posterior is the prior N(0, output_scale)
    assert model.utility_.loc["far", "mean"] == pytest.approx(0.0, abs=1e-6)
    assert model.utility_.loc["far", "sd"] == pytest.approx(np.sqrt(2.0), rel=1e-6)
    assert (model.utility_["sd"].drop("far") < np.sqrt(2.0)).all()


def test_estimator_uncertainty_enters_pair_probabilities():
    frame, items, _ = simulated(p=60)
    model = GPPreferenceEP(noise=0.3).fit(frame, items=items)
    u = model.utility_
    cov = model.posterior_cov_
    a, b = "item00", "item01"
    var_d = u.loc[a, "sd"] ** 2 + u.loc[b, "sd"] ** 2 - 2 * cov.loc[a, b]
    expected = ndtr((u.loc[a, "mean"] - u.loc[b, "mean"]) / np.sqrt(2 * 0.3**2 + var_d))
    assert model.predict_proba([a], [b]).iloc[0] == pytest.approx(expected, rel=1e-6)


def test_estimator_tie_policies_and_feature_free_prior():
    frame, items, _ = simulated(p=80, ties=5)
    with pytest.warns(DataWarning, match=re.escape("GPPreferenceEP: dropped 5 tie(s) of 80")):
        dropped = GPPreferenceEP(noise=0.3).fit(frame, items=items)
    assert dropped.n_ties_dropped_ == 5
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        half = GPPreferenceEP(noise=0.3, ties="half").fit(frame, items=items)
    assert half.n_ties_dropped_ == 0
    assert not np.allclose(half.utility_["mean"], dropped.utility_["mean"])
    # no item features: independent N(0, output_scale) prior over the compared items
    plain = GPPreferenceEP(noise=0.3, output_scale=2.0, ties="half").fit(frame)
    assert plain.lengthscale_ is None
    assert set(plain.utility_.index) == set(frame["left"]) | set(frame["right"])
    with pytest.raises(ValueError, match="fitted without item features"):
        plain.predict_utility(items.iloc[:2])
    with pytest.raises(ValueError, match=re.escape("1 item id(s) were not seen in fit: ['zz']")):
        plain.predict_proba(["zz"], [frame["left"].iloc[0]])


@pytest.mark.slow
def test_estimator_lengthscale_optimisation_raises_the_evidence():
    frame, items, _ = simulated(p=150)
    start = GPPreferenceEP(noise=0.3, lengthscale=0.05).fit(frame, items=items)
    tuned = GPPreferenceEP(noise=0.3, lengthscale=0.05, optimize_lengthscale=True).fit(
        frame, items=items
    )
    assert tuned.optimize_result_.success
    assert tuned.log_marginal_likelihood_ > start.log_marginal_likelihood_ + 1.0
    assert (tuned.lengthscale_ > 0.05).all()
    with pytest.raises(ValueError, match="optimize_lengthscale needs item features"):
        GPPreferenceEP(optimize_lengthscale=True).fit(frame)


@pytest.mark.parametrize("with_features", [True, False])
def test_estimator_save_and_load_round_trip(tmp_path, with_features):
    """``crowdbayes.base.load`` restores the model: identical utilities and predictions."""
    frame, items, _ = simulated(p=60, ties=3)
    model = GPPreferenceEP(kernel="rbf", noise=0.3, ties="half")
    model.fit(frame, items=items if with_features else None)
    path = tmp_path / "model.npz"
    model.save(path)
    loaded = load(path)
    assert type(loaded) is GPPreferenceEP and loaded.get_params() == model.get_params()
    pd.testing.assert_frame_equal(loaded.utility_, model.utility_, check_exact=True)
    pd.testing.assert_frame_equal(loaded.posterior_cov_, model.posterior_cov_, check_exact=True)
    pairs = (["item00", "item03"], ["item01", "item00"])
    pd.testing.assert_series_equal(
        loaded.predict_proba(*pairs), model.predict_proba(*pairs), check_exact=True
    )
    assert loaded.log_marginal_likelihood_ == model.log_marginal_likelihood_
    if with_features:
        pd.testing.assert_series_equal(loaded.lengthscale_, model.lengthscale_)
        new = items.iloc[:2].rename(index=lambda i: f"new-{i}")
        pd.testing.assert_frame_equal(
            loaded.predict_utility(new), model.predict_utility(new), check_exact=True
        )
    with pytest.raises(ValueError, match="holds a GPPreferenceEP model; expected a GPPLVI"):
        GPPLVI.load(path)


def test_estimator_with_tuned_lengthscales_saves_without_the_search(tmp_path):
    """The optimiser's result holds callables (not storable): it is left out of the file, the
    tuned kernel is kept."""
    frame, items, _ = simulated(p=60)
    model = GPPreferenceEP(noise=0.3, lengthscale=0.5, optimize_lengthscale=True, max_iter=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(frame, items=items)
    model.save(tmp_path / "tuned.npz")
    loaded = load(tmp_path / "tuned.npz")
    assert hasattr(model, "optimize_result_") and not hasattr(loaded, "optimize_result_")
    pd.testing.assert_series_equal(loaded.lengthscale_, model.lengthscale_)
    pd.testing.assert_series_equal(
        loaded.predict_proba(["item00"], ["item01"]),
        model.predict_proba(["item00"], ["item01"]),
        check_exact=True,
    )


def test_estimator_errors():
    frame, items, _ = simulated(p=40)
    with pytest.raises(NotFittedError, match="GPPreferenceEP is not fitted yet"):
        GPPreferenceEP().predict_proba(["item00"], ["item01"])
    with pytest.raises(
        ValueError, match=re.escape("parameter 'ties' must be one of 'drop', 'half'; got 'ignore'")
    ):
        GPPreferenceEP(ties="ignore").fit(frame, items=items)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "parameter 'lengthscale' must be one of 'auto', 'median', 'scaled_median' or"
        ),
    ):
        GPPreferenceEP(lengthscale="mean").fit(frame, items=items)
    with pytest.raises(ValueError, match=r"parameter 'damping' must be a number in \(0, 1\]"):
        GPPreferenceEP(damping=0.0).fit(frame, items=items)
    model = GPPreferenceEP(lengthscale=1.0).fit(frame, items=items)
    np.testing.assert_array_equal(model.lengthscale_, [1.0, 1.0])
    with pytest.raises(ValueError, match=r"pass their features as a DataFrame indexed by item id"):
        model.predict_utility(["nope"])
    with pytest.raises(ValueError, match=re.escape("feature column(s) missing: ['b']")):
        model.predict_utility(items[["a"]])
    with pytest.raises(ValueError, match="2 left and 1 right items"):
        model.predict_proba(["item00", "item01"], ["item02"])
    only_ties = frame.assign(label="equal")
    with pytest.raises(ValueError, match="all 40 comparisons are ties"):
        GPPreferenceEP().fit(only_ties, items=items)
