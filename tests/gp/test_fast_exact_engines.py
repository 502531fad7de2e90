"""The fast paths of the exact-GP engines (issue 40 point 4): the comparison graph's Laplacian
for ``Lᵀ W L``, the whitened scale terms and Anderson acceleration of full-batch VI (against
the plain iteration and a dense fixed-point check), the item path of the pair moments and the
prior variance of a difference, and EP's adaptive damping (against fixed damping, and where
undamped EP oscillates)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, ndtr

from crowdbayes.exceptions import CholeskyError
from crowdbayes.gp import VI, InducingProjection, LatentPosterior, PairCounts
from crowdbayes.gp import vi as vi_module
from crowdbayes.gp.anderson import Anderson
from crowdbayes.gp.ep import (
    AUTO_DAMPING_FLOOR,
    AutoDamping,
    check_damping,
    expectation_propagation,
)
from crowdbayes.gp.inducing import PAIR_CHUNK, prior_difference_variance
from crowdbayes.gp.item_gram import ItemGram
from crowdbayes.gp.linearised import probit_linearisation
from crowdbayes.gp.posterior import SPARSE_FROM, WhitenedPrecision, difference_precision_matrix
from crowdbayes.gp.vi import whitened_scale_terms
from crowdbayes.kernels import RBF, Matern32

from .test_variational import preference_problem


def random_graph(n_items: int, n_pairs: int, seed: int = 0):
    """A well-conditioned prior factor ``L`` and random comparisons with weights."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_items, n_items))
    L = np.linalg.cholesky(X @ X.T / n_items + np.eye(n_items))
    left = rng.integers(0, n_items, n_pairs)
    right = (left + rng.integers(1, n_items, n_pairs)) % n_items
    return L, left, right, rng.random(n_pairs)


# ------------------------------------------------------------------ Lᵀ W L through the graph
@pytest.mark.parametrize("n_items", [12, SPARSE_FROM + 44])
def test_whitened_precision_is_the_dense_product(n_items):
    L, left, right, w = random_graph(n_items, 8 * n_items)
    dense = L.T @ difference_precision_matrix(left, right, w, n_items) @ L
    got = WhitenedPrecision(L, left, right)(w)
    np.testing.assert_allclose(got, dense, rtol=0, atol=1e-12 * np.abs(dense).max())
    if n_items >= SPARSE_FROM:  # below, the dense product of before, bit for bit
        assert np.array_equal(got, got.T)
    else:
        assert np.array_equal(got, dense)


def test_triangular_gram_is_the_general_gram():
    L, left, right, w = random_graph(60, 400, seed=1)
    gram = ItemGram(L, left, right)
    np.testing.assert_allclose(gram.triangular_gram(w), gram.gram(w), rtol=1e-12, atol=1e-12)


def test_latent_posterior_from_the_graph_is_the_dense_posterior():
    n = SPARSE_FROM + 20
    L, left, right, tau = random_graph(n, 6 * n, seed=2)
    nu = np.random.default_rng(3).normal(size=len(left))
    post = LatentPosterior(L, left, right, tau, linear=nu)
    precision = np.linalg.inv(L @ L.T) + difference_precision_matrix(left, right, tau, n)
    cov = np.linalg.inv(precision)
    np.testing.assert_allclose(post.cov, cov, atol=1e-9)
    linear = np.bincount(left, nu, n) - np.bincount(right, nu, n)
    np.testing.assert_allclose(post.mean, cov @ linear, atol=1e-9)


# ------------------------------------------------------------------ full-batch VI
def test_whitened_scale_terms_are_the_dense_trace_and_quadratic():
    L, left, right, w = random_graph(25, 120, seed=4)
    c = np.random.default_rng(5).normal(size=25)
    scale = 1.7
    z, quadratic = whitened_scale_terms(WhitenedPrecision(L, left, right)(w), L.T @ c, scale)
    K_inv = np.linalg.inv(L @ L.T)
    C = np.linalg.inv(scale * K_inv + difference_precision_matrix(left, right, w, 25))
    mean = C @ c
    np.testing.assert_allclose(L @ z, mean, atol=1e-10)
    assert quadratic == pytest.approx(np.trace(K_inv @ C) + mean @ K_inv @ mean, rel=1e-10)


