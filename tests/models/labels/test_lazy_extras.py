"""Issue 45: ``held_out_counts_`` is computed when first read (or saved), not in every fit, and
stays what an eager computation gives — after a refit, after chained ``partial_fit`` batches
whose labels are gone, after save and load, and inside a model that chooses among others."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import crowdbayes.models.labels._base as base_module
from crowdbayes import BayesianDawidSkene, DawidSkene, Labels, load
from crowdbayes.annotators.questions import held_out_confusion_counts
from crowdbayes.datasets import simulate_labels
from crowdbayes.models.labels import AutoLabelModel


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return simulate_labels(300, 12, 4, n_classes=3, random_state=3).labels


def eager_counts(model, labels: Labels) -> np.ndarray:
    """The counts as every fit used to compute them: with the fitted matrices and prevalence."""
    k = labels.n_classes
    fitted = pd.Index(model.confusion_.index.get_level_values(0)[::k])
    with np.errstate(divide="ignore"):
        log_confusion = np.log(model.confusion_.to_numpy().reshape(-1, k, k))
        log_prevalence = np.log(model.prevalence_.reindex(labels.classes).to_numpy(np.float64))
    counts = held_out_confusion_counts(
        labels.task_codes,
        fitted.get_indexer(labels.workers)[labels.worker_codes],
        labels.label_codes,
        log_confusion,
        np.maximum(log_prevalence, -700.0),
        labels.gold_codes,
        labels.cross_checked_tasks(),
    )
    return counts.reshape(-1, k)


@pytest.fixture
def calls(monkeypatch) -> list:
    """Every computation of the counts, recorded."""
    seen = []

    def counting(*args, **kwargs):
        seen.append(1)
        return held_out_confusion_counts(*args, **kwargs)

    monkeypatch.setattr(base_module, "held_out_confusion_counts", counting)
    return seen


def test_a_fit_does_not_compute_the_counts_and_the_first_read_does_once(data, calls):
    labels = Labels(data)
    model = DawidSkene().fit(labels)
    assert calls == [] and "held_out_counts_" not in vars(model)
    counts = model.held_out_counts_
    assert len(calls) == 1 and model.held_out_counts_ is counts and len(calls) == 1
    assert counts.index.equals(model.confusion_.index)
    assert counts.columns.equals(model.confusion_.columns)
    np.testing.assert_allclose(counts.to_numpy(), eager_counts(model, labels), atol=1e-12)


def test_a_refit_replaces_the_counts_of_the_previous_fit(data):
    model = DawidSkene().fit(data)
    first = model.held_out_counts_.copy()
    other = data[~data["worker"].isin(data["worker"].unique()[:3])]
    model.fit(other)
    assert model.held_out_counts_.index.equals(model.confusion_.index)
    np.testing.assert_allclose(
        model.held_out_counts_.to_numpy(), eager_counts(model, Labels(other)), atol=1e-12
    )
    assert not model.held_out_counts_.index.equals(first.index)


def test_chained_partial_fits_unread_equal_those_read_after_each_batch(data):
    """The counts of a batch are those of the matrices fitted with it, even when nothing reads
    them until after the next batch has replaced the labels and the matrices."""
    tasks = data["task"].unique()
    parts = [data[data["task"].isin(chunk)] for chunk in np.array_split(tasks, 3)]
    unread = BayesianDawidSkene().fit(parts[0])
    read = BayesianDawidSkene().fit(parts[0])
    expected = read.held_out_counts_
    for batch in parts[1:]:
        previous = read.held_out_counts_
        read.partial_fit(batch)
        unread.partial_fit(batch)
        added = eager_counts(read, Labels(batch, classes=list(read.classes_)))
        added = pd.DataFrame(added, index=read.confusion_.index, columns=read.confusion_.columns)
        expected = added.add(previous, fill_value=0.0).reindex(added.index)
        pd.testing.assert_frame_equal(read.held_out_counts_, expected)
    pd.testing.assert_frame_equal(unread.held_out_counts_, expected)


def test_the_counts_are_saved_without_being_read_first(data, tmp_path, calls):
    model = BayesianDawidSkene().fit(data)
    assert calls == []
    model.save(tmp_path / "m.npz")
    assert len(calls) == 1 and "held_out_counts_" in vars(model)
    loaded = load(tmp_path / "m.npz")
    pd.testing.assert_frame_equal(loaded.held_out_counts_, model.held_out_counts_)
    assert len(calls) == 1
    # a loaded model's partial_fit adds to the saved counts
    batch = simulate_labels(20, 12, 4, n_classes=3, random_state=9).labels
    batch = batch.assign(task=batch["task"].astype(str) + "-new")
    loaded.partial_fit(batch)
    assert loaded.held_out_counts_.to_numpy().sum() > model.held_out_counts_.to_numpy().sum()


def test_a_chosen_model_inside_another_is_saved_with_its_counts(data, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoLabelModel(candidates=("ds", "mv"), n_folds=2).fit(data)
    model.save(tmp_path / "auto.npz")
    loaded = load(tmp_path / "auto.npz")
    pd.testing.assert_frame_equal(loaded.held_out_counts_, model.held_out_counts_)
    pd.testing.assert_frame_equal(loaded.model_.held_out_counts_, model.model_.held_out_counts_)


def test_the_state_of_another_fit_replaces_the_unread_counts(data):
    """A restart that keeps a cold fit's state (``active.replay``) keeps its counts, not those
    of the fit it replaces."""
    model = DawidSkene().fit(data)
    other = data[data["task"].isin(data["task"].unique()[:150])]
    cold = DawidSkene().fit(other)
    model._set_state(cold._get_state())
    pd.testing.assert_frame_equal(model.held_out_counts_, cold.held_out_counts_)
