"""``crowdbayes cluster fit``: links-vb end to end, the deep models on tiny data, bad inputs."""

from __future__ import annotations

import re
import sys

import numpy as np
import pandas as pd
import pytest

from crowdbayes.cli import main
from crowdbayes.datasets.clustering import simulate_pair_links
from crowdbayes.metrics.clustering import normalized_mutual_info, unsupervised_accuracy

ALPHA = [0.95, 0.9, 0.85, 0.65]


def run(*args) -> int:
    return main([str(a) for a in args])


@pytest.fixture
def sim():
    truth = pd.Series(np.repeat(np.arange(3), 20), name="cluster")
    return simulate_pair_links(
        truth, n_workers=4, pairs_per_worker=250, alpha=ALPHA, beta=ALPHA, random_state=1
    )


@pytest.fixture
def links_csv(tmp_path, sim):
    path = tmp_path / "links.csv"
    sim.links.to_csv(path, index=False)
    return path


def _features(truth: pd.Series, seed: int = 0) -> np.ndarray:
    """Three well-separated blobs in 5 dimensions, one per true cluster."""
    rng = np.random.default_rng(seed)
    centres = 4.0 * rng.standard_normal((truth.max() + 1, 5))
    return centres[truth.to_numpy()] + 0.3 * rng.standard_normal((len(truth), 5))


def test_links_vb_end_to_end(tmp_path, sim, links_csv, capsys):
    out, workers = tmp_path / "a.csv", tmp_path / "w.csv"
    code = run("cluster", "fit", links_csv, "--clusters", 3, "-o", out,
               "--workers-out", workers, "--proba", "--seed", 3, "--no-progress")  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()
    err = captured.out  # with -o the summary goes to stdout, and none of it to stderr
    assert "LinkClustering" not in captured.err
    assert "LinkClustering: 1000 links" in err and "by 4 workers; 60 items clustered" in err
    assert "3 of 3 clusters used" in err
    # issue 19: the summary gives the bound's trace and each worker's alpha/beta with intervals
    assert re.search(r"bound per iteration \(\d+\): -[\d.]+, ", err)
    assert "workers (90% intervals):" in err
    assert re.search(r"\n  3: alpha 0\.\d+ \[0\.\d+, [01]\.\d+\], beta 0\.\d+ \[", err)
    table = pd.read_csv(out, index_col="item")
    assert list(table.columns) == ["cluster", "probability", "p_0", "p_1", "p_2"]
    assert len(table) == 60
    np.testing.assert_allclose(table[["p_0", "p_1", "p_2"]].sum(axis=1), 1.0, atol=1e-9)
    chosen = table[["p_0", "p_1", "p_2"]].to_numpy()[np.arange(60), table["cluster"]]
    np.testing.assert_allclose(table["probability"], chosen)
    assert unsupervised_accuracy(sim.truth, table["cluster"]) >= 0.95
    est = pd.read_csv(workers, index_col="worker").sort_index()
    assert {"alpha", "beta", "alpha_lower", "beta_upper"} <= set(est.columns)
    # the poor worker (0.65) is recognised as the least sensitive and specific
    assert est["alpha"].idxmin() == 3 and est["beta"].idxmin() == 3
    assert abs(est.loc[0, "beta"] - 0.95) < 0.07


def _as_if_torch_were_not_installed(monkeypatch) -> None:
    """``import torch`` raises ImportError, and so does importing the deep models, whatever
    the tests before imported."""
    monkeypatch.setitem(sys.modules, "torch", None)
    for name in list(sys.modules):
        if name.startswith("crowdbayes.models.clustering.deep"):
            monkeypatch.delitem(sys.modules, name)


def test_links_vb_without_proba_columns_needs_no_torch(tmp_path, links_csv, monkeypatch):
    _as_if_torch_were_not_installed(monkeypatch)
    out = tmp_path / "a.tsv"
    assert run("cluster", "fit", links_csv, "--clusters", 3, "--out", out) == 0
    assert list(pd.read_csv(out, sep="\t").columns) == ["item", "cluster", "probability"]


