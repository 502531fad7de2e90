"""Writing files all-or-nothing: the one place where outputs are staged in temporary files and
moved into place (the command line's output sets, model files, reports, the Dask backend's
directory of per-partition results).

An :class:`OutputSet` stages each output — a file or a directory — under a short temporary name
beside its target (``.tmp-`` + 8 random hex digits + the target's extension, so any name a
directory allows can be a target), and :meth:`OutputSet.commit` moves them all into place in
one step:

1. every staged file is flushed to disk (``fsync``);
2. with ``SIGINT`` and ``SIGTERM`` deferred (their handlers record them; they are delivered
   when the commit is over), each target that exists and may be replaced is renamed aside to a
   backup (a short temporary name too), and each staged output is moved to its target by an
   *exclusive* move: ``os.link`` for a file (fails if the target exists), ``os.mkdir`` of the
   target then ``os.rename`` over that empty directory for a directory;
3. if any move fails — an error, a target that appeared since the command started (another
   run writing the same file), or a signal received meanwhile — every move made is undone in
   reverse order (new targets removed, backups renamed back): all the old outputs, and no new
   one. Otherwise the backups and the temporary names are removed: all the new outputs.

So at every instant the targets hold all the old outputs or all the new ones (a target that
did not exist before is "old" when it is absent), and when the command ends no temporary file
is left — whatever exception or signal arrives, and whenever. (Only ``SIGKILL`` or a power cut
in the middle of step 2 can leave a backup or a temporary name behind: they start with
``.tmp-``.) Directories are written only by the Dask backend; the per-partition files in them
are flushed before the commit too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OutputSet", "current_umask", "write_atomically", "written_before", "TEMP_PREFIX"]

#: the start of every temporary or backup name (tests look for leftovers by it)
TEMP_PREFIX = ".tmp-"
#: the longest extension kept on a temporary name (writers choose the format by it)
_LONGEST_SUFFIX = 10


def written_before(stop: BaseException) -> list[str]:
    """The outputs a commit had finished writing when the interrupt ``stop`` arrived during its
    clean-up (empty when it arrived before: then nothing was written)."""
    return list(getattr(stop, "written", ()))


def current_umask() -> int:
    """The process's file mode creation mask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temporary_name(target: Path, suffix: str | None = None) -> Path:
    """A short name beside ``target`` for a temporary or backup copy: ``.tmp-`` and 8 random hex
    digits, then ``suffix`` (default: the target's last two extensions, where short), so that
    writers choosing a format by the extension (``.csv.gz``, ``.parquet``) see it."""
    if suffix is None:
        kept = [s for s in target.suffixes[-2:] if len(s) <= _LONGEST_SUFFIX and s[1:].isalnum()]
        suffix = "".join(kept)
    return target.parent / f"{TEMP_PREFIX}{secrets.token_hex(4)}{suffix}"


