"""The wide table: one row per task, one column per annotator, a cell per answer, empty (NaN)
where the annotator did not answer — cleanlab's multi-annotator format
(``multi_annotator_labels``, shape ``(n_examples, n_annotators)``).

The task ids are the table's id column: the one ``--task-column`` names, a column the writer
of a DataFrame's index left without a name (``Unnamed: 0``), or a first column whose values
are distinct and not answers; without one, tasks are numbered by row from 0 (as cleanlab
numbers its examples). Every other column is an annotator.
"""

from __future__ import annotations

import pandas as pd

from ._common import Export, ExportError, Rows, is_missing, one_answer

__all__ = ["read_wide", "looks_wide"]

_WORKER = "annotator"


def id_column(frame: pd.DataFrame, task: str | None) -> str | None:
    """The column of task ids of a wide table (module docstring), or None."""
    if task is not None and task in frame.columns:
        return task
    first = frame.columns[0]
    if str(first).startswith("Unnamed: ") or str(first) == "":
        return first
    values = frame[first]
    if values.isna().any() or not values.is_unique or frame.shape[1] < 3:
        return None
    others = set(pd.unique(frame.iloc[:, 1:].to_numpy().ravel()))
    return first if not set(values.astype(str)) & {str(v) for v in others} else None


def looks_wide(frame: pd.DataFrame, long_columns: tuple[str, ...], task: str | None) -> bool:
    """Whether a table that lacks the long table's worker and answer columns is a wide
    table: annotator columns answering from one small set of classes (every annotator's
    answers share classes with the others'), at least two beside a column of distinct task
    ids, or — a bare matrix, tasks numbered by row — at least three with empty cells."""
    if any(c in frame.columns for c in long_columns[1:]):  # a wide table has a task column
        return False
    key = id_column(frame, task)
    annotators = [c for c in frame.columns if c != key]
    if key is None and (len(annotators) < 3 or not frame.isna().any().any()):
        return False  # a bare matrix: cleanlab's, with the cells nobody labelled empty
    if len(annotators) < 2:
        return False
    answers = {c: set(frame[c].dropna().astype(str)) for c in annotators}
    pooled = set().union(*answers.values())
    if not pooled or len(pooled) > 50:
        return False
    return all(
        values & set().union(*(answers[o] for o in annotators if o != c)) or not values
        for c, values in answers.items()
    )


def read_wide(frame: pd.DataFrame, *, what: str, source: str, task: str | None = None) -> Export:
    """The judgments of a wide table (module docstring)."""
    key = id_column(frame, task)
    if key is not None and str(key).startswith("Unnamed: "):
        frame = frame.rename(columns={key: "task"})
        key = "task"
    tasks = frame[key] if key is not None else pd.Series(range(len(frame)), index=frame.index)
    annotators = [c for c in frame.columns if c != key]
    if not annotators:
        raise ExportError(
            f"{what} ({source}): a wide table needs one column per annotator; it has only "
            f"{list(frame.columns)}; pass {{format}}long for a task,worker,label table"
        )
    answer = "value" if what == "values" else "label"
    rows = Rows()
    cells = frame[annotators].to_numpy(dtype=object)
    for task_id, answers in zip(tasks, cells, strict=True):  # task by task, as a long table
        for column, value in zip(annotators, answers, strict=True):
            if is_missing(value):
                continue  # not labelled by this annotator: the format's empty cell
            kept = one_answer(value, rows)
            if kept is not None:
                rows.add(task_id, column, kept)
    roles = {"task": key if key is not None else "task", "worker": _WORKER, "answer": answer}
    notes = [f"{len(annotators)} annotator columns, {len(frame)} tasks"]
    return rows.export("wide", source, roles, notes=notes)