def _bad_links(tmp_path, rows) -> str:
    path = tmp_path / "bad.csv"
    pd.DataFrame(rows, columns=["worker", "left", "right", "label"]).to_csv(path, index=False)
    return path


GOOD = [["w1", "a", "b", 1], ["w1", "b", "c", 0], ["w2", "a", "c", 0]]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            GOOD + [["w2", "c", "c", 1]],
            "1 row(s) link an item to itself (first: item 'c' at line 5)",
        ),
        (GOOD + [["w2", "a", "b", 2]], "column 'label' must hold 1 (must-link) or 0"),
        (GOOD + [["w1", "b", "a", 0]], "1 pair(s) got contradictory labels from one worker"),
    ],
)
def test_bad_links_one_line_error_and_no_output(tmp_path, capsys, rows, message):
    out = tmp_path / "a.csv"
    code = run("cluster", "fit", _bad_links(tmp_path, rows), "--out", out,
               "--duplicates", "error")  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("crowdbayes: error: links (") and message in err
    assert err.count("\n") == 1
    assert not out.exists() and list(tmp_path.glob(".tmp-*")) == []


def test_repeated_links_kept_with_a_warning_by_default(tmp_path, capsys):
    """Issue 19: a repeated row gets the documented default policy (keep, warn), as labels."""
    out = tmp_path / "a.csv"
    rows = GOOD + [["w1", "a", "b", 1]]
    code = run("cluster", "fit", _bad_links(tmp_path, rows), "--clusters", 2,
               "--out", out)  # fmt: skip
    assert code == 0
    err = capsys.readouterr().err
    assert "every row is kept" in err and "--duplicates drop" in err
    assert len(pd.read_csv(out)) == 3


def test_duplicates_keep_is_an_option(tmp_path, capsys):
    out = tmp_path / "a.csv"
    rows = GOOD + [["w1", "a", "b", 1]]
    code = run("cluster", "fit", _bad_links(tmp_path, rows), "--clusters", 2,
               "--out", out, "--duplicates", "keep")  # fmt: skip
    assert code == 0
    assert "every row is kept" in capsys.readouterr().err
    assert len(pd.read_csv(out)) == 3


def test_failed_write_leaves_no_output(tmp_path, links_csv, capsys):
    out = tmp_path / "a.csv"
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code = run("cluster", "fit", links_csv, "--clusters", 3, "--out", out,
               "--workers-out", blocker / "w.csv", "--no-progress")  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err.startswith("crowdbayes: error:")
    assert not out.exists() and list(tmp_path.glob(".tmp-*")) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "scdc"], "--model scdc needs --features FILE (the items' features)"),
        (["--features", "f.csv"], "--features applies to --model scdc, bayes-scdc, not links-vb"),
        (["--epochs", "2"], "--epochs applies to scdc, bayes-scdc, not links-vb"),
        (["--clusters", "0"], "--clusters must be at least 1; got 0"),
        (["--model", "bayes-scdc", "--features", "f.csv", "--epochs", "0"], "--epochs must be"),
        (["--link-weight", "0.5"], "--link-weight applies to scdc, bayes-scdc, not links-vb"),
        (["--model", "scdc", "--features", "f.csv", "--link-weight", "0"], "--link-weight must"),
        (["--model", "scdc", "--features", "f.csv", "--link-weight", "nan"], "positive number"),
        (["--model", "scdc", "--features", "f.csv", "--restarts", "0"], "--restarts must be"),
        (["--model", "scdc", "--features", "f.csv", "--cluster-head", "on"], "--cluster-head"),
        (["--model", "scdc", "--features", "f.csv", "--head-balance", "0"], "--head-balance"),
        (["--model", "bayes-scdc", "--features", "f.csv", "--head-balance", "-1"], "non-negative"),
        (["--learning-rate", "1e-3"], "--learning-rate applies to scdc, bayes-scdc, not links-vb"),
        (["--model", "scdc", "--features", "f.csv", "--learning-rate", "0"], "--learning-rate"),
        (["--model", "scdc", "--features", "f.csv", "--hidden", "500,x"], "--hidden must be"),
        (["--model", "scdc", "--features", "f.csv", "--hidden", "0"], "separated by commas"),
    ],
)
def test_option_errors(tmp_path, links_csv, capsys, args, message):
    out = tmp_path / "a.csv"
    assert run("cluster", "fit", links_csv, "--out", out, *args) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_deep_model_without_torch_says_which_extra(tmp_path, links_csv, capsys, monkeypatch):
    _as_if_torch_were_not_installed(monkeypatch)
    features = tmp_path / "f.npy"
    np.save(features, np.zeros((60, 2)))
    code = run("cluster", "fit", links_csv, "--features", features, "--model",
               "bayes-scdc", "--out", tmp_path / "a.csv")  # fmt: skip
    assert code == 1  # a missing optional package is a failure while running, not bad usage
    err = capsys.readouterr().err
    assert err == (
        "crowdbayes: error: --model bayes-scdc needs torch: pip install 'crowdbayes[deep]'\n"
    )
    assert not (tmp_path / "a.csv").exists()