# ------------------------------------------------------------------------------ signals
@contextlib.contextmanager
def signals_deferred() -> Iterator[list[int]]:
    """While inside, ``SIGINT`` and ``SIGTERM`` are recorded (in the list yielded) instead of
    handled; on exit the previous handlers come back and the first signal received is
    delivered to its handler then (a ``KeyboardInterrupt``, the command line's ``Terminated``,
    or the default action). Signals ignored before stay ignored; outside the main thread (where
    Python runs no signal handler) nothing changes.

    A handler put back on exit may run at once (``signal.signal`` runs pending handlers) and
    raise before the other is put back; the recorder left installed then acts as the handler it
    replaced, so that no signal is ignored from then on."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    deferring, previous = True, {}

    def record_or_forward(signum, frame) -> None:
        if deferring:  # read when a signal comes: False once the block is over
            received.append(signum)
        else:  # the block is over but putting the handlers back was cut short
            _deliver(signum, previous[signum])

    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            handler = signal.getsignal(signum)
            if handler in (signal.SIG_IGN, None):  # ignored, or set outside Python: leave it
                continue
            previous[signum] = handler
            signal.signal(signum, record_or_forward)
        yield received
    finally:
        deferring = False
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if received:
            _deliver(received[0], previous[received[0]])


def _deliver(signum: int, handler) -> None:
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)  # not a forwarder left installed
        signal.raise_signal(signum)


# ------------------------------------------------------------------------------ the output set
@dataclass
class _Staged:
    target: Path
    temporary: Path
    directory: bool
    overwrite: bool
    backup: Path | None = None
    placed: bool = False


class OutputSet:
    """Outputs staged beside their targets and moved into place together (module docstring).

    Use it as a context manager: stage each output with :meth:`file` or :meth:`directory`,
    write it, then call :meth:`commit`; leaving the block without a commit (an exception, an
    interrupt) removes every temporary file. ``overwrite``: whether targets that exist may be
    replaced (default for each output; :meth:`file` may say otherwise). Without it, a target
    that exists when the commit runs — even one created since the command started — makes the
    commit fail with :class:`FileExistsError` and nothing is written.
    """

    def __init__(self, *, overwrite: bool = True, make_parents: bool = False) -> None:
        self.overwrite = overwrite
        self.make_parents = make_parents
        self._staged: list[_Staged] = []
        self._mode = 0o666 & ~current_umask()

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, *exc) -> None:
        self.discard()

    def _reserve(self, target, overwrite: bool | None, directory: bool) -> Path:
        target = Path(target)
        if self.make_parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        overwrite = self.overwrite if overwrite is None else overwrite
        while True:
            # recorded before it exists, so that an interrupt right after creating it finds it
            entry = _Staged(target, temporary_name(target), directory, overwrite)
            self._staged.append(entry)
            try:
                if directory:
                    os.mkdir(entry.temporary)
                else:
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
                    os.close(os.open(entry.temporary, flags, 0o600))
                return entry.temporary
            except FileExistsError:  # pragma: no cover - 32 random bits taken: draw again
                self._staged.pop()

    def file(self, target, *, overwrite: bool | None = None) -> Path:
        """The temporary path to write the file ``target`` to (an empty file, created)."""
        return self._reserve(target, overwrite, directory=False)

    def directory(self, target, *, overwrite: bool | None = None) -> Path:
        """The temporary directory to fill for the directory ``target`` (empty, created)."""
        return self._reserve(target, overwrite, directory=True)

    # ---------------------------------------------------------------------------- commit
    def commit(self) -> None:
        """Move every staged output into place, all or nothing (module docstring)."""
        for entry in self._staged:
            _flush(entry.temporary, entry.directory, self._mode)
        committed: list[_Staged] = []
        undone = False
        try:
            with signals_deferred() as received:
                placed: list[_Staged] = []
                try:
                    for entry in self._staged:
                        placed.append(entry)
                        _put_in_place(entry)
                        if received:
                            break
                except BaseException:
                    _undo(placed)
                    raise
                if received:  # stopped meanwhile: nothing written; the signal comes next
                    _undo(placed)
                    undone = True
                else:
                    committed, self._staged = self._staged, []
                    _finish(committed)
                    _sync_directories({entry.target.parent for entry in committed})
        except BaseException as stop:
            if committed:  # a signal during the clean-up, delivered after the commit
                stop.written = [str(entry.target) for entry in committed]
                stop.add_note(f"written before the interrupt: {', '.join(stop.written)}")
            raise
        if undone:  # the signal's handler let the program go on
            raise InterruptedError(
                "a signal arrived while the outputs were committed: none written"
            )

    def discard(self) -> None:
        """Remove every temporary file of outputs not committed (a second signal meanwhile
        waits until they are gone)."""
        with signals_deferred():
            while self._staged:
                _remove(self._staged.pop().temporary)


def _flush(path: Path, directory: bool, mode: int) -> None:
    """Give a staged output the umask's permissions and push it to disk."""
    if directory:
        for child in path.rglob("*"):
            if child.is_file() and not child.is_symlink():
                _fsync(child)
        _fsync(path)
        return
    os.chmod(path, mode)
    _fsync(path)


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    except OSError as err:  # a file system without fsync on this kind of file
        if err.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(descriptor)


