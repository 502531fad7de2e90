"""What kind of file a path holds, from its first bytes, before a table reader sees it.

:func:`sniff_table` returns ``"parquet"``, ``"gzip"`` (gzip-compressed text) or ``"text"``, or
refuses — with one line naming the file, what it looks like, and the formats accepted — a NumPy
array, an Excel workbook, a ZIP archive, other binary data, text that is not UTF-8, and an empty
file. Where the name says ``.bz2``, ``.xz``, ``.zst`` or ``.zip``, the content is left to
pandas' decompression (``"compressed"``).
"""

from __future__ import annotations

import csv
import gzip
import zlib
from pathlib import Path

from .source import Source

__all__ = ["sniff_table", "sniff_source", "sniff_separator", "TABLE_FORMATS"]

#: the formats a table may be given in, as the messages name them
TABLE_FORMATS = "CSV or TSV (optionally gzip-compressed) or Parquet"
_HEAD = 64 * 1024
_SIGNATURES = (
    (b"\x93NUMPY", "a NumPy .npy array"),
    (b"\xd0\xcf\x11\xe0", "an Excel (.xls) workbook or other OLE document"),
    (b"\x89PNG", "a PNG image"),
    (b"%PDF", "a PDF document"),
    (b"\x89HDF", "an HDF5 file"),
)
_COMPRESSED = (".bz2", ".xz", ".zst", ".zip")


def _zip_kind(name: str) -> str:
    if name.endswith((".xlsx", ".xlsm", ".ods")):
        return "an Excel workbook (spreadsheet)"
    if name.endswith(".npz"):
        return "a NumPy .npz archive"
    return "a ZIP archive (e.g. an Excel .xlsx workbook)"


def _refuse(what: str, path, kind: str, also: str) -> ValueError:
    accepted = TABLE_FORMATS + (f", or {also}" if also else "")
    return ValueError(f"{what}: {path} is {kind}, not a table; give {accepted}")


def _check_text(what: str, path, head: bytes, also: str, truncated: bool) -> str:
    """The sample decoded, or a refusal (empty, binary, not UTF-8)."""
    if not head.strip():
        raise ValueError(f"{what}: {path} is empty")
    if b"\x00" in head:
        raise _refuse(what, path, "binary data", also)
    try:
        return head.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        # a multi-byte character cut by the end of the sample is not an error
        if not (
            truncated and err.start >= len(head) - 3 and err.reason == "unexpected end of data"
        ):
            raise _refuse(what, path, "not UTF-8 text", also) from None
        return head[: err.start].decode("utf-8-sig")


def _gunzipped_head(source: Source) -> tuple[bytes, bool]:
    with source.open() as raw, gzip.GzipFile(fileobj=raw, mode="rb") as handle:
        head = handle.read(_HEAD)
        return head, len(head) == _HEAD


def sniff_table(path: Path | Source, *, what: str, also: str = "") -> str:
    """The kind of table file at ``path`` (see the module docstring); ``also`` names a further
    format the caller accepts (for the message)."""
    return sniff_source(path if isinstance(path, Source) else Source(path), what, also)[0]


def sniff_source(source: Source, what: str, also: str = "") -> tuple[str, str | None]:
    """:func:`sniff_table`, and the first 64 KB of the text decoded (None for Parquet and for
    files whose decompression is left to pandas)."""
    head = source.head(_HEAD)
    name, path = source.name, source.path
    if head.startswith(b"PAR1"):
        return "parquet", None
    if name.endswith((".parquet", ".pq")):
        if not head:
            raise ValueError(f"{what}: {path} is empty")
        raise _refuse(what, path, "not a Parquet file, despite its name", also)
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            raise _refuse(what, path, kind, also)
    if name.endswith(_COMPRESSED):
        return "compressed", None
    if head.startswith(b"PK\x03\x04"):
        raise _refuse(what, path, _zip_kind(name), also)
    if head.startswith(b"\x1f\x8b"):
        try:
            text, truncated = _gunzipped_head(source)
        except (OSError, EOFError, zlib.error):
            raise _refuse(what, path, "a damaged gzip file", also) from None
        return "gzip", _check_text(what, path, text, also, truncated)
    return "text", _check_text(what, path, head, also, len(head) == _HEAD)


#: the separators a text table may use, the likeliest first
SEPARATORS = (",", "\t", ";", "|")
SEPARATOR_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe"}


def sniff_separator(text: str | None, default: str) -> str:
    """The separator of a text table from its first non-blank line (the header): the one of
    :data:`SEPARATORS` that splits it into the most fields (quotes respected), ``default``
    (from the file's name) when it ties or when no separator splits the line."""
    if not text:
        return default
    first = next((line for line in text.splitlines() if line.strip()), "")
    counts = {sep: len(next(csv.reader([first], delimiter=sep), [])) for sep in SEPARATORS}
    best = max(counts.values())
    if best <= 1 or counts[default] == best:
        return default
    return next(sep for sep in SEPARATORS if counts[sep] == best)
