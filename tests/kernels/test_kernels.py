"""Kernels, length-scale heuristics, K-means inducing points and the Cholesky policy."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from crowdbayes.kernels import (
    RBF,
    Independent,
    Matern32,
    kmeans_inducing_points,
    make_kernel,
    median_heuristic,
    scaled_median_heuristic,
)
from crowdbayes.linalg import (
    CholeskyError,
    NumericalWarning,
    base_jitter,
    cholesky_logdet,
    cholesky_solve,
    safe_cholesky,
    triangular_solve,
)


def inputs(n=7, m=5, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(m, d))


def matern_direct(X, Y, ls, var):
    """Naive double loop over pairs and dimensions (the paper's product form)."""
    K = np.empty((len(X), len(Y)))
    for i, x in enumerate(X):
        for j, y in enumerate(Y):
            u = np.sqrt(3.0) * np.abs(x - y) / ls
            K[i, j] = var * np.prod((1.0 + u) * np.exp(-u))
    return K


def test_matern_matches_the_product_formula_and_sklearn_in_one_dimension():
    from sklearn.gaussian_process.kernels import Matern

    X, Y = inputs()
    ls = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(Matern32(ls, 1.7)(X, Y), matern_direct(X, Y, ls, 1.7), rtol=1e-12)
    # in one dimension the product form is the usual (isotropic) Matérn-3/2
    ref = Matern(length_scale=0.8, nu=1.5)(X[:, :1], Y[:, :1])
    np.testing.assert_allclose(Matern32(0.8)(X[:, :1], Y[:, :1]), ref, rtol=1e-10)


def test_rbf_matches_sklearn():
    from sklearn.gaussian_process.kernels import RBF as SkRBF

    X, Y = inputs()
    ls = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(RBF(ls, 2.0)(X, Y), 2.0 * SkRBF(ls)(X, Y), rtol=1e-10)


@pytest.mark.parametrize("cls", [Matern32, RBF])
@pytest.mark.parametrize("ls", [np.array([0.4, 1.3, 2.2]), np.array([0.9])])
def test_log_lengthscale_gradients_match_finite_differences(cls, ls):
    X, Y = inputs()
    kernel = cls(ls, 1.5)
    K, dK = kernel.gradient(X, Y)
    assert dK.shape == (len(ls), len(X), len(Y))
    np.testing.assert_allclose(K, kernel(X, Y))
    h = 1e-6
    for d in range(len(ls)):
        step = np.zeros(len(ls))
        step[d] = h
        plus = cls(ls * np.exp(step), 1.5)(X, Y)
        minus = cls(ls * np.exp(-step), 1.5)(X, Y)
        np.testing.assert_allclose(dK[d], (plus - minus) / (2 * h), rtol=1e-6, atol=1e-9)
    # the contraction is Σ_ij G_ij dK[d]_ij without the (D, n, m) array
    G = np.random.default_rng(3).normal(size=K.shape)
    np.testing.assert_allclose(
        kernel.gradient_contract(G, X, Y), np.einsum("ij,dij->d", G, dK), rtol=1e-10
    )


def test_paper_equation_13_for_the_matern_gradient():
    """∂K/∂l_d = K / k_d · 3 r²/l³ exp(-√3 r / l) (Simpson & Gurevych Eqs. 12–13)."""
    X, Y = inputs(d=2)
    ls = np.array([0.7, 1.9])
    _, dK = Matern32(ls).gradient(X, Y)
    r = np.abs(X[:, None, 0] - Y[None, :, 0])
    u = np.sqrt(3) * r / ls[0]
    k0 = (1 + u) * np.exp(-u)
    eq13 = Matern32(ls)(X, Y) / k0 * 3 * r**2 / ls[0] ** 3 * np.exp(-u)
    np.testing.assert_allclose(dK[0] / ls[0], eq13, rtol=1e-10)


@pytest.mark.parametrize(
    "kernel", [Matern32([0.5, 1.0, 2.0], 1.3), RBF(0.7, 2.0), Independent(2.5)]
)
def test_paired_and_diag_agree_with_the_full_matrix(kernel):
    X, Y = inputs(n=5, m=5)
    if isinstance(kernel, Independent):
        Y = Y.copy()
        Y[[1, 3]] = X[[1, 3]]
    np.testing.assert_allclose(kernel.paired(X, Y), np.diag(kernel(X, Y)), rtol=1e-12)
    np.testing.assert_allclose(kernel.diag(X), np.diag(kernel(X)), rtol=1e-12)


def test_independent_kernel_and_make_kernel():
    codes = np.array([[0.0], [1.0], [0.0]])
    np.testing.assert_array_equal(
        Independent(2.0)(codes), 2.0 * np.array([[1, 0, 1], [0, 1, 0], [1, 0, 1]])
    )
    assert isinstance(make_kernel("Matern-32", 1.0, 1.0), Matern32)
    assert isinstance(make_kernel("rbf", 1.0, 1.0), RBF)
    kernel = RBF(1.0)
    assert make_kernel(kernel, 5.0, 5.0) is kernel
    with pytest.raises(ValueError, match=r"kernel must be one of \['matern32', 'rbf'\]"):
        make_kernel("cosine", 1.0, 1.0)
    with pytest.raises(ValueError, match=r"Matern32: length-scales must be positive and finite"):
        Matern32([1.0, 0.0])
    with pytest.raises(ValueError, match=r"RBF: 2 length-scale\(s\) for inputs with 3"):
        RBF([1.0, 2.0])(np.zeros((2, 3)))


def test_median_heuristic_is_the_per_dimension_median_of_pairwise_distances():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3)) * [1.0, 5.0, 0.1]
    expected = [
        np.median([abs(X[i, d] - X[j, d]) for i in range(40) for j in range(i + 1, 40)])
        for d in range(3)
    ]
    np.testing.assert_allclose(median_heuristic(X), expected, rtol=1e-12)
    np.testing.assert_allclose(
        scaled_median_heuristic(X), 20 * np.sqrt(3) * np.asarray(expected), rtol=1e-12
    )
    # subsampling is seeded
    big = rng.normal(size=(300, 2))
    a = median_heuristic(big, max_items=100, random_state=5)
    np.testing.assert_array_equal(a, median_heuristic(big, max_items=100, random_state=5))
    np.testing.assert_allclose(a, median_heuristic(big, max_items=None), rtol=0.2)


