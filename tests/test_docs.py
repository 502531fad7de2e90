"""Every code block of the README and of docs/ runs, and the generated parts of the site are whole.

The blocks of a page run in order in one temporary folder, Python blocks in one namespace, so a
page reads like a session: ``crowdbayes datasets copy comparisons`` in one block makes the files
the next blocks use. How a block is treated:

- ``python``: executed; ``bash``: every ``crowdbayes`` command run (in this process, through
  :func:`crowdbayes.cli.main`, which must return 0), anything else refused;
- ``csv`` (or ``tsv``) after ``<!-- file: NAME -->``: written to NAME for the next blocks;
- after ``<!-- no-run: REASON -->`` (REASON one of :data:`NO_RUN`: a GPU, a Dask cluster, a long
  benchmark, the shared data, an installation step): Python only parsed; each ``crowdbayes``
  command parsed by the real parser, each ``make`` target, ``pip`` extra and script path
  checked to exist;
- ``text`` and ``console`` blocks (output shown, generated help) are not code and are left.

The site itself is built by ``make docs`` (``mkdocs build --strict``), which ``make test`` runs.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from crowdbayes.cli import _parse, main

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
#: why a block may be left unrun
NO_RUN = {
    "gpu": "needs a GPU",
    "dask": "needs a Dask cluster or Parquet folders",
    "long": "a long fit or benchmark",
    "shared-data": "needs CROWDBAYES_DATA",
    "install": "installs or builds",
}
CODE = {"python", "bash"}
DATA = {"csv", "tsv"}
SHOWN = {"text", "console"}
README_LIMIT = 12_000
#: pages whose blocks take long enough to leave out of ``make test-fast`` (several fits and
#: HTML reports: about 40 s on a loaded 2-core machine)
SLOW_PAGES = {"docs/report.md"}

_FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_NO_RUN = re.compile(r"<!-- no-run: ([a-z-]+) -->\s*$")
_FILE = re.compile(r"<!-- file: ([\w.-]+) -->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    before: str  # the line just above the fence

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def no_run(self) -> str | None:
        match = _NO_RUN.search(self.before)
        return match.group(1) if match else None

    @property
    def file(self) -> str | None:
        match = _FILE.search(self.before)
        return match.group(1) if match else None


def _page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        above = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        found.append(Block(page, line, match.group(1), match.group(2), above))
    return found


def commands(block: Block) -> list[list[str]]:
    """The shell commands of a block: continuation lines joined, comments dropped, a pipe's
    first command kept, leading ``VAR=value`` assignments dropped."""
    text = block.text.replace("\\\n", " ")
    result = []
    for line in text.splitlines():
        words = shlex.split(line.split(" | ")[0], comments=True)
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
            words = words[1:]
        if words:
            result.append(words)
    return result


def _crowdbayes_args(words: list[str]) -> list[str] | None:
    if Path(words[0]).name == "crowdbayes":
        return words[1:]
    return None


def _check_without_running(block: Block, words: list[str]) -> None:
    """A command of a no-run block: parsed, or its target checked."""
    args = _crowdbayes_args(words)
    if args is not None:
        _parse(args)  # the real parser: a wrong option or command exits
    elif words[0] == "make":
        makefile = (REPO / "Makefile").read_text()
        for target in words[1:]:
            assert re.search(rf"^{re.escape(target)}:", makefile, re.MULTILINE), (
                f"{block.where}: no make target {target!r}"
            )
    elif words[:2] == ["pip", "install"]:
        tomllib = pytest.importorskip("tomllib")  # Python 3.11+
        extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
            "optional-dependencies"
        ]
        for spec in words[2:]:
            if "[" in spec:
                wanted = spec.split("[", 1)[1].rstrip("]").split(",")
                assert set(wanted) <= set(extras), f"{block.where}: unknown extra in {spec}"
    elif words[0] == "source":
        assert words[1] == ".venv/bin/activate", block.where
    elif words[0].endswith("python"):
        script = next(w for w in words[1:] if not w.startswith("-"))
        assert (REPO / script).is_file(), f"{block.where}: no script {script}"
    else:
        pytest.fail(f"{block.where}: cannot check the command {' '.join(words)!r}")


def _run_commands(block: Block) -> None:
    for words in commands(block):
        args = _crowdbayes_args(words)
        assert args is not None, f"{block.where}: only crowdbayes commands run: {words}"
        status = main([*args, "--no-progress"] if "--no-progress" not in args else args)
        assert status == 0, f"{block.where}: `{' '.join(words)}` exited with {status}"


def _run(block: Block, namespace: dict) -> None:
    reason = block.no_run
    if block.lang in DATA:
        assert block.file, f"{block.where}: a {block.lang} block needs <!-- file: NAME --> above"
        Path(block.file).write_text(block.text, encoding="utf-8")
    elif reason is not None:
        assert reason in NO_RUN, f"{block.where}: unknown no-run reason {reason!r}"
        if block.lang == "python":
            ast.parse(block.text, filename=block.where)
        else:
            for words in commands(block):
                _check_without_running(block, words)
    elif block.lang == "python":
        exec(compile(block.text, block.where, "exec"), namespace)
    elif block.lang == "bash":
        _run_commands(block)


@pytest.mark.parametrize(
    "page",
    [pytest.param(p, marks=pytest.mark.slow) if _page_id(p) in SLOW_PAGES else p for p in PAGES],
    ids=_page_id,
)
def test_every_block_of_the_page_runs(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "__docs__"}
    for block in blocks(page):
        assert block.lang in CODE | DATA | SHOWN, (
            f"{block.where}: say the block's language: one of {sorted(CODE | DATA | SHOWN)}"
        )
        _run(block, namespace)
        capsys.readouterr()


def test_pages_have_code_and_markers_are_known():
    """The harness sees the blocks (a fence it misread would run nothing)."""
    every = [b for page in PAGES for b in blocks(page)]
    assert sum(b.lang == "python" and b.no_run is None for b in every) >= 10
    assert sum(b.lang == "bash" and b.no_run is None for b in every) >= 10
    for block in every:
        assert block.no_run is None or block.no_run in NO_RUN, block.where


def test_the_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    assert len(text) < README_LIMIT
    first_screen = text[: text.index("## Install")]
    assert "crowdbayes labels fit labels.csv" in first_screen  # your own file, first
    for target in re.findall(r"\]\(((?:docs/)[^)#]+)\)", text):
        assert (REPO / target).is_file(), f"README links to a missing {target}"
    assert "source .venv/bin/activate" in text.replace("\n", " ")


def test_mentioned_repository_files_exist():
    """A results file or script named in the documentation is there (the benchmarks page
    cites them by path)."""
    pattern = re.compile(r"\b((?:benchmarks|src|tests)/[\w./-]+\.(?:md|py|sh|png|c|csv))\b")
    for page in PAGES:
        for path in pattern.findall(page.read_text(encoding="utf-8")):
            assert (REPO / path).exists(), f"{_page_id(page)} names a missing {path}"


# ------------------------------------------------------------------ the generated parts
def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_has_every_command_and_option():
    from crowdbayes.cli import _parser

    hooks = _hooks()
    text = hooks.cli_reference()
    paths = [path for path, _ in hooks.walk_commands(_parser())]
    assert ("crowdbayes", "labels", "fit") in paths and ("crowdbayes", "datasets", "copy") in paths
    for path, parser in hooks.walk_commands(_parser()):
        assert f"`{' '.join(path)}`" in text
        shown = [a for a in parser._actions if a.help != argparse.SUPPRESS]
        for flag in [f for a in shown for f in a.option_strings if f.startswith("--")]:
            assert flag in text, f"{flag} of {' '.join(path)} missing"
    assert "COLUMNS" not in os.environ or os.environ["COLUMNS"] != str(hooks.HELP_WIDTH)


def test_model_tables_page_shows_the_command_line_tables():
    """Moved from the README: the model tables of the docs are those that build the parser."""
    from crowdbayes.cli._models import readme_tables

    page = (DOCS / "models.md").read_text(encoding="utf-8")
    assert "<!-- generated: model-tables -->" in page
    assert _hooks().expand(page).count(readme_tables()) == 1


def test_api_page_lists_every_model():
    import crowdbayes

    text = _hooks().expand((DOCS / "api" / "models.md").read_text(encoding="utf-8"))
    for cls in crowdbayes.list_models():
        assert f"::: {cls.__module__}.{cls.__name__}\n" in text + "\n"


def test_unknown_marker_is_an_error():
    with pytest.raises(ValueError, match="unknown generated part 'cli-refrence'"):
        _hooks().expand("<!-- generated: cli-refrence -->")


# ------------------------------------------------------------------ the harness itself
def _block(text: str, lang: str = "bash", before: str = "") -> Block:
    return Block(README, 1, lang, text, before)


def test_harness_fails_a_failing_command_and_a_wrong_option(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssertionError, match="exited with 2"):
        _run(_block("crowdbayes labels fit missing.csv -o out.csv\n"), {})
    with pytest.raises(SystemExit):  # parsed only, still checked against the parser
        _run(_block("crowdbayes labels fit x.csv --modle ds\n", before="<!-- no-run: gpu -->"), {})
    with pytest.raises(AssertionError, match="unknown no-run reason"):
        _run(_block("crowdbayes --version\n", before="<!-- no-run: later -->"), {})
    with pytest.raises(AssertionError, match="only crowdbayes commands run"):
        _run(_block("rm -rf /tmp/nothing\n"), {})
    with pytest.raises(ZeroDivisionError):
        _run(_block("1 / 0\n", lang="python"), {})


def test_commands_join_continuations_and_drop_comments_pipes_and_variables():
    block = _block("X=1 crowdbayes a \\\n  b  # note\ncrowdbayes c | head\n# only a comment\n")
    assert commands(block) == [["crowdbayes", "a", "b"], ["crowdbayes", "c"]]
