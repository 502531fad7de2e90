"""Interrupts: ``SIGTERM`` raised as an exception, like Ctrl-C, so that a command stops through
the same ``finally`` blocks (no temporary or partial output file left) with the shell's status.

The first ``SIGINT`` or ``SIGTERM`` stops the command; one that follows while it is stopping
(Ctrl-C pressed twice, a supervisor's ``SIGTERM`` after a Ctrl-C) is ignored, so that it cannot
break off the clean-up of the first: the exit status is the first signal's. While the outputs
are being moved into place, both are deferred until the move is complete or undone
(:func:`crowdbayes._atomic.signals_deferred`).
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


class _FirstSignal:
    """The handler of ``SIGINT`` and ``SIGTERM`` while a command runs: the first raises
    (``KeyboardInterrupt`` or :class:`Terminated`), any later one is ignored."""

    def __init__(self) -> None:
        self.stopping = False

    def __call__(self, signum, frame) -> None:
        if self.stopping:
            return
        self.stopping = True
        raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated()


@contextlib.contextmanager
def interrupts_as_exceptions() -> Iterator[None]:
    """While inside, ``SIGTERM`` raises :class:`Terminated` and ``SIGINT``
    ``KeyboardInterrupt`` (where signals can be handled: the main thread; ``SIGINT`` only where
    Python handles it, not in a background job that ignores it), once; the previous handlers
    come back on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = _FirstSignal()
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, handler)}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def exit_status(stop: BaseException) -> int:
    """128 + the signal's number: 130 for Ctrl-C, 143 for ``SIGTERM``."""
    signum = signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT
    return 128 + int(signum)
