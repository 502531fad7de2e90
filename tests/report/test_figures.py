"""Every figure: drawn from a fitted model of its family, titled, with labelled axes, and
refused with a message where the model has nothing to show; matplotlib stays optional."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from matplotlib.figure import Figure

from crowdbayes.report import figures
from crowdbayes.report._mpl import png_bytes


def check(figure, draw: bool = False) -> None:
    """A Figure with a title and every data axis labelled (and, with ``draw``, that draws to
    a non-empty PNG: drawing is the slow part, so one figure of each kind is drawn)."""
    assert isinstance(figure, Figure)
    titles = [figure._suptitle.get_text()] if figure._suptitle is not None else []
    titles += [ax.get_title() for ax in figure.axes]
    assert any(t.strip() for t in titles)
    for ax in figure.axes:
        if ax.get_label() == "<colorbar>":
            continue
        assert ax.get_xlabel().strip(), ax.get_title()
        if ax.get_yticklabels() and not ax.get_ylabel():
            continue  # a ranked list: its tick labels name the rows
        assert ax.get_ylabel().strip() or ax.get_yticks().size, ax.get_title()
    if draw:
        assert len(png_bytes(figure)) > 5000


@pytest.mark.parametrize(
    "name", ["ds", "bayes-ds", pytest.param("hierarchical", marks=pytest.mark.slow), "mv"]
)
def test_label_model_figures(label_models, small_labels, name):
    model = label_models[name]
    labels, truth, _ = small_labels
    draw = name == "hierarchical"
    check(figures.worker_reliability(model), draw)
    check(figures.confusion_matrices(model), draw)
    check(figures.class_probabilities(model), draw)
    check(figures.calibration(model, truth), draw)
    check(figures.label_counts(labels), draw)
    if name == "mv":
        with pytest.raises(ValueError, match="MajorityVote keeps no convergence trace"):
            figures.convergence(model)
    else:
        check(figures.convergence(model), draw)


def test_binary_reliability_shows_sensitivity_and_specificity(binary_labels):
    _, truth, model = binary_labels
    figure = figures.worker_reliability(model, max_workers=5)
    titles = [ax.get_title() for ax in figure.axes]
    assert titles[:2] == ["sensitivity", "specificity"]
    assert "5 workers with the most labels" in figure._suptitle.get_text()
    assert len(figure.axes[0].get_yticklabels()) == 5
    check(figures.calibration(model, truth))


def test_ranking_figures(rankings_fit, featureless_fit):
    rankings, model = rankings_fit
    check(figures.ranked_items(model, rankings, top=10), draw=True)
    check(figures.feature_weights(model), draw=True)
    check(figures.convergence(model), draw=True)
    pairs, mm = featureless_fit
    check(figures.ranked_items(mm))
    with pytest.raises(ValueError, match="no feature weights or length-scales"):
        figures.feature_weights(mm)


def test_preference_and_community_figures(comparisons_fit, communities_fit):
    _, gp = comparisons_fit
    check(figures.ranked_items(gp))
    check(figures.feature_weights(gp))
    check(figures.convergence(gp))
    _, communities = communities_fit
    check(figures.community_members(communities), draw=True)
    check(figures.community_utilities(communities), draw=True)
    check(figures.convergence(communities))


def test_clustering_figures(links_fit):
    links, model = links_fit
    with_features = figures.cluster_embedding(model, links)
    check(with_features, draw=True)
    assert "principal components of their features" in with_features.axes[0].get_title()
    links_only = figures.cluster_embedding(model)
    assert "cluster probabilities" in links_only.axes[0].get_title()
    check(figures.worker_alpha_beta(model), draw=True)
    check(figures.convergence(model))


def test_figures_refuse_other_families(label_models, links_fit):
    with pytest.raises(
        ValueError,
        match=r"^worker_alpha_beta needs a crowd clustering model; got DawidSkene "
        r"\(judgment 'labels'\)$",
    ):
        figures.worker_alpha_beta(label_models["ds"])
    with pytest.raises(
        ValueError,
        match=r"^worker reliability needs a model of labels; got LinkClustering "
        r"\(judgment 'links'\)$",
    ):
        figures.worker_reliability(links_fit[1])


@pytest.mark.slow
def test_matplotlib_is_optional():
    """``import crowdbayes`` (and the report, metrics and command-line modules) never import
    matplotlib; drawing without it says how to install it."""
    code = textwrap.dedent(
        """
        import sys
        import pandas as pd
        import crowdbayes, crowdbayes.report, crowdbayes.metrics, crowdbayes.cli
        assert "matplotlib" not in sys.modules, "matplotlib was imported"
        sys.modules["matplotlib"] = None  # as if it were not installed
        table = pd.DataFrame({"task": [1, 1], "worker": ["a", "b"], "label": [0, 1]})
        model = crowdbayes.MajorityVote().fit(table)
        try:
            crowdbayes.report.figures.class_probabilities(model)
        except ImportError as err:
            print(err)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "figures and reports need matplotlib: pip install 'crowdbayes[plot]'" in result.stdout
