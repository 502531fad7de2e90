"""What the command line does with files: permissions, refusals, --force, missing directories."""

from __future__ import annotations

import os
import stat

import pandas as pd
import pytest

from crowdbayes.cli import main
from crowdbayes.persistence import write_atomically


@pytest.fixture
def labels_file(tmp_path):
    rows = [(f"t{t}", f"w{w}", "yes" if (t + w) % 3 else "no") for t in range(12) for w in range(3)]
    path = tmp_path / "labels.csv"
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(path, index=False)
    return path


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def fit(labels_file, *options):
    return main(["labels", "fit", str(labels_file), "--model", "mv", *map(str, options)])


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_outputs_honour_the_umask(labels_file, tmp_path, umask_022):
    out, workers, model = tmp_path / "t.csv", tmp_path / "w.csv", tmp_path / "m.npz"
    assert fit(labels_file, "--out", out, "--workers-out", workers, "--save-model", model) == 0
    assert [mode(p) for p in (out, workers, model)] == [0o644] * 3
    os.umask(0o077)
    again = tmp_path / "private.csv"
    assert fit(labels_file, "--out", again) == 0
    assert mode(again) == 0o600


def test_write_atomically_modes_and_interrupts(tmp_path, umask_022):
    write_atomically([(tmp_path / "a.txt", lambda tmp: tmp.write_text("a"))])
    assert mode(tmp_path / "a.txt") == 0o644

    def interrupted(tmp):
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(
            [
                (tmp_path / "b.txt", lambda tmp: tmp.write_text("b")),
                (tmp_path / "c.txt", interrupted),
            ]
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


@pytest.mark.parametrize("flag", ["--out", "--workers-out", "--save-model"])
def test_an_existing_output_is_refused_and_left_untouched(labels_file, tmp_path, capsys, flag):
    target = tmp_path / "existing.csv"
    target.write_bytes(b"precious\r\n\x00bytes")
    before = os.stat(target)
    assert fit(labels_file, flag, target) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{flag}: {target} exists; pass --force" in err
    assert target.read_bytes() == b"precious\r\n\x00bytes"
    assert os.stat(target).st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing.csv", "labels.csv"]


def test_force_overwrites(labels_file, tmp_path):
    target = tmp_path / "existing.csv"
    target.write_text("old")
    assert fit(labels_file, "--out", target, "--force") == 0
    assert list(pd.read_csv(target).columns[:2]) == ["task", "label"]


def test_a_missing_directory_is_an_error_not_created(labels_file, tmp_path, capsys):
    target = tmp_path / "no" / "such" / "out.csv"
    assert fit(labels_file, "--out", target) == 2
    assert "the directory" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()


def test_two_options_naming_one_file_are_refused(labels_file, tmp_path, capsys):
    target = tmp_path / "x.csv"
    assert fit(labels_file, "--out", target, "--workers-out", target) == 2
    assert "name the same file" in capsys.readouterr().err


def test_outputs_are_checked_before_the_inputs_are_read(tmp_path, capsys):
    target = tmp_path / "existing.csv"
    target.write_text("old")
    code = main(["labels", "fit", str(tmp_path / "missing.csv"), "--out", str(target)])
    assert code == 2
    assert "exists; pass --force" in capsys.readouterr().err


def every_output_option():
    """(command words, output flag) of every command, from the parser itself."""
    import argparse

    from crowdbayes.cli import _parser

    found = []

    def walk(parser, words):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])
        for option in parser.get_default("output_options") or ():
            found.append((tuple(words), option.flag))

    walk(_parser(), [])
    return found


def test_every_output_option_is_declared_and_can_be_forced():
    import argparse

    from crowdbayes.cli import _parser

    outputs = every_output_option()
    commands = {words for words, _ in outputs}
    # every command that writes files declares them (and so gets --force)
    assert {
        ("labels", "fit"),
        ("labels", "audit"),
        ("labels", "accuracy"),
        ("labels", "next"),
        ("values", "fit"),
        ("rank", "fit"),
        ("rank", "predict"),
        ("prefs", "fit"),
        ("prefs", "predict"),
        ("prefs", "next"),
        ("prefs", "communities"),
        ("leaderboard", "fit"),
        ("leaderboard", "predict"),
        ("cluster", "fit"),
        ("cluster", "next"),
        ("rank", "next"),
        ("convert",),
        ("report", "labels"),
        ("report", "rank"),
        ("report", "prefs"),
        ("report", "leaderboard"),
        ("report", "cluster"),
    } == commands

    # and no option that looks like an output escapes the check
    def walk(parser, words):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])
            elif (
                action.nargs != 0
                and action.help != argparse.SUPPRESS
                and any(s in flag for flag in action.option_strings for s in ("out", "save"))
            ):
                declared = {o.flag for o in parser.get_default("output_options") or ()}
                assert set(action.option_strings) & declared, (words, action.option_strings)

    walk(_parser(), [])
