"""Label Studio exports: the JSON export (one object per task, with its ``annotations``) and
the JSON-MIN export (one flat object per annotation).

JSON: each task holds ``id``, ``data`` and ``annotations``; each annotation holds
``completed_by`` (a user id, or — in older versions — an object with ``id`` and ``email``),
``was_cancelled``, ``ground_truth`` and ``result``, a list of results, each with
``from_name`` (the control tag's name: the question), ``type`` and ``value``:

- ``choices``: ``value.choices``, a list (one class, or several for a multiple-choice tag);
- ``rating``: ``value.rating``; ``number``: ``value.number``;
- ``pairwise``: ``value.selected`` (``left`` or ``right``) of the two objects ``to_name``
  names (their values in ``data`` are the items compared);
- ``ranker``: ``value.ranker``, lists of item ids (the first list is the ranking);
- region results (``rectanglelabels``, ``polygonlabels``, ``labels`` spans ...) are not
  judgments of the whole task: they are skipped and counted.

Cancelled annotations (``was_cancelled``) are dropped and counted; an annotation marked
``ground_truth`` gives the task's gold answer (and stays one of its votes). JSON-MIN flattens
each annotation to ``id`` (the task), ``annotator``, ``annotation_id``, the task's data fields
and one key per question (a single choice as text, several as ``{"choices": [...]}``).
"""

from __future__ import annotations

from typing import Any

from ._common import Export, ExportError, Rows, choose_field, is_missing, one_answer

__all__ = ["read_label_studio", "is_label_studio", "is_label_studio_min"]

#: the result types that answer each kind of question
_TYPES = {
    "labels": ("choices", "rating"),
    "values": ("number", "rating"),
    "comparisons": ("pairwise",),
    "rankings": ("ranker",),
}
#: which command reads a result type (for the message when the kind asked has none)
_READER = {
    "choices": "crowdbayes labels",
    "rating": "crowdbayes labels --ordered, or crowdbayes values",
    "number": "crowdbayes values",
    "pairwise": "crowdbayes prefs",
    "ranker": "crowdbayes rank",
}
#: JSON-MIN keys that describe the annotation, not an answer
_MIN_META = {"id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time"}
_TASK, _WORKER = "id", "annotator"


def is_label_studio(records: list) -> bool:
    first = records[0] if records and isinstance(records[0], dict) else {}
    return "annotations" in first or "completions" in first


def is_label_studio_min(records: list) -> bool:
    first = records[0] if records and isinstance(records[0], dict) else {}
    return "annotator" in first or "annotation_id" in first


def annotator(completed_by: Any) -> Any:
    """The annotator of ``completed_by``: an id, or (older versions) an object with one."""
    if isinstance(completed_by, dict):
        for key in ("id", "email", "username"):
            if completed_by.get(key) is not None:
                return completed_by[key]
        return None
    return completed_by


def read_label_studio(records: list, *, what: str, source: str, answer_field: str | None) -> Export:
    """The judgments of a Label Studio JSON or JSON-MIN export (module docstring)."""
    if is_label_studio(records):
        return _read_json(records, what=what, source=source, answer_field=answer_field)
    if is_label_studio_min(records):
        return _read_min(records, what=what, source=source, answer_field=answer_field)
    raise ExportError(
        f"{what} ({source}): not a Label Studio export (no 'annotations' nor 'annotator' "
        "keys); pass {format}long for a plain table"
    )


# ---------------------------------------------------------------------------------- JSON
def _annotations(task: dict) -> list:
    return list(task.get("annotations") or task.get("completions") or [])


def _read_json(records: list, *, what: str, source: str, answer_field: str | None) -> Export:
    types: dict[str, set] = {}
    for task in records:
        for annotation in _annotations(task):
            for result in annotation.get("result") or []:
                types.setdefault(result.get("from_name"), set()).add(result.get("type"))
    wanted = _TYPES[what]
    candidates = [name for name, kinds in types.items() if kinds & set(wanted)]
    others = [name for name, kinds in types.items() if not kinds & set(wanted)]
    hint = _hint(types, others)
    name = choose_field(
        candidates,
        answer_field,
        what=what,
        source=source,
        kind="label-studio",
        others=others,
        hint=hint,
    )
    question_types = types[name] & set(wanted) or types[name]
    if len(question_types) > 1:
        raise ExportError(
            f"{what} ({source}): question {name!r} has results of several types "
            f"({', '.join(sorted(question_types))}); export one question type at a time"
        )
    (kind,) = question_types
    rows = Rows()
    skipped: dict[str, int] = {}
    for position, task in enumerate(records):
        task_id = task.get("id", position)
        for annotation in _annotations(task):
            if annotation.get("was_cancelled"):
                rows.drop("cancelled")
                continue
            worker = annotator(annotation.get("completed_by"))
            results = annotation.get("result") or []
            for result in results:
                if result.get("from_name") != name and "value" in result:
                    other = result.get("type")
                    if other not in _READER:
                        skipped[other] = skipped.get(other, 0) + 1
            mine = [r for r in results if r.get("from_name") == name]
            if not mine:
                rows.drop("empty")
                continue
            if worker is None:
                rows.drop("without an annotator")
                continue
            _add_result(rows, task, task_id, worker, mine[0], kind, what, annotation)
    for other, n in skipped.items():
        rows.drop(f"{other} results skipped (regions, not judgments of the whole task)", n)
    return _export(rows, what, source, name, kind)


