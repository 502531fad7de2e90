"""The hard-partition moves of LinkClustering's search: greedy placement and the reduction of a
search run with spare clusters (``search_factor``) back to K."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes.models.clustering import LinkClustering
from crowdbayes.models.clustering.link_graph import LinkGraph
from crowdbayes.models.clustering.link_search import (
    dissolve_smallest,
    greedy_placement,
    greedy_start,
)


def planted_graph(n_groups: int = 3, size: int = 12, seed: int = 0):
    """Every pair of items judged once by one worker, correctly: must-link within the planted
    groups, cannot-link across. Returns ``(graph, weights, truth)`` in the graph's item order
    (weights +1 / −1)."""
    truth = np.repeat(np.arange(n_groups), size)
    left, right = np.triu_indices(truth.size, k=1)
    labels = (truth[left] == truth[right]).astype(np.int64)
    graph, order = LinkGraph.build(
        truth.size, 1, left, right, np.zeros(left.size, dtype=np.int64), labels
    )
    weights = np.where(graph.labels == 1, 1.0, -1.0)
    return graph, weights, truth[order]


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])


def test_greedy_start_is_greedy_placement_with_nothing_placed():
    graph, weights, _ = planted_graph()
    n = graph.n_items
    start = greedy_start(graph, weights, 3, np.random.default_rng(5))
    placed = greedy_placement(
        graph, weights, np.zeros(n, np.int64), np.zeros(n, bool), 3, np.random.default_rng(5)
    )
    np.testing.assert_array_equal(start, placed)


def test_greedy_placement_keeps_the_placed_items_and_places_the_rest_by_their_links():
    graph, weights, truth = planted_graph()
    placed = np.arange(truth.size) % 3 != 0  # a third of the items to place
    chosen = np.where(placed, truth, 0)
    out = greedy_placement(graph, weights, chosen, placed, 3, np.random.default_rng(0))
    np.testing.assert_array_equal(out[placed], truth[placed])
    np.testing.assert_array_equal(out, truth)  # every link agrees: the planted partition


def test_dissolve_smallest_renumbers_by_size_and_rejoins_the_pieces():
    graph, weights, truth = planted_graph(size=12)
    # group 2 broken into three pieces of 6, 3 and 3 items: clusters 2, 3 and 4
    chosen = truth.copy()
    members = np.flatnonzero(truth == 2)
    chosen[members[6:9]], chosen[members[9:]] = 3, 4
    out = dissolve_smallest(graph, weights, chosen, 3, np.random.default_rng(0))
    assert set(out) == {0, 1, 2}
    assert same_partition(out, truth)
    # the kept clusters keep their items, numbered by decreasing size (ties: first cluster)
    np.testing.assert_array_equal(out[chosen == 0], 0)
    np.testing.assert_array_equal(out[chosen == 1], 1)
    np.testing.assert_array_equal(out[chosen == 2], 2)


def test_dissolve_smallest_with_clusters_to_spare_changes_nothing():
    graph, weights, truth = planted_graph()
    out = dissolve_smallest(graph, weights, truth, 5, np.random.default_rng(0))
    np.testing.assert_array_equal(out, truth)


@pytest.mark.parametrize("factor", [1.0, 1.5, 2.0])
def test_search_factor_recovers_planted_clusters(factor):
    from crowdbayes.datasets.clustering import simulate_pair_links
    from crowdbayes.metrics.clustering import unsupervised_accuracy

    truth = np.repeat(np.arange(4), 15)
    sim = simulate_pair_links(
        pd.Series(truth),
        n_workers=6,
        pairs_per_worker=250,
        alpha=0.85,
        beta=0.9,
        random_state=3,
    )
    model = LinkClustering(4, search_factor=factor, n_init=2, random_state=0).fit(sim.to_links())
    assert unsupervised_accuracy(sim.truth, model.assignments_) >= 0.98
    assert model.n_clusters_used_ == 4
    assert model.probas_.shape[1] == 4


def test_search_factor_below_one_is_refused():
    with pytest.raises(ValueError, match="search_factor"):
        LinkClustering(3, search_factor=0.5).fit(
            pd.DataFrame({"worker": [0], "left": [0], "right": [1], "label": [1]})
        )
