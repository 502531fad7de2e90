"""Bad exports get one line naming the file and what to pass; the other answer kinds
(numbers, pairs, rankings) and the layouts' variants are read."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from crowdbayes.exports import ExportError, detect_format, read_judgments

from . import builders


@pytest.fixture(scope="module")
def sim():
    return builders.simulate(seed=1, n_tasks=12)


def test_another_tools_file_names_the_format_it_looks_like(sim, tmp_path):
    table, _ = builders.mturk(sim)
    path = tmp_path / "batch.csv"
    table.to_csv(path, index=False)
    with pytest.raises(ExportError) as err:
        read_judgments(path, format="toloka")
    message = str(err.value)
    assert message.startswith(
        f"labels ({path}): not a Toloka export: it looks like a "
        "Mechanical Turk batch; pass format=mturk"
    )
    assert "--format mturk" in err.value.for_cli()
    assert "\n" not in message


def test_no_answer_field_lists_the_candidates(tmp_path):
    path = tmp_path / "results.tsv"
    pd.DataFrame(
        {
            "INPUT:text": ["a", "b"],
            "OUTPUT:sentiment": ["pos", "neg"],
            "OUTPUT:toxic": ["yes", "no"],
            "ASSIGNMENT:task_id": ["1", "2"],
            "ASSIGNMENT:worker_id": ["w1", "w2"],
            "ASSIGNMENT:status": ["ACCEPTED", "ACCEPTED"],
        }
    ).to_csv(path, sep="\t", index=False)
    with pytest.raises(ExportError) as err:
        read_judgments(path)
    cli = err.value.for_cli()
    assert "2 answer fields ('OUTPUT:sentiment', 'OUTPUT:toxic')" in cli
    assert "pass --label-column OUTPUT:sentiment to choose one" in cli
    with pytest.raises(ExportError, match="no answer field 'OUTPUT:nope'"):
        read_judgments(path, answer_field="OUTPUT:nope")
    got = read_judgments(path, answer_field="OUTPUT:toxic")
    assert list(got.table["OUTPUT:toxic"]) == ["yes", "no"]


def test_json_that_is_no_export_and_a_broken_jsonl(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(ExportError, match=r"line 2 is not JSON"):
        read_judgments(path)


def test_a_long_table_with_a_mistyped_header_is_not_taken_for_a_wide_one(tmp_path):
    path = tmp_path / "long.csv"
    pd.DataFrame(
        {
            "item": ["t1", "t1", "t2", "t2"],
            "rater": ["1", "2", "1", "2"],
            "grade": ["1", "2", "2", "2"],
        }
    ).to_csv(path, index=False)
    assert detect_format(path) == "long"
    full = tmp_path / "full.csv"  # three columns of overlapping values, no empty cell
    pd.DataFrame({"rater": ["1", "2", "1"], "grade": ["1", "2", "2"], "x": ["2", "2", "1"]}).to_csv(
        full, index=False
    )
    assert detect_format(full) == "long"


def test_label_studio_numbers_ratings_and_multiple_choices(tmp_path):
    tasks = []
    for t in range(4):
        annotations = []
        for w in range(3):
            annotations.append(
                {
                    "completed_by": {"id": w, "email": f"u{w}@x.org"} if t % 2 else w,
                    "result": [
                        {"from_name": "price", "type": "number", "value": {"number": 10 * t + w}},
                        {
                            "from_name": "tags",
                            "type": "choices",
                            "value": {"choices": ["a", "b"] if w == 0 else ["a"]},
                        },
                    ],
                }
            )
        annotations.append({"completed_by": 9, "result": [], "was_cancelled": False})
        tasks.append({"id": t, "annotations": annotations})
    path = tmp_path / "numbers.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    values = read_judgments(path, kind="values")
    assert values.answer == "price" and len(values.table) == 12
    assert values.dropped == {"empty": 4}
    assert sorted(values.table["annotator"].unique()) == [0, 1, 2]  # ids, from both forms
    labels = read_judgments(path)
    assert labels.answer == "tags"
    assert labels.dropped == {"with several classes chosen": 4, "empty": 4}


def test_label_studio_pairwise_and_ranker(tmp_path):
    tasks = [
        {
            "id": 1,
            "data": {"left": "A", "right": "B"},
            "annotations": [
                {
                    "completed_by": w,
                    "result": [
                        {
                            "from_name": "pw",
                            "to_name": ["left", "right"],
                            "type": "pairwise",
                            "value": {"selected": "left" if w else "right"},
                        }
                    ],
                }
                for w in range(3)
            ],
        },
        {
            "id": 2,
            "data": {"left": "B", "right": "C"},
            "annotations": [
                {
                    "completed_by": 0,
                    "result": [
                        {
                            "from_name": "pw",
                            "to_name": "left,right",
                            "type": "pairwise",
                            "value": {"selected": "right"},
                        }
                    ],
                }
            ],
        },
    ]
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    got = read_judgments(path, kind="pairs")
    assert got.table.values.tolist() == [
        [1, 0, "A", "B", "B"],
        [1, 1, "A", "B", "A"],
        [1, 2, "A", "B", "A"],
        [2, 0, "B", "C", "C"],
    ]
    ranker = [
        {
            "id": 5,
            "annotations": [
                {
                    "completed_by": 7,
                    "result": [
                        {
                            "from_name": "rank",
                            "type": "ranker",
                            "value": {"ranker": {"ranked": ["x", "z", "y"], "other": ["w"]}},
                        }
                    ],
                }
            ],
        }
    ]
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(ranker), encoding="utf-8")
    got = read_judgments(path, kind="rankings")
    assert got.table.values.tolist() == [[5, 7, "x", 1], [5, 7, "z", 2], [5, 7, "y", 3]]


def test_prolific_api_records_and_numbers(tmp_path):
    results = {
        "results": [
            {
                "id": f"r{k}",
                "task_id": f"t{k % 3}",
                "participant_id": f"p{k // 3}",
                "batch_id": "b",
                "created_at": "2024-01-01",
                "response": {
                    "instruction_id": "age",
                    "type": "free_text",
                    "answer": [{"value": str(20 + k)}],
                },
            }
            for k in range(6)
        ],
        "meta": {"count": 6},
    }
    path = tmp_path / "responses.json"
    path.write_text(json.dumps(results), encoding="utf-8")
    assert detect_format(path) == "prolific"
    got = read_judgments(path, kind="values")
    assert got.table["age"].tolist() == [float(20 + k) for k in range(6)]
    with pytest.raises(ExportError, match="with no class answers"):
        read_judgments(path)


def test_wide_with_several_classes_in_a_cell_and_a_dataframe(sim):
    frame = builders.wide(sim)
    got = read_judgments(frame, format="wide")
    assert len(got.table) == len(sim) and got.dropped == {}


def test_json_min_tells_answers_from_the_tasks_data(tmp_path):
    """JSON-MIN mixes the task's data with the answers: a field that changes between the
    annotators of a task, or repeats a few classes across tasks, is the answer; one that is
    constant, or distinct per task, is data."""
    records = [
        {
            "id": t,
            "text": f"texte {t}",
            "source": "web",
            "sentiment": s,
            "annotator": w,
            "annotation_id": 10 * t + w,
            "lead_time": 1.5,
        }
        for t in range(6)
        for w, s in enumerate(["pos", "neg" if t % 2 else "pos", "pos"])
    ]
    path = tmp_path / "min.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    got = read_judgments(path)
    assert got.answer == "sentiment" and len(got.table) == 18
    records.append(dict(records[0], annotator=9, sentiment={"choices": ["pos", "neg"]}))
    path.write_text(json.dumps(records), encoding="utf-8")
    assert read_judgments(path).dropped == {"with several classes chosen": 1}


def test_toloka_side_by_side_answers_by_side_by_item_and_ties(tmp_path):
    path = tmp_path / "sbs.tsv"
    rows = [
        ("x.png", "y.png", "a", "w1"),
        ("x.png", "y.png", "b", "w2"),
        ("x.png", "y.png", "y.png", "w3"),
        ("x.png", "y.png", "same", "w4"),
        ("x.png", "y.png", "maybe", "w5"),
    ]
    pd.DataFrame(
        rows, columns=["INPUT:image_a", "INPUT:image_b", "OUTPUT:result", "ASSIGNMENT:worker_id"]
    ).assign(**{"ASSIGNMENT:task_id": "t1", "ASSIGNMENT:status": "ACCEPTED"}).to_csv(
        path, sep="\t", index=False
    )
    got = read_judgments(path, kind="pairs")
    assert got.table["OUTPUT:result"].tolist() == ["x.png", "y.png", "y.png", "equal"]
    assert got.dropped == {"side-by-side answers naming neither item": 1}
    assert (got.columns["left"], got.columns["right"]) == ("INPUT:image_a", "INPUT:image_b")
