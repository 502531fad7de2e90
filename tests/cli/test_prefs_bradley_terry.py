"""``crowdbayes prefs fit --model bt|crowd-bt``: Bradley–Terry scores without item features."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes import load
from crowdbayes.cli import main
from crowdbayes.models.comparisons import CrowdBT, simulate_crowd_comparisons


def run(*args) -> int:
    return main([str(a) for a in args])


@pytest.fixture
def comparisons(tmp_path):
    reliability = np.array([0.95, 0.95, 0.95, 0.0])
    sim = simulate_crowd_comparisons(12, 4, 80, reliability=reliability, tie_strength=0.3,
                                     random_state=0)  # fmt: skip
    path = tmp_path / "comparisons.csv"
    sim.comparisons.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("model", ["bt", "crowd-bt"])
def test_fit_save_predict_without_item_features(tmp_path, comparisons, capsys, model):
    saved, scores, out = tmp_path / "m.npz", tmp_path / "s.csv", tmp_path / "p.csv"
    fit = ["prefs", "fit", comparisons, "--model", model, "--save-model", saved]
    assert run(*fit, "--out", scores) == 0
    printed = capsys.readouterr().out
    assert "comparisons of 12 items by 4 workers" in printed and "top items:" in printed
    table = pd.read_csv(scores)
    assert list(table.columns) == ["item", "mean", "sd", "lower", "upper"] and len(table) == 12
    fitted = load(saved)
    pd.DataFrame({"left": ["i0", "i1"], "right": ["i2", "i3"]}).to_csv(tmp_path / "pairs.csv",
                                                                      index=False)  # fmt: skip
    assert run("prefs", "predict", saved, "--pairs", tmp_path / "pairs.csv", "--out", out) == 0
    p = pd.read_csv(out)["p_left"].to_numpy()
    np.testing.assert_allclose(p, fitted.predict_proba(["i0", "i1"], ["i2", "i3"]).to_numpy())
    if model == "crowd-bt":
        assert isinstance(fitted, CrowdBT)
        assert fitted.reliability_["mean"].idxmin() == "w3"


def test_options_and_errors(tmp_path, comparisons, capsys):
    saved = tmp_path / "m.npz"

    def error(*args) -> str:
        assert run(*args) == 2
        return capsys.readouterr().err

    assert "cannot take ties" in error(
        "prefs", "fit", comparisons, "--model", "bt", "--tie-model", "none", "--save-model", saved
    )
    assert "--model gppl needs --features FILE (the items' features)" in error(
        "prefs", "fit", comparisons, "--save-model", saved
    )
    assert "--noise applies to crowd-bt, not bt" in error(
        "prefs", "fit", comparisons, "--model", "bt", "--noise", "random", "--save-model", saved
    )
    assert not saved.exists()
    assert run("prefs", "fit", comparisons, "--model", "crowd-bt", "--noise", "random",
               "--max-iter", "50", "--save-model", saved) == 0  # fmt: skip
    assert load(saved).noise == "random"
    out = tmp_path / "next.csv"
    assert run("prefs", "next", comparisons, "--model", "crowd-bt", "--n", "3", "--out", out) == 0
    questions = pd.read_csv(out)
    assert list(questions.columns) == ["left", "right", "score"] and len(questions) == 3
    assert "pools all workers and cannot say whom to ask" in error(
        "prefs", "next", comparisons, "--model", "bt", "--n", "3", "--available", comparisons,
        "--out", tmp_path / "other.csv",
    )  # fmt: skip
