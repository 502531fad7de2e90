"""Loading an export and telling which tool wrote it, from its content (not its name).

JSON (a list, one object, or JSON lines): Label Studio JSON (tasks with ``annotations``),
Label Studio JSON-MIN (``annotator``/``annotation_id`` keys), Prolific (``participant_id``,
``task_id`` and ``response(s)``), else a table of records (an Argilla dataset saved as JSON
lines). Tables (CSV, TSV, Parquet, a DataFrame): Toloka (``ASSIGNMENT:*``, or ``INPUT:*`` with
``OUTPUT:*``), Mechanical Turk (``HITId``, ``WorkerId``), Argilla (per-annotator response
columns), a wide table (one column per annotator, :func:`.wide.looks_wide`), else the plain
long table (``long``).
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pandas as pd

from ..data.io import open_source, read_table
from ..data.source import Source
from ._common import ExportError, format_name
from .argilla import is_argilla
from .label_studio import is_label_studio, is_label_studio_min
from .mturk import is_mturk
from .prolific import is_prolific
from .toloka import is_toloka
from .wide import looks_wide

__all__ = ["Loaded", "load", "head_bytes", "detect", "check_format"]


class Loaded:
    """An export's content: JSON records (``records``) or a table (``frame``)."""

    def __init__(self, source: str, *, records: list | None = None, frame=None) -> None:
        self.source = source
        self.records = records
        self._frame = frame

    @property
    def is_json(self) -> bool:
        return self.records is not None

    @property
    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            self._frame = pd.DataFrame.from_records(
                [r for r in self.records if isinstance(r, dict)]
            )
        return self._frame


def head_bytes(file: Source, size: int = 64 * 1024) -> bytes:
    """The first bytes of the file's content (decompressed when gzip-compressed)."""
    head = file.head(size)
    if head[:2] == b"\x1f\x8b":
        with file.open() as raw, gzip.open(raw, "rb") as handle:
            head = handle.read(size)
    return head


def _text(file: Source) -> str:
    with file.open() as handle:
        raw = handle.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8-sig")


def _json_records(text: str, source: str, what: str) -> list:
    stripped = text.lstrip()
    try:
        content = json.loads(stripped)
    except ValueError:
        content = None
        records = []
        for number, line in enumerate(stripped.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError as err:
                raise ExportError(
                    f"{what} ({source}): line {number} is not JSON ({err.msg}); give the "
                    "export as the tool wrote it"
                ) from None
        return records
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        return content
    raise ExportError(f"{what} ({source}): JSON that is not a list of records")


def load(source: Any, *, what: str = "labels") -> Loaded:
    """The content of ``source`` (a path, a :class:`~crowdbayes.data.source.Source` or a
    DataFrame) as records or a table. A pipe is read once."""
    if isinstance(source, pd.DataFrame):
        return Loaded("DataFrame", frame=source)
    file = source if isinstance(source, Source) else open_source(source, what)
    head = head_bytes(file)
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"[", b"{"):
        return Loaded(str(file), records=_json_records(_text(file), str(file), what))
    return Loaded(str(file), frame=_read_table(file, head, what))


def _read_table(file: Source, head: bytes, what: str) -> pd.DataFrame:
    """A table export (CSV, TSV, Parquet), every column of its header read as text where the
    reader keeps text (ids such as ``0001`` survive)."""
    import re

    header = head.decode("utf-8-sig", errors="replace").split("\n", 1)[0]
    names = [name.strip().strip('"') for name in re.split("[\t,;]", header)]
    return read_table(file, what=what, id_columns=names)


def detect(loaded: Loaded, *, long_columns: tuple[str, ...] = (), task: str | None = None) -> str:
    """The format of an export's content (module docstring)."""
    if loaded.is_json:
        records = loaded.records
        if not records:
            return "long"
        if is_label_studio(records) or is_label_studio_min(records):
            return "label-studio"
        if is_prolific(records[0]):
            return "prolific"
    frame = loaded.frame
    if is_toloka(frame.columns):
        return "toloka"
    if is_mturk(frame.columns):
        return "mturk"
    if is_argilla(frame):
        return "argilla"
    if looks_wide(frame, long_columns, task):
        return "wide"
    return "long"


def check_format(loaded: Loaded, format: str, *, what: str) -> None:
    """Refuse content that is not of the forced ``format`` (another tool's file), naming the
    format it looks like."""
    if format in ("long", "wide", "auto"):
        return
    found = detect(loaded)
    if found == format:
        return
    seen = format_name(found) if found != "long" else "a plain table"
    raise ExportError(
        f"{what} ({loaded.source}): not {format_name(format)}: it looks like {seen}; pass "
        f"{{format}}{found} (or {{format}}auto)"
    )
