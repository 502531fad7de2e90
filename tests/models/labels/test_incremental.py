"""Incremental updates: save a fitted model in the safe format and continue from it with new
labels (warm start)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes import (
    BayesianDawidSkene,
    ConvergenceWarning,
    DawidSkene,
    Labels,
    MajorityVote,
    load,
)
from crowdbayes.datasets import simulate_labels
from crowdbayes.metrics import accuracy

MODELS = [DawidSkene, BayesianDawidSkene]


@pytest.fixture(scope="module")
def data():
    return simulate_labels(400, 30, 5, 3, accuracy_mean=0.7, random_state=21)


@pytest.mark.parametrize("cls", MODELS)
def test_save_and_load_round_trip(cls, data, tmp_path):
    model = cls(tol=1e-6).fit(data.to_labels())
    path = tmp_path / "model.npz"
    model.save(path)
    with np.load(path, allow_pickle=False) as archive:  # no pickle anywhere
        assert "__header__" in archive.files
    loaded = load(path)
    assert type(loaded) is cls and loaded.get_params() == model.get_params()
    pd.testing.assert_frame_equal(loaded.confusion_, model.confusion_)
    pd.testing.assert_series_equal(loaded.prevalence_, model.prevalence_)
    assert loaded.n_iter_ == model.n_iter_
    for key in model.primary:
        np.testing.assert_array_equal(loaded.globals_[key], model.globals_[key])


@pytest.mark.parametrize("cls", MODELS)
def test_continuing_on_the_same_labels_is_the_rest_of_the_full_run(cls, data, tmp_path):
    labels = data.to_labels()
    full = cls(tol=1e-12, max_iter=5000).fit(labels)
    loose = cls(tol=1e-4).fit(labels)
    loose.save(tmp_path / "loose.npz")
    warm = cls(tol=1e-12, max_iter=5000).fit(labels, init=tmp_path / "loose.npz")
    assert loose.n_iter_ + warm.n_iter_ == full.n_iter_
    pd.testing.assert_frame_equal(warm.probas_, full.probas_, rtol=0, atol=1e-12)


def split_new(data, share: float, seed: int = 0):
    """Old labels, and all labels with ``share`` more (new tasks, some by a new worker)."""
    frame = data.labels
    rng = np.random.default_rng(seed)
    new_tasks = rng.choice(data.truth.index, size=int(share * len(data.truth)), replace=False)
    is_new = frame["task"].isin(new_tasks).to_numpy()
    everything = frame.copy()
    everything.loc[is_new & (frame["worker"] == 0), "worker"] = 999  # a worker never seen
    return frame[~is_new], everything


@pytest.mark.parametrize("cls", MODELS)
def test_new_labels_warm_start_reaches_the_full_refit(cls, data, tmp_path):
    """Warm start and full refit head for the same fixed point: fewer iterations, the same
    labels, and posteriors that agree better the tighter the tolerance."""
    old, everything = split_new(data, 0.02)
    classes = [0, 1, 2]
    labels = Labels(everything, classes=classes)
    gaps = []
    for tol in (1e-8, 1e-13):
        previous = cls(tol=tol, max_iter=5000).fit(Labels(old, classes=classes))
        assert 999 in labels.workers and 999 not in previous.workers_
        refit = cls(tol=tol, max_iter=5000).fit(labels)
        warm = cls(tol=tol, max_iter=5000).fit(labels, init=previous)
        assert warm.n_iter_ < refit.n_iter_
        gap = abs(accuracy(data.truth, warm.labels_) - accuracy(data.truth, refit.labels_))
        assert gap <= (0.005 if tol > 1e-10 else 0.0)  # a borderline task may flip when loose
        assert warm.confusion_.loc[999].notna().all().all()
        gaps.append(np.abs(warm.probas_ - refit.probas_).to_numpy().max())
    assert gaps[1] < gaps[0] / 10
    assert gaps[1] < 1e-3


def test_warm_start_refuses_mismatches(data, tmp_path):
    labels = data.to_labels()
    ds = DawidSkene(max_iter=3, tol=None).fit(labels)
    with pytest.raises(TypeError, match="expected a fitted BayesianDawidSkene; got DawidSkene"):
        BayesianDawidSkene().fit(labels, init=ds)
    other = Labels(data.labels, classes=[0, 1, 2, 3])
    with pytest.raises(ValueError, match=r"classes \[0, 1, 2\] differ from the labels' classes"):
        DawidSkene().fit(other, init=ds)
    with pytest.raises(TypeError, match="MajorityVote cannot warm-start: fit it without init"):
        MajorityVote().fit(labels, init=ds)
    with pytest.raises(FileNotFoundError, match="model file not found"):
        DawidSkene().fit(labels, init=tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_bytes(b"junk")
    with pytest.raises(ValueError, match="is not a crowdbayes model file"):
        DawidSkene().fit(labels, init=tmp_path / "junk.npz")
    with pytest.raises(ValueError, match="has no parameter 'maxiter'"):
        DawidSkene().set_params(maxiter=3)


def test_warm_start_with_string_ids(tmp_path):
    frame = pd.DataFrame(
        [(f"t{i}", f"w{j}", "yes" if (i + j) % 4 else "no") for i in range(40) for j in range(4)],
        columns=["task", "worker", "label"],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = DawidSkene(max_iter=5).fit(frame)
    model.save(tmp_path / "m.npz")
    loaded = load(tmp_path / "m.npz")
    assert list(loaded.workers_) == list(model.workers_)
    assert DawidSkene().fit(frame, init=loaded).converged_


@pytest.mark.parametrize("cls", MODELS)
def test_partial_fit_touches_only_the_batch(cls, data, tmp_path):
    """Old statistics + the batch's: equal to a fit whose old tasks are frozen, and close to a
    refit on all labels."""
    old, everything = split_new(data, 0.05)
    batch = everything[~everything.index.isin(old.index)]
    classes = [0, 1, 2]
    previous = cls(tol=1e-10, max_iter=5000).fit(Labels(old, classes=classes))
    previous.save(tmp_path / "m.npz")
    updated = load(tmp_path / "m.npz").set_params(tol=1e-10, max_iter=5000)
    updated.partial_fit(batch)
    assert len(updated.probas_) == batch["task"].nunique()
    assert 999 in updated.workers_ and len(updated.workers_) == len(previous.workers_) + 1
    # workers without labels in the batch keep their saved rows exactly
    idle = previous.workers_.difference(batch["worker"].unique())
    assert len(idle) > 0
    pd.testing.assert_frame_equal(
        updated.confusion_.loc[idle], previous.confusion_.loc[idle], check_exact=True
    )
    # the invariant: stats_ = old statistics + the batch's at the final globals
    np.testing.assert_allclose(
        updated.stats_["classes"].sum(), previous.stats_["classes"].sum() + len(updated.probas_)
    )
    # against the refit on everything: the batch's labels agree on nearly every task
    refit = cls(tol=1e-10, max_iter=5000).fit(Labels(everything, classes=classes))
    agree = (updated.labels_ == refit.labels_.reindex(updated.labels_.index)).mean()
    assert agree >= 0.95
    # and chaining: a second partial fit starts from the first's statistics
    total = updated.stats_["classes"].sum()
    updated.partial_fit(batch.assign(task=batch["task"] + 10_000))
    np.testing.assert_allclose(updated.stats_["classes"].sum(), total + len(updated.probas_))


def test_partial_fit_refuses_models_without_statistics(data):
    with pytest.raises(TypeError, match="partial_fit needs an iterative model"):
        MajorityVote().fit(data.to_labels()).partial_fit(data.labels)
