"""Randomness: ``random_state`` resolved once into a generator, and child generators; lazy
re-exports for the packages.

This module imports nothing heavy (not even NumPy) when it is imported, so that any package
``__init__`` and the command line's parser may use :func:`lazy_exports`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import numpy as np

    RandomState = int | np.random.Generator | np.random.SeedSequence | None


def __getattr__(name: str):
    # the type alias needs NumPy's classes; modules import it at run time, so build it then
    if name == "RandomState":
        import numpy as np

        alias = int | np.random.Generator | np.random.SeedSequence | None
        return globals().setdefault(name, alias)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def as_generator(random_state: RandomState) -> np.random.Generator:
    """Resolve ``random_state`` once into a ``numpy.random.Generator`` (never the global state)."""
    import numpy as np

    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def spawn_generators(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """Independent child generators (one per chain or restart), reproducible from ``rng``."""
    return list(rng.spawn(n))


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[list[str], Callable[[str], object], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for a package that re-exports names of its
    submodules without importing those submodules until a name is first used (PEP 562).

    ``exports`` maps a submodule (relative, such as ``".ep"``) to the names the package takes
    from it. A name, once fetched, is stored in the package, so later lookups are plain
    attribute reads. A submodule is also an attribute of the package on first use (as it was
    when the package imported its submodules eagerly). A name that is also the name of its
    submodule (``gp.sparse_ep``, the function) stays the export even after the submodule is
    imported, as it did when the package bound it last.
    """
    source = {name: module for module, names in exports.items() for name in names}
    clashes = {name: module for name, module in source.items() if module == f".{name}"}
    if clashes:
        # the import system sets a submodule on its package once loaded; a data descriptor on
        # the package's class outranks that attribute (and ignores the setting)
        namespace = {name: _Export(module, name) for name, module in clashes.items()}
        sys.modules[package].__class__ = type("LazyPackage", (types.ModuleType,), namespace)

    def __getattr__(name: str) -> object:
        namespace = sys.modules[package].__dict__
        if name in source:
            value = getattr(importlib.import_module(source[name], package), name)
            return namespace.setdefault(name, value)
        full = f"{package}.{name}"
        if not name.startswith("__") and importlib.util.find_spec(full) is not None:
            return importlib.import_module(full)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(sys.modules[package].__dict__) | set(source))

    return list(source), __getattr__, __dir__


class _Export:
    """A package's export named like the submodule that defines it (see :func:`lazy_exports`)."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __get__(self, package: types.ModuleType | None, owner: type | None = None) -> object:
        if package is None:
            return self
        return getattr(importlib.import_module(self.module, package.__name__), self.name)

    def __set__(self, package: types.ModuleType, value: object) -> None:
        pass
