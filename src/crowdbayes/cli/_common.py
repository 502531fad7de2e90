"""Pieces shared by the command families."""

from __future__ import annotations

import sys

EXIT_ERROR = 2


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def show_progress(flag: bool | None) -> bool:
    """``--progress/--no-progress`` if given, else a bar only when stderr is a terminal."""
    return sys.stderr.isatty() if flag is None else flag
