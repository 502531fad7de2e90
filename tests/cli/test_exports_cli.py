"""Exports through the command line: read as they are, the same answers as the long table,
what was dropped in the summary, the export's id names in the outputs, one-line errors."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from crowdbayes.cli import main

from ..exports import builders


@pytest.fixture(scope="module")
def sim():
    return builders.simulate(seed=3)


def toloka_file(sim, tmp_path):
    table, long, gold = builders.toloka(sim)
    path = tmp_path / "assignments_from_pool_42.tsv"
    table.to_csv(path, sep="\t", index=False)
    return path, table, long, gold


@pytest.mark.parametrize("model", ["mv", "ds"])
def test_toloka_gives_the_answers_of_its_long_table(model, sim, tmp_path, capsys):
    path, table, long, gold = toloka_file(sim, tmp_path)
    long_path, gold_path = tmp_path / "long.csv", tmp_path / "gold.csv"
    long.to_csv(long_path, index=False)
    gold.rename_axis("task").rename("label").reset_index().to_csv(gold_path, index=False)
    out, want = tmp_path / "tasks.csv", tmp_path / "want.csv"
    assert main(["labels", "fit", str(path), "--model", model, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    rejected = int((table["ASSIGNMENT:status"] == "REJECTED").sum())
    assert f"read {len(long)} answers from a Toloka export (OUTPUT:result)" in printed
    assert f"dropped {rejected} rejected" in printed
    assert f"gold for {len(gold)} tasks" in printed
    args = ["labels", "fit", str(long_path), "--model", model, "--gold", str(gold_path)]
    assert main([*args, "-o", str(want)]) == 0
    got, expected = pd.read_csv(out), pd.read_csv(want)
    assert got.columns[0] == "ASSIGNMENT:task_id"  # the export's own id name
    assert expected.columns[0] == "task"
    pd.testing.assert_frame_equal(
        got.set_axis(expected.columns, axis=1).sort_values("task").reset_index(drop=True),
        expected.sort_values("task").reset_index(drop=True),
    )


def test_label_studio_fit_next_and_formats(sim, tmp_path, capsys):
    export, long = builders.label_studio(sim, object_users=True)
    path = tmp_path / "project-7-at-2024.json"
    path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "tasks.csv"
    assert main(["labels", "fit", str(path), "--model", "ds", "--no-progress", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "a Label Studio export (species)" in printed and "cancelled" in printed
    assert "rectanglelabels results skipped" in printed
    assert pd.read_csv(out).columns[0] == "id"
    nxt = tmp_path / "next.csv"
    assert main(["labels", "next", str(path), "--model", "ds", "--n", "3", "-o", str(nxt)]) == 0
    assert list(pd.read_csv(nxt).columns[:1]) == ["id"]
    # forcing the tool that wrote it is the same; forcing another is one line naming both
    assert main(["labels", "fit", str(path), "--format", "label-studio", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["labels", "fit", str(path), "--format", "toloka"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"labels ({path}): not a Toloka export: it looks like a Label Studio export" in err[0]
    assert "pass --format label-studio" in err[0]


def label_studio_two_questions(tmp_path):
    tasks = []
    for t in range(6):
        annotations = [
            {
                "completed_by": w,
                "result": [
                    {
                        "from_name": "sentiment",
                        "to_name": "text",
                        "type": "choices",
                        "value": {"choices": ["pos" if (t + w) % 3 else "neg"]},
                    },
                    {
                        "from_name": "topic",
                        "to_name": "text",
                        "type": "choices",
                        "value": {
                            "choices": ["sport", "politique"]
                            if w == 2
                            else ["sport" if t % 2 else "politique"]
                        },
                    },
                    {
                        "from_name": "stars",
                        "to_name": "text",
                        "type": "rating",
                        "value": {"rating": 1 + (t + w) % 5},
                    },
                ],
                "was_cancelled": False,
            }
            for w in range(1, 4)
        ]
        tasks.append({"id": 10 + t, "data": {"text": f"texte {t}"}, "annotations": annotations})
    path = tmp_path / "two.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    return path


def test_several_questions_ask_for_one_by_its_own_name(tmp_path, capsys):
    path = label_studio_two_questions(tmp_path)
    assert main(["labels", "fit", str(path), "--model", "mv"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"labels ({path}): a Label Studio export with 3 answer fields" in err[0]
    assert "'sentiment', 'topic', 'stars'" in err[0]
    assert "pass --label-column sentiment to choose one" in err[0]
    assert main(["labels", "fit", str(path), "--model", "mv", "--label-column", "topic"]) == 0
    captured = capsys.readouterr()
    assert "dropped 6 with several classes chosen" in captured.err
    assert main(["values", "fit", str(path), "--value-column", "stars", "--quiet"]) == 0
    table = pd.read_csv(io_string(capsys.readouterr().out), index_col=0)
    assert table.index.name == "id" and len(table) == 6


def io_string(text):
    import io

    return io.StringIO(text)


def test_an_export_with_no_answer_of_the_kind_says_which_command_reads_it(tmp_path, capsys):
    tasks = [
        {
            "id": 1,
            "data": {"image": "a.jpg"},
            "annotations": [
                {
                    "completed_by": 1,
                    "result": [
                        {
                            "from_name": "box",
                            "to_name": "image",
                            "type": "rectanglelabels",
                            "value": {
                                "x": 1,
                                "y": 1,
                                "width": 2,
                                "height": 2,
                                "rectanglelabels": ["car"],
                            },
                        },
                        {
                            "from_name": "score",
                            "to_name": "image",
                            "type": "number",
                            "value": {"number": 3},
                        },
                    ],
                }
            ],
        }
    ]
    path = tmp_path / "boxes.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    assert main(["labels", "fit", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"labels ({path}): a Label Studio export with no class" in err[0]
    assert "crowdbayes values read those" in err[0]


def test_mixed_question_types_are_refused(tmp_path, capsys):
    tasks = [
        {
            "id": t,
            "annotations": [
                {
                    "completed_by": w,
                    "result": [
                        {
                            "from_name": "q",
                            "type": "choices" if t else "rating",
                            "value": {"choices": ["a"]} if t else {"rating": 3},
                        }
                    ],
                }
                for w in range(2)
            ],
        }
        for t in range(3)
    ]
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    assert main(["labels", "fit", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "question 'q' has results of several types (choices, rating)" in err[0]


def test_mturk_and_wide_and_a_plain_table_by_content(sim, tmp_path, capsys):
    table, long = builders.mturk(sim, form="radio")
    path = tmp_path / "Batch_1_batch_results.csv"
    table.to_csv(path, index=False)
    assert main(["labels", "fit", str(path), "--model", "mv", "-o", str(tmp_path / "a.csv")]) == 0
    printed = capsys.readouterr().out
    assert "a Mechanical Turk batch (Answer)" in printed and "rejected" in printed
    assert pd.read_csv(tmp_path / "a.csv").columns[0] == "HITId"
    wide = tmp_path / "wide.csv"
    builders.wide(sim).to_csv(wide)
    assert main(["labels", "fit", str(wide), "--model", "mv", "-o", str(tmp_path / "w.csv")]) == 0
    assert "a wide table (one column per annotator)" in capsys.readouterr().out
    plain = tmp_path / "plain.csv"
    builders.long_table(sim).to_csv(plain, index=False)
    assert main(["labels", "fit", str(plain), "--model", "mv", "-o", str(tmp_path / "p.csv")]) == 0
    assert "answers from" not in capsys.readouterr().out  # nothing said about a format
    w, p = pd.read_csv(tmp_path / "w.csv"), pd.read_csv(tmp_path / "p.csv")
    pd.testing.assert_frame_equal(
        w.sort_values("task", ignore_index=True), p.sort_values("task", ignore_index=True)
    )


def test_prefs_from_a_toloka_side_by_side(tmp_path, capsys):
    rows = []
    quality = {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0}
    items = list(quality)
    k = 0
    for i, left in enumerate(items):
        for right in items[i + 1 :]:
            for w in range(4):
                better = left if (quality[left] > quality[right]) ^ (w == 3 and k % 2) else right
                k += 1
                rows.append(
                    {
                        "INPUT:image_left": left,
                        "INPUT:image_right": right,
                        "OUTPUT:result": "left" if better == left else "right",
                        "ASSIGNMENT:task_id": f"{left}{right}",
                        "ASSIGNMENT:worker_id": f"w{w}",
                        "ASSIGNMENT:status": "ACCEPTED",
                    }
                )
    rows.append(dict(rows[0], **{"ASSIGNMENT:status": "REJECTED", "OUTPUT:result": "right"}))
    path = tmp_path / "sbs.tsv"
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
    out = tmp_path / "scores.csv"
    assert main(["prefs", "fit", str(path), "--model", "bt", "--no-progress", "-o", str(out)]) == 0
    assert "dropped 1 rejected" in capsys.readouterr().out
    scores = pd.read_csv(out, index_col=0)["mean"]
    assert list(scores.sort_values(ascending=False).index) == items


def test_convert_writes_the_long_table_and_the_gold(sim, tmp_path, capsys):
    path, table, long, gold = toloka_file(sim, tmp_path)
    out, gold_out = tmp_path / "long.csv", tmp_path / "gold.csv"
    assert main(["convert", str(path), "-o", str(out), "--gold-out", str(gold_out)]) == 0
    printed = capsys.readouterr().out
    assert "read" in printed and "wrote" in printed
    written = pd.read_csv(out, dtype=str)
    assert list(written.columns) == ["ASSIGNMENT:task_id", "ASSIGNMENT:worker_id", "OUTPUT:result"]
    pd.testing.assert_frame_equal(written.set_axis(long.columns, axis=1), long)
    assert (
        pd.read_csv(gold_out, dtype=str).set_index("ASSIGNMENT:task_id")["OUTPUT:result"].to_dict()
        == gold.to_dict()
    )
    # the long table it wrote is read as it is
    assert (
        main(
            [
                "labels",
                "fit",
                str(out),
                "--task-column",
                "ASSIGNMENT:task_id",
                "--worker-column",
                "ASSIGNMENT:worker_id",
                "--label-column",
                "OUTPUT:result",
                "--model",
                "mv",
                "--quiet",
            ]
        )
        == 0
    )


def test_convert_refuses_an_export_without_answers(tmp_path, capsys):
    path = tmp_path / "Batch_2_batch_results.csv"
    pd.DataFrame(
        {
            "HITId": ["h1"],
            "WorkerId": ["w"],
            "AssignmentStatus": ["Rejected"],
            "Answer.category.label": ["x"],
        }
    ).to_csv(path, index=False)
    out = tmp_path / "long.csv"
    assert main(["convert", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no answers left" in err[0] and "1 rejected" in err[0]
    assert not out.exists()


def test_a_gold_file_and_the_exports_gold_together(sim, tmp_path, capsys):
    export, long = builders.label_studio(sim)
    path = tmp_path / "project.json"
    path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    gold = tmp_path / "gold.csv"  # Label Studio's task ids as text, the usual column names
    other = builders.CLASSES[1] if long["species"].iloc[0] != builders.CLASSES[1] else "chat"
    pd.DataFrame({"task": ["1", "2"], "label": [other, "chat"]}).to_csv(gold, index=False)
    out = tmp_path / "tasks.csv"
    args = ["labels", "fit", str(path), "--model", "ds", "--gold", str(gold), "-o", str(out)]
    assert main(args) == 0
    tasks = pd.read_csv(out, index_col="id")
    # the file's gold overrides the export's ground truth on task 1; task 2 is clamped too
    assert tasks.loc[1, "label"] == other and tasks.loc[2, "label"] == "chat"
    assert tasks.loc[[1, 2], f"p_{other}"].iloc[0] == 1.0
    capsys.readouterr()
    truth = tmp_path / "truth.csv"  # the export's own column names work too
    first = sim.drop_duplicates("task")
    pd.DataFrame({"id": range(1, len(first) + 1), "species": first["truth"]}).to_csv(
        truth, index=False
    )
    assert main(["labels", "fit", str(path), "--model", "mv", "--eval-gold", str(truth)]) == 0
    assert f"against gold on {len(first) - 1} tasks: accuracy" in capsys.readouterr().err


@pytest.mark.parametrize(
    "words",
    [
        ["labels", "fit"],
        ["labels", "next"],
        ["values", "fit"],
        ["prefs", "fit"],
        ["prefs", "next"],
        ["rank", "fit"],
        ["report", "labels"],
    ],
)
def test_every_command_that_reads_judgments_takes_format(words, capsys):
    with pytest.raises(SystemExit):
        main([*words, "--help"])
    assert "--format {auto,long,label-studio,toloka,mturk,prolific,argilla,wide}" in (
        capsys.readouterr().out.replace("\n", " ").replace("  ", " ")
    )


def test_values_from_a_label_studio_rating(tmp_path, capsys):
    tasks = [
        {
            "id": t,
            "data": {"text": f"t{t}"},
            "annotations": [
                {
                    "completed_by": w,
                    "result": [
                        {
                            "from_name": "quality",
                            "to_name": "text",
                            "type": "rating",
                            "value": {"rating": 1 + (t + w) % 5},
                        }
                    ],
                }
                for w in range(4)
            ],
        }
        for t in range(8)
    ]
    path = tmp_path / "ratings.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    long = tmp_path / "long.csv"
    pd.DataFrame(
        [
            (t["id"], a["completed_by"], a["result"][0]["value"]["rating"])
            for t in tasks
            for a in t["annotations"]
        ],
        columns=["task", "worker", "value"],
    ).to_csv(long, index=False)
    got, want = tmp_path / "a.csv", tmp_path / "b.csv"
    assert main(["values", "fit", str(path), "--max-iter", "200", "-o", str(got)]) == 0
    assert "(quality)" in capsys.readouterr().out
    assert main(["values", "fit", str(long), "--max-iter", "200", "-o", str(want)]) == 0
    a, b = pd.read_csv(got), pd.read_csv(want)
    assert a.columns[0] == "id"
    pd.testing.assert_frame_equal(a.drop(columns="id"), b.drop(columns="task"))
