"""Small fitted models of every family, shared by the report tests (module-scoped: a few
seconds of fitting in all)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import crowdbayes as cb
from crowdbayes.datasets import simulate_labels
from crowdbayes.datasets.clustering import simulate_pair_links
from crowdbayes.models.communities import CommunityPreferences, simulate_community_preferences
from crowdbayes.models.gp_preference import GPPLVI
from crowdbayes.models.plackett_luce import PlackettLuceMM, PlackettLuceVI
from pl_simulate import simulate_rankings


@pytest.fixture(scope="session")
def small_labels():
    """300 tasks, 12 workers, 3 classes; the labels, the true classes and the table."""
    sim = simulate_labels(300, 12, 4, n_classes=3, random_state=0)
    return cb.Labels(sim.labels), sim.truth, sim.labels


class _Fitted(dict):
    """Label models fitted on first use (``label_models["ds"]``)."""

    def __init__(self, labels) -> None:
        super().__init__()
        self.labels = labels

    def __missing__(self, name: str):
        model = {
            "mv": lambda: cb.MajorityVote(random_state=0),
            "ds": cb.DawidSkene,
            "bayes-ds": cb.BayesianDawidSkene,
            "hierarchical": lambda: cb.HierarchicalAnnotation(
                n_chains=2, n_warmup=20, n_samples=30, random_state=0
            ),
        }[name]()
        self[name] = model.fit(self.labels)
        return self[name]


@pytest.fixture(scope="session")
def label_models(small_labels):
    return _Fitted(small_labels[0])


@pytest.fixture(scope="session")
def binary_labels():
    sim = simulate_labels(200, 10, 5, n_classes=2, random_state=1)
    labels = cb.Labels(sim.labels)
    return labels, sim.truth, cb.BayesianDawidSkene().fit(labels)


@pytest.fixture(scope="session")
def rankings_fit():
    rankings, _ = simulate_rankings(0, n_queries=150, n_items=40)
    return rankings, PlackettLuceVI(eta=1.0).fit(rankings)


@pytest.fixture(scope="session")
def featureless_fit():
    rng = np.random.default_rng(0)
    ids = np.array([f"i{k}" for k in range(15)])
    left = rng.integers(15, size=300)
    right = (left + rng.integers(1, 15, size=300)) % 15
    strength = np.linspace(-1, 1, 15)
    wins = rng.random(300) < 1 / (1 + np.exp(strength[right] - strength[left]))
    pairs = pd.DataFrame(
        {"left": ids[left], "right": ids[right], "label": np.where(wins, ids[left], ids[right])}
    )
    rankings = cb.Rankings.from_pairs(pairs)
    return rankings, PlackettLuceMM(shape=2.0, rate=1.0).fit(rankings)


@pytest.fixture(scope="session")
def comparisons_fit():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 3, (25, 2))
    utility = np.sin(X[:, 0]) + X[:, 1]
    ids = np.array([f"i{k}" for k in range(25)])
    left, right = rng.integers(0, 25, 300), rng.integers(0, 25, 300)
    keep = left != right
    left, right = left[keep], right[keep]
    won = rng.random(len(left)) < 1 / (1 + np.exp(-3 * (utility[left] - utility[right])))
    table = pd.DataFrame(
        {
            "worker": [f"u{j}" for j in rng.integers(0, 6, len(left))],
            "left": ids[left],
            "right": ids[right],
            "label": np.where(won, ids[left], ids[right]),
        }
    )
    items = pd.DataFrame(X, columns=["x0", "x1"], index=pd.Index(ids, name="item"))
    data = cb.Comparisons(table, items=items)
    return data, GPPLVI().fit(data)


@pytest.fixture(scope="session")
def communities_fit():
    sim = simulate_community_preferences(
        n_users=16, n_items=10, n_communities=2, pairs_per_user=8, random_state=0
    )
    data = cb.Comparisons(sim.comparisons, items=sim.items)
    model = CommunityPreferences(n_sweeps=12, burn_in=4, n_chains=2, random_state=0).fit(data)
    return data, model


@pytest.fixture(scope="session")
def links_fit():
    truth = pd.Series(np.repeat(np.arange(3), 15), name="cluster")
    sim = simulate_pair_links(
        truth, n_workers=5, pairs_per_worker=120, alpha=0.9, beta=0.9, random_state=0
    )
    rng = np.random.default_rng(0)
    features = 3.0 * rng.standard_normal((3, 4))[truth.to_numpy()] + rng.standard_normal((45, 4))
    links = sim.to_links(observations=features)
    return links, cb.LinkClustering(n_clusters=5, random_state=0).fit(links)
