"""Writing files all-or-nothing: the one place where outputs are staged in temporary files and
moved into place (the command line's output sets, model files, reports)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["current_umask", "write_atomically"]


def current_umask() -> int:
    """The process's file mode creation mask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(
    outputs: list[tuple[str | os.PathLike, Callable[[Path], None]]], *, make_parents: bool = True
) -> None:
    """Write several files all-or-nothing: each ``write(tmp_path)`` goes to a temporary file
    beside its target, and only when every write succeeded are they moved into place.

    A failure in any write — an exception, or an interrupt (``KeyboardInterrupt``, or any
    ``BaseException`` a signal handler raises) — leaves none of the outputs (and no temporary
    file) behind. The files get the mode a plain ``open`` would give them, ``0o666`` less the
    umask (``mkstemp`` alone would leave them ``0o600``). Missing parent directories are
    created unless ``make_parents`` is false (then they are an error).
    """
    mode = 0o666 & ~current_umask()
    staged: list[tuple[Path, Path]] = []
    try:
        for path, write in outputs:
            path = Path(path)
            if make_parents:
                path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=f"-{path.name}", dir=path.parent)
            staged.append((Path(tmp), path))
            os.close(fd)
            write(Path(tmp))
            os.chmod(tmp, mode)
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
