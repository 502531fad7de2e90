"""Messages in the language of the command line, one line each.

The library's errors and warnings speak Python (``pass duplicates='keep'``, ``increase
max_iter``), which is right for a Python user. :func:`to_flags` rewrites such a message for the
command line: ``name=value`` becomes ``--flag value`` and a bare parameter name becomes its flag,
for the parameters the command line sets (the model tables' options and the input options).

:func:`error_line` makes the one line of any error a command raises: the message of the errors
that explain themselves (bad input, files, missing packages), what to change for a memory
error, and the error's type for the rest (an internal failure: ``--debug`` shows where).
"""

from __future__ import annotations

import re

from ._common import CommandError
from ._models import TABLES

__all__ = [
    "PYTHON_SYNTAX",
    "error_line",
    "is_corrupt_data",
    "name_the_file",
    "parameter_flags",
    "printable",
    "to_flags",
]

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
    "merge_classes": "--merge-classes",
    "normalize": "--no-normalize",
}
#: parameters set by a switch (a flag without a value): ``name=True`` is the flag alone,
#: ``name=False`` is leaving it out
_SWITCHES = {"ordered"}
#: parameters set by a switch that turns them off: ``name=False`` is the flag alone
_OFF_SWITCHES = {"normalize"}
#: a ``name=value`` pair as Python writes it (what no command-line message should contain)
#: (not a ``VARIANT=CLASS`` pair in a flag's quoted value: ``--merge-classes "Dog=dog,dgo=dog"``)
PYTHON_SYNTAX = re.compile(
    r"(?<![\",])\b[a-z_][a-z0-9_]*=(?:'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\{[^}]*\}|[\w.+-]+)"
)
_VALUE = r"('[^']*'|\"[^\"]*\"|\[[^\]]*\]|\{[^}]*\}|[\w.+-]+)"


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
    if value.startswith("{"):  # {'Dog': 'dog'}, as --merge-classes reads it: "Dog=dog"
        pairs = [item.split(":", 1) for item in value[1:-1].split(",") if ":" in item]
        return '"' + ",".join(f"{_plain(k.strip())}={_plain(v.strip())}" for k, v in pairs) + '"'
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
        if name in _OFF_SWITCHES and value in ("True", "False"):
            return flags[name] if value == "False" else f"no {flags[name]}"
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
    "battles": ("input",),
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


# ---------------------------------------------------------------------------- errors
#: the longest error line shown (a message quoting a huge value is cut there)
MAX_LINE = 1000
#: errors whose message says what is wrong without their type's name
_SELF_EXPLAINED = (
    ValueError,
    TypeError,
    LookupError,
    OSError,
    ImportError,
    EOFError,
    RuntimeError,
)
#: what to change when a command runs out of memory, by command family
_LESS_MEMORY = {
    "labels": "fewer classes (merge rare ones), --model mv or bayes-ds rather than the Gibbs "
    "sampler (hierarchical), or the labels in batches",
    "report": "fewer classes (merge rare ones) or a simpler --model",
}


def printable(text: str) -> str:
    """``text`` with control characters (terminal escapes, NUL, line breaks) written as
    escapes (``\\x1b``), so that a message prints as one inert line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def is_corrupt_data(err: BaseException) -> bool:
    """Whether ``err`` is an error of decompressing or unpacking a damaged file."""
    import zipfile
    import zlib

    return isinstance(err, (zlib.error, zipfile.BadZipFile, zipfile.LargeZipFile))


def _message(err: BaseException) -> str:
    """The first line of ``err``'s message ('' if it has none or cannot be shown)."""
    try:
        text = str(err)
    except Exception:  # a message that cannot be built is no message
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else ""


def _memory_line(err: BaseException, args) -> str:
    """Out of memory: the size numpy asked for (its message) and what to change."""
    asked = _message(err)
    asked = asked[:1].lower() + asked[1:] if asked else "the command ran out of memory"
    family = getattr(args, "command", None)
    change = _LESS_MEMORY.get(family, "a smaller input or a simpler --model")
    return f"out of memory: {asked}; use {change}, or run where more memory is free"


def error_line(err: BaseException, args=None) -> str:
    """The one line of ``err`` for ``crowdbayes: error: ...`` (``args``: the parsed command
    line, to name the input file a message is about; None if parsing failed)."""
    from .._capacity import CapacityError

    message = _message(err)
    name = type(err).__name__
    if isinstance(err, MemoryError) and not isinstance(err, CapacityError):
        line = _memory_line(err, args)
    elif is_corrupt_data(err):
        line = f"the file is damaged: {message or name} ({name})"
    elif isinstance(err, RecursionError):
        line = f"{message or name}: an input nested too deeply (a damaged file?)"
    elif isinstance(err, CommandError) or (message and isinstance(err, _SELF_EXPLAINED)):
        line = message
    elif isinstance(err, AssertionError):
        line = f"internal check failed{': ' + message if message else ''} (a bug: please "
        line += "report it with the traceback that --debug prints)"
    else:
        line = f"{name}: {message}" if message else name
        line += " (--debug shows the traceback)"
    try:
        line = to_flags(name_the_file(line, args)) if args is not None else to_flags(line)
    except Exception:  # never let the message hide the error
        pass
    line = printable(line)
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"
