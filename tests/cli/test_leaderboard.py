"""``crowdbayes leaderboard fit|predict`` and ``report leaderboard`` (issue 44), end to end on
small simulated boards: the board and its summary, the daily update, category boards, style
control, predictions, the report, and every bad input refused with one line, exit 2 and nothing
written."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import crowdbayes
from crowdbayes.cli import main
from crowdbayes.data.battles import Battles
from crowdbayes.models.comparisons import Leaderboard, simulate_battles
from crowdbayes.models.comparisons._leaderboard_judges import simulate_judges

BOARD_COLUMNS = [
    "score",
    "lower",
    "upper",
    "rank",
    "rank_lower",
    "rank_upper",
    "p_rank1",
    "battles",
    "win_rate",
]


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Battles of 6 models (with a category and a pair of style columns), split in two days."""
    folder = tmp_path_factory.mktemp("battles")
    sim = simulate_battles(6, 1500, score_sd=0.8, random_state=3)
    rng = np.random.default_rng(4)
    table = sim.battles.assign(
        category=rng.choice(["code", "math"], len(sim.battles)),
        judge=rng.choice(["person-1", "person-2", "llm-judge"], len(sim.battles)),
        tokens_a=rng.integers(50, 500, len(sim.battles)),
        tokens_b=rng.integers(50, 500, len(sim.battles)),
    )
    paths = {"all": folder / "battles.csv", "day1": folder / "day1.csv"}
    table.to_csv(paths["all"], index=False)
    table.iloc[:900].to_csv(paths["day1"], index=False)
    paths["day2"] = folder / "day2.csv"
    table.iloc[900:].to_csv(paths["day2"], index=False)
    paths["onehot"] = folder / "onehot.csv"
    onehot = table[["model_a", "model_b"]].copy()
    for value in ("model_a", "model_b", "tie"):
        onehot[f"winner_{value}"] = (table["winner"] == value).astype(int)
    onehot.to_csv(paths["onehot"], index=False)
    paths["pairs"] = folder / "pairs.csv"
    pd.DataFrame(
        {"model_a": ["model-000", "model-002"], "model_b": ["model-001", "model-005"]}
    ).to_csv(paths["pairs"], index=False)
    return {k: str(v) for k, v in paths.items()}


def run(argv, capsys):
    status = main([*map(str, argv), "--no-progress"])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_fit_writes_the_board_and_says_what_it_found(files, tmp_path, capsys):
    out, saved = tmp_path / "board.csv", tmp_path / "board.npz"
    status, stdout, stderr = run(
        ["leaderboard", "fit", files["all"], "-o", out, "--save-model", saved], capsys
    )
    assert status == 0, stderr
    board = pd.read_csv(out, index_col="model")
    assert list(board.columns) == BOARD_COLUMNS and len(board) == 6
    assert list(board["rank"]) == list(range(1, 7))
    assert (board["score"].diff().dropna() <= 0).all()
    assert (board["lower"] <= board["score"]).all() and (board["score"] <= board["upper"]).all()
    assert board["battles"].sum() == 2 * 1500
    # the same board as the Python API's on the same battles
    expected = Leaderboard(random_state=0).fit(Battles(files["all"])).board_
    np.testing.assert_allclose(board["score"], expected["score"], atol=1e-9)
    assert "1,500 battles of 6 models" in stdout and "tie strength" in stdout
    assert "top 6 of 6" in stdout and board.index[0] in stdout
    assert "robustness: removing" in stdout and "swaps #1" in stdout
    assert crowdbayes.load(saved).is_fitted()


def test_one_hot_winners_give_the_same_board(files, tmp_path, capsys):
    boards = []
    for name in ("all", "onehot"):
        out = tmp_path / f"{name}.csv"
        status, _, stderr = run(["leaderboard", "fit", files[name], "-o", out, "-q"], capsys)
        assert status == 0, stderr
        boards.append(pd.read_csv(out, index_col="model"))
    pd.testing.assert_frame_equal(*boards)


def test_half_ties_elo_scale_and_an_anchor(files, tmp_path, capsys):
    out = tmp_path / "elo.csv"
    command = ["leaderboard", "fit", files["all"], "-o", out, "--tie-model", "half"]
    command += ["--scale", "elo", "--anchor", "model-003", "--interval", "sandwich"]
    status, stdout, stderr = run(command, capsys)
    assert status == 0, stderr
    board = pd.read_csv(out, index_col="model")
    assert board.loc["model-003", "score"] == pytest.approx(1000.0)
    assert "half a win" in stdout and "Elo points" in stdout and "by sandwich" in stdout
    # prefs keeps its own choices: half is the leaderboard's
    with pytest.raises(SystemExit) as refused:
        main(["prefs", "fit", files["all"], "--tie-model", "half"])
    assert refused.value.code == 2 and "invalid choice: 'half'" in capsys.readouterr().err


