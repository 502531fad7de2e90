"""Realistic exports of one simulated collection of judgments, in the layout of each tool,
with what a real export holds besides the answers (rejected and cancelled assignments, gold
tasks, extra columns, Unicode), and the long table each is equivalent to."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

CLASSES = ("chat", "chien", "renard 🦊")


def simulate(seed: int = 0, n_tasks: int = 40, n_workers: int = 7, per_task: int = 4):
    """``task, worker, label, truth`` rows: each task answered by ``per_task`` workers of
    differing accuracy; tasks and workers with Unicode ids."""
    rng = np.random.default_rng(seed)
    accuracy = np.linspace(0.55, 0.95, n_workers)
    rows = []
    for task in range(n_tasks):
        truth = CLASSES[task % len(CLASSES)]
        for worker in rng.choice(n_workers, size=per_task, replace=False):
            right = rng.random() < accuracy[worker]
            label = truth if right else CLASSES[(CLASSES.index(truth) + 1 + task % 2) % 3]
            rows.append((f"tâche-{task:03d}", f"wörker-{worker}", label, truth))
    return pd.DataFrame(rows, columns=["task", "worker", "label", "truth"])


def long_table(sim: pd.DataFrame) -> pd.DataFrame:
    return sim[["task", "worker", "label"]].reset_index(drop=True)


def task_numbers(sim: pd.DataFrame) -> dict:
    return {t: i + 1 for i, t in enumerate(pd.unique(sim["task"]))}


def worker_numbers(sim: pd.DataFrame) -> dict:
    return {w: 100 + i for i, w in enumerate(sorted(pd.unique(sim["worker"])))}


# -------------------------------------------------------------------------- Label Studio
def label_studio(sim: pd.DataFrame, *, object_users: bool = False) -> tuple[list, pd.DataFrame]:
    """A Label Studio JSON export: one task per object, an annotation per worker (with its
    ``completed_by`` an id, or an object as older versions wrote it), plus a cancelled
    annotation and a region result on some tasks; the first task's first annotation is the
    ground truth. Returns the export and its long table (task ids as Label Studio numbers
    them, workers as user ids)."""
    tasks, users = task_numbers(sim), worker_numbers(sim)
    export, rows = [], []
    for name, group in sim.groupby("task", sort=False):
        annotations = []
        for k, (_, row) in enumerate(group.iterrows()):
            user = users[row["worker"]]
            completed_by = {"id": user, "email": f"{user}@example.org"} if object_users else user
            result = [
                {
                    "id": f"r{tasks[name]}-{k}",
                    "type": "choices",
                    "value": {"choices": [row["label"]]},
                    "origin": "manual",
                    "to_name": "image",
                    "from_name": "species",
                }
            ]
            if k == 0 and tasks[name] % 5 == 0:  # a region drawn besides the choice
                result.append(
                    {
                        "id": "box",
                        "type": "rectanglelabels",
                        "value": {
                            "x": 1,
                            "y": 2,
                            "width": 3,
                            "height": 4,
                            "rectanglelabels": ["nez"],
                        },
                        "to_name": "image",
                        "from_name": "parts",
                    }
                )
            annotations.append(
                {
                    "id": 1000 * tasks[name] + k,
                    "completed_by": completed_by,
                    "result": result,
                    "was_cancelled": False,
                    "ground_truth": tasks[name] == 1 and k == 0,
                    "lead_time": 3.5,
                    "created_at": "2024-05-01T10:00:00.000000Z",
                }
            )
            rows.append((tasks[name], user, row["label"]))
        if tasks[name] % 4 == 0:  # a cancelled annotation whose answer must not count
            annotations.append(
                {
                    "id": 999_000 + tasks[name],
                    "completed_by": completed_by,
                    "result": [
                        {
                            "type": "choices",
                            "value": {"choices": [CLASSES[0]]},
                            "from_name": "species",
                            "to_name": "image",
                        }
                    ],
                    "was_cancelled": True,
                    "ground_truth": False,
                }
            )
        export.append(
            {
                "id": tasks[name],
                "data": {"image": f"/data/upload/1/{name}.jpg", "légende": "photo"},
                "annotations": annotations,
                "predictions": [],
                "meta": {},
                "project": 1,
            }
        )
    return export, pd.DataFrame(rows, columns=["id", "annotator", "species"])


def label_studio_min(sim: pd.DataFrame) -> tuple[list, pd.DataFrame]:
    """A Label Studio JSON-MIN export: one flat object per annotation."""
    tasks, users = task_numbers(sim), worker_numbers(sim)
    export, rows = [], []
    for k, row in enumerate(sim.itertuples()):
        export.append(
            {
                "image": f"/data/upload/1/{row.task}.jpg",
                "id": tasks[row.task],
                "species": row.label,
                "annotator": users[row.worker],
                "annotation_id": k + 1,
                "created_at": "2024-05-01T10:00:00.000000Z",
                "updated_at": "2024-05-01T10:00:00.000000Z",
                "lead_time": 2.0 + k % 3,
            }
        )
        rows.append((tasks[row.task], users[row.worker], row.label))
    return export, pd.DataFrame(rows, columns=["id", "annotator", "species"])


# -------------------------------------------------------------------------- Toloka
def toloka(sim: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """A Toloka results table: accepted and submitted assignments, plus rejected ones (with
    a wrong answer that must not count); every 10th task a control task with its
    ``GOLDEN:result``. Returns the table, its long table and the gold."""
    rows = []
    gold = {}
    for k, row in enumerate(sim.itertuples()):
        task_id = f"00{int(row.task[-3:]):04d}--{row.task}"
        golden = row.truth if int(row.task[-3:]) % 10 == 0 else ""
        if golden:
            gold[task_id] = golden
        rows.append(
            {
                "INPUT:image": f"https://example.org/{row.task}.jpg",
                "OUTPUT:result": row.label,
                "GOLDEN:result": golden,
                "HINT:text": "",
                "ASSIGNMENT:link": f"https://toloka.ai/task/{k}",
                "ASSIGNMENT:task_id": task_id,
                "ASSIGNMENT:assignment_id": f"a{k}",
                "ASSIGNMENT:worker_id": row.worker,
                "ASSIGNMENT:status": "ACCEPTED" if k % 3 else "SUBMITTED",
                "ASSIGNMENT:started": "2024-05-01T10:00:00",
            }
        )
        if k % 9 == 0:
            rows.append(
                dict(
                    rows[-1],
                    **{
                        "OUTPUT:result": CLASSES[0],
                        "ASSIGNMENT:worker_id": "spammer",
                        "ASSIGNMENT:status": "REJECTED",
                        "ASSIGNMENT:assignment_id": f"r{k}",
                    },
                )
            )
    table = pd.DataFrame(rows)
    kept = table[table["ASSIGNMENT:status"] != "REJECTED"]
    long = kept[["ASSIGNMENT:task_id", "ASSIGNMENT:worker_id", "OUTPUT:result"]]
    long.columns = ["task", "worker", "label"]
    return table, long.reset_index(drop=True), pd.Series(gold)


# -------------------------------------------------------------------------- MTurk
def mturk(sim: pd.DataFrame, *, form: str = "label") -> tuple[pd.DataFrame, pd.DataFrame]:
    """A Mechanical Turk batch results table, the answer as ``Answer.category.label``
    (``form="label"``), as radio buttons ``Answer.<class>.on`` (``"radio"``) or as JSON in
    ``Answer.taskAnswers`` (``"json"``); some assignments rejected."""
    hits = {t: f"3{i:04d}HIT{t[-3:]}" for i, t in enumerate(pd.unique(sim["task"]))}
    rows = []
    for k, row in enumerate(sim.itertuples()):
        record = {
            "HITId": hits[row.task],
            "HITTypeId": "3TYPE",
            "Title": "Quel animal ?",
            "Reward": "$0.05",
            "AssignmentId": f"ASG{k}",
            "WorkerId": row.worker,
            "AssignmentStatus": "Approved" if k % 2 else "Submitted",
            "WorkTimeInSeconds": 12,
            "LifetimeApprovalRate": "100% (3/3)",
            "Input.image_url": f"https://example.org/{row.task}.jpg",
        }
        record.update(_mturk_answer(row.label, form))
        record.update({"Approve": "", "Reject": ""})
        rows.append(record)
        if k % 11 == 0:
            bad = dict(
                record, WorkerId="A_SPAMMER", AssignmentStatus="Rejected", AssignmentId=f"REJ{k}"
            )
            bad.update(_mturk_answer(CLASSES[1], form))
            rows.append(bad)
    table = pd.DataFrame(rows)
    kept = table[table["AssignmentStatus"] != "Rejected"]
    long = pd.DataFrame(
        {"task": kept["HITId"], "worker": kept["WorkerId"], "label": sim["label"].to_numpy()}
    )
    return table, long.reset_index(drop=True)


def _mturk_answer(label: str, form: str) -> dict:
    if form == "label":
        return {"Answer.category.label": label}
    if form == "radio":
        return {f"Answer.{c}.on": str(c == label).lower() for c in CLASSES}
    return {"Answer.taskAnswers": json.dumps([{"category": {"label": label}}])}


# -------------------------------------------------------------------------- Prolific
def prolific(sim: pd.DataFrame) -> tuple[list, pd.DataFrame]:
    """Prolific ``responses-by-task.jsonl``: one task a line with its responses, each with a
    multiple-choice instruction and a free-text comment; a returned submission."""
    lines, rows = [], []
    for name, group in sim.groupby("task", sort=False):
        responses = []
        for row in group.itertuples():
            responses.append(
                {
                    "id": f"resp-{row.Index}",
                    "participant_id": row.worker,
                    "submission_id": f"sub-{row.worker}",
                    "created_at": "2024-05-01T10:00:00Z",
                    "responses": [
                        {
                            "instruction_id": "espèce",
                            "type": "multiple_choice",
                            "answer": [{"value": row.label}],
                        },
                        {
                            "instruction_id": "commentaire",
                            "type": "free_text",
                            "answer": [{"value": "ok"}],
                        },
                    ],
                }
            )
            rows.append((name, row.worker, row.label))
        responses.append(
            {
                "id": "x",
                "participant_id": "returner",
                "status": "RETURNED",
                "responses": [
                    {
                        "instruction_id": "espèce",
                        "type": "multiple_choice",
                        "answer": [{"value": CLASSES[2]}],
                    }
                ],
            }
        )
        lines.append(
            {"task_id": name, "batch_id": "b1", "datapoint": {"text": name}, "responses": responses}
        )
    return lines, pd.DataFrame(rows, columns=["task_id", "participant_id", "espèce"])


# -------------------------------------------------------------------------- Argilla
def argilla_v2(sim: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An Argilla 2 dataset as ``to_hub`` writes it: ``label.responses``,
    ``label.responses.users`` and ``label.responses.status`` lists; a discarded response per
    few records; a suggestion column that must not be read."""
    records, rows = [], []
    for k, (name, group) in enumerate(sim.groupby("task", sort=False)):
        values, users, status = [], [], []
        for row in group.itertuples():
            values.append(row.label)
            users.append(row.worker)
            status.append("submitted")
            rows.append((name, row.worker, row.label))
        if k % 3 == 0:
            values.append(CLASSES[0])
            users.append("brouillon")
            status.append("draft" if k % 2 else "discarded")
        records.append(
            {
                "id": name,
                "status": "completed",
                "_server_id": f"uuid-{k}",
                "text": f"texte {name}",
                "label.responses": values,
                "label.responses.users": users,
                "label.responses.status": status,
                "label.suggestion": CLASSES[1],
                "label.suggestion.agent": "model",
                "label.suggestion.score": 0.5,
            }
        )
    return pd.DataFrame(records), pd.DataFrame(rows, columns=["id", "user_id", "label"])


def argilla_v1(sim: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An Argilla 1 ``FeedbackDataset`` pushed to the Hub: a ``label`` column holding a list
    of ``{user_id, value, status}`` per record, ``label-suggestion`` beside it."""
    records, rows = [], []
    for name, group in sim.groupby("task", sort=False):
        responses = [
            {"user_id": r.worker, "value": r.label, "status": "submitted"}
            for r in group.itertuples()
        ]
        rows += [(name, r.worker, r.label) for r in group.itertuples()]
        responses.append({"user_id": "z", "value": CLASSES[0], "status": "discarded"})
        records.append(
            {
                "text": name,
                "label": responses,
                "label-suggestion": CLASSES[2],
                "label-suggestion-metadata": {"type": None, "score": None, "agent": None},
                "external_id": name,
                "metadata": "{}",
            }
        )
    return pd.DataFrame(records), pd.DataFrame(rows, columns=["external_id", "user_id", "label"])


# -------------------------------------------------------------------------- wide
def wide(sim: pd.DataFrame) -> pd.DataFrame:
    """cleanlab's multi-annotator table: a row per task, a column per annotator, NaN where
    the annotator gave no label."""
    return sim.pivot(index="task", columns="worker", values="label").rename_axis(columns=None)
