"""Property-based tests: malformed tables of every input type through the command line.

For each input (labels, gold, rankings, features, links, comparisons) hypothesis draws a tiny
valid table and then either

- spells it differently (BOM, Windows line endings, quoted fields, another column order): the
  command must give byte for byte the output of the clean table;
- breaks it (empty, header only, a NumPy array, binary, a required column missing or blank, a
  ragged row, text in a number column): exit status 2, one line naming the file, no output;
- mangles it (a cell of arbitrary text, a run of arbitrary bytes): valid or not, never a
  traceback; an error is one line naming the file (or the other file it no longer agrees
  with), and leaves no output.

500 derandomised cases per input type (``CROWDBAYES_FUZZ_EXAMPLES`` sets another number).
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdbayes.cli import main
from fuzz_tables import INPUT_TYPES, InputType, broken, mangled, render, spellings

# 500 cases per input type take about a minute and a half: run by `make test` (CI), not by
# `make test-fast`
pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("CROWDBAYES_FUZZ_EXAMPLES", "500"))


def run(kind: InputType, content: bytes, folder: Path) -> tuple[int, str, bytes | None]:
    """Exit status, stderr and the output's bytes (None: no output) of the command on a
    file holding ``content``."""
    for name, side in kind.side_files.items():
        (folder / name).write_bytes(side)
    fuzzed, out = folder / f"{kind.name}.csv", folder / "out.csv"
    fuzzed.write_bytes(content)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main([*kind.argv(fuzzed, folder, out), "--force"])
    written = out.read_bytes() if out.exists() else None
    for path in folder.iterdir():
        path.unlink()
    return code, err.getvalue(), written


def assert_refused(
    code: int, err: str, written: bytes | None, names: tuple[str, ...], what: str
) -> None:
    """Exit status 2, one error line (the last: warnings may come before) naming one of
    ``names``, and no output."""
    lines = err.strip().splitlines()
    errors = [line for line in lines if line.startswith("crowdbayes: error:")]
    assert code == 2, (what, err)
    assert len(errors) == 1 and errors[0] == lines[-1], (what, err)
    assert any(name in errors[0] for name in names), (what, errors[0])
    assert written is None, what


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.parametrize("name", list(INPUT_TYPES))
@settings(
    derandomize=True,
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_fuzzed_input(name, data, scratch):
    kind = INPUT_TYPES[name]
    table = data.draw(kind.tables, label="table")
    case = data.draw(st.sampled_from(["spelling", "broken", "mangled"]), label="case")
    folder = scratch / name
    folder.mkdir(exist_ok=True)
    if case == "spelling":
        clean = run(kind, render(table), folder)
        assert clean[0] == 0, clean[1]
        spelling = data.draw(spellings(len(table.columns), kind.ordered), label="spelling")
        respelled = run(kind, render(table, spelling), folder)
        assert respelled[0] == clean[0] and respelled[2] == clean[2], (spelling, respelled)
        return
    strategy = broken(table, kind) if case == "broken" else mangled(table)
    what, content = data.draw(strategy, label=case)
    code, err, written = run(kind, content, folder)
    assert "Traceback" not in err
    if case == "broken":
        assert_refused(code, err, written, (f"{kind.name}.csv",), what)
    elif code != 0:  # a mangled cell may break the table's agreement with another file
        assert_refused(code, err, written, (f"{kind.name}.csv", *kind.side_files), what)