def test_predict_gives_the_three_outcomes(files, tmp_path, capsys):
    saved = tmp_path / "board.npz"
    assert run(["leaderboard", "fit", files["all"], "--save-model", saved, "-q"], capsys)[0] == 0
    out = tmp_path / "p.csv"
    status, _, stderr = run(
        ["leaderboard", "predict", saved, "--pairs", files["pairs"], "-o", out], capsys
    )
    assert status == 0, stderr
    p = pd.read_csv(out)
    assert list(p.columns) == ["model_a", "model_b", "p_a_wins", "p_b_wins", "p_tie"]
    np.testing.assert_allclose(p[["p_a_wins", "p_b_wins", "p_tie"]].sum(axis=1), 1.0)
    assert (p["p_tie"] > 0).all()
    model = crowdbayes.load(saved)
    expected = model.predict_outcome_proba(p["model_a"], p["model_b"])
    np.testing.assert_allclose(p["p_a_wins"], expected["left"])


def test_the_daily_update_equals_a_fit_on_all_battles(files, tmp_path, capsys):
    saved, out, union = tmp_path / "m.npz", tmp_path / "updated.csv", tmp_path / "union.csv"
    assert run(["leaderboard", "fit", files["day1"], "--save-model", saved, "-q"], capsys)[0] == 0
    status, stdout, stderr = run(
        ["leaderboard", "fit", files["day2"], "--init-model", saved, "--partial",
         "--save-model", saved, "-o", out],
        capsys,
    )  # fmt: skip
    assert status == 0, stderr
    assert "1,500 battles of 6 models, 600 of them new" in stdout
    assert run(["leaderboard", "fit", files["all"], "-o", union, "-q"], capsys)[0] == 0
    updated, fitted = pd.read_csv(out, index_col=0), pd.read_csv(union, index_col=0)
    pd.testing.assert_frame_equal(updated, fitted.loc[updated.index], atol=1e-6)
    assert crowdbayes.load(saved).n_battles_ == 1500


def test_category_boards_follow_the_overall_one(files, tmp_path, capsys):
    out = tmp_path / "boards.csv"
    status, stdout, stderr = run(
        ["leaderboard", "fit", files["all"], "--category-column", "category", "--judge-column",
         "judge", "-o", out],
        capsys,
    )  # fmt: skip
    assert status == 0, stderr
    boards = pd.read_csv(out)
    assert list(boards.columns[:2]) == ["category", "model"]
    assert list(boards["category"].unique())[0] == "(all)"
    assert set(boards["category"]) == {"(all)", "code", "math"}
    data = Battles(files["all"], category="category")
    for category in ("code", "math"):
        mine = boards[boards["category"] == category].set_index("model")
        alone = Leaderboard(random_state=0).fit(data.subset(category)).board_
        np.testing.assert_allclose(mine["score"], alone["score"].loc[mine.index], atol=1e-9)
        assert mine["battles"].sum() == 2 * data.subset(category).n_battles
    assert "6 models, 3 judges, 2 categories" in stdout and "first by category: " in stdout


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """Battles of 8 models by 9 judges: seven vote by the model with probability .95 to .5
    (else at random), one at random, one flips nine votes in ten."""
    sim = simulate_battles(8, 4000, random_state=1)
    reliability = [0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.0, 0.1]
    table = simulate_judges(
        sim.battles, reliability, kind=["random"] * 8 + ["flip"], random_state=1
    )
    path = tmp_path_factory.mktemp("judged") / "judged.csv"
    table.to_csv(path, index=False)
    return str(path)


