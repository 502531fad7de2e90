"""Time at defaults (issue 40 point 4): what the samplers say about their time and mixing, the
fast model ``labels fit`` picks on large inputs, and the cheaper EM of CrowdClassifier giving
the same answer. The times themselves are measured by ``benchmarks/labels/defaults_time.py``,
not here."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes.cli import labels as cli_labels
from crowdbayes.cli import main
from crowdbayes.datasets import simulate_labels
from crowdbayes.exceptions import ConvergenceWarning, DataWarning
from crowdbayes.inference import announce
from crowdbayes.models.labels import CrowdClassifier, HierarchicalAnnotation
from crowdbayes.models.labels import crowd_classifier as crowd_classifier_module


@pytest.fixture(scope="module")
def simulated():
    return simulate_labels(150, 12, 4, random_state=1)


@pytest.fixture
def labels_file(simulated, tmp_path):
    path = tmp_path / "labels.csv"
    simulated.labels.to_csv(path, index=False)
    return path


def _recorded(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = fit()
    return model, [w for w in caught if issubclass(w.category, (DataWarning, ConvergenceWarning))]


# ------------------------------------------------------------------ the sampler's notes
def test_long_sampling_is_announced_without_changing_the_draws(simulated, monkeypatch):
    settings = dict(n_chains=2, n_warmup=10, n_samples=20, random_state=3, n_jobs=1)
    quiet, notes = _recorded(lambda: HierarchicalAnnotation(**settings).fit(simulated.labels))
    assert not [w for w in notes if issubclass(w.category, DataWarning)]
    monkeypatch.setattr(announce, "ANNOUNCE_SECONDS", 0.0)
    announced, notes = _recorded(lambda: HierarchicalAnnotation(**settings).fit(simulated.labels))
    (note,) = [str(w.message) for w in notes if issubclass(w.category, DataWarning)]
    assert "2 chain(s) × 30 sweeps will take about" in note
    assert "--model bayes-ds" in note and "n_samples=10" in note
    # the timing ran on a copy of a chain (its generator too): the fit is the same draw for draw
    np.testing.assert_array_equal(announced.probas_.to_numpy(), quiet.probas_.to_numpy())
    assert announced.max_rhat_ == quiet.max_rhat_


def test_unmixed_chains_warn_and_say_how_to_sample_more(simulated):
    model, notes = _recorded(
        lambda: HierarchicalAnnotation(
            n_chains=4, n_warmup=0, n_samples=4, random_state=0, n_jobs=1
        ).fit(simulated.labels)
    )
    assert model.max_rhat_ > announce.RHAT_WARNING
    (note,) = [str(w.message) for w in notes if issubclass(w.category, ConvergenceWarning)]
    assert f"max R-hat {model.max_rhat_:.3f} > 1.05" in note
    assert "n_warmup=100, n_samples=8" in note and "n_chains=8" in note


def test_mixed_chains_do_not_warn():
    labels = simulate_labels(400, 20, 5, random_state=1).labels  # 2,000 labels, 100 per worker
    model, notes = _recorded(lambda: HierarchicalAnnotation(random_state=0, n_jobs=1).fit(labels))
    assert model.max_rhat_ <= announce.RHAT_WARNING
    assert not [w for w in notes if issubclass(w.category, ConvergenceWarning)]


def test_command_line_names_the_flags(labels_file, tmp_path, capsys):
    out = tmp_path / "tasks.csv"
    args = ["labels", "fit", str(labels_file), "--model", "hierarchical", "-o", str(out)]
    assert main([*args, "--samples", "4", "--warmup", "0", "--chains", "4"]) == 0
    err = capsys.readouterr().err
    assert "crowdbayes: warning: HierarchicalAnnotation: the chains disagree" in err
    assert "--warmup 100, --samples 8, or more chains: --chains 8" in err


# ------------------------------------------------------------------ the default on large inputs
def test_large_input_switches_the_default_to_bayes_ds(labels_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli_labels, "LARGE_INPUT_LABELS", 600)  # the file has 600 labels
    out = tmp_path / "tasks.csv"
    assert main(["labels", "fit", str(labels_file), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    warning = [line for line in captured.err.splitlines() if "warning" in line]
    assert warning == [
        "crowdbayes: warning: 600 labels: fitting --model bayes-ds (Bayesian Dawid-Skene, "
        "variational Bayes; seconds) instead of the default --model hierarchical (its Gibbs "
        "sweeps take minutes at this size); give --model hierarchical to insist"
    ]
    assert "BayesianDawidSkene on" in captured.out
    assert len(pd.read_csv(out)) == 150


@pytest.mark.parametrize(
    "options",
    [
        ["--model", "hierarchical", "--samples", "10", "--warmup", "5", "--chains", "2"],
        ["--samples", "10", "--warmup", "5", "--chains", "2"],  # the sampler's options: its fit
    ],
)
def test_large_input_keeps_the_sampler_when_asked(
    options, labels_file, tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(cli_labels, "LARGE_INPUT_LABELS", 600)
    assert main(["labels", "fit", str(labels_file), "-o", str(tmp_path / "t.csv"), *options]) == 0
    captured = capsys.readouterr()
    assert "HierarchicalAnnotation on" in captured.out
    assert "instead of the default" not in captured.err


def test_next_on_a_large_input_reports_its_own_fit(labels_file, tmp_path, capsys, monkeypatch):
    """``labels next`` chooses with bayes-ds, the model ``labels fit`` switches to at this size:
    no switch warning and no second fit; on a smaller input it reports the default's answers."""
    command = ["labels", "next", str(labels_file), "--n", "3", "--no-progress"]
    monkeypatch.setattr(cli_labels, "LARGE_INPUT_LABELS", 600)
    assert main([*command, "-o", str(tmp_path / "a.csv")]) == 0
    captured = capsys.readouterr()
    assert "instead of the default" not in captured.err
    assert "BayesianDawidSkene on" in captured.out and "chose the questions" not in captured.out
    monkeypatch.setattr(cli_labels, "LARGE_INPUT_LABELS", 601)
    assert main([*command, "-o", str(tmp_path / "b.csv")]) == 0
    captured = capsys.readouterr()
    assert "HierarchicalAnnotation on" in captured.out
    assert "BayesianDawidSkene chose the questions" in captured.out


