"""The RTE report in headless Chromium (Debian's ``chromium``; ``.ci/run`` installs it): it
loads with no console error, every figure is there and drawn, and it makes no network request.

Outside CI a missing browser skips these tests with a message; under ``CI=true`` it fails them.
"""

from __future__ import annotations

import html as htmllib
import io
import re
import subprocess

import numpy as np
import pandas as pd
import pytest

from chromium import open_page, require_chromium


@pytest.fixture(scope="module")
def chromium() -> str:
    return require_chromium()


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


# ------------------------------------------------------------------ small and large label sets
def _inside(values, limits) -> bool:
    low, high = sorted(limits)
    slack = 1e-9 * max(high - low, 1e-300)
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    return bool(((values >= low - slack) & (values <= high + slack)).all())


def _labelled(axis, limits) -> bool:
    """Some major tick inside the axis's limits has a label."""
    low, high = sorted(limits)
    ticks = zip(axis.get_majorticklocs(), axis.get_majorticklabels(), strict=False)
    return any(low <= loc <= high and label.get_text().strip() for loc, label in ticks)


def axes_problems(name: str, figure) -> list[str]:
    """What is wrong with a drawn figure's axes: a labelled axis without tick labels, an axes
    with nothing drawn, a data point, segment or bar outside the limits (clipped), bars on a
    log scale."""
    problems = []
    for n, ax in enumerate(figure.axes):
        if not ax.get_visible() or hasattr(ax, "_colorbar"):
            continue
        where = f"{name} axes {n} ({ax.get_title() or ax.get_xlabel()})"
        xlim, ylim = ax.get_xlim(), ax.get_ylim()
        for axis, label, limits in (
            (ax.xaxis, ax.get_xlabel(), xlim),
            (ax.yaxis, ax.get_ylabel(), ylim),
        ):
            if label and not _labelled(axis, limits):
                problems.append(f"{where}: no tick label on the axis {label!r}")
        drawn = ax.lines + ax.collections + ax.patches + ax.images
        if not drawn:
            problems.append(f"{where}: nothing drawn")
        for line in ax.lines:
            if line.get_transform() != ax.transData:
                continue  # axhline/axvline: axes coordinates on one side
            x, y = np.asarray(line.get_xydata(), dtype=np.float64).T
            if not (_inside(x, xlim) and _inside(y, ylim)):
                problems.append(f"{where}: a line leaves the axes")
        for collection in ax.collections:
            points = [np.asarray(collection.get_offsets(), dtype=np.float64).reshape(-1, 2)]
            if hasattr(collection, "get_segments"):
                points += [np.asarray(s, dtype=np.float64) for s in collection.get_segments()]
            for xy in points:
                if len(xy) and not (_inside(xy[:, 0], xlim) and _inside(xy[:, 1], ylim)):
                    problems.append(f"{where}: points outside the limits")
                    break
        bars = [p for p in ax.patches if hasattr(p, "get_height")]
        for bar in bars:
            x, y, w, h = bar.get_x(), bar.get_y(), bar.get_width(), bar.get_height()
            if not (_inside([x, x + w], xlim) and _inside([y, y + h], ylim)):
                problems.append(f"{where}: a bar outside the limits")
                break
        if bars and ax.get_yscale() != "linear":
            problems.append(f"{where}: bars on a {ax.get_yscale()} scale")
    return problems


_REPR = re.compile(r"\b[A-Z][A-Za-z]+\([a-z_]+=")


def visible_text(html: str) -> str:
    """The page's text as a reader sees it: no script, style or hidden data, no tags."""
    for hidden in (r"<script.*?</script>", r"<style.*?</style>", r"<pre[^>]*hidden>.*?</pre>"):
        html = re.sub(hidden, " ", html, flags=re.S)
    return htmllib.unescape(re.sub(r"<[^>]+>", " ", html))


