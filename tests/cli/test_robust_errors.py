"""No traceback on any input (issue 42): every error of a command is one line with the
documented exit status, ``--debug`` shows the traceback, the general options go before or after
the command, output names and whole numbers are checked before anything runs, and a label set
too large for a model's dense arrays is refused at once.

Each table below holds cases that failed before issue 42: a traceback or an exit status 0 or a
Python message ("ufunc 'isfinite' not supported") where one line naming the problem belongs.
"""

from __future__ import annotations

import os
import time
import warnings
import zlib

import numpy as np
import pandas as pd
import pytest

from crowdbayes import Labels
from crowdbayes._capacity import ENV_VAR, CapacityError
from crowdbayes._version import __version__
from crowdbayes.cli import main
from crowdbayes.models.labels import BayesianDawidSkene, DawidSkene, OrdinalDawidSkene


@pytest.fixture(scope="module")
def labels_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("labels")
    rng = np.random.default_rng(0)
    rows = [
        (f"t{t}", f"w{w}", "yes" if rng.random() < 0.7 else "no")
        for t in range(30)
        for w in rng.choice(6, 3, replace=False)
    ]
    path = folder / "labels.csv"
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(path, index=False)
    return str(path)


def run(argv, capsys) -> tuple[int, str, str]:
    status = main([str(word) for word in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_error_line(stderr: str) -> str:
    """The one line of an error (warnings may come before it); fails on a traceback."""
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("crowdbayes: error: ")]
    assert len(errors) == 1 and stderr.endswith(errors[0] + "\n"), stderr
    return errors[0]


# ---------------------------------------------------------------------------- any error
def _array_memory_error() -> MemoryError:
    """numpy's own out-of-memory error, as ``np.empty`` raises it."""
    from numpy._core._exceptions import _ArrayMemoryError

    return _ArrayMemoryError((20_000, 10_000), np.dtype(np.float64))


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("no message")


#: an error raised inside a fit -> exit status, a piece of its one line
ERRORS = {
    "numpy out of memory": (
        _array_memory_error,
        1,
        "out of memory: unable to allocate 1.49 GiB for an array with shape (20000, 10000)",
    ),
    "memory, what to change": (_array_memory_error, 1, "fewer classes (merge rare ones)"),
    "plain MemoryError": (MemoryError, 1, "out of memory: the command ran out of memory"),
    "capacity": (lambda: CapacityError("needs at least 9 GiB"), 2, "needs at least 9 GiB"),
    "recursion": (
        lambda: RecursionError("maximum recursion depth exceeded"),
        1,
        "maximum recursion depth exceeded: an input nested too deeply",
    ),
    "zlib": (
        lambda: zlib.error("Error -3 while decompressing data: invalid code lengths set"),
        2,
        "the file is damaged: Error -3 while decompressing data",
    ),
    "assertion": (AssertionError, 1, "internal check failed (a bug: please report it"),
    "runtime": (lambda: RuntimeError("Expected one of cpu, cuda device type"), 1, "cuda"),
    "other type named": (lambda: ZeroDivisionError("division by zero"), 1, "ZeroDivisionError"),
    "no message": (_Unprintable, 1, "_Unprintable (--debug shows the traceback)"),
    "terminal escape": (lambda: ValueError("label '\x1b[31mred'"), 2, "label '\\x1b[31mred'"),
    "line break": (lambda: ValueError("first\nsecond"), 2, "error: first"),
}


@pytest.mark.parametrize("case", ERRORS)
def test_any_error_of_a_command_is_one_line(case, labels_file, tmp_path, capsys, monkeypatch):
    make, status, shown = ERRORS[case]

    def failing_fit(self, *args, **kwargs):
        raise make()

    monkeypatch.setattr(DawidSkene, "fit", failing_fit)
    out = tmp_path / "out.csv"
    command = ["labels", "fit", labels_file, "--model", "ds", "-o", out]
    code, _, stderr = run(command, capsys)
    line = one_error_line(stderr)
    assert code == status and shown in line, line
    assert "\x1b" not in line and not out.exists()


@pytest.mark.parametrize(
    "where",
    ["before the command", "after the command", "environment"],
)
def test_debug_shows_the_traceback_above_the_line(where, labels_file, capsys, monkeypatch):
    def failing_fit(self, *args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(DawidSkene, "fit", failing_fit)
    command = ["labels", "fit", labels_file, "--model", "ds", "-q"]
    if where == "before the command":
        command = ["--debug", *command]
    elif where == "after the command":
        command = [*command, "--debug"]
    else:
        monkeypatch.setenv("CROWDBAYES_DEBUG", "1")
    code, _, stderr = run(command, capsys)
    assert code == 1 and "Traceback (most recent call last)" in stderr
    assert "in failing_fit" in stderr
    assert stderr.endswith(
        "crowdbayes: error: ZeroDivisionError: division by zero (--debug shows the traceback)\n"
    )


# ---------------------------------------------------------------------------- general options
def test_quiet_before_the_command_silences_the_summary(labels_file, tmp_path, capsys):
    command = ["labels", "fit", labels_file, "--model", "mv", "-o"]
    code, loud, _ = run([*command, tmp_path / "a.csv"], capsys)
    assert code == 0 and "MajorityVote" in loud
    code, quiet, _ = run(["--quiet", *command, tmp_path / "b.csv"], capsys)
    assert code == 0 and quiet == ""
    code, quiet, _ = run([*command, tmp_path / "c.csv", "-q"], capsys)
    assert code == 0 and quiet == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["--version"],
        ["labels", "--version"],
        ["labels", "fit", "x.csv", "--version"],
        ["report", "labels", "x.csv", "--version"],
    ],
    ids=" ".join,
)
def test_version_is_accepted_before_or_after_the_command(argv, capsys):
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 0
    assert capsys.readouterr().out == f"crowdbayes {__version__}\n"


