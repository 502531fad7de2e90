"""Issue 41 point 2 and issue 42 items 2 and 8: hygiene before inference (normalisation,
near-duplicate classes, columns, separators, values that cannot be ids) and inputs that are read
once (named pipes, process substitution)."""

from __future__ import annotations

import datetime
import gzip
import os
import random
import subprocess
import sys
import threading
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes.data import Comparisons, Labels, Links, Rankings, Values
from crowdbayes.data.hygiene import (
    DataCheck,
    clean_text,
    edit_distance,
    near_duplicate_classes,
    parse_merge_classes,
)
from crowdbayes.exceptions import DataWarning
from crowdbayes.models.labels import DawidSkene, MajorityVote


# ----------------------------------------------------------------------------- helpers
def thirty_tasks(seed: int = 0) -> pd.DataFrame:
    """30 tasks, 5 workers, classes cat/dog: the clean table of the issue's example."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(30):
        truth = "dog" if t % 2 else "cat"
        for w in range(5):
            wrong = rng.random() > 0.85
            rows.append(
                (f"t{t}", f"w{w}", ("cat" if truth == "dog" else "dog") if wrong else truth)
            )
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def typed(clean: pd.DataFrame) -> pd.DataFrame:
    """The clean table with " dog", "Dog" and "dgo" typed for some of its "dog" labels."""
    df = clean.copy()
    dogs = np.flatnonzero(df["label"].to_numpy() == "dog")
    df.loc[dogs[[0, 1]], "label"] = " dog"
    df.loc[dogs[[5, 6]], "label"] = "Dog"
    df.loc[dogs[9], "label"] = "dgo"
    return df


def kinds(labels) -> list[str]:
    return [check.kind for check in labels.data_checks]


def messages(record) -> str:
    return "\n".join(str(w.message) for w in record if issubclass(w.category, DataWarning))


def write(path, text: str, encoding="utf-8"):
    path.write_text(text, encoding=encoding)
    return path


def no_warning(build):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return build()


# ----------------------------------------------------------------------------- the issue's file
def test_the_issues_file_no_longer_answers_in_typo_classes(tmp_path):
    """Before: ' dog', 'Dog' and 'dgo' were three extra classes, tasks answered in them at
    p >= 0.99, and nothing was said. Now ' dog' is 'dog' (said), 'Dog' and 'dgo' are warned
    with their counts and the fix, and merging them gives the clean file's answers."""
    clean = thirty_tasks()
    path = tmp_path / "typed.csv"
    typed(clean).to_csv(path, index=False)
    with pytest.warns(DataWarning) as record:
        labels = Labels(path)
    said = messages(record)
    assert "normalised 2 value(s) (2 in 'label')" in said and "' dog' → 'dog'" in said
    assert "'Dog' (2) differs only in case or spaces from 'dog'" in said
    assert "'dgo' (1) is a small edit from 'dog'" in said
    assert "merge_classes={'Dog': 'dog', 'dgo': 'dog'}" in said
    assert "classes=['cat', 'dog']" in said  # the CLI shows it as --classes cat,dog
    assert list(labels.classes) == ["Dog", "cat", "dgo", "dog"]  # warned, never merged unasked
    assert kinds(labels) == ["normalized", "near_duplicate_classes"]
    check = labels.data_checks[1]
    assert check.counts == {"classes": 2, "labels": 3}
    assert check.as_dict()["kind"] == "near_duplicate_classes"

    with pytest.warns(DataWarning, match="normalised 2 value"):
        merged = Labels(path, merge_classes={"Dog": "dog", "dgo": "dog"})
    assert list(merged.classes) == ["cat", "dog"]
    assert "merged_classes" in kinds(merged) and "near_duplicate_classes" not in kinds(merged)
    warned = {c.kind: c.warned for c in merged.data_checks}
    assert warned == {"normalized": True, "merged_classes": False}  # the merge: only recorded
    reference = no_warning(lambda: Labels(clean))
    for model in (MajorityVote(), DawidSkene()):
        got = type(model)().fit(merged).probas_
        want = model.fit(reference).probas_
        pd.testing.assert_frame_equal(got, want)


