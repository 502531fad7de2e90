"""The Dask backend on a real LocalCluster (2 worker processes on loopback): same posteriors as
in memory, survives a killed worker, refuses bad partitions by name and leaves no partial
output."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from crowdbayes import BayesianDawidSkene, DawidSkene, MajorityVote  # noqa: E402
from crowdbayes.datasets import simulate_labels  # noqa: E402
from crowdbayes.distributed import fit_distributed  # noqa: E402

MODELS = {
    "mv": lambda: MajorityVote(ties="first"),
    "ds": lambda: DawidSkene(),
    "ds-one-coin": lambda: DawidSkene(one_coin=True, smoothing=0.1),
    "bayes-ds": lambda: BayesianDawidSkene(),
}
CLASSES = [0, 1, 2]


@pytest.fixture(scope="module")
def data():
    return simulate_labels(150, 12, 4, 3, accuracy_mean=0.7, random_state=11)


def write_parts(frame: pd.DataFrame, directory, n_files: int = 3, seed: int = 0) -> list:
    """Rows dealt at random over ``n_files`` Parquet files (tasks straddle files)."""
    directory.mkdir(parents=True, exist_ok=True)
    which = np.random.default_rng(seed).integers(n_files, size=len(frame))
    paths = []
    for i in range(n_files):
        path = directory / f"labels-{i}.parquet"
        frame[which == i].to_parquet(path, index=False)
        paths.append(path)
    return paths


def in_memory(name: str, data, gold=None):
    return MODELS[name]().fit(data.to_labels(gold=gold))


def assert_same_posteriors(result, reference) -> None:
    tasks = result.read_tasks()
    assert len(tasks) == len(reference.probas_)
    probas = tasks[[f"p_{c}" for c in reference.classes_]].reindex(reference.probas_.index)
    assert np.max(np.abs(probas.to_numpy() - reference.probas_.to_numpy())) <= 1e-8
    assert (tasks["label"].reindex(reference.labels_.index) == reference.labels_).all()
    model = result.model
    confusion = model.confusion_.reindex(reference.confusion_.index)
    assert np.max(np.abs(confusion.to_numpy() - reference.confusion_.to_numpy())) <= 1e-8
    np.testing.assert_allclose(model.prevalence_, reference.prevalence_, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", list(MODELS))
def test_same_posteriors_as_in_memory_from_parquet_files(name, client, data, tmp_path):
    gold = data.truth.iloc[::10]
    write_parts(data.labels, tmp_path / "in")
    result = fit_distributed(
        MODELS[name](),
        tmp_path / "in",
        out=tmp_path / "tasks.parquet",
        client=client,
        classes=CLASSES,
        gold=gold,
    )
    assert result.n_labels == len(data.labels) and result.n_partitions == 3
    assert result.model.n_iter_ == in_memory(name, data, gold).n_iter_
    assert_same_posteriors(result, in_memory(name, data, gold))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "tasks.parquet"]


@pytest.mark.parametrize("name", ["bayes-ds"])
def test_grouped_dask_dataframe_out_of_core(name, client, data, tmp_path):
    """Tasks already grouped (index divisions), nothing persisted: re-encoded every pass
    (a fixed number of passes keeps the test fast)."""
    frame = dd.from_pandas(data.labels.set_index("task"), npartitions=4, sort=True)
    model = MODELS[name]().set_params(max_iter=4, tol=None)
    result = fit_distributed(
        model,
        frame,
        out=tmp_path / "tasks",
        client=client,
        classes=CLASSES,
        grouped=True,
        persist=False,
    )
    assert result.n_partitions == 4 and result.model.n_iter_ == 4
    reference = MODELS[name]().set_params(max_iter=4, tol=None).fit(data.to_labels())
    assert_same_posteriors(result, reference)


def test_a_prior_chosen_by_refitting_is_refused_with_a_message(tmp_path):
    with pytest.raises(ValueError, match="prior_prevalence='auto'.*pass a number"):
        fit_distributed(
            BayesianDawidSkene(prior_prevalence="auto"), tmp_path / "in", out=tmp_path / "out"
        )


def test_random_ties_are_reproducible_and_among_tied(client, data, tmp_path):
    write_parts(data.labels, tmp_path / "in")
    runs = [
        fit_distributed(
            MajorityVote(random_state=4),
            tmp_path / "in",
            out=tmp_path / f"out{i}",
            client=client,
            classes=CLASSES,
        ).read_tasks()
        for i in range(2)
    ]
    pd.testing.assert_frame_equal(runs[0].sort_index(), runs[1].sort_index())
    shares = runs[0][[f"p_{c}" for c in CLASSES]].to_numpy()
    chosen = shares[np.arange(len(shares)), runs[0]["label"].to_numpy()]
    assert np.all(chosen == shares.max(axis=1))  # a tied class, never a beaten one
    reference = in_memory("mv", data)
    probas = runs[0][[f"p_{c}" for c in CLASSES]].reindex(reference.probas_.index)
    np.testing.assert_allclose(probas.to_numpy(), reference.probas_.to_numpy(), atol=1e-12)


def test_killing_a_worker_mid_fit_gives_the_same_result(client, data, tmp_path):
    """SIGKILL one worker process while the third pass is (most likely) running: its persisted
    partitions are recomputed from the Parquet files and the fit ends as in memory."""
    write_parts(data.labels, tmp_path / "in", n_files=4)
    before = client.run(os.getpid)
    victim = sorted(before.items())[0][1]
    killer = threading.Timer(0.02, os.kill, args=(victim, signal.SIGKILL))

    def kill_during_next_pass(iteration, objective, seconds):
        if iteration == 2:
            killer.start()

    result = fit_distributed(
        DawidSkene(tol=1e-5),
        tmp_path / "in",
        out=tmp_path / "tasks",
        client=client,
        classes=CLASSES,
        on_iteration=kill_during_next_pass,
    )
    killer.join()
    assert result.model.n_iter_ > 3  # the kill happened before the fit ended
    assert_same_posteriors(result, DawidSkene(tol=1e-5).fit(data.to_labels()))
    client.wait_for_workers(2, timeout=30)
    assert victim not in client.run(os.getpid).values()


def test_warm_start_on_the_cluster_continues_a_saved_model(client, data, tmp_path):
    """Continuing a loosely converged saved model on the same data is the rest of the full
    run's trajectory: same posteriors, the remaining iterations only."""
    write_parts(data.labels, tmp_path / "in")
    full = BayesianDawidSkene(tol=1e-12, max_iter=5000).fit(data.to_labels())
    loose = BayesianDawidSkene(tol=1e-5).fit(data.to_labels())
    loose.save(tmp_path / "bds.npz")
    result = fit_distributed(
        BayesianDawidSkene(tol=1e-12, max_iter=5000),
        tmp_path / "in",
        out=tmp_path / "tasks",
        client=client,
        classes=CLASSES,
        init=tmp_path / "bds.npz",
    )
    assert abs(loose.n_iter_ + result.model.n_iter_ - full.n_iter_) <= 1
    assert_same_posteriors(result, full)


