"""Deep crowd clustering (BayesSCDC): conjugate pieces, local message passing, the estimator."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from scipy import stats  # noqa: E402

from crowdbayes.datasets.clustering import simulate_pair_links  # noqa: E402
from crowdbayes.exceptions import NotFittedError  # noqa: E402
from crowdbayes.metrics.clustering import unsupervised_accuracy  # noqa: E402
from crowdbayes.models.clustering.deep import SCDC, BayesSCDC  # noqa: E402
from crowdbayes.models.clustering.deep._conjugate import (  # noqa: E402
    NIWExpectations,  # noqa: E402
    natural_step,
    niw_expected_stats,
    niw_from_standard,
    niw_kl,
    niw_statistics,
    niw_to_standard,
)
from crowdbayes.models.clustering.deep.meanfield import (  # noqa: E402
    local_meanfield,
    padded_product,
    table_messages,
)

torch.set_num_threads(1)


def _niw_draws(m, kappa, S, nu, n, rng):
    sigmas = stats.invwishart(df=nu, scale=S).rvs(size=n, random_state=rng)
    chol = np.linalg.cholesky(sigmas / kappa)
    mus = m + np.einsum("nij,nj->ni", chol, rng.standard_normal((n, len(m))))
    return mus, sigmas


def _niw_logpdf(mus, sigmas, m, kappa, S, nu):
    iw = stats.invwishart(df=nu, scale=S)
    return np.array(
        [
            iw.logpdf(s) + stats.multivariate_normal(m, s / kappa).logpdf(mu)
            for mu, s in zip(mus, sigmas, strict=True)
        ]
    )


@pytest.fixture
def niw_pair():
    m = np.array([[0.5, -1.0]])
    S = np.array([[[2.0, 0.3], [0.3, 1.0]]])
    q = niw_from_standard(m, [2.0], S, [6.0])
    p = niw_from_standard(np.zeros((1, 2)), [0.5], 2.5 * np.eye(2)[None], [4.5])
    return q, p


def test_niw_round_trip_and_expected_stats_match_monte_carlo(niw_pair):
    q, _ = niw_pair
    m, kappa, S, nu = niw_to_standard(q)
    np.testing.assert_allclose(m, [[0.5, -1.0]])
    np.testing.assert_allclose(S, [[[2.0, 0.3], [0.3, 1.0]]])
    rng = np.random.default_rng(0)
    mus, sigmas = _niw_draws(m[0], kappa[0], S[0], nu[0], 40_000, rng)
    precs = np.linalg.inv(sigmas)
    e = niw_expected_stats(q)
    np.testing.assert_allclose(e.prec[0], precs.mean(0), rtol=0.03, atol=0.02)
    np.testing.assert_allclose(
        e.prec_mean[0], np.einsum("nij,nj->ni", precs, mus).mean(0), rtol=0.03, atol=0.03
    )
    np.testing.assert_allclose(
        e.mean_prec_mean[0], np.einsum("ni,nij,nj->n", mus, precs, mus).mean(), rtol=0.03
    )
    np.testing.assert_allclose(
        e.logdet_prec[0], np.linalg.slogdet(precs)[1].mean(), rtol=0.02, atol=0.02
    )


def test_niw_kl_matches_monte_carlo_and_is_zero_on_itself(niw_pair):
    q, p = niw_pair
    rng = np.random.default_rng(1)
    mq, kq, Sq, nq = (a[0] for a in niw_to_standard(q))
    mp, kp, Sp, np_ = (a[0] for a in niw_to_standard(p))
    mus, sigmas = _niw_draws(mq, kq, Sq, nq, 1500, rng)
    mc = np.mean(
        _niw_logpdf(mus, sigmas, mq, kq, Sq, nq) - _niw_logpdf(mus, sigmas, mp, kp, Sp, np_)
    )
    assert niw_kl(q, p)[0] == pytest.approx(mc, rel=0.08)
    assert niw_kl(q, q)[0] == pytest.approx(0.0, abs=1e-9)


def test_natural_step_of_one_on_full_data_is_the_closed_form_update():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(30, 2)) + 3.0
    prior = niw_from_standard(np.zeros((1, 2)), [0.5], 2.5 * np.eye(2)[None], [2.5])
    start = niw_from_standard(rng.normal(size=(1, 2)), [1.0], 3 * np.eye(2)[None], [3.0])
    resp = np.ones((30, 1))
    stats_ = niw_statistics(resp, x, x[:, :, None] * x[:, None, :])
    post = natural_step(start, prior, stats_, rho=1.0, scale=1.0)
    m, kappa, S, nu = (a[0] for a in niw_to_standard(post))
    n, xbar = len(x), x.mean(0)
    scatter = (x - xbar).T @ (x - xbar)
    assert kappa == pytest.approx(0.5 + n)
    assert nu == pytest.approx(2.5 + n)
    np.testing.assert_allclose(m, n * xbar / (0.5 + n))
    np.testing.assert_allclose(
        S, 2.5 * np.eye(2) + scatter + 0.5 * n / (0.5 + n) * np.outer(xbar, xbar), rtol=1e-10
    )
    # the Dirichlet factor: prior plus counts; half a step moves half way
    half = natural_step(
        (np.array([3.0, 1.0]),), (np.array([0.1, 0.1]),), (np.array([4, 6]),), 0.5, 2.0
    )
    np.testing.assert_allclose(half[0], 0.5 * np.array([3.0, 1.0]) + 0.5 * np.array([8.1, 12.1]))


def _toy_globals(K=3, d=2, seed=0):
    rng = np.random.default_rng(seed)
    niw = niw_from_standard(
        rng.normal(0, 2, (K, d)),
        np.full(K, 5.0),
        np.broadcast_to(3 * np.eye(d), (K, d, d)),
        np.full(K, d + 2.0),
    )
    e = NIWExpectations(*(torch.as_tensor(a, dtype=torch.float64) for a in niw_expected_stats(niw)))
    log_pi = torch.log(torch.full((K,), 1.0 / K, dtype=torch.float64))
    J = torch.as_tensor(rng.uniform(0.5, 2, (20, d)))
    h = torch.as_tensor(rng.normal(0, 2, (20, d))) * J
    return e, log_pi, J, h


def test_local_meanfield_bound_rises_to_a_fixed_point():
    e, log_pi, J, h = _toy_globals()
    resp, bounds = local_meanfield(e, log_pi, J, h, n_iter=30, track=True)
    assert np.all(np.diff(bounds) >= -1e-9)
    again, _ = local_meanfield(e, log_pi, J, h, n_iter=31)
    assert torch.max(torch.abs(again - resp)) < 1e-6
    np.testing.assert_allclose(resp.sum(1).numpy(), 1.0)


def _blobs(seed=0, per=40):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 6.0], [6.0, -3.0], [-6.0, -3.0]])
    y = np.repeat(np.arange(3), per)
    X = centres[y] + rng.normal(size=(len(y), 2))
    return X, y


@pytest.fixture(scope="module")
def blob_fit():
    X, y = _blobs()
    sim = simulate_pair_links(
        y,
        n_workers=5,
        pairs_per_worker=40,
        alpha=0.9,
        beta=0.9,
        items=np.arange(0, 120, 2),
        random_state=0,
    )
    model = BayesSCDC(
        n_clusters=6,
        hidden=(20,),
        epochs=30,
        warmup_epochs=8,
        batch_size=30,
        learning_rate=1e-2,
        n_init=1,
        random_state=3,
    )
    return model.fit(X, sim.links), X, y, sim


def test_recovers_an_easy_mixture_with_links(blob_fit):
    model, X, y, _ = blob_fit
    assert unsupervised_accuracy(y, model.assignments_.to_numpy()) >= 0.9
    assert 3 <= model.n_clusters_used_ <= 6
    proba = model.predict_proba()
    np.testing.assert_allclose(proba.to_numpy().sum(1), 1.0, rtol=1e-5)
    assert model.embedding_.shape == (len(X), 2)
    assert {"alpha", "beta", "alpha_lower", "alpha_upper", "beta_lower", "beta_upper"} <= set(
        model.workers_.columns
    )
    assert len(model.workers_) == 5
    assert len(model.history_) == 30 and np.isfinite(model.history_).all()
    new = model.predict(X[:10])
    assert (new == model.assignments_.to_numpy()[:10]).mean() >= 0.9


def test_same_seed_same_result_and_item_ids():
    X, y = _blobs(per=15)
    ids = [f"item{i}" for i in range(len(X))]
    sim = simulate_pair_links(
        pd.Series(y, index=ids), n_workers=3, pairs_per_worker=20, random_state=1
    )
    kwargs = dict(n_clusters=4, hidden=(10,), epochs=3, warmup_epochs=1, batch_size=15)
    a = BayesSCDC(random_state=5, **kwargs).fit(X, sim.links, item_ids=ids)
    b = BayesSCDC(random_state=5, **kwargs).fit(X, sim.links, item_ids=ids)
    pd.testing.assert_frame_equal(a.predict_proba(), b.predict_proba())
    assert a.history_ == b.history_
    assert list(a.assignments_.index) == ids
    # a Links built with the same observations gives the same fit
    c = BayesSCDC(random_state=5, **kwargs).fit(X, sim.to_links(observations=X, item_ids=ids))
    pd.testing.assert_frame_equal(a.predict_proba(), c.predict_proba())


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"decoder": "poisson"}, "decoder"),
        ({"n_clusters": 0}, "n_clusters"),
        ({"epochs": 0}, "epochs"),
        ({"hidden": (10, -1)}, "hidden"),
        ({"learning_rate": -1.0}, "learning_rate"),
        ({"global_learning_rate": 2.0}, "global_learning_rate"),
        ({"warmup_epochs": -1}, "warmup_epochs"),
        ({"n_init": 0}, "n_init"),
        ({"device": "tpu"}, "device"),
        ({"link_weight": 0.0}, "link_weight"),
        ({"link_weight": float("nan")}, "link_weight"),
    ],
)
def test_bad_hyperparameters_name_the_parameter(params, name):
    X, _ = _blobs(per=5)
    with pytest.raises(ValueError, match=name):
        BayesSCDC(**params).fit(X)


def test_cuda_unavailable_is_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    X, _ = _blobs(per=5)
    with pytest.raises(ValueError, match="CUDA is not available"):
        BayesSCDC(device="cuda").fit(X)


def test_not_fitted_and_mismatched_links():
    model = BayesSCDC()
    with pytest.raises(NotFittedError):
        model.predict_proba()
    with pytest.raises(NotFittedError):
        model.predict(np.zeros((2, 2)))
    X, _ = _blobs(per=5)
    links = pd.DataFrame({"worker": [0], "left": [0], "right": [99], "label": [1]})
    with pytest.raises(ValueError, match="99"):
        BayesSCDC(epochs=1).fit(X, links)
    with pytest.raises(ValueError, match="bernoulli"):
        BayesSCDC(decoder="bernoulli", epochs=1).fit(X)


@pytest.mark.slow
def test_import_crowdbayes_does_not_import_torch():
    code = "import sys, crowdbayes; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_scdc_point_estimates_fit_an_easy_mixture():
    X, y = _blobs(per=20)
    sim = simulate_pair_links(
        y, n_workers=4, pairs_per_worker=30, random_state=2, alpha=0.9, beta=0.9
    )
    kwargs = dict(
        n_clusters=3, hidden=(20,), epochs=25, warmup_epochs=5, batch_size=20, learning_rate=1e-2
    )
    model = SCDC(random_state=0, **kwargs).fit(X, sim.links)
    again = SCDC(random_state=0, **kwargs).fit(X, sim.links)
    pd.testing.assert_frame_equal(model.predict_proba(), again.predict_proba())
    assert unsupervised_accuracy(y, model.assignments_.to_numpy()) >= 0.8
    assert list(model.workers_.columns) == ["alpha", "beta", "n_links"]
    assert model.workers_["alpha"].between(0, 1).all()
    np.testing.assert_allclose(model.predict_proba().to_numpy().sum(1), 1.0, rtol=1e-5)
    assert model.predict(X).shape == (len(X),)
    with pytest.raises(ValueError, match="decoder"):
        SCDC(decoder="nope").fit(X)


def test_link_weight_scales_the_relational_part_of_both_models():
    """``link_weight`` λ tempers the link likelihood, p(L | z)^λ: the SCDC relational term,
    the BayesSCDC link messages and its link term in the objective all scale by λ."""
    X, y = _blobs(per=10)
    sim = simulate_pair_links(y, n_workers=3, pairs_per_worker=15, random_state=4)
    kwargs = dict(n_clusters=3, hidden=(8,), epochs=2, warmup_epochs=0, batch_size=10)
    model = SCDC(random_state=0, **kwargs).fit(X, sim.links)
    data = model._prepare(X, sim.links, None)
    values = {}
    for weight in (1.0, 2.5):
        model.link_weight = weight
        with torch.no_grad():
            rel = model._relational(data, data.links, len(X), np.random.default_rng(0))
        values[weight] = float(rel)
    assert values[1.0] < 0
    np.testing.assert_allclose(values[2.5], 2.5 * values[1.0], rtol=1e-5)

    bayes = BayesSCDC(random_state=0, **kwargs).fit(X, sim.links)
    data = bayes._prepare(X, sim.links, None)
    batch = np.arange(len(X))
    plain = bayes._messenger(data.links, batch)(None).numpy()
    bayes.link_weight = 2.5
    scaled = bayes._messenger(data.links, batch)(None).numpy()
    np.testing.assert_allclose(scaled, 2.5 * plain, rtol=1e-5, atol=1e-6)
    assert np.abs(plain).max() > 0


@pytest.mark.slow
def test_scdc_link_weight_lets_links_override_the_dominant_feature_split():
    """Features split strongly along x, the links describe a weaker split along y: with the
    plain likelihood the generative part wins; with a tempered-up link likelihood and
    restarts SCDC follows the links (the CMU faces problem: pose is not the dominant
    structure of the pixels)."""
    rng = np.random.default_rng(0)
    n = 120
    side, truth = rng.integers(2, size=n), rng.integers(2, size=n)
    X = np.column_stack([6.0 * side, 1.5 * truth]) + rng.normal(0, 0.5, (n, 2))
    X = np.column_stack([X, rng.normal(0, 0.5, (n, 2))])
    sim = simulate_pair_links(truth, n_workers=3, pairs_per_worker=40, random_state=0)
    kwargs = dict(n_clusters=2, hidden=(16,), epochs=15, warmup_epochs=3, batch_size=20)
    kwargs.update(learning_rate=1e-2, n_init=2, random_state=0)
    plain = SCDC(**kwargs).fit(X, sim.links).assignments_.to_numpy()
    tempered = SCDC(link_weight=10.0, **kwargs).fit(X, sim.links).assignments_.to_numpy()
    assert unsupervised_accuracy(truth, tempered) >= 0.85
    assert unsupervised_accuracy(truth, tempered) > unsupervised_accuracy(truth, plain) + 0.1


def test_padded_link_messages_equal_the_sparse_product():
    """The fixed-shape link messages that the CUDA graph replays equal the sparse product of
    the eager path (repeated pairs and items without links included)."""
    X, y = _blobs(per=10)
    sim = simulate_pair_links(y, n_workers=3, pairs_per_worker=15, random_state=4)
    kwargs = dict(n_clusters=3, hidden=(8,), epochs=2, warmup_epochs=0, batch_size=10)
    model = BayesSCDC(random_state=0, **kwargs).fit(X, sim.links)
    links = model._prepare(X, sim.links, None).links
    batch = np.random.default_rng(0).permutation(len(X))[:12]
    sparse = model._messenger(links, batch)(None)
    partners, weights = links.padded_entries(batch, lambda codes: model._link_weights(links, codes))
    assert partners.shape == (12, links.max_degree)
    product = padded_product(torch.as_tensor(partners), torch.as_tensor(weights))
    padded = table_messages(model._resp_table, torch.as_tensor(batch), product)(None)
    np.testing.assert_allclose(padded.numpy(), sparse.numpy(), rtol=1e-6, atol=1e-7)
    assert np.abs(sparse.numpy()).max() > 0


# ------------------------------------------------------------------ the estimator contract
@pytest.mark.parametrize("cls", [SCDC, BayesSCDC])
def test_every_parameter_is_constrained_and_a_refused_value_names_it(cls, check_constraints):
    check_constraints(cls)


def test_the_family_is_listed_and_its_shared_base_is_not_a_model():
    import crowdbayes
    from crowdbayes.models.clustering import LinkClustering

    assert crowdbayes.list_models("clustering") == [BayesSCDC, LinkClustering, SCDC]


def _same_fit(loaded, model, X_new) -> None:
    """Everything a user reads from a fitted deep model, its networks and its predictions on
    new observations ``X_new`` are identical."""
    assert type(loaded) is type(model) and loaded.get_params() == model.get_params()
    pd.testing.assert_frame_equal(loaded.predict_proba(), model.predict_proba())
    pd.testing.assert_series_equal(loaded.assignments_, model.assignments_)
    pd.testing.assert_frame_equal(loaded.workers_, model.workers_)
    pd.testing.assert_frame_equal(loaded.embedding_, model.embedding_)
    pd.testing.assert_series_equal(loaded.weights_, model.weights_)
    assert loaded.history_ == model.history_
    for name in ("encoder_", "decoder_"):
        saved, restored = getattr(model, name).state_dict(), getattr(loaded, name).state_dict()
        assert saved.keys() == restored.keys()
        for key in saved:
            assert torch.equal(saved[key].cpu(), restored[key].cpu())
    np.testing.assert_array_equal(loaded.predict(X_new), model.predict(X_new))


@pytest.mark.slow
def test_bayes_scdc_save_and_load_predict_identically(blob_fit, tmp_path):
    import crowdbayes

    model, X, _, _ = blob_fit
    path = tmp_path / "bayes_scdc.npz"
    model.save(path)
    loaded = crowdbayes.load(path)
    _same_fit(loaded, model, X + np.random.default_rng(0).normal(0, 0.5, X.shape))
    np.testing.assert_array_equal(loaded.niw_.A, model.niw_.A)
    np.testing.assert_array_equal(loaded.worker_alpha_, model.worker_alpha_)
    # a fresh process that has not imported torch finds the class from the file
    code = (
        "import sys, numpy as np, crowdbayes; "
        f"m = crowdbayes.load({str(path)!r}); "
        f"print(m.predict(np.load({str(tmp_path / 'X.npy')!r})).tolist())"
    )
    np.save(tmp_path / "X.npy", X)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(model.predict(X).tolist())


def test_scdc_save_and_load_predict_identically(tmp_path):
    import crowdbayes

    X, y = _blobs(per=10)
    sim = simulate_pair_links(y, n_workers=3, pairs_per_worker=15, random_state=4)
    kwargs = dict(n_clusters=3, hidden=(8,), epochs=3, warmup_epochs=1, batch_size=10)
    model = SCDC(random_state=0, **kwargs).fit(X, sim.links)
    model.save(tmp_path / "scdc.npz")
    X_new = X + np.random.default_rng(0).normal(0, 0.5, X.shape)
    _same_fit(crowdbayes.load(tmp_path / "scdc.npz"), model, X_new)
    # no links, Bernoulli decoder: an empty worker table and no standardisation
    bare = SCDC(random_state=0, decoder="bernoulli", **kwargs).fit((X > 0).astype(float))
    bare.save(tmp_path / "bare.npz")
    _same_fit(SCDC.load(tmp_path / "bare.npz"), bare, np.random.default_rng(1).random(X.shape))


def test_a_model_fitted_on_cuda_loads_on_the_cpu_where_cuda_is_missing(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    X, y = _blobs(per=10)
    kwargs = dict(n_clusters=3, hidden=(8,), epochs=2, warmup_epochs=0, batch_size=10)
    model = BayesSCDC(random_state=0, **kwargs).fit(X)
    model.device = "cuda"  # as if it had been fitted on a GPU
    model.save(tmp_path / "gpu.npz")
    with pytest.warns(UserWarning, match="runs on the CPU"):
        loaded = BayesSCDC.load(tmp_path / "gpu.npz")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
