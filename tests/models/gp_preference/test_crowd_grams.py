"""crowdGPPL's Gram-matrix route (``_crowd_grams.WorkerGramSVI``) against the per-pair route
(``_crowd_svi.CrowdSVI`` with its mini-batch products in double precision): the same updates,
bound and fallback, with and without worker features."""

from __future__ import annotations

import numpy as np
import pytest

from crowdbayes.models.gp_preference._crowd_grams import WorkerGramSVI
from crowdbayes.models.gp_preference._crowd_svi import CrowdSVI

from .test_crowdgppl import _svi_state, simulate


@pytest.fixture(scope="module")
def data():
    return simulate(n_items=30, n_workers=6, n_pairs=400, seed=3)


def _state(cls, data, with_worker_features):
    """An SVI state of ``cls`` on all comparisons (double precision throughout)."""
    comparisons, items, workers, *_ = data
    svi = _svi_state(
        comparisons,
        items,
        3,
        workers if with_worker_features else None,
        cls=cls,
        n_inducing=20,
        n_inducing_workers=4,
    )
    svi.A_fast = svi.A  # the per-pair route's products in double precision
    return svi


def _steps(svi, n_steps=5, batch=120, seed=1):
    """SVI steps on seeded mini-batches (the schedule's ρ and weight)."""
    rng = np.random.default_rng(seed)
    n = len(svi.pairs.y)
    for step in range(n_steps):
        idx = np.sort(rng.choice(n, batch, replace=False))
        svi.update((step + 1.0) ** -0.9, idx, n / batch)


def _assert_same_state(a, b, rtol):
    for fa, fb in zip([a.t, *a.V], [b.t, *b.V], strict=True):
        np.testing.assert_allclose(fa.mean, fb.mean, rtol=rtol, atol=rtol * np.abs(fb.mean).max())
        np.testing.assert_allclose(fa.cov, fb.cov, rtol=rtol, atol=rtol * np.abs(fb.cov).max())
    for ma, mb in zip(a.workers.moments(), b.workers.moments(), strict=True):
        np.testing.assert_allclose(ma, mb, rtol=rtol, atol=rtol * np.abs(mb).max())
    scales = [a.scale_t, *a.scales_v, *a.workers.scales]
    for sa, sb in zip(scales, [b.scale_t, *b.scales_v, *b.workers.scales], strict=True):
        assert sa.mean == pytest.approx(sb.mean, rel=rtol)


@pytest.mark.parametrize("with_worker_features", [False, True])
def test_gram_route_matches_the_per_pair_route(data, with_worker_features):
    """Mini-batch steps through the per-worker Gram matrices leave every factor, worker
    moment and inverse scale where the per-pair products do, and the bound is the same."""
    gram = _state(WorkerGramSVI, data, with_worker_features)
    pair = _state(CrowdSVI, data, with_worker_features)
    assert gram._gram_route(120, 6)  # 6 workers, 120 comparisons a batch
    _steps(gram)
    _steps(pair)
    _assert_same_state(gram, pair, 1e-9)
    gram._gram_bound = lambda: True  # this small problem would take the per-pair bound
    for linearisation in (None, pair.difference_moments()[0] + 0.3):
        expected = pair.bound(linearisation)
        assert gram.bound(linearisation) == pytest.approx(expected, rel=1e-11)
        gram.chunk = 7  # each worker's Gram matrix summed over chunks of comparisons
        assert gram.bound(linearisation) == pytest.approx(expected, rel=1e-11)


def test_too_many_workers_per_comparison_take_the_per_pair_route(data):
    gram = _state(WorkerGramSVI, data, False)
    pair = _state(CrowdSVI, data, False)
    gram.max_worker_share = 6 / 121  # 6 workers in a batch of 120: above the share
    assert not gram._gram_route(120, 6)
    _steps(gram)
    _steps(pair)
    _assert_same_state(gram, pair, 0.0)
    gram._gram_bound = lambda: False
    assert gram.bound() == pair.bound()


def test_full_batch_gram_updates_do_not_decrease_the_bound(data):
    """With ρ = 1 on all comparisons each block update is coordinate ascent on the bound
    linearised where the iteration started (as for the per-pair route)."""
    svi = _state(WorkerGramSVI, data, False)
    svi._gram_bound = lambda: True
    everything = np.arange(len(svi.pairs.y))
    for _ in range(4):
        start = svi.difference_moments()[0]
        before = svi.bound(linearisation=start)
        svi.update(1.0, everything, 1.0)
        after = svi.bound(linearisation=start)
        assert after >= before - 1e-6 * abs(before), (before, after)