def _feature_table(sim, tmp_path, name="f.csv", drop=None, edit=None) -> str:
    table = pd.DataFrame(_features(sim.truth), columns=[f"x{k}" for k in range(5)])
    table.insert(0, "item", sim.truth.index)
    if drop is not None:
        table = table[table["item"] != drop]
    if edit is not None:
        edit(table)
    path = tmp_path / name
    table.to_csv(path, index=False)
    return path


def _nan(table):
    table.loc[4, "x2"] = np.nan


def _text(table):
    table["x1"] = table["x1"].astype(object)
    table.loc[2, "x1"] = "high"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"drop": 7}, "link an item that has no observation (first: item '7'"),
        ({"edit": _nan}, "features (FILE): feature column 'x2' has 1 missing or infinite value(s)"),
        ({"edit": _text}, "features (FILE): column(s) ['x1'] are not numeric"),
    ],
)
def test_bad_features(tmp_path, sim, links_csv, capsys, kwargs, message):
    pytest.importorskip("torch")
    out = tmp_path / "a.csv"
    features = _feature_table(sim, tmp_path, **kwargs)
    code = run("cluster", "fit", links_csv, "--features", features, "--model", "scdc",
               "--clusters", 3, "--out", out)  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert message.replace("FILE", str(features)) in err and err.count("\n") == 1
    assert not out.exists()


def test_bad_npy_features(tmp_path, sim, links_csv, capsys):
    pytest.importorskip("torch")
    short, nan, text_ids = tmp_path / "short.npy", tmp_path / "nan.npy", tmp_path / "ids.csv"
    np.save(short, _features(sim.truth)[:50])
    values = _features(sim.truth)
    values[3, 1] = np.nan
    np.save(nan, values)
    sim.links.assign(left="i" + sim.links["left"].astype(str)).to_csv(text_ids, index=False)
    cases = [
        (links_csv, short, "link an item that has no observation"),
        (
            links_csv,
            nan,
            "features (NAN): 1 row(s) hold missing or infinite values (first: item 3)",
        ),
        (text_ids, tmp_path / "short.npy", "column 'left' must hold integer row numbers"),
    ]
    for links, features, message in cases:
        code = run("cluster", "fit", links, "--features", features, "--model",
                   "scdc", "--out", tmp_path / "a.csv")  # fmt: skip
        assert code == 2
        assert message.replace("NAN", str(nan)) in capsys.readouterr().err
    assert not (tmp_path / "a.csv").exists()


