"""``crowdbayes prefs fit`` / ``prefs predict``."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from crowdbayes.cli import main
from crowdbayes.models.communities import CommunityPreferences
from crowdbayes.models.gp_preference import CrowdGPPL


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    n_items = 25
    X = rng.uniform(0, 3, (n_items, 2))
    utility = np.sin(X[:, 0]) + X[:, 1]
    ids = [f"i{k}" for k in range(n_items)]
    left = rng.integers(0, n_items, 400)
    right = rng.integers(0, n_items, 400)
    keep = left != right
    left, right = left[keep], right[keep]
    worker = rng.integers(0, 6, len(left))
    # workers 0-2 agree with the utility, 3-5 prefer the opposite
    sign = np.where(worker < 3, 1.0, -1.0)
    won = rng.random(len(left)) < 1 / (1 + np.exp(-3 * sign * (utility[left] - utility[right])))
    comparisons = pd.DataFrame(
        {
            "worker": [f"u{j}" for j in worker],
            "left": np.array(ids)[left],
            "right": np.array(ids)[right],
            "label": np.where(won, np.array(ids)[left], np.array(ids)[right]),
        }
    )
    paths = {name: tmp_path / f"{name}.csv" for name in ("comparisons", "items", "pairs", "new")}
    comparisons.to_csv(paths["comparisons"], index=False)
    items = pd.DataFrame(X, columns=["x0", "x1"]).assign(item=ids)
    items.to_csv(paths["items"], index=False)
    pd.DataFrame({"item": ["fresh"], "x0": [1.0], "x1": [2.9]}).to_csv(paths["new"], index=False)
    pd.DataFrame(
        {"left": ["i0", "i1", "fresh"], "right": ["i2", "i3", "i4"], "worker": ["u0", "u4", None]}
    ).to_csv(paths["pairs"], index=False)
    return tmp_path, paths


def run(*args: str) -> int:
    return main([str(a) for a in args])


@pytest.mark.parametrize("model", ["gppl", "gppl-vi", "ep"])
def test_fit_save_predict_pooled(files, capsys, model):
    tmp, paths = files
    saved, utilities, out = tmp / "m.npz", tmp / "u.csv", tmp / "p.csv"
    extra = (
        ["--inducing", "10", "--batch-size", "100", "--max-iter", "30"] if model == "gppl" else []
    )
    code = run("prefs", "fit", paths["comparisons"], "--features", paths["items"], "--model", model,
               "--save-model", saved, "--out", utilities, *extra)  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "comparisons of 25 items by 6 workers" in printed and "top items:" in printed
    assert list(pd.read_csv(utilities).columns) == ["item", "mean", "sd"]
    code = run("prefs", "predict", saved, "--pairs", paths["pairs"], "--features", paths["new"],
               "--out", out)  # fmt: skip
    assert code == 0
    assert "pools all workers: column 'worker' of PAIRS is ignored" in capsys.readouterr().err
    result = pd.read_csv(out)
    assert list(result.columns) == ["left", "right", "worker", "p_left"]
    assert result["p_left"].between(0, 1).all()


def test_crowdgppl_personal_and_consensus(files, capsys):
    tmp, paths = files
    saved, out = tmp / "crowd.npz", tmp / "p.csv"
    code = run("prefs", "fit", paths["comparisons"], "--features", paths["items"], "--model",
               "crowdgppl", "--components", "2", "--inducing", "25", "--max-iter", "60",
               "--save-model", saved)  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()  # no -o: the utilities on stdout, the summary on stderr
    assert "CrowdGPPL" in captured.err and "CrowdGPPL" not in captured.out
    assert len(pd.read_csv(io.StringIO(captured.out), index_col="item")) == 25
    code = run("prefs", "predict", saved, "--pairs", paths["pairs"], "--features", paths["new"],
               "--out", out)  # fmt: skip
    assert code == 0
    result = pd.read_csv(out)
    model = CrowdGPPL.load(saved)
    new = pd.read_csv(paths["new"]).set_index("item")
    personal = model.predict_proba(["i0", "i1"], ["i2", "i3"], workers=["u0", "u4"])
    consensus = model.predict_proba(["fresh"], ["i4"], items=new)
    np.testing.assert_allclose(result["p_left"].iloc[:2], personal.to_numpy())
    assert result["p_left"].iloc[2] == pytest.approx(consensus.iloc[0])
    # an unseen worker falls back to the consensus, with a warning on stderr
    pd.DataFrame({"left": ["i0"], "right": ["i2"], "worker": ["stranger"]}).to_csv(
        tmp / "pairs2.csv", index=False
    )
    assert run("prefs", "predict", saved, "--pairs", tmp / "pairs2.csv", "--out", out) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert run("prefs", "predict", saved, "--pairs", tmp / "pairs2.csv", "--out", out,
               "--force") == 0  # fmt: skip
    assert "not seen in fit" in capsys.readouterr().err
    assert pd.read_csv(out)["p_left"].iloc[0] == pytest.approx(
        model.predict_proba(["i0"], ["i2"]).iloc[0]
    )


def test_errors_are_one_line_and_leave_no_output(files, capsys):
    tmp, paths = files
    saved, out = tmp / "m.npz", tmp / "p.csv"

    def error(*args) -> str:
        assert run(*args) == 2
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("crowdbayes: error: ")]
        assert len(errors) == 1 and err.endswith(errors[0] + "\n")
        return errors[0]

    bad = pd.read_csv(paths["comparisons"])
    bad.loc[3, "label"] = "nonsense"
    bad.to_csv(tmp / "bad.csv", index=False)
    assert "neither the left item, the right item nor 'equal'" in error(
        "prefs", "fit", tmp / "bad.csv", "--features", paths["items"], "--save-model", saved
    )
    assert not saved.exists()
    assert "--worker-features applies to --model crowdgppl, not gppl" in error(
        "prefs", "fit", paths["comparisons"], "--features", paths["items"], "--worker-features",
        paths["items"], "--save-model", saved,
    )  # fmt: skip
    assert "--lengthscale must be" in error(
        "prefs", "fit", paths["comparisons"], "--features", paths["items"], "--lengthscale", "x",
        "--save-model", saved,
    )  # fmt: skip
    assert run("prefs", "fit", paths["comparisons"], "--features", paths["items"], "--model",
               "gppl-vi", "--save-model", saved) == 0  # fmt: skip
    capsys.readouterr()
    assert "item id(s) were not seen in fit" in error(
        "prefs", "predict", saved, "--pairs", paths["pairs"], "--out", out
    )
    pd.DataFrame({"left": ["i0"], "other": ["i1"]}).to_csv(tmp / "nocol.csv", index=False)
    assert f"pairs ({tmp / 'nocol.csv'}): column 'right' is missing" in error(
        "prefs", "predict", saved, "--pairs", tmp / "nocol.csv", "--out", out
    )
    assert not out.exists()
    (tmp / "junk.npz").write_text("not a model")
    assert "is not a crowdbayes model file" in error(
        "prefs", "predict", tmp / "junk.npz", "--pairs", paths["pairs"], "--out", out
    )


@pytest.mark.slow
def test_dpm_gp_fit_predict_and_communities(files, capsys):
    tmp, paths = files
    model, out, table = tmp / "dpm.npz", tmp / "p.csv", tmp / "communities.csv"
    fitted = ["prefs", "fit", paths["comparisons"], "--features", paths["items"]]
    assert run(*fitted, "--model", "dpm-gp", "--save-model", model, "--out", tmp / "u.csv") == 0
    assert "communities:" in capsys.readouterr().out
    utilities = pd.read_csv(tmp / "u.csv")
    assert {"item", "mean_0", "sd_0"} <= set(utilities.columns)
    pairs = pd.read_csv(paths["pairs"]).iloc[:2]
    pairs.to_csv(tmp / "seen.csv", index=False)
    assert run("prefs", "predict", model, "--pairs", tmp / "seen.csv", "--out", out) == 0
    assert pd.read_csv(out)["p_left"].between(0, 1).all()
    # a worker not seen in fit gets the new-member prediction, with a warning in CLI words
    stranger = pairs.assign(worker=[pairs["worker"].iloc[0], "stranger"])
    stranger.to_csv(tmp / "stranger.csv", index=False)
    assert run("prefs", "predict", model, "--pairs", tmp / "stranger.csv", "--out", out,
               "--force") == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "1 row(s) name worker(s) not seen in fit (['stranger'])" in err
    assert "worker=None" not in err
    fitted_model = CommunityPreferences.load(model)
    new_member = fitted_model.predict_proba(pairs["left"].iloc[1:], pairs["right"].iloc[1:])
    assert pd.read_csv(out)["p_left"].iloc[1] == pytest.approx(new_member.iloc[0])
    assert run("prefs", "communities", model, "--out", table) == 0
    workers = pd.read_csv(table)
    assert len(workers) == 6 and {"community", "size", "confidence"} <= set(workers.columns)
    assert run("prefs", "communities", tmp / "nothing.npz", "--out", table) == 2


# ---------------------------------------------------------------------- prefs next
def next_args(paths, out, *extra):
    return ["prefs", "next", paths["comparisons"], "--features", paths["items"], "--out", out,
            "--inducing", "10", "--max-iter", "40", *extra]  # fmt: skip


def test_next_writes_the_pairs_to_ask(files, capsys):
    tmp, paths = files
    out = tmp / "next.csv"
    assert run(*next_args(paths, out, "--n", "7")) == 0
    assert "wrote 7 question(s)" in capsys.readouterr().out
    asked = pd.read_csv(out)
    assert list(asked.columns) == ["left", "right", "score"]
    assert len(asked) == 7 and (asked["left"] != asked["right"]).all()
    # the default (mixed): half of them the best by information, half drawn
    best = tmp / "best.csv"
    assert run(*next_args(paths, best, "--n", "7", "--strategy", "information")) == 0
    best_first = pd.read_csv(best)
    assert np.all(np.diff(best_first["score"]) <= 0)
    pair = ["left", "right"]
    assert len(best_first.head(3).merge(asked, on=pair)) == 3
    # --strategy power draws them in proportion to their information
    drawn = tmp / "drawn.csv"
    assert run(*next_args(paths, drawn, "--n", "7", "--strategy", "power")) == 0
    assert len(pd.read_csv(drawn)) == 7
    # the same seed gives the same questions; they are what the model suggests
    again = tmp / "again.csv"
    assert run(*next_args(paths, again, "--n", "7")) == 0
    assert pd.read_csv(again).equals(asked)
    # candidates, a strategy and a confidence
    pd.DataFrame({"left": ["i0", "i1", "i2"], "right": ["i3", "i4", "i5"]}).to_csv(
        tmp / "cand.csv", index=False
    )
    assert run(*next_args(paths, out, "--n", "5", "--pairs", tmp / "cand.csv", "--strategy",
                          "uncertainty", "--confidence", "0.99", "--force")) == 0  # fmt: skip
    asked = pd.read_csv(out)
    assert len(asked) <= 3 and set(asked["left"]) <= {"i0", "i1", "i2"}
    # the answers, once labelled, are what prefs fit reads
    asked["label"] = asked["left"]
    asked.drop(columns="score").to_csv(tmp / "answers.csv", index=False)
    assert run("prefs", "fit", tmp / "answers.csv", "--features", paths["items"], "--model",
               "gppl-vi", "--save-model", tmp / "m.npz") == 0  # fmt: skip


def test_next_with_crowdgppl_says_whom_to_ask(files, capsys):
    tmp, paths = files
    out = tmp / "next.csv"
    pd.DataFrame({"worker": ["u1", "u4"]}).to_csv(tmp / "available.csv", index=False)
    code = run(*next_args(paths, out, "--n", "6", "--model", "crowdgppl", "--components", "2",
                          "--available", tmp / "available.csv"))  # fmt: skip
    assert code == 0
    asked = pd.read_csv(out)
    assert list(asked.columns) == ["left", "right", "worker", "score"]
    assert set(asked["worker"]) <= {"u1", "u4"} and len(asked) == 6


def test_next_errors(files, capsys):
    tmp, paths = files
    out = tmp / "next.csv"

    def error(*args) -> str:
        assert run(*args) == 2
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("crowdbayes: error: ")]
        assert len(errors) == 1 and err.endswith(errors[0] + "\n")
        assert not out.exists()
        return errors[0]

    assert "--n must be at least 1; got 0" in error(*next_args(paths, out, "--n", "0"))
    assert "--n must be a whole number; got 'two'" in error(*next_args(paths, out, "--n", "two"))
    assert "--confidence must lie between 0 and 1; got '1.5'" in error(
        *next_args(paths, out, "--n", "2", "--confidence", "1.5")
    )
    pd.DataFrame({"left": ["i0", "ghost"], "right": ["i1", "i2"]}).to_csv(
        tmp / "ghost.csv", index=False
    )
    assert "candidates: 1 item id(s) were not seen in fit: ['ghost']" in error(
        *next_args(paths, out, "--n", "2", "--pairs", tmp / "ghost.csv")
    )
    pd.DataFrame({"worker": ["u1", "nobody"]}).to_csv(tmp / "who.csv", index=False)
    assert f"available ({tmp / 'who.csv'}): 1 worker(s) have no comparisons in" in error(
        *next_args(paths, out, "--n", "2", "--model", "crowdgppl", "--available", tmp / "who.csv")
    )
    assert (
        "--available: --model gppl pools all workers and cannot say whom to ask; "
        "use --model crowdgppl"
    ) in error(*next_args(paths, out, "--n", "2", "--available", tmp / "who.csv"))
    assert "nothing left to ask: every candidate is decided at --confidence 0.5" in error(
        *next_args(paths, out, "--n", "2", "--confidence", "0.5")
    )
    assert (
        "--model dpm-gp cannot suggest questions; "
        "use --model gppl, crowdgppl, gppl-vi, gppl-laplace, ep, bt, crowd-bt"
    ) in error(
        "prefs", "next", paths["comparisons"], "--features", paths["items"], "--out", out, "--n",
        "2", "--model", "dpm-gp",
    )  # fmt: skip
