"""Loaders of the clustering data (shared data root) and the seeded generators."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes.datasets.clustering import (
    REAL_ALPHA_PRIOR,
    REAL_BETA_PRIOR,
    load_cmu_faces,
    load_mnist_test,
    load_mnist_train_labels,
    load_semicrowd_mnist,
    make_pinwheel,
    simulate_link_tasks,
    simulate_pair_links,
    task_groupings,
)
from crowdbayes.exceptions import DataWarning
from crowdbayes.metrics.clustering import link_worker_accuracy, misgrouped_items


def test_cmu_faces(data_root):
    faces = load_cmu_faces()
    assert faces.images.shape == (624, 30, 32) and faces.images.dtype == np.uint8
    info = faces.info
    assert info["person"].nunique() == 20
    assert set(info["pose"]) == {"straight", "left", "right", "up"}
    assert set(info["expression"]) == {"neutral", "happy", "sad", "angry"}
    assert set(info["eyes"]) == {"open", "sunglasses"}
    assert info.groupby("pose").size().between(150, 160).all()
    first = info.iloc[0]
    assert first["file"].startswith(f"{first['person']}/{first['person']}_{first['pose']}_")
    features = faces.features()
    assert features.shape == (624, 960)
    assert np.allclose(features.min(axis=1), 0) and np.allclose(features.max(axis=1), 1)
    assert "Mitchell" in faces.source


def test_mnist(data_root):
    mnist = load_mnist_test()
    assert mnist.images.shape == (10_000, 28, 28) and mnist.images.dtype == np.uint8
    assert mnist.labels[:5].tolist() == [7, 2, 1, 0, 4]  # the well-known first test digits
    assert np.bincount(mnist.labels).tolist()[:2] == [980, 1135]
    train = load_mnist_train_labels()
    assert train.shape == (60_000,) and train[:5].tolist() == [5, 0, 4, 1, 9]


def test_semicrowd_mnist(data_root):
    crowd = load_semicrowd_mnist()
    links = crowd.links
    assert len(links) == 57_330 and links["worker"].nunique() == 48
    assert links["task"].nunique() == 91 and crowd.digits.size == 2_759
    assert list(links.columns) == ["worker", "left", "right", "label", "task"]
    assert (links.groupby("task")["worker"].nunique() == 1).all()
    with pytest.warns(DataWarning, match="1 row"):  # one worker judged one pair twice
        container = crowd.to_links()
    assert container.n_links == 57_330 and len(container.linked_codes) == 2_759
    # the documented quality: pooled sensitivity 0.983, specificity 0.992
    same = crowd.digits.loc[links["left"]].to_numpy() == crowd.digits.loc[links["right"]].to_numpy()
    must = links["label"].to_numpy() == 1
    assert must[same].mean() == pytest.approx(0.983, abs=1e-3)
    assert (~must[~same]).mean() == pytest.approx(0.992, abs=1e-3)
    # the Beta spreads the simulator draws from were fitted to these workers
    measured = link_worker_accuracy(links, crowd.digits)
    for column, (a, b) in (("alpha", REAL_ALPHA_PRIOR), ("beta", REAL_BETA_PRIOR)):
        mean, var = measured[column].mean(), measured[column].var()
        assert a / (a + b) == pytest.approx(mean, abs=1e-3)
        assert a * b / ((a + b) ** 2 * (a + b + 1)) == pytest.approx(var, rel=0.02)
    groups = task_groupings(links)
    per_task = groups.groupby(level="task")
    assert (per_task.size() == 36).all() and per_task.nunique().max() == 10


def test_task_groupings_are_must_link_components():
    links = pd.DataFrame(
        {
            "task": [0, 0, 0, 1],
            "left": ["a", "b", "a", "a"],
            "right": ["b", "c", "c", "d"],
            "label": [1, 0, 0, 0],
        }
    )
    groups = task_groupings(links)
    assert groups.loc[(0, "a")] == groups.loc[(0, "b")] != groups.loc[(0, "c")]
    assert groups.loc[(1, "a")] != groups.loc[(1, "d")]


def test_pinwheel():
    x, y = make_pinwheel(random_state=3)
    assert x.shape == (500, 2) and np.bincount(y).tolist() == [100] * 5
    again, _ = make_pinwheel(random_state=3)
    np.testing.assert_array_equal(x, again)
    # every arm is a bent blob around its own direction: arm means are far apart
    means = np.array([x[y == k].mean(axis=0) for k in range(5)])
    gaps = np.linalg.norm(means[:, None] - means[None], axis=-1)[~np.eye(5, dtype=bool)]
    assert gaps.min() > 5.0
    assert make_pinwheel(3, 7, random_state=0)[0].shape == (21, 2)


def test_pair_simulator_follows_the_two_coin_model():
    truth = pd.Series(np.repeat(np.arange(4), 50))
    sim = simulate_pair_links(
        truth, n_workers=3, pairs_per_worker=3000, alpha=[0.9, 0.7, 0.5], beta=0.8, random_state=0
    )
    assert len(sim.links) == 9000
    keys = sim.links[["worker", "left", "right"]]
    assert not keys.duplicated().any() and (sim.links["left"] < sim.links["right"]).all()
    measured = link_worker_accuracy(sim.links, truth)
    np.testing.assert_allclose(measured["alpha"], [0.9, 0.7, 0.5], atol=0.05)
    np.testing.assert_allclose(measured["beta"], 0.8, atol=0.03)
    subset = simulate_pair_links(
        truth, n_workers=2, pairs_per_worker=49, items=range(100, 120), random_state=1
    )
    assert subset.links[["left", "right"]].stack().between(100, 119).all()
    assert subset.to_links().n_links == 98
    with pytest.raises(ValueError, match="cannot draw 200 distinct pairs from 20 items"):
        simulate_pair_links(truth, n_workers=1, pairs_per_worker=200, items=range(20))
    with pytest.raises(ValueError, match=r"alpha must lie in \[0, 1\]"):
        simulate_pair_links(truth, n_workers=1, pairs_per_worker=2, alpha=1.5)


def test_balanced_pair_simulator_draws_half_same_cluster_pairs_uniformly():
    # unequal clusters: a uniform draw would give mostly different-cluster pairs
    truth = pd.Series(np.repeat(np.arange(3), [40, 15, 5]), index=np.arange(60) + 1000)
    sim = simulate_pair_links(
        truth, n_workers=2, pairs_per_worker=301, alpha=1.0, beta=1.0, balanced=True,
        random_state=0,
    )  # fmt: skip
    links = sim.links
    assert len(links) == 602 and not links[["worker", "left", "right"]].duplicated().any()
    assert (links["left"] < links["right"]).all() and links["left"].isin(truth.index).all()
    same = truth.loc[links["left"]].to_numpy() == truth.loc[links["right"]].to_numpy()
    # perfect workers: the labels are the truth, so exactly 150 must-links per worker
    np.testing.assert_array_equal(links["label"].to_numpy(), same.astype(int))
    assert (links.groupby("worker")["label"].sum() == 150).all()
    # same-cluster pairs are uniform over those pairs: clusters in proportion to C(n_c, 2)
    cluster = truth.loc[links["left"][same]].to_numpy()
    shares = np.bincount(cluster, minlength=3) / same.sum()
    expected = np.array([780, 105, 10]) / 895
    np.testing.assert_allclose(shares, expected, atol=0.05)
    again = simulate_pair_links(
        truth, n_workers=2, pairs_per_worker=301, balanced=True, random_state=0
    )
    pd.testing.assert_frame_equal(
        again.links[["left", "right"]], links[["left", "right"]]
    )  # seeded; the pairs do not depend on the accuracies
    with pytest.raises(ValueError, match="880 different-cluster .* offer 895 and 875"):
        simulate_pair_links(truth, n_workers=1, pairs_per_worker=1760, balanced=True)


def test_task_simulator_mimics_the_real_scheme():
    truth = pd.Series(np.random.default_rng(0).integers(10, size=2000))
    sim = simulate_link_tasks(truth, random_state=0)
    links = sim.links
    assert len(links) == 91 * 630 and links["task"].nunique() == 91
    assert links["worker"].nunique() == 48  # every worker got a task
    assert (links.groupby("task")["worker"].nunique() == 1).all()
    # drawn α, β have about the real workers' spread
    assert sim.alpha.mean() == pytest.approx(0.978, abs=0.05)
    assert sim.beta.mean() == pytest.approx(0.991, abs=0.03)
    same = simulate_link_tasks(truth, random_state=0).links
    pd.testing.assert_frame_equal(links, same)
    small = simulate_link_tasks(
        truth, n_tasks=4, items_per_task=5, n_workers=2, alpha=1.0, beta=1.0, random_state=1
    )
    assert len(small.links) == 40
    lab = small.links
    agree = truth.loc[lab["left"]].to_numpy() == truth.loc[lab["right"]].to_numpy()
    np.testing.assert_array_equal(lab["label"].to_numpy() == 1, agree)  # perfect workers


def test_sorting_tasks_give_each_task_one_consistent_grouping():
    truth = pd.Series(np.random.default_rng(0).integers(10, size=2000))
    sim = simulate_link_tasks(truth, alpha=0.8, sort=True, random_state=0)
    assert len(sim.links) == 91 * 630 and np.isnan(sim.beta).all()
    groupings = task_groupings(sim.links)
    wrong = misgrouped_items(groupings, truth)
    assert wrong.mean() == pytest.approx(0.2, abs=0.03)  # α = 0.8: about 20% misplaced
    for task, block in sim.links.groupby("task"):  # the links are every pair of the grouping
        group = groupings.loc[task]
        together = group.loc[block["left"]].to_numpy() == group.loc[block["right"]].to_numpy()
        np.testing.assert_array_equal(block["label"].to_numpy() == 1, together)
    perfect = simulate_link_tasks(truth, alpha=1.0, sort=True, random_state=0)
    assert not misgrouped_items(task_groupings(perfect.links), truth).any()