@pytest.mark.slow
@pytest.mark.parametrize("model", ["scdc", "bayes-scdc"])
@pytest.mark.parametrize("form", ["csv", "npy"])
def test_deep_models_end_to_end(tmp_path, sim, capsys, model, form):
    torch = pytest.importorskip("torch")
    pytest.importorskip("crowdbayes.models.clustering.deep")
    torch.set_num_threads(1)
    # only the first 40 items are linked: the deep models also cluster the other 20
    linked = sim.links[(sim.links["left"] < 40) & (sim.links["right"] < 40)]
    links = tmp_path / "links.csv"
    linked.to_csv(links, index=False)
    if form == "csv":
        features = _feature_table(sim, tmp_path)
    else:
        features = tmp_path / "f.npy"
        np.save(features, _features(sim.truth))
    out, workers = tmp_path / "a.csv", tmp_path / "w.csv"
    code = run("cluster", "fit", links, "--features", features, "--model", model,
               "--clusters", 3, "--epochs", 2, "--latent-dim", 2, "--batch-size", 20,
               "--link-weight", 0.5, "--restarts", 2,
               "--out", out, "--workers-out", workers, "--proba", "--seed", 0)  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    err = captured.out  # with -o the summary goes to stdout
    assert "60 items clustered (20 without links)" in err
    assert re.search(r"bound per epoch \(2\): -[\d.]+, -[\d.]+\n", err)
    assert "kept: the state after epoch" in err
    if model == "bayes-scdc":
        assert "workers (90% intervals):" in err and "restarts run 2, collapsed" in err
    else:
        assert "(point estimates)" in err
    table = pd.read_csv(out, index_col="item").sort_index()
    assert len(table) == 60 and table.index.tolist() == list(range(60))
    assert table["probability"].between(0, 1).all()
    p = table.filter(like="p_")
    assert p.shape[1] == 3
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    est = pd.read_csv(workers, index_col="worker").sort_index()
    assert len(est) == 4 and est[["alpha", "beta"]].stack().between(0, 1).all()
    # the command gives what the Python API gives on the same data and seed
    from crowdbayes.models.clustering import deep

    cls = getattr(deep, {"scdc": "SCDC", "bayes-scdc": "BayesSCDC"}[model])
    direct = cls(n_clusters=3, latent_dim=2, epochs=2, batch_size=20, link_weight=0.5, n_init=2,
                 random_state=0)  # fmt: skip
    direct.fit(_features(sim.truth), links=linked)
    np.testing.assert_array_equal(table["cluster"], direct.assignments_.sort_index())
    np.testing.assert_allclose(p, direct.predict_proba().sort_index(), atol=1e-5)
    np.testing.assert_allclose(est["alpha"], direct.workers_["alpha"].sort_index(), atol=1e-5)
    if model == "bayes-scdc":  # separated blobs and mostly right links: far from random
        assert normalized_mutual_info(sim.truth, table["cluster"]) > 0.5


