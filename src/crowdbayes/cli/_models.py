"""The model tables behind the ``fit`` commands: each model declared once.

A command family (``labels``, ``rank``, ``prefs``, ``cluster``) lists its models as
:class:`ModelSpec` rows — the name on the command line, the estimator class, a one-line help,
the options that apply to it — and its options as :class:`Option` rows (flag, the estimator
parameter it sets, help, how the text is read). From that one table come the ``--model``
choices and default, the ``--help`` epilog, the option flags, the estimator built from the
parsed arguments (an option given to a model it does not apply to is refused by name), and the
README's model tables (:func:`readme_tables`; a test compares them with the README).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._common import CommandError

__all__ = ["Option", "ModelSpec", "ModelTable", "readme_tables", "TABLES"]


@dataclass(frozen=True)
class Option:
    """A command-line option that sets one estimator parameter.

    ``read`` turns the text into the parameter value (raising ``CommandError`` with the flag's
    name on bad text); ``choices`` limits the text. ``argparse`` sees every option as optional
    text with no default, so a model's own default applies unless the option is given.
    """

    flag: str
    param: str
    help: str
    read: Callable[[str], Any] = str
    choices: tuple[str, ...] | None = None
    metavar: str | None = None


@dataclass(frozen=True)
class ModelSpec:
    """One model of a command: its name, estimator (``"module:Class"``, imported when used, so
    that e.g. torch is imported only for the deep models), help line, the flags of the options
    that apply, and the values the command line sets unlike the Python defaults."""

    name: str
    estimator: str
    help: str
    options: tuple[str, ...] = ()
    cli_defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def class_name(self) -> str:
        return self.estimator.rsplit(":", 1)[1]

    def load_class(self) -> type:
        module, name = self.estimator.rsplit(":", 1)
        return getattr(importlib.import_module(module), name)


class ModelTable:
    """The models of one ``<command> fit`` and the options they take."""

    def __init__(
        self,
        command: str,
        models: Sequence[ModelSpec],
        options: Sequence[Option],
        default: str,
    ) -> None:
        self.command = command
        self.models = {spec.name: spec for spec in models}
        self.options = {option.flag: option for option in options}
        self.default = default
        unknown = {f for spec in models for f in spec.options} - set(self.options)
        if unknown or default not in self.models:
            raise ValueError(f"{command}: unknown option(s) {sorted(unknown)} or default")

    # ------------------------------------------------------------------ the parser
    def epilog(self) -> str:
        width = max(map(len, self.models)) + 2
        lines = [
            f"  {name:<{width}}{spec.help}" + (" (default)" if name == self.default else "")
            for name, spec in self.models.items()
        ]
        return "models:\n" + "\n".join(lines)

    def add_arguments(self, parser: argparse.ArgumentParser, title: str | None = None) -> None:
        """``--model`` and every option of the table (each once), on ``parser``."""
        parser.add_argument(
            "--model",
            choices=list(self.models),
            default=self.default,
            help=f"the model (default {self.default}; see below)",
        )
        group = parser.add_argument_group(title or "model options")
        for option in self.options.values():
            users = [name for name, spec in self.models.items() if option.flag in spec.options]
            group.add_argument(
                option.flag,
                dest=_dest(option.flag),
                default=None,
                choices=option.choices,
                metavar=option.metavar,
                help=f"{option.help} [{', '.join(users)}]",
            )

    # ------------------------------------------------------------------ the estimator
    def spec(self, name: str) -> ModelSpec:
        return self.models[name]

    def given(self, args: argparse.Namespace) -> dict[str, str]:
        """The options of the table given on the command line, by flag."""
        values = {flag: getattr(args, _dest(flag), None) for flag in self.options}
        return {flag: value for flag, value in values.items() if value is not None}

    def make(self, args: argparse.Namespace, **common: Any) -> Any:
        """The estimator of ``args.model`` with the options given and ``common`` settings
        (``random_state``, ``progress``: set where the estimator has the parameter)."""
        spec = self.spec(args.model)
        for flag in self.given(args):
            if flag not in spec.options:
                users = [n for n, s in self.models.items() if flag in s.options]
                raise CommandError(f"{flag} applies to {', '.join(users)}, not {spec.name}")
        cls = spec.load_class()
        names = set(cls._param_names())
        params = {k: v for k, v in common.items() if k in names}
        params.update(spec.cli_defaults)
        for flag, text in self.given(args).items():
            option = self.options[flag]
            params[option.param] = option.read(text)
        return cls(**params)

    # ------------------------------------------------------------------ the README
    def markdown(self) -> str:
        """The README table of this command's models."""
        rows = [
            f"| `{name}` | `{spec.class_name}` | {spec.help}"
            + (" (default)" if name == self.default else "")
            + f" | {', '.join(f'`{flag}`' for flag in spec.options) or '—'} |"
            for name, spec in self.models.items()
        ]
        header = f"| `crowdbayes {self.command} fit --model` | class | what it is | options |"
        return "\n".join([header, "| --- | --- | --- | --- |", *rows])


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


# ---------------------------------------------------------------------------- readers
def positive_int(flag: str) -> Callable[[str], int]:
    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise CommandError(f"{flag} must be a whole number; got {text!r}") from None
        if value < 1:
            raise CommandError(f"{flag} must be at least 1; got {value}")
        return value

    return read


def non_negative_int(flag: str) -> Callable[[str], int]:
    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise CommandError(f"{flag} must be a whole number; got {text!r}") from None
        if value < 0:
            raise CommandError(f"{flag} must be at least 0; got {value}")
        return value

    return read


def positive_float(flag: str, *, words: tuple[str, ...] = ()) -> Callable[[str], Any]:
    """A positive number, or one of ``words`` (e.g. ``auto``)."""

    def read(text: str) -> Any:
        if text in words:
            return text
        alternatives = "".join(f" or {w!r}" for w in words)
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (np.isfinite(value) and value > 0):
            raise CommandError(f"{flag} must be a positive number{alternatives}; got {text!r}")
        return value

    return read


def non_negative_float(flag: str) -> Callable[[str], float]:
    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (np.isfinite(value) and value >= 0):
            raise CommandError(f"{flag} must be a non-negative number; got {text!r}")
        return value

    return read


def layer_widths(flag: str) -> Callable[[str], tuple[int, ...]]:
    """Comma-separated widths of hidden layers, e.g. ``500,500``."""

    def read(text: str) -> tuple[int, ...]:
        try:
            widths = tuple(int(part) for part in text.split(","))
        except ValueError:
            widths = ()
        if not widths or min(widths) < 1:
            raise CommandError(
                f"{flag} must be positive whole numbers separated by commas (e.g. 500,500); "
                f"got {text!r}"
            )
        return widths

    return read


#: filled by the command modules
TABLES: dict[str, ModelTable] = {}
#: the order of the README
_README_ORDER = ("labels", "values", "rank", "prefs", "cluster")


def readme_tables() -> str:
    """Every command's model table, as in the README."""
    return "\n\n".join(TABLES[name].markdown() for name in _README_ORDER)
