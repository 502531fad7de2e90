"""Prolific Task Builder exports: ``responses-by-task.jsonl`` (one task a line, with its
``responses``), ``responses-by-submission.jsonl`` (one submission a line) and the API's
response records (``results`` of ``GET .../batches/{id}/responses``).

Every response record carries ``task_id``, ``participant_id`` and ``response`` — an object
with ``instruction_id``, ``type`` (``multiple_choice``, ``free_text``,
``multiple_choice_with_free_text`` ...) and ``answer``, a list of ``{"value": ...}`` — or
``responses``, a list of such objects (one per instruction). Keys of an enclosing line (the
task's ``task_id``, the submission's ``participant_id``) apply to the responses it lists.
The answer field is the instruction (its ``instruction_id``, or its ``instruction``/``title``
where the export names it). A response whose submission ``status`` is ``REJECTED`` or
``RETURNED`` is dropped and counted.
"""

from __future__ import annotations

from collections.abc import Iterator

from ._common import Export, ExportError, Rows, choose_field, one_answer

__all__ = ["read_prolific", "is_prolific"]

_TASK, _WORKER = "task_id", "participant_id"
_DROPPED = {"REJECTED": "rejected", "RETURNED": "returned", "TIMED-OUT": "timed out"}


def is_prolific(record: dict) -> bool:
    if not isinstance(record, dict):
        return False
    if isinstance(record.get("results"), list) and record["results"]:
        return is_prolific(record["results"][0])
    keys = set(record)
    return bool({"participant_id", "task_id"} & keys) and bool({"response", "responses"} & keys)


def _records(lines: list, inherited: dict | None = None) -> Iterator[dict]:
    """Every response record, with the keys of the lines that enclose it."""
    for line in lines:
        if not isinstance(line, dict):
            continue
        if isinstance(line.get("results"), list):
            yield from _records(line["results"], inherited)
            continue
        context = {**(inherited or {}), **{k: v for k, v in line.items() if k != "responses"}}
        nested = line.get("responses")
        if isinstance(nested, list) and nested and _is_record(nested[0]):
            yield from _records(nested, context)
        else:
            yield context | ({"response": nested} if nested is not None else {})


def _is_record(item) -> bool:
    """A nested response record (with ids of its own), not an instruction's answer."""
    return isinstance(item, dict) and bool({_TASK, _WORKER, "response", "responses"} & set(item))


def _answers(record: dict) -> list[dict]:
    response = record.get("response")
    if isinstance(response, dict):
        return [response]
    if isinstance(response, list):
        return [r for r in response if isinstance(r, dict)]
    return []


def _instruction(answer: dict) -> str:
    for key in ("instruction_id", "instruction", "title", "question"):
        if answer.get(key) is not None:
            return str(answer[key])
    return "answer"


def _values(answer: dict) -> list:
    values = answer.get("answer")
    if isinstance(values, list):
        return [v.get("value") if isinstance(v, dict) else v for v in values]
    return [values]


def read_prolific(lines: list, *, what: str, source: str, answer_field: str | None) -> Export:
    """The judgments of a Prolific Task Builder export (module docstring)."""
    records = list(_records(lines))
    types: dict[str, set] = {}
    for record in records:
        for answer in _answers(record):
            types.setdefault(_instruction(answer), set()).add(answer.get("type"))
    if what == "values":
        candidates = [n for n in types if _numeric(records, n)]
    else:
        candidates = [
            n
            for n, t in types.items()
            if t & {"multiple_choice", "multiple_choice_with_free_text", None}
        ]
    others = [n for n in types if n not in candidates]
    name = choose_field(
        candidates, answer_field, what=what, source=source, kind="prolific", others=others
    )
    rows = Rows()
    for record in records:
        status = str(record.get("status", "")).upper()
        if status in _DROPPED:
            rows.drop(_DROPPED[status])
            continue
        mine = [a for a in _answers(record) if _instruction(a) == name]
        if not mine:
            rows.drop("empty")
            continue
        if record.get(_TASK) is None or record.get(_WORKER) is None:
            raise ExportError(
                f"{what} ({source}): a Prolific response without {_TASK!r} or {_WORKER!r}; "
                "give responses-by-task.jsonl as exported"
            )
        answer = one_answer(_values(mine[0]), rows)
        if answer is not None:
            rows.add(record[_TASK], record[_WORKER], answer)
    roles = {"task": _TASK, "worker": _WORKER, "answer": name}
    return rows.export("prolific", source, roles, notes=[f"answers: instruction {name}"])


def _numeric(records: list, name: str) -> bool:
    values = [
        v for r in records for a in _answers(r) if _instruction(a) == name for v in _values(a)
    ]
    try:
        return bool(values) and all(float(v) == float(v) for v in values if v is not None)
    except (TypeError, ValueError):
        return False