def test_cuda_without_a_gpu_is_one_line(tmp_path, sim, links_csv, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    features = tmp_path / "f.npy"
    np.save(features, _features(sim.truth))
    code = run("cluster", "fit", links_csv, "--features", features, "--model",
               "bayes-scdc", "--device", "cuda", "--out", tmp_path / "a.csv")  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err == (
        "crowdbayes: error: --device cuda was asked for but CUDA is not available in this "
        "PyTorch build or on this machine; use --device cpu\n"
    )
    assert not (tmp_path / "a.csv").exists()


def test_save_writes_a_model_that_loads_with_the_same_clusters(tmp_path, links_csv):
    from crowdbayes import LinkClustering, load

    out, model_file = tmp_path / "a.csv", tmp_path / "m.npz"
    code = run("cluster", "fit", links_csv, "--clusters", 3, "--out", out,
               "--save-model", model_file)  # fmt: skip
    assert code == 0
    model = load(model_file)
    assert isinstance(model, LinkClustering) and model.n_clusters == 3
    written = pd.read_csv(out, index_col=0, dtype={"item": str})
    assert (model.assignments_.reindex(written.index).to_numpy() == written["cluster"]).all()


def _one_epoch_bayes_scdc(tmp_path, sim, *extra, model="bayes-scdc"):
    """Fit ``model`` (bayes-scdc or scdc) for one epoch on the blobs through the command line,
    saving the model; returns the loaded model."""
    pytest.importorskip("torch").set_num_threads(1)
    from crowdbayes import load

    features, links, model_file = tmp_path / "f.npy", tmp_path / "links.csv", tmp_path / "m.npz"
    np.save(features, _features(sim.truth))
    sim.links.to_csv(links, index=False)
    argv = ["cluster", "fit", links, "--features", features, "--model", model,
            "--clusters", 3, "--epochs", 1, "--restarts", 1, "--out", tmp_path / "a.csv",
            "--save-model", model_file, *extra]  # fmt: skip
    assert run(*argv) == 0
    return load(model_file)


@pytest.mark.parametrize(("given", "expected"), [(None, 5), ("3", 3), ("9", 9)])
def test_latent_dim_defaults_to_at_most_the_number_of_features(tmp_path, sim, given, expected):
    """Issue 19: a latent x of 8 over 2 features left 6 dimensions of noise in which the
    pinwheel collapsed; without --latent-dim it is at most the number of features (here 5)."""
    extra = [] if given is None else ["--latent-dim", given]
    assert _one_epoch_bayes_scdc(tmp_path, sim, *extra).latent_dim == expected


@pytest.mark.parametrize(("given", "used"), [("on", True), ("auto", False), (None, False)])
def test_cluster_head_reaches_bayes_scdc(tmp_path, sim, given, used):
    """Issue 19: ``--cluster-head`` sets BayesSCDC's cluster_head (default off); these links
    are dense (about 33 per item), so "auto" leaves the head off."""
    extra = [] if given is None else ["--cluster-head", given]
    model = _one_epoch_bayes_scdc(tmp_path, sim, *extra)
    assert model.cluster_head == (given or "off") and model.uses_cluster_head_ is used


def test_head_balance_learning_rate_and_widths_reach_bayes_scdc(tmp_path, sim):
    """Issue 19: the MNIST sorted-task setting (``--cluster-head on --head-balance 0.05
    --learning-rate 1e-3 --hidden 500,500``) is reachable from the command line."""
    extra = ["--cluster-head", "on", "--head-balance", "0.05", "--learning-rate", "1e-3"]
    model = _one_epoch_bayes_scdc(tmp_path, sim, *extra, "--hidden", "12,6")
    assert (model.head_balance, model.learning_rate, model.hidden) == (0.05, 1e-3, (12, 6))
    assert model.uses_cluster_head_


def test_head_balance_without_the_head_is_reported(tmp_path, sim, capsys):
    """--head-balance shapes the cluster head's training only; without the head the summary
    says it had no effect instead of ignoring it silently."""
    model = _one_epoch_bayes_scdc(tmp_path, sim, "--head-balance", "0.1")
    assert not model.uses_cluster_head_
    captured = capsys.readouterr()
    assert "--head-balance had no effect" in captured.out  # the summary: stdout with -o
    assert "--head-balance" not in captured.err


def test_learning_rate_and_widths_reach_scdc(tmp_path, sim):
    model = _one_epoch_bayes_scdc(
        tmp_path, sim, "--learning-rate", "2e-3", "--hidden", "7", model="scdc"
    )
    assert type(model).__name__ == "SCDC"
    assert (model.learning_rate, model.hidden) == (2e-3, (7,))


def test_report_cluster_fits_the_model_that_cluster_fit_fits(tmp_path, sim, monkeypatch):
    """``report cluster`` takes the inputs and options of ``cluster fit`` and, like it, a deep
    model's latent size from the features (at most 5 here); it used to fit 8 over 2 features
    and merge the pinwheel's arms that ``cluster fit`` separates."""
    pytest.importorskip("torch").set_num_threads(1)
    from crowdbayes.models.clustering.deep import BayesSCDC

    fitted = []
    fit = BayesSCDC.fit

    def recording(model, *args, **kwargs):
        fitted.append(model)
        return fit(model, *args, **kwargs)

    monkeypatch.setattr(BayesSCDC, "fit", recording)
    features, links = tmp_path / "f.npy", tmp_path / "links.csv"
    np.save(features, _features(sim.truth))
    sim.links.to_csv(links, index=False)
    assert run("report", "cluster", links, "--features", features, "--model",
               "bayes-scdc", "--clusters", 3, "--epochs", 1, "--restarts", 1,
               "--out", tmp_path / "r.html") == 0  # fmt: skip
    assert [model.latent_dim for model in fitted] == [5]
