"""The compiled reader of identifier columns (``data/_csv_ids.c``, used by
:func:`crowdbayes.data.io.read_table_rows` with ``categorical=True``) against pandas' reader: the
same table, or the file left to pandas (same table, same messages), on every kind of line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes.data import io
from crowdbayes.data.battles import Battles

pytestmark = pytest.mark.skipif(io._csv_ids is None, reason="the compiled reader was not built")

IDS = ["model_a", "model_b", "winner"]

#: (name, file content): plain files the compiled reader takes, and files it leaves to pandas
CASES = [
    ("plain", "model_a,model_b,winner\nx,y,model_a\ny,z,tie\nz,x,model_b\n"),
    ("no final newline", "model_a,model_b,winner\nx,y,model_a\ny,z,tie"),
    ("blank lines", "model_a,model_b,winner\n\nx,y,model_a\n\n\ny,z,tie\n\n"),
    ("byte-order mark", "\ufeffmodel_a,model_b,winner\nx,y,model_a\n"),
    (
        "other columns",
        "id,model_a,score,model_b,winner,note\n1,x,0.5,y,model_a,ok\n2,y,1,z,tie,\n",
    ),
    ("spaces kept", "model_a,model_b,winner\n x,y ,model_a\nx,y,tie (bothbad)\n"),
    ("unicode", "model_a,model_b,winner\nmodèle,模型,model_a\n模型,modèle,tie\n"),
    ("extra fields", "model_a,model_b,winner\nx,y,model_a\ny,z,tie,more,fields\n"),
    ("quotes", 'model_a,model_b,winner\n"x,1",y,model_a\ny,"z\nw",tie\n'),
    ("windows line ends", "model_a,model_b,winner\r\nx,y,model_a\r\ny,z,tie\r\n"),
    ("old mac line ends", "model_a,model_b,winner\rx,y,model_a\ry,z,tie\r"),
    ("short line", "model_a,model_b,winner\nx,y,model_a\ny,z\n"),
    ("line of spaces", "model_a,model_b,winner\nx,y,model_a\n   \ny,z,tie\n"),
    ("empty id", "model_a,model_b,winner\nx,,model_a\ny,z,tie\n"),
    ("NA id", "model_a,model_b,winner\nNA,y,model_a\ny,z,tie\n"),
    ("index column", "model_a,model_b,winner\n0,x,y,model_a\n1,y,z,tie\n"),
    ("header only", "model_a,model_b,winner\n"),
    ("empty header field", "model_a,,model_b,winner\nx,1,y,model_a\n"),
    ("repeated header", "model_a,model_b,winner,model_a\nx,y,model_a,q\n"),
    ("case of a header", "Model_A,model_b,winner\nx,y,model_a\n"),
    ("NUL byte", "model_a,model_b,winner\nx,y\x00,model_a\n"),
    # the refused bytes after the last id of a line
    (
        "quote after the ids",
        'model_a,model_b,winner,note\nx,y,model_a,"q\nz,w,tie,r"\n',
    ),
    (
        "return after the ids",
        "model_a,model_b,winner,note\nw,x,tie,o\nx,y,model_a,n\ry,z,tie,m\n",
    ),
    # (past the head the format is sniffed from, which refuses a NUL byte as binary data)
    (
        "NUL after the ids",
        "model_a,model_b,winner,note\n" + "w,x,tie,o\n" * 10_000 + "x,y,tie,\x00\n",
    ),
]


def _read(path, compiled: bool, monkeypatch):
    with monkeypatch.context() as patch:
        if not compiled:
            patch.setattr(io, "_csv_ids", None)
        try:
            return io.read_table_rows(
                path, what="battles", id_columns=IDS, columns=IDS, categorical=True
            )[0]
        except (ValueError, TypeError) as err:
            return f"{type(err).__name__}: {err}"


@pytest.mark.parametrize("sep", [",", "\t"])
@pytest.mark.parametrize("name,content", CASES, ids=[c[0] for c in CASES])
def test_the_same_table_or_the_same_message_as_pandas(tmp_path, monkeypatch, name, content, sep):
    suffix = ".csv" if sep == "," else ".tsv"
    path = tmp_path / f"battles{suffix}"
    path.write_bytes(content.replace(",", sep).encode("utf-8"))
    ours, theirs = _read(path, True, monkeypatch), _read(path, False, monkeypatch)
    if isinstance(theirs, str):
        assert ours == theirs
    else:
        pd.testing.assert_frame_equal(ours, theirs)


def test_plain_files_take_the_compiled_reader(tmp_path, monkeypatch):
    """The plain cases are read without pandas' reader (which would fail here)."""
    path = tmp_path / "battles.csv"
    path.write_text(CASES[0][1] + "w,x,model_b\n" * 3)

    def refused(*args, **kwargs):
        if kwargs.get("nrows") == 1:  # the header
            return original(*args, **kwargs)
        raise AssertionError("pandas read the rows")

    original = pd.read_csv
    monkeypatch.setattr(pd, "read_csv", refused)
    table, _ = io.read_table_rows(
        path, what="battles", id_columns=IDS, columns=IDS, categorical=True
    )
    assert len(table) == 6 and list(table.columns) == IDS
    assert list(table["model_a"].cat.categories) == ["w", "x", "y", "z"]


def test_many_distinct_ids_and_rows_match_pandas(tmp_path, monkeypatch):
    """Hash-table growth and long runs: 50,000 rows over 3,000 models (int16 codes)."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3000, 50_000)
    b = (a + rng.integers(1, 3000, 50_000)) % 3000
    frame = pd.DataFrame(
        {
            "model_a": [f"m{i}" for i in a],
            "x": rng.standard_normal(50_000),
            "model_b": [f"model number {i:05d}" for i in b],
            "winner": rng.choice(["model_a", "model_b", "tie"], 50_000),
        }
    )
    path = tmp_path / "battles.csv"
    frame.to_csv(path, index=False)
    ours, theirs = _read(path, True, monkeypatch), _read(path, False, monkeypatch)
    pd.testing.assert_frame_equal(ours, theirs)
    assert ours["model_b"].cat.codes.dtype == np.int16


def test_battles_are_the_same_either_way(tmp_path, monkeypatch):
    path = tmp_path / "battles.csv"
    path.write_text("model_a,model_b,winner\nx,y,model_a\ny,z,tie\nz,x,model_b\nx,z,model_a\n")
    ours = Battles(path)
    monkeypatch.setattr(io, "_csv_ids", None)
    theirs = Battles(path)
    assert ours.model_ids.equals(theirs.model_ids)
    for name in ("a", "b", "outcome"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))


def test_default_na_strings_are_pandas_own():
    from pandas._libs.parsers import STR_NA_VALUES

    assert io.DEFAULT_NA_STRINGS == STR_NA_VALUES
