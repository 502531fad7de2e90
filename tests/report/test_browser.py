"""The RTE report in headless Chromium (Debian's ``chromium``; ``.ci/run`` installs it): it
loads with no console error, every figure is there and drawn, and it makes no network request.

Outside CI a missing browser skips these tests with a message; under ``CI=true`` it fails them.
"""

from __future__ import annotations

import os

import pytest

from chromium import find_chromium, open_page


@pytest.fixture(scope="module")
def chromium() -> str:
    path = find_chromium()
    if path is None:
        message = "headless Chromium not found (Debian: apt-get install -y chromium)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.mark.slow
def test_the_harness_sees_errors_and_requests(chromium, tmp_path):
    """The checks below are not vacuous: a page that logs an error, throws, and asks the
    network for an image is caught on all three counts."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><html><head><title>bad</title></head><body>"
        '<figure data-figure="broken"><img src="http://127.0.0.1:9/missing.png"></figure>'
        "<script>console.error('deliberate'); undefined_function();</script></body></html>"
    )
    result = open_page(page, chromium=chromium)
    assert result.loaded
    assert any("deliberate" in e for e in result.console_errors)
    assert any("undefined_function" in e or "Uncaught" in e for e in result.console_errors)
    assert result.requests == ["http://127.0.0.1:9/missing.png"]
    assert result.figures[0]["name"] == "broken" and result.figures[0]["width"] == 0


@pytest.mark.slow
def test_rte_report_in_headless_chromium(chromium, tmp_path):
    from crowdbayes import HierarchicalAnnotation
    from crowdbayes.datasets import load_labels
    from crowdbayes.report import build

    dataset = load_labels("rte")  # bundled with the package
    labels = dataset.to_labels()
    model = HierarchicalAnnotation(n_chains=2, n_warmup=100, n_samples=100, random_state=0)
    report = build(model.fit(labels), labels, eval_gold=dataset.gold, source="data set 'rte'")
    path = tmp_path / "rte.html"
    report.save(path)
    assert path.stat().st_size < 5e6
    screenshot = tmp_path / "rte.png"
    result = open_page(path, screenshot=screenshot, chromium=chromium)
    assert result.loaded
    assert result.console_errors == []
    assert result.requests == []
    assert result.title == "crowdbayes report: HierarchicalAnnotation on data set 'rte'"
    assert len(report.figures) == 6 and "calibration" in report.figures  # gold was given
    assert [f["name"] for f in result.figures] == list(report.figures)
    for figure in result.figures:
        assert figure["complete"], figure["name"]
        assert figure["width"] > 300 and figure["height"] > 200, figure
        assert figure["shownWidth"] > 300, figure  # laid out, not collapsed
        assert len(figure["caption"]) > 60, figure
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 100_000
    assert result.height > 3000
