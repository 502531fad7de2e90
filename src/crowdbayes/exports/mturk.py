"""Amazon Mechanical Turk batch results (CSV): one row per assignment.

Columns: ``HITId`` (the task), ``WorkerId``, ``AssignmentStatus`` (``Submitted``,
``Approved``, ``Rejected``), ``Input.<field>`` (the HIT's data) and ``Answer.<field>``. The
answer takes one of the forms of the templates:

- ``Answer.<name>``: the value of a form field;
- ``Answer.<name>.label``: the crowd classifier templates (``crowd-classifier``);
- ``Answer.<class>.on``: one ``true``/``false`` column per radio button of a
  ``crowd-radio-group`` (the class is the button whose column is ``true``); these columns
  form one field named ``Answer.*.on``;
- ``Answer.taskAnswers``: the answers as JSON (``[{"category": {"label": "Cat"}}]``),
  read as the columns above.

Rejected assignments are dropped and counted; so are empty answers and radio groups with no
or several buttons on.
"""

from __future__ import annotations

import pandas as pd

from ._common import Export, ExportError, Rows, choose_field, is_missing, one_answer, parse_nested

__all__ = ["read_mturk", "is_mturk"]

_TASK, _WORKER, _STATUS = "HITId", "WorkerId", "AssignmentStatus"
_RADIO = "Answer.*.on"
_TASK_ANSWERS = "Answer.taskAnswers"


def is_mturk(columns) -> bool:
    columns = set(map(str, columns))
    return {_TASK, _WORKER} <= columns or {_STATUS, _WORKER} <= columns


def _flatten(prefix: str, value, into: dict) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}", inner, into)
    else:
        into[prefix] = value


def _task_answers(frame: pd.DataFrame) -> pd.DataFrame:
    """``Answer.taskAnswers`` (JSON) spread into ``Answer.<name>[.<key>]`` columns."""
    if _TASK_ANSWERS not in frame.columns:
        return frame
    spread = []
    for text in frame[_TASK_ANSWERS]:
        answers = parse_nested(text)
        flat: dict = {}
        if isinstance(answers, list) and answers and isinstance(answers[0], dict):
            _flatten("Answer", answers[0], flat)
        spread.append(flat)
    extra = pd.DataFrame(spread, index=frame.index)
    extra = extra[[c for c in extra.columns if c not in frame.columns]]
    return pd.concat([frame.drop(columns=_TASK_ANSWERS), extra], axis=1)


def read_mturk(frame: pd.DataFrame, *, what: str, source: str, answer_field: str | None) -> Export:
    """The judgments of a Mechanical Turk batch results table (module docstring)."""
    frame = _task_answers(frame)
    for column in (_TASK, _WORKER):
        if column not in frame.columns:
            raise ExportError(
                f"{what} ({source}): a Mechanical Turk batch without a {column!r} column; "
                "give the batch results CSV as downloaded"
            )
    answers = [str(c) for c in frame.columns if str(c).startswith("Answer.")]
    radio = [c for c in answers if c.endswith(".on")]
    fields = [c for c in answers if not c.endswith(".on")] + ([_RADIO] if radio else [])
    if what == "values":
        fields = [c for c in fields if c != _RADIO and _numeric(frame[c])]
    name = choose_field(fields, answer_field, what=what, source=source, kind="mturk")
    rows = Rows()
    statuses = frame[_STATUS] if _STATUS in frame.columns else pd.Series("", index=frame.index)
    for index, row in frame.iterrows():
        if str(statuses[index]).strip().lower() == "rejected":
            rows.drop("rejected")
            continue
        value = _radio_choice(row, radio) if name == _RADIO else row[name]
        answer = one_answer(value, rows)
        if answer is not None:
            rows.add(row[_TASK], row[_WORKER], answer)
    column = "Answer" if name == _RADIO else name
    roles = {"task": _TASK, "worker": _WORKER, "answer": column}
    return rows.export("mturk", source, roles, notes=[f"answers: {name}"])


def _radio_choice(row: pd.Series, columns: list[str]):
    """The class of the one radio button on (``Answer.<class>.on``): a list of the buttons
    on, which :func:`one_answer` reads (none: empty; several: dropped)."""
    on = [c for c in columns if str(row[c]).strip().lower() in ("true", "1", "on", "yes")]
    return [c.removeprefix("Answer.").removesuffix(".on") for c in on]


def _numeric(values: pd.Series) -> bool:
    present = values[~values.map(is_missing)]
    return len(present) > 0 and pd.to_numeric(present, errors="coerce").notna().all()
