"""Interrupts: ``SIGTERM`` raised as an exception, like Ctrl-C, so that a command stops through
the same ``finally`` blocks (no temporary or partial output file left) with the shell's status.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["Terminated", "interrupts_as_exceptions", "exit_status"]


class Terminated(BaseException):
    """``SIGTERM`` was received (a ``BaseException``, like ``KeyboardInterrupt``, so that no
    ``except Exception`` swallows it)."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


@contextlib.contextmanager
def interrupts_as_exceptions() -> Iterator[None]:
    """While inside, ``SIGTERM`` raises :class:`Terminated` (where signals can be handled: the
    main thread); the previous handler comes back on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def exit_status(stop: BaseException) -> int:
    """128 + the signal's number: 130 for Ctrl-C, 143 for ``SIGTERM``."""
    signum = signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT
    return 128 + int(signum)
