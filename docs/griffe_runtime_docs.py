"""Griffe extension for the API pages: a class whose docstring holds a ``{placeholder}`` line,
filled in when its module is imported (the GP preference models share one parameter list this
way), is documented with the docstring it has at run time, not the template in its source."""

from __future__ import annotations

import importlib
import inspect
import re

import griffe

_PLACEHOLDER = re.compile(r"^\s*\{\w+\}\s*$", re.MULTILINE)


class RuntimeDocstrings(griffe.Extension):
    """Replace a templated class docstring by the imported class's ``__doc__``."""

    def on_class_instance(self, *, node, cls: griffe.Class, agent, **kwargs) -> None:
        if cls.docstring is None or not _PLACEHOLDER.search(cls.docstring.value):
            return
        runtime = getattr(importlib.import_module(cls.module.path), cls.name)
        cls.docstring.value = inspect.cleandoc(runtime.__doc__)