def _sync_directories(directories: set[Path]) -> None:
    for directory in directories:
        with contextlib.suppress(OSError):
            _fsync(directory)


def _put_in_place(entry: _Staged) -> None:
    target = entry.target
    if entry.overwrite and os.path.lexists(target):
        backup = temporary_name(target, ".old")
        os.rename(target, backup)  # a symbolic link is moved, never followed
        entry.backup = backup
    _claim(entry)
    entry.placed = True


def _claim(entry: _Staged) -> None:
    """Move ``entry`` to its target, refusing a target that exists (atomically: no other run
    can slip in between a check and the move)."""
    target, temporary = entry.target, entry.temporary
    try:
        if entry.directory:
            os.mkdir(target)  # exclusive; renaming over an empty directory is allowed
            try:
                os.rename(temporary, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.rmdir(target)
                raise
        else:
            _link(temporary, target)
    except FileExistsError:
        raise FileExistsError(
            f"{target} was created by another program while this one ran; nothing was written "
            "(pass overwrite=True to replace it)"
        ) from None


def _link(temporary: Path, target: Path) -> None:
    try:
        os.link(temporary, target, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError as err:  # a file system without hard links: check, then rename
        if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        if os.path.lexists(target):
            raise FileExistsError(errno.EEXIST, str(target)) from None
        os.rename(temporary, target)


def _undo(placed: list[_Staged]) -> None:
    """Put back the old outputs, newest move first; keeps going past failures."""
    for entry in reversed(placed):
        with contextlib.suppress(OSError):
            if entry.placed:
                if entry.directory:
                    os.rename(entry.target, entry.temporary)
                else:
                    os.unlink(entry.target)  # the staged file keeps its own name
                entry.placed = False
            if entry.backup is not None:
                os.rename(entry.backup, entry.target)
                entry.backup = None


def _finish(committed: list[_Staged]) -> None:
    """After a commit: remove the backups and the temporary names of linked files."""
    for entry in committed:
        if entry.backup is not None:
            _remove(entry.backup)
        if not entry.directory:
            _remove(entry.temporary)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


# ------------------------------------------------------------------------------ one call
def write_atomically(
    outputs: list[tuple[str | os.PathLike, Callable[[Path], None]]],
    *,
    overwrite: bool = True,
    make_parents: bool = True,
) -> None:
    """Write several files all-or-nothing: each ``write(tmp_path)`` goes to a temporary file
    beside its target, and only when every write succeeded are they moved into place together
    (:class:`OutputSet`).

    A failure in any write — an exception, or an interrupt (``KeyboardInterrupt``, or any
    ``BaseException`` a signal handler raises) — leaves none of the outputs (and no temporary
    file) behind; an interrupt that a writer's own clean-up turned into another error (a
    ``zipfile`` closing a half-written member) is raised as the interrupt it was. The files get
    the mode a plain ``open`` would give them, ``0o666`` less the umask. Existing targets are
    replaced unless ``overwrite`` is false (then a target that exists at the commit is a
    :class:`FileExistsError` and nothing is written). Missing parent directories are created
    unless ``make_parents`` is false (then they are an error).
    """
    with OutputSet(overwrite=overwrite, make_parents=make_parents) as staged:
        for path, write in outputs:
            temporary = staged.file(path)
            try:
                write(temporary)
            except Exception as err:
                stop = interrupt_behind(err)
                if stop is not None:
                    raise stop from None
                raise
        staged.commit()


def interrupt_behind(err: BaseException) -> BaseException | None:
    """The interrupt (a ``BaseException`` that is no ``Exception``) that ``err`` was raised
    while handling, if any."""
    seen = set()
    cause = err.__context__
    while cause is not None and id(cause) not in seen:
        if not isinstance(cause, Exception):
            return cause
        seen.add(id(cause))
        cause = cause.__context__
    return None
