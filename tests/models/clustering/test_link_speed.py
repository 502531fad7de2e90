"""The fast paths of LinkClustering: the compiled VB loop against the numpy sweeps, the cached
cliques of the block search and the components of the Kempe chains, and the end of the
spare-cluster search when the restarts at K and VB at K' fill fewer than K clusters."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from crowdbayes.datasets.clustering import simulate_pair_links
from crowdbayes.models.clustering import LinkClustering, link_vb
from crowdbayes.models.clustering.link_graph import LinkGraph
from crowdbayes.models.clustering.link_reduce import used_clusters
from crowdbayes.models.clustering.link_search import _Cliques, _dense_block, block_search
from crowdbayes.models.clustering.link_vb import run_link_vb, soften

needs_kernel = pytest.mark.skipif(
    not link_vb.kernel_available(), reason="the compiled VB loop was not built"
)


def pair_graph(n_items: int = 120, n_clusters: int = 4, seed: int = 0) -> LinkGraph:
    truth = np.arange(n_items) % n_clusters
    sim = simulate_pair_links(
        truth, n_workers=6, pairs_per_worker=150, alpha=0.85, beta=0.9, random_state=seed
    )
    graph, _ = LinkGraph.from_links(sim.to_links())
    return graph


@needs_kernel
@pytest.mark.parametrize(("k", "tol"), [(3, 1e-8), (6, None), (1, 1e-8)])
def test_compiled_vb_matches_numpy_sweeps(k, tol):
    graph = pair_graph()
    rng = np.random.default_rng(1)
    resp = soften(rng.integers(k, size=graph.n_items), k, 0.1)
    priors = (np.full(k, 0.7), np.array([2.0, 1.0]), np.array([1.5, 1.2]))
    fast, fast_run = run_link_vb(graph, resp, priors, max_iter=60, tol=tol)
    slow, slow_run = run_link_vb(graph, resp, priors, max_iter=60, tol=tol, use_kernel=False)
    assert fast_run.n_iter == slow_run.n_iter and fast_run.converged == slow_run.converged
    np.testing.assert_allclose(fast_run.history, slow_run.history, rtol=1e-11, atol=1e-9)
    for name in ("resp", "prevalence", "alpha", "beta"):
        np.testing.assert_allclose(getattr(fast, name), getattr(slow, name), rtol=1e-9, atol=1e-12)
    finite = slow.resp > 1e-300
    np.testing.assert_allclose(fast.log_resp[finite], slow.log_resp[finite], atol=1e-9)
    assert np.all(np.diff(fast_run.history) >= -1e-9)  # coordinate ascent


@needs_kernel
def test_compiled_vb_refuses_codes_out_of_range():
    graph = pair_graph()
    arrays = list(graph.kernel_arrays)
    arrays[2] = arrays[2].copy()
    arrays[2][0] = 2 * graph.n_workers  # a worker that does not exist
    k = 3
    resp = np.full((graph.n_items, k), 1 / k)
    with pytest.raises(ValueError, match="out of range"):
        link_vb._kernel.vb_run(
            *arrays,
            np.ones(k),
            np.ones(2),
            np.ones(2),
            resp,
            np.empty_like(resp),
            np.empty(k),
            np.empty((graph.n_workers, 2)),
            np.empty((graph.n_workers, 2)),
            np.empty(5),
            5,
            2,
            1e-8,
        )


def test_dense_block_reads_the_submatrix():
    rng = np.random.default_rng(0)
    matrix = sp.random(30, 30, density=0.3, random_state=1, format="csr")
    matrix = (matrix + matrix.T).tocsr()
    rows = rng.permutation(30)[:9]
    lookup = np.full(30, -1, dtype=np.int64)
    np.testing.assert_array_equal(
        _dense_block(matrix, rows, lookup), matrix[rows][:, rows].toarray()
    )
    assert np.all(lookup == -1)


def test_cliques_take_each_candidate_that_conflicts_with_all_taken():
    """The clique of a block, against the scan written out: candidates by increasing weight,
    each taken when its weight to every block taken before is negative, at most k."""
    rng = np.random.default_rng(3)
    n, k = 25, 4
    dense = np.triu(rng.normal(-0.5, 1.0, size=(n, n)) * (rng.random((n, n)) < 0.6), 1)
    dense = dense + dense.T
    between = sp.csr_matrix(dense)
    cliques = _Cliques(between, k)
    for b in range(n):
        row = dense[b]
        candidates = [int(c) for c in np.argsort(row, kind="stable") if row[c] < 0]
        members = [b]
        for c in candidates:
            if len(members) < k and all(dense[c, m] < 0 for m in members):
                members.append(c)
        found = cliques.of(b)
        if len(members) < 2:
            assert found is None
            continue
        np.testing.assert_array_equal(found[0], members)
        np.testing.assert_array_equal(found[1], dense[np.ix_(members, members)])


def test_block_search_is_repeatable_and_raises_the_objective():
    graph = pair_graph(seed=2)
    weights = np.where(graph.labels == 1, 2.0, -2.0)
    log_pi = np.log(np.array([0.4, 0.3, 0.2, 0.1]))
    start = np.random.default_rng(0).integers(4, size=graph.n_items)
    first = block_search(graph, weights, log_pi, start, np.random.default_rng(5))
    again = block_search(graph, weights, log_pi, start, np.random.default_rng(5))
    np.testing.assert_array_equal(first, again)

    def objective(chosen):
        same = chosen[graph.left] == chosen[graph.right]
        return weights @ same + log_pi[chosen].sum()

    assert objective(first) > objective(start)
    # no block move is left: moving any item with no satisfied must-link does not help
    rows, cols, entry_w = graph.entries(weights)
    held = np.zeros(graph.n_items, dtype=bool)
    np.logical_or.at(held, rows, (entry_w > 0) & (first[rows] == first[cols]))
    score = np.zeros((graph.n_items, 4))
    np.add.at(score, (rows, first[cols]), entry_w)
    score += log_pi
    here = score[np.arange(graph.n_items), first]
    assert np.all((score.max(axis=1) - here)[~held] <= 1e-9)


def test_used_clusters():
    resp = np.array([[0.6, 0.3, 0.1, 0.0], [0.2, 0.2, 0.6, 0.0], [0.5, 0.4, 0.1, 0.0]])
    np.testing.assert_array_equal(used_clusters(resp), [True, False, True, False])


def test_unfilled_clusters_end_the_spare_cluster_search():
    """Items of 2 clusters fitted with K = 3: the restarts at K and VB at K' = 5 fill fewer than
    K clusters, so the first restart at K' is polished at K and the search at K' stops there;
    the restarts at K are those of the search at K alone."""
    truth = np.arange(90) % 2
    links = simulate_pair_links(
        truth, n_workers=5, pairs_per_worker=200, alpha=0.95, beta=0.95, random_state=0
    ).to_links()
    plain = LinkClustering(3, n_init=3, search_factor=1.0, random_state=0).fit(links)
    wide = LinkClustering(3, n_init=3, search_factor=5 / 3, random_state=0).fit(links)
    assert len(wide.restart_elbos_) == 4
    assert wide.restart_elbos_[:3] == plain.restart_elbos_
    assert wide.elbo_ == max(wide.restart_elbos_) >= plain.elbo_
    assert wide.n_clusters_used_ == 2


def test_graph_from_links_keeps_linked_items_in_colour_order():
    links = simulate_pair_links(
        np.arange(40) % 3, n_workers=3, pairs_per_worker=20, alpha=0.9, beta=0.9, random_state=4
    ).to_links()
    graph, items = LinkGraph.from_links(links)
    np.testing.assert_array_equal(np.sort(items), links.linked_codes)
    # internal link ends map back to the input ends, and linked items never share a colour
    np.testing.assert_array_equal(items[graph.left], links.left_codes)
    np.testing.assert_array_equal(items[graph.right], links.right_codes)
    colour = np.searchsorted(graph.bounds, np.arange(graph.n_items), side="right")
    assert np.all(colour[graph.left] != colour[graph.right])


def test_spare_cluster_search_runs_in_full_when_the_restarts_at_k_fill_k_clusters(monkeypatch):
    """Links of 6 clusters fitted at K = 5: a restart at K' = 8 fills fewer than 5 clusters,
    but the restarts at K fill all 5, so the search at K' must not stop early; the fit equals
    the full search (the shortcut turned off), whose best restart is at K'."""
    links = simulate_pair_links(
        np.arange(150) % 6, n_workers=8, pairs_per_worker=180, alpha=0.8, beta=0.85, random_state=1
    ).to_links()
    fit = LinkClustering(5, n_init=3, random_state=1).fit(links)
    wide_search = LinkClustering._wide_search

    def full_search(self, *args, shortcut=True, **kwargs):
        return wide_search(self, *args, shortcut=False, **kwargs)

    monkeypatch.setattr(LinkClustering, "_wide_search", full_search)
    full = LinkClustering(5, n_init=3, random_state=1).fit(links)
    assert len(fit.restart_elbos_) == 6
    assert fit.restart_elbos_ == full.restart_elbos_
    assert fit.elbo_ == full.elbo_ == max(fit.restart_elbos_) > max(fit.restart_elbos_[:3])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_components_label_as_scipy(seed):
    from scipy.sparse.csgraph import connected_components

    from crowdbayes.models.clustering.link_search import _components

    rng = np.random.default_rng(seed)
    n = 60
    u, v = rng.integers(n, size=(2, 45))
    graph = sp.csr_matrix((np.ones(u.size), (u, v)), shape=(n, n))
    expected = connected_components(graph, directed=False)
    found = _components(n, u, v)
    assert found[0] == expected[0]
    np.testing.assert_array_equal(found[1], expected[1])
