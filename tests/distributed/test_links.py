"""LinkClustering's VB on a real LocalCluster (2 worker processes on loopback): the same
posterior as in memory, bad partitions refused by name."""

from __future__ import annotations

import os
import signal
import threading
import warnings

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from crowdbayes.datasets.clustering import simulate_pair_links  # noqa: E402
from crowdbayes.distributed import fit_links_distributed  # noqa: E402
from crowdbayes.models.clustering import LinkClustering  # noqa: E402


@pytest.fixture(scope="module")
def sim():
    truth = pd.Series(np.repeat(np.arange(4), 30), index=[f"i{j}" for j in range(120)])
    alpha = np.array([0.95, 0.9, 0.85, 0.8, 0.7, 0.95, 0.9, 0.6])
    beta = np.array([0.95, 0.85, 0.9, 0.8, 0.9, 0.7, 0.95, 0.9])
    sim = simulate_pair_links(
        truth, n_workers=8, pairs_per_worker=250, alpha=alpha, beta=beta, random_state=3
    )
    frame = sim.to_links().to_frame()
    rng = np.random.default_rng(0)
    start = truth.copy()
    moved = rng.random(truth.size) < 0.4  # a poor start: 40% of the items moved at random
    start[moved] = rng.integers(4, size=moved.sum())
    return frame, start


def model(**kwargs) -> LinkClustering:
    return LinkClustering(4, n_init=1, n_polish=0, random_state=5, **kwargs)


def assert_same_posterior(fitted, reference) -> None:
    assert fitted.n_iter_ == reference.n_iter_
    assert len(fitted.elbo_history_) == len(reference.elbo_history_) >= 2
    np.testing.assert_allclose(fitted.elbo_history_, reference.elbo_history_, rtol=0, atol=1e-8)
    pd.testing.assert_index_equal(fitted.probas_.index, reference.probas_.index)
    pd.testing.assert_index_equal(fitted.workers_.index, reference.workers_.index)
    np.testing.assert_allclose(fitted.probas_, reference.probas_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(fitted.workers_, reference.workers_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(fitted.prevalence_, reference.prevalence_, rtol=0, atol=1e-8)
    pd.testing.assert_series_equal(fitted.assignments_, reference.assignments_)
    assert fitted.elbo_ == pytest.approx(reference.elbo_, abs=1e-8)


def test_dask_frame_equals_in_memory(client, sim):
    frame, start = sim
    reference = model().fit(frame, init=start)
    assert reference.converged_ and reference.n_iter_ >= 5  # VB really iterated
    sweeps = []
    fitted = fit_links_distributed(
        model(),
        dd.from_pandas(frame, npartitions=5, sort=False),
        init=start,
        client=client,
        on_iteration=lambda i, elbo: sweeps.append((i, elbo)),
    )
    assert_same_posterior(fitted, reference)
    assert [i for i, _ in sweeps] == list(range(1, reference.n_iter_ + 1))
    # the in-memory fit with the search on top only improves on this VB run
    assert LinkClustering(4, n_init=1, random_state=0).fit(frame).elbo_ >= fitted.elbo_ - 1e-6


def test_parquet_files_with_a_partial_start_equal_in_memory(client, sim, tmp_path):
    frame, start = sim
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[rows].to_parquet(tmp_path / f"links-{i}.parquet")
    partial = start.iloc[::2]  # the other items start at random, drawn from random_state
    reference = model(max_iter=6, tol=None).fit(frame, init=partial)
    fitted = fit_links_distributed(
        model(max_iter=6, tol=None), tmp_path, init=partial, client=client
    )
    assert_same_posterior(fitted, reference)


@pytest.mark.slow
def test_real_annotations_from_the_true_digits_equal_in_memory(client, data_root, tmp_path):
    from crowdbayes.datasets.clustering import load_semicrowd_mnist

    crowd = load_semicrowd_mnist()
    frame = crowd.links[["worker", "left", "right", "label"]]
    # the one pair a worker judged twice, kept as two judgments in memory, is dropped here
    key = pd.DataFrame(
        {
            "w": frame["worker"],
            "a": np.minimum(frame["left"], frame["right"]),
            "b": np.maximum(frame["left"], frame["right"]),
        }
    )
    frame = frame[~key.duplicated().to_numpy()].reset_index(drop=True)
    quick = dict(n_polish=0, max_iter=2, tol=None)  # a round trip per colour class (36) a sweep
    reference = LinkClustering(10, n_init=1, **quick).fit(frame, init=crowd.digits)
    frame.to_parquet(tmp_path / "links.parquet", row_group_size=2000)
    fitted = fit_links_distributed(
        LinkClustering(10, **quick),
        dd.read_parquet(tmp_path / "links.parquet", split_row_groups=True),
        init=crowd.digits,
        client=client,
    )
    assert_same_posterior(fitted, reference)
    assert fitted.elbo_history_[1] > fitted.elbo_history_[0]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("label", 2, r"column 'label' must hold 1 \(must-link\) or 0 \(cannot-link\)"),
        ("left", None, r"column 'left' has 1 missing value"),
        ("right", "same", r"link an item to itself"),
    ],
)
def test_bad_partition_is_named_and_nothing_is_fitted(
    client, sim, tmp_path, column, value, message
):
    frame, start = sim
    bad = frame.copy()
    row = len(bad) - 3  # in the last partition
    bad[column] = bad[column].astype(object)
    bad.loc[row, column] = bad.loc[row, "left"] if value == "same" else value
    fitted = model()
    with pytest.raises(ValueError, match=rf"links: partition 3: .*{message}"):
        fit_links_distributed(
            fitted, dd.from_pandas(bad, npartitions=4, sort=False), init=start, client=client
        )
    assert not hasattr(fitted, "probas_") and not hasattr(fitted, "elbo_history_")
    for i, rows in enumerate(np.array_split(np.arange(len(bad)), 2)):
        bad.iloc[rows].to_parquet(tmp_path / f"part-{i}.parquet")
    with pytest.raises(ValueError, match=rf"links: file \S*part-1.parquet: .*{message}"):
        fit_links_distributed(fitted, tmp_path, init=start, client=client)
    assert not hasattr(fitted, "probas_")