def test_median_heuristic_fallbacks_for_sparse_and_constant_features():
    X = np.zeros((10, 2))
    X[:2, 0] = [1.0, 3.0]  # median distance 0: use the mean distance instead
    ls = median_heuristic(X)
    n_pairs = 45
    mean_distance = (2.0 + 8 * 1.0 + 8 * 3.0) / n_pairs
    np.testing.assert_allclose(ls, [mean_distance, 1.0])


def test_kmeans_inducing_points_are_seeded_and_as_good_as_sklearn():
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(2)
    centres = rng.normal(scale=5.0, size=(6, 2))
    X = np.repeat(centres, 50, axis=0) + rng.normal(size=(300, 2))
    Z = kmeans_inducing_points(X, 6, random_state=0)
    np.testing.assert_array_equal(Z, kmeans_inducing_points(X, 6, random_state=0))

    def inertia(C):
        return ((X[:, None, :] - C[None]) ** 2).sum(-1).min(axis=1).sum()

    sk = KMeans(6, n_init=10, random_state=0).fit(X)
    assert inertia(Z) <= 1.05 * sk.inertia_
    # at most n_points distinct rows: the rows themselves
    few = np.array([[1.0, 2.0], [0.0, 0.0], [1.0, 2.0]])
    np.testing.assert_array_equal(kmeans_inducing_points(few, 5), few[:2])
    with pytest.raises(ValueError, match="n_points must be at least 1"):
        kmeans_inducing_points(X, 0)


def test_safe_cholesky_factorises_solves_and_logdets():
    rng = np.random.default_rng(4)
    A = rng.normal(size=(6, 6))
    K = A @ A.T + 6 * np.eye(6)
    L = safe_cholesky(K)
    jitter = base_jitter(np.float64) * np.mean(np.diag(K))
    np.testing.assert_allclose(L @ L.T, K + jitter * np.eye(6), rtol=1e-12)
    B = rng.normal(size=(6, 2))
    np.testing.assert_allclose(cholesky_solve(L, B), np.linalg.solve(K, B), rtol=1e-6)
    np.testing.assert_allclose(triangular_solve(L, B), np.linalg.solve(L, B), rtol=1e-10)
    np.testing.assert_allclose(
        triangular_solve(L, B, transpose=True), np.linalg.solve(L.T, B), rtol=1e-10
    )
    assert cholesky_logdet(L) == pytest.approx(np.linalg.slogdet(K)[1], rel=1e-8)
    assert base_jitter(np.float32) == 1e-5
    np.testing.assert_allclose(safe_cholesky(K, jitter=0.0), np.linalg.cholesky(K), rtol=1e-12)
    assert safe_cholesky(K.astype(np.float32)).dtype == np.float32


def test_safe_cholesky_escalates_with_a_warning_then_raises_a_typed_error():
    # an eigenvalue of -1e-6 (rounding in a kernel matrix can do this): needs 1e-5 jitter
    Q = np.linalg.qr(np.random.default_rng(5).normal(size=(5, 5)))[0]
    K = Q @ np.diag([2.0, 1.0, 1.0, 1.0, -1e-6]) @ Q.T
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumericalWarning)
        with pytest.raises(NumericalWarning, match=r"kernel: Cholesky needed a relative jitter"):
            safe_cholesky(K, what="kernel")
    with pytest.warns(NumericalWarning, match=re.escape("jitter of 1.0e-05 (3 escalation(s))")):
        L = safe_cholesky(K, what="kernel")
    np.testing.assert_allclose(L @ L.T, K + 1e-5 * np.eye(5), atol=1e-12)
    indefinite = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(CholeskyError, match=re.escape("demo: not positive definite even with")):
        safe_cholesky(indefinite, what="demo")
    assert issubclass(CholeskyError, np.linalg.LinAlgError)
    with pytest.raises(CholeskyError, match="non-finite"):
        safe_cholesky(np.array([[np.nan]]))
    with pytest.raises(CholeskyError, match="square"):
        safe_cholesky(np.ones((2, 3)))


@pytest.mark.parametrize(
    "kernel", [Matern32([0.5, 1.0, 2.0], 1.3), RBF(0.7, 2.0), Independent(2.5)]
)
def test_kernels_are_stored_in_model_files_exactly(kernel):
    """A kernel is a parameter and a fitted attribute of the GP models: the model file format
    restores it (class, length-scales, variance) bit for bit."""
    from crowdbayes.persistence import decode, encode

    description, arrays = encode({"kernel": kernel})
    back = decode(description, arrays)["kernel"]
    assert type(back) is type(kernel) and repr(back) == repr(kernel)
    X, Y = inputs(n=4, m=3)
    np.testing.assert_array_equal(back(X, Y), kernel(X, Y))


def test_a_custom_kernel_is_refused_by_the_model_file_format():
    from crowdbayes.persistence import encode

    class Constant(Independent):
        pass

    with pytest.raises(TypeError, match="which the safe format cannot store"):
        encode(Constant(1.0))
