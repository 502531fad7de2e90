"""The argument parser of every command: suggestions for what was mistyped, the options every
command shares, and old spellings kept for a release.

- :class:`Parser` adds "did you mean ...?" to argparse's errors for an unknown sub-command,
  option or model name (:func:`difflib.get_close_matches`), and names the command in them.
- every parser, the top level's and each command's, accepts ``--quiet``, ``--debug`` and
  ``--version`` (:data:`GENERAL_OPTIONS`), so they may come before or after the command
  (``crowdbayes --debug labels fit x.csv`` = ``crowdbayes labels fit x.csv --debug``);
- :func:`add_common_options` gives every command ``--progress/--no-progress``.
- :func:`add_deprecated` accepts an old spelling of an option (``--save`` for
  ``--save-model``): it sets the new option and the command prints one deprecation line.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from typing import NoReturn

__all__ = [
    "GENERAL_OPTIONS",
    "Parser",
    "add_common_options",
    "add_deprecated",
    "add_features_option",
    "deprecation_notes",
    "suggest_options",
]

#: options never suggested (old spellings kept for a release)
_HIDDEN: set[str] = set()
#: argparse's message for a value outside the choices
_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


#: the options every parser accepts, before or after the command: their ``args`` attribute,
#: absent unless given (so a command's parser never resets what the top level's set), is
#: filled in by :func:`crowdbayes.cli.main` (False when not given)
GENERAL_OPTIONS = ("quiet", "debug")


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors suggest the closest valid word; it keeps the long
    option strings added to it (``flags``, argument groups included) for the suggestions,
    and accepts the general options (``--quiet``, ``--debug``, ``--version``) wherever it is
    in the command."""

    def __init__(self, *args, **kwargs) -> None:
        self.flags: list[str] = []
        super().__init__(*args, **kwargs)
        # the command that parsed the arguments (the innermost sets it last)
        self.set_defaults(parser_=self)
        self._add_general_options()

    def _add_general_options(self) -> None:
        from .._version import __version__

        self.add_argument(
            "-q",
            "--quiet",
            action="store_true",
            default=argparse.SUPPRESS,
            help="print no summary (errors and warnings still go to stderr)",
        )
        self.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show the Python traceback of an error (also: CROWDBAYES_DEBUG=1)",
        )
        self.add_argument("--version", action="version", version=f"crowdbayes {__version__}")

    def add_argument(self, *names, **kwargs):
        self.flags.extend(n for n in names if n.startswith("--"))
        return super().add_argument(*names, **kwargs)

    def add_argument_group(self, *args, **kwargs):
        return self._kept(super().add_argument_group(*args, **kwargs))

    def add_mutually_exclusive_group(self, **kwargs):
        return self._kept(super().add_mutually_exclusive_group(**kwargs))

    def _kept(self, group):
        """``group`` with the long options added to it kept in :attr:`flags` too."""
        add = group.add_argument

        def add_and_keep(*names, **options):
            self.flags.extend(n for n in names if n.startswith("--"))
            return add(*names, **options)

        group.add_argument = add_and_keep
        return group

    def error(self, message: str) -> NoReturn:
        match = _INVALID_CHOICE.search(message)
        if match:
            given = match.group(1)
            choices = [c.strip().strip("'") for c in match.group(2).split(",")]
            close = difflib.get_close_matches(given, choices, n=1)
            if close:
                message += f"; did you mean {close[0]!r}?"
        super().error(message)


def suggest_options(parser: Parser, words: list[str]) -> str:
    """The unknown ``words`` of a command line, each with the closest option of ``parser``."""
    known = [flag for flag in parser.flags if flag not in _HIDDEN]
    shown = []
    for word in words:
        flag = word.split("=", 1)[0]
        close = difflib.get_close_matches(flag, known, n=1) if flag.startswith("-") else []
        shown.append(f"{word} (did you mean {close[0]}?)" if close else word)
    return " ".join(shown)


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """``--progress/--no-progress``, accepted by every command (``--quiet`` is one of the
    general options of every :class:`Parser`)."""
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show the progress of fits on stderr (default: yes)",
    )


class _Deprecated(argparse.Action):
    """Stores the value under the new option's name and notes the old spelling."""

    def __init__(self, option_strings, dest, new: str, **kwargs) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, True if self.nargs == 0 else values)
        notes = list(getattr(namespace, "deprecated_", ()))
        notes.append(f"{option_string} is deprecated; use {self.new} (removed in a later release)")
        namespace.deprecated_ = notes


def add_deprecated(
    parser: argparse.ArgumentParser,
    old: str,
    new: str,
    dest: str,
    *,
    switch: bool = False,
    type=None,
) -> None:
    """Accept the old spelling ``old`` of the option ``new`` (stored in ``dest``, read by
    ``type`` as ``new`` is), hidden from ``--help`` and from the suggestions."""
    _HIDDEN.add(old)
    parser.add_argument(
        old,
        dest=dest,
        action=_Deprecated,
        new=new,
        nargs=0 if switch else None,
        type=type,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )


def deprecation_notes(args: argparse.Namespace) -> None:
    """Print the deprecation lines of ``args`` on stderr (one per old spelling used)."""
    for note in getattr(args, "deprecated_", ()):
        print(f"crowdbayes: warning: {note}", file=sys.stderr)


def add_normalize_option(parser: Parser) -> None:
    """``--no-normalize``: keep ids and labels exactly as given (by default the containers strip
    the spaces around them and put Unicode in NFC, warning how many values changed)."""
    parser.add_argument(
        "--no-normalize",
        dest="normalize",
        action="store_false",
        help="keep ids and labels as given (default: strip the spaces around them and put "
        "Unicode in NFC, warning how many values changed)",
    )


def add_answer_columns(parser: Parser, answer: str, example: str) -> None:
    """The columns of a long table of judgments: ``--no-normalize``, ``--task-column``,
    ``--worker-column`` and ``--<answer>-column`` (also the answer field of an export, e.g.
    ``OUTPUT:result``: ``example``)."""
    add_normalize_option(parser)
    parser.add_argument("--task-column", default="task")
    parser.add_argument("--worker-column", default="worker")
    parser.add_argument(
        f"--{answer}-column",
        default=answer,
        help=f"the column of {answer}s (default {answer}); for an export, the answer field to "
        f"read (the export's own name, e.g. {example})",
    )


def add_features_option(parser: Parser, help: str) -> None:
    """``--features`` (the old spelling ``--items`` kept for a release) and its id column."""
    parser.add_argument("--features", help=help)
    add_deprecated(parser, "--items", "--features", "features")
    parser.add_argument("--item-column", default="item", help="id column of --features")
