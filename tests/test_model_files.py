"""Damaged, edited, foreign and hostile model files: one clear error, and no code run."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from crowdbayes.base import load
from crowdbayes.cli import main
from crowdbayes.models.labels import DawidSkene


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    rows = [(t, w, (t + w) % 2) for t in range(20) for w in range(3)]
    model = DawidSkene(max_iter=20).fit(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    path = folder / "ds.npz"
    model.save(path)
    arrays = dict(np.load(path))
    header = json.loads(str(arrays["__header__"]))
    return path, arrays, header


def rewrite(tmp_path, arrays, header=None, **extra):
    arrays = dict(arrays, **extra)
    if header is not None:
        arrays["__header__"] = np.array(json.dumps(header))
    path = tmp_path / "edited.npz"
    np.savez(path, **arrays)
    return path


class Payload:
    """Unpickling this would create the file ``marker``."""

    marker = None

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_truncated_and_empty_files(saved, tmp_path):
    path, _, _ = saved
    data = path.read_bytes()
    for name, content in (("cut.npz", data[: len(data) // 2]), ("empty.npz", b"")):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError, match="is not a crowdbayes model file"):
            load(tmp_path / name)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda h: h.update(version=99), "model format version 99.*upgrade crowdbayes"),
        (lambda h: h.update(version=1), "model format version 1.*refit the model"),
        (lambda h: h.pop("state"), "damaged or was edited"),
        (lambda h: h.update(state=[1, 2]), "damaged or was edited"),
        (lambda h: h.update(state={"t": "array", "k": "a999"}), "damaged or was edited"),
        (lambda h: h.update(format="other"), "is not a crowdbayes model file"),
    ],
)
def test_edited_headers(saved, tmp_path, edit, message):
    _, arrays, header = saved
    header = json.loads(json.dumps(header))
    edit(header)
    with pytest.raises(ValueError, match=message):
        load(rewrite(tmp_path, arrays, header))


def test_loading_never_runs_code(saved, tmp_path):
    _, arrays, header = saved
    marker = tmp_path / "ran"
    Payload.marker = marker
    hostile = np.empty(1, dtype=object)
    hostile[0] = Payload()
    with pytest.raises(ValueError):
        load(rewrite(tmp_path, arrays, a0=hostile))  # a pickled object array
    for node in (
        {"t": "object", "cls": "os:system", "state": {"t": "dict", "v": []}},
        {"t": "generator", "bit": "__import__", "state": {}},
    ):
        edited = json.loads(json.dumps(header))
        edited["state"] = node
        with pytest.raises(ValueError, match="not one crowdbayes can restore|unknown bit"):
            load(rewrite(tmp_path, arrays, edited))
    edited = dict(header, module="os", **{"class": "system"})
    with pytest.raises(ValueError):
        load(rewrite(tmp_path, arrays, edited))
    assert not marker.exists()


def test_the_command_line_says_it_in_one_line(saved, tmp_path, capsys):
    path, _, _ = saved
    cut = tmp_path / "cut.npz"
    cut.write_bytes(path.read_bytes()[:100])
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("left,right\n1,2\n")
    code = main(["rank", "predict", str(cut), "--pairs", str(pairs), "--out", str(tmp_path / "p")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cut.npz is not a crowdbayes model file" in err
