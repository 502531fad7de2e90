"""The pairwise probit likelihood and EP / Laplace on an explicit prior: tilted moments against
adaptive quadrature, exactness for one pair, agreement with importance sampling, gradients
against finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate
from scipy.special import log_ndtr, logsumexp, ndtr
from scipy.stats import norm

from crowdbayes.exceptions import ConvergenceWarning
from crowdbayes.gp import (
    LatentPosterior,
    PairCounts,
    ep_gradient_weights,
    expectation_propagation,
    laplace_approximation,
    log_likelihood_terms,
    pair_probabilities,
    tilted_moments,
)
from crowdbayes.kernels import Matern32
from crowdbayes.linalg import safe_cholesky

NOISE = 0.7
ALPHA = np.sqrt(2) * NOISE


def exact_log_lik(d, wins, losses):
    """The grouped likelihood written out separately from the engine: Φ(z)^a Φ(-z)^b."""
    z = d / ALPHA
    return (wins * log_ndtr(z) if wins else 0.0) + (losses * log_ndtr(-z) if losses else 0.0)


def reference_moments(wins, losses, m, sd):
    """Zeroth to second moments of ``ℓ(d) N(d; m, sd²)`` by scipy's adaptive quadrature, split
    at the peak (found on a fine grid) so that a sharp peak is never stepped over."""
    grid = np.linspace(m - 12 * sd, m + 12 * sd, 20001)
    log_f = np.array([exact_log_lik(d, wins, losses) for d in grid]) + norm.logpdf(grid, m, sd)
    peak = grid[np.argmax(log_f)]

    def moment(k):
        def integrand(d):
            return d**k * np.exp(exact_log_lik(d, wins, losses) + norm.logpdf(d, m, sd))

        pieces = [(m - 12 * sd, peak), (peak, m + 12 * sd)]
        return sum(integrate.quad(integrand, a, b, limit=400, epsabs=0)[0] for a, b in pieces)

    return moment(0), moment(1), moment(2)


def grouped(left, right, outcome):
    return PairCounts.from_comparisons(left, right, outcome)


# ---------------------------------------------------------------------- likelihood pieces
def test_pair_counts_group_orient_and_weight():
    pairs = PairCounts.from_comparisons([3, 1, 1, 2, 3], [1, 3, 2, 1, 1], [1, 1, 0, -1, -1])
    np.testing.assert_array_equal(pairs.left, [1, 1])
    np.testing.assert_array_equal(pairs.right, [2, 3])
    # pair (1, 2): one tie and one win of 1 (2 lost as left); pair (1, 3): 3 won once, 1 twice
    np.testing.assert_array_equal(pairs.wins, [1.5, 2.0])
    np.testing.assert_array_equal(pairs.losses, [0.5, 1.0])
    np.testing.assert_array_equal(pairs.index, [1, 1, 0, 0, 1])
    weighted = PairCounts.from_comparisons([0, 1], [1, 0], [1, 1], weights=[0.25, 2.0])
    np.testing.assert_array_equal([weighted.wins, weighted.losses], [[0.25], [2.0]])
    with pytest.raises(ValueError, match="outcome must hold"):
        PairCounts.from_comparisons([0], [1], [2])
    with pytest.raises(ValueError, match="equally long"):
        PairCounts.from_comparisons([0, 1], [1], [1])
    with pytest.raises(ValueError, match="same item on both sides"):
        PairCounts.from_comparisons([0], [0], [1])
    with pytest.raises(ValueError, match="weights must be finite"):
        PairCounts.from_comparisons([0], [1], [1], weights=[-1.0])


COUNTS = [(1, 0), (0, 1), (0.5, 0.5), (3, 1), (2.5, 7), (40, 0), (400, 3)]


@pytest.mark.parametrize("wins, losses", COUNTS)
@pytest.mark.parametrize("m, v", [(0.3, 0.5), (-2.0, 4.0), (6.0, 0.05), (1.0, 80.0)])
def test_tilted_moments_match_adaptive_quadrature(wins, losses, m, v):
    sd = np.sqrt(v)
    z0, z1, z2 = reference_moments(wins, losses, m, sd)
    log_z, mean, var = tilted_moments(np.array([m]), np.array([v]), [wins], [losses], ALPHA)
    assert log_z[0] == pytest.approx(np.log(z0), abs=1e-7)
    assert mean[0] == pytest.approx(z1 / z0, abs=1e-6 * max(1.0, sd))
    assert var[0] == pytest.approx(z2 / z0 - (z1 / z0) ** 2, rel=1e-5)


def test_log_likelihood_derivatives_match_finite_differences():
    d = np.array([-3.0, -0.4, 0.0, 0.7, 2.5, -1.0])
    wins = np.array([1.0, 0.0, 0.5, 3.0, 1.0, 0.0])
    losses = np.array([0.0, 1.0, 0.5, 2.0, 4.0, 2.5])
    value, grad, hess = log_likelihood_terms(d, wins, losses, ALPHA)
    expected = [exact_log_lik(*args) for args in zip(d, wins, losses, strict=True)]
    np.testing.assert_allclose(value, expected)
    h = 1e-5
    v_plus = log_likelihood_terms(d + h, wins, losses, ALPHA)
    v_minus = log_likelihood_terms(d - h, wins, losses, ALPHA)
    np.testing.assert_allclose(grad, (v_plus[0] - v_minus[0]) / (2 * h), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(hess, -(v_plus[1] - v_minus[1]) / (2 * h), rtol=1e-6, atol=1e-9)
    assert (hess > 0).all()


# ---------------------------------------------------------------------- a small problem
def small_problem(seed=0, n=6, p=15):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    K = Matern32([1.0, 1.5], 2.0)(X)
    left = rng.integers(n, size=p)
    right = (left + 1 + rng.integers(n - 1, size=p)) % n
    outcome = rng.choice([1, -1, 0], p=[0.5, 0.35, 0.15], size=p)
    return X, K, left, right, outcome


@pytest.fixture(scope="module")
def reference():
    """Self-normalised importance sampling from the prior with 400k draws, written per
    comparison (not grouped): the posterior mean, variance, log marginal likelihood and the
    weighted draws."""
    X, K, left, right, outcome = small_problem()
    rng = np.random.default_rng(123)
    draws = 400_000
    f = rng.normal(size=(draws, len(K))) @ np.linalg.cholesky(K + 1e-10 * np.eye(len(K))).T
    z = (f[:, left] - f[:, right]) / ALPHA
    log_w = np.where(outcome == 0, 0.5 * (log_ndtr(z) + log_ndtr(-z)), log_ndtr(outcome * z))
    log_w = log_w.sum(axis=1)
    w = np.exp(log_w - logsumexp(log_w))
    mean = w @ f
    var = w @ (f - mean) ** 2
    return {
        "f": f,
        "w": w,
        "mean": mean,
        "var": var,
        "log_z": float(logsumexp(log_w) - np.log(draws)),
        "ess": float(1.0 / np.sum(w**2)),
    }


def test_ep_matches_importance_sampling_and_beats_laplace(reference):
    X, K, left, right, outcome = small_problem()
    assert reference["ess"] > 10_000  # MC error of the means ≈ sd / √ESS < 0.011
    ep = expectation_propagation(K, grouped(left, right, outcome), noise=NOISE)
    assert ep.converged and ep.n_iter < 60
    np.testing.assert_allclose(ep.posterior.mean, reference["mean"], atol=0.03)
    np.testing.assert_allclose(ep.posterior.var, reference["var"], rtol=0.03)
    assert ep.log_marginal == pytest.approx(reference["log_z"], abs=0.02)

    la = laplace_approximation(K, grouped(left, right, outcome), noise=NOISE)
    assert la.converged
    # Laplace is in the same place but less accurate than EP, as expected for a probit
    np.testing.assert_allclose(la.posterior.mean, reference["mean"], atol=0.1)
    assert la.log_marginal == pytest.approx(reference["log_z"], abs=0.15)
    ep_err = np.abs(ep.posterior.mean - reference["mean"]).max()
    la_err = np.abs(la.posterior.mean - reference["mean"]).max()
    assert ep_err < la_err
    assert abs(ep.log_marginal - reference["log_z"]) < abs(la.log_marginal - reference["log_z"])


def test_pair_probabilities_and_new_item_predictions_match_importance_sampling(reference):
    X, K, left, right, outcome = small_problem()
    ep = expectation_propagation(K, grouped(left, right, outcome), noise=NOISE)
    f, w = reference["f"], reference["w"]
    # P(i ≻ j | data) = E[Φ((f_i - f_j)/α)] for every pair of training items
    i, j = np.triu_indices(len(K), k=1)
    truth = w @ ndtr((f[:, i] - f[:, j]) / ALPHA)
    mean_d, var_d = ep.posterior.difference_moments(i, j)
    np.testing.assert_allclose(pair_probabilities(mean_d, var_d, NOISE), truth, atol=0.01)
    # new inputs: f* | f is Gaussian with mean K*ᵀK⁻¹f and variance k** - K*ᵀK⁻¹K*
    kernel = Matern32([1.0, 1.5], 2.0)
    X_new = np.random.default_rng(7).normal(size=(3, 2))
    K_cross = kernel(X, X_new)
    proj = np.linalg.solve(K, K_cross)
    cond_mean = f @ proj
    mean_ref = w @ cond_mean
    var_ref = w @ (cond_mean - mean_ref) ** 2 + np.diag(kernel(X_new) - K_cross.T @ proj)
    mean, var = ep.posterior.predict(K_cross, kernel.diag(X_new))
    np.testing.assert_allclose(mean, mean_ref, atol=0.03)
    np.testing.assert_allclose(var, var_ref, rtol=0.03)
    mean_c, cov = ep.posterior.predict_cov(K_cross, kernel(X_new))
    np.testing.assert_allclose(mean_c, mean)
    np.testing.assert_allclose(np.diag(cov), var, rtol=1e-10)
    # at the training inputs the predictive distribution is the posterior itself
    mean_t, var_t = ep.posterior.predict(K, np.diag(K))
    np.testing.assert_allclose(mean_t, ep.posterior.mean, atol=1e-6)
    np.testing.assert_allclose(var_t, ep.posterior.var, rtol=1e-6)


@pytest.mark.parametrize("wins, losses", [(1, 0), (1000, 0), (700, 300), (2.5, 0.5)])
def test_ep_is_exact_for_one_pair_however_often_compared(wins, losses):
    """With one site the tilted distribution is the posterior: EP's evidence and the posterior
    moments of the difference equal one-dimensional integrals under the prior of the
    difference. Many identical comparisons are one site, so EP converges in a few sweeps
    (parallel EP over a thousand copies of one site oscillates)."""
    K = np.array([[1.0, 0.3], [0.3, 2.0]])
    y = np.r_[np.ones(int(wins)), -np.ones(int(losses))] if wins == int(wins) else None
    pairs = (
        grouped(np.zeros(len(y), int), np.ones(len(y), int), y)
        if y is not None
        else PairCounts(
            np.array([0]), np.array([1]), np.array([wins]), np.array([losses]), np.array([0])
        )
    )
    ep = expectation_propagation(K, pairs, noise=NOISE, damping=1.0)
    assert ep.converged and ep.n_iter <= 5
    z0, z1, z2 = reference_moments(wins, losses, 0.0, np.sqrt(1.0 + 2.0 - 2 * 0.3))
    m, v = ep.posterior.difference_moments(np.array([0]), np.array([1]))
    # (up to the relative jitter 1e-8 the Cholesky policy adds to K)
    assert ep.log_marginal == pytest.approx(np.log(z0), abs=1e-7)
    assert m[0] == pytest.approx(z1 / z0, rel=1e-5)
    assert v[0] == pytest.approx(z2 / z0 - (z1 / z0) ** 2, rel=1e-5)
    if (wins, losses) == (1, 0):
        assert ep.log_marginal == pytest.approx(np.log(0.5), abs=1e-7)


def test_posterior_covariance_is_the_inverse_of_prior_plus_site_precision():
    X, K, left, right, _ = small_problem()
    tau = np.random.default_rng(1).gamma(1.0, size=len(left))
    post = LatentPosterior(safe_cholesky(K), left, right, tau, linear=np.ones(len(left)))
    A = np.zeros((len(left), len(K)))
    A[np.arange(len(left)), left] = 1.0
    A[np.arange(len(left)), right] = -1.0
    precision = np.linalg.inv(K) + A.T @ np.diag(tau) @ A
    np.testing.assert_allclose(post.cov, np.linalg.inv(precision), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(post.mean, np.linalg.solve(precision, A.T @ np.ones(len(left))))
    assert post.log_det_inner() == pytest.approx(
        np.linalg.slogdet(np.eye(len(K)) + K @ A.T @ np.diag(tau) @ A)[1], rel=1e-6
    )


def test_damping_and_warm_starts_reach_the_same_fixed_point():
    X, K, left, right, outcome = small_problem(seed=3)
    pairs = grouped(left, right, outcome)
    slow = expectation_propagation(K, pairs, noise=NOISE, damping=0.3)
    fast = expectation_propagation(K, pairs, noise=NOISE, damping=1.0)
    assert slow.converged and fast.converged
    np.testing.assert_allclose(slow.posterior.mean, fast.posterior.mean, atol=1e-5)
    assert slow.log_marginal == pytest.approx(fast.log_marginal, abs=1e-6)
    warm = expectation_propagation(
        K, pairs, noise=NOISE, sites=(slow.site_precision, slow.site_linear)
    )
    assert warm.n_iter <= 2
    np.testing.assert_allclose(warm.posterior.mean, slow.posterior.mean, atol=1e-5)
    with pytest.warns(ConvergenceWarning, match="expectation propagation did not converge"):
        expectation_propagation(K, pairs, noise=NOISE, max_iter=2)
    with pytest.raises(ValueError, match=r"damping must be in \(0, 1\]"):
        expectation_propagation(K, pairs, damping=0.0)
    with pytest.raises(ValueError, match=r"item codes must lie in \[0, 5\)"):
        expectation_propagation(K[:5, :5], pairs)
    with pytest.raises(TypeError, match="pairs must be a PairCounts"):
        laplace_approximation(K, (left, right, outcome))
    with pytest.raises(ValueError, match="sites: expected two arrays"):
        expectation_propagation(K, pairs, sites=(-slow.site_precision, slow.site_linear))


def test_log_marginal_gradient_matches_finite_differences():
    X, _, left, right, outcome = small_problem(seed=5)
    pairs = grouped(left, right, outcome)
    ls, var = np.array([0.8, 1.6]), 1.5

    def log_z(ls, var):
        K = Matern32(ls, var)(X)
        run = expectation_propagation(K, pairs, noise=NOISE, tol=1e-12, max_iter=3000)
        return run, run.log_marginal

    run, _ = log_z(ls, var)
    G = ep_gradient_weights(run.posterior)
    grad = Matern32(ls, var).gradient_contract(G, X)
    h = 1e-5
    for d in range(2):
        step = np.exp(h * np.eye(2)[d])
        fd = (log_z(ls * step, var)[1] - log_z(ls / step, var)[1]) / (2 * h)
        assert grad[d] == pytest.approx(fd, rel=1e-5, abs=1e-8)
    fd_var = (log_z(ls, var * np.exp(h))[1] - log_z(ls, var * np.exp(-h))[1]) / (2 * h)
    assert np.sum(G * Matern32(ls, var)(X)) == pytest.approx(fd_var, rel=1e-5)


def test_laplace_mode_is_a_stationary_point():
    X, K, left, right, outcome = small_problem(seed=4)
    pairs = grouped(left, right, outcome)
    la = laplace_approximation(K, pairs, noise=NOISE)
    f = la.posterior.mean
    _, grad, _ = log_likelihood_terms(
        f[pairs.left] - f[pairs.right], pairs.wins, pairs.losses, ALPHA
    )
    score = np.bincount(pairs.left, grad, len(K)) - np.bincount(pairs.right, grad, len(K))
    np.testing.assert_allclose(np.linalg.solve(K, f), score, atol=1e-6)


# ---------------------------------------------------------------------- the estimator
