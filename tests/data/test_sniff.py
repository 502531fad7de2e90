"""Input sniffing: files that are not tables get one line naming the file and the formats."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from crowdbayes.data.io import read_table

CLEAN = "task,worker,label\nt1,w1,yes\nt2,w1,no\n"


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("a.npy", None, "a NumPy .npy array"),
        ("a.xlsx", b"PK\x03\x04rest", "an Excel workbook"),
        ("a.csv", b"PK\x03\x04rest", "a ZIP archive"),
        ("a.xls", b"\xd0\xcf\x11\xe0rest", "an Excel (.xls) workbook"),
        ("a.csv", b"task,worker\x00\x01\x02", "binary data"),
        ("a.csv", "task,label\nt1,caf\xe9\n".encode("latin-1"), "not UTF-8 text"),
        ("a.parquet", b"task,worker,label\n", "not a Parquet file"),
        ("a.csv", b"\x1f\x8b\x08broken", "a damaged gzip file"),
    ],
)
def test_files_that_are_not_tables(tmp_path, name, content, kind):
    path = tmp_path / name
    if content is None:
        np.save(path, np.zeros((3, 2)))
    else:
        path.write_bytes(content)
    with pytest.raises(ValueError) as caught:
        read_table(path, what="labels")
    message = str(caught.value)
    assert message.startswith(f"labels: {path} is ") and kind in message
    assert "CSV or TSV (optionally gzip-compressed) or Parquet" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"\n \n", "is empty"),
        (b"task,worker,label\r\n", "has a header but no rows"),
    ],
)
def test_empty_and_header_only(tmp_path, content, message):
    path = tmp_path / "a.csv"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"labels: \S*a\.csv {message}"):
        read_table(path, what="labels")


def test_also_accepted_formats_are_named(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"\x00\x01")
    with pytest.raises(ValueError, match=r"or Parquet, or a \.npy array$"):
        read_table(path, what="features", also="a .npy array")


def test_spellings_of_one_table_read_the_same(tmp_path):
    clean = tmp_path / "clean.csv"
    clean.write_text(CLEAN)
    expected = read_table(clean, what="labels", id_columns=("task",))
    spellings = {
        "bom.csv": b"\xef\xbb\xbf" + CLEAN.encode(),
        "crlf.csv": CLEAN.replace("\n", "\r\n").encode(),
        "quoted.csv": b'"task","worker","label"\n"t1","w1","yes"\n"t2",w1,"no"\n',
    }
    for name, content in spellings.items():
        (tmp_path / name).write_bytes(content)
    with gzip.open(tmp_path / "zipped.csv", "wb") as handle:  # gzip without the .gz suffix
        handle.write(CLEAN.encode())
    pd.read_csv(clean).to_parquet(tmp_path / "parquet.csv")  # Parquet under another name
    for name in [*spellings, "zipped.csv", "parquet.csv"]:
        table = read_table(tmp_path / name, what="labels", id_columns=("task",))
        pd.testing.assert_frame_equal(table, expected, check_dtype=False)


def test_ragged_rows_name_the_file(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(ValueError, match=r"labels: \S*ragged\.csv cannot be read as CSV: "):
        read_table(path, what="labels")
