"""The catalogue of models the command line offers, declared by the model families.

Each family package (``crowdbayes.models.labels``, ...) lists its models in ``COMMAND_LINE``:
one :class:`ModelEntry` per model — the command that offers it, its name after ``--model``, the
estimator (``"module:Class"``, imported only when used), a one-line help, the flags of the
command's options that apply to it, and any setting the command line chooses unlike the
Python default. So adding a model touches its own module, its family's ``__init__`` (the entry
and the lazy export) and its tests: the command line's ``--model`` choices, ``--help``, the
README's model tables and the report all come from the entries and the model's role.

Reading the catalogue imports the family packages only, never a model: it costs nothing at
the command line's start.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FAMILIES", "ModelEntry", "model_entries"]

#: the model family packages, in the order their models are listed
FAMILIES = (
    "crowdbayes.models.labels",
    "crowdbayes.models.plackett_luce",
    "crowdbayes.models.gp_preference",
    "crowdbayes.models.comparisons",
    "crowdbayes.models.communities",
    "crowdbayes.models.clustering",
)


@dataclass(frozen=True)
class ModelEntry:
    """One model as the command line offers it (module docstring)."""

    command: str
    name: str
    estimator: str
    help: str
    options: tuple[str, ...] = ()
    cli_defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def module(self) -> str:
        return self.estimator.rsplit(":", 1)[0]

    @property
    def class_name(self) -> str:
        return self.estimator.rsplit(":", 1)[1]

    def load_class(self) -> type:
        """The estimator class (importing its module, and what that needs: torch, say)."""
        return getattr(importlib.import_module(self.module), self.class_name)

    def tags(self):
        """The estimator's capability tags (:class:`crowdbayes.base.Tags`)."""
        return self.load_class().tags


def model_entries(command: str) -> list[ModelEntry]:
    """Every model the command ``command`` offers, in the families' order."""
    entries = []
    for family in FAMILIES:
        package = importlib.import_module(family)
        entries += [e for e in getattr(package, "COMMAND_LINE", ()) if e.command == command]
    return entries
