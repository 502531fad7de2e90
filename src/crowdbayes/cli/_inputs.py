"""Reading the side tables of a command: id lists, ``id, label`` tables, feature tables, and ids
read as text matched to a model's ids.

Imported by the command handlers only (pandas is loaded when a command runs, not when the
parser is built).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.io import read_table, read_table_rows

__all__ = [
    "feature_frame",
    "id_column",
    "ids_like",
    "integer_ids",
    "is_npy",
    "read_columns",
    "read_npy",
    "task_labels",
]


def read_columns(path: str, what: str, columns: tuple[str, ...], ids=()) -> pd.DataFrame:
    """The table at ``path`` (``ids``: columns read as text), refused without ``columns``."""
    table = read_table(path, what=what, id_columns=tuple(ids) or columns)
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(
            f"{what}: column {missing[0]!r} is missing; got {list(map(str, table.columns))}"
        )
    return table


def task_labels(path: str, what: str, task: str, label: str) -> pd.Series:
    """A ``task, label`` table as a Series of labels indexed by task."""
    table = read_columns(path, what, (task, label), ids=(task,))
    return table.set_index(task)[label]


def id_column(path: str, column: str, what: str) -> pd.Index:
    """The ids in ``column`` of the table at ``path`` (read as text), in order, once each."""
    table, rows = read_table_rows(path, what=what, id_columns=(column,))
    if column not in table.columns:
        raise ValueError(
            f"{what}: column {column!r} is missing; got {list(map(str, table.columns))}"
        )
    values = table[column]
    missing = np.flatnonzero(values.isna().to_numpy())
    if missing.size:
        raise ValueError(f"{what}: {missing.size} row(s) have no {column} ({rows.some(missing)})")
    return pd.Index(values.unique(), name=column)


def feature_frame(path: str | None, column: str, what: str) -> pd.DataFrame | None:
    """A feature table indexed by its ``column`` of ids (None without a path)."""
    if path is None:
        return None
    return read_columns(path, what, (column,)).set_index(column)


def ids_like(values, known: pd.Index) -> np.ndarray:
    """Ids read from a file are text: as integers when the model's ids are integers and every
    value is a whole number; unknown ids stay as given (a task with no label yet, a new
    worker)."""
    values = pd.Series(np.asarray(values, dtype=object))
    if not pd.api.types.is_integer_dtype(known) or values.empty:
        return values.to_numpy()
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.notna().all() and (numbers == numbers.round()).all():
        return numbers.astype(np.int64).to_numpy()
    return values.to_numpy()


def read_npy(path: str) -> np.ndarray:
    if not Path(path).exists():
        raise FileNotFoundError(f"features: file not found: {path}")
    try:
        values = np.load(path, allow_pickle=False)
    except ValueError as err:
        raise ValueError(f"features: {path} is not a numeric .npy array ({err})") from None
    if values.ndim < 2 or len(values) == 0:
        raise ValueError(
            f"features: expected an array of shape (n_items, n_features, ...); got {values.shape}"
        )
    if not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
        raise ValueError(f"features: the array must be numeric; got dtype {values.dtype}")
    values = values.astype(np.float32 if values.dtype == np.float32 else np.float64)
    bad = ~np.isfinite(values.reshape(len(values), -1))
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(
            f"features: {int(bad.any(axis=1).sum())} row(s) hold missing or infinite values "
            f"(first: item {row})"
        )
    return values


def is_npy(path: str) -> bool:
    """Whether ``path`` names a NumPy ``.npy`` array: by its name, or by its content."""
    if path.lower().endswith(".npy"):
        return True
    try:
        with open(path, "rb") as handle:
            return handle.read(6) == b"\x93NUMPY"
    except OSError:
        return False  # the table reader names the problem


def integer_ids(table: pd.DataFrame, columns: tuple[str, str], rows) -> pd.DataFrame:
    """Ids read as text from a file become integers, to index the rows of a .npy array
    (``rows`` names the file's rows in messages)."""
    table = table.copy()
    for column in columns:
        if column not in table.columns:
            continue  # Links names the missing column
        values = pd.to_numeric(table[column], errors="coerce")
        bad = values.isna() | (values != values.round())
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(
                f"links: column {column!r} must hold integer row numbers of the .npy features; "
                f"got {table[column].iloc[row]!r} on {rows.one(row)}"
            )
        table[column] = values.astype(np.int64)
    return table


# ---------------------------------------------------------------------------- exports
def read_export(
    args,
    *,
    kind: str,
    long_columns: tuple[str, ...],
    answer: str | None,
    answer_flag: str = "--label-column",
):
    """The judgments of ``args.input``: ``(data, export)`` — the
    :class:`~crowdbayes.exports.Export` of a tool's export and its long table, or (``export``
    None) what the family reads as before: the file of a plain long table, opened once (a pipe
    is read once, :class:`~crowdbayes.data.source.Source`), or ``args.input`` itself for a
    named data set.

    ``long_columns`` are the columns a long table has (two of them in the header skip the
    detection); ``answer`` is the answer field the user named (None: chosen from the export).
    """
    from ..data.io import open_source
    from ..exports import ExportError, read_judgments

    fmt = getattr(args, "format", None) or "auto"
    if getattr(args, "dataset", None) is not None or args.input is None or fmt == "long":
        return args.input, None
    what = {"pairs": "comparisons"}.get(kind, kind)
    source = open_source(args.input, what)
    if fmt == "auto" and not _may_be_export(source, long_columns):
        return source, None
    try:
        export = read_judgments(
            source,
            format=fmt,
            kind=kind,
            answer_field=answer,
            long_columns=long_columns,
            task=getattr(args, "task_column", None),
        )
    except ExportError as err:
        raise ValueError(err.for_cli(answer_flag)) from None
    if export.format == "long":
        return source, None
    return export.table, export


def _may_be_export(source, long_columns: tuple[str, ...]) -> bool:
    """Whether the file may be an export (so its content is read to tell): JSON, or a table
    whose header has fewer than two of the long table's columns. A file that is not text is
    left to the table reader, which names what it is."""
    from ..exports.detect import head_bytes

    try:
        head = head_bytes(source)
        if head[:4] == b"PAR1":
            return len(set(long_columns) & set(_parquet_columns(source))) < 2
        text = _decoded(head)
    except (OSError, UnicodeDecodeError, EOFError, ImportError, ValueError):
        return False
    if "\x00" in text:
        return False
    stripped = text.lstrip()
    if stripped[:1] in ("[", "{"):
        return True
    header = stripped.split("\n", 1)[0].rstrip("\r")
    names = {n.strip().strip('"') for n in re.split("[\t,;|]", header)}
    return len(set(long_columns) & names) < 2


def _decoded(head: bytes) -> str:
    """The sample as text; a character cut by the end of the sample is left out."""
    try:
        return head.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 4:
            raise
        return head[: err.start].decode("utf-8-sig")


def _parquet_columns(source) -> list[str]:
    import pyarrow.parquet as pq

    with source.open() as handle:
        return list(pq.read_schema(handle).names)


def export_summary(inputs) -> list[str]:
    """The summary's line about an export: what was read, what was dropped and why."""
    export = inputs.extra.get("export")
    return [export.summary()] if export is not None else []


def export_inputs(export) -> tuple[dict, dict]:
    """What an export adds to a family's :class:`~._record.Inputs`: ``report`` entries
    (what was dropped) and ``extra`` entries (the export itself)."""
    if export is None:
        return {}, {}
    report = {"dropped": dict(export.dropped)} if _report_takes("dropped") else {}
    return report, {"export": export}


def _report_takes(name: str) -> bool:
    """Whether :func:`crowdbayes.report.build` (imported by the report command before it
    reads its input) takes the keyword ``name``: ``Inputs.report`` is passed to it."""
    import inspect
    import sys

    report = sys.modules.get("crowdbayes.report")
    if report is None:
        return False
    return name in inspect.signature(report.build).parameters


def id_names(args, default_task: str, default_worker: str) -> tuple[str, str]:
    """The names of the task and worker ids in the outputs: the export's own, or the
    command line's columns."""
    return getattr(args, "id_names", None) or (default_task, default_worker)
