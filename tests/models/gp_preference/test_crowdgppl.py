"""crowdGPPL on data simulated with planted worker groups: consensus, personal predictions,
workers' latent vectors, worker features, the fallback for unseen workers, persistence."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr
from scipy.stats import spearmanr

from crowdbayes.base import load
from crowdbayes.exceptions import DataWarning, NotFittedError
from crowdbayes.kernels import Matern32
from crowdbayes.models.gp_preference import GPPL, CrowdGPPL

KERNEL = Matern32([1.0, 1.0])


def simulate(n_items=40, n_workers=12, n_pairs=900, seed=1):
    """Consensus t and one personal component v from the GP prior; two planted groups of
    workers (two thirds with w = +1, one third with w = -2, so w averages zero) whose personal
    utilities t + v w disagree; biased comparisons by random workers."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 3, (n_items, 2))
    L = np.linalg.cholesky(KERNEL(X) + 1e-8 * np.eye(n_items))
    t = L @ rng.standard_normal(n_items)
    v = 2.0 * L @ rng.standard_normal(n_items)
    group = np.arange(n_workers) >= 2 * n_workers // 3
    w = np.where(group, -2.0, 1.0)
    F = t[:, None] + v[:, None] * w[None, :]
    left = rng.integers(0, n_items, n_pairs)
    right = rng.integers(0, n_items, n_pairs)
    keep = left != right
    left, right = left[keep], right[keep]
    worker = rng.integers(0, n_workers, len(left))
    won = rng.random(len(left)) < ndtr((F[left, worker] - F[right, worker]) / np.sqrt(2))
    comparisons = pd.DataFrame(
        {
            "worker": [f"w{j}" for j in worker],
            "left": left,
            "right": right,
            "label": np.where(won, left, right),
        }
    )
    items = pd.DataFrame(X, columns=["x0", "x1"], index=pd.RangeIndex(n_items, name="item"))
    workers = pd.DataFrame(
        {"g": group + 0.05 * rng.standard_normal(n_workers)},
        index=pd.Index([f"w{j}" for j in range(n_workers)], name="worker"),
    )
    return comparisons, items, workers, t, F, group


@pytest.fixture(scope="module")
def data():
    return simulate()


@pytest.fixture(scope="module")
def crowd(data):
    comparisons, items, *_ = data
    model = CrowdGPPL(
        3, kernel=KERNEL, n_inducing=40, batch_size=None, max_iter=150, tol=None, random_state=0
    )
    return model.fit(comparisons, items)


def test_consensus_beats_pooled_gppl_when_workers_disagree(data, crowd):
    """The paper's simulation (a): with biased worker groups crowdGPPL's consensus is closer
    to the truth than GPPL trained on all labels pooled."""
    comparisons, items, _, t, _, _ = data
    pooled = GPPL(kernel=KERNEL, n_inducing=40, batch_size=None, max_iter=150, tol=None)
    pooled.fit(comparisons, items)
    rho_crowd = spearmanr(crowd.consensus_["mean"], t)[0]
    rho_pooled = spearmanr(pooled.utility_["mean"], t)[0]
    assert rho_crowd >= 0.7
    assert rho_crowd > rho_pooled + 0.1


def test_personal_predictions_follow_each_group(data, crowd):
    _, _, _, _, F, group = data
    for j in (0, len(group) - 1):
        personal = crowd.predict_utility(worker=f"w{j}")
        assert spearmanr(personal["mean"], F[:, j])[0] >= 0.85
        assert (
            spearmanr(personal["mean"], F[:, j])[0]
            > spearmanr(crowd.consensus_["mean"], F[:, j])[0] + 0.3
        )
        assert (personal["sd"] > 0).all()


def test_worker_vectors_separate_the_planted_groups(data, crowd):
    *_, group = data
    main = crowd.component_scale_.idxmax()
    # one component carries the planted structure; the others shrink (ARD)
    assert crowd.component_scale_.drop(main).max() < 0.3 * crowd.component_scale_[main]
    values = crowd.worker_factors_.loc[[f"w{j}" for j in range(len(group))], main].to_numpy()
    a, b = values[~group], values[group]
    assert np.sign(a).min() == np.sign(a).max() != np.sign(b).min() == np.sign(b).max()
    assert crowd.item_factors_.shape == (40, 3)