def plain_vi_step(problem, projection, mean, scale_mean):
    """One unaccelerated VI update, densely (module docstring of ``gp.vi``): ``(f̂', ŝ')``."""
    n = len(mean)
    d = mean[problem.left] - mean[problem.right]
    p, g = probit_linearisation(d, problem.alpha)
    Q = problem.noise_var
    W = difference_precision_matrix(problem.left, problem.right, g * g / Q, n)
    v = g * (problem.pairs.y - p + g * d) / Q
    c = np.bincount(problem.left, v, n) - np.bincount(problem.right, v, n)
    K_inv = np.linalg.inv(projection.chol @ projection.chol.T)
    C = np.linalg.inv(scale_mean * K_inv + W)
    new = C @ c
    prior = problem.prior
    rate = prior.rate0 + 0.5 * (np.trace(K_inv @ C) + new @ K_inv @ new)
    return new, (prior.shape0 + 0.5 * n) / rate


def test_accelerated_vi_ends_at_a_fixed_point_of_the_plain_update():
    problem, kernel = preference_problem()
    projection = InducingProjection(kernel, problem.X_items)
    fit = VI(tol=1e-10, max_iter=200).fit(problem, projection)
    assert fit.converged
    mean, scale = plain_vi_step(problem, projection, fit.factor.mean, fit.scale.mean)
    np.testing.assert_allclose(mean, fit.factor.mean, atol=1e-7)
    assert scale == pytest.approx(fit.scale.mean, rel=1e-8)


class _Plain:
    """Anderson with no memory: the plain iteration."""

    def __init__(self, depth):
        pass

    def next(self, x, gx):
        return gx


def test_acceleration_keeps_the_plain_fixed_point_in_far_fewer_iterations(monkeypatch):
    problem, kernel = preference_problem(prior=(2.0, 0.5))
    projection = InducingProjection(kernel, problem.X_items)
    fast = VI(tol=1e-10, max_iter=2000).fit(problem, projection)
    monkeypatch.setattr(vi_module, "Anderson", _Plain)
    plain = VI(tol=1e-10, max_iter=2000).fit(problem, projection)
    assert fast.converged and plain.converged
    assert fast.n_iter * 3 < plain.n_iter
    np.testing.assert_allclose(fast.factor.mean, plain.factor.mean, atol=1e-7)
    assert fast.scale.mean == pytest.approx(plain.scale.mean, rel=1e-7)


def test_anderson_solves_a_slow_linear_contraction():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    M = Q @ np.diag([0.99, 0.9, 0.5, 0.3, 0.1, 0.0]) @ Q.T
    b = rng.normal(size=6)
    solution = np.linalg.solve(np.eye(6) - M, b)
    accelerator, x = Anderson(depth=6), np.zeros(6)
    for _ in range(12):
        x = accelerator.next(x, M @ x + b)
    assert np.abs(x - solution).max() < 1e-8
    x = np.zeros(6)
    for _ in range(12):  # the plain iteration is nowhere near
        x = M @ x + b
    assert np.abs(x - solution).max() > 1.0


def test_anderson_restarts_when_the_residual_grows():
    accelerator = Anderson(depth=3)
    accelerator.next(np.zeros(2), np.ones(2))
    accelerator.next(np.ones(2), np.full(2, 1.5))  # residual shrank: a secant step
    assert np.array_equal(accelerator.next(np.full(2, 1.5), np.full(2, 9.0)), np.full(2, 9.0))
    with pytest.raises(ValueError, match="depth must be at least 1"):
        Anderson(depth=0)


def test_item_pair_moments_are_the_chunked_ones():
    problem, kernel = preference_problem(n_items=40, n_pairs=300, seed=3)
    projection = InducingProjection(kernel, problem.X_items[::2])  # fewer inducing inputs
    fit = VI(tol=1e-6).fit(problem, InducingProjection(kernel, problem.X_items))
    rng = np.random.default_rng(1)
    factor = type(fit.factor).from_moments(
        rng.normal(size=20), np.cov(rng.normal(size=(20, 60))) + 0.1 * np.eye(20)
    )
    args = (problem.X_items, problem.left, problem.right, factor, fit.scale)
    for got, want in zip(
        projection.item_pair_moments(*args), projection.pair_moments(*args), strict=True
    ):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kernel", [Matern32(np.array([0.7, 1.3]), 2.0), RBF(0.9)])
