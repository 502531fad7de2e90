"""Argilla datasets, as exported to the Hugging Face Hub or to files (Parquet, JSON lines,
CSV), with the responses of every annotator of a record.

Two layouts:

- Argilla 2 (``Dataset.to_hub``/``to_datasets``): per question ``<q>.responses`` (the
  values), ``<q>.responses.users`` (who gave them) and ``<q>.responses.status``, three
  parallel lists per record; the record's ``id``;
- Argilla 1 (``FeedbackDataset``): per question a column ``<q>`` holding a list of
  ``{"user_id", "value", "status"}`` objects (or the same as a dict of three lists), beside
  ``<q>-suggestion`` columns; the record's ``external_id``.

Responses with status ``discarded`` or ``draft`` are dropped and counted; suggestions (a
model's answers) are not read. A multi-label answer with several labels is dropped and
counted.
"""

from __future__ import annotations

import pandas as pd

from ._common import Export, Rows, choose_field, is_missing, one_answer, parse_nested

__all__ = ["read_argilla", "is_argilla"]

_RESPONSES, _USERS, _STATUS = ".responses", ".responses.users", ".responses.status"
_WORKER = "user_id"


def _v2_questions(columns) -> list[str]:
    names = set(map(str, columns))
    return [
        c[: -len(_RESPONSES)]
        for c in map(str, columns)
        if c.endswith(_RESPONSES) and c[: -len(_RESPONSES)] + _USERS in names
    ]


def _v1_questions(frame: pd.DataFrame) -> list[str]:
    found = []
    for column in frame.columns:
        sample = next((parse_nested(v) for v in frame[column] if not is_missing_cell(v)), None)
        if isinstance(sample, dict) and {"user_id", "value"} <= set(sample):
            found.append(str(column))
        elif (
            isinstance(sample, list)
            and sample
            and isinstance(sample[0], dict)
            and {"user_id", "value"} <= set(sample[0])
        ):
            found.append(str(column))
    return found


def is_missing_cell(value) -> bool:
    """An empty cell: a missing scalar or blank text (a list, even an empty one, is a value)."""
    if isinstance(value, str):
        return not value.strip()
    return not hasattr(value, "__len__") and is_missing(value)


def is_argilla(frame: pd.DataFrame) -> bool:
    return bool(_v2_questions(frame.columns)) or bool(_v1_questions(frame.head(20)))


def _responses(cell) -> list[tuple]:
    """(user, value, status) of each response in an Argilla 1 cell."""
    cell = parse_nested(cell)
    if isinstance(cell, dict):
        keys = ("user_id", "value", "status")
        lists = [list(parse_nested(cell.get(k)) or []) for k in keys]
        return list(zip(*lists, strict=False))
    if isinstance(cell, list):
        return [
            (r.get("user_id"), r.get("value"), r.get("status")) for r in cell if isinstance(r, dict)
        ]
    return []


def read_argilla(
    frame: pd.DataFrame, *, what: str, source: str, answer_field: str | None
) -> Export:
    """The judgments of an Argilla dataset (module docstring)."""
    v2 = _v2_questions(frame.columns)
    questions = v2 or _v1_questions(frame)
    task = (
        "id"
        if v2 and "id" in frame.columns
        else ("external_id" if "external_id" in frame.columns else None)
    )
    rows = Rows()
    if what == "values":
        candidates = [q for q in questions if _numeric(frame, q, bool(v2))]
    else:
        candidates = questions
    name = choose_field(
        candidates,
        answer_field,
        what=what,
        source=source,
        kind="argilla",
        others=[q for q in questions if q not in candidates],
    )
    for position, (_, row) in enumerate(frame.iterrows()):
        record = row[task] if task is not None and not is_missing_cell(row[task]) else position
        for user, value, status in _row_responses(row, name, bool(v2)):
            if status is not None and str(status).lower() != "submitted":
                rows.drop(str(status).lower())
                continue
            answer = one_answer(parse_nested(value), rows)
            if answer is not None:
                rows.add(record, user, answer)
    roles = {"task": task or "record", "worker": _WORKER, "answer": name}
    return rows.export("argilla", source, roles, notes=[f"answers: question {name}"])


def _row_responses(row: pd.Series, name: str, v2: bool) -> list[tuple]:
    if not v2:
        return _responses(row[name])
    values = parse_nested(row[name + _RESPONSES])
    users = parse_nested(row[name + _USERS])
    status_column = name + _STATUS
    statuses = parse_nested(row[status_column]) if status_column in row.index else None
    values = values if isinstance(values, list) else []
    users = users if isinstance(users, list) else []
    statuses = statuses if isinstance(statuses, list) else [None] * len(values)
    return list(zip(users, values, statuses, strict=False))


def _numeric(frame: pd.DataFrame, name: str, v2: bool) -> bool:
    values = [v for _, row in frame.iterrows() for _, v, _ in _row_responses(row, name, v2)]
    values = [v for v in values if not isinstance(v, (list, dict)) and v is not None]
    return bool(values) and pd.to_numeric(pd.Series(values), errors="coerce").notna().all()
