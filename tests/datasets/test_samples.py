"""The bundled samples of every kind of judgment, ``crowdbayes datasets list`` and ``copy``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes import Comparisons, Labels, Links, Rankings
from crowdbayes.cli import main
from crowdbayes.cli.datasets import SAMPLE_NAMES
from crowdbayes.data import Values
from crowdbayes.datasets import SAMPLES, copy_sample, list_all, load_labels, sample_path
from crowdbayes.datasets.catalogue import SHARED_SETS
from crowdbayes.datasets.samples import simulate_sample, write_samples

KINDS = {"labels", "grades", "numbers", "rankings", "comparisons", "links"}


@pytest.fixture
def without_data(monkeypatch):
    monkeypatch.delenv("CROWDBAYES_DATA", raising=False)


def test_a_sample_of_every_kind():
    assert {s.kind for s in SAMPLES.values()} == KINDS
    assert SAMPLE_NAMES == tuple(SAMPLES)  # the parser's copy of the names


@pytest.mark.parametrize("name", [n for n in SAMPLES if n != "rte"])
def test_bundled_files_are_what_the_generator_writes(name, tmp_path):
    write_samples(tmp_path)
    for file in SAMPLES[name].files:
        made = pd.read_csv(tmp_path / name / file, dtype=str, keep_default_na=False)
        bundled = pd.read_csv(sample_path(name, file), dtype=str, keep_default_na=False)
        pd.testing.assert_frame_equal(made, bundled)
    assert "simulated: yes" in (sample_path(name).parent / "SOURCE.txt").read_text()


def test_samples_are_valid_containers():
    grades = load_labels("grades")
    assert grades.to_labels(ordered=True).n_tasks == 60
    assert Labels(sample_path("rte")).n_tasks == 800
    values = Values(sample_path("numbers"))
    assert values.n_tasks == 50
    items = pd.read_csv(sample_path("rankings", "items.csv")).set_index("item")
    assert Rankings(sample_path("rankings"), items=items).n_queries == 80
    items = pd.read_csv(sample_path("comparisons", "items.csv")).set_index("item")
    assert len(Comparisons(sample_path("comparisons"), items=items).to_frame()) == 320
    assert Links(sample_path("links")).n_workers == 10


def test_simulated_samples_hold_what_the_docstring_says():
    """Rankings: rank 1 and 2 given in each query of 4; comparisons: the two flipping workers
    agree with the utility order far less often than the others; links: workers right ~90%."""
    rankings = simulate_sample("rankings")["rankings.csv"]
    ranks = rankings.groupby("query")["rank"].apply(lambda r: sorted(r))
    assert all(r == ["", "", "1", "2"] for r in ranks)
    tables = simulate_sample("comparisons")
    items = tables["items.csv"].set_index("item")
    utility = np.sin(items["x1"]) + items["x2"] / 2
    pairs = tables["comparisons.csv"]
    loser = pairs["left"].where(pairs["label"] == pairs["right"], pairs["right"])
    agrees = (utility[pairs["label"]].to_numpy() > utility[loser].to_numpy()).astype(float)
    by_worker = pd.Series(agrees).groupby(pairs["worker"].to_numpy()).mean()
    assert by_worker[["w0", "w1"]].max() < 0.45 < 0.75 < by_worker.drop(["w0", "w1"]).min()
    links = simulate_sample("links")
    truth = links["truth.csv"].set_index("item")["cluster"]
    table = links["links.csv"]
    same = truth[table["left"]].to_numpy() == truth[table["right"]].to_numpy()
    assert 0.85 < np.mean(same == (table["label"] == 1)) < 0.95


def test_list_all_without_data_shows_every_kind(without_data):
    table = list_all()
    assert set(table["kind"]) == KINDS
    assert table["bundled"].all()
    assert table["name"].tolist() == list(SAMPLES)


def test_list_all_with_data_adds_every_shared_set(data_root, monkeypatch):
    monkeypatch.setenv("CROWDBAYES_DATA", str(data_root))
    table = list_all().set_index("name")
    for shared in SHARED_SETS:
        assert table.loc[shared.name, "kind"] == shared.kind
    assert {"car_choice", "ukpconvarg1", "semicrowd_mnist", "dog", "grades"} <= set(table.index)
    assert {"rankings", "comparisons", "links", "images"} <= set(table.loc[~table.bundled, "kind"])


def test_shared_set_sizes_match_the_loaders(data_root, monkeypatch):
    from crowdbayes.datasets import load_car_choice, load_semicrowd_mnist

    monkeypatch.setenv("CROWDBAYES_DATA", str(data_root))
    cars = load_car_choice()
    assert (cars.rankings["query"].nunique(), cars.items.shape[1]) == (4654, 17)
    crowd = load_semicrowd_mnist()
    assert (len(crowd.links), len(crowd.digits), crowd.links["worker"].nunique()) == (
        57330,
        2759,
        48,
    )


def test_cli_list_names_every_sample(without_data, capsys):
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    for name in SAMPLES:
        assert f"\n{name} " in out
    assert "set CROWDBAYES_DATA for the shared sets" in out


def test_copy_writes_and_refuses_to_overwrite(tmp_path, capsys):
    assert main(["datasets", "copy", "comparisons", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "comparisons.csv",
        "comparisons_items.csv",
    ]
    assert "try: crowdbayes prefs fit comparisons.csv" in capsys.readouterr().out
    (tmp_path / "comparisons.csv").write_text("mine")
    assert main(["datasets", "copy", "comparisons", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already there; pass --force" in err
    assert (tmp_path / "comparisons.csv").read_text() == "mine"
    assert main(["datasets", "copy", "comparisons", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "comparisons.csv").read_bytes() == sample_path("comparisons").read_bytes()


def test_copy_refuses_a_missing_folder_and_an_unknown_sample(tmp_path):
    with pytest.raises(ValueError, match="is not a directory"):
        copy_sample("links", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="no bundled sample named 'dogs'"):
        copy_sample("dogs", tmp_path)
    with pytest.raises(ValueError, match="has no file 'gold.csv'"):
        sample_path("links", "gold.csv")
