"""Readers for the exports of the tools people collect judgments with: Label Studio (JSON and
JSON-MIN), Toloka (results TSV), Amazon Mechanical Turk (batch results CSV), Prolific Task
Builder (``responses-by-task.jsonl``), Argilla / Hugging Face datasets (per-annotator response
columns), and the wide one-column-per-annotator table (cleanlab's multi-annotator format).

:func:`read_judgments` reads any of them — the format detected from the content, or forced —
into a long table (:class:`Export`): one row per judgment, with the export's own column names,
the gold answers the export carries, and what was dropped and why (rejected and cancelled
assignments, empty answers, skipped region results, multiple choices). A plain long table
passes through unchanged (format ``long``).

Multiple-choice answers: the label models read one class per answer, so an answer choosing
several classes at once is dropped and counted (``dropped["with several classes chosen"]``),
never split into several votes; an answer with one class chosen is read as that class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["FORMATS", "Export", "ExportError", "detect_format", "read_judgments"]

#: the formats of ``format=`` (``--format``); ``auto`` detects one from the content. Defined
#: here, light, for the command line's parser (the readers import pandas when first used).
FORMATS = ("auto", "long", "label-studio", "toloka", "mturk", "prolific", "argilla", "wide")

_LAZY = {
    "Export": "._common",
    "ExportError": "._common",
    "read_judgments": "._read",
    "detect_format": "._read",
}

if TYPE_CHECKING:  # pragma: no cover
    from ._common import Export, ExportError
    from ._read import detect_format, read_judgments


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
