"""``crowdbayes rank fit`` / ``rank predict``."""

from __future__ import annotations

import pandas as pd
import pytest

from crowdbayes.cli import main
from pl_simulate import simulate_tables


@pytest.fixture
def files(tmp_path):
    table, features, _ = simulate_tables(0, n_queries=200, set_size=4, n_ranked=2)
    rankings_path = tmp_path / "rankings.csv"
    table.to_csv(rankings_path, index=False)
    items_path = tmp_path / "items.csv"
    features.rename_axis("item").to_csv(items_path)
    pairs_path = tmp_path / "pairs.csv"
    pd.DataFrame({"left": [0, 1, 2], "right": [3, 4, 5]}).to_csv(pairs_path, index=False)
    return tmp_path, rankings_path, items_path, pairs_path


@pytest.mark.slow
def test_fit_save_predict(files, capsys):
    tmp, rankings, items, pairs = files
    model, scores, out = tmp / "m.npz", tmp / "scores.csv", tmp / "p.csv"
    code = main(
        ["rank", "fit", str(rankings), "--features", str(items), "--model", "pl-vi",
         "--method", "gaussian", "--save-model", str(model), "--out", str(scores), "--top-k", "5"]
    )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "PlackettLuceVI: 200 queries" in printed and "eta" in printed
    table = pd.read_csv(scores)
    assert table["top_k"].sum() == 5 and {"item", "position_mean", "p_top_k"} <= set(table)
    assert main(["rank", "predict", str(model), "--pairs", str(pairs), "--out", str(out)]) == 0
    result = pd.read_csv(out)
    assert list(result.columns) == ["left", "right", "p_left"]
    assert result["p_left"].between(0, 1).all()


@pytest.mark.parametrize("name", ["pl-mm", "pl-gibbs"])
def test_featureless_models(files, name):
    tmp, rankings, _, pairs = files
    model, out = tmp / f"{name}.npz", tmp / "p.csv"
    extra = ["--shape", "2", "--rate", "1"] + (["--samples", "50"] if name == "pl-gibbs" else [])
    fit = ["rank", "fit", str(rankings), "--model", name, "--save-model", str(model)]
    assert main([*fit, *extra]) == 0
    assert main(["rank", "predict", str(model), "--pairs", str(pairs), "--out", str(out)]) == 0
    assert len(pd.read_csv(out)) == 3


def test_errors_are_one_line_and_leave_no_output(files, capsys):
    tmp, rankings, items, _ = files
    scores, model = tmp / "scores.csv", tmp / "m.npz"
    assert main(["rank", "fit", str(rankings), "--out", str(scores)]) == 2
    assert "--model pl-vi needs --features FILE (the items' features)" in capsys.readouterr().err
    bad = tmp / "bad.csv"
    pd.read_csv(rankings).assign(rank=1).to_csv(bad, index=False)
    args = ["rank", "fit", str(bad), "--features", str(items), "--out", str(scores)]
    assert main([*args, "--save-model", str(model)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"crowdbayes: error: rankings ({bad}): ties in rank")
    assert err.count("\n") == 1
    assert not scores.exists() and not model.exists()
    assert main(["rank", "fit", str(rankings), "--features", str(items), "--eta", "-1"]) == 2
    assert "--eta must be a positive number or 'auto'" in capsys.readouterr().err


def test_pairs_input(tmp_path):
    pairs = pd.DataFrame({"left": ["a", "b", "c", "a"], "right": ["b", "c", "a", "c"]})
    pairs["label"] = ["a", "b", "a", "c"]
    path = tmp_path / "pairs.csv"
    pairs.to_csv(path, index=False)
    assert main(["rank", "fit", str(path), "--pairs-input", "--model", "pl-mm"]) == 0
