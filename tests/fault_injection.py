"""Fault injection for the output-commit tests: wrap the os functions that create, move or
remove names, and at the n-th call raise an exception or send a signal to this process."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from crowdbayes._atomic import TEMP_PREFIX

#: the os functions that create or move names: the steps of staging and committing outputs
MOVES = ("rename", "replace", "link", "mkdir")
#: and those that remove them (the clean-up after a commit)
REMOVALS = ("unlink", "rmdir")


class Faults:
    """Wraps the os functions ``names``; the ``at``-th call (0-based, main thread only) first
    does ``action()`` — raise, or send a signal to this process — then the real call; every
    call is recorded in ``calls``."""

    def __init__(self, monkeypatch, names=MOVES, at: int | None = None, action=None) -> None:
        self.calls: list[str] = []
        self.at, self.action = at, action
        for name in names:
            monkeypatch.setattr(os, name, self._wrap(name, getattr(os, name)))

    def _wrap(self, name, real):
        def wrapper(*args, **kwargs):
            if threading.current_thread() is threading.main_thread():
                self.calls.append(name)
                if self.at is not None and len(self.calls) - 1 == self.at:
                    self.action()
            return real(*args, **kwargs)

        return wrapper


def raise_(error: BaseException):
    """An action raising ``error``."""

    def action():
        raise error

    return action


def send(signum: int):
    """An action sending ``signum`` to this process."""
    return lambda: os.kill(os.getpid(), signum)


def leftovers(directory: Path) -> list[str]:
    """The temporary or backup names left under ``directory``."""
    return sorted(p.name for p in Path(directory).rglob(f"{TEMP_PREFIX}*"))
