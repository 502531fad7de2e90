"""The one model file format: exact round trips of every storable value, refusals by name,
format versions, and no partial file."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowdbayes import DawidSkene, load, persistence
from crowdbayes.persistence import decode, encode, persistable, read_model_file


@persistable
class _Point:
    def __init__(self, x, label):
        self.x, self.label = x, label


class _Unregistered:
    pass


def _round_trip(value):
    description, arrays = encode(value)
    json.dumps(description)  # the description is plain JSON
    return decode(description, arrays)


@pytest.mark.parametrize(
    "value",
    [
        pd.Series([1.5, 2.5], index=pd.Index(["a", "b"], name="worker"), name="x"),
        pd.DataFrame(
            {"m": [1, 2, 3, 4], "lab": ["u", "v", "w", "x"], "flag": [True, False, True, True]},
            index=pd.MultiIndex.from_product([["a", "b"], [0, 1]], names=["worker", "true"]),
        ),
        pd.Index([3, 4, 5], name="item"),
        pd.RangeIndex(2, 9, 3, name="r"),
        pd.Series(pd.Categorical(["a", "b", "a"], ordered=True)),
        pd.DataFrame(index=pd.Index(["a"], name="empty")),
    ],
    ids=["series", "frame", "int-index", "range", "categorical", "no-columns"],
)
def test_pandas_objects_round_trip_exactly(value):
    back = _round_trip(value)
    if isinstance(value, pd.DataFrame):
        pd.testing.assert_frame_equal(back, value, check_exact=True)
    elif isinstance(value, pd.Series):
        pd.testing.assert_series_equal(back, value, check_exact=True)
    else:
        pd.testing.assert_index_equal(back, value, exact=True)


def test_scalars_containers_generators_and_registered_objects_round_trip():
    rng = np.random.default_rng(3)
    rng.random(5)
    value = {
        "ints": np.int64(3),
        "nan": float("nan"),
        "inf": -float("inf"),
        "tuple": (1, 2.0, "z", None, True),
        "list": [np.arange(6).reshape(2, 3), np.array(["a", "bc"])],
        "objects": np.array(["a", 1], dtype=object),
        "strings": np.array(["x", "y"], dtype=object),
        7: "an int key",
        "rng": rng,
        "seed": np.random.SeedSequence(5, spawn_key=(1,)),
        "path": Path("/tmp/somewhere"),
        "point": _Point(np.array([1.0, 2.0]), "p"),
    }
    back = _round_trip(value)
    assert type(back["ints"]) is np.int64 and back["ints"] == 3
    assert np.isnan(back["nan"]) and back["inf"] == -float("inf")
    assert back["tuple"] == value["tuple"] and type(back["tuple"]) is tuple
    np.testing.assert_array_equal(back["list"][0], value["list"][0])
    assert back["objects"].dtype == object and list(back["objects"]) == ["a", 1]
    assert back["strings"].dtype == object and list(back["strings"]) == ["x", "y"]
    assert back[7] == "an int key"
    assert back["rng"].random() == rng.random()  # the generator continues where it was
    assert back["seed"].generate_state(3).tolist() == value["seed"].generate_state(3).tolist()
    assert back["path"] == Path("/tmp/somewhere")
    assert isinstance(back["point"], _Point) and back["point"].label == "p"
    np.testing.assert_array_equal(back["point"].x, [1.0, 2.0])


def test_values_that_need_pickle_are_refused_with_their_path():
    with pytest.raises(TypeError, match=r"fitted\['cache'\] holds a .*_Unregistered"):
        encode({"cache": _Unregistered()}, "fitted")
    with pytest.raises(TypeError, match="holds a builtins.builtin_function_or_method"):
        encode({"f": len}, "fitted")
    with pytest.raises(TypeError, match=r"x\[0\] holds a dict"):
        encode(np.array([{}, 1], dtype=object), "x")


@pytest.fixture()
def saved(tmp_path):
    frame = pd.DataFrame(
        [(t, w, (t + w) % 2) for t in range(20) for w in range(4)],
        columns=["task", "worker", "label"],
    )
    path = tmp_path / "ds.npz"
    DawidSkene(max_iter=5, tol=None).fit(frame).save(path)
    return path


def _rewrite_header(path: Path, change) -> Path:
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    header = json.loads(str(arrays["__header__"]))
    change(header)
    arrays["__header__"] = np.array(json.dumps(header))
    out = path.with_name("changed.npz")
    np.savez(out, **arrays)
    return out


def test_other_format_versions_are_refused_naming_both(saved):
    def old(header):
        header["version"] = 1

    def new(header):
        header["version"] = 99

    with pytest.raises(
        ValueError, match="format version 1; this crowdbayes reads version 3: refit"
    ):
        load(_rewrite_header(saved, old))
    with pytest.raises(ValueError, match="version 99; this crowdbayes reads version 3: upgrade"):
        load(_rewrite_header(saved, new))


def test_unknown_classes_are_refused(saved):
    def other(header):
        header["class"], header["module"] = "Evil", "os"

    with pytest.raises(ValueError, match="holds a 'Evil', which this crowdbayes does not know"):
        load(_rewrite_header(saved, other))

    def smuggled(header):
        header["state"] = {"t": "object", "cls": "os:system", "state": {"t": "dict", "v": []}}

    with pytest.raises(ValueError, match="the class os:system is not one crowdbayes can restore"):
        read_model_file(_rewrite_header(saved, smuggled), lambda name, module: DawidSkene)


def test_the_header_records_class_parameters_and_versions(saved):
    with np.load(saved, allow_pickle=False) as archive:
        header = json.loads(str(archive["__header__"]))
    assert header["format"] == persistence.FORMAT and header["version"] == 3
    assert header["class"] == "DawidSkene"
    assert header["module"] == "crowdbayes.models.labels.dawid_skene"
    assert header["crowdbayes"]
    assert load(saved).get_params()["max_iter"] == 5


def test_a_failed_save_leaves_no_file(tmp_path):
    model = DawidSkene(max_iter=2, tol=None).fit(
        pd.DataFrame({"task": [0, 0, 1, 1], "worker": ["a", "b", "a", "b"], "label": [0, 1, 1, 1]})
    )
    model.cache_ = _Unregistered()  # not storable
    with pytest.raises(TypeError, match="cache_"):
        model.save(tmp_path / "m.npz")
    assert list(tmp_path.iterdir()) == []


def test_the_header_lists_every_array_with_its_dtype_shape_and_checksum(saved):
    with zipfile.ZipFile(saved) as archive:
        raw = {info.filename[:-4]: archive.read(info) for info in archive.infolist()}
        assert all(info.compress_type == zipfile.ZIP_DEFLATED for info in archive.infolist())
    header = json.loads(str(np.load(io.BytesIO(raw.pop("__header__")), allow_pickle=False)))
    assert set(header["members"]) == set(raw) and raw
    for key, entry in header["members"].items():
        array = np.load(io.BytesIO(raw[key]), allow_pickle=False)
        assert entry["dtype"] == array.dtype.str and entry["shape"] == list(array.shape)
        assert entry["sha256"] == hashlib.sha256(raw[key]).hexdigest()


def _depth(value) -> int:
    """The nesting depth of a parsed JSON value, by recursion (the brute force)."""
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


def test_json_depth_matches_the_parsed_depth():
    rng = np.random.default_rng(5)

    def tree(level):
        kind = rng.integers(4) if level < 12 else 3
        if kind == 0:
            return [tree(level + 1) for _ in range(rng.integers(4))]
        if kind == 1:
            return {f"k[{i}]{{": tree(level + 1) for i in range(rng.integers(4))}
        if kind == 2:
            return '"]}[\\' * int(rng.integers(3))  # brackets, quotes, escapes in strings
        return float(rng.normal())

    for _ in range(300):
        value = tree(0)
        assert persistence.json_depth(json.dumps(value)) == _depth(value)


def test_the_size_bound_is_the_parameter_the_environment_or_a_multiple_of_the_file(
    monkeypatch,
):
    monkeypatch.delenv("CROWDBAYES_MAX_MODEL_BYTES", raising=False)
    assert persistence.max_model_bytes(1000) == persistence.MIN_BOUND
    assert persistence.max_model_bytes(10**8) == persistence.RATIO_BOUND * 10**8
    assert persistence.max_model_bytes(10**8, max_bytes=5) == 5
    monkeypatch.setenv("CROWDBAYES_MAX_MODEL_BYTES", "123")
    assert persistence.max_model_bytes(10**8) == 123
    assert persistence.max_model_bytes(10**8, max_bytes=7) == 7
    for bad in (-1, 2.5, True, "5"):
        with pytest.raises(ValueError, match="max_bytes must be a number of bytes"):
            persistence.max_model_bytes(10, max_bytes=bad)
