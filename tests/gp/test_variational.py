"""The variational pieces of the GP engine: learning rates, the linearised probit likelihood
and its noise, natural-gradient steps against the conjugate posterior, the gamma scale factor
against Monte Carlo, the Cholesky inverse, and the bound's length-scale gradient against
finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate
from scipy.special import ndtr
from scipy.stats import gamma, norm

from crowdbayes.gp import (
    VI,
    EncodedPairs,
    GammaFactor,
    GaussianFactor,
    InducingProjection,
    PreferenceProblem,
    beta_noise_variance,
    gaussian_prior_kl,
    learning_rate,
    linearised_bound,
    natural_gradient_step,
    probit_linearisation,
)
from crowdbayes.kernels import Matern32


def preference_problem(n_items=30, n_pairs=250, seed=0, prior=(2.0, 2.0)):
    """Items with 2 features, utilities from the GP prior, probit comparisons; the engine's
    problem with the gamma prior ``prior`` (shape, rate)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 3, (n_items, 2))
    kernel = Matern32([1.0, 1.0])
    f = np.linalg.cholesky(kernel(X) + 1e-8 * np.eye(n_items)) @ rng.standard_normal(n_items)
    left = rng.integers(0, n_items, n_pairs)
    right = (left + rng.integers(1, n_items, n_pairs)) % n_items
    y = (rng.random(n_pairs) < ndtr((f[left] - f[right]) / np.sqrt(2))).astype(float)
    pairs = EncodedPairs(left, right, y, np.zeros(n_pairs, dtype=int), 0)
    shape, rate = prior
    problem = PreferenceProblem.build(
        X, pairs, kernel, noise=1.0, prior=GammaFactor.prior(shape, rate), prior_scale=rate / shape
    )
    return problem, kernel


@pytest.fixture(scope="module")
def vi():
    problem, kernel = preference_problem()
    projection = InducingProjection(kernel, problem.X_items)
    return problem, projection, VI(tol=1e-8).fit(problem, projection)


def test_learning_rate():
    assert learning_rate(1, 1.0, 0.7) == pytest.approx(2.0**-0.7)
    assert learning_rate(10, 0.0, 1.0) == pytest.approx(0.1)
    assert learning_rate(5, 3.0, 0.0) == 1.0


def test_probit_linearisation_is_the_derivative():
    d = np.array([-3.0, -0.4, 0.0, 1.2, 5.0])
    alpha = np.sqrt(2) * 0.8
    p, g = probit_linearisation(d, alpha)
    h = 1e-6
    numeric = (ndtr((d + h) / alpha) - ndtr((d - h) / alpha)) / (2 * h)
    np.testing.assert_allclose(p, ndtr(d / alpha))
    np.testing.assert_allclose(g, numeric, rtol=1e-6)


@pytest.mark.parametrize("v", [0.05, 0.7, 4.0])
def test_beta_noise_matches_prior_moments_by_quadrature(v):
    """γ = λ match the prior variance of Φ(d/α), computed here by quadrature; Q is then the
    beta-Bernoulli predictive variance (2020, Eq. 8)."""
    alpha = np.sqrt(2)
    second, _ = integrate.quad(
        lambda d: ndtr(d / alpha) ** 2 * norm.pdf(d, 0, np.sqrt(v)), -np.inf, np.inf
    )
    var = second - 0.25
    total = 0.25 / var - 1
    for y in (0.0, 0.5, 1.0):
        expected = (total / 2 + y) * (total / 2 + 1 - y) / (total + 1) ** 2
        assert beta_noise_variance(np.array([v]), np.array([y]), alpha)[0] == pytest.approx(
            expected, rel=1e-6
        )


