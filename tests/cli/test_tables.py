"""The model tables of the command line: parser, ``--help`` and the docs' model tables cannot
drift apart (the docs page is generated: ``tests/test_docs.py``)."""

from __future__ import annotations

import argparse

import pytest

import crowdbayes
from crowdbayes.cli import _parser
from crowdbayes.cli._models import TABLES


def _fit_parser(command: str) -> argparse.ArgumentParser:
    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    actions = commands.choices[command]
    sub = next(a for a in actions._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["fit"]


def test_every_fit_command_has_a_table():
    assert set(TABLES) == {"labels", "values", "rank", "prefs", "leaderboard", "cluster"}


@pytest.mark.parametrize("command", ["labels", "values", "rank", "prefs", "leaderboard", "cluster"])
def test_parser_and_help_come_from_the_table(command):
    table = TABLES[command]
    fit = _fit_parser(command)
    model = next(a for a in fit._actions if a.dest == "model")
    assert list(model.choices) == list(table.models)
    assert model.default == table.default
    text = fit.format_help()
    for name, spec in table.models.items():
        assert f"  {name}" in text and spec.help in text
        assert spec.load_class() in crowdbayes.list_models()
    for flag in table.options:
        assert flag in text
        users = [n for n, s in table.models.items() if flag in s.options]
        assert users, f"{flag} applies to no model"


def test_every_model_has_a_command():
    """Each estimator is reachable from the command line under exactly one name."""
    names = [spec.class_name for t in TABLES.values() for spec in t.models.values()]
    assert sorted(names) == sorted(cls.__name__ for cls in crowdbayes.list_models())
