"""Issue 39: importing the lower layers (the data containers and the engines under the models)
imports none of the heavy dependencies; the functions that need one import it when they run.

Each check runs in a fresh interpreter, since this one has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: the packages whose every module must import light (the distributed backend's modules
#: import the models they run, so only its package is checked)
PACKAGES = ("data", "annotators", "inference", "kernels", "gp", "metrics", "datasets")
MODULES = ("maths", "linalg", "persistence", "_utils", "exceptions", "model_selection")
HEAVY = (
    "scipy.special",
    "scipy.stats",
    "scipy.optimize",
    "scipy.linalg",
    "scipy.sparse",
    "scipy.integrate",
    "scipy.spatial",
    "scipy.fft",
    "torch",
    "matplotlib",
    "dask",
    "distributed",
    "sklearn",
    "tqdm",
)


def _imported_after(code: str) -> set[str]:
    """The modules in ``sys.modules`` after a fresh interpreter runs ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_no_module_of_the_lower_layers_imports_a_heavy_dependency():
    code = "\n".join(
        [
            "import importlib, pkgutil",
            *(f"import crowdbayes.{name}" for name in (*MODULES, "distributed")),
            f"for package in {PACKAGES!r}:",
            "    module = importlib.import_module('crowdbayes.' + package)",
            "    for info in pkgutil.iter_modules(module.__path__, module.__name__ + '.'):",
            "        importlib.import_module(info.name)",
        ]
    )
    imported = _imported_after(code)
    assert "crowdbayes.gp.strategies" in imported and "crowdbayes.data.labels" in imported
    assert sorted(imported & set(HEAVY)) == []


def test_packages_and_the_exceptions_import_nothing_numeric():
    """The command line's parser may use them (the warning classes, the names of the question
    strategies) without NumPy, pandas or SciPy."""
    code = "\n".join(
        f"import crowdbayes.{name}"
        for name in (*PACKAGES, "distributed", "exceptions", "_utils", "gp.question_strategies")
    )
    imported = _imported_after(code)
    assert sorted(imported & {"numpy", "pandas", "scipy"}) == []


def test_a_lazy_name_is_the_one_its_module_defines():
    from crowdbayes import gp
    from crowdbayes.gp import EP, sparse_ep
    from crowdbayes.gp.sparse_ep import sparse_ep as defined
    from crowdbayes.gp.strategies import EP as strategy

    assert EP is strategy
    assert sparse_ep is defined and gp.sparse_ep is defined  # the function, not its module
    assert "sparse_ep" in gp.__all__ and "EP" in dir(gp)
    assert gp.strategies.EP is EP  # a submodule is an attribute of its package, as it was
