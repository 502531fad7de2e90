"""Battles counted on a real LocalCluster (2 worker processes on loopback): the same counts and
the same board as in memory, from Parquet files; bad input refused with the in-memory message,
naming the file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from crowdbayes.data.battles import ONE_HOT, Battles  # noqa: E402
from crowdbayes.distributed import CountedBattles, count_battles  # noqa: E402
from crowdbayes.distributed._battles import in_partition  # noqa: E402
from crowdbayes.models.comparisons import Leaderboard, simulate_battles  # noqa: E402
from crowdbayes.models.comparisons._leaderboard_judges import JudgeRows  # noqa: E402

COVARIATES = ["style_0", "style_1"]


@pytest.fixture(scope="module")
def frame():
    sim = simulate_battles(
        25, 6000, popularity=1.0, coef=(0.3, -0.2), tie_strength=0.26, random_state=3
    )
    battles = sim.battles
    rng = np.random.default_rng(4)
    battles["category"] = rng.choice(["coding", "math", "writing"], size=len(battles))
    # rounded covariates: repeated rows, so counting merges rows that carry covariates
    battles[COVARIATES] = battles[COVARIATES].round(1)
    return battles


def write_parts(frame: pd.DataFrame, directory, n_files: int = 3, seed: int = 0) -> pd.DataFrame:
    """Rows dealt at random over ``n_files`` Parquet files; the rows in file order (what the
    in-memory path reads)."""
    directory.mkdir(parents=True, exist_ok=True)
    which = np.random.default_rng(seed).integers(n_files, size=len(frame))
    for i in range(n_files):
        frame[which == i].to_parquet(directory / f"part-{i}.parquet", index=False)
    return pd.concat([frame[which == i] for i in range(n_files)], ignore_index=True)


def sorted_rows(counts) -> pd.DataFrame:
    table = pd.DataFrame(counts.X).add_prefix("x")
    table = table.assign(a=counts.a, b=counts.b, outcome=counts.outcome, count=counts.count)
    return table.sort_values(list(table.columns)).reset_index(drop=True)


def test_counts_and_board_equal_in_memory_exactly(client, frame, tmp_path):
    rows = write_parts(frame[["model_a", "model_b", "winner"]], tmp_path / "in")
    counted = count_battles(tmp_path / "in", client=client)
    memory = Battles(rows)
    assert isinstance(counted, CountedBattles) and counted.n_partitions == 3
    assert counted.model_ids.equals(memory.model_ids)
    assert (counted.n_battles, counted.n_ties) == (memory.n_battles, memory.n_ties)
    ours, theirs = counted.counts(), memory.counts()
    for name in ("a", "b", "outcome", "count"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))
    for tie_model in ("half", "davidson"):
        board = Leaderboard(tie_model=tie_model, random_state=0).fit(counted).board_
        expected = Leaderboard(tie_model=tie_model, random_state=0).fit(memory).board_
        pd.testing.assert_frame_equal(board, expected, check_exact=True)


def test_covariates_and_categories_as_in_memory(client, frame, tmp_path):
    rows = write_parts(frame, tmp_path / "in", n_files=4, seed=1)
    kwargs = {"covariates": COVARIATES, "category": "category"}
    for standardize in (False, True):
        counted = count_battles(tmp_path / "in", client=client, standardize=standardize, **kwargs)
        memory = Battles(rows, standardize=standardize, **kwargs)
        assert counted.counts().n_rows < counted.n_battles  # rows were merged
        ours, theirs = sorted_rows(counted.counts()), sorted_rows(memory.counts())
        # standardised, the mean and sd are summed in another order: equal to rounding
        pd.testing.assert_frame_equal(ours, theirs, check_exact=not standardize, rtol=1e-12)
        np.testing.assert_allclose(counted.covariate_mean, memory.covariate_mean, rtol=1e-12)
        np.testing.assert_allclose(counted.covariate_scale, memory.covariate_scale, rtol=1e-12)
        assert list(counted.categories) == list(memory.categories)
        for category in memory.categories:
            ours, theirs = counted.subset(category), memory.subset(category)
            assert ours.model_ids.equals(theirs.model_ids)
            pd.testing.assert_frame_equal(
                sorted_rows(ours.counts()), sorted_rows(theirs.counts()), rtol=1e-12
            )
    board = Leaderboard(random_state=0).fit(counted)
    expected = Leaderboard(random_state=0).fit(memory)
    np.testing.assert_allclose(board.board_["score"], expected.board_["score"], atol=1e-10)
    np.testing.assert_allclose(board.style_["coef"], expected.style_["coef"], atol=1e-10)


def test_one_hot_winners_and_a_dask_dataframe(client, frame, tmp_path):
    one_hot = frame[["model_a", "model_b"]].copy()
    for column, value in zip(ONE_HOT, ("model_a", "model_b", "tie"), strict=True):
        one_hot[column] = (frame["winner"] == value).astype(int)
    rows = write_parts(one_hot, tmp_path / "in", n_files=2)
    from_files = count_battles(tmp_path / "in", client=client)
    from_frame = count_battles(dd.from_pandas(rows, npartitions=3), client=client)
    memory = Battles(rows).counts()
    for counted in (from_files, from_frame):
        np.testing.assert_array_equal(counted.counts().count, memory.count)
        np.testing.assert_array_equal(counted.counts().outcome, memory.outcome)


def test_judges_counted_as_in_memory(client, frame, tmp_path):
    judged = frame[["model_a", "model_b", "winner"]].assign(
        judge=np.random.default_rng(5).choice([f"judge-{j}" for j in range(6)], len(frame))
    )
    rows = write_parts(judged, tmp_path / "in")
    counted = count_battles(tmp_path / "in", client=client, judge="judge")
    memory = Battles(rows, judge="judge")
    assert list(counted.judge_ids) == list(memory.judge_ids)
    expected = JudgeRows.of(
        memory.judge_ids, memory.judge_codes, memory.a, memory.b, memory.outcome, memory.n_models
    )
    found = JudgeRows.of(
        counted.judge_ids,
        *counted.judge_battles()[:4],
        counted.n_models,
        counted.judge_battles()[4],
    )
    np.testing.assert_array_equal(found.key, expected.key)
    np.testing.assert_array_equal(found.count, expected.count)
    board = Leaderboard(random_state=0).fit(counted)
    reference = Leaderboard(random_state=0).fit(memory)
    pd.testing.assert_frame_equal(board.board_, reference.board_, check_exact=True)
    pd.testing.assert_frame_equal(board.judges_, reference.judges_, check_exact=True)


def test_bad_winner_values_refused_with_the_in_memory_message(client, frame, tmp_path):
    write_parts(frame[["model_a", "model_b", "winner"]], tmp_path / "in", n_files=2)
    bad = frame[["model_a", "model_b", "winner"]].iloc[:50].copy()
    bad.loc[bad.index[[7, 30]], "winner"] = ["model_c", "draw"]
    path = tmp_path / "in" / "part-9.parquet"
    bad.to_parquet(path, index=False)
    with pytest.raises(ValueError) as memory:
        Battles(path)
    assert "winner value(s)" in str(memory.value)
    expected = in_partition(str(memory.value), f"file {path}")
    with pytest.raises(ValueError) as counted:
        count_battles(tmp_path / "in", client=client)
    assert str(counted.value) == expected
    assert "\n" not in expected and f"file {path}: 2 winner value(s)" in expected


def test_per_battle_arrays_and_missing_files_refused(client, frame, tmp_path):
    write_parts(frame[["model_a", "model_b", "winner"]], tmp_path / "in", n_files=2)
    counted = count_battles(tmp_path / "in", client=client)
    with pytest.raises(ValueError, match="keep only their counts"):
        counted.X  # noqa: B018
    with pytest.raises(FileNotFoundError, match="^battles: no Parquet files match"):
        count_battles(tmp_path / "in" / "*.pq", client=client)
    empty = tmp_path / "in" / "part-8.parquet"
    frame[["model_a", "model_b", "winner"]].iloc[:0].to_parquet(empty, index=False)
    assert count_battles(tmp_path / "in", client=client).n_battles == len(frame)  # skipped
    frame[["model_a", "model_b"]].to_parquet(tmp_path / "in" / "part-9.parquet", index=False)
    with pytest.raises(ValueError, match=r"^battles: file \S+part-9.parquet: .*'winner'"):
        count_battles(tmp_path / "in", client=client)


def test_command_line_backend_dask(client, frame, tmp_path, capsys):
    from crowdbayes.cli import main

    rows = write_parts(frame[["model_a", "model_b", "winner"]], tmp_path / "in")
    out = tmp_path / "board.csv"
    scheduler = client.scheduler.address
    args = ["leaderboard", "fit", str(tmp_path / "in"), "-o", str(out), "--tie-model", "half"]
    assert main([*args, "--backend", "dask", "--scheduler", scheduler, "--seed", "3"]) == 0
    assert "counted on dask: 6,000 battles in 3 partition(s)" in capsys.readouterr().out
    rows.to_csv(tmp_path / "battles.csv", index=False)
    memory_out = tmp_path / "memory.csv"
    args[2], args[4] = str(tmp_path / "battles.csv"), str(memory_out)
    assert main([*args, "--seed", "3"]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(out), pd.read_csv(memory_out))
    csv = ["leaderboard", "fit", str(tmp_path / "battles.csv"), "--backend", "dask"]
    assert main([*csv, "--scheduler", scheduler]) == 2
    assert "is not a readable Parquet file" in capsys.readouterr().err
    assert main([*args, "--force", "--scheduler", scheduler]) == 2
    assert "--scheduler needs --backend dask" in capsys.readouterr().err