# ---------------------------------------------------------------------------- output names
#: output options with a name that must be refused -> a piece of the message
BAD_NAMES = {
    "empty --out": (["-o", ""], "--out: give a file name"),
    "empty --out with --force": (["-o", "", "--force"], "--out: give a file name"),
    "blank --workers-out": (["--workers-out", " "], "--workers-out: give a file name"),
    "empty --save-model": (["--save-model", ""], "--save-model: give a file name"),
    ".xlsx --out": (["-o", "{tmp}/t.xlsx"], "t.xlsx does not end in .csv, .tsv, .parquet"),
    ".xlsx --out with --force": (["-o", "{tmp}/t.xlsx", "--force"], "does not end in .csv"),
    ".xlsx --workers-out": (["--workers-out", "{tmp}/w.xlsx"], "--workers-out: "),
    ".json --out": (["-o", "{tmp}/t.json"], "--out: "),
    "no suffix --out": (["-o", "{tmp}/tasks"], "--out: "),
    ".pkl --save-model": (["--save-model", "{tmp}/m.pkl"], "m.pkl does not end in .npz"),
}


@pytest.mark.parametrize("case", BAD_NAMES)
def test_an_output_name_of_no_known_format_is_refused(case, labels_file, tmp_path, capsys):
    options, shown = BAD_NAMES[case]
    options = [word.format(tmp=tmp_path) for word in options]
    before = sorted(os.listdir(tmp_path))
    code, out, stderr = run(["labels", "fit", labels_file, "--model", "mv", *options], capsys)
    assert code == 2 and shown in one_error_line(stderr)
    assert out == "" and sorted(os.listdir(tmp_path)) == before


@pytest.mark.parametrize("name", ["t.csv", "t.CSV", "t.tsv", "t.csv.gz", "t.tsv.gz"])
def test_the_table_formats_are_accepted(name, labels_file, tmp_path, capsys):
    out = tmp_path / name
    code, _, _ = run(["labels", "fit", labels_file, "--model", "mv", "-o", out, "-q"], capsys)
    assert code == 0 and out.stat().st_size > 0


def test_a_report_is_named_html(labels_file, tmp_path, capsys):
    code, _, stderr = run(["report", "labels", labels_file, "-o", tmp_path / "r.csv"], capsys)
    assert code == 2 and "r.csv does not end in .html" in one_error_line(stderr)


def test_a_dangling_symlink_is_replaced_only_with_force(labels_file, tmp_path, capsys):
    link, target = tmp_path / "out.csv", tmp_path / "nowhere" / "target.csv"
    link.symlink_to(target)
    command = ["labels", "fit", labels_file, "--model", "mv", "-q", "-o", link]
    code, _, stderr = run(command, capsys)
    assert code == 2 and "is a symbolic link to" in one_error_line(stderr)
    assert link.is_symlink() and os.readlink(link) == str(target)
    code, _, _ = run([*command, "--force"], capsys)
    assert code == 0 and not link.is_symlink() and link.stat().st_size > 0
    assert not target.parent.exists()  # the link was replaced, never followed


# ---------------------------------------------------------------------------- whole numbers
#: options of ``labels fit`` (or the command given) -> a piece of the message
BAD_NUMBERS = {
    "--max-iter 20 digits": (
        ["--model", "ds", "--max-iter", "99999999999999999999"],
        "--max-iter must be at most 1,000,000,000; got 99999999999999999999",
    ),
    "--max-iter 5000 digits": (
        ["--model", "ds", "--max-iter", "9" * 5000],
        "--max-iter must be a whole number; got '9999",
    ),
    "--seed 2**70": (
        ["--model", "mv", "--seed", str(2**70)],
        f"--seed must be at most 4,294,967,295; got {2**70}",
    ),
    "--seed 2**32": (["--model", "mv", "--seed", str(2**32)], "--seed must be at most"),
    "--seed -1": (["--model", "mv", "--seed", "-1"], "--seed must be at least 0; got -1"),
    "--chains 10**10": (
        ["--model", "hierarchical", "--chains", "10000000000"],
        "--chains must be at most 1,000,000,000",
    ),
    "--samples 10**12": (
        ["--model", "hierarchical", "--samples", str(10**12)],
        "--samples must be at most",
    ),
}


