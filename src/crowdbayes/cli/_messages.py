"""Messages in the language of the command line.

The library's errors and warnings speak Python (``pass duplicates='keep'``, ``increase
max_iter``), which is right for a Python user. :func:`to_flags` rewrites such a message for the
command line: ``name=value`` becomes ``--flag value`` and a bare parameter name becomes its flag,
for the parameters the command line sets (the model tables' options and the input options).
"""

from __future__ import annotations

import re

from ._models import TABLES

__all__ = ["to_flags", "parameter_flags", "PYTHON_SYNTAX"]

#: parameters of the data containers and models that a command-line option sets
_INPUT_FLAGS = {
    "duplicates": "--duplicates",
    "classes": "--classes",
    "gold": "--gold",
    "items": "--features",
    "workers": "--worker-features",
    "random_state": "--seed",
    "max_iter": "--max-iter",
    "tol": "--tol",
    "ties": "--ties",
    "lengthscale": "--lengthscale",
    "ordered": "--ordered",
}
#: parameters set by a switch (a flag without a value): ``name=True`` is the flag alone,
#: ``name=False`` is leaving it out
_SWITCHES = {"ordered"}
#: a ``name=value`` pair as Python writes it (what no command-line message should contain)
PYTHON_SYNTAX = re.compile(r"\b[a-z_][a-z0-9_]*=(?:'[^']*'|\"[^\"]*\"|\[[^\]]*\]|[\w.+-]+)")
_VALUE = r"('[^']*'|\"[^\"]*\"|\[[^\]]*\]|[\w.+-]+)"


def parameter_flags() -> dict[str, str]:
    """Every Python parameter the command line sets, with its flag."""
    flags = dict(_INPUT_FLAGS)
    for table in TABLES.values():
        for option in table.options.values():
            flags.setdefault(option.param, option.flag)
    return flags


def _plain(value: str) -> str:
    """A Python literal as it is typed on the command line: no quotes, lists comma-separated."""
    if value[:1] in "'\"":
        return value[1:-1]
    if value.startswith("["):
        items = [item.strip().strip("'\"") for item in value[1:-1].split(",")]
        return ",".join(item for item in items if item)
    return value


def to_flags(message: str) -> str:
    """``message`` with the Python parameters the command line sets written as its flags."""
    flags = parameter_flags()
    names = "|".join(sorted(map(re.escape, flags), key=len, reverse=True))

    def pair(match: re.Match) -> str:
        name, value = match.group(1), match.group(2)
        if name in _SWITCHES and value in ("True", "False"):
            return flags[name] if value == "True" else f"no {flags[name]}"
        return f"{flags[name]} {_plain(value)}"

    message = re.sub(rf"(?<![\w-])({names})={_VALUE}", pair, message)
    bare = "|".join(
        re.escape(name)
        for name in sorted(flags, key=len, reverse=True)
        if "_" in name or name == "tol"
    )
    return re.sub(rf"(?<![\w-])`?({bare})`?(?![\w=])", lambda m: flags[m.group(1)], message)


#: the input a message is about (its first word, as the data containers write it) -> the
#: ``args`` attributes that may name its file, first found wins
_INPUTS = {
    "labels": ("input",),
    "gold": ("gold",),
    "eval-gold": ("eval_gold",),
    "eval-truth": ("eval_truth",),
    "values": ("input",),
    "rankings": ("input",),
    "pairs": ("pairs", "input"),
    "comparisons": ("input",),
    "links": ("input",),
    "items": ("features",),
    "workers": ("worker_features",),
    "features": ("features",),
    "tasks": ("tasks",),
    "available": ("available",),
}


def name_the_file(message: str, args) -> str:
    """``message`` about an input (``"labels: column 'task' is missing"``) with the input's file
    named (``"labels (data.csv): ..."``) where the message does not name it already."""
    what, colon, rest = message.partition(": ")
    if not colon or what not in _INPUTS:
        return message
    for dest in _INPUTS[what]:
        value = getattr(args, dest, None)
        if isinstance(value, str):
            return message if value in rest else f"{what} ({value}): {rest}"
    return message