def test_predictions_for_items_nobody_compared(data, crowd):
    _, items, *_ = data
    new = pd.DataFrame({"x0": [0.3, 2.9], "x1": [1.5, 0.1]}, index=["n1", "n2"])
    personal = crowd.predict_utility(new, worker="w0")
    consensus = crowd.predict_utility(new)
    assert list(personal.index) == ["n1", "n2"]
    assert not np.allclose(personal["mean"], consensus["mean"])
    # a new item near item 5 behaves like item 5 for worker w0
    near = pd.DataFrame(items.loc[[5]].to_numpy() + 1e-4, columns=items.columns, index=["m"])
    assert crowd.predict_utility(near, worker="w0")["mean"].iloc[0] == pytest.approx(
        crowd.predict_utility([5], worker="w0")["mean"].iloc[0], abs=1e-2
    )


def test_pair_probabilities_personal_and_consensus(data, crowd):
    comparisons, *_, F, _ = data
    left, right = [0, 3, 7], [1, 4, 9]
    consensus = crowd.predict_proba(left, right)
    personal = crowd.predict_proba(left, right, workers=["w0", "w0", "w11"])
    assert ((personal > 0) & (personal < 1)).all()
    assert not np.allclose(consensus, personal)
    with pytest.warns(DataWarning, match="1 row\\(s\\) name worker\\(s\\) not seen in fit"):
        fallback = crowd.predict_proba(left, right, workers=["w0", "nobody", "w11"])
    assert fallback.iloc[1] == pytest.approx(consensus.iloc[1])
    assert fallback.iloc[0] == pytest.approx(personal.iloc[0])
    with pytest.raises(ValueError, match="2 workers for 3 pairs"):
        crowd.predict_proba(left, right, workers=["w0", "w1"])


def test_accuracy_on_training_workers(data, crowd):
    """Personal probabilities predict the workers' own labels better than the consensus."""
    comparisons, *_ = data
    rows = comparisons.iloc[:300]
    personal = crowd.predict_proba(rows["left"], rows["right"], workers=rows["worker"])
    consensus = crowd.predict_proba(rows["left"], rows["right"])
    truth = (rows["label"] == rows["left"]).to_numpy()
    acc_personal = np.mean((personal.to_numpy() > 0.5) == truth)
    acc_consensus = np.mean((consensus.to_numpy() > 0.5) == truth)
    assert acc_personal > acc_consensus + 0.1


def test_worker_features_predict_new_workers(data):
    comparisons, items, workers, _, F, group = data
    model = CrowdGPPL(
        2,
        kernel=KERNEL,
        worker_lengthscale=0.5,
        n_inducing=40,
        n_inducing_workers=6,
        batch_size=None,
        max_iter=120,
        tol=None,
        random_state=0,
    ).fit(comparisons, items, workers)
    newcomer = pd.DataFrame({"g": [1.0]}, index=pd.Index(["new"], name="worker"))
    personal = model.predict_utility(worker="new", worker_features=newcomer)
    # a newcomer with the features of the second group gets that group's preferences
    assert spearmanr(personal["mean"], F[:, -1])[0] >= 0.8


def test_minibatches_seeded(data):
    comparisons, items, *_ = data
    options = {"kernel": KERNEL, "n_inducing": 20, "batch_size": 200, "max_iter": 20, "tol": None}
    a = CrowdGPPL(2, random_state=5, **options).fit(comparisons, items)
    b = CrowdGPPL(2, random_state=5, **options).fit(comparisons, items)
    pd.testing.assert_frame_equal(a.consensus_, b.consensus_)
    pd.testing.assert_frame_equal(a.worker_factors_, b.worker_factors_)


@pytest.mark.parametrize("with_worker_features", [False, True])
def test_save_and_load_round_trip(data, tmp_path, with_worker_features):
    comparisons, items, workers, *_ = data
    model = CrowdGPPL(2, n_inducing=10, n_inducing_workers=4, max_iter=5, tol=None)
    model.fit(comparisons, items, workers if with_worker_features else None)
    path = tmp_path / "crowd.npz"
    model.save(path)
    back = load(path)
    assert type(back) is CrowdGPPL and back.get_params() == model.get_params()
    pd.testing.assert_frame_equal(back.consensus_, model.consensus_, check_exact=True)
    pd.testing.assert_frame_equal(back.worker_factors_, model.worker_factors_, check_exact=True)
    pd.testing.assert_series_equal(
        back.predict_proba([0, 2], [1, 3], workers=["w0", "w5"]),
        model.predict_proba([0, 2], [1, 3], workers=["w0", "w5"]),
        check_exact=True,
    )
    new = pd.DataFrame({"x0": [0.3], "x1": [1.5]}, index=["n1"])
    pd.testing.assert_frame_equal(
        back.predict_utility(new, worker="w3"),
        model.predict_utility(new, worker="w3"),
        check_exact=True,
    )
    if with_worker_features:
        newcomer = pd.DataFrame({"g": [1.0]}, index=pd.Index(["new"], name="worker"))
        pd.testing.assert_frame_equal(
            back.predict_utility(worker="new", worker_features=newcomer),
            model.predict_utility(worker="new", worker_features=newcomer),
            check_exact=True,
        )


