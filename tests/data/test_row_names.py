"""Messages name a file's rows by the line they start on (an editor's count, the header being
line 1) and a DataFrame's by their 0-based position, for every container."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import re
import zipfile

import numpy as np
import pandas as pd
import pytest

from crowdbayes.data import Comparisons, Labels, Links, Rankings, Values
from crowdbayes.data.features import read_features
from crowdbayes.data.io import read_table_rows
from crowdbayes.exceptions import DataWarning


# ------------------------------------------------------------------ lines as pandas splits rows
def _field(rng: np.random.Generator, text: str, newline: str, sep: str) -> str:
    """``text`` written plainly or quoted, a quoted one perhaps holding the separator, a quote
    or line breaks (each adds a line to the record)."""
    kind = rng.integers(4)
    if kind == 0:
        return text
    inner = [text, sep, '""', newline, f"{newline}{newline}"][: 1 + rng.integers(5)]
    return '"' + "".join(inner) + '"'


def _random_table(rng: np.random.Generator, sep: str) -> tuple[str, list[str], list[int]]:
    """A table file's text with blank, whitespace-only and multi-line records, and each data
    row's id and line (counted as the file is written)."""
    newline = ["\n", "\r\n", "\r"][rng.integers(3)]
    blanks = ["", "   ", " \t "] if sep == "," else ["", "   "]  # a tab-only TSV line is a row
    parts, ids, lines, line = [], [], [], 1
    if rng.random() < 0.3:  # blank lines before the header
        for _ in range(1 + rng.integers(2)):
            parts.append(blanks[rng.integers(len(blanks))] + newline)
            line += 1
    parts.append(sep.join(["task", "worker", "label"]) + newline)
    line += 1
    for i in range(1 + rng.integers(12)):
        while rng.random() < 0.3:
            parts.append(blanks[rng.integers(len(blanks))] + newline)
            line += 1
        task = f"t{i}"
        record = sep.join([task] + [_field(rng, f"v{i}", newline, sep) for _ in range(2)])
        ids.append(task)
        lines.append(line)
        parts.append(record + newline)
        line += 1 + record.count(newline)
    if rng.random() < 0.3:
        parts.append(blanks[rng.integers(len(blanks))])  # no line end after the last line
    text = "".join(parts)
    if rng.random() < 0.2:
        text = "\ufeff" + text
    return text, ids, lines


def _zip(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("table.csv", data)
    return buffer.getvalue()


_COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress, ".zip": _zip}


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".csv.gz", ".tsv.bz2", ".csv.xz", ".csv.zip"])
def test_the_lines_are_those_the_rows_start_on(tmp_path, suffix):
    rng = np.random.default_rng(sum(map(ord, suffix)))
    sep = "\t" if ".tsv" in suffix else ","
    compress = next((f for end, f in _COMPRESS.items() if suffix.endswith(end)), bytes)
    for n in range(40):
        text, ids, lines = _random_table(rng, sep)
        path = tmp_path / f"t{n}{suffix}"
        path.write_bytes(compress(text.encode()))
        table, rows = read_table_rows(path, what="t", id_columns=("task",))
        assert table["task"].tolist() == ids, text  # the reader splits the rows as written
        assert [rows.one(i) for i in range(len(ids))] == [f"line {x}" for x in lines], text
        assert rows.some(range(len(ids))) == f"line(s) {_shown(lines)}"


def test_an_old_mac_file_loses_the_rows_pandas_loses(tmp_path):
    """After a blank line ended by a lone carriage return, pandas' reader drops a separator
    that starts the next line: line 4 (``,``) becomes blank and is no row, line 7 (``,,``)
    is one."""
    path = tmp_path / "mac.csv"
    path.write_bytes(b"task,worker,label\ra,w1,x\r\r,\rb,w2,y\r\r,,\rc,w3,z\r")
    table, rows = read_table_rows(path, what="t")
    assert table["task"].tolist()[:2] == ["a", "b"] and table["task"].isna().tolist()[2]
    assert rows.some(range(4)) == "line(s) [2, 5, 7, 8]"


def _shown(numbers: list[int]) -> str:
    return "[" + ", ".join(map(str, numbers[:5])) + (", ...]" if len(numbers) > 5 else "]")


def test_a_frame_and_a_parquet_file_have_positions_not_lines(tmp_path):
    frame = pd.DataFrame({"task": ["a", "b", "c"]})
    assert read_table_rows(frame, what="t")[1].some([0, 2]) == "row(s) [0, 2]"
    frame.to_parquet(tmp_path / "t.parquet")
    assert read_table_rows(tmp_path / "t.parquet", what="t")[1].one(2) == "row 2"


