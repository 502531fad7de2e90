"""Every reader gives the same answers as the equivalent long table (MajorityVote and
DawidSkene), and counts what it dropped."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from crowdbayes.data import Labels
from crowdbayes.exports import detect_format, read_judgments
from crowdbayes.models.labels.dawid_skene import DawidSkene
from crowdbayes.models.labels.majority_vote import MajorityVote

from . import builders


@pytest.fixture(scope="module")
def sim():
    return builders.simulate()


def fit_both(data, task, worker, label, gold=None):
    labels = Labels(data, task=task, worker=worker, label=label, gold=gold)
    return {
        "mv": MajorityVote().fit(labels),
        "ds": DawidSkene(progress=False).fit(labels),
    }


def assert_same_answers(export, long, gold=None):
    """The models fitted to the export and to the long table agree task by task."""
    got = fit_both(export.table, export.task, export.worker, export.answer, export.gold)
    want = fit_both(long, *long.columns[:3], gold)
    for name in got:
        a, b = got[name], want[name]
        assert len(a.labels_) == len(b.labels_) > 0
        left = a.labels_.rename(index=str).sort_index()
        right = b.labels_.rename(index=str).sort_index()
        pd.testing.assert_series_equal(left, right, check_names=False)
        np.testing.assert_allclose(
            a.probas_.rename(index=str).sort_index().to_numpy(),
            b.probas_.rename(index=str).sort_index().to_numpy(),
            atol=1e-9,
        )


def write_json(path, records, lines=False):
    text = (
        "\n".join(json.dumps(r, ensure_ascii=False) for r in records)
        if lines
        else (json.dumps(records, ensure_ascii=False, indent=1))
    )
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("object_users", [False, True])
def test_label_studio_json(sim, tmp_path, object_users):
    export, long = builders.label_studio(sim, object_users=object_users)
    path = write_json(tmp_path / "project-1.json", export)
    assert detect_format(path) == "label-studio"
    got = read_judgments(path)
    assert got.format == "label-studio"
    assert got.columns == {"task": "id", "worker": "annotator", "answer": "species"}
    assert list(got.table["annotator"].unique()) == list(long["annotator"].unique())
    cancelled = sum(1 for t in export for a in t["annotations"] if a["was_cancelled"])
    regions = sum(1 for t in export if t["id"] % 5 == 0)
    assert got.dropped["cancelled"] == cancelled > 0
    assert sum(n for why, n in got.dropped.items() if "rectanglelabels" in why) == regions
    assert dict(got.gold) == {1: long["species"].iloc[0]}
    assert_same_answers(got, long, gold=got.gold)


def test_label_studio_min(sim, tmp_path):
    export, long = builders.label_studio_min(sim)
    path = write_json(tmp_path / "project-1-min.json", export)
    got = read_judgments(path)
    assert (got.format, got.answer) == ("label-studio", "species")
    assert got.dropped == {}
    assert_same_answers(got, long)


def test_toloka(sim, tmp_path):
    table, long, gold = builders.toloka(sim)
    path = tmp_path / "assignments_from_pool_123.tsv"
    table.to_csv(path, sep="\t", index=False)
    got = read_judgments(path)
    assert got.format == "toloka"
    assert got.columns["task"] == "ASSIGNMENT:task_id"
    assert got.dropped == {"rejected": int((table["ASSIGNMENT:status"] == "REJECTED").sum())}
    assert got.gold.to_dict() == gold.to_dict() and len(gold) > 0
    assert_same_answers(got, long, gold=gold)


@pytest.mark.parametrize("form", ["label", "radio", "json"])
def test_mturk(sim, tmp_path, form):
    table, long = builders.mturk(sim, form=form)
    path = tmp_path / "Batch_4242_batch_results.csv"
    table.to_csv(path, index=False)
    got = read_judgments(path)
    assert got.format == "mturk"
    assert got.dropped == {"rejected": int((table["AssignmentStatus"] == "Rejected").sum())}
    assert_same_answers(got, long)


def test_prolific(sim, tmp_path):
    lines, long = builders.prolific(sim)
    path = write_json(tmp_path / "responses-by-task.jsonl", lines, lines=True)
    got = read_judgments(path)
    assert (got.format, got.answer) == ("prolific", "espèce")
    assert got.dropped == {"returned": sim["task"].nunique()}
    assert_same_answers(got, long)


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".csv", "frame"])
def test_argilla_v2(sim, tmp_path, suffix):
    frame, long = builders.argilla_v2(sim)
    if suffix == "frame":
        source = frame
    else:
        source = tmp_path / f"argilla{suffix}"
        if suffix == ".parquet":
            pytest.importorskip("pyarrow")
            frame.to_parquet(source)
        elif suffix == ".jsonl":
            frame.to_json(source, orient="records", lines=True, force_ascii=False)
        else:
            frame.to_csv(source, index=False)
    got = read_judgments(source)
    assert (got.format, got.answer, got.worker) == ("argilla", "label", "user_id")
    assert sum(got.dropped.values()) == (sim["task"].nunique() + 2) // 3
    assert set(got.dropped) <= {"draft", "discarded"}
    assert_same_answers(got, long)


def test_argilla_v1(sim, tmp_path):
    frame, long = builders.argilla_v1(sim)
    path = tmp_path / "feedback.jsonl"
    frame.to_json(path, orient="records", lines=True, force_ascii=False)
    got = read_judgments(path)
    assert (got.format, got.task) == ("argilla", "external_id")
    assert got.dropped == {"discarded": sim["task"].nunique()}
    assert_same_answers(got, long)


def test_wide(sim, tmp_path):
    table = builders.wide(sim)
    path = tmp_path / "multi_annotator.csv"
    table.to_csv(path)  # the index (task ids) as the first column
    assert detect_format(path) == "wide"
    got = read_judgments(path)
    assert got.format == "wide" and got.task == "task"
    assert_same_answers(got, builders.long_table(sim))
    # cleanlab's bare matrix: no id column, the tasks numbered by row
    matrix = tmp_path / "matrix.csv"
    table.reset_index(drop=True).to_csv(matrix, index=False)
    assert detect_format(matrix) == "wide"  # empty cells, no id column: tasks by row
    got = read_judgments(matrix, format="wide")
    assert got.table[got.task].max() == len(table) - 1
    assert len(got.table) == len(sim)


def test_a_long_table_passes_through(sim, tmp_path):
    path = tmp_path / "long.csv"
    builders.long_table(sim).to_csv(path, index=False)
    assert detect_format(path) == "long"
    got = read_judgments(path)
    assert got.format == "long" and len(got.table) == len(sim)
