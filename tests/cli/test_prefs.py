"""``crowdbayes prefs fit`` / ``prefs predict``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes.cli import main
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
    code = run("prefs", "fit", paths["comparisons"], "--items", paths["items"], "--model", model,
               "--save", saved, "--out", utilities, *extra)  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "comparisons of 25 items by 6 workers" in printed and "top items:" in printed
    assert list(pd.read_csv(utilities).columns) == ["item", "mean", "sd"]
    code = run("prefs", "predict", saved, "--pairs", paths["pairs"], "--items", paths["new"],
               "--out", out)  # fmt: skip
    assert code == 0
    assert "pools all workers: column 'worker' of PAIRS is ignored" in capsys.readouterr().err
    result = pd.read_csv(out)
    assert list(result.columns) == ["left", "right", "worker", "p_left"]
    assert result["p_left"].between(0, 1).all()


def test_crowdgppl_personal_and_consensus(files, capsys):
    tmp, paths = files
    saved, out = tmp / "crowd.npz", tmp / "p.csv"
    code = run("prefs", "fit", paths["comparisons"], "--items", paths["items"], "--model",
               "crowdgppl", "--components", "2", "--inducing", "25", "--max-iter", "60",
               "--save", saved)  # fmt: skip
    assert code == 0
    assert "CrowdGPPL" in capsys.readouterr().out
    code = run("prefs", "predict", saved, "--pairs", paths["pairs"], "--items", paths["new"],
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
    assert run("prefs", "predict", saved, "--pairs", tmp / "pairs2.csv", "--out", out) == 0
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
        "prefs", "fit", tmp / "bad.csv", "--items", paths["items"], "--save", saved
    )
    assert not saved.exists()
    assert "--workers applies to crowdgppl, not gppl" in error(
        "prefs", "fit", paths["comparisons"], "--items", paths["items"], "--workers",
        paths["items"], "--save", saved,
    )  # fmt: skip
    assert "--lengthscale must be" in error(
        "prefs", "fit", paths["comparisons"], "--items", paths["items"], "--lengthscale", "x",
        "--save", saved,
    )  # fmt: skip
    assert run("prefs", "fit", paths["comparisons"], "--items", paths["items"], "--model",
               "gppl-vi", "--save", saved) == 0  # fmt: skip
    capsys.readouterr()
    assert "item id(s) were not seen in fit" in error(
        "prefs", "predict", saved, "--pairs", paths["pairs"], "--out", out
    )
    pd.DataFrame({"left": ["i0"], "other": ["i1"]}).to_csv(tmp / "nocol.csv", index=False)
    assert "pairs: column 'right' is missing" in error(
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
    fitted = ["prefs", "fit", paths["comparisons"], "--items", paths["items"]]
    assert run(*fitted, "--model", "dpm-gp", "--save", model, "--out", tmp / "u.csv") == 0
    assert "communities:" in capsys.readouterr().out
    utilities = pd.read_csv(tmp / "u.csv")
    assert {"item", "mean_0", "sd_0"} <= set(utilities.columns)
    pairs = pd.read_csv(paths["pairs"]).iloc[:2]
    pairs.to_csv(tmp / "seen.csv", index=False)
    assert run("prefs", "predict", model, "--pairs", tmp / "seen.csv", "--out", out) == 0
    assert pd.read_csv(out)["p_left"].between(0, 1).all()
    assert run("prefs", "communities", model, "--out", table) == 0
    workers = pd.read_csv(table)
    assert len(workers) == 6 and {"community", "size", "confidence"} <= set(workers.columns)
    assert run("prefs", "communities", tmp / "nothing.npz", "--out", table) == 2