def test_clean_data_raises_no_warning_and_records_nothing():
    labels = no_warning(lambda: Labels(thirty_tasks()))
    assert labels.data_checks == []


def test_normalize_false_keeps_values_as_given():
    with pytest.warns(DataWarning, match="variants of another") as record:
        labels = Labels(typed(thirty_tasks()), normalize=False)
    assert " dog" in list(labels.classes)
    assert "normalised" not in messages(record)
    with pytest.raises(TypeError, match="normalize must be True or False"):
        Labels(thirty_tasks(), normalize="yes")


# ----------------------------------------------------------------------------- normalisation
@pytest.mark.parametrize(
    "variant",
    [
        " dog",
        "dog ",
        "\tdog",
        "dog\u00a0",  # no-break space (pasted from a web page or a spreadsheet)
        "\u200bdog",  # zero-width space
        "\ufeffdog",  # byte-order mark inside a value
        "\u3000dog",  # ideographic space
    ],
)
def test_spaces_around_a_value_are_removed(variant):
    assert clean_text(variant) == "dog"
    df = thirty_tasks()
    df.loc[0, "label"] = variant.replace("dog", df.loc[0, "label"])
    with pytest.warns(DataWarning, match=r"normalised 1 value\(s\) \(1 in 'label'\)"):
        labels = Labels(df)
    assert list(labels.classes) == ["cat", "dog"]


def test_unicode_forms_are_one_value_and_inner_spaces_stay():
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    df = pd.DataFrame(
        {
            "task": ["a", "a", "b", "b"],
            "worker": ["w1", "w2", "w1", "w2"],
            "label": [composed, decomposed, "new  york", composed],
        }
    )
    with pytest.warns(DataWarning, match="normalised 1 value"):
        labels = Labels(df)
    assert sorted(labels.classes) == [composed, "new  york"]
    assert labels.data_checks[0].counts == {"values": 1, "label": 1}


def test_ids_are_normalised_too_and_counted_per_column():
    df = thirty_tasks()
    df.loc[0, "task"] = " t0"  # the same task as the other four rows of t0
    df.loc[1, "worker"] = "w1 "
    df.loc[2, "worker"] = "w2\u00a0"
    with pytest.warns(DataWarning, match=r"normalised 3 value\(s\) \(1 in 'task', 2 in 'worker'\)"):
        labels = Labels(df)
    assert labels.n_tasks == 30 and labels.n_workers == 5
    assert labels.data_checks[0].counts == {"values": 3, "task": 1, "worker": 2}


def test_gold_and_declared_classes_are_normalised_like_the_labels():
    df = thirty_tasks()
    gold = pd.Series({" t0": "cat ", "t1": "dog"})
    labels = no_warning(lambda: Labels(df, gold=gold, classes=["cat", " dog"]))
    assert list(labels.classes) == ["cat", "dog"]
    assert labels.gold_codes[:2].tolist() == [0, 1]


def test_a_value_of_only_spaces_is_a_missing_value_named_by_line(tmp_path):
    path = write(tmp_path / "x.csv", "task,worker,label\na,w1,x\na,w2, \nb,w1,y\n")
    with pytest.raises(
        ValueError,
        match=r"column 'label' has 1 value\(s\) that are only spaces \(line\(s\) \[3\]\)",
    ):
        Labels(path)


def test_numbers_are_left_alone():
    df = thirty_tasks().assign(label=lambda d: (d["label"] == "dog").astype(int))
    labels = no_warning(lambda: Labels(df))
    assert list(labels.classes) == [0, 1]


