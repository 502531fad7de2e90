"""The leaderboard's report (``crowdbayes.report.build`` on a ``Leaderboard`` and its
``Battles``, issue 44): every section and figure, numbers read from the board, category boards,
a board without covariates, and the figures on their own."""

from __future__ import annotations

import re

import numpy as np
import pytest

from crowdbayes.data.battles import Battles
from crowdbayes.models.comparisons import Leaderboard, simulate_battles
from crowdbayes.report import build, figures

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def battles():
    """9 models, 2,500 battles with a style covariate and two categories."""
    sim = simulate_battles(9, 2500, coef=[0.5], popularity=0.5, random_state=1)
    rng = np.random.default_rng(2)
    table = sim.battles.assign(category=rng.choice(["code", "chat"], len(sim.battles)))
    return Battles(table, covariates=["style_0"], category="category")


@pytest.fixture(scope="module")
def board(battles):
    return Leaderboard(n_bootstrap=100, random_state=0).fit(battles)


def sections(html: str) -> list[str]:
    return re.findall(r'<section id="([a-z]+)">', html)


def test_the_page_has_every_section_and_figure(board, battles):
    report = build(board, battles, source="simulated battles")
    html = report.html
    assert sections(html) == [
        "summary",
        "checks",
        "data",
        "model",
        "intervals",
        "uncertainty",
        "robustness",
        "style",
        "categories",
        "next",
    ]
    assert report.figures == (
        "board_scores",
        "win_rates",
        "rank_probabilities",
        "style_coefficients",
    )
    assert report.omitted == ()
    first = board.board_.index[0]
    assert f"{first}: P(rank 1) {board.board_['p_rank1'].iloc[0]:.2f}" in html
    assert "2,500 battles" in html and "style_0" in html
    for method in ("laplace", "sandwich", "bootstrap"):
        assert f"<th>width {method}</th>" in html
    top = board.robustness(top_k=1)
    assert f"<td>{top['model_above'].iloc[0]}</td><td>{top['model_below'].iloc[0]}</td>" in html
    # the board's CSV is in the page, every model of it
    csv = re.search(r'<pre id="model-[0-9]+-data" hidden>(.*?)</pre>', html, flags=re.S)[1]
    assert len(csv.strip().splitlines()) == 1 + len(board.board_)
    assert "(all)," in html and "code," in html  # every category's board, as CSV


def test_category_boards_given_are_not_fitted_again(board, battles):
    fake = {"only": Leaderboard(random_state=0).fit(battles.subset("code"))}
    html = build(board, battles, categories=fake).html
    assert "The first of each category: only:" in html and "chat:" not in html


def _plain(battles) -> Battles:
    """The same battles without their covariates and categories."""
    table = battles.collapsed()
    rows = table.loc[table.index.repeat(table["count"])]
    return Battles(rows[["model_a", "model_b", "outcome"]], winner="outcome")


def test_a_board_without_covariates_or_categories(battles):
    plain = _plain(battles)
    model = Leaderboard(tie_model="half", scale="elo", n_bootstrap=50, random_state=0).fit(plain)
    report = build(model, plain)
    assert "style" in sections(report.html) and "categories" not in sections(report.html)
    assert "fitted without covariates" in report.html
    assert "style_coefficients" not in report.figures
    assert "Elo points" in report.html and "half a win" in report.html


def test_figures_on_their_own(board):
    assert len(figures.board_scores(board, top=5).axes) == 2
    assert figures.win_rates(board).axes[0].get_title().startswith("Win rates among the 9")
    shape = figures.rank_probabilities(board, top=4).axes[0].get_images()[0].get_array().shape
    assert shape[0] == 4 and 4 <= shape[1] <= 9
    coefficients = figures.style_coefficients(board)
    assert coefficients.axes[0].get_yticklabels()[0].get_text() == "style_0"


def test_style_figure_says_why_without_covariates(battles):
    plain = Leaderboard(random_state=0).fit(_plain(battles))
    with pytest.raises(ValueError, match="without covariates"):
        figures.style_coefficients(plain)


@pytest.mark.slow
def test_the_page_in_headless_chromium(board, battles, tmp_path):
    """No console error, no request, every figure drawn and laid out (skipped without a
    browser, failed under CI; ``tests/report/test_browser.py`` shows the harness sees errors)."""
    from chromium import open_page, require_chromium

    require_chromium()
    report = build(board, battles)
    path = tmp_path / "board.html"
    report.save(path)
    result = open_page(path)
    assert result.loaded and result.console_errors == [] and result.requests == []
    assert [f["name"] for f in result.figures] == list(report.figures)
    for figure in result.figures:
        assert figure["complete"] and figure["width"] > 300 and figure["shownWidth"] > 300, figure


def test_the_judges_section_follows_the_style_when_judges_are_named(battles):
    from crowdbayes.models.comparisons._leaderboard_judges import simulate_judges

    table = _plain(battles).collapsed()
    rows = table.loc[table.index.repeat(table["count"])].reset_index(drop=True)
    rows = rows.rename(columns={"outcome": "winner"})[["model_a", "model_b", "winner"]]
    judged = simulate_judges(rows, [0.95, 0.9, 0.8, 0.0], kind="random", random_state=0)
    data = Battles(judged, judge="judge")
    model = Leaderboard(n_bootstrap=20, random_state=0).fit(data)
    html = build(model, data).html
    names = sections(html)
    assert names[names.index("style") + 1] == "judges"
    judges = model.judges_
    assert (
        f"judges: 4 rated by Crowd-BT (flip noise); {int(judges['flagged'].sum())} flagged" in html
    )
    assert "judge-03" in judges.index[judges["flagged"]]
    # every judge in the page's CSV
    csv = re.search(r'<pre id="judges-[0-9]+-data" hidden>(.*?)</pre>', html, flags=re.S)[1]
    assert len(csv.strip().splitlines()) == 1 + len(judges)