def test_errors(data):
    comparisons, items, *_ = data
    with pytest.raises(NotFittedError, match="CrowdGPPL is not fitted yet"):
        CrowdGPPL().predict_utility()
    with pytest.raises(
        ValueError, match=re.escape("parameter 'n_components' must be an integer in [1, inf)")
    ):
        CrowdGPPL(0).fit(comparisons, items)
    with pytest.raises(ValueError, match="parameter 'worker_lengthscale' must be one of"):
        CrowdGPPL(worker_lengthscale="mean").fit(comparisons, items)


def _svi_state(
    comparisons,
    items,
    n_components=2,
    workers=None,
    seed=0,
    *,
    cls=None,
    n_inducing=100,
    n_inducing_workers=20,
):
    """A crowdGPPL SVI state (``cls``, default ``CrowdSVI``) on all comparisons (with the
    default ``n_inducing``, inducing points at every item)."""
    from crowdbayes.data.comparisons import as_comparisons
    from crowdbayes.gp import GammaFactor, InducingProjection, encode_pairs
    from crowdbayes.models.gp_preference._crowd_svi import CrowdSVI

    cls = cls or CrowdSVI
    model = CrowdGPPL(
        n_components,
        kernel=KERNEL,
        n_inducing=n_inducing,
        batch_size=None,
        n_inducing_workers=n_inducing_workers,
    )
    data = as_comparisons(comparisons, items=items, workers=workers)
    pairs = encode_pairs(data, "drop", "test")
    model.worker_ids_ = data.worker_ids
    rng = np.random.default_rng(seed)
    kernel, Z = model._setup_items(data, pairs.items, model._inference(), rng)
    prior_t, prior_v, prior_w = (GammaFactor.prior(2.0, 2.0) for _ in range(3))
    spread = CrowdSVI.prior_spread(prior_t, prior_v, prior_w, n_components)
    return cls(
        model._problem(pairs, kernel, spread),
        InducingProjection(kernel, Z),
        model._make_workers(data.W, prior_w, rng),
        prior_v=prior_v,
        prior_w=prior_w,
        worker_counts=np.bincount(pairs.worker, minlength=data.n_workers),
    )


@pytest.mark.parametrize("with_worker_features", [False, True])
def test_full_batch_updates_do_not_decrease_the_bound(data, with_worker_features):
    """With ρ = 1 on all comparisons, each block update (t, v_c, w_c, the inverse scales) is
    coordinate ascent on the bound with the likelihood linearised where the iteration
    started, so that bound must not decrease; a wrong moment in any message breaks it."""
    comparisons, items, workers, *_ = data
    sub = comparisons.iloc[:300]
    svi = _svi_state(sub, items, 3, workers if with_worker_features else None)
    everything = np.arange(len(svi.pairs.y))
    for _ in range(6):
        start, _ = svi.difference_moments()
        before = svi.bound(linearisation=start)
        svi.update(1.0, everything, 1.0)
        after = svi.bound(linearisation=start)
        assert after >= before - 1e-6 * abs(before), (before, after)
    # the (N, N) and the chunked evaluation of the variances agree
    dense = svi.difference_moments()
    svi.max_items_dense, svi.chunk = 0, 64
    for a, b in zip(dense, svi.difference_moments(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)
    assert np.isfinite(svi.bound())


def test_lower_bound_is_reported_and_rises_with_iterations(data):
    comparisons, items, *_ = data
    short = CrowdGPPL(2, kernel=KERNEL, n_inducing=40, batch_size=None, max_iter=2, tol=None)
    long = CrowdGPPL(2, kernel=KERNEL, n_inducing=40, batch_size=None, max_iter=40, tol=None)
    short.random_state = long.random_state = 0
    assert long.fit(comparisons, items).lower_bound_ > short.fit(comparisons, items).lower_bound_


def test_minibatch_svi_stops_on_the_bound(data):
    """The per-pass change of the bound (per comparison) falls below the default tol well
    before max_iter, and the bound rose over the passes."""
    comparisons, items, *_ = data
    model = CrowdGPPL(3, kernel=KERNEL, n_inducing=30, batch_size=200, max_iter=500)
    model.random_state = 0
    model.fit(comparisons, items)
    assert model.converged_ and model.n_iter_ < 500
    assert model.history_[-1] < model.tol
    assert model.bound_history_[-1] > model.bound_history_[0]
    assert model.lower_bound_ == model.bound_history_[-1]  # stopped at the end of a pass