def bad_file_cases(frame: pd.DataFrame):
    unknown = frame.copy()
    unknown.loc[unknown.index[5], "label"] = 7
    nulls = frame.astype({"worker": "float64"})
    nulls.loc[nulls.index[[2, 9]], "worker"] = np.nan
    return {
        "unknown label": (unknown, "1 label(s) are not among the declared classes [0, 1, 2]: [7]"),
        "nulls": (nulls, "column 'worker' has 2 missing value(s)"),
        "missing column": (frame.drop(columns="label"), "column 'label' is missing"),
        "corrupt": (None, "is not a readable Parquet file"),
    }


@pytest.mark.parametrize("case", ["unknown label", "nulls", "missing column", "corrupt"])
def test_bad_partition_is_named_and_leaves_no_output(case, client, data, tmp_path):
    paths = write_parts(data.labels, tmp_path / "in")
    frame, message = bad_file_cases(pd.read_parquet(paths[1]))[case]
    if frame is None:
        paths[1].write_bytes(paths[1].read_bytes()[:60] + b"garbage")
    else:
        frame.to_parquet(paths[1], index=False)
    out = tmp_path / "tasks"
    with pytest.raises(ValueError, match="file .*labels-1.parquet") as raised:
        fit_distributed(DawidSkene(), tmp_path / "in", out=out, client=client, classes=CLASSES)
    assert message in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_bad_dask_partition_is_named(client, data, tmp_path):
    frame = data.labels.astype({"label": "float64"})
    frame.loc[frame.index[-3], "label"] = np.nan
    source = dd.from_pandas(frame, npartitions=3, sort=False)
    with pytest.raises(ValueError, match=r"partition 2: column 'label' has 1 missing value"):
        fit_distributed(DawidSkene(), source, out=tmp_path / "tasks", client=client)
    assert list(tmp_path.iterdir()) == []


def test_existing_outputs(client, data, tmp_path):
    write_parts(data.labels, tmp_path / "in")
    out = tmp_path / "tasks"
    for seed in (0, 1):  # a previous result directory is replaced
        fit_distributed(MajorityVote(random_state=seed), tmp_path / "in", out=out, client=client)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "tasks"]
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="is not a crowdbayes task-results directory"):
        fit_distributed(MajorityVote(), tmp_path / "in", out=other, client=client)
    assert (other / "notes.txt").read_text() == "keep me"