def test_rows_left_after_a_filter_keep_their_names(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("task\na\n\nb\nc\nd\n")
    _, rows = read_table_rows(path, what="t")
    kept = rows.kept(np.array([True, False, True, True])).kept(np.array([False, True, True]))
    assert kept.some([0, 1]) == "line(s) [5, 6]"
    assert rows.one(1) == "line 4"


def test_a_file_changed_since_it_was_read_falls_back_to_positions(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("task\na\nb\n")
    _, rows = read_table_rows(path, what="t")
    path.write_text("task\n")
    assert rows.one(1) == "row 1"


# ----------------------------------------------------------------------- each container's messages
#: rows 0 and 1 (the second after a blank line, a quoted task id over two lines), then the row
#: under test: row 2 of a DataFrame, line 6 of the file
_LEAD = 'task,worker,label\na,w1,pos\n\n"b\nb",w1,neg\n'
_PAIRS = 'worker,left,right,label\nw1,x,y,x\n\n"w\n2",y,z,z\n'
_LINKS = 'worker,left,right,label\nw1,x,y,1\n\n"w\n2",y,z,0\n'

CASES = [
    (
        lambda d: Labels(d, classes=["pos", "neg"]),
        _LEAD + "c,w2,maybe\n",
        "labels: 1 label(s) are not among the declared classes ['pos', 'neg']: ['maybe'] "
        "(first at {})",
        ("line 6", "row 2"),
    ),
    (
        Labels,
        _LEAD + "c,,pos\n",
        "labels: column 'worker' has 1 missing value(s) ({})",
        ("line(s) [6]", "row(s) [2]"),
    ),
    (
        lambda d: Labels(pd.DataFrame({"task": ["a"], "worker": ["w"], "label": ["x"]}), gold=d),
        _LEAD + ",w2,pos\n",
        "gold: column 'task' has 1 missing value(s) ({})",
        ("line(s) [6]", "row(s) [2]"),
    ),
    (
        lambda d: Values(d, value="label"),
        _LEAD.replace(",pos", ",1").replace(",neg", ",2") + "c,w2,abc\nd,w2,x\n",
        "values: column 'label' has 2 value(s) that are not numbers ({}: ['abc', 'x'])",
        ("line(s) [6, 7]", "row(s) [2, 3]"),
    ),
    (
        lambda d: Values(d, value="label"),
        _LEAD.replace(",pos", ",1").replace(",neg", ",2") + "c,w2,-inf\n",
        "values: column 'label' has 1 infinite value(s) ({})",
        ("line(s) [6]", "row(s) [2]"),
    ),
    (
        Comparisons,
        _PAIRS + "w3,z,z,z\n",
        "comparisons: 1 row(s) compare an item with itself (first at {}: 'z')",
        ("line 6", "row 2"),
    ),
    (
        Comparisons,
        _PAIRS + "w3,x,z,y\n",
        "comparisons: 1 label(s) are neither the left item, the right item nor 'equal': ['y'] "
        "(first at {})",
        ("line 6", "row 2"),
    ),
    (
        lambda d: Comparisons(d, ties="error"),
        _PAIRS + "w3,x,z,equal\n",
        "comparisons: 1 row(s) are ties ('equal'; first at {}); pass ties='keep' or ties='drop'",
        ("line 6", "row 2"),
    ),
    (
        Rankings.from_pairs,
        _PAIRS + "w3,x,z,q\n",
        "pairs: 1 label(s) name neither item of their pair (first: {}, label 'q')",
        ("line 6", "row 2"),
    ),
    (
        Rankings,
        'query,item,rank\nq1,x,1\n\n"q\n1",y,2\nq2,,1\n',
        "rankings: column 'item' has 1 missing value(s) ({})",
        ("line(s) [6]", "row(s) [2]"),
    ),
    (
        Links,
        _LINKS + "w3,z,z,1\n",
        "links: 1 row(s) link an item to itself (first: item 'z' at {})",
        ("line 6", "row 2"),
    ),
    (
        Links,
        _LINKS + "w3,x,z,yes\n",
        "links: column 'label' must hold 1 (must-link) or 0 (cannot-link); 1 row(s) hold other "
        "values: ['yes'] (first at {})",
        ("line 6", "row 2"),
    ),
    (
        lambda d: Links(d, duplicates="error"),
        _LINKS + "w3,x,z,1\nw3,z,x,1\n",
        "links: 1 row(s) repeat a pair already judged by the same worker (first at {})",
        ("line 6", "row 2"),
    ),
    (
        lambda d: read_features(d, id_column="item"),
        'item,f\nx,1\n\n"y\ny",2\n,3\n',
        "items: 1 row(s) have a missing id ({})",
        ("line(s) [6]", "row(s) [2]"),
    ),
]


@pytest.mark.parametrize(("build", "text", "message", "names"), CASES)
def test_a_file_names_lines_and_a_frame_positions(tmp_path, build, text, message, names):
    path = tmp_path / "table.csv"
    path.write_text(text)
    for source, name in zip((path, pd.read_csv(path, dtype=str)), names, strict=True):
        with pytest.raises(ValueError, match=re.escape(message.format(name))):
            build(source)


def test_rows_dropped_as_duplicates_are_still_counted(tmp_path):
    """After ``duplicates="drop"`` a message names the row of the table as given (it used to
    give the position among the rows kept)."""
    path = tmp_path / "labels.csv"
    path.write_text("task,worker,label\na,w1,pos\n\na,w1,pos\n" + '"b\nb",w2,neg\nc,w3,maybe\n')
    for source, name in ((path, "line 7"), (pd.read_csv(path), "row 3")):
        with (
            pytest.warns(DataWarning, match="dropped 1 row"),
            pytest.raises(ValueError, match=re.escape(f"(first at {name})")),
        ):
            Labels(source, classes=["pos", "neg"], duplicates="drop")