@pytest.mark.parametrize("case", BAD_NUMBERS)
def test_a_whole_number_out_of_range_is_refused_naming_the_bound(
    case, labels_file, capsys, tmp_path
):
    options, shown = BAD_NUMBERS[case]
    code, _, stderr = run(["labels", "fit", labels_file, *options, "-q"], capsys)
    line = one_error_line(stderr)
    assert code == 2 and shown in line, line
    assert len(line) <= 1000 + len("crowdbayes: error: ")


@pytest.mark.parametrize(
    "argv, shown",
    [
        (["labels", "next", "{f}", "--n", str(10**12)], "--n must be at most 1,000,000,000"),
        (
            ["report", "labels", "{f}", "--model", "mv", "--bootstrap", str(10**20)],
            "--bootstrap must be at most 1,000,000,000",
        ),
    ],
    ids=["labels next --n", "report --bootstrap"],
)
def test_every_command_bounds_its_whole_numbers(argv, shown, labels_file, capsys):
    code, _, stderr = run([word.format(f=labels_file) for word in argv], capsys)
    assert code == 2 and shown in one_error_line(stderr)


def test_the_largest_seed_is_accepted(labels_file, capsys):
    command = ["labels", "fit", labels_file, "--model", "mv", "-q", "--seed", str(2**32 - 1)]
    assert run(command, capsys)[0] == 0


# ---------------------------------------------------------------------------- capacity
@pytest.fixture(scope="module")
def many_classes(tmp_path_factory):
    """The issue's input: 10,000 classes in 40,000 rows."""
    i = np.arange(40_000)
    frame = pd.DataFrame({"task": i % 20_000, "worker": i % 50, "label": i % 10_000})
    path = tmp_path_factory.mktemp("many") / "many.csv"
    frame.to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize(
    "command",
    [
        ["labels", "fit", "--model", "mv"],
        ["labels", "fit", "--model", "ds"],
        ["labels", "fit", "--model", "bayes-ds"],
        ["labels", "fit"],  # the default model (hierarchical)
        ["report", "labels", "-o", "{tmp}/r.html"],
    ],
    ids=["mv", "ds", "bayes-ds", "default", "report"],
)
def test_ten_thousand_classes_are_refused_at_once(
    command, many_classes, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv(ENV_VAR, "4GiB")
    argv = [command[0], command[1], many_classes, *command[2:], "-q", "--no-progress"]
    start = time.perf_counter()
    code, out, stderr = run([word.format(tmp=tmp_path) for word in argv], capsys)
    seconds = time.perf_counter() - start
    line = one_error_line(stderr)
    assert code == 2 and "10,000 classes needs at least" in line and "GiB" in line
    assert "more than the 4.0 GiB allowed" in line and out == ""
    assert seconds < 10  # reading the file and imports included; the check takes microseconds
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------- saved arrays
def _fitted(cls):
    rng = np.random.default_rng(1)
    rows = [(t, w, int(rng.integers(1, 4))) for t in range(40) for w in range(5)]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    labels = Labels(frame, ordered=cls is OrdinalDawidSkene)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls().fit(labels), labels


#: every model of saved statistics, with each update it takes (by its tags)
UPDATES = [
    (cls, update)
    for cls in (DawidSkene, BayesianDawidSkene, OrdinalDawidSkene)
    for update, tag in (("warm start", "warm_start"), ("partial_fit", "partial_fit"))
    if getattr(cls().tags, tag)
]


@pytest.mark.parametrize("cls, update", UPDATES, ids=lambda x: getattr(x, "__name__", x))
@pytest.mark.parametrize("broken", ["per-worker rows", "class totals", "worker statistics"])
def test_arrays_of_the_wrong_shape_are_named_not_an_index_error(cls, update, broken):
    model, labels = _fitted(cls)
    first, second = cls.primary
    if broken == "per-worker rows":
        model.globals_[first] = model.globals_[first][:2]
        expected = f"globals_['{first}'] has shape"
    elif broken == "class totals":
        model.globals_[second] = model.globals_[second][:1]
        expected = f"globals_['{second}'] has shape (1,), expected (3,)"
    else:
        model.stats_["confusion"] = model.stats_["confusion"][:, :1]
        expected = "stats_['confusion'] has shape (5, 1, 3), expected (5, 3, 3)"
    new = pd.DataFrame({"task": [100, 100], "worker": [0, 1], "label": [1, 2]})
    with pytest.raises(ValueError, match="5 workers and 3 classes") as refused:
        if update == "warm start":
            cls().fit(labels, init=model)
        else:
            model.partial_fit(new)
    assert expected in str(refused.value) and update in str(refused.value)
