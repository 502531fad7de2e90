"""Toloka results (TSV): one row per assignment of a task.

Columns: ``INPUT:<field>`` (the task's data), ``OUTPUT:<field>`` (the answers),
``GOLDEN:<field>`` (the known answer of a control task), ``HINT:*``, ``ACCEPT:*`` and
``ASSIGNMENT:*`` (``task_id``, ``worker_id``, ``status``, ``assignment_id``, ``started`` ...).
Assignments ``REJECTED`` are dropped and counted, as are ``SKIPPED`` and ``EXPIRED`` ones
(no answer) and empty answers; ``GOLDEN:<field>`` gives the gold answer of its task.

Side-by-side comparisons (``crowdbayes prefs``): the two ``INPUT`` fields shown (named
``..left..``/``..right..``, ``.._a``/``.._b``, or the only two) are the items compared; the
answer names one of them (``left``/``right``, ``a``/``b``, ``1``/``2``, or the item itself),
or a tie (``equal``, ``same``, ``tie``, ``both``).
"""

from __future__ import annotations

import pandas as pd

from ._common import Export, ExportError, Rows, choose_field, is_missing, one_answer

__all__ = ["read_toloka", "is_toloka"]

_TASK, _WORKER, _STATUS = "ASSIGNMENT:task_id", "ASSIGNMENT:worker_id", "ASSIGNMENT:status"
#: statuses of assignments that hold no usable answer, and how the summary counts them
_DROPPED = {"REJECTED": "rejected", "SKIPPED": "skipped", "EXPIRED": "expired"}
_TIES = {"equal", "same", "tie", "both", "draw"}


def is_toloka(columns) -> bool:
    return any(str(c).startswith("ASSIGNMENT:") for c in columns) or (
        any(str(c).startswith("INPUT:") for c in columns)
        and any(str(c).startswith("OUTPUT:") for c in columns)
    )


def read_toloka(frame: pd.DataFrame, *, what: str, source: str, answer_field: str | None) -> Export:
    """The judgments of a Toloka results table (module docstring)."""
    outputs = [c for c in frame.columns if str(c).startswith("OUTPUT:")]
    name = choose_field(
        outputs,
        answer_field,
        what=what,
        source=source,
        kind="toloka",
    )
    task = _TASK if _TASK in frame.columns else _only_input(frame, what, source)
    if _WORKER not in frame.columns:
        raise ExportError(
            f"{what} ({source}): a Toloka export without {_WORKER!r}; export the results with "
            "the assignment columns"
        )
    rows = Rows()
    statuses = frame[_STATUS] if _STATUS in frame.columns else pd.Series("", index=frame.index)
    pair = _pair_columns(frame, what, source) if what == "comparisons" else None
    golden = "GOLDEN:" + name.removeprefix("OUTPUT:")
    for index, row in frame.iterrows():
        status = str(statuses[index]).strip().upper()
        if status in _DROPPED:
            rows.drop(_DROPPED[status])
            continue
        if is_missing(row[_WORKER]):
            rows.drop("without a worker (tasks not assigned)")
            continue
        if golden in frame.columns and not is_missing(row[golden]):
            rows.gold[row[task]] = row[golden]
        if pair is not None:
            _add_pair(rows, row, task, pair, name)
            continue
        answer = one_answer(row[name], rows)
        if answer is not None:
            rows.add(row[task], row[_WORKER], answer)
    roles = {"task": task, "worker": _WORKER}
    if pair is not None:
        roles.update(left=pair[0], right=pair[1])
        rows.gold.clear()  # a side-by-side control task's answer is no class to clamp
    return rows.export("toloka", source, {**roles, "answer": name}, notes=[f"answers: {name}"])


def _only_input(frame: pd.DataFrame, what: str, source: str) -> str:
    inputs = [c for c in frame.columns if str(c).startswith("INPUT:")]
    if len(inputs) == 1:
        return inputs[0]
    raise ExportError(
        f"{what} ({source}): a Toloka export without {_TASK!r} and with {len(inputs)} INPUT "
        "columns; export the results with the assignment columns"
    )


def _pair_columns(frame: pd.DataFrame, what: str, source: str) -> tuple[str, str]:
    """The two ``INPUT`` columns a side-by-side task shows."""
    inputs = [str(c) for c in frame.columns if str(c).startswith("INPUT:")]
    for first, second in (("left", "right"), ("_a", "_b"), ("1", "2")):
        left = [c for c in inputs if first in c.lower()]
        right = [c for c in inputs if second in c.lower()]
        if len(left) == 1 and len(right) == 1 and left != right:
            return left[0], right[0]
    if len(inputs) == 2:
        return inputs[0], inputs[1]
    raise ExportError(
        f"{what} ({source}): cannot tell the two items of a side-by-side task among the INPUT "
        f"columns {inputs}; name them ..._left and ..._right"
    )


def _add_pair(rows: Rows, row: pd.Series, task: str, pair: tuple[str, str], name: str) -> None:
    answer = one_answer(row[name], rows)
    if answer is None:
        return
    left, right = row[pair[0]], row[pair[1]]
    word = str(answer).strip().lower()
    sides = {
        pair[0].lower(): left,
        pair[1].lower(): right,
        "left": left,
        "right": right,
        "a": left,
        "b": right,
        "1": left,
        "2": right,
    }
    if word in _TIES:
        chosen = "equal"
    elif answer in (left, right):
        chosen = answer
    elif word in sides:
        chosen = sides[word]
    else:
        rows.drop("side-by-side answers naming neither item")
        return
    rows.add(row[task], row[_WORKER], left, right, chosen)