def dumped_dom(chromium: str, path) -> str:
    """The page's DOM after its script ran (``--dump-dom``)."""
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    done = subprocess.run(
        [chromium, *flags, "--dump-dom", path.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("n_tasks", [30, 100_000])
def test_label_report_small_and_large(chromium, tmp_path, monkeypatch, n_tasks):
    """The first screen and every figure at 30 and 100,000 tasks: the answers table and its
    CSV, axes that show all their data with labelled ticks, no repr or raw markup."""
    import crowdbayes as cb
    from crowdbayes.datasets import simulate_labels
    from crowdbayes.report import _html, build

    drawn = []

    def keep(figure, *args, **kwargs):
        drawn.append(figure)
        return png_bytes(figure, *args, **kwargs)

    png_bytes = _html.png_bytes
    monkeypatch.setattr(_html, "png_bytes", keep)
    sim = simulate_labels(n_tasks, 8 if n_tasks < 100 else 60, 4, n_classes=3, random_state=0)
    labels = cb.Labels(sim.labels)
    model = cb.BayesianDawidSkene(progress=True).fit(labels)
    gold = sim.truth.iloc[: min(n_tasks, 2000)]
    report = build(model, labels, eval_gold=gold, source="simulated", n_boot=20)
    assert len(drawn) == len(report.figures) == 6
    problems = [
        p for name, f in zip(report.figures, drawn, strict=True) for p in axes_problems(name, f)
    ]
    assert problems == []
    html = report.html
    # the first screen: the model in words, the answers' confidence, the checks, what next
    summary = visible_text(html.split('<section id="summary">')[1].split("</section>")[0])
    assert "Bayesian Dawid-Skene, variational Bayes" in summary
    confidence = model.probas_.max(axis=1)
    assert f"mean probability of the answer {confidence.mean():.3f}" in summary
    assert f"{int((confidence < 0.9).sum()):,}" in summary and "What to do next" in summary
    assert html.index('id="summary"') < html.index('id="checks"') < html.index('id="answers"')
    # the answers: the least confident shown, every task in the CSV
    answers = html.split('<section id="answers">')[1].split("</section>")[0]
    shown = re.findall(r"<tr><td>([^<]+)</td><td>[^<]*</td><td>([0-9.]+)</td>", answers)
    assert len(shown) == min(n_tasks, 100)
    assert [float(p) for _, p in shown] == sorted(float(p) for _, p in shown)
    data = re.search(r"<pre id=\"[^\"]+\" hidden>(.*?)</pre>", answers, flags=re.S)[1]
    csv = pd.read_csv(io.StringIO(htmllib.unescape(data)), index_col=0)
    assert len(csv) == n_tasks and list(csv.columns[:2]) == ["answer", "probability"]
    assert np.allclose(csv["probability"], confidence.reindex(csv.index), atol=1e-3)
    # nothing internal or raw in what a reader sees; R-hat not asked of a variational fit
    text = visible_text(html)
    assert not _REPR.search(text), _REPR.search(text)
    assert "`" not in text and "**" not in text and "R-hat" not in text
    path = tmp_path / f"labels_{n_tasks}.html"
    report.save(path)
    assert path.stat().st_size < (1e6 if n_tasks < 100 else 6e6)
    screenshot = tmp_path / f"labels_{n_tasks}.png"
    result = open_page(path, screenshot=screenshot, chromium=chromium)
    assert result.loaded and result.console_errors == [] and result.requests == []
    assert all(f["complete"] and f["shownWidth"] > 300 for f in result.figures)
    dom = dumped_dom(chromium, path)  # the script ran under the page's CSP
    assert 'data-sortable="ready"' in dom and 'href="blob:' in dom


def test_the_axes_checks_see_problems():
    """The figure checks are not vacuous: bars on a log scale, a point clipped at the corner
    and a log axis within one decade (no tick label) are all caught; a clean figure passes."""
    from crowdbayes.report._mpl import new_figure

    figure, (bars, points) = new_figure(6, 3, ncols=2)
    bars.bar([1, 2], [11, 400])
    bars.set_yscale("log")
    bars.set_ylabel("tasks")
    points.scatter([0.5, 1.0], [0.5, 1.0])
    points.set_xlim(0, 0.99)
    points.set_ylim(0, 1)
    points.set_xscale("log")
    points.set_xlim(11, 19)
    points.set_xlabel("labels given")
    figure.canvas.draw()
    problems = " | ".join(axes_problems("bad", figure))
    assert "bars on a log scale" in problems
    assert "points outside the limits" in problems
    assert "no tick label on the axis 'labels given'" in problems
    clean, ax = new_figure(3, 3)
    ax.bar([1, 2], [11, 400])
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    clean.canvas.draw()
    assert axes_problems("clean", clean) == []
