"""The model tables behind the commands that fit: each model declared once.

The models of a command are the entries the model families declare in their ``COMMAND_LINE``
(:mod:`crowdbayes._catalogue`: the name on the command line, the estimator class, a one-line
help, the options that apply to it); the command declares its options as :class:`Option` rows
(flag, the estimator parameter it sets, help, how the text is read) and its default model.
From that table come the ``--model`` choices and default, the ``--help`` epilog, the option
flags, the estimator built from the parsed arguments (an option given to a model it does not
apply to is refused by name), and the docs' model tables (:func:`readme_tables`; ``docs/hooks.py``
writes them into ``docs/models.md``). A new model needs no change here.
"""

from __future__ import annotations

import argparse
import difflib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._catalogue import ModelEntry, model_entries
from ._common import CommandError

__all__ = [
    "MAX_COUNT",
    "SEED_RANGE",
    "Option",
    "ModelTable",
    "check_integers",
    "readme_tables",
    "TABLES",
    "whole_number",
]


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


class ModelTable:
    """The models of one ``<command> fit`` and the options they take."""

    def __init__(self, command: str, options: Sequence[Option], default: str) -> None:
        self.command = command
        self.options = {option.flag: option for option in options}
        self.default = default

    @property
    def models(self) -> dict[str, ModelEntry]:
        """The command's models, by name: the families' entries (read afresh, so a model
        registered while running, as the tests do, is offered too)."""
        models = {entry.name: entry for entry in model_entries(self.command)}
        unknown = {f for spec in models.values() for f in spec.options} - set(self.options)
        if unknown or self.default not in models:
            raise ValueError(f"{self.command}: unknown option(s) {sorted(unknown)} or default")
        return models

    # ------------------------------------------------------------------ the parser
    def epilog(self, default: str | None = None) -> str:
        """The ``--help`` list of models, ``default`` (else the table's) marked."""
        models = self.models
        default = default or self.default
        width = max(map(len, models)) + 2
        lines = [
            f"  {name:<{width}}{spec.help}" + (" (default)" if name == default else "")
            for name, spec in models.items()
        ]
        return "models:\n" + "\n".join(lines)

    def add_arguments(
        self,
        parser: argparse.ArgumentParser,
        title: str | None = None,
        default: str | None = None,
    ) -> None:
        """``--model`` (default ``default``, else the table's) and every option of the table
        (each once), on ``parser``."""
        models = self.models
        default = default or self.default
        if default not in models:
            raise ValueError(f"{self.command}: unknown default model {default!r}")
        parser.add_argument(
            "--model",
            choices=list(models),
            default=default,
            metavar="MODEL",
            help=f"the model: {', '.join(models)} (default {default}; see below)",
        )
        group = parser.add_argument_group(title or "model options")
        for option in self.options.values():
            users = [name for name, spec in models.items() if option.flag in spec.options]
            group.add_argument(
                option.flag,
                dest=_dest(option.flag),
                default=None,
                choices=option.choices,
                metavar=option.metavar,
                help=f"{option.help} [{', '.join(users)}]",
            )

    # ------------------------------------------------------------------ the estimator
    def spec(self, name: str) -> ModelEntry:
        return self.models[name]

    def name_of(self, model: Any) -> str | None:
        """The command-line name of a model of this table (None if it has none)."""
        names = {spec.class_name: name for name, spec in self.models.items()}
        return names.get(type(model).__name__)

    def users(self, wants: Callable[[Any], bool]) -> list[str]:
        """The models whose tags satisfy ``wants`` (a model that cannot be imported here, e.g.
        for want of torch, is left out)."""
        names = []
        for name, spec in self.models.items():
            try:
                if wants(spec.tags()):
                    names.append(name)
            except ImportError:
                continue
        return names

    def suggestion(self, name: str) -> str:
        """`` (did you mean 'x'?)`` for a mistyped model name, or nothing."""
        close = difflib.get_close_matches(name, list(self.models), n=1)
        return f" (did you mean {close[0]!r}?)" if close else ""

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
        model = cls(**params)
        model.check_params()  # before any input is read
        return model

    # ------------------------------------------------------------ the docs' tables
    def markdown(self) -> str:
        """The docs' table of this command's models (``docs/models.md``)."""
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
#: the largest whole number a count option takes (iterations, samples, sizes, --n): more
#: than any fit can use, and small enough for every integer type the models compute with
MAX_COUNT = 10**9
#: the seeds ``--seed`` takes: what numpy's generators and every library a model seeds
#: (torch, the legacy ``RandomState``) accept alike
SEED_RANGE = (0, 2**32 - 1)


def _shown(text: str) -> str:
    """``text`` quoted, cut to a readable length."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _out_of_range(flag: str, low: int, high: int, value: int, shown) -> CommandError:
    if value < low:
        return CommandError(f"{flag} must be at least {low}; got {shown}")
    return CommandError(f"{flag} must be at most {high:,}; got {shown}")


def whole_number(flag: str, low: int, high: int = MAX_COUNT) -> Callable[[str], int]:
    """A reader of a whole number from ``low`` to ``high`` (both included) for ``flag``."""

    def read(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # not a number, or more digits than Python converts
            raise CommandError(f"{flag} must be a whole number; got {_shown(text)}") from None
        if not low <= value <= high:
            raise _out_of_range(flag, low, high, value, value if len(text) <= 40 else _shown(text))
        return value

    return read


def positive_int(flag: str) -> Callable[[str], int]:
    """A whole number from 1 to :data:`MAX_COUNT`."""
    return whole_number(flag, 1)


def non_negative_int(flag: str) -> Callable[[str], int]:
    """A whole number from 0 to :data:`MAX_COUNT`."""
    return whole_number(flag, 0)


def check_integers(args: argparse.Namespace) -> None:
    """Refuse, naming the bound, a whole number given to an option that ``argparse`` reads
    with ``type=int`` (``--seed``, ``--top-k`` ...) outside what the commands can use:
    ``--seed`` in :data:`SEED_RANGE`, any other at most :data:`MAX_COUNT` in size (the
    options' own lower bounds are their commands' to check)."""
    parser = getattr(args, "parser_", None)
    for action in getattr(parser, "_actions", ()):
        value = getattr(args, action.dest, None)
        if action.type is not int or not isinstance(value, int) or not action.option_strings:
            continue
        flag = max(action.option_strings, key=len)
        low, high = SEED_RANGE if action.dest == "seed" else (-MAX_COUNT, MAX_COUNT)
        if not low <= value <= high:
            raise _out_of_range(flag, low, high, value, value)


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
        if not (math.isfinite(value) and value > 0):
            raise CommandError(f"{flag} must be a positive number{alternatives}; got {text!r}")
        return value

    return read


def non_negative_float(flag: str) -> Callable[[str], float]:
    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (math.isfinite(value) and value >= 0):
            raise CommandError(f"{flag} must be a non-negative number; got {text!r}")
        return value

    return read


def open_unit(flag: str) -> Callable[[str], float]:
    """A number strictly between 0 and 1 (a level, a confidence)."""

    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not 0 < value < 1:
            raise CommandError(f"{flag} must lie between 0 and 1; got {text!r}")
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
#: the order of the docs' tables
_README_ORDER = ("labels", "values", "rank", "prefs", "leaderboard", "cluster")


def readme_tables() -> str:
    """Every command's model table, as on ``docs/models.md``."""
    return "\n\n".join(TABLES[name].markdown() for name in _README_ORDER)