def test_natural_gradient_step_full_step_is_the_conjugate_posterior():
    """With ρ = 1 one step gives the exact posterior of a linear-Gaussian model; with ρ < 1
    repeated steps on the same batch converge to it."""
    rng = np.random.default_rng(3)
    M, P = 5, 30
    K = Matern32(1.0)(rng.uniform(0, 2, (M, 1))) + 0.1 * np.eye(M)
    prior_prec = np.linalg.inv(K)
    rows = rng.standard_normal((P, M))
    noise = rng.uniform(0.5, 2.0, P)
    u = rng.multivariate_normal(np.zeros(M), K)
    y = rows @ u + rng.standard_normal(P) * np.sqrt(noise)
    post_cov = np.linalg.inv(prior_prec + rows.T @ np.diag(1 / noise) @ rows)
    post_mean = post_cov @ rows.T @ (y / noise)
    start = GaussianFactor(prior_prec, np.zeros(M))
    exact = natural_gradient_step(start, prior_prec, rows, 1 / noise, 1 / noise, y, 1.0)
    np.testing.assert_allclose(exact.mean, post_mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(exact.cov, post_cov, rtol=1e-6, atol=1e-9)
    factor = start
    for n in range(1, 300):
        rho = learning_rate(n, 1.0, 0.6)
        factor = natural_gradient_step(factor, prior_prec, rows, 1 / noise, 1 / noise, y, rho)
    np.testing.assert_allclose(factor.mean, post_mean, rtol=1e-3, atol=1e-4)


def test_gamma_update_and_kl():
    rng = np.random.default_rng(4)
    M = 4
    K = Matern32(1.0)(rng.uniform(0, 2, (M, 1))) + 0.1 * np.eye(M)
    factor = GaussianFactor.from_moments(rng.standard_normal(M), 0.3 * np.eye(M))
    prior = GammaFactor.prior(2.0, 3.0)
    post = prior.update(np.linalg.inv(K), factor)
    quad = np.trace(np.linalg.solve(K, factor.cov)) + factor.mean @ np.linalg.solve(K, factor.mean)
    assert post.shape == pytest.approx(2.0 + M / 2)
    assert post.rate == pytest.approx(3.0 + quad / 2)
    # KL(q ‖ p) by Monte Carlo
    s = np.random.default_rng(5).gamma(post.shape, 1 / post.rate, 400_000)
    kl = np.mean(
        gamma.logpdf(s, post.shape, scale=1 / post.rate) - gamma.logpdf(s, 2.0, scale=1 / 3)
    )
    assert post.kl() == pytest.approx(kl, abs=0.01)
    assert prior.kl() == pytest.approx(0.0, abs=1e-12)


def test_cholesky_inverse_is_the_inverse():
    rng = np.random.default_rng(0)
    B = rng.standard_normal((30, 30))
    P = B @ B.T + 30 * np.eye(30)
    factor = GaussianFactor(P, rng.standard_normal(30))
    np.testing.assert_allclose(factor.cov, np.linalg.inv(P), rtol=1e-6, atol=1e-9)
    assert np.array_equal(factor.cov, factor.cov.T)


def test_bound_gradient_matches_finite_differences(vi):
    """With inducing points at the items (full-batch VI) the bound depends on θ only through
    K_mm at fixed q, so the analytic gradient must match central differences of the bound."""
    problem, projection, fit = vi
    factor, scale, Z = fit.factor, fit.scale, projection.Z
    log_ls = np.log([0.8, 1.3])

    def bound(theta):
        return linearised_bound(
            problem, InducingProjection(Matern32(np.exp(theta)), Z), factor, scale
        )

    analytic = InducingProjection(Matern32(np.exp(log_ls)), Z).bound_gradient(factor, scale)
    h = 1e-5
    numeric = [(bound(log_ls + h * e) - bound(log_ls - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-4)
    # and of the prior term alone with inducing points that are not the items
    Zs = Z[:7]

    def neg_kl(theta):
        projection = InducingProjection(Matern32(np.exp(theta)), Zs)
        small = GaussianFactor.from_moments(factor.mean[:7], factor.cov[:7, :7])
        return -gaussian_prior_kl(projection.chol, projection.K_inv, small, scale)

    small = GaussianFactor.from_moments(factor.mean[:7], factor.cov[:7, :7])
    analytic = InducingProjection(Matern32(np.exp(log_ls)), Zs).bound_gradient(small, scale)
    numeric = [(neg_kl(log_ls + h * e) - neg_kl(log_ls - h * e)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------- full batches through items
def test_item_gram_equals_the_sums_over_the_comparison_rows():
    """Aᵀ L_w A, Aᵀ Eᵀ v and E A m through the items equal the sums over the rows
    A_l − A_r, with repeated and reversed pairs, zero weights and items never compared."""
    from crowdbayes.gp.item_gram import ItemGram

    rng = np.random.default_rng(4)
    A = rng.normal(size=(14, 5))
    left = rng.integers(0, 12, 200)
    right = (left + rng.integers(1, 12, 200)) % 12
    left[:10], right[:10] = right[10:20], left[10:20]  # the same pairs the other way round
    w, v, m = rng.uniform(size=200), rng.normal(size=200), rng.normal(size=5)
    w[:5] = 0.0
    D = A[left] - A[right]
    gram = ItemGram(A, left, right)
    G = gram.gram(w)
    assert np.array_equal(G, G.T)
    np.testing.assert_allclose(G, D.T @ (w[:, None] * D), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gram.project(v), D.T @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gram.differences(m), D @ m, rtol=1e-12, atol=1e-12)


def test_auto_batch_takes_every_comparison_where_a_step_costs_less_than_a_pass():
    from crowdbayes.gp.item_gram import ItemGram
    from crowdbayes.gp.svi import AUTO_BATCH, resolve_batch_size

    # 10 comparisons per item: N M² + 4 P M well below P M² / 2 + 2 P M
    assert ItemGram.cheaper(1000, 10_000, 200)
    assert resolve_batch_size("auto", 1000, 10_000, 200) is None
    # one comparison per item: the rows are cheaper, mini-batches stay
    assert not ItemGram.cheaper(1000, 1000, 200)
    assert resolve_batch_size("auto", 5000, 5000, 200) == AUTO_BATCH
    assert resolve_batch_size(64, 1000, 10_000, 200) == 64
    assert resolve_batch_size(None, 5000, 5000, 200) is None
