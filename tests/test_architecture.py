"""The shape of the house, checked on the code itself (issue 39).

- Above the models (``crowdbayes.cli``, ``crowdbayes.report``) nobody asks which model they
  hold: no ``hasattr``/``getattr`` on a model, no ``isinstance`` against an estimator class, no
  comparison of class names or of model families; the models' capability tags and the result
  contracts of their roles (:mod:`crowdbayes.roles`) say what a caller needs. Checks of data
  containers and argparse objects stay allowed.
- ``import crowdbayes`` and building the command line's parser import neither torch,
  matplotlib, dask, scikit-learn nor scipy.stats (nor numpy and pandas, for the parser): the
  command line answers ``--help`` in a blink.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import crowdbayes
from crowdbayes.base import Estimator

SRC = Path(crowdbayes.__file__).resolve().parent
ABOVE_THE_MODELS = sorted(
    [*SRC.joinpath("cli").rglob("*.py"), *SRC.joinpath("report").rglob("*.py")]
)
#: names of the objects whose attributes may be probed: argparse namespaces and parsers, data
#: containers and tables, modules, the command line's records
ALLOWED_SUBJECTS = {
    "args",
    "namespace",
    "parser",
    "action",
    "data",
    "labels",
    "links",
    "rankings",
    "comparisons",
    "values",
    "inputs",
    "table",
    "frame",
    "family",
    "module",
    "package",
}


def _estimator_names() -> set[str]:
    """Every estimator class, role and family base, by name."""
    crowdbayes.list_models()
    names, stack = set(), [Estimator]
    while stack:
        cls = stack.pop()
        names.add(cls.__name__)
        stack.extend(cls.__subclasses__())
    return names


ESTIMATORS = _estimator_names()


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _subject(node: ast.AST) -> str | None:
    """The name a probe looks into: ``x`` of ``hasattr(x, ...)`` (``None`` for a call, e.g.
    ``getattr(importlib.import_module(name), attr)``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def probes(tree: ast.AST) -> list[tuple[int, str]]:
    """The lines of ``tree`` that ask which model they hold, and why."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name, args = node.func.id, node.args
            if name in ("hasattr", "getattr") and args:
                subject = _subject(args[0])
                if subject is not None and subject not in ALLOWED_SUBJECTS:
                    found.append((node.lineno, f"{name}({subject}, ...)"))
            if name == "isinstance" and len(args) == 2:
                classes = _names_in(args[1]) & ESTIMATORS
                if classes:
                    found.append((node.lineno, f"isinstance(..., {sorted(classes)})"))
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            attributes = {
                n.attr for side in sides for n in ast.walk(side) if isinstance(n, ast.Attribute)
            }
            if attributes & {"__name__", "class_name", "family", "__class__"}:
                found.append((node.lineno, "a comparison of class names or model families"))
            calls = [
                side
                for side in sides
                if isinstance(side, ast.Call)
                and isinstance(side.func, ast.Name)
                and side.func.id == "type"
            ]
            if calls:
                found.append((node.lineno, "a comparison of types"))
    return sorted(found)


@pytest.mark.parametrize("path", ABOVE_THE_MODELS, ids=lambda p: str(p.relative_to(SRC)))
def test_nothing_above_the_models_asks_which_model_it_holds(path):
    found = probes(ast.parse(path.read_text(encoding="utf-8")))
    assert not found, f"{path.relative_to(SRC)}: " + "; ".join(f"line {n}: {w}" for n, w in found)


@pytest.mark.parametrize(
    "code, expected",
    [
        ("hasattr(model, 'coef_')", "hasattr(model, ...)"),
        ("getattr(self.model, 'eta_', None)", "getattr(model, ...)"),
        ("isinstance(model, CrowdGPPL)", "isinstance(..., ['CrowdGPPL'])"),
        ("isinstance(m, (FeatureModel, int))", "isinstance(..., ['FeatureModel'])"),
        ("type(model).__name__ == 'MajorityVote'", "a comparison of class names"),
        ("spec.class_name == name", "a comparison of class names"),
        ("model.family == 'labels'", "model families"),
        ("type(a) is type(b)", "a comparison of types"),
    ],
)
def test_the_probe_finder_finds_probes(code, expected):
    found = probes(ast.parse(code))
    assert found and expected in found[0][1]


@pytest.mark.parametrize(
    "code",
    [
        "getattr(args, 'features', None)",
        "hasattr(namespace, 'parser_')",
        "isinstance(data, Labels)",
        "isinstance(value, (int, float))",
        "model.tags.judgment == 'labels'",
        "getattr(importlib.import_module(module), name)",
        "f'{type(model).__name__} failed'",
    ],
)
def test_the_probe_finder_allows_data_and_argparse_checks(code):
    assert probes(ast.parse(code)) == []


#: what neither ``import crowdbayes`` nor the command line's parser may import
HEAVY = ("torch", "matplotlib", "dask", "sklearn", "scipy.stats")


def _imported_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_import_crowdbayes_imports_nothing_heavy():
    modules = _imported_after("import crowdbayes")
    assert not {m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY}
    assert "numpy" not in modules and "pandas" not in modules


def test_the_command_line_parser_imports_nothing_heavy():
    modules = _imported_after(
        "from crowdbayes.cli import _parser\n_parser()\n"
        "import crowdbayes.cli._models as m\nm.readme_tables()"
    )
    heavy = {m for m in modules if m in HEAVY or m.split(".")[0] in HEAVY[:4]}
    assert not heavy, heavy
    assert "numpy" not in modules and "pandas" not in modules


def test_the_import_check_can_fail():
    assert "scipy.stats" in _imported_after("import scipy.stats")
