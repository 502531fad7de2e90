"""``crowdbayes rank next``: a small replay through the command line, and its refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowdbayes.active.rankings import SAMPLED_UNIFORM_SHARE
from crowdbayes.cli import main


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Recorded top-1 choices among 4 items (two features), their items, and the folder."""
    folder = tmp_path_factory.mktemp("rank_next")
    rng = np.random.default_rng(0)
    items = pd.DataFrame(
        {"item": [f"i{k}" for k in range(40)], "a": rng.normal(size=40), "b": rng.normal(size=40)}
    )
    utility = items[["a", "b"]].to_numpy() @ np.array([1.0, -1.0])
    rows = []
    for q in range(30):
        members = rng.choice(40, 4, replace=False)
        p = np.exp(utility[members])
        chosen = members[rng.choice(4, p=p / p.sum())]
        rows += [(f"q{q}", f"i{m}", 1 if m == chosen else None) for m in members]
    rankings = pd.DataFrame(rows, columns=["query", "item", "rank"])
    items.to_csv(folder / "items.csv", index=False)
    return rankings, folder


def next_command(seen, candidates, items, out, *extra):
    return [
        "rank", "next", str(seen), "--features", str(items), "--candidates", str(candidates),
        "--eta", "1", "--n", "3", "-o", str(out), "--force", "-q", "--no-progress", *extra,
    ]  # fmt: skip


def whole_list_command(rankings, folder, asked, out, tag):
    """``rank next`` (not quiet, with weights) on the ``asked`` queries with every recorded set,
    the asked ones included, as --candidates; and the candidates file."""
    seen, whole = folder / f"seen_{tag}.csv", folder / f"whole_{tag}.csv"
    rankings[rankings["query"].isin(asked)].assign(weight=1.0).to_csv(seen, index=False)
    rankings.drop(columns="rank").to_csv(whole, index=False)
    out = folder / f"next_{tag}.csv" if out is None else out
    command = next_command(seen, whole, folder / "items.csv", out, "--weight-column", "weight")
    command.remove("-q")
    return command, whole


def test_a_small_replay_through_the_command_line(recorded, capsys):
    """The documented loop: sampled sets with their weights, the answers appended with them,
    the next round fitted with --weight-column weight."""
    rankings, folder = recorded
    seen_ids = ["q0", "q1", "q2"]
    weights = dict.fromkeys(seen_ids, 1.0)  # the starting sets: no design chose them
    seen, candidates, out = folder / "seen.csv", folder / "candidates.csv", folder / "next.csv"
    shown = []
    for _ in range(3):
        observed = rankings[rankings["query"].isin(seen_ids)]
        observed.assign(weight=observed["query"].map(weights)).to_csv(seen, index=False)
        left = rankings[~rankings["query"].isin(seen_ids)]
        left.drop(columns="rank").to_csv(candidates, index=False)
        command = next_command(seen, candidates, folder / "items.csv", out, "--weight-column")
        assert main([*command, "weight"]) == 0, capsys.readouterr().err
        chosen = pd.read_csv(out)
        assert list(chosen.columns) == [
            "query", "item", "order", "score", "new_items", "weight", "rank"
        ]  # fmt: skip
        sets = chosen.drop_duplicates("query")
        n_left = len(left["query"].unique())
        bound = n_left / ((n_left - np.arange(3)) * SAMPLED_UNIFORM_SHARE)
        assert (sets["weight"] > 0).all() and (sets["weight"].to_numpy() <= bound + 1e-9).all()
        assert (chosen.groupby("query")["weight"].nunique() == 1).all()
        weights.update(zip(sets["query"], sets["weight"], strict=True))
        assert len(sets) == 3 and list(sets["order"]) == [1, 2, 3]
        assert set(sets["query"]) <= set(left["query"])  # only candidates, never a seen set
        assert (chosen.groupby("query").size() == 4).all()  # every member of each set
        # new_items: the members never shown before, nor by an earlier set of the batch
        covered = set(rankings[rankings["query"].isin(seen_ids)]["item"])
        for query, count in zip(sets["query"], sets["new_items"], strict=True):
            members = set(chosen[chosen["query"] == query]["item"])
            assert count == len(members - covered)
            covered |= members
        assert sets["new_items"].is_monotonic_decreasing and sets["new_items"].iloc[0] > 0
        shown.append(list(sets["query"]))
        seen_ids += list(sets["query"])  # the replay: reveal the recorded choices
    assert len(set(sum(shown, []))) == 9
    # the output is a rankings file once its rank column is filled in, weights and all
    filled = chosen.drop(columns="rank").merge(rankings, on=["query", "item"])
    filled.to_csv(folder / "filled.csv", index=False)
    for weighted in ([], ["--weight-column", "weight"]):
        status = main(
            ["rank", "fit", str(folder / "filled.csv"), "--features", str(folder / "items.csv"),
             "-o", str(folder / "fit.csv"), "--force", "-q", "--no-progress", *weighted]
        )  # fmt: skip
        assert status == 0, capsys.readouterr().err


