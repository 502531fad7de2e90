"""``crowdbayes.report.build``: what the page holds for every family, that it is self-contained
and small, and its errors."""

from __future__ import annotations

import base64
import hashlib
import re
import warnings

import pandas as pd
import pytest

from crowdbayes import DawidSkene
from crowdbayes.exceptions import DataWarning, NotFittedError
from crowdbayes.report import Report, build


def figure_names(html: str) -> list[str]:
    return re.findall(r'<figure class="plot" data-figure="([a-z_]+)">', html)


def self_contained(html: str) -> None:
    """No reference outside the page: only data: images, one inline script that the CSP allows
    by its hash and nothing else, no link, a CSP."""
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    scripts = re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    assert len(scripts) == html.count("<script") == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)[1]
    assert f"script-src 'sha256-{digest}'" in policy and "unsafe-eval" not in policy
    assert "<link" not in html and "url(" not in html
    sources = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert all(s.startswith(("data:image/png;base64,", "#")) for s in sources), sources
    assert "http://" not in html and "https://" not in html


@pytest.mark.slow
def test_label_report_has_every_part(label_models, small_labels):
    labels, truth, _ = small_labels
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        message = "labels: dropped 3 row(s) that repeat a task–worker pair"
        warnings.warn(message, DataWarning, stacklevel=1)
    report = build(
        label_models["hierarchical"],
        labels,
        eval_gold=truth,
        source="simulated",
        notes=[*caught, "read 1,200 rows"],
        fit_seconds=1.5,
        n_boot=50,
    )
    assert isinstance(report, Report)
    html = report.html
    self_contained(html)
    names = [
        "label_counts",
        "worker_reliability",
        "confusion_matrices",
        "class_probabilities",
        "calibration",
        "convergence",
    ]
    assert figure_names(html) == names and list(report.figures) == names
    assert report.omitted == ()
    for anchor in ("summary", "checks", "answers", "data", "agreement", "model", "next"):
        assert f'<section id="{anchor}">' in html
    for text in (
        "crowdbayes report: HierarchicalAnnotation on simulated",
        "fit in 1.50 s",
        "DataWarning: labels: dropped 3 row(s) that repeat a task–worker pair",
        "read 1,200 rows",
        "Krippendorff&#x27;s alpha (nominal)",
        "Fleiss&#x27; kappa",
        "mean pairwise Cohen&#x27;s kappa",
        "50 bootstrap replicates",
        "gold tasks scored",
        "expected calibration error",
        "expected information gain about the task",
    ):
        assert text in html, text
    # one plain sentence under every figure
    captions = re.findall(r"<figcaption><strong>[^<]+\.</strong> ([^<]+)</figcaption>", html)
    assert len(captions) == len(names) and all(c.endswith(".") for c in captions)
    # estimates with their intervals in brackets: agreement, reliability
    model_section = html.split('<section id="model">')[1].split("</section>")[0]
    assert re.search(r"<td>0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]</td>", model_section)
    assert "reliability_lower" not in html and "agreement_lower" not in html
    # the uncertain tasks: a summary of the most uncertain, not every task
    next_section = html.split('<section id="next">')[1]
    assert next_section.count("<tr>") == 15 + 1
    assert "votes" in next_section


@pytest.fixture(scope="module")
def mv_report(label_models, small_labels):
    return build(label_models["mv"], small_labels[2], n_boot=0)  # a table is read as Labels


def test_a_model_without_trace_is_reported_without_that_figure(mv_report):
    report = mv_report
    assert ("convergence", "MajorityVote keeps no convergence trace") in report.omitted
    assert 'Figure "convergence" not drawn: MajorityVote keeps no convergence trace' in report.html
    assert "calibration" not in report.figures  # no gold given


@pytest.mark.slow
def test_every_family_has_a_report(rankings_fit, featureless_fit, comparisons_fit,
                                   communities_fit, links_fit):  # fmt: skip
    expected = {
        "rankings": ["ranked_items", "feature_weights", "convergence"],
        "gp": ["ranked_items", "feature_weights", "convergence"],
        "communities": ["community_members", "community_utilities", "convergence"],
        "links": ["cluster_embedding", "worker_alpha_beta", "convergence"],
    }
    fits = {
        "rankings": rankings_fit,
        "gp": comparisons_fit,
        "communities": communities_fit,
        "links": links_fit,
    }
    for name, (data, model) in fits.items():
        report = build(model, data)
        self_contained(report.html)
        assert list(report.figures) == expected[name], name
        assert '<section id="next">' in report.html
    data, model = featureless_fit
    report = build(model, data)
    assert report.figures == ("ranked_items",)
    assert [name for name, _ in report.omitted] == ["feature_weights", "convergence"]


def test_save_is_atomic(tmp_path, mv_report):
    report = mv_report
    path = tmp_path / "deep" / "report.html"
    report.save(path)
    assert path.read_text(encoding="utf-8") == report.html
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError):
        report.save(blocker / "report.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep", "file"]


def test_errors(label_models, small_labels, links_fit):
    labels, truth, _ = small_labels
    with pytest.raises(NotFittedError, match="DawidSkene is not fitted yet"):
        build(DawidSkene(), labels)
    with pytest.raises(TypeError, match="needs its data as Links; got Labels"):
        build(links_fit[1], labels)
    with pytest.raises(ValueError, match="eval_gold scores label models only"):
        build(links_fit[1], links_fit[0], eval_gold=truth)
    with pytest.raises(ValueError, match=r"gold: 1 task\(s\) have a missing gold label"):
        build(label_models["ds"], labels, eval_gold=pd.Series([None], index=[0]), n_boot=0)