def test_unsupported_inputs(client, data, tmp_path):
    from crowdbayes import HierarchicalAnnotation

    with pytest.raises(TypeError, match="HierarchicalAnnotation has no sufficient-statistics"):
        fit_distributed(HierarchicalAnnotation(), tmp_path, out=tmp_path / "o", client=client)
    with pytest.raises(TypeError, match="for a pandas DataFrame call model.fit"):
        fit_distributed(DawidSkene(), data.labels, out=tmp_path / "o", client=client)
    with pytest.raises(FileNotFoundError, match="no Parquet files match"):
        fit_distributed(DawidSkene(), tmp_path / "*.parquet", out=tmp_path / "o", client=client)


# ---------------------------------------------------------------------------- command line


def test_cli_dask_backend_matches_memory_backend(client, data, tmp_path, capsys):
    from crowdbayes.cli import main

    write_parts(data.labels, tmp_path / "in")
    data.labels.to_parquet(tmp_path / "all.parquet", index=False)
    memory_out = tmp_path / "memory.parquet"
    assert (
        main(
            ["labels", "fit", str(tmp_path / "all.parquet"), "--model", "bayes-ds"]
            + ["--out", str(memory_out)]
        )
        == 0
    )
    capsys.readouterr()
    out, model_file = tmp_path / "dask-tasks", tmp_path / "bds.npz"
    code = main(
        ["labels", "fit", str(tmp_path / "in" / "*.parquet"), "--model", "bayes-ds"]
        + ["--backend", "dask", "--scheduler", client.scheduler.address, "--out", str(out)]
        + ["--workers-out", str(tmp_path / "workers.csv"), "--save-model", str(model_file)]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "iteration 1: objective" in captured.err
    n_iter = int(captured.out.split(" iterations,")[0].rsplit(" ", 1)[1])
    assert captured.err.count("iteration ") == n_iter  # one progress line per iteration
    assert "(dask, 3 partitions)" in captured.out
    assert f"{len(data.labels)} labels, 150 tasks, 12 workers" in captured.out
    expected = pd.read_parquet(memory_out)
    tasks = pd.read_parquet(out).reindex(expected.index)
    columns = ["p_0", "p_1", "p_2"]
    assert np.max(np.abs(tasks[columns].to_numpy() - expected[columns].to_numpy())) <= 1e-8
    assert len(pd.read_csv(tmp_path / "workers.csv")) == 12 * 3 * 3
    assert model_file.exists()


def test_false_grouped_promise_is_refused(client, data, tmp_path):
    write_parts(data.labels, tmp_path / "in")
    with pytest.raises(ValueError, match=r"have labels in more than one partition \(e.g. \["):
        fit_distributed(
            MajorityVote(), tmp_path / "in", out=tmp_path / "o", client=client, grouped=True
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


@pytest.mark.slow
def test_cli_dask_local_cluster_one_line_error(data, tmp_path, capsys):
    from crowdbayes.cli import main

    paths = write_parts(data.labels, tmp_path / "in", n_files=2)
    out = tmp_path / "tasks"
    args = ["labels", "fit", str(tmp_path / "in"), "--backend", "dask", "--out", str(out)]
    paths[0].write_bytes(b"not parquet at all")
    assert main([*args, "--model", "ds", "--dask-workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("crowdbayes: error: labels: file ")
    assert "labels-0.parquet is not a readable Parquet file" in err[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_disjoint_task_ranges_decide_when_the_exact_check_is_needed():
    from crowdbayes.distributed._partitions import disjoint_task_ranges

    assert disjoint_task_ranges([(10, 19), (0, 9), (20, 20)])
    assert not disjoint_task_ranges([(0, 10), (10, 19)])  # task 10 may be in both
    assert not disjoint_task_ranges([(0, 9), None])
    assert not disjoint_task_ranges([("a", "b"), (1, 2)])  # ids that do not sort


def _grouped_frame(seed: int, n_tasks: int = 400, per_task: int = 5, n_workers: int = 30):
    """Labels sorted by integer task id, ``per_task`` distinct workers per task, 3 classes."""
    rng = np.random.default_rng(seed)
    start = rng.integers(n_workers, size=n_tasks)
    workers = ((start[:, None] + np.arange(per_task)) % n_workers).ravel()
    return pd.DataFrame(
        {
            "task": np.repeat(np.arange(1000, 1000 + n_tasks), per_task),
            "worker": workers.astype(np.int32),
            "label": rng.integers(3, size=n_tasks * per_task).astype(np.int8),
        }
    )


@pytest.mark.parametrize("case", ["consecutive", "repeats, gold, text ids"])
def test_encoded_partition_is_compact_and_computes_like_a_label_block(case):
    """What a worker keeps between passes (int32 count-matrix indices, no float counts when
    every count is 1, consecutive task ids as a range) rebuilds a block whose statistics equal
    the plain compacted block's, bit for bit — with repeated task-worker pairs and gold too."""
    from crowdbayes.data.labels import LabelBlock
    from crowdbayes.distributed._partitions import (
        Columns,
        encode_partition,
        merge_vocabularies,
        partition_vocabulary,
    )

    frame, gold = _grouped_frame(3), None
    if case != "consecutive":
        frame = pd.concat([frame, frame.iloc[:7]]).sort_values("task", kind="stable")
        frame["task"] = "t" + frame["task"].astype(str)
        gold = pd.Series([0, 2], index=["t1003", "t1100"])
    columns = Columns()
    vocabulary = merge_vocabularies(
        [partition_vocabulary(frame, "p", columns, None)], pd.Index(CLASSES), gold
    )
    part = encode_partition(frame, "p", columns, vocabulary)
    codes, ids = pd.factorize(frame["task"], sort=False)
    gold_codes = None if gold is None else vocabulary.gold.reindex(ids).fillna(-1).to_numpy(int)
    plain = LabelBlock(
        codes,
        vocabulary.workers.get_indexer(frame["worker"]),
        vocabulary.classes.get_indexer(frame["label"]),
        n_tasks=len(ids),
        n_workers=vocabulary.n_workers,
        n_classes=len(CLASSES),
        gold_codes=gold_codes,
    ).compact()
    block = part.block
    assert list(part.task_ids) == list(ids)
    assert (part.task_range is not None) == (case == "consecutive")
    assert (part.data is None) == (case == "consecutive")
    assert part.indices.dtype == np.int32 and part.indptr.dtype == np.int32
    if case == "consecutive":  # int32 indices and row pointers, a byte of workers per task
        assert part.nbytes() == 4 * len(frame) + 4 * (len(ids) + 1) + len(ids)
    assert (block.count_matrix != plain.count_matrix).nnz == 0
    np.testing.assert_array_equal(block.workers_per_task, plain.workers_per_task)
    np.testing.assert_array_equal(block.column_totals, plain.column_totals)
    np.testing.assert_array_equal(block.gold_codes, plain.gold_codes)
    for model in (DawidSkene(), BayesianDawidSkene()):
        start = model.global_update(model.initial_stats(plain))
        for key, value in model.initial_stats(block).items():
            np.testing.assert_array_equal(value, model.initial_stats(plain)[key])
        ours, theirs = model.local_stats(block, start), model.local_stats(plain, start)
        assert ours.keys() == theirs.keys()
        for key in ours:
            np.testing.assert_array_equal(ours[key], theirs[key])


def test_vocabulary_pass_keeps_nothing_of_the_partition():
    """A partition's vocabulary (held on its worker until every partition's is gathered) keeps
    no view of the partition's rows: at a billion labels the views held every file in memory."""
    import gc
    import tracemalloc

    from crowdbayes.distributed._partitions import Columns, partition_vocabulary

    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        frame = _grouped_frame(1, n_tasks=200_000)  # 1M rows, 13 MB
        loaded = tracemalloc.get_traced_memory()[0] - baseline
        vocabulary = partition_vocabulary(frame, "p", Columns(), None)
        del frame
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert loaded > 10e6
    assert held < 1e6
    assert vocabulary[2] == 1_000_000 and len(vocabulary[3]) == 0


def test_grouped_files_are_encoded_where_they_lie_without_a_shuffle(client, tmp_path):
    """grouped=True on files of disjoint task ranges: no shuffle (each file is read and encoded
    in one task), so output partition i holds exactly the tasks of input file i — and the
    posteriors are the in-memory fit's."""
    frame = _grouped_frame(5, n_tasks=300)
    (tmp_path / "in").mkdir()
    bounds = [0, 500, 1100, 1500]
    for i in range(3):
        frame.iloc[bounds[i] : bounds[i + 1]].to_parquet(tmp_path / "in" / f"part-{i}.parquet")
    result = fit_distributed(
        DawidSkene(), tmp_path / "in", out=tmp_path / "out", client=client, grouped=True
    )
    for i in range(3):
        written = pd.read_parquet(tmp_path / "out" / f"part-{i:05d}.parquet")
        expected = pd.unique(frame["task"].iloc[bounds[i] : bounds[i + 1]])
        assert list(written.index) == list(expected)
    reference = DawidSkene().fit(frame)
    probas = result.read_tasks()[[f"p_{c}" for c in reference.classes_]]
    probas = probas.reindex(reference.probas_.index).to_numpy()
    assert np.max(np.abs(probas - reference.probas_.to_numpy())) <= 1e-8
