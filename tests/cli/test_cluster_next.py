"""``crowdbayes cluster next``: a small replay through the command line, and its refusals."""

from __future__ import annotations

import io
import itertools
import re

import numpy as np
import pandas as pd
import pytest

from crowdbayes.cli import main
from crowdbayes.metrics.clustering import normalized_mutual_info

N_CLUSTERS, PER_CLUSTER = 3, 8


def run(*args) -> int:
    return main([str(a) for a in args])


@pytest.fixture
def pool():
    """Every pair of 24 items in 3 clusters, answered once by a worker right 95% of the time."""
    rng = np.random.default_rng(0)
    truth = pd.Series(
        np.repeat(np.arange(N_CLUSTERS), PER_CLUSTER),
        index=[f"item{n}" for n in range(N_CLUSTERS * PER_CLUSTER)],
    )
    pairs = pd.DataFrame(list(itertools.combinations(truth.index, 2)), columns=["left", "right"])
    same = truth[pairs["left"]].to_numpy() == truth[pairs["right"]].to_numpy()
    right = rng.random(len(pairs)) < 0.95
    pairs["label"] = np.where(right, same, ~same).astype(int)
    pairs["worker"] = rng.integers(0, 3, len(pairs))
    return pairs, truth


def replay(pool, tmp_path, rounds: int = 5, batch: int = 12) -> float:
    """Start from 30 random links; each round choose the batch among the pairs not asked
    yet by `cluster next`, reveal their answers; the NMI of ``cluster fit`` at the end."""
    pairs, truth = pool
    rng = np.random.default_rng(1)
    asked = np.zeros(len(pairs), dtype=bool)
    asked[rng.choice(len(pairs), 30, replace=False)] = True
    links, rest = tmp_path / "links.csv", tmp_path / "rest.csv"
    items = tmp_path / "items.csv"
    truth.rename_axis("item").reset_index()[["item"]].to_csv(items, index=False)
    for round_ in range(rounds):
        pairs[asked].to_csv(links, index=False)
        pairs.loc[~asked, ["left", "right"]].to_csv(rest, index=False)
        chosen = by_next(links, rest, items, batch, round_)
        key = pairs["left"] + "|" + pairs["right"]
        hit = key.isin(chosen["left"] + "|" + chosen["right"])
        assert hit.sum() == batch and not (hit & asked).any()  # new pairs of the pool only
        asked |= hit.to_numpy()
    pairs[asked].to_csv(links, index=False)
    out = tmp_path / "clusters.csv"
    assert run("cluster", "fit", links, "--clusters", 4, "-o", out, "-q") == 0
    table = pd.read_csv(out).set_index("item")
    return normalized_mutual_info(truth[table.index].to_numpy(), table["cluster"].to_numpy())


def by_next(links, rest, items, batch, round_):
    out = links.with_name(f"next{round_}.csv")
    words = ["cluster", "next", links, "--n", batch, "--candidates", rest, "--items", items]
    words += ["--clusters", 4]
    assert run(*words, "--seed", round_, "-o", out, "-q") == 0
    table = pd.read_csv(out)
    assert list(table.columns) == ["left", "right", "score", "p_same", "unlinked"]
    assert np.all(np.diff(table["score"]) <= 1e-12) or (table["unlinked"] > 0).any()
    # --per-item 1, the cap rising to 2 when the pairs left admit no 12 disjoint ones
    assert pd.concat([table["left"], table["right"]]).value_counts().max() <= 2
    return table


def test_a_small_replay_through_the_command_line(pool, tmp_path):
    # with 90 of the 276 links the chosen pairs recover the clusters (random ones do too at
    # this size; the replay on real data is benchmarks/active/cluster_next_replay.py)
    assert replay(pool, tmp_path) >= 0.9


def test_the_same_seed_gives_the_same_pairs(pool, tmp_path, capsys):
    pairs, _ = pool
    links = tmp_path / "links.csv"
    pairs.iloc[::3].to_csv(links, index=False)
    outputs = []
    for _ in range(2):
        assert run("cluster", "next", links, "--n", 5, "--clusters", 4, "--seed", 7, "-q") == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and len(outputs[0].splitlines()) == 6


@pytest.mark.parametrize(
    ("extra", "candidates", "message"),
    [
        (["--n", "0"], None, "--n must be at least 1; got 0"),
        (["--n", "-2"], None, "--n must be at least 1"),
        (["--n", "2", "--per-item", "0"], None, "--per-item must be at least 1"),
        (["--n", "2", "--confidence", "0.3"], None, r"--confidence must lie in \(0.5, 1\)"),
        (["--n", "2", "--confidence", "0.5"], None, r"--confidence must lie in \(0.5, 1\)"),
        (["--n", "2", "--confidence", "1.5"], None, "--confidence"),
        (
            ["--n", "2"],
            "left,right\nitem1,nobody\n",
            r"1 item\(s\) unknown \(no link, no features, not in the items\): \['nobody'\]",
        ),
        (["--n", "2"], "left,right\nitem1,item1\n", "pair an item with itself"),
        (["--n", "2"], "left,other\nitem1,item2\n", "candidates: column 'right' is missing"),
    ],
)
def test_refusals_are_one_line(pool, tmp_path, capsys, extra, candidates, message):
    pairs, _ = pool
    links = tmp_path / "links.csv"
    pairs.iloc[::3].to_csv(links, index=False)
    words = ["cluster", "next", links, *extra, "--clusters", 4, "-q"]
    if candidates is not None:
        path = tmp_path / "candidates.csv"
        path.write_text(candidates)
        words += ["--candidates", path]
    assert run(*words) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert re.search(message, err), err


def test_a_deep_model_with_features_asks_about_unlinked_items_first(tmp_path, capsys):
    """bayes-scdc clusters every item with features; items with no link yet come first."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(3), 10)
    features = 4.0 * rng.standard_normal((3, 4))[truth] + 0.3 * rng.standard_normal((30, 4))
    np.save(tmp_path / "features.npy", features)
    pairs = np.array(list(itertools.combinations(range(20), 2)))[::4]  # items 20-29: no link
    links = pd.DataFrame({"worker": 0, "left": pairs[:, 0], "right": pairs[:, 1]})
    links["label"] = (truth[pairs[:, 0]] == truth[pairs[:, 1]]).astype(int)
    links.to_csv(tmp_path / "links.csv", index=False)
    words = ["cluster", "next", tmp_path / "links.csv", "--features", tmp_path / "features.npy"]
    words += ["--model", "bayes-scdc", "--epochs", 3, "--restarts", 1, "--clusters", 3]
    assert run(*words, "--n", 8, "--no-progress") == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(table) == 8 and table["unlinked"].tolist()[:5] == [2] * 5
    assert set(table.iloc[:5][["left", "right"]].to_numpy().ravel()) == set(range(20, 30))
