"""Outputs safe for whoever opens them: ids and labels a spreadsheet would run as formulas are
warned about or escaped (OWASP), terminal escape codes in labels are printed inert, the longest
output names a directory allows can be written, and the Dask backend refuses a CSV input in one
line, before any worker prints a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

from crowdbayes.cli import main
from crowdbayes.cli._safety import FormulaCells, escape_formulas, formula_cells, terminal_safe

FORMULAS = ['=HYPERLINK("http://x")', "+t", "@SUM(A1)", "-cmd|' /C calc'!A0", "\rcr"]
HARMLESS = ["-1.5", "+3", "t7", "a=b", "-inf"]
ESCAPE = "\x1b[2J"  # an ANSI sequence: clear the screen
CROWDBAYES = [sys.executable, "-c", "import sys; from crowdbayes.cli import main; sys.exit(main())"]


@pytest.fixture
def risky_file(tmp_path):
    rows = [
        (task, worker, label)
        for task in FORMULAS + HARMLESS
        for worker, label in [("w1", "yes"), ("@w2", f"{ESCAPE}no"), ("w3", "yes")]
    ]
    path = tmp_path / "risky.csv"
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(path, index=False)
    return path


def fit(path, *options):
    return main(["labels", "fit", str(path), "--model", "mv", "--no-progress", *map(str, options)])


def warnings_in(err: str) -> list[str]:
    return [line for line in err.splitlines() if "spreadsheet" in line]


def test_the_cells_that_start_a_formula():
    table = pd.DataFrame(
        {"label": [*FORMULAS, *HARMLESS], "p": [-1.5] * 10},
        index=pd.Index([*HARMLESS, *FORMULAS], name="=id"),
    )
    found = formula_cells(table)
    assert found.count == 2 * len(FORMULAS) + 1  # the index name "=id" too
    assert found.example == FORMULAS[0]
    escaped = escape_formulas(table)
    assert list(escaped["label"]) == [f"'{v}" for v in FORMULAS] + HARMLESS
    assert list(escaped.index) == HARMLESS + [f"'{v}" for v in FORMULAS]
    assert escaped.index.name == "'=id" and list(escaped["p"]) == [-1.5] * 10
    assert formula_cells(escaped).count == 0
    assert list(table["label"]) == [*FORMULAS, *HARMLESS]  # the original is left alone
    assert formula_cells(pd.DataFrame({"x": [1.0, -2.0]}, index=[-1, -2])).count == 0
    integers = pd.DataFrame({"x": pd.Series([1, -2], dtype=object)}, index=["a", "-b"])
    assert formula_cells(integers) == FormulaCells(1, "-b")


def test_formulas_are_warned_about_and_written_as_they_are(risky_file, tmp_path, capsys):
    tasks, workers = tmp_path / "t.csv", tmp_path / "w.csv"
    assert fit(risky_file, "-o", tasks, "--workers-out", workers) == 0
    err = warnings_in(capsys.readouterr().err)
    assert len(err) == 2, err
    # "\r" at the start of an id is stripped when the labels are read: 4 ids are left
    assert err[0].startswith(f"crowdbayes: warning: {tasks}: 4 id(s) or label(s) start with")
    assert "--escape-formulas" in err[0] and "HYPERLINK" in err[0]
    assert err[1].startswith(f"crowdbayes: warning: {workers}: ")
    written = pd.read_csv(tasks, dtype=str, keep_default_na=False)
    assert set(FORMULAS[:4]) <= set(written["task"]) and "-1.5" in set(written["task"])


def test_escape_formulas_prefixes_them_with_a_quote(risky_file, tmp_path, capsys):
    tasks, workers = tmp_path / "t.csv", tmp_path / "w.csv"
    assert fit(risky_file, "-o", tasks, "--workers-out", workers, "--escape-formulas") == 0
    assert warnings_in(capsys.readouterr().err) == []
    written = pd.read_csv(tasks, dtype=str, keep_default_na=False)
    assert {f"'{v}" for v in FORMULAS[:4]} <= set(written["task"])
    assert set(HARMLESS) <= set(written["task"])
    assert "'@w2" in set(pd.read_csv(workers, dtype=str)["worker"])


def test_stdout_is_checked_too_and_parquet_is_left_typed(risky_file, tmp_path, capsys):
    assert fit(risky_file) == 0
    captured = capsys.readouterr()
    assert len(warnings_in(captured.err)) == 1 and "stdout: " in captured.err
    assert fit(risky_file, "--escape-formulas") == 0
    assert "\n'@SUM(A1)," in capsys.readouterr().out
    pytest.importorskip("pyarrow")
    out = tmp_path / "t.parquet"
    assert fit(risky_file, "-o", out) == 0
    assert warnings_in(capsys.readouterr().err) == []
    assert set(FORMULAS[:4]) <= set(pd.read_parquet(out).index)


def test_escape_formulas_in_next(risky_file, tmp_path, capsys):
    out = tmp_path / "next.csv"
    command = ["labels", "next", str(risky_file), "--model", "ds", "--n", "11", "--no-progress"]
    assert main([*command, "-o", str(out), "--escape-formulas"]) == 0
    capsys.readouterr()
    questions = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert "'+t" in set(questions.to_numpy().ravel())
    assert formula_cells(questions).count == 0


def test_terminal_escapes_in_labels_are_printed_inert(risky_file, tmp_path, capsys):
    assert fit(risky_file, "-o", tmp_path / "t.csv") == 0
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out and "\x1b" not in captured.err
    assert "prevalence  \\x1b[2Jno: " in captured.out
    assert (
        terminal_safe("a\x1b]0;title\x07\u202eb\r\nc\td") == "a\\x1b]0;title\\x07\\u202eb\\r\nc\\td"
    )


@pytest.mark.parametrize("length", [251, 255])
def test_the_longest_output_names(risky_file, tmp_path, capsys, length):
    names = {
        flag: "x" * (length - len(suffix) - 1) + flag[2] + suffix
        for flag, suffix in [("--out", ".csv"), ("--workers-out", ".csv"), ("--save-model", ".npz")]
    }
    options = [str(v) for flag, name in names.items() for v in (flag, tmp_path / name)]
    assert fit(risky_file, *options, "--quiet") == 0, capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["risky.csv", *names.values()])


def test_dask_backend_refuses_a_csv_in_one_line(risky_file, tmp_path):
    pytest.importorskip("distributed")
    command = [*CROWDBAYES, "labels", "fit", str(risky_file)]
    command += ["--model", "ds", "--backend", "dask", "-o", str(tmp_path / "tasks")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == (
        f"crowdbayes: error: labels: file {risky_file} is not a readable Parquet file (it does "
        "not start with PAR1); --backend dask reads Parquet: for a CSV or TSV file use "
        "--backend memory\n"
    )
    assert sorted(os.listdir(tmp_path)) == ["risky.csv"]


@pytest.mark.slow
def test_dask_backend_a_damaged_parquet_file_is_one_line(tmp_path):
    """A file that starts like Parquet and is not: the workers of the local cluster do not print
    the traceback of the failed task."""
    pytest.importorskip("distributed")
    damaged = tmp_path / "labels.parquet"
    damaged.write_bytes(b"PAR1" + b"\0" * 100)
    command = [*CROWDBAYES, "labels", "fit", str(damaged)]
    command += ["--model", "ds", "--backend", "dask", "--dask-workers", "1"]
    command += ["-o", str(tmp_path / "tasks"), "--no-progress"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "is not a readable Parquet file" in done.stderr
    assert sorted(os.listdir(tmp_path)) == ["labels.parquet"]
