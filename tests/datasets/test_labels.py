"""Loaders on the shared label sets, and the seeded synthetic generator."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes import Labels
from crowdbayes.datasets import (
    LabelDataset,
    SyntheticLabels,
    data_root,
    list_datasets,
    load_labels,
    simulate_labels,
)
from crowdbayes.exceptions import DataWarning
from label_sets import ALL_SETS


@pytest.fixture
def with_data(data_root, monkeypatch):
    monkeypatch.setenv("CROWDBAYES_DATA", str(data_root))
    return data_root


@pytest.fixture
def without_data(monkeypatch):
    monkeypatch.delenv("CROWDBAYES_DATA", raising=False)


# ---------------------------------------------------------------------------- data_root


def test_data_root_unset_is_none(without_data):
    assert data_root() is None


def test_data_root_follows_env(with_data):
    assert data_root() == with_data


def test_data_root_not_a_directory(monkeypatch, tmp_path):
    missing = tmp_path / "nowhere"
    monkeypatch.setenv("CROWDBAYES_DATA", str(missing))
    with pytest.raises(ValueError, match="CROWDBAYES_DATA is set to .*nowhere.*not a directory"):
        data_root()
    with pytest.raises(ValueError, match="CROWDBAYES_DATA"):
        list_datasets()


# ---------------------------------------------------------------------------- list_datasets


def test_list_datasets_finds_all_sets(with_data):
    listing = list_datasets()
    assert list(listing.columns) == [
        "name",
        "n_labels",
        "n_tasks",
        "n_workers",
        "n_classes",
        "gold_tasks",
        "location",
        "bundled",
    ]
    assert sorted(listing["name"]) == sorted([*ALL_SETS, "grades"])
    assert listing["name"].is_unique
    # the env copy of rte wins over the bundled one; the simulated grades are bundled only
    assert listing.loc[listing["bundled"], "name"].tolist() == ["grades"]
    rte = listing.set_index("name").loc["rte"]
    assert (rte.n_labels, rte.n_tasks, rte.n_workers, rte.n_classes, rte.gold_tasks) == (
        8000,
        800,
        164,
        2,
        800,
    )
    assert str(with_data) in rte.location
    assert listing.set_index("name").loc["adult_content3", "gold_tasks"] == 0


def test_list_datasets_bundled_only(without_data):
    listing = list_datasets()
    assert listing["name"].tolist() == ["grades", "rte"]
    assert listing["bundled"].all()
    row = listing.iloc[1]
    assert (row.n_labels, row.n_tasks, row.n_workers, row.gold_tasks) == (8000, 800, 164, 800)


def test_env_copy_wins_name_clash(monkeypatch, tmp_path):
    folder = tmp_path / "labels" / "rte"
    folder.mkdir(parents=True)
    (folder / "labels.csv").write_text("task,worker,label\n007,w1,1\n007,w2,0\n")
    (tmp_path / "labels" / "not_a_set").mkdir()  # no labels.csv: ignored
    monkeypatch.setenv("CROWDBAYES_DATA", str(tmp_path))
    listing = list_datasets().set_index("name")
    assert listing.index.tolist() == ["grades", "rte"]
    assert not listing.loc["rte", "bundled"]
    ds = load_labels("rte")
    assert ds.labels["task"].tolist() == ["007", "007"]
    assert ds.gold is None
    assert ds.source == ""
    assert ds.location == folder


# ---------------------------------------------------------------------------- load_labels


def test_load_rte(with_data):
    ds = load_labels("rte")
    assert isinstance(ds, LabelDataset)
    assert ds.name == "rte"
    assert list(ds.labels.columns) == ["task", "worker", "label"]
    assert len(ds.labels) == 8000
    assert ds.labels["task"].nunique() == 800
    assert ds.labels["worker"].nunique() == 164
    assert ds.gold is not None and len(ds.gold) == 800
    assert ds.gold.name == "label"
    assert "Snow" in ds.source
    assert "rte" in repr(ds) and "8000 labels" in repr(ds)


def test_bundled_rte_matches_shared_copy(with_data, monkeypatch):
    shared = load_labels("rte")
    monkeypatch.delenv("CROWDBAYES_DATA")
    bundled = load_labels("rte")
    assert "bundled" in str(bundled.location)
    pd.testing.assert_frame_equal(shared.labels, bundled.labels)
    pd.testing.assert_series_equal(shared.gold, bundled.gold)


def test_duchenne_ids_keep_leading_zeros(with_data):
    ds = load_labels("duchenne")
    tasks = set(ds.labels["task"])
    assert "0001" in tasks
    assert all(isinstance(t, str) for t in ds.gold.index)
    # gold covers only some tasks
    assert 0 < len(ds.gold) < len(tasks)
    assert set(ds.gold.index) <= tasks


def test_string_labels_and_no_gold(with_data):
    ds = load_labels("adult_content3")
    assert ds.gold is None
    assert ds.labels["label"].map(type).eq(str).all()
    with pytest.warns(DataWarning, match="repeat a task–worker pair"):
        labels = ds.to_labels()
    assert labels.n_classes == 5


def test_to_labels_does_not_clamp_gold(with_data):
    ds = load_labels("rte")
    labels = ds.to_labels()
    assert isinstance(labels, Labels)
    assert (labels.n_labels, labels.n_tasks, labels.n_workers) == (8000, 800, 164)
    assert not labels.has_gold
    declared = ds.to_labels(classes=[1, 0])
    assert list(declared.classes) == [1, 0]
    clamped = ds.to_labels(gold=ds.gold)
    assert int((clamped.gold_codes >= 0).sum()) == 800


@pytest.mark.parametrize("name", ALL_SETS)
def test_every_set_validates_with_its_gold(with_data, name):
    ds = load_labels(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # some sets repeat task-worker pairs
        labels = ds.to_labels(gold=ds.gold)
    assert labels.n_labels == len(ds.labels)
    assert labels.tasks.map(type).unique().tolist() == [str]
    expected_gold = 0 if ds.gold is None else len(ds.gold)
    assert int((labels.gold_codes >= 0).sum()) == expected_gold


def test_unknown_name(with_data):
    with pytest.raises(
        ValueError, match=r"no label set named 'nope'; available: \['adult_content3'"
    ):
        load_labels("nope")


def test_unknown_name_without_env_says_to_set_it(without_data):
    with pytest.raises(
        ValueError, match=r"available: \['grades', 'rte'\]\. Set CROWDBAYES_DATA .*not set"
    ):
        load_labels("dog")


def test_label_dataset_is_frozen(without_data):
    ds = load_labels("rte")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ds.name = "other"


# ---------------------------------------------------------------------------- simulate_labels


def test_simulate_shapes():
    sim = simulate_labels(200, 30, 4, 3, random_state=0)
    assert isinstance(sim, SyntheticLabels)
    assert list(sim.labels.columns) == ["task", "worker", "label"]
    assert len(sim.labels) == 800
    assert all(dt == np.int64 for dt in sim.labels.dtypes)
    assert sim.labels["task"].between(0, 199).all()
    assert sim.labels["worker"].between(0, 29).all()
    assert sim.labels["label"].between(0, 2).all()
    assert sim.truth.index.equals(pd.RangeIndex(200, name="task"))
    assert sim.truth.between(0, 2).all()
    assert sim.confusion.shape == (30, 3, 3)
    np.testing.assert_allclose(sim.confusion.sum(axis=2), 1.0)
    assert (sim.confusion >= 0).all()
    np.testing.assert_allclose(sim.prevalence, [1 / 3] * 3)
    assert sim.workers == list(range(30))
    labels = sim.to_labels()
    assert list(labels.classes) == [0, 1, 2]
    assert labels.n_labels == 800


def test_simulate_reproducible():
    a = simulate_labels(300, 20, 5, 3, random_state=42)
    b = simulate_labels(300, 20, 5, 3, random_state=42)
    pd.testing.assert_frame_equal(a.labels, b.labels)
    pd.testing.assert_series_equal(a.truth, b.truth)
    np.testing.assert_array_equal(a.confusion, b.confusion)
    c = simulate_labels(300, 20, 5, 3, random_state=43)
    assert not a.labels.equals(c.labels)
    d = simulate_labels(300, 20, 5, 3, random_state=np.random.default_rng(42))
    pd.testing.assert_frame_equal(a.labels, d.labels)


@pytest.mark.parametrize(
    ("n_workers", "per_task"),
    [(1000, 10), (12, 5), (12, 9), (8, 8), (40, 30)],  # Floyd; random keys (some, all)
)
def test_simulate_distinct_uniform_workers(n_workers, per_task):
    n_tasks = 3000
    sim = simulate_labels(n_tasks, n_workers, per_task, random_state=1)
    per = sim.labels.groupby("task")["worker"].agg(["size", "nunique"])
    assert len(per) == n_tasks
    assert (per["size"] == per_task).all()
    assert (per["nunique"] == per_task).all()
    # each worker is picked with probability per_task / n_workers per task
    counts = np.bincount(sim.labels["worker"], minlength=n_workers)
    p = per_task / n_workers
    expected = n_tasks * p
    sd = np.sqrt(n_tasks * p * (1 - p)) if p < 1 else 0.0
    assert np.all(np.abs(counts - expected) <= 5 * sd + 1e-9)


def test_simulate_workers_in_random_position():
    # the first label of a task comes from any worker, not only small ids (the order is shuffled)
    sim = simulate_labels(4000, 100, 3, random_state=2)
    first = sim.labels.groupby("task")["worker"].first()
    assert first.min() < 5 and first.max() > 94


def test_simulate_empirical_confusion_matches():
    k = 3
    sim = simulate_labels(30_000, 10, 4, k, accuracy_concentration=5.0, random_state=3)
    df = sim.labels
    true = sim.truth.to_numpy()[df["task"].to_numpy()]
    counts = np.zeros((10, k, k))
    np.add.at(counts, (df["worker"].to_numpy(), true, df["label"].to_numpy()), 1.0)
    n = counts.sum(axis=2, keepdims=True)
    empirical = counts / n
    p = sim.confusion
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(empirical - p) <= 5 * se + 1e-3)


def test_simulate_prevalence():
    sim = simulate_labels(20_000, 5, 1, 3, prevalence=[0.6, 0.3, 0.1], random_state=4)
    freq = np.bincount(sim.truth, minlength=3) / 20_000
    np.testing.assert_allclose(freq, [0.6, 0.3, 0.1], atol=0.015)


def test_simulate_confusion_prior_is_beta_for_two_classes():
    a, s = 0.8, 12.0
    sim = simulate_labels(10, 4000, 1, 2, accuracy_mean=a, accuracy_concentration=s, random_state=5)
    diag = np.stack([sim.confusion[:, 0, 0], sim.confusion[:, 1, 1]])  # specificity, sensitivity
    # Beta(s a, s (1 - a)): mean a, variance a (1 - a) / (s + 1)
    np.testing.assert_allclose(diag.mean(axis=1), a, atol=0.01)
    np.testing.assert_allclose(diag.var(axis=1), a * (1 - a) / (s + 1), rtol=0.1)


def test_simulate_off_diagonal_split_evenly():
    sim = simulate_labels(10, 3000, 1, 4, accuracy_mean=0.7, random_state=6)
    off = sim.confusion[:, 0, 1:]
    np.testing.assert_allclose(off.mean(axis=0), 0.1, atol=0.005)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"n_workers": 3, "labels_per_task": 4},
            ValueError,
            "labels_per_task=4 exceeds n_workers=3",
        ),
        ({"n_classes": 1}, ValueError, "n_classes must be at least 2; got 1"),
        ({"n_tasks": 0}, ValueError, "n_tasks must be at least 1; got 0"),
        ({"n_tasks": 10.0}, TypeError, "n_tasks must be an integer; got 10.0"),
        ({"labels_per_task": True}, TypeError, "labels_per_task must be an integer"),
        ({"accuracy_mean": 1.0}, ValueError, "accuracy_mean must lie strictly between 0 and 1"),
        ({"accuracy_concentration": 0.0}, ValueError, "accuracy_concentration must be positive"),
        ({"prevalence": [0.5, 0.5, 0.0]}, ValueError, "prevalence must have length n_classes=2"),
        ({"prevalence": [0.7, 0.7]}, ValueError, "prevalence must sum to 1"),
        ({"prevalence": [1.5, -0.5]}, ValueError, "prevalence must be finite and non-negative"),
    ],
)
def test_simulate_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        simulate_labels(**{"n_tasks": 10, "n_workers": 5, "labels_per_task": 2, **kwargs})