def test_judges_are_rated_shown_and_written(judged, tmp_path, capsys):
    out = tmp_path / "judges.csv"
    status, stdout, stderr = run(
        ["leaderboard", "fit", judged, "--judge-column", "judge", "--workers-out", out,
         "--robustness", "0", "-o", tmp_path / "board.csv"],
        capsys,
    )  # fmt: skip
    assert status == 0, stderr
    written = pd.read_csv(out, index_col="judge")
    expected = Leaderboard().fit(Battles(judged, judge="judge")).judges_
    assert list(written.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(written, expected, check_names=False, atol=1e-9)
    flagged = list(expected.index[expected["flagged"]])
    assert flagged and {"judge-07", "judge-08"} <= set(flagged)
    assert f"judges: 9 rated by Crowd-BT (flip noise); {len(flagged)} flagged" in stdout
    assert "(reliability below 0.65): " in stdout
    # the three most and the three least reliable judges
    for judge in [*expected.index[:3], *expected.index[-3:]]:
        assert f"\n{judge} " in stdout
    assert f"\n{expected.index[4]} " not in stdout
    # random noise and a threshold of one's own
    status, stdout, stderr = run(
        ["leaderboard", "fit", judged, "--judge-column", "judge", "--judge-noise", "random",
         "--judge-threshold", "0.3", "--robustness", "0", "-o", tmp_path / "b2.csv"],
        capsys,
    )  # fmt: skip
    assert status == 0, stderr
    assert "(random noise)" in stdout and "(reliability below 0.3)" in stdout


def test_no_judges_section_without_a_judge_column(files, capsys):
    status, stdout, stderr = run(["leaderboard", "fit", files["all"], "--robustness", "0"], capsys)
    assert status == 0, stderr
    assert "rated by Crowd-BT" not in stdout


def test_style_control_from_column_pairs(files, tmp_path, capsys):
    out = tmp_path / "style.csv"
    status, stdout, stderr = run(["leaderboard", "fit", files["all"], "--style", "-o", out], capsys)
    assert status == 0, stderr
    assert "style coefficients" in stdout and "tokens" in stdout
    # the same as the covariate computed by hand and named
    table = pd.read_csv(files["all"])
    table["length"] = (table["tokens_a"] - table["tokens_b"]) / (
        table["tokens_a"] + table["tokens_b"]
    )
    path = tmp_path / "with_length.csv"
    table.to_csv(path, index=False)
    named = tmp_path / "named.csv"
    assert (
        run(["leaderboard", "fit", path, "--covariates", "length", "-o", named, "-q"], capsys)[0]
        == 0
    )
    pd.testing.assert_frame_equal(pd.read_csv(out), pd.read_csv(named))


def test_report_builds_the_leaderboard_page(files, tmp_path, capsys):
    page = tmp_path / "board.html"
    status, stdout, stderr = run(
        ["report", "leaderboard", files["all"], "--category-column", "category", "--style",
         "--bootstrap", "100", "-o", page],
        capsys,
    )  # fmt: skip
    assert status == 0, stderr
    html = page.read_text(encoding="utf-8")
    for anchor in ("summary", "data", "model", "intervals", "uncertainty", "robustness", "style",
                   "categories", "next"):  # fmt: skip
        assert f'<section id="{anchor}">' in html, anchor
    for figure in ("board_scores", "win_rates", "rank_probabilities", "style_coefficients"):
        assert f'data-figure="{figure}"' in html, figure
    assert "100 replicates" in html and "4 figures" in stdout
    assert '<section id="judges">' not in html


def test_report_has_a_judges_section_when_judges_are_named(judged, tmp_path, capsys):
    page = tmp_path / "judged.html"
    status, _, stderr = run(
        ["report", "leaderboard", judged, "--judge-column", "judge", "-o", page], capsys
    )
    assert status == 0, stderr
    html = page.read_text(encoding="utf-8")
    assert '<section id="judges">' in html
    assert "judges: 9 rated by Crowd-BT (flip noise)" in html and "judge-08" in html


#: bad inputs: (file content, extra options, a part of the one-line message)
BAD = {
    "unknown winner": ("model_a,model_b,winner\na,b,model_a\nb,a,draw\n", [], "'draw'"),
    "model plays itself": ("model_a,model_b,winner\na,b,model_a\nb,b,tie\n", [], "itself"),
    "missing covariate": (
        "model_a,model_b,winner\na,b,model_a\n",
        ["--covariates", "length"],
        "'length'",
    ),
    "a missing opponent": ("model_a,model_b,winner\na,,model_a\n", [], "model_b"),
    "a single model": ("model_a,model_b,winner\na,a,model_a\na,a,tie\n", [], "itself"),
    "no style columns": ("model_a,model_b,winner\na,b,model_a\n", ["--style"], "NAME_a"),
    "non-numeric style": (
        "model_a,model_b,winner,n_a,n_b\na,b,model_a,3,x\n",
        ["--style"],
        "'n_b'",
    ),
    "missing category": (
        "model_a,model_b,winner\na,b,model_a\n",
        ["--category-column", "c"],
        "'c'",
    ),
    "partial alone": ("model_a,model_b,winner\na,b,model_a\n", ["--partial"], "--init-model"),
    "init without partial": (
        "model_a,model_b,winner\na,b,model_a\n",
        ["--init-model", "x.npz"],
        "--partial",
    ),
    "unknown anchor": ("model_a,model_b,winner\na,b,model_a\n", ["--anchor", "zz"], "'zz'"),
    "missing judge column": (
        "model_a,model_b,winner\na,b,model_a\n",
        ["--judge-column", "judge"],
        "'judge'",
    ),
    "a missing judge": (
        "model_a,model_b,winner,judge\na,b,model_a,x\nb,a,tie,\n",
        ["--judge-column", "judge"],
        "judge",
    ),
    "judges' table without judges": (
        "model_a,model_b,winner\na,b,model_a\n",
        ["--workers-out", "judges.csv"],
        "--judge-column",
    ),
    "bad judge threshold": (
        "model_a,model_b,winner,judge\na,b,model_a,x\n",
        ["--judge-column", "judge", "--judge-threshold", "1.5"],
        "--judge-threshold",
    ),
    "bad level": ("model_a,model_b,winner\na,b,model_a\n", ["--level", "2"], "between 0 and 1"),
    "bad bootstrap": (
        "model_a,model_b,winner\na,b,model_a\n",
        ["--interval", "bootstrap", "--bootstrap", "0"],
        "--bootstrap",
    ),
}


#: the update options are fit's alone: the report is checked with the other cases
FIT_ONLY = {"partial alone", "init without partial", "judges' table without judges"}


@pytest.mark.parametrize(
    "verb, case",
    [("fit", case) for case in BAD] + [("report", case) for case in BAD if case not in FIT_ONLY],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(verb, case, tmp_path, capsys):
    content, options, words = BAD[case]
    battles = tmp_path / "in.csv"
    battles.write_text(content, encoding="utf-8")
    folder = tmp_path / "out"
    folder.mkdir()
    command = ["leaderboard", "fit"] if verb == "fit" else ["report", "leaderboard"]
    out = folder / ("board.csv" if verb == "fit" else "board.html")
    status, _, stderr = run(
        [*command, battles, *options, "-o", out, "--save-model", folder / "m.npz"], capsys
    )
    assert status == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crowdbayes: error: "), stderr
    assert words in lines[0]
    assert list(folder.iterdir()) == []


def test_unknown_models_and_other_families_model_files_are_refused(files, tmp_path, capsys):
    saved = tmp_path / "board.npz"
    assert run(["leaderboard", "fit", files["all"], "--save-model", saved, "-q"], capsys)[0] == 0
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("model_a,model_b\nmodel-000,nobody\n", encoding="utf-8")
    status, _, stderr = run(["leaderboard", "predict", saved, "--pairs", pairs], capsys)
    assert status == 2 and "'nobody'" in stderr and "model_b" in stderr
    comparisons = tmp_path / "comparisons.csv"
    comparisons.write_text("left,right,label\na,b,a\nb,c,c\na,c,a\n", encoding="utf-8")
    other = tmp_path / "bt.npz"
    assert (
        run(["prefs", "fit", comparisons, "--model", "bt", "--save-model", other, "-q"], capsys)[0]
        == 0
    )
    status, _, stderr = run(["leaderboard", "predict", other, "--pairs", pairs], capsys)
    assert status == 2 and "not a model of `crowdbayes leaderboard`" in stderr
    out = tmp_path / "updated.csv"
    status, _, stderr = run(
        ["leaderboard", "fit", files["day2"], "--init-model", other, "--partial", "-o", out],
        capsys,
    )
    assert status == 2 and "holds a BradleyTerry" in stderr and not out.exists()
    status, _, stderr = run(["report", "leaderboard", files["day2"], "--load", other], capsys)
    assert status == 2 and "holds a BradleyTerry" in stderr


def test_a_category_that_cannot_be_fitted_is_left_out_with_a_warning(tmp_path, capsys):
    battles = tmp_path / "split.csv"
    rows = ["a,b,model_a,x", "b,a,model_a,x", "c,d,tie,x", "d,c,model_a,x"]  # x: two groups
    rows += ["a,c,model_a,y", "c,a,model_a,y", "a,b,tie,y", "b,c,model_b,y", "b,d,tie,y"]
    rows += ["d,a,model_b,y"]
    battles.write_text("\n".join(["model_a,model_b,winner,category", *rows]) + "\n")
    out = tmp_path / "boards.csv"
    status, _, stderr = run(
        ["leaderboard", "fit", battles, "--category-column", "category", "-o", out], capsys
    )
    assert status == 0, stderr
    assert "categories: no board for x (" in stderr and "unconnected" in stderr
    assert set(pd.read_csv(out)["category"]) == {"(all)", "y"}
