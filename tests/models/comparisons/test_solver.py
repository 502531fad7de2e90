"""Newton's method to the Bradley–Terry mode and its Laplace variances
(crowdbayes.models.comparisons._solver)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import optimize

from comparison_tables import random_comparisons, tiny_table
from crowdbayes import Comparisons
from crowdbayes.models.comparisons import BradleyTerry, _solver
from crowdbayes.models.comparisons._solver import (
    TIE_PRIOR_MEAN,
    TIE_PRIOR_SD,
    _Design,
    _ScoreProblem,
    observed_weights,
)


def _random_problem(n_items=300, n_comparisons=3000, seed=0):
    """A random comparison graph with ties, the shape on which sparse LU fills in."""
    table, rng = random_comparisons(n_items, n_comparisons, seed)
    design = _Design.of(Comparisons(table))
    problem = _ScoreProblem(design, 1.5**2, True)
    weights = observed_weights(design, np.ones(len(design.outcome)), flip=False)
    return problem, rng.normal(size=n_items), -0.5, weights


@pytest.mark.parametrize("tie_model", ["davidson", "none"])
def test_newton_mode_matches_a_generic_optimiser(tie_model):
    table = tiny_table()
    if tie_model == "none":
        table = table[table.label != "equal"]
    data = Comparisons(table)
    design = _Design.of(data)
    fit_theta = tie_model == "davidson"
    model = BradleyTerry(tie_model=tie_model, prior_scale=1.5, tol=1e-12).fit(data)
    weights = observed_weights(design, np.ones(len(design.outcome)), flip=False)
    problem = _ScoreProblem(design, 1.5**2, fit_theta)

    def negative(x):
        theta = x[-1] if fit_theta else -np.inf
        return -problem.value(x[: data.n_items], theta, weights)

    start = np.zeros(data.n_items + fit_theta)
    best = optimize.minimize(negative, start, method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(model.utility_["mean"].to_numpy(), best.x[:3], atol=1e-5)
    if fit_theta:
        assert np.log(model.tie_strength_) == pytest.approx(best.x[-1], abs=1e-5)
        # the tie prior is part of the objective
        assert TIE_PRIOR_SD > 0 and np.isfinite(TIE_PRIOR_MEAN)
    history = model.objective_history_
    assert np.all(np.diff(history) >= -1e-12 * abs(history[-1]))
    assert model.objective_history_[-1] == pytest.approx(-best.fun, abs=1e-8)


def test_laplace_variances_are_the_inverse_hessian_diagonal():
    data = Comparisons(tiny_table())
    model = BradleyTerry(prior_scale=1.0, tol=1e-12).fit(data)
    design = _Design.of(data)
    problem = _ScoreProblem(design, 1.0, True)
    s = model.utility_["mean"].to_numpy()
    theta = np.log(model.tie_strength_)
    weights = observed_weights(design, np.ones(len(design.outcome)), flip=False)

    def negative(x):
        return -problem.value(x[:3], x[3], weights)

    x0, h = np.append(s, theta), 1e-4
    hessian = np.empty((4, 4))
    for i, j in itertools.product(range(4), repeat=2):
        e_i, e_j = np.eye(4)[i] * h, np.eye(4)[j] * h
        hessian[i, j] = (
            negative(x0 + e_i + e_j)
            - negative(x0 + e_i - e_j)
            - negative(x0 - e_i + e_j)
            + negative(x0 - e_i - e_j)
        ) / (4 * h * h)
    expected = np.diag(np.linalg.inv(hessian))[:3]
    np.testing.assert_allclose(model.utility_["sd"].to_numpy() ** 2, expected, rtol=1e-4)


def test_newton_systems_by_conjugate_gradients_match_a_direct_solve():
    problem, s, theta, weights = _random_problem()
    grad, matrix = problem.hessian(s, theta, weights)
    step = _solver._solve_positive_definite(matrix, grad)
    np.testing.assert_allclose(step, np.linalg.solve(matrix.toarray(), grad), rtol=1e-8, atol=1e-10)


def test_dense_and_sparse_variance_paths_agree(monkeypatch):
    problem, s, theta, weights = _random_problem()
    dense = problem.variances(s, theta, weights)
    monkeypatch.setattr(_solver, "_DENSE_VARIANCE_LIMIT", 0)
    sparse = problem.variances(s, theta, weights)
    _, matrix = problem.hessian(s, theta, weights)
    exact = np.diag(np.linalg.inv(matrix.toarray()))[: len(s)]
    np.testing.assert_allclose(dense, exact, rtol=1e-10)
    np.testing.assert_allclose(sparse, exact, rtol=1e-10)