def test_corrupt_file_and_repeated_judgments_are_refused(client, sim, tmp_path):
    frame, start = sim
    frame.iloc[:100].to_parquet(tmp_path / "a.parquet")
    (tmp_path / "b.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match=r"links: file \S*b.parquet is not a readable Parquet"):
        fit_links_distributed(model(), tmp_path, init=start, client=client)
    repeated = pd.concat([frame, frame.iloc[[7]]], ignore_index=True)  # in another partition
    with pytest.raises(ValueError, match=r"1 \(worker, pair\) judgment\(s\) are repeated across"):
        fit_links_distributed(
            model(), dd.from_pandas(repeated, npartitions=3, sort=False), init=start, client=client
        )
    with pytest.raises(TypeError, match="Dask DataFrame or a Parquet"):
        fit_links_distributed(model(), frame, init=start, client=client)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="none of the linked items has a starting cluster"):
            fit_links_distributed(
                model(),
                dd.from_pandas(frame, npartitions=2),
                init=pd.Series([0], index=["nobody"]),
                client=client,
            )


def test_killing_a_worker_mid_fit_gives_the_same_result(client, sim):
    """SIGKILL one worker process during the third sweep: the pieces of links it held are
    recomputed from their lineage (the data, the broadcast codes) and the fit ends as in
    memory."""
    frame, start = sim
    before = client.run(os.getpid)
    victim = sorted(before.items())[0][1]
    killer = threading.Timer(0.02, os.kill, args=(victim, signal.SIGKILL))

    def kill_during_next_sweep(sweep, elbo):
        if sweep == 2:
            killer.start()

    fitted = fit_links_distributed(
        model(),
        dd.from_pandas(frame, npartitions=4, sort=False),
        init=start,
        client=client,
        on_iteration=kill_during_next_sweep,
    )
    killer.join()
    assert fitted.n_iter_ > 3  # the kill happened before the fit ended
    assert_same_posterior(fitted, model().fit(frame, init=start))
    client.wait_for_workers(2, timeout=30)
    assert victim not in client.run(os.getpid).values()
