"""``crowdbayes report labels|rank|prefs|cluster``: the fit commands' inputs and options, one
HTML page, the fit commands' errors, no partial output."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes.cli import main
from crowdbayes.datasets import simulate_labels
from crowdbayes.datasets.clustering import simulate_pair_links
from pl_simulate import simulate_tables


def run(*args) -> int:
    return main([str(a) for a in args])


@pytest.fixture
def labels_csv(tmp_path):
    sim = simulate_labels(120, 8, 4, n_classes=2, random_state=0)
    path = tmp_path / "labels.csv"
    sim.labels.to_csv(path, index=False)
    gold = tmp_path / "gold.csv"
    sim.truth.rename("label").rename_axis("task").to_csv(gold)
    return path, gold


def figures_in(path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [part.split('"')[0] for part in text.split('data-figure="')[1:]]


def only(tmp_path, *names) -> bool:
    return sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


@pytest.mark.slow
def test_labels_report_with_the_fit_options(tmp_path, labels_csv, capsys):
    labels, gold = labels_csv
    out, model = tmp_path / "report.html", tmp_path / "ds.npz"
    options = ["--max-iter", 50, "--eval-gold", gold, "--save-model", model, "--bootstrap", 50]
    code = run("report", "labels", labels, "--model", "ds", *options, "--out", out)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.startswith(f"DawidSkene on {labels}: fit in ")
    assert "(6 figures, " in captured.out and str(out) in captured.out
    assert "Dawid-Skene EM: done" in captured.err  # progress lines: stderr is not a terminal
    assert figures_in(out)[-2:] == ["calibration", "convergence"]
    html = out.read_text(encoding="utf-8")
    assert "max_iter = 50" in html and "gold tasks scored" in html
    assert "DawidSkene(" not in html  # the model in words, never its repr
    assert "50 bootstrap replicates" in html
    assert model.exists()
    assert run("report", "labels", labels, "--load", model, "--out", tmp_path / "again.html",
               "--no-progress", "--bootstrap", 0) == 0  # fmt: skip
    captured = capsys.readouterr()
    assert "DawidSkene on" in captured.out and ": loaded; report built" in captured.out
    assert captured.err == ""


@pytest.mark.slow
def test_gold_is_clamped_and_loading_warnings_are_reported(tmp_path, labels_csv, capsys):
    labels, gold = labels_csv
    table = pd.read_csv(labels)
    doubled = tmp_path / "doubled.csv"
    pd.concat([table, table.head(3)]).to_csv(doubled, index=False)
    clamp = tmp_path / "clamp.csv"
    pd.read_csv(gold).head(10).to_csv(clamp, index=False)
    out = tmp_path / "r.html"
    assert run("report", "labels", doubled, "--model", "mv", "--gold", clamp,
               "--duplicates", "drop", "--out", out, "--bootstrap", 0) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "crowdbayes: warning: labels: dropped 3 row(s) that repeat a task–worker pair" in err
    html = out.read_text(encoding="utf-8")
    # the data check, once (not again as the warning the command line printed)
    assert html.count("labels: dropped 3 row(s) that repeat a task–worker pair") == 1
    assert '<li class="warning">labels: dropped 3 row(s) that repeat' in html
    assert "<td>tasks clamped to a gold class</td><td>10</td>" in html


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--gold", "GOLD_UNKNOWN"], "1 task(s) have no labels: ['nowhere']"),
        (["--out", "BLOCKED/r.html"], "--out: cannot write"),
        (["--out", "TMP"], "is a directory; give a file name"),
        (["--load", "MISSING"], "model file not found"),
        (
            ["--load", "CLUSTER_MODEL"],
            "holds a LinkClustering model (judgment 'links'), not one of `crowdbayes labels`",
        ),
        (["--chains", "2", "--load", "DS_MODEL"], "--load reports on the saved model as it is"),
        (["--bootstrap", "-1"], "--bootstrap must be at least 0; got -1"),
        (["--model", "mv", "--max-iter", "5"], "--max-iter applies to ds, bayes-ds"),
        (
            ["--model", "crowd-classifier"],
            "--model crowd-classifier needs --features FILE (the items' features)",
        ),
    ],
)
def test_bad_input_is_one_line_and_leaves_nothing(options, message, tmp_path, labels_csv, capsys):
    labels, gold = labels_csv
    work = tmp_path / "work"
    work.mkdir()
    pd.DataFrame({"task": ["nowhere"], "label": [1]}).to_csv(work / "gold_unknown.csv")
    (work / "blocked").write_text("a file, not a folder")
    links = simulate_pair_links(pd.Series([0, 0, 1, 1]), n_workers=2, pairs_per_worker=4,
                                alpha=0.9, beta=0.9, random_state=0).links  # fmt: skip
    links.to_csv(work / "links.csv", index=False)
    fit = ["--clusters", 2, "-o", work / "a.csv", "--save-model", work / "lc.npz"]
    assert run("cluster", "fit", work / "links.csv", *fit, "--no-progress") == 0
    assert run("labels", "fit", labels, "--model", "ds", "--save-model", work / "ds.npz",
               "--no-progress") == 0  # fmt: skip
    capsys.readouterr()
    before = sorted(p.name for p in work.iterdir())
    names = {
        "GOLD_UNKNOWN": work / "gold_unknown.csv",
        "BLOCKED": work / "blocked",
        "TMP": work,
        "MISSING": work / "missing.npz",
        "CLUSTER_MODEL": work / "lc.npz",
        "DS_MODEL": work / "ds.npz",
    }
    options = [
        str(names.get(o.split("/")[0], o)) + ("/r.html" if "/" in o else "") for o in options
    ]
    if "--out" not in options:
        options += ["--out", str(work / "r.html")]
    assert run("report", "labels", labels, *options) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("crowdbayes: error: "), err
    assert message in err[0]
    assert sorted(p.name for p in work.iterdir()) == before  # no report, no temporary file


@pytest.mark.parametrize(
    ("family", "option", "shown"),
    [
        ("labels", ["--workers-out", "w.csv"], "--workers-out (did you mean --worker-column?)"),
        ("labels", ["--backend", "dask"], "--backend"),
        ("rank", ["--top-k", "3"], "--top-k (did you mean --tol?)"),
        ("cluster", ["--proba"], "--proba (did you mean --load?)"),
    ],
)
def test_an_option_of_fit_alone_is_unknown_to_report(family, option, shown, tmp_path, capsys):
    """``report <family>`` has the inputs and options of ``<family> fit`` but not its outputs
    nor its scale options: one of them is an unknown option (with the closest one), a usage
    error before anything is read or written."""
    with pytest.raises(SystemExit) as exit_info:
        run("report", family, tmp_path / "input.csv", *option, "--out", tmp_path / "r.html")
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"crowdbayes report {family}: error: unrecognized arguments: {shown}" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_labels_report_on_the_crowd_classifier_with_features(tmp_path, labels_csv, capsys):
    """``report labels`` takes ``--features`` as ``labels fit`` does, and so reports on the
    crowd classifier."""
    labels, gold = labels_csv
    truth = pd.read_csv(gold)
    rng = np.random.default_rng(0)
    features = pd.DataFrame(
        2.0 * np.eye(2)[truth["label"]] + rng.normal(size=(len(truth), 2)), columns=["a", "b"]
    )
    features.insert(0, "task", truth["task"])
    features.to_csv(tmp_path / "features.csv", index=False)
    out = tmp_path / "report.html"
    code = run("report", "labels", labels, "--model", "crowd-classifier", "--features",
               tmp_path / "features.csv", "--bootstrap", 0, "--out", out)  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.startswith(f"CrowdClassifier on {labels}: fit in ")
    html = out.read_text(encoding="utf-8")
    assert "<code>CrowdClassifier</code>" in html and "CrowdClassifier(" not in html


def test_an_unknown_model_is_refused_by_the_parser(tmp_path, labels_csv, capsys):
    labels, _ = labels_csv
    with pytest.raises(SystemExit) as exit_info:
        run("report", "labels", labels, "--model", "nope", "--out", tmp_path / "r.html")
    assert exit_info.value.code == 2
    assert "argument --model: invalid choice: 'nope'" in capsys.readouterr().err
    assert only(tmp_path, "labels.csv", "gold.csv")


@pytest.mark.slow
def test_a_failed_write_leaves_neither_report_nor_model(tmp_path, labels_csv, capsys):
    labels, _ = labels_csv
    (tmp_path / "blocked").write_text("a file")
    code = run("report", "labels", labels, "--model", "mv", "--out", tmp_path / "r.html",
               "--save-model", tmp_path / "blocked" / "m.npz", "--bootstrap", 0)  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("crowdbayes: error: ")
    assert only(tmp_path, "labels.csv", "gold.csv", "blocked")


@pytest.mark.slow
def test_rank_prefs_and_cluster_reports(tmp_path):
    table, features, _ = simulate_tables(0, n_queries=120, n_items=30)
    rankings, items = tmp_path / "rankings.csv", tmp_path / "items.csv"
    table.to_csv(rankings, index=False)
    features.rename_axis("item").to_csv(items)
    out = tmp_path / "rank.html"
    assert run("report", "rank", rankings, "--features", items, "--model", "pl-vi",
               "--eta", "1", "--out", out, "--save-model", tmp_path / "pl.npz") == 0  # fmt: skip
    assert figures_in(out) == ["ranked_items", "feature_weights", "convergence"]
    assert run("report", "rank", rankings, "--features", items, "--load", tmp_path / "pl.npz",
               "--out", tmp_path / "rank2.html") == 0  # fmt: skip

    rng = np.random.default_rng(0)
    ids = np.array([f"i{k}" for k in range(20)])
    left, right = rng.integers(0, 20, 200), rng.integers(0, 20, 200)
    keep = left != right
    comparisons = pd.DataFrame({"worker": "w", "left": ids[left[keep]], "right": ids[right[keep]]})
    comparisons["label"] = np.where(
        left[keep] < right[keep], comparisons["left"], comparisons["right"]
    )
    comparisons.to_csv(tmp_path / "comparisons.csv", index=False)
    pd.DataFrame({"item": ids, "x": np.arange(20.0)}).to_csv(tmp_path / "features.csv", index=False)
    out = tmp_path / "prefs.html"
    assert run("report", "prefs", tmp_path / "comparisons.csv", "--features",
               tmp_path / "features.csv", "--model", "gppl-vi", "--out", out) == 0  # fmt: skip
    assert figures_in(out) == ["ranked_items", "feature_weights", "convergence"]

    truth = pd.Series(np.repeat(np.arange(3), 10))
    sim = simulate_pair_links(truth, n_workers=3, pairs_per_worker=100, alpha=0.9, beta=0.9,
                              random_state=0)  # fmt: skip
    sim.links.to_csv(tmp_path / "links.csv", index=False)
    out = tmp_path / "cluster.html"
    assert run("report", "cluster", tmp_path / "links.csv", "--clusters", 4,
               "--out", out) == 0  # fmt: skip
    assert figures_in(out) == ["cluster_embedding", "worker_alpha_beta", "convergence"]


@pytest.mark.slow
def test_rte_report_from_the_bundled_data_set(tmp_path, capsys):
    out = tmp_path / "rte.html"
    assert run("report", "labels", "--dataset", "rte", "--model", "bayes-ds", "--out", out) == 0
    printed = capsys.readouterr().out
    assert "BayesianDawidSkene on data set 'rte'" in printed
    html = out.read_text(encoding="utf-8")
    assert "<td>tasks with gold for scoring</td><td>800</td>" in html  # the set's gold scores
    assert figures_in(out)[-2:] == ["calibration", "convergence"]
    assert out.stat().st_size < 5e6
