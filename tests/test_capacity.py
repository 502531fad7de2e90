"""Capacity checks (:mod:`crowdbayes._capacity`): a fit whose dense arrays cannot fit in memory
is refused before any is allocated, naming the size it needs; the size counted is a lower bound
of what the fit really allocates (measured with ``tracemalloc``, which sees numpy's arrays)."""

from __future__ import annotations

import time
import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes import Labels
from crowdbayes._capacity import (
    ENV_VAR,
    FLOAT_BYTES,
    CapacityError,
    check_memory,
    format_size,
    memory_bound,
    parse_size,
)
from crowdbayes.models.labels import (
    BayesianDawidSkene,
    DawidSkene,
    HierarchicalAnnotation,
    MajorityVote,
)


@pytest.mark.parametrize(
    "text, size",
    [
        ("4GiB", 4 * 2**30),
        ("4 gib", 4 * 2**30),
        ("500MB", 500 * 10**6),
        ("1.5GiB", 3 * 2**29),
        ("2e9", 2 * 10**9),
        ("123", 123),
        ("1TiB", 2**40),
        ("64k", 64_000),
    ],
)
def test_sizes_are_read_in_decimal_and_binary_units(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["four", "4 GiBs", "-1GiB", "0", "", "GiB"])
def test_a_size_that_is_not_one_is_refused_naming_the_variable(text):
    with pytest.raises(ValueError, match=ENV_VAR):
        parse_size(text)


def test_sizes_are_shown_in_binary_units():
    assert format_size(71.3 * 2**30) == "71.3 GiB"
    assert format_size(3 * 2**20) == "3.0 MiB"
    assert format_size(12) == "12 bytes"


def test_the_bound_is_the_variable_where_set_else_a_share_of_what_is_available(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "2GiB")
    assert memory_bound() == (2 * 2**30, f"{ENV_VAR}=2GiB")
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.setattr("crowdbayes._capacity.available_memory", lambda: 10 * 2**30)
    bound, source = memory_bound()
    assert bound == 8 * 2**30 and "10.0 GiB available" in source and ENV_VAR in source
    monkeypatch.setattr("crowdbayes._capacity.available_memory", lambda: None)
    assert memory_bound()[0] is None
    check_memory("anything", {"huge": 10**15}, "")  # no bound known: nothing refused


def test_check_memory_refuses_above_the_bound_only(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "1MiB")
    check_memory("small", {"a": 2**17}, "hint")  # exactly 1 MiB of float64
    with pytest.raises(
        CapacityError, match=r"needs at least 1\.0 MiB .*\(a 1\.0 MiB, b 8 bytes\).*: hint$"
    ):
        check_memory("big", {"a": 2**17, "b": 1}, "hint")
    assert issubclass(CapacityError, ValueError) and issubclass(CapacityError, MemoryError)


# ---------------------------------------------------------------------------- the models
def _many_classes(n_rows: int = 40_000, n_classes: int = 10_000) -> Labels:
    """The issue's input: 10,000 classes in 40,000 rows (20,000 tasks, 50 workers)."""
    i = np.arange(n_rows)
    frame = pd.DataFrame({"task": i % 20_000, "worker": i % 50, "label": i % n_classes})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # repeated task-worker pairs
        return Labels(frame)


MODELS = {
    "mv": MajorityVote,
    "ds": DawidSkene,
    "bayes-ds": BayesianDawidSkene,
    "hierarchical": HierarchicalAnnotation,
}


@pytest.mark.parametrize("name", MODELS)
def test_ten_thousand_classes_are_refused_at_once_with_the_size_needed(name, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "4GiB")
    labels = _many_classes()
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(CapacityError) as refused:
        MODELS[name]().fit(labels)
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert seconds < 1.0
    assert peak < 50 * 2**20  # nothing large was allocated before the refusal
    message = str(refused.value)
    # at least the confusion matrices: 50 workers × 10,000² float64 = 37.3 GiB each
    needed = float(message.split("needs at least ")[1].split(" ")[0].replace(",", ""))
    unit = message.split("needs at least ")[1].split(" ")[1]
    assert unit in ("GiB", "TiB") and (needed >= 37.3 or unit == "TiB")
    assert "4.0 GiB allowed" in message and "classes" in message


def _small_labels(n_tasks: int, n_workers: int, n_classes: int, seed: int = 0) -> Labels:
    rng = np.random.default_rng(seed)
    truth = rng.integers(n_classes, size=n_tasks)
    rows = []
    for task in range(n_tasks):
        for worker in rng.choice(n_workers, 3, replace=False):
            right = rng.random() < 0.7
            rows.append((task, worker, truth[task] if right else rng.integers(n_classes)))
    return Labels(pd.DataFrame(rows, columns=["task", "worker", "label"]))


#: (model, tasks, workers, classes): small sets where fixed costs weigh, and one where the
#: workers × classes² matrices dominate
LOWER_BOUND_CASES = [
    (MajorityVote(), 200, 20, 16),
    (DawidSkene(max_iter=5), 200, 20, 16),
    (BayesianDawidSkene(max_iter=3), 200, 20, 16),
    (HierarchicalAnnotation(n_chains=1, n_warmup=4, n_samples=4, n_jobs=1), 200, 20, 16),
    (MajorityVote(), 500, 20, 300),
    (DawidSkene(max_iter=2), 500, 20, 300),
]


@pytest.mark.parametrize(
    "model, n_tasks, n_workers, n_classes",
    LOWER_BOUND_CASES,
    ids=lambda x: type(x).__name__ if hasattr(x, "fit") else str(x),
)
def test_the_size_counted_is_a_lower_bound_of_what_the_fit_allocates(
    model, n_tasks, n_workers, n_classes
):
    """A refused fit would not have fitted: the arrays counted are fewer than the fit's peak
    (tracemalloc sees numpy's allocations)."""
    labels = _small_labels(n_tasks, n_workers, n_classes)
    counted = FLOAT_BYTES * sum(
        model._dense_arrays(labels.n_tasks, labels.n_workers, labels.n_classes).values()
    )
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(labels)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert counted <= peak, (format_size(counted), format_size(peak))


def test_a_fit_within_the_bound_runs(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "64MiB")
    labels = _small_labels(n_tasks=200, n_workers=10, n_classes=3)
    assert DawidSkene().fit(labels).probas_.shape == (200, 3)


def test_partial_fit_counts_every_worker_of_the_updated_model(monkeypatch):
    labels = _small_labels(n_tasks=200, n_workers=10, n_classes=3)
    model = DawidSkene().fit(labels)
    monkeypatch.setenv(ENV_VAR, "100")  # 100 bytes: nothing fits
    new = pd.DataFrame({"task": [1000, 1000], "worker": [0, 1], "label": [0, 1]})
    with pytest.raises(CapacityError, match="1 tasks, 10 workers and 3 classes"):
        model.partial_fit(new)
