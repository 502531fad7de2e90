"""Issue 45: the Dawid–Skene fit works on the label codes themselves where it can — the compiled
pass's CSR arrays, the starting statistics and the held-out counts — with the same numbers as
the count-matrix path, and so a fit in a fresh process never imports SciPy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes import Labels
from crowdbayes.annotators import confusion_pass as cp
from crowdbayes.annotators.confusion import confusion_statistics
from crowdbayes.annotators.questions import held_out_confusion_counts
from crowdbayes.datasets import simulate_labels

needs_kernel = pytest.mark.skipif(
    not cp.kernel_available() and os.environ.get("CI") != "true", reason="C kernel not built"
)


def labels_of(frame: pd.DataFrame, **kwargs) -> Labels:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Labels(frame, **kwargs)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    # one label per task for some tasks (cut from the held-out counts), gold on a few
    labels = simulate_labels(200, 8, 3, n_classes=4, random_state=1).labels
    single = labels.groupby("task").head(1).iloc[:30].assign(task=lambda f: f["task"] + 1000)
    return pd.concat([labels, single], ignore_index=True)


def gold_of(frame: pd.DataFrame) -> pd.Series:
    first = frame.drop_duplicates("task").iloc[::9]
    return pd.Series(first["label"].to_numpy(), index=first["task"].to_numpy())


@pytest.mark.parametrize("with_gold", [False, True])
def test_held_out_counts_of_distinct_pairs_need_no_grouping_by_pair(frame, with_gold):
    labels = labels_of(frame, gold=gold_of(frame) if with_gold else None)
    assert labels.pairs_distinct and labels.has_gold == with_gold
    rng = np.random.default_rng(0)
    confusion = rng.dirichlet(np.ones(4) + 3 * np.eye(4)[0], size=(labels.n_workers, 4))
    args = (
        labels.task_codes,
        labels.worker_codes,
        labels.label_codes,
        np.log(confusion),
        np.log(np.full(4, 0.25)),
        labels.gold_codes,
        labels.cross_checked_tasks(),
    )
    assert not labels.cross_checked_tasks().all()
    fast = held_out_confusion_counts(*args, pairs_distinct=True)
    np.testing.assert_allclose(fast, held_out_confusion_counts(*args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sums_to_one", [True, False])
def test_starting_statistics_from_codes_equal_the_sparse_product(frame, sums_to_one):
    resp = np.random.default_rng(2).dirichlet(np.ones(4), size=frame["task"].nunique()).T
    if not sums_to_one:
        resp = resp * (np.arange(resp.shape[1]) % 3 != 0)
    fresh = labels_of(frame)
    from_codes = confusion_statistics(fresh, resp, sums_to_one=sums_to_one)
    assert "count_matrix" not in vars(fresh)
    built = labels_of(frame)
    _ = built.count_matrix
    expected = confusion_statistics(built, resp, sums_to_one=sums_to_one)
    np.testing.assert_allclose(from_codes, expected, rtol=1e-12, atol=1e-12)


@needs_kernel
@pytest.mark.parametrize("order", ["grouped", "shuffled", "repeated"])
def test_the_pass_on_the_codes_equals_the_pass_on_the_count_matrix(frame, order, monkeypatch):
    table = frame
    if order == "shuffled":  # not grouped by task: the count matrix
        table = frame.sample(frac=1.0, random_state=0)
    elif order == "repeated":  # a repeated task-worker pair: the count matrix
        table = pd.concat([frame, frame.iloc[:3]]).sort_values("task", kind="stable")
    labels = labels_of(table)
    rng = np.random.default_rng(3)
    log_conf = np.log(rng.dirichlet(np.ones(4), size=(labels.n_workers, 4)))
    log_prev = np.log(rng.dirichlet(np.ones(4)))
    fused = cp.confusion_pass(labels, log_conf, log_prev)
    assert ("count_matrix" in vars(labels)) == (order != "grouped")
    monkeypatch.setattr(cp, "_rows_from_codes", lambda labels: None)
    again = labels_of(table)
    reference = cp.confusion_pass(again, log_conf, log_prev)
    np.testing.assert_allclose(fused.resp, reference.resp, rtol=1e-13)
    np.testing.assert_allclose(fused.confusion, reference.confusion, rtol=1e-12, atol=1e-12)
    assert fused.log_evidence == pytest.approx(reference.log_evidence, rel=1e-13)


@needs_kernel
def test_a_dawid_skene_fit_in_a_fresh_process_imports_no_scipy():
    """The first fit in a process paid a fifth of a second for SciPy's sparse module (and the
    modules its array-API layer imports): the compiled pass and the codes need none of it."""
    code = "\n".join(
        [
            "import json, sys",
            "import crowdbayes as cb",
            "from crowdbayes.datasets import simulate_labels",
            "frame = simulate_labels(500, 20, 5, n_classes=5, random_state=0).labels",
            "model = cb.DawidSkene(max_iter=5, tol=None).fit(frame)",
            "assert model.n_iter_ == 5",
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('scipy'))))",
        ]
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.splitlines()[-1]) == []
