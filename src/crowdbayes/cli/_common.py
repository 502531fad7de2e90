"""Pieces shared by the command families."""

from __future__ import annotations

#: exit status of a command whose input or command line is wrong
EXIT_ERROR = 2
#: exit status of a command that failed while running (a numerical failure, memory, ...)
EXIT_FAILURE = 1


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def show_progress(flag: bool | None) -> bool:
    """Whether a command shows the progress of its fits: yes unless ``--no-progress``.

    The iteration driver (:mod:`crowdbayes.inference.driver`) draws a bar when stderr is a
    terminal and writes a line every few seconds otherwise (CI logs, pipes, files), so the one
    flag ``--no-progress`` silences both.
    """
    return True if flag is None else bool(flag)


def parse_classes(text: str | None) -> list | None:
    """``--classes a,b,c`` as a list (of integers when every class is one)."""
    if text is None:
        return None
    values = [v.strip() for v in text.split(",") if v.strip()]
    try:
        return [int(v) for v in values]
    except ValueError:
        return values
