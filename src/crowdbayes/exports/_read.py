"""The reading of an export: detection, the reader of its format, the checks after."""

from __future__ import annotations

from typing import Any

from . import FORMATS
from ._common import Export, ExportError, format_name
from .argilla import read_argilla
from .detect import Loaded, check_format, detect, load
from .label_studio import read_label_studio
from .mturk import read_mturk
from .prolific import read_prolific
from .toloka import read_toloka
from .wide import read_wide

#: the readers of tables, by format
_TABLE_READERS = {"toloka": read_toloka, "mturk": read_mturk, "argilla": read_argilla}

__all__ = ["read_judgments", "detect_format"]

#: the kinds of judgment, as ``kind=`` names them, and as the messages name their input
_KINDS = {
    "labels": "labels",
    "values": "values",
    "pairs": "comparisons",
    "comparisons": "comparisons",
    "rankings": "rankings",
}
#: the columns of a plain long table of each kind (``long_columns=`` default)
_LONG = {
    "labels": ("task", "worker", "label"),
    "values": ("task", "worker", "value"),
    "comparisons": ("worker", "left", "right", "label"),
    "rankings": ("query", "item", "rank"),
}


def detect_format(
    source: Any,
    *,
    kind: str = "labels",
    long_columns: tuple[str, ...] | None = None,
    task: str | None = None,
) -> str:
    """The format of ``source`` (a path or a DataFrame), from its content: one of
    :data:`FORMATS` but ``auto``."""
    what = _what(kind)
    return detect(load(source, what=what), long_columns=_long(what, long_columns), task=task)


def read_judgments(
    source: Any,
    *,
    format: str | None = None,
    kind: str | None = None,
    answer_field: str | None = None,
    long_columns: tuple[str, ...] | None = None,
    task: str | None = None,
) -> Export:
    """Judgments from a tool's export as a long table.

    Parameters
    ----------
    source : path or DataFrame
        The export: a file as the tool wrote it (JSON, JSON lines, CSV, TSV, Parquet,
        optionally gzip-compressed), or a DataFrame (a Hugging Face dataset's ``to_pandas()``).
    format : str, optional
        One of :data:`FORMATS`; ``None`` or ``"auto"`` detects it from the content.
    kind : {"labels", "values", "pairs", "rankings"}, optional
        What the answers are to be read as (default labels): classes (single or multiple
        choice, ratings as grades), numbers (numbers, ratings), pairwise preferences (Label
        Studio pairwise, Toloka side-by-side), rankings (Label Studio ranker).
    answer_field : str, optional
        The export's own name of the question to read (``OUTPUT:result``, ``Answer.category.
        label``, a Label Studio control tag's name ...); needed only when the export answers
        several questions of the kind.
    long_columns : tuple of str, optional
        The columns of a plain long table (what ``format="long"`` means for ``source``).
    task : str, optional
        The id column of a wide table.

    Returns
    -------
    Export
        The long table, its columns by role, the format, the gold answers, what was dropped.

    Raises
    ------
    ExportError
        One line naming the file and what to pass: content of another format than the one
        forced, no answer field of the kind or several (listed), a question with results of
        several types, nothing left after dropping.
    """
    what = _what(kind or "labels")
    if format not in (None, *FORMATS):
        raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")
    loaded = load(source, what=what)
    columns = _long(what, long_columns)
    if format in (None, "auto"):
        format = detect(loaded, long_columns=columns, task=task)
    else:
        check_format(loaded, format, what=what)
    export = _read(loaded, format, what, answer_field, columns, task)
    if what == "values":
        export = _numbers(export)
    if len(export.table) == 0:
        dropped = ", ".join(f"{n} {why}" for why, n in export.dropped.items()) or "none found"
        raise ExportError(
            f"{what} ({loaded.source}): no answers left to read from {format_name(format)} "
            f"(dropped: {dropped})"
        )
    return export


def _what(kind: str) -> str:
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {', '.join(_KINDS)}; got {kind!r}")
    return _KINDS[kind]


def _long(what: str, columns: tuple[str, ...] | None) -> tuple[str, ...]:
    return tuple(columns) if columns is not None else _LONG[what]


def _read(loaded: Loaded, format: str, what: str, answer_field, columns, task) -> Export:
    source = loaded.source
    if format == "long":
        return _long_export(loaded, what, columns)
    if format == "label-studio":
        return read_label_studio(
            _records(loaded, format, what), what=what, source=source, answer_field=answer_field
        )
    if format == "prolific":
        return read_prolific(
            _records(loaded, format, what), what=what, source=source, answer_field=answer_field
        )
    if format == "wide":
        return read_wide(loaded.frame, what=what, source=source, task=task)
    reader = _TABLE_READERS[format]
    return reader(loaded.frame, what=what, source=source, answer_field=answer_field)


def _records(loaded: Loaded, format: str, what: str) -> list:
    if not loaded.is_json:
        raise ExportError(
            f"{what} ({loaded.source}): {format_name(format)} is JSON; this is a table: pass "
            "{format}auto"
        )
    return loaded.records


def _long_export(loaded: Loaded, what: str, columns: tuple[str, ...]) -> Export:
    """A plain long table, as it is (``columns`` name its roles)."""
    roles = {
        "labels": ("task", "worker", "answer"),
        "values": ("task", "worker", "answer"),
        "comparisons": ("worker", "left", "right", "answer"),
        "rankings": ("task", "item", "rank"),
    }[what]
    return Export(loaded.frame, dict(zip(roles, columns, strict=True)), "long", loaded.source)


def _numbers(export: Export) -> Export:
    """Numeric answers as numbers; an answer that is not a number is dropped and counted."""
    import pandas as pd

    column = export.columns["answer"]
    numbers = pd.to_numeric(export.table[column], errors="coerce")
    if len(numbers) and numbers.isna().all():
        example = export.table[column].iloc[0]
        raise ExportError(
            f"values ({export.source}): the answers in {column!r} are not numbers (e.g. "
            f"{example!r}); crowdbayes labels reads classes, or pass {{answer}}FIELD for a "
            "numeric question"
        )
    bad = int(numbers.isna().sum())
    if bad:
        export.dropped["not a number"] = export.dropped.get("not a number", 0) + bad
    export.table = export.table.assign(**{column: numbers})[numbers.notna()]
    return export
