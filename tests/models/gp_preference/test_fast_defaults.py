"""GPPLVI and GPPreferenceEP at their defaults (issue 40 point 4): warm starts of full-batch VI
keep the design (a copy of it, with the same kernel) and begin at the answer, EP's default
damping adapts, and at the size of the timing benchmark (1,000 items, 10,000 comparisons) both
converge in a handful of iterations."""

from __future__ import annotations

import importlib.util
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowdbayes.gp import SVI, VI
from crowdbayes.models.gp_preference import GPPL, GPPLVI, GPPreferenceEP


def _prefs_data():
    """``benchmarks/_prefs_data.py`` (loaded from its file): the one copy of the data builder."""
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "_prefs_data.py"
    spec = importlib.util.spec_from_file_location("_prefs_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def comparisons(n_items: int, n_pairs: int, seed: int = 0):
    """Items with 3 features on [0, 3]³, utility ``sin(2 x₀) + cos(x₁) + x₂/2``, probit
    comparisons of two distinct random items (``benchmarks/_prefs_data.simulate``): the
    comparison table and the item features."""
    table, items, _ = _prefs_data().simulate(n_items, n_pairs, seed)
    return table, items


@pytest.fixture(scope="module")
def small():
    return comparisons(40, 400)


def test_vi_warm_start_on_the_same_items_keeps_the_design_and_starts_at_the_answer(small):
    table, items = small
    cold = GPPLVI(tol=1e-9).fit(table, items)
    warm = GPPLVI(tol=1e-9).fit(table, items, init=cold)
    assert warm._projection.shares(cold._projection)
    assert warm.n_iter_ <= 2 < cold.n_iter_
    np.testing.assert_allclose(warm.utility_.to_numpy(), cold.utility_.to_numpy(), atol=1e-8)


def test_vi_warm_start_with_other_features_builds_a_new_design(small):
    table, items = small
    cold = GPPLVI().fit(table, items)
    warm = GPPLVI().fit(table, items * 1.1, init=cold)
    assert not warm._projection.shares(cold._projection)
    fresh = GPPLVI().fit(table, items * 1.1)
    np.testing.assert_allclose(warm.utility_["mean"], fresh.utility_["mean"], atol=1e-4)


@pytest.mark.filterwarnings("ignore:items. 1 feature column")
def test_vi_warm_start_with_another_kernel_along_a_constant_feature_builds_a_new_design(small):
    """A length-scale changed only along a feature that is constant over the compared items
    leaves ``K_mm`` as it was, but not the predictions at items that vary along it."""
    table, items = small
    items = items.assign(x2=1.5)
    new = pd.DataFrame({"x0": [0.5, 2.5], "x1": [1.0, 2.0], "x2": [0.0, 3.0]}, index=["n0", "n1"])
    cold = GPPLVI(lengthscale=[1.0, 1.0, 1.0]).fit(table, items)
    warm = GPPLVI(lengthscale=[1.0, 1.0, 0.2]).fit(table, items, init=cold)
    fresh = GPPLVI(lengthscale=[1.0, 1.0, 0.2]).fit(table, items)
    assert not warm._projection.shares(cold._projection)
    np.testing.assert_array_equal(warm.lengthscale_, [1.0, 1.0, 0.2])
    got, want = warm.predict_utility(new), fresh.predict_utility(new)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), atol=1e-8)
    assert np.abs(got["mean"] - cold.predict_utility(new)["mean"]).max() > 0.1


@pytest.mark.parametrize(
    ("model", "strategy", "first"),
    [(GPPLVI, VI, 400), (partial(GPPL, random_state=0), SVI, 360)],
    ids=["GPPLVI", "GPPL"],
)
def test_a_warm_start_lends_the_kernel_of_its_own_projection(
    small, monkeypatch, model, strategy, first
):
    """The warm fit keeps the previous design in a copy: while it runs (and swaps the kernel of
    its projection for the cached cross-kernel) the previous estimator's projection is not the
    one fitted and keeps its kernel; afterwards the two still share the arrays."""
    table, items = small
    previous = model().fit(table.iloc[:first], items)
    kernel = previous._projection.kernel
    seen = []
    fit = strategy.fit

    def spying(self, problem, projection, **kwargs):
        seen.append((projection is previous._projection, previous._projection.kernel is kernel))
        return fit(self, problem, projection, **kwargs)

    monkeypatch.setattr(strategy, "fit", spying)
    warm = model().fit(table, items, init=previous)
    assert seen == [(False, True)]
    assert warm._projection.shares(previous._projection)
    assert warm._projection.kernel is kernel


def test_ep_damping_defaults_to_auto_and_other_strings_are_refused(small):
    table, items = small
    model = GPPreferenceEP()
    assert model.damping == "auto"
    fixed = GPPreferenceEP(damping=0.5).fit(table, items)
    auto = model.fit(table, items)
    assert auto.converged_ and auto.n_iter_ < fixed.n_iter_
    np.testing.assert_allclose(auto.utility_.to_numpy(), fixed.utility_.to_numpy(), atol=1e-5)
    with pytest.raises(ValueError, match=r"parameter 'damping' must be .* or one of 'auto'"):
        GPPreferenceEP(damping="fast").fit(table, items)


@pytest.mark.slow
def test_the_benchmark_size_converges_in_a_few_iterations():
    """1,000 items and 10,000 comparisons, as ``benchmarks/labels/defaults_time.py`` times
    (before: 120 VI iterations, 25 EP sweeps)."""
    table, items = comparisons(1000, 10_000)
    vi = GPPLVI().fit(table, items)
    assert vi.converged_ and vi.n_iter_ <= 20
    ep = GPPreferenceEP().fit(table, items)
    assert ep.converged_ and ep.n_iter_ <= 12