def _hint(types: dict, others: list) -> str:
    readers = sorted({_READER[t] for n in others for t in types[n] if t in _READER})
    return f" ({'; '.join(readers)} read those)" if readers else " (regions, not read)"


def _add_result(
    rows: Rows, task: dict, task_id, worker, result: dict, kind: str, what: str, annotation: dict
) -> None:
    value = result.get("value") or {}
    if kind == "pairwise":
        _add_pair(rows, task, task_id, worker, result)
        return
    if kind == "ranker":
        _add_ranking(rows, task_id, worker, value.get("ranker"))
        return
    answer = one_answer(value.get(kind), rows)
    if answer is None:
        return
    rows.add(task_id, worker, answer)
    if annotation.get("ground_truth"):
        rows.gold[task_id] = answer


def _add_pair(rows: Rows, task: dict, task_id, worker, result: dict) -> None:
    """A pairwise result: the two objects it compares (their values in the task's data) and
    the one selected."""
    names = result.get("to_name")
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    data = task.get("data") or {}
    items = [data.get(n) for n in names or ()]
    if len(items) != 2 or any(is_missing(i) for i in items):
        rows.drop("pairwise without two objects in the task's data")
        return
    selected = (result.get("value") or {}).get("selected")
    if selected not in ("left", "right"):
        rows.drop("empty")
        return
    left, right = items
    rows.add(task_id, worker, left, right, left if selected == "left" else right)


def _add_ranking(rows: Rows, task_id, worker, ranker) -> None:
    """A ranker result: its first list of items, best first (later lists are buckets of
    items left unranked)."""
    lists = list(ranker.values()) if isinstance(ranker, dict) else [ranker]
    ranked = lists[0] if lists and isinstance(lists[0], list) else []
    if not ranked:
        rows.drop("empty")
        return
    for rank, item in enumerate(ranked, start=1):
        rows.add(task_id, worker, item, rank)


def _export(rows: Rows, what: str, source: str, name: str, kind: str) -> Export:
    roles = {"task": _TASK, "worker": _WORKER}
    if what == "comparisons":
        roles.update(left="left", right="right", answer=name)
    elif what == "rankings":
        roles.update(item="item", rank=name)
    else:
        roles.update(answer=name)
    return rows.export(
        "label-studio", source, roles, notes=[f"answers: the {kind} question {name!r}"]
    )


# ---------------------------------------------------------------------------------- JSON-MIN
def _read_min(records: list, *, what: str, source: str, answer_field: str | None) -> Export:
    import pandas as pd

    frame = pd.DataFrame.from_records(records)
    fields = [c for c in frame.columns if c not in _MIN_META]
    usable = {c: _min_kind(frame[c]) for c in fields}
    want = {"labels": ("choices", "text", "number"), "values": ("number",)}.get(what, ())
    typed = [c for c, k in usable.items() if k in want]
    candidates = [c for c in typed if _answer_like(frame, c)] or typed
    if len(candidates) > 1 and what == "labels":
        candidates = [c for c in candidates if usable[c] == "choices"] or candidates
    others = [c for c in fields if c not in candidates]
    name = choose_field(
        candidates, answer_field, what=what, source=source, kind="label-studio", others=others
    )
    rows = Rows()
    for record in records:
        value = record.get(name)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            rows.drop(f"{name} regions skipped (not judgments of the whole task)")
            continue
        if isinstance(value, dict) and "rating" in value:
            value = value["rating"]
        answer = one_answer(value, rows)
        if answer is None:
            continue
        rows.add(record.get(_TASK), record.get(_WORKER), answer)
    return _export(rows, what, source, name, usable.get(name, "answer"))


def _min_kind(values) -> str:
    """What a JSON-MIN column holds: ``choices`` (``{"choices": [...]}`` objects), ``number``,
    ``text``, or ``other`` (regions, nested data)."""
    present = [v for v in values if not is_missing(v)]
    if not present:
        return "other"
    if all(isinstance(v, dict) and "choices" in v for v in present):
        return "choices"
    if any(isinstance(v, dict) and "choices" in v for v in present) and all(
        isinstance(v, (str, dict)) for v in present
    ):
        return "choices"  # single choices as text, multiple as {"choices": [...]}
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "number"
    if all(isinstance(v, str) for v in present):
        return "text"
    return "other"


def _answer_like(frame, column: str) -> bool:
    """Whether a JSON-MIN column looks like a question's answers rather than the task's data
    (which JSON-MIN mixes in): data is the same in every annotation of a task and differs
    between tasks (or never changes); answers differ between the annotators of a task, or
    repeat across tasks from a few classes."""
    values = frame[column].map(lambda v: str(v) if isinstance(v, (dict, list)) else v)
    if "id" not in frame.columns:
        return values.nunique(dropna=True) > 1
    within = values.groupby(frame["id"].to_numpy()).nunique(dropna=True)
    distinct = values.nunique(dropna=True)
    return bool((within > 1).any()) or 1 < distinct < len(within)