def test_prior_difference_variance_is_the_quadratic_form_of_the_gram(kernel):
    """``k_ll + k_rr - 2 k_lr = (e_l - e_r)ᵀ K (e_l - e_r)``, over more pairs than one chunk."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 2))
    left, right = rng.integers(0, 30, (2, PAIR_CHUNK + 5))
    K = kernel(X)
    want = K[left, left] + K[right, right] - K[left, right] - K[right, left]
    got = prior_difference_variance(kernel, X, left, right)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ EP's adaptive damping
def sharp_problem(seed=1):
    """Sharp comparisons of a rough utility (seed 1: 21 items, noise 0.71, RBF length-scale
    0.215, prior variance 70, 31 comparisons per item), where undamped parallel EP
    oscillates."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    noise = float(10 ** rng.uniform(-3, 0))
    lengthscale = float(10 ** rng.uniform(-1, 1.3))
    variance = float(10 ** rng.uniform(-1, 2))
    reps = int(rng.integers(1, 60))
    X = rng.uniform(0, 3, (n, 2))
    K = RBF([lengthscale, lengthscale])(X) * variance + 1e-6 * np.eye(n)
    f = rng.normal(size=n) * np.sqrt(variance)
    P = n * reps
    left = rng.integers(0, n, P)
    right = (left + rng.integers(1, n, P)) % n
    won = rng.random(P) < expit((f[left] - f[right]) / noise)
    return K, PairCounts.from_comparisons(left, right, np.where(won, 1, -1)), noise


def test_auto_damping_converges_where_undamped_ep_oscillates():
    K, pairs, noise = sharp_problem()
    with pytest.warns(Warning, match="did not converge"):
        undamped = expectation_propagation(K, pairs, noise=noise, damping=1.0, max_iter=150)
    auto = expectation_propagation(K, pairs, noise=noise, damping="auto", max_iter=300)
    half = expectation_propagation(K, pairs, noise=noise, damping=0.5, max_iter=300)
    assert not undamped.converged and auto.converged and half.converged
    assert auto.n_iter < half.n_iter
    assert auto.log_marginal == pytest.approx(half.log_marginal, abs=1e-5)
    np.testing.assert_allclose(auto.posterior.mean, half.posterior.mean, atol=1e-5)


def test_auto_damping_reaches_the_fixed_point_in_fewer_sweeps():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 3, (60, 2))
    f = np.sin(2 * X[:, 0]) + np.cos(X[:, 1])
    left = rng.integers(0, 60, 900)
    right = (left + rng.integers(1, 60, 900)) % 60
    won = rng.random(900) < ndtr((f[left] - f[right]) / np.sqrt(2))
    pairs = PairCounts.from_comparisons(left, right, np.where(won, 1, -1))
    K = Matern32([1.0, 1.0])(X)
    auto = expectation_propagation(K, pairs, damping="auto")
    half = expectation_propagation(K, pairs, damping=0.5)
    assert auto.converged and auto.n_iter * 2 < half.n_iter
    np.testing.assert_allclose(auto.posterior.mean, half.posterior.mean, atol=1e-5)
    np.testing.assert_allclose(auto.posterior.cov, half.posterior.cov, atol=1e-5)


# the first, undamped sweeps reach sites extreme enough for the probit terms to overflow
# (overflow and invalid-value warnings from likelihood.probit_terms before the Cholesky fails)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_auto_damping_restarts_where_the_undamped_sites_cannot_be_factorised():
    K, pairs, noise = sharp_problem(seed=43)  # 22 items, noise 0.00135
    with pytest.raises(CholeskyError):
        expectation_propagation(K, pairs, noise=noise, damping=1.0, max_iter=20)
    auto = expectation_propagation(K, pairs, noise=noise, damping="auto", max_iter=300)
    half = expectation_propagation(K, pairs, noise=noise, damping=0.5, max_iter=300)
    assert auto.converged and half.converged
    assert auto.log_marginal == pytest.approx(half.log_marginal, abs=1e-5)


def test_auto_damping_schedule():
    schedule = AutoDamping()
    assert [schedule.after(c) for c in (5.0, 4.0)] == [1.0, 1.0]
    assert schedule.after(6.0) == 0.5 and schedule.ceiling == 0.75  # grew: halved, capped
    assert [schedule.after(c) for c in (3.0, 2.0)] == [0.75, 0.75]
    assert schedule.restart() and schedule.value == schedule.ceiling == 0.375
    assert schedule.after(1e3) == 0.375  # a restart forgets the last change
    schedule.ceiling = schedule.value = AUTO_DAMPING_FLOOR
    assert not schedule.restart()


@pytest.mark.parametrize("bad", ["fast", 0.0, 1.5])
def test_check_damping_names_the_problem(bad):
    check_damping("auto")
    with pytest.raises(ValueError, match=r"damping must be in \(0, 1\] or 'auto'"):
        check_damping(bad)
