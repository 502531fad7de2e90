"""Adding a label model touches its own module, its family's ``__init__`` and its tests only.

The model of tests/extra_label_model.py is registered at run time as its family's ``__init__``
would register it (one ``ModelEntry`` in ``COMMAND_LINE``, one lazy export), and then it goes
through what every model goes through: the contract tests, fit, save and load, the command
line's model table, ``fit``, ``next`` and ``report``, and the HTML report, with no other change
to the library.
"""

from __future__ import annotations

import importlib
import sys

import pandas as pd
import pytest

import crowdbayes.base
import crowdbayes.models.labels as family
import test_estimators
from crowdbayes._catalogue import ModelEntry
from crowdbayes.cli import _parser, main
from crowdbayes.cli._models import TABLES, readme_tables

ENTRY = ModelEntry(
    "labels", "smoothed-vote", "extra_label_model:SmoothedVote", "vote shares with pseudo-votes"
)


@pytest.fixture
def new_model(monkeypatch):
    """The model's class, registered for the duration of the test only."""
    monkeypatch.setattr(crowdbayes.base, "_REGISTRY", dict(crowdbayes.base._REGISTRY))
    monkeypatch.delitem(sys.modules, "extra_label_model", raising=False)
    cls = importlib.import_module("extra_label_model").SmoothedVote
    # what the family's __init__ would say: the command-line entry and the lazy export
    monkeypatch.setattr(family, "COMMAND_LINE", (*family.COMMAND_LINE, ENTRY))
    monkeypatch.setattr(family, "SmoothedVote", cls, raising=False)
    monkeypatch.setattr(family, "__all__", [*family.__all__, "SmoothedVote"])
    _parser.cache_clear()
    yield cls
    _parser.cache_clear()


def test_the_model_passes_the_contract_tests(new_model, tmp_path):
    assert new_model in crowdbayes.list_models("labels")
    assert family.SmoothedVote is new_model
    for check in (
        test_estimators.test_parameters_round_trip,
        test_estimators.test_every_parameter_is_constrained_and_checked,
        test_estimators.test_fit_checks_the_parameters_first,
        test_estimators.test_result_attributes_before_fit_raise_not_fitted,
        test_estimators.test_fit_sets_only_attributes_ending_in_underscore,
        test_estimators.test_same_seed_same_result,
    ):
        check(new_model)
    test_estimators.test_results_before_fit_raise_not_fitted(new_model, tmp_path)
    test_estimators.test_save_then_load_gives_identical_predictions(new_model, tmp_path)


def test_the_model_is_on_the_command_line_and_in_the_report(new_model, tmp_path, capsys):
    assert "smoothed-vote" in TABLES["labels"].models
    assert "`smoothed-vote` | `SmoothedVote`" in readme_tables()
    (labels,) = test_estimators.tiny_labels()
    data = tmp_path / "labels.csv"
    labels.to_csv(data, index=False)
    tasks, model = tmp_path / "tasks.csv", tmp_path / "model.npz"
    fit = ["labels", "fit", str(data), "--model", "smoothed-vote", "-o", str(tasks)]
    assert main([*fit, "--save-model", str(model)]) == 0
    assert "SmoothedVote on" in capsys.readouterr().out
    table = pd.read_csv(tasks)
    assert list(table.columns) == ["task", "label", "p_neg", "p_pos"] and len(table) == 30
    assert type(crowdbayes.load(model)) is new_model
    asked = tmp_path / "next.csv"
    command = ["labels", "next", str(data), "--model", "smoothed-vote", "--n", "3"]
    assert main([*command, "-o", str(asked)]) == 0
    assert len(pd.read_csv(asked)) == 3
    page = tmp_path / "report.html"
    report = ["report", "labels", str(data), "--model", "smoothed-vote", "-o", str(page)]
    assert main(report) == 0
    html = page.read_text(encoding="utf-8")
    assert "SmoothedVote" in html and 'data-figure="worker_reliability"' in html


def test_without_its_entry_the_command_line_does_not_offer_it(capsys):
    _parser.cache_clear()
    assert "smoothed-vote" not in TABLES["labels"].models
    with pytest.raises(SystemExit):
        main(["labels", "fit", "x.csv", "--model", "smoothed-vote"])
    assert "invalid choice: 'smoothed-vote'" in capsys.readouterr().err
