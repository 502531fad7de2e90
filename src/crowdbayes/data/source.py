"""A table file to read, opened as often as the readers need: a regular file by its path, any
other file once.

A named pipe (``mkfifo``), a shell's process substitution (``<(cat x.csv)``, a ``/dev/fd/N``
pipe) or a device can be read only once: the bytes of the first read are gone for the next.
The readers open a file several times (the kind of file from its first bytes, the header, the
rows, and the lines a message names), so :class:`Source` reads such a file into memory once and
hands out a fresh handle on those bytes each time; a regular file is opened from its path.
"""

from __future__ import annotations

import io
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["Source", "nul_line"]

_CHUNK = 1 << 20


class Source:
    """A file at ``path``: regular files are read from the path each time; anything else (a
    pipe, a device) is read into memory on construction (:attr:`data`)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.name = self.path.name.lower()
        #: the file's bytes, for a file that cannot be read twice (None: a regular file)
        self.data: bytes | None = None
        if not stat.S_ISREG(self.path.stat().st_mode):
            with open(self.path, "rb") as handle:
                self.data = handle.read()

    def __str__(self) -> str:
        return str(self.path)

    def open(self) -> BinaryIO:
        """A new binary handle at the start of the file."""
        return open(self.path, "rb") if self.data is None else io.BytesIO(self.data)

    def target(self) -> str | BinaryIO:
        """What to give a pandas reader: the path, or a new handle on the bytes read."""
        return str(self.path) if self.data is None else io.BytesIO(self.data)

    def head(self, size: int) -> bytes:
        """The first ``size`` bytes."""
        if self.data is not None:
            return self.data[:size]
        with open(self.path, "rb") as handle:
            return handle.read(size)


def nul_line(source: Source, compression: str | None) -> int | None:
    """The line (counted from 1) of the first NUL byte of the (decompressed) file, or None.

    The file is scanned in chunks for the byte alone (a byte search, so a million-row file
    costs milliseconds); only when one is found are the lines before it counted, in a second
    pass. A text table never holds a NUL byte, and pandas would keep one inside a value.
    """
    from pandas.io.common import get_handle  # the decompression read_csv uses

    def chunks():
        with get_handle(source.target(), "rb", compression=compression, is_text=False) as file:
            while chunk := file.handle.read(_CHUNK):
                yield chunk

    offset = None
    for start, chunk in _positions(chunks()):
        at = chunk.find(b"\x00")
        if at >= 0:
            offset = start + at
            break
    if offset is None:
        return None
    lines = 1
    for start, chunk in _positions(chunks()):
        if start + len(chunk) > offset:
            return lines + chunk.count(b"\n", 0, offset - start)
        lines += chunk.count(b"\n")
    return lines  # pragma: no cover - the byte was found in the first pass


def _positions(chunks):
    """``(offset, chunk)`` of consecutive chunks of bytes."""
    start = 0
    for chunk in chunks:
        yield start, chunk
        start += len(chunk)
