"""The compiled fused E+M pass (crowdbayes.annotators.confusion_pass) against a plain-loop
reference in log space, against the numpy path of the models, and across thread counts."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from crowdbayes import BayesianDawidSkene, DawidSkene, Labels
from crowdbayes.annotators import confusion_pass as cp
from crowdbayes.annotators.confusion import confusion_statistics
from crowdbayes.datasets import load_labels, simulate_labels
from crowdbayes.models.labels._base import vote_share_start

# skipped where no C compiler built the kernel, except in CI (CI=true), which must build it
needs_kernel = pytest.mark.skipif(
    not cp.kernel_available() and os.environ.get("CI") != "true", reason="C kernel not built"
)


def test_the_kernel_is_built_in_ci():
    if os.environ.get("CI") == "true":
        assert cp.kernel_available(), "CI=true: the C kernel was not built (no C compiler?)"


def reference_pass(labels: Labels, log_conf, log_prev, weight=None):
    """One E+M pass with plain loops over the labels, in log space."""
    k = log_prev.shape[0]
    log_joint = np.tile(log_prev, (labels.n_tasks, 1))
    for i, j, x in zip(labels.task_codes, labels.worker_codes, labels.label_codes, strict=True):
        log_joint[i] += log_conf[j, :, x]
    for i, g in enumerate(labels.gold_codes):
        if g >= 0:
            log_joint[i, np.arange(k) != g] = -np.inf
    evidence = logsumexp(log_joint, axis=1)
    with np.errstate(invalid="ignore"):  # a task with every class impossible: NaN, as the models
        resp = np.exp(log_joint - evidence[:, None])
    w = np.ones(labels.n_tasks) if weight is None else weight
    counts = np.zeros_like(log_conf)
    for i, j, x in zip(labels.task_codes, labels.worker_codes, labels.label_codes, strict=True):
        counts[j, :, x] += w[i] * resp[i]
    return resp.T, counts, (w[:, None] * resp).sum(axis=0), float(evidence.sum())


def random_labels(k: int, seed: int, n_tasks=40, n_workers=6, duplicates=False, gold=False):
    rng = np.random.default_rng(seed)
    rows = [
        (f"t{i}", f"w{j}", int(rng.integers(k)))
        for i in range(n_tasks)
        for j in range(n_workers)
        if rng.random() < 0.7
    ]
    if duplicates:  # a worker labelling a task twice: a count of 2
        rows += rows[:5]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    known = frame.drop_duplicates("task").iloc[::7] if gold else frame.iloc[:0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Labels(frame, classes=list(range(k)), gold=pd.Series(known.label.values, known.task))


def random_globals(labels: Labels, seed: int, zeros=False):
    rng = np.random.default_rng(seed)
    k = labels.n_classes
    conf = rng.dirichlet(np.ones(k), size=(labels.n_workers, k))
    prev = rng.dirichlet(np.ones(k) * 3)
    if zeros:  # impossible labels: log θ = -inf
        conf[0, k - 1] = np.eye(k)[0]
        conf[1, 0, 1] = 0.0
        conf[1, 0] /= conf[1, 0].sum()
    with np.errstate(divide="ignore"):
        return np.log(conf), np.log(prev)


def assert_pass_close(fused, expected, rtol=1e-12):
    resp, counts, classes, evidence = expected
    np.testing.assert_allclose(fused.resp, resp, rtol=rtol, atol=1e-14)
    np.testing.assert_allclose(fused.confusion, counts, rtol=rtol, atol=1e-12)
    np.testing.assert_allclose(fused.classes, classes, rtol=rtol)
    assert fused.log_evidence == pytest.approx(evidence, rel=rtol)


@needs_kernel
@pytest.mark.parametrize("k", [2, 3, 4, 5, 8, 9])
@pytest.mark.parametrize("variant", ["plain", "duplicates", "gold", "zeros", "weights"])
def test_pass_matches_plain_reference(k, variant):
    labels = random_labels(k, k, duplicates=variant == "duplicates", gold=variant == "gold")
    log_conf, log_prev = random_globals(labels, k + 1, zeros=variant == "zeros")
    weight = None
    if variant == "weights":
        weight = (np.arange(labels.n_tasks) % 3 != 0).astype(float)
    assert labels.has_gold == (variant == "gold")
    fused = cp.confusion_pass(labels, log_conf, log_prev, weight)
    assert_pass_close(fused, reference_pass(labels, log_conf, log_prev, weight))
    # θ given in probability space (as EM holds it): the same pass
    given = cp.confusion_pass(labels, log_conf, log_prev, weight, confusion=np.exp(log_conf))
    expected = (fused.resp, fused.confusion, fused.classes, fused.log_evidence)
    assert_pass_close(given, expected, rtol=1e-15)


@needs_kernel
@pytest.mark.parametrize("k", [3, 5])
def test_pass_underflow_tasks(k):
    """Tasks with hundreds of confident labels: products far below the double range, rescaled
    or redone in log space, still equal the log-space reference; a task whose every class is
    impossible gets NaN and -inf evidence, as in the numpy path."""
    rng = np.random.default_rng(0)
    n_workers = 400
    rows = [("big", f"w{j}", 0) for j in range(n_workers)]
    rows += [("big2", f"w{j}", int(j % 50 == 0)) for j in range(n_workers)]
    rows += [(f"t{i}", f"w{j}", int(rng.integers(k))) for i in range(20) for j in range(5)]
    labels = Labels(pd.DataFrame(rows, columns=["task", "worker", "label"]), classes=range(k))
    conf = np.full((n_workers, k, k), 1e-6)
    conf[:, np.arange(k), np.arange(k)] = 1.0
    conf /= conf.sum(axis=2, keepdims=True)
    log_conf, log_prev = np.log(conf), np.log(np.full(k, 1.0 / k))
    fused = cp.confusion_pass(labels, log_conf, log_prev)
    assert_pass_close(fused, reference_pass(labels, log_conf, log_prev))
    # one worker's label on "big" is impossible under class 0: the task must move to class 1
    log_conf[0, 0, 0] = -np.inf
    log_conf[0, 1, 0] = np.log(0.5)
    fused = cp.confusion_pass(labels, log_conf, log_prev)
    assert_pass_close(fused, reference_pass(labels, log_conf, log_prev))
    # every class impossible for one task
    log_conf[:, :, 0] = -np.inf
    fused = cp.confusion_pass(labels, log_conf, log_prev)
    resp, *_ = reference_pass(labels, log_conf, log_prev)
    assert np.isnan(fused.resp).any() and np.array_equal(np.isnan(fused.resp), np.isnan(resp))
    assert fused.log_evidence == -np.inf


@needs_kernel
def test_results_do_not_depend_on_the_thread_count(monkeypatch):
    monkeypatch.setattr(cp, "LABELS_PER_CHUNK", 500)  # many chunks on a small set
    sim = simulate_labels(2_000, 50, 5, n_classes=5, random_state=1)
    labels = sim.to_labels()
    log_conf, log_prev = random_globals(labels, 3)
    runs = [cp.confusion_pass(labels, log_conf, log_prev, threads=t) for t in (1, 2, 3, 8)]
    assert len(cp.chunk_bounds(labels.count_matrix.indptr, labels.n_workers * 5, 8)) > 8
    for run in runs[1:]:
        assert np.array_equal(run.resp, runs[0].resp)
        assert np.array_equal(run.confusion, runs[0].confusion)
        assert np.array_equal(run.classes, runs[0].classes)
        assert run.log_evidence == runs[0].log_evidence
    for t in ("1", "3"):
        monkeypatch.setenv("CROWDBAYES_NUM_THREADS", t)
        model = DawidSkene(max_iter=30, tol=None).fit(labels)
        if t == "1":
            first = model.probas_.to_numpy()
        else:
            assert np.array_equal(model.probas_.to_numpy(), first)


def test_thread_count_setting(monkeypatch):
    monkeypatch.setattr(cp, "_CPUS", 4)
    monkeypatch.delenv("CROWDBAYES_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    for load, threads in [(0.0, 4), (1.0, 4), (2.2, 3), (4.6, 1), (40.0, 1)]:
        monkeypatch.setattr(cp.os, "getloadavg", lambda load=load: (load, load, load))
        assert cp.n_threads() == threads
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert cp.n_threads() == 2
    monkeypatch.setenv("CROWDBAYES_NUM_THREADS", "3")
    assert cp.n_threads() == 3


def fit_both(model_factory, labels, monkeypatch):
    """The same model fitted with the compiled pass and with the numpy path."""
    fused = model_factory().fit(labels)
    with monkeypatch.context() as patch:
        patch.setattr(cp, "_kernel", None)
        plain = model_factory().fit(labels)
    return fused, plain


def assert_fits_agree(fused, plain, tol=1e-10):
    np.testing.assert_allclose(fused.probas_.to_numpy(), plain.probas_.to_numpy(), atol=tol)
    np.testing.assert_allclose(fused.confusion_.to_numpy(), plain.confusion_.to_numpy(), atol=tol)
    np.testing.assert_allclose(fused.prevalence_.to_numpy(), plain.prevalence_.to_numpy(), atol=tol)
    assert fused.n_iter_ == plain.n_iter_
    history = fused.history_name
    np.testing.assert_allclose(getattr(fused, history), getattr(plain, history), rtol=1e-12)


@needs_kernel
@pytest.mark.parametrize("k", [2, 5])
def test_dawid_skene_fit_matches_numpy_path(k, monkeypatch):
    """100 EM iterations on simulated data (the speed benchmark's design, 20k labels)."""
    labels = simulate_labels(2_000, 100, 10, n_classes=k, random_state=0).to_labels()
    fused, plain = fit_both(lambda: DawidSkene(max_iter=100, tol=None), labels, monkeypatch)
    assert_fits_agree(fused, plain)


@needs_kernel
@pytest.mark.parametrize("smoothing", [0.0, 0.01])
def test_models_with_gold_duplicates_and_cuts_match_numpy_path(smoothing, monkeypatch):
    labels = random_labels(4, 7, n_tasks=120, n_workers=8, duplicates=True, gold=True)
    for factory in (
        lambda: DawidSkene(max_iter=60, tol=None, smoothing=smoothing),
        lambda: DawidSkene(max_iter=60, tol=None, one_coin=True),
        lambda: BayesianDawidSkene(max_iter=60, tol=None),
    ):
        fused, plain = fit_both(factory, labels, monkeypatch)
        assert_fits_agree(fused, plain)


def test_numpy_fallback_still_fits(monkeypatch):
    monkeypatch.setattr(cp, "_kernel", None)
    labels = random_labels(3, 2)
    assert cp.confusion_pass(labels, *random_globals(labels, 1)) is None
    model = DawidSkene().fit(labels)
    assert np.isfinite(model.log_posterior_history_).all()


@needs_kernel
@pytest.mark.parametrize("name", ["rte", "bluebird", "d_product", "temp"])
def test_real_sets_match_numpy_path(data_root, name, monkeypatch):
    labels = load_labels(name).to_labels()
    for factory in (
        lambda: DawidSkene(max_iter=100, tol=None),
        lambda: BayesianDawidSkene(max_iter=100, tol=None),
    ):
        fused, plain = fit_both(factory, labels, monkeypatch)
        assert_fits_agree(fused, plain)


@needs_kernel
@pytest.mark.parametrize("k", [2, 3, 4, 5, 8, 9, 12])
@pytest.mark.parametrize("gold", [False, True])
def test_vote_share_statistics_match_numpy(k, gold):
    """The compiled vote-share start: the numpy statistics of the vote shares (gold one-hot),
    the counts to the last bit (the same sums in the same order), the class totals to rounding."""
    labels = random_labels(k, k + 10, n_tasks=200, n_workers=9, gold=gold)
    assert labels.has_gold == gold
    fused = cp.vote_share_statistics(labels)
    resp = vote_share_start(labels)
    np.testing.assert_array_equal(fused.confusion, confusion_statistics(labels, resp))
    np.testing.assert_allclose(fused.classes, resp.sum(axis=1), rtol=1e-14)
    assert fused.resp is None and fused.log_evidence == 0.0


@needs_kernel
def test_vote_share_statistics_refuse_repeated_pairs():
    """Counts above 1 (a worker labelling a task twice) go through numpy."""
    assert cp.vote_share_statistics(random_labels(3, 1, duplicates=True)) is None


@needs_kernel
@pytest.mark.parametrize("k", [2, 5])
def test_pass_without_probas_gives_the_same_statistics(k):
    labels = simulate_labels(300, 20, 5, n_classes=k, random_state=k).to_labels()
    log_conf, log_prev = random_globals(labels, k)
    for threads in (1, 3):
        full = cp.confusion_pass(labels, log_conf, log_prev, threads=threads)
        bare = cp.confusion_pass(labels, log_conf, log_prev, threads=threads, probas=False)
        assert bare.resp is None and full.resp.shape == (k, labels.n_tasks)
        assert np.array_equal(bare.confusion, full.confusion)
        assert np.array_equal(bare.classes, full.classes)
        assert bare.log_evidence == full.log_evidence


@needs_kernel
def test_prepare_layout_counts_each_tasks_workers():
    sim = simulate_labels(500, 30, 4, n_classes=3, random_state=2)
    labels, again = sim.to_labels(), sim.to_labels()
    cp.prepare_layout(labels)
    assert "workers_per_task" in vars(labels) and "count_matrix" not in vars(labels)
    expected = again.workers_per_task  # counted from the codes
    assert np.array_equal(labels.workers_per_task, expected)
    assert labels.workers_per_task.dtype == expected.dtype