def test_the_best_first_order_writes_no_weights(recorded):
    rankings, folder = recorded
    seen, candidates = folder / "seen_i.csv", folder / "candidates_i.csv"
    rankings[rankings["query"] < "q2"].to_csv(seen, index=False)
    rankings[rankings["query"] >= "q2"].to_csv(candidates, index=False)
    out = folder / "information.csv"
    command = next_command(seen, candidates, folder / "items.csv", out, "--strategy")
    assert main([*command, "information"]) == 0
    assert "weight" not in pd.read_csv(out)


def test_the_same_seed_gives_the_same_sets(recorded):
    rankings, folder = recorded
    seen, candidates = folder / "seen_s.csv", folder / "candidates_s.csv"
    rankings[rankings["query"] < "q2"].to_csv(seen, index=False)
    rankings[rankings["query"] >= "q2"].to_csv(candidates, index=False)
    outs = [folder / f"seeded_{k}.csv" for k in range(2)]
    for out in outs:
        assert main(next_command(seen, candidates, folder / "items.csv", out, "--seed", "5")) == 0
    pd.testing.assert_frame_equal(pd.read_csv(outs[0]), pd.read_csv(outs[1]))


def test_every_pair_of_the_fitted_items_without_candidates(recorded, capsys):
    rankings, folder = recorded
    seen = folder / "seen_p.csv"
    rankings[rankings["query"].isin(["q0", "q1"])].to_csv(seen, index=False)
    status = main(
        ["rank", "next", str(seen), "--features", str(folder / "items.csv"), "--eta", "1",
         "--n", "2", "--no-progress"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert status == 0, captured.err
    chosen = pd.read_csv(pd.io.common.StringIO(captured.out))
    assert len(chosen) == 4 and chosen["query"].str.contains("|", regex=False).all()
    assert "wrote 2 set(s) of 28 candidates" in captured.err  # 8 fitted items: 28 pairs


@pytest.mark.parametrize(
    "change, message",
    [
        (["--n", "0"], "--n"),
        (["--n", "-2"], "--n"),
        (["--draws", "0"], "--draws"),
        (["--confidence", "1.5"], "--confidence"),
        (["--model", "pl-map"], "point estimate"),
        (["--weight-column", "weight"], "no column 'weight' for the case weights"),
        (["--weight-column", "query"], "column 'query' is the query column"),
        (["--weight-column", "rank"], "column 'rank' is the rank column"),
        (["--candidates", "{empty}"], "has a header but no rows"),
        (["--candidates", "{unknown}"], "have no row in the feature table"),
        (["--candidates", "{single}"], "hold a single item"),
        (["--candidates", "{nocolumn}"], "column 'item' is missing"),
    ],
)
def test_bad_input_is_refused_in_one_line(recorded, change, message, capsys):
    rankings, folder = recorded
    seen, candidates = folder / "seen_r.csv", folder / "candidates_r.csv"
    rankings[rankings["query"].isin(["q0", "q1"])].to_csv(seen, index=False)
    rankings[~rankings["query"].isin(["q0", "q1"])].to_csv(candidates, index=False)
    files = {
        "empty": "query,item\n",
        "unknown": "query,item\ns,i0\ns,nowhere\n",
        "single": "query,item\ns,i0\nt,i1\nt,i2\n",
        "nocolumn": "query,thing\ns,i0\ns,i1\n",
    }
    for name, text in files.items():
        (folder / f"{name}.csv").write_text(text)
    change = [w.format(**{k: folder / f"{k}.csv" for k in files}) for w in change]
    command = next_command(seen, candidates, folder / "items.csv", folder / "refused.csv")
    for flag in ("--n", "--candidates"):  # replaced by the change where it names them
        if flag in change:
            at = command.index(flag)
            del command[at : at + 2]
    if "pl-map" in change:
        del command[command.index("--eta") : command.index("--eta") + 2]
    status = main([*command, *change])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and message in err[0] and err[0].startswith("crowdbayes: error:")
    assert not (folder / "refused.csv").exists()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--model", "pl-map"], "PlackettLuceMAP does not take case weights"),
        (["--pairs-input"], "--weight-column reads a query,item,rank table"),
    ],
)
def test_weights_a_fit_cannot_use_are_refused(recorded, extra, message, capsys):
    rankings, folder = recorded
    weighted = folder / "weighted.csv"
    rankings.assign(weight=2.0).to_csv(weighted, index=False)
    status = main(
        ["rank", "fit", str(weighted), "--features", str(folder / "items.csv"), "--weight-column",
         "weight", "-o", str(folder / "unweighted.csv"), "--force", "-q", "--no-progress", *extra]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and message in err[0]
    assert not (folder / "unweighted.csv").exists()


def test_sampled_sets_for_a_model_without_case_weights_are_refused(recorded, capsys):
    rankings, folder = recorded
    seen = folder / "seen_g.csv"
    rankings[rankings["query"].isin(["q0", "q1"])].to_csv(seen, index=False)
    status = main(
        ["rank", "next", str(seen), "--model", "pl-gibbs", "--strategy", "sampled", "--n", "2",
         "-o", str(folder / "gibbs.csv"), "--force", "-q", "--no-progress"]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "--strategy sampled writes importance" in err[0]
    assert not (folder / "gibbs.csv").exists()


def _fit_table(path, folder, out, *extra):
    status = main(
        ["rank", "fit", str(path), "--features", str(folder / "items.csv"), "--eta", "1",
         "-o", str(out), "--force", "-q", "--no-progress", *extra]
    )  # fmt: skip
    assert status == 0
    return pd.read_csv(out)


def test_pool_size_turns_the_ratios_into_lure_weights_in_file_order(recorded):
    from crowdbayes.active.rankings import lure_weights

    rankings, folder = recorded
    rng = np.random.default_rng(4)
    queries = list(rng.permutation(rankings["query"].unique())[:20])  # not in id order
    table = rankings.set_index("query").loc[queries].reset_index()
    ratios = dict(zip(queries, rng.uniform(0.4, 3.0, len(queries)), strict=True))
    lure = dict(zip(queries, lure_weights(np.array([ratios[q] for q in queries]), 30),
                    strict=True))  # fmt: skip
    table = table.assign(ratio=table["query"].map(ratios), lure=table["query"].map(lure))
    path = folder / "drawn.csv"
    table.to_csv(path, index=False)
    by_pool = _fit_table(path, folder, folder / "pool.csv", "--weight-column", "ratio",
                         "--pool-size", "30")  # fmt: skip
    by_lure = _fit_table(path, folder, folder / "lure.csv", "--weight-column", "lure")
    pd.testing.assert_frame_equal(by_pool, by_lure)
    plain = _fit_table(path, folder, folder / "plain.csv")
    assert not np.allclose(by_pool.select_dtypes("number"), plain.select_dtypes("number"))
    # the whole list drawn: every weight 1, the unweighted fit
    every = _fit_table(path, folder, folder / "every.csv", "--weight-column", "ratio",
                       "--pool-size", "20")  # fmt: skip
    pd.testing.assert_frame_equal(every, plain)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--pool-size", "40"], "give --weight-column too"),
        (["--weight-column", "weight", "--pool-size", "10"], "smaller than the 30 queries"),
        (["--weight-column", "weight", "--pool-size", "0"], "--pool-size"),
    ],
)
def test_bad_pool_sizes_are_refused(recorded, extra, message, capsys):
    rankings, folder = recorded
    weighted = folder / "weighted_pool.csv"
    rankings.assign(weight=1.5).to_csv(weighted, index=False)
    status = main(
        ["rank", "fit", str(weighted), "--features", str(folder / "items.csv"),
         "-o", str(folder / "pool_refused.csv"), "--force", "-q", "--no-progress", *extra]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and message in err[0]
    assert not (folder / "pool_refused.csv").exists()


def test_weights_are_refused_for_a_tool_export(tmp_path, capsys):
    import json

    ranked = {"ranker": {"ranked": ["x", "z", "y"], "other": ["w"]}}
    export = [
        {"id": t, "annotations": [{"completed_by": 7, "result": [
            {"from_name": "rank", "type": "ranker", "value": ranked}]}]}
        for t in (5, 6)
    ]  # fmt: skip
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    status = main(
        ["rank", "fit", str(path), "--model", "pl-mm", "--weight-column", "weight",
         "-o", str(tmp_path / "fit.csv"), "-q", "--no-progress"]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "not an export" in err[0]


def test_sets_already_asked_are_left_out_and_the_pool_must_add_up(recorded, capsys):
    """--candidates may be the whole list: the sets RANKINGS already holds are not drawn again
    (and said so); with --pool-size the asked and the left must make up the list."""
    rankings, folder = recorded
    asked = ["q0", "q1", "q2", "q3"]
    out = folder / "from_whole.csv"
    command, _ = whole_list_command(rankings, folder, asked, out, "w")
    assert main([*command, "--n", "5", "--pool-size", "30"]) == 0
    summary = capsys.readouterr().out  # the summary goes to stdout when -o names a file
    assert "left out 4 candidate set(s) RANKINGS has already asked" in summary
    assert not set(pd.read_csv(out)["query"]) & set(asked)
    status = main([*command, "--pool-size", "31"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and "RANKINGS holds 4 queries and --candidates 26 sets" in err[-1]


def test_a_whole_list_without_pool_size_is_told_its_size(recorded, capsys):
    """When --candidates holds every set RANKINGS asked, the summary names the list's size for
    --pool-size (the plain ratios weigh the sets unequally once most of a fixed list is asked);
    not when --pool-size is given, with --confidence (sets left out as decided break LURE), for
    a strategy that writes no weights, nor when the candidates leave out some asked set."""
    rankings, folder = recorded
    command, whole = whole_list_command(rankings, folder, ["q0", "q1", "q2", "q3"], None, "h")
    assert main(command) == 0
    assert "one list of 30 sets; fit with --weight-column weight --pool-size 30" in (
        capsys.readouterr().out
    )
    for extra in (["--pool-size", "30"], ["--confidence", "0.99"], ["--strategy", "power"]):
        assert main([*command, *extra]) == 0
        assert "holds every set RANKINGS asked" not in capsys.readouterr().out
    partial = folder / "partial_h.csv"
    rankings[rankings["query"] != "q0"].drop(columns="rank").to_csv(partial, index=False)
    command[command.index(str(whole))] = str(partial)
    assert main(command) == 0
    assert "holds every set RANKINGS asked" not in capsys.readouterr().out


def test_the_documented_uniform_share_is_the_default(capsys):
    """The help and the docs state the sampled draws' uniform share as a number: pin it."""
    with pytest.raises(SystemExit):
        main(["rank", "next", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    share = f"{SAMPLED_UNIFORM_SHARE:g}"
    assert f"mixed with a uniform share of {share}," in help_text
    docs = (Path(__file__).parents[2] / "docs" / "active.md").read_text(encoding="utf-8")
    proposal = f"q_i = {1 - SAMPLED_UNIFORM_SHARE:g} · Î_i / Σ_j Î_j + {share} / N"
    assert proposal in " ".join(docs.split())
