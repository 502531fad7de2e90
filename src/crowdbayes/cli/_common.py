"""Pieces shared by the command families."""

from __future__ import annotations

EXIT_ERROR = 2


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def show_progress(flag: bool | None) -> bool:
    """Whether a command shows the progress of its fits: yes unless ``--no-progress``.

    The iteration driver (:mod:`crowdbayes.inference.driver`) draws a bar when stderr is a
    terminal and writes a line every few seconds otherwise (CI logs, pipes, files), so the one
    flag ``--no-progress`` silences both.
    """
    return True if flag is None else bool(flag)