def test_audit_on_a_large_input_fits_what_labels_fit_fits(
    labels_file, tmp_path, capsys, monkeypatch
):
    """``labels audit`` (and ``labels accuracy``) answer with the model ``labels fit`` uses."""
    monkeypatch.setattr(cli_labels, "LARGE_INPUT_LABELS", 600)
    out = tmp_path / "audit.csv"
    assert main(["labels", "audit", str(labels_file), "--n", "10", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "instead of the default --model hierarchical" in captured.err
    assert "BayesianDawidSkene on" in captured.out


def test_small_input_keeps_the_default(labels_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli_labels, "LARGE_INPUT_LABELS", 601)
    assert main(["labels", "fit", str(labels_file), "-o", str(tmp_path / "t.csv")]) == 0
    captured = capsys.readouterr()
    assert "HierarchicalAnnotation on" in captured.out
    assert "instead of the default" not in captured.err


# ------------------------------------------------------------------ CrowdClassifier's EM
def test_partial_m_steps_reach_the_full_em_answer(monkeypatch):
    sim = simulate_labels(300, 20, 3, n_classes=3, random_state=4)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 30)) + np.eye(3, 30)[np.asarray(sim.truth)] * 2.0
    features = pd.DataFrame(X, index=pd.Index(range(300), name="task"))
    partial = CrowdClassifier().fit(sim.labels, features)
    monkeypatch.setattr(crowd_classifier_module, "_M_STEP_ITERATIONS", 500)
    full = CrowdClassifier().fit(sim.labels, features)
    assert partial.converged_ and full.converged_
    np.testing.assert_allclose(partial.probas_, full.probas_, atol=0.02)
    assert (partial.labels_ == full.labels_).mean() >= 0.99
    assert (partial.consensus_ == full.consensus_).mean() >= 0.99
    assert partial.log_likelihood_history_[-1] == pytest.approx(
        full.log_likelihood_history_[-1], rel=1e-3
    )