# ----------------------------------------------------------------------------- near duplicates
def _osa_reference(a: str, b: str) -> int:
    """Optimal string alignment distance by the full table (no cut-off)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(
                d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def test_edit_distance_agrees_with_the_full_table():
    rng = random.Random(3)
    for _ in range(2000):
        a = "".join(rng.choice("abc") for _ in range(rng.randint(0, 6)))
        b = "".join(rng.choice("abc") for _ in range(rng.randint(0, 6)))
        want = _osa_reference(a, b)
        for limit in (1, 2, 3):
            assert edit_distance(a, b, limit) == min(want, limit + 1), (a, b, limit)
    assert edit_distance("dgo", "dog", 1) == 1  # a swap is one edit


@pytest.mark.parametrize(
    "counts, expected",
    [
        ({"dog": 50, "Dog": 50}, [("Dog", "dog")]),  # case: whatever the counts
        ({"dog": 50, "DOG": 1, "Dog": 3}, [("Dog", "dog"), ("DOG", "dog")]),
        ({"dog": 50, "dgo": 5}, [("dgo", "dog")]),  # 10 times rarer
        ({"dog": 49, "dgo": 5}, []),  # not quite 10 times rarer
        (
            {"positive": 100, "posative": 2, "psitive": 1},
            [("posative", "positive"), ("psitive", "positive")],
        ),
        ({"positive": 100, "pstve": 1}, []),  # 3 edits
        ({"A": 100, "B": 1}, []),  # too short to be a typo of each other
        ({"cat": 100, "dog": 100, "bird": 1}, []),
        ({"yes": 800, "no": 400, "yse": 1}, [("yse", "yes")]),
    ],
)
def test_near_duplicate_classes(counts, expected):
    classes = list(counts)
    found = near_duplicate_classes(classes, np.array(list(counts.values())))
    assert sorted((classes[v], classes[m]) for v, m, _ in found) == sorted(expected)


def test_near_duplicates_are_not_looked_for_when_the_classes_are_declared():
    df = thirty_tasks()
    df.loc[1, "label"] = "Dog"
    labels = no_warning(lambda: Labels(df, classes=["cat", "dog", "Dog"]))
    assert labels.data_checks == []


def test_many_classes_are_checked_quickly():
    import time

    rng = np.random.default_rng(0)
    names = [f"class{i:05d}" for i in range(10_000)]
    df = pd.DataFrame(
        {
            "task": rng.integers(0, 5000, 40_000),
            "worker": rng.integers(0, 50, 40_000),
            "label": rng.choice(names, 40_000),
        }
    )
    df.loc[:5000, "label"] = "class00000"  # one frequent class: every rare one is compared
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Labels(df)
    assert time.perf_counter() - start < 20


# ----------------------------------------------------------------------------- merging classes
def test_merge_classes_applies_to_gold_and_declared_classes():
    df = typed(thirty_tasks())
    with pytest.warns(DataWarning, match="normalised"):
        labels = Labels(
            df,
            merge_classes={"Dog": "dog", "dgo": "dog"},
            gold=pd.Series({"t1": "Dog"}),
            classes=["cat", "dog"],
        )
    assert list(labels.classes) == ["cat", "dog"] and labels.gold_codes[1] == 1
    message = [c for c in labels.data_checks if c.kind == "merged_classes"][0].message
    assert "merged class(es) 'Dog' into 'dog', 'dgo' into 'dog'" in message


def test_merge_classes_refuses_chains_and_warns_about_absent_classes():
    df = typed(thirty_tasks())
    with pytest.raises(ValueError, match="'dgo' is merged into another class and has classes"):
        Labels(df, merge_classes={"Dog": "dgo", "dgo": "dog"})
    with pytest.warns(DataWarning) as record:
        Labels(df, merge_classes={"Cat": "cat", "Dog": "dog", "dgo": "dog"})
    assert "merge_classes names ['Cat'], which no label is" in messages(record)
    with pytest.raises(TypeError, match="merge_classes must be a mapping"):
        Labels(df, merge_classes=[("Dog", "dog")])


def test_parse_merge_classes():
    assert parse_merge_classes("Dog=dog, dgo = dog") == {"Dog": "dog", "dgo": "dog"}
    assert parse_merge_classes("2=1,3=1") == {2: 1, 3: 1}
    assert parse_merge_classes(None) is None
    with pytest.raises(ValueError, match="'Dog' is not VARIANT=CLASS"):
        parse_merge_classes("Dog")


# ----------------------------------------------------------------------------- columns
def test_a_header_differing_in_case_or_spaces_is_matched_with_a_message(tmp_path):
    path = write(tmp_path / "x.csv", "Task ,WORKER,Label\n0001,a,x\n0001,b,y\n0002,a,x\n")
    with pytest.warns(DataWarning) as record:
        labels = Labels(path)
    said = messages(record)
    assert "column 'Task ' taken as 'task'" in said and "column 'Label' taken as 'label'" in said
    assert list(labels.tasks) == ["0001", "0002"]  # still read as text: ids keep their zeros
    assert kinds(labels).count("column_matched") == 3


def test_two_columns_matching_a_name_are_refused():
    df = pd.DataFrame({"Label": [1], "LABEL ": [2], "task": ["a"], "worker": ["w"]})
    with pytest.raises(ValueError, match=r"\['Label', 'LABEL '\] all match it but for case"):
        Labels(df)


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: Labels(pd.DataFrame({"id": [1], "worker": [1], "label": [1]})),
            "labels: column 'task' is missing; got ['id', 'worker', 'label']; pass "
            "task='<column>' (--task-column on the command line)",
        ),
        (
            lambda: Values(pd.DataFrame({"task": [1], "worker": [1], "score": [1]})),
            "values: column 'value' is missing; got ['task', 'worker', 'score']; pass "
            "value='<column>' (--value-column on the command line)",
        ),
        (
            lambda: Rankings(pd.DataFrame({"query": [1], "item": [1], "position": [1]})),
            "pass rank='<column>' (--rank-column on the command line)",
        ),
        (
            lambda: Comparisons(pd.DataFrame({"left": [1], "right": [2], "winner": [1]})),
            "pass label='<column>' (--label-column on the command line)",
        ),
        (
            lambda: Links(pd.DataFrame({"worker": [1], "a": [1], "right": [2], "label": [1]})),
            "pass left='<column>' (--left-column on the command line)",
        ),
    ],
)
def test_a_missing_column_names_the_parameter_the_flag_and_the_columns(build, message):
    with pytest.raises(ValueError) as err:
        build()
    assert message in str(err.value)


def test_a_header_repeating_a_name_is_refused(tmp_path):
    path = write(tmp_path / "x.csv", "task,worker,label,label\na,w1,x,y\n")
    with pytest.raises(
        ValueError, match=r"names column 'label' twice in its header \(columns 3 and 4\)"
    ):
        Labels(path)


def test_a_dataframe_repeating_a_column_name_is_refused():
    df = pd.DataFrame([["a", "w", "x", "y"]], columns=["task", "worker", "label", "label"])
    with pytest.raises(ValueError, match=r"repeated column names \['label'\]"):
        Labels(df)


def test_unhashable_values_and_column_names_are_named():
    df = pd.DataFrame({"task": ["a", "b"], "worker": ["w", "w"], "label": [["x"], ["y"]]})
    with pytest.raises(
        TypeError, match=r"column 'label' holds a list at row 0 \(\['x'\]\), not an id"
    ):
        Labels(df)
    df = pd.DataFrame({"task": ["a"], "worker": ["w"], "label": ["x"]})
    df.columns = pd.Index(["task", "worker", ["label"]], dtype=object)
    with pytest.raises(
        TypeError, match=r"column name \['label'\] \(column 3\) is not a valid name"
    ):
        Labels(df)


# ----------------------------------------------------------------------------- separators
@pytest.mark.parametrize(
    "name, sep, said",
    [
        ("x.csv", ";", "semicolon-separated"),
        ("x.csv", "|", "pipe-separated"),
        ("x.csv", "\t", "tab-separated"),
        ("x.tsv", ",", "comma-separated"),
        ("x.txt", ";", "semicolon-separated"),
    ],
)
def test_the_separator_is_sniffed_from_the_header(tmp_path, name, sep, said):
    rows = ["task,worker,label", "a,w1,x", "a,w2,y", "b,w1,x", "b,w2,x"]
    path = write(tmp_path / name, "\n".join(r.replace(",", sep) for r in rows) + "\n")
    labels = no_warning(lambda: Labels(path))
    assert labels.n_labels == 4 and list(labels.classes) == ["x", "y"]
    assert [c.kind for c in labels.data_checks] == ["separator"]
    assert said in labels.data_checks[0].message and not labels.data_checks[0].warned


def test_a_sniffed_separator_still_names_lines(tmp_path):
    path = write(tmp_path / "x.csv", "task;worker;label\n\na;w1;x\na;w2;\n")
    with pytest.raises(ValueError, match=r"1 missing value\(s\) \(line\(s\) \[4\]\)"):
        Labels(path)


def test_a_quoted_separator_in_the_header_does_not_fool_the_sniffer(tmp_path):
    path = write(tmp_path / "x.csv", 'task,worker,label,"a;b;c;d"\na,w1,x,1\nb,w1,y,2\n')
    labels = no_warning(lambda: Labels(path))
    assert labels.data_checks == [] and labels.n_labels == 2


# ----------------------------------------------------------------------------- refused values
@pytest.mark.parametrize("value", ["inf", "-inf", "Infinity"])
def test_a_non_finite_label_is_refused_with_its_line(tmp_path, value):
    path = write(tmp_path / "x.csv", f"task,worker,label\na,w1,1\na,w2,0\nb,w1,{value}\nb,w2,1\n")
    with pytest.raises(
        ValueError, match=r"column 'label' holds a non-finite number .* at line\(s\) \[4\]"
    ):
        Labels(path)


def test_a_non_finite_label_in_a_dataframe_is_refused_with_its_row():
    df = pd.DataFrame({"task": ["a", "b"], "worker": ["w", "w"], "label": [1.0, np.inf]})
    with pytest.raises(ValueError, match=r"row\(s\) \[1\] \(1 row\(s\)\)"):
        Labels(df)


@pytest.mark.parametrize(
    "ids, kind",
    [
        (pd.date_range("2024-01-01", periods=2, tz="UTC"), "timezone-aware datetimes"),
        (pd.period_range("2024-01", periods=2, freq="M"), "periods"),
        (pd.interval_range(0, 2), "intervals"),
        (pd.Series([(1, 2), (3, 4)]), "a tuple"),
        (
            pd.Series(
                [datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc), "b"], dtype=object
            ),
            "a timezone-aware datetime",
        ),
    ],
)
@pytest.mark.parametrize("column", ["task", "worker", "label"])
def test_ids_that_cannot_be_saved_are_refused_naming_the_column(ids, kind, column):
    df = pd.DataFrame({"task": ["a", "b"], "worker": ["w1", "w2"], "label": ["x", "y"]})
    df[column] = list(ids) if isinstance(ids, pd.Series) else ids
    with pytest.raises((TypeError, ValueError), match=f"column '{column}' holds {kind}"):
        Labels(df)


def test_naive_datetimes_and_numbers_are_ids():
    df = pd.DataFrame(
        {"task": pd.date_range("2024-01-01", periods=2), "worker": [1, 2], "label": ["x", "y"]}
    )
    assert no_warning(lambda: Labels(df)).n_tasks == 2


@pytest.mark.parametrize("compress", [False, True])
def test_a_nul_byte_past_the_first_64_kb_is_refused_with_its_line(tmp_path, compress):
    rows = [f"t{i},w{i % 7},{'x' if i % 3 else 'y'}" for i in range(10_000)]
    rows[9_000] = "t9000,w\x00x,x"
    text = "task,worker,label\n" + "\n".join(rows) + "\n"
    assert text.index("\x00") > 64 * 1024
    path = tmp_path / ("x.csv.gz" if compress else "x.csv")
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    with pytest.raises(ValueError, match=r"has a NUL byte \(\\x00\) on line 9002"):
        Labels(path)


# ----------------------------------------------------------------------------- other containers
OTHER_CONTAINERS = {
    Values: ({"task": ["a", " a"], "worker": ["w1", "w2"], "value": [1, 2]}, "n_tasks", 1),
    Comparisons: (
        {"worker": ["w", "w"], "left": ["a", "b "], "right": ["b", "a"], "label": [" a", "a"]},
        "n_items",
        2,
    ),
    Rankings: (
        {"query": [1, 1, 2, 2], "item": ["a", "b", "b ", "a"], "rank": [1, 2, 2, 1]},
        "n_items",
        2,
    ),
    Links: (
        {"worker": ["w", "w "], "left": ["a", "b"], "right": ["b", "c"], "label": [1, 0]},
        "n_workers",
        1,
    ),
}


@pytest.mark.parametrize("container", list(OTHER_CONTAINERS), ids=lambda c: c.__name__)
def test_the_other_containers_normalise_their_ids(container):
    columns, size, expected = OTHER_CONTAINERS[container]
    table = pd.DataFrame(columns)
    changed = sum(isinstance(v, str) and v != v.strip() for v in table.to_numpy().ravel())
    with pytest.warns(DataWarning, match=rf"normalised {changed} value"):
        data = container(table)
    assert getattr(data, size) == expected
    assert [c.kind for c in data.data_checks] == ["normalized"]
    if container is Comparisons:
        assert data.outcome.tolist() == [1, -1]


def test_feature_ids_are_normalised_like_the_judgments():
    items = pd.DataFrame({"item": [" a", "b"], "x": [0.0, 1.0]})
    with pytest.warns(DataWarning, match="items: normalised 1 value"):
        comparisons = Comparisons(
            pd.DataFrame({"left": ["a"], "right": ["b"], "label": ["a"]}), items=items
        )
    assert list(comparisons.item_ids) == ["a", "b"]


# ----------------------------------------------------------------------------- inputs read once
def _fifo(tmp_path, name: str, data: bytes) -> tuple:
    """A named pipe and the thread that writes ``data`` into it once (started)."""
    fifo = tmp_path / name
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(data), daemon=True)
    writer.start()
    return fifo, writer


CLEAN_CSV = thirty_tasks().to_csv(index=False).encode()


def test_a_named_pipe_is_read_once(tmp_path):
    fifo, writer = _fifo(tmp_path, "labels.csv", CLEAN_CSV)
    labels = no_warning(lambda: Labels(fifo))
    writer.join(timeout=10)
    assert labels.n_labels == 150 and labels.n_tasks == 30


def test_a_named_pipe_names_its_lines_in_messages(tmp_path):
    fifo, writer = _fifo(tmp_path, "labels.csv", b"task,worker,label\n\na,w1,x\na,w2,\n")
    with pytest.raises(ValueError, match=r"line\(s\) \[4\]"):
        Labels(fifo)
    writer.join(timeout=10)


def test_a_gzip_named_pipe_is_read_once(tmp_path):
    fifo, writer = _fifo(tmp_path, "labels.csv.gz", gzip.compress(CLEAN_CSV))
    assert no_warning(lambda: Labels(fifo)).n_labels == 150
    writer.join(timeout=10)


BASH = "/bin/bash"


def _with_substitution(tmp_path, command: str) -> subprocess.CompletedProcess:
    """Run ``command`` in bash with ``{input}`` replaced by ``<(cat x.csv)``."""
    path = tmp_path / "x.csv"
    path.write_bytes(CLEAN_CSV)
    return subprocess.run(
        [BASH, "-c", command.format(input=f'<(cat "{path}")')],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(not os.path.exists(BASH), reason="needs bash for <(...)")
def test_process_substitution_is_read_once(tmp_path):
    code = "import sys; from crowdbayes.data import Labels; print(Labels(sys.argv[1]).n_labels)"
    result = _with_substitution(tmp_path, f'"{sys.executable}" -c "{code}" {{input}}')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "150"


@pytest.mark.skipif(not os.path.exists(BASH), reason="needs bash for <(...)")
def test_the_command_line_reads_process_substitution(tmp_path):
    crowdbayes = os.path.join(os.path.dirname(sys.executable), "crowdbayes")
    result = _with_substitution(tmp_path, f'"{crowdbayes}" labels fit --model mv {{input}}')
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.strip().splitlines()) == 31  # the header and 30 tasks


def test_data_check_is_a_plain_record():
    check = DataCheck("separator", "read as semicolon-separated", {"columns": 3}, warned=False)
    assert check.as_dict() == {
        "kind": "separator",
        "message": "read as semicolon-separated",
        "counts": {"columns": 3},
        "warned": False,
    }
