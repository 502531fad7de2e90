"""Damaged, edited, foreign and hostile model files: one clear error, and no code run.

Every case of issue 42 has its test here: a header nested 100,000 deep, a declared array of
931 GiB in a small file, a deflated zero array far larger than its file (refused before it is
decompressed), single-bit flips (corruption reported as corruption), tensors saved from other
devices, and contents edited so that they still read cleanly (NaN or infinite confusion
matrices, arrays of the wrong shape, a string ``max_iter``, extra attributes). The helpers that
take a model file apart and put it together again are shared with the fuzz test
(``test_model_file_fuzz.py``).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowdbayes import persistence
from crowdbayes.base import _restore_class, load
from crowdbayes.cli import main
from crowdbayes.models.labels import DawidSkene

HEADER = "__header__.npy"


# ------------------------------------------------------------------ taking files apart
def members(path: Path) -> dict[str, bytes]:
    """The raw bytes of every member of a model file, by member name, in order."""
    with zipfile.ZipFile(path) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def write_members(path: Path, parts: dict[str, bytes], compress: bool = False) -> Path:
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return path


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.asanyarray(array), allow_pickle=False)
    return buffer.getvalue()


def npy_header_only(dtype: str, shape: tuple) -> bytes:
    """A ``.npy`` header declaring ``dtype`` and ``shape``, with no data after it."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": dtype, "fortran_order": False, "shape": shape}
    )
    return buffer.getvalue()


def header_of(parts: dict[str, bytes]) -> dict:
    return json.loads(str(np.load(io.BytesIO(parts[HEADER]), allow_pickle=False)))


def with_header(parts: dict[str, bytes], header: dict | str) -> dict[str, bytes]:
    text = header if isinstance(header, str) else json.dumps(header)
    return {**parts, HEADER: npy(np.array(text))}


def with_array(parts: dict[str, bytes], key: str, array: np.ndarray) -> dict[str, bytes]:
    """``parts`` with member ``key`` replaced by ``array`` and the header's table (dtype, shape,
    checksum) made to agree: a forged file whose checksums hold."""
    data = npy(array)
    header = header_of(parts)
    header["members"][key] = {
        "dtype": array.dtype.str,
        "shape": list(array.shape),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    return with_header({**parts, f"{key}.npy": data}, header)


def forge(path: Path, out: Path, edit: Callable[[dict, dict], None]) -> Path:
    """A well-formed model file (valid checksums) holding ``path``'s model with its parameters
    and state changed by ``edit(params, state)``."""
    cls, params, state, _ = persistence.read_model_file(path, _restore_class)
    edit(params, state)
    persistence.write_model_file(out, cls, params, state, "test")
    return out


def refused(path: Path, match: str = "", **options) -> str:
    """Loading ``path`` raises one ValueError naming it (matching ``match``); its message."""
    with pytest.raises(ValueError, match=match) as caught:
        load(path, **options)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message, message
    return message


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    model = DawidSkene(max_iter=20).fit(labels_table())
    path = folder / "ds.npz"
    model.save(path)
    arrays = dict(np.load(path))
    header = json.loads(str(arrays["__header__"]))
    return path, arrays, header


def labels_table() -> pd.DataFrame:
    rows = [(t, w, (t + w) % 2) for t in range(20) for w in range(3)]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


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
    code = main(
        ["rank", "predict", str(cut), "--pairs", str(pairs), "--out", str(tmp_path / "p.csv")]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cut.npz is not a crowdbayes model file" in err


# ------------------------------------------------------------------ bounded reading
def test_a_header_nested_100000_deep_is_refused_before_parsing(saved, tmp_path):
    path, _, _ = saved
    deep = with_header(members(path), "[" * 100_000 + "]" * 100_000)
    message = refused(write_members(tmp_path / "deep.npz", deep), "nests 100000 deep")
    assert "more than the 100 allowed" in message
    unclosed = with_header(members(path), '{"format": "crowdbayes-model", "x": ' + "[" * 10**5)
    refused(write_members(tmp_path / "unclosed.npz", unclosed), "nests")


def test_a_header_too_large_is_refused_before_reading(saved, tmp_path):
    path, _, _ = saved
    parts = {**members(path), HEADER: npy_header_only("<U100000000", ())}
    refused(write_members(tmp_path / "big.npz", parts), "header of 400,000,000 bytes")


@pytest.mark.parametrize("listed", [True, False], ids=["in-the-table", "version-2"])
def test_a_declared_shape_of_931_gib_in_a_small_file_is_one_line(saved, tmp_path, listed):
    path, _, _ = saved
    parts = members(path)
    header = header_of(parts)
    shape = (125_000_000_000,)  # float64: 10**12 bytes = 931 GiB
    parts["a0.npy"] = npy_header_only("<f8", shape)
    if listed:
        header["members"]["a0"].update(dtype="<f8", shape=list(shape))
    else:
        header["version"] = 2
        del header["members"]
    forged = write_members(tmp_path / "huge.npz", with_header(parts, header), compress=True)
    assert forged.stat().st_size < 30_000
    message = refused(forged, "would take 1,000,000,[0-9,]+ bytes, more than the")
    assert "CROWDBAYES_MAX_MODEL_BYTES" in message


def test_deflated_zeros_far_larger_than_the_file_are_refused_before_decompressing(
    saved, tmp_path, monkeypatch
):
    """A zero array of 100 MiB deflates to ~100 KB: refused by the size bound (64 MiB or 32
    times the file), and loaded when the bound is raised by parameter or environment."""
    path, _, _ = saved
    cls, params, state, _ = persistence.read_model_file(path, _restore_class)
    state["log_posterior_history_"] = np.zeros(100 * 2**17)  # 100 MiB of float64 zeros
    bomb = tmp_path / "bomb.npz"
    persistence.write_model_file(bomb, cls, params, state, "test")
    assert bomb.stat().st_size < 300_000
    refused(bomb, "would take 10[0-9,]* bytes, more than the 67,108,864 allowed")
    assert len(load(bomb, max_bytes=2**28).log_posterior_history_) == 100 * 2**17
    monkeypatch.setenv("CROWDBAYES_MAX_MODEL_BYTES", str(2**28))
    assert len(load(bomb).log_posterior_history_) == 100 * 2**17
    monkeypatch.setenv("CROWDBAYES_MAX_MODEL_BYTES", "lots")
    with pytest.raises(ValueError, match="CROWDBAYES_MAX_MODEL_BYTES must be a number"):
        load(bomb)


# ------------------------------------------------------------------ corruption
def test_single_bit_flips_are_reported_as_corruption(saved, tmp_path):
    """Every bit of a sample of 300 in a Dawid–Skene file flipped in turn: a ValueError naming
    the file (those inside a member's compressed data saying "corrupted"), or — a flip in a
    field no reader checks, such as a timestamp — the same model."""
    path, _, _ = saved
    data = bytearray(path.read_bytes())
    original = load(path).probas_
    rng = np.random.default_rng(42)
    outcomes = {"loaded": 0, "corrupted": 0, "other": 0}
    for bit in rng.choice(len(data) * 8, size=300, replace=False):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        target = tmp_path / "flipped.npz"
        target.write_bytes(bytes(flipped))
        try:
            model = load(target)
        except ValueError as err:
            message = str(err)
            assert "\n" not in message and str(target) in message, message
            outcomes["corrupted" if "corrupted" in message else "other"] += 1
            continue
        pd.testing.assert_frame_equal(model.probas_, original)
        outcomes["loaded"] += 1
    assert outcomes["corrupted"] > 100, outcomes  # most bytes of the file are member data


def test_swapped_members_fail_their_checksums(saved, tmp_path):
    """Two members of one dtype and shape swapped: their checksums fail (swaps with the
    header's table swapped too are in the fuzz test)."""
    path, _, _ = saved
    parts = members(path)
    table = header_of(parts)["members"]
    first, second = next(
        (a, b)
        for a in table
        for b in table
        if a < b
        and table[a]["shape"] == table[b]["shape"]
        and table[a]["dtype"] == "<f8"
        and table[b]["dtype"] == "<f8"
        and parts[f"{a}.npy"] != parts[f"{b}.npy"]
    )
    parts[f"{first}.npy"], parts[f"{second}.npy"] = parts[f"{second}.npy"], parts[f"{first}.npy"]
    forged = write_members(tmp_path / "swapped.npz", parts)
    refused(forged, f"is corrupted: the member '{first}' does not match its checksum")


def test_members_the_header_does_not_list_are_refused(saved, tmp_path):
    path, _, _ = saved
    parts = {**members(path), "a999.npy": npy(np.zeros(3))}
    refused(write_members(tmp_path / "extra.npz", parts), r"members \['a999'\] not listed")
    parts = {**members(path), "evil.txt": b"x"}
    refused(write_members(tmp_path / "foreign.npz", parts), "unexpected member 'evil.txt'")


def test_version_2_files_without_checksums_still_load(saved, tmp_path):
    path, _, _ = saved
    parts = members(path)
    header = header_of(parts)
    header["version"] = 2
    del header["members"]
    old = write_members(tmp_path / "v2.npz", with_header(parts, header))
    pd.testing.assert_frame_equal(load(old).probas_, load(path).probas_)


def test_tensors_load_on_the_cpu_and_unknown_devices_are_refused():
    torch = pytest.importorskip("torch")
    node = {"t": "tensor", "v": {"t": "array", "k": "a0"}, "device": "cuda"}
    tensor = persistence.decode(node, {"a0": np.arange(3.0)})
    assert isinstance(tensor, torch.Tensor) and tensor.device.type == "cpu"
    for device, match in (("nonsense", "not one torch knows"), (5, "not a device name")):
        with pytest.raises(ValueError, match=match):
            persistence.decode({**node, "device": device}, {"a0": np.arange(3.0)})
    with pytest.raises(ValueError, match="a tensor of dtype <U1"):
        persistence.decode(node, {"a0": np.array(["a"])})


# ------------------------------------------------------------------ edited contents
def _set_frame_value(name, value):
    def edit(params, state):
        frame = state[name].copy()
        frame.iloc[0, 0] = value
        state[name] = frame

    return edit


def _set_global(key, change):
    def edit(params, state):
        state["globals_"] = {**state["globals_"], key: change(state["globals_"][key])}

    return edit


def _nan_confusion(array):
    array = array.copy()
    array[0, 0, 0] = np.nan
    return array


def _inf_confusion(array):
    array = array.copy()
    array[1, 1, 0] = np.inf
    return array


EDITS = {
    "nan confusion_": (_set_frame_value("confusion_", np.nan), "confusion_ holds NaN"),
    "inf confusion_": (_set_frame_value("confusion_", np.inf), "confusion_ holds NaN or inf"),
    "nan globals confusion": (
        _set_global("confusion", _nan_confusion),
        r"globals_\['confusion'\] holds NaN",
    ),
    "inf globals confusion": (
        _set_global("confusion", _inf_confusion),
        r"globals_\['confusion'\] holds NaN or infinite",
    ),
    "confusion of a worker too few": (
        _set_global("confusion", lambda a: a[:-1]),
        r"globals_\['confusion'\] has shape \(2, 2, 2\) for 3 workers",
    ),
    "confusion of 3 classes": (
        _set_global("confusion", lambda a: np.full((3, 3, 3), 1 / 3)),
        r"globals_\['confusion'\] has shape \(3, 3, 3\) for 2 classes",
    ),
    "probas_ of 3 columns": (
        lambda p, s: s.update(probas_=s["probas_"].assign(extra=0.0)),
        "probas_ has 3 columns for 2 classes",
    ),
    "probas_ rows not summing to 1": (
        _set_frame_value("probas_", 0.999),
        "rows of probas_ do not sum to 1",
    ),
    "probas_ above 1": (_set_frame_value("probas_", 1.5), "probas_ holds values above 1"),
    "labels_ not among classes": (
        lambda p, s: s.update(labels_=s["labels_"].replace({0: 7})),
        "labels_ holds labels that are not among classes_",
    ),
    "duplicate classes": (
        lambda p, s: s.update(classes_=pd.Index([0, 0])),
        "classes_ holds duplicate entries",
    ),
    "string max_iter": (
        lambda p, s: p.update(max_iter="20"),
        "parameter 'max_iter' must be an integer in .*; got '20'",
    ),
    "negative tol": (lambda p, s: p.update(tol=-1.0), "parameter 'tol'"),
    "unknown parameter": (lambda p, s: p.update(evil=1), r"unknown \['evil'\]"),
    "missing parameter": (lambda p, s: p.pop("max_iter"), r"missing \['max_iter'\]"),
    "extra attribute": (lambda p, s: s.update(evil_=1), "'evil_', which no DawidSkene fit"),
    "a parameter as state": (
        lambda p, s: s.update(max_iter=5),
        "holds 'max_iter', which a fit does not save",
    ),
    "a method replaced": (lambda p, s: s.update(predict=1), "would replace DawidSkene.predict"),
    "the class replaced": (lambda p, s: s.update(__class__=1), "state entry named '__class__'"),
    "string n_iter_": (lambda p, s: s.update(n_iter_="5"), "n_iter_ .iterations. is str"),
    "negative n_iter_": (lambda p, s: s.update(n_iter_=-3), "n_iter_ .iterations. is -3"),
    "no fitted state": (lambda p, s: s.clear(), "no fitted state"),
}


@pytest.mark.parametrize("name", EDITS)
def test_edited_contents_are_refused(saved, tmp_path, name):
    path, _, _ = saved
    edit, match = EDITS[name]
    refused(forge(path, tmp_path / "edited.npz", edit), match)


def test_an_unedited_forge_loads(saved, tmp_path):
    """The forging helper itself changes nothing: the refusals above are the edits'."""
    path, _, _ = saved
    same = forge(path, tmp_path / "same.npz", lambda params, state: None)
    pd.testing.assert_frame_equal(load(same).probas_, load(path).probas_)


def test_warm_starts_and_updates_refuse_an_edited_file_in_one_line(saved, tmp_path):
    """A confusion array of the wrong shape gave an IndexError in the warm start and in
    partial_fit; the file is now refused as it is loaded."""
    path, _, _ = saved
    edit, _ = EDITS["confusion of a worker too few"]
    forged = forge(path, tmp_path / "short.npz", edit)
    with pytest.raises(ValueError, match="short.npz: the model file is damaged or was edited"):
        DawidSkene(max_iter=5).fit(labels_table(), init=forged)
    with pytest.raises(ValueError, match="short.npz"):
        DawidSkene.load(forged).partial_fit(labels_table().assign(task=lambda t: t.task + 100))


# ------------------------------------------------------------------ saving
def test_save_refuses_an_existing_file_unless_told(saved, tmp_path):
    path, _, _ = saved
    model = load(path)
    target = tmp_path / "model.npz"
    target.write_bytes(b"precious")
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        model.save(target)
    assert target.read_bytes() == b"precious"
    model.save(target, overwrite=True)
    pd.testing.assert_frame_equal(load(target).probas_, model.probas_)
    with pytest.raises(FileNotFoundError, match="no directory"):
        model.save(tmp_path / "missing" / "model.npz")
    assert not (tmp_path / "missing").exists()
    dangling = tmp_path / "dangling.npz"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileExistsError):
        model.save(dangling)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.npz", "model.npz"]


# ------------------------------------------------------------------ neural networks
@pytest.fixture(scope="module")
def scdc_file(tmp_path_factory):
    pytest.importorskip("torch")
    from crowdbayes.models.clustering.deep import SCDC
    from test_estimators import fast, fit_quietly, inputs

    model = fit_quietly(fast(SCDC), inputs(SCDC))
    path = tmp_path_factory.mktemp("scdc") / "scdc.npz"
    model.save(path)
    return path


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda p, s: s.update(_hidden=(10**9,)), "weights of encoder_ do not fit"),
        (lambda p, s: s.update(obs_shape_=(10**12,)), "weights of encoder_ do not fit"),
        (lambda p, s: s.update(obs_shape_="big"), "obs_shape_ is 'big', not a shape"),
        (lambda p, s: s.update(decoder_={}), "weights of decoder_ do not fit"),
    ],
    ids=["hidden-width", "observation-width", "shape-type", "no-weights"],
)
def test_forged_network_widths_are_refused_before_anything_is_allocated(
    scdc_file, tmp_path, edit, match
):
    """A width of 10**9 would build networks of tens of GB: checked on torch's meta device.
    Loaded in a subprocess whose address space is capped at 8 GiB, so that a regression fails
    this test instead of exhausting the machine's memory."""
    forged = forge(scdc_file, tmp_path / "forged.npz", edit)
    done = subprocess.run(
        [sys.executable, "-c", _LOAD_CAPPED, str(forged)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(match, done.stdout) and str(forged) in done.stdout, done.stdout


_LOAD_CAPPED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (8 * 2**30, 8 * 2**30))
from crowdbayes import load
try:
    load(sys.argv[1])
except ValueError as err:
    print(err)
"""


def test_tensors_saved_from_another_device_load_on_the_cpu(scdc_file, tmp_path):
    parts = members(scdc_file)
    text = json.dumps(header_of(parts)).replace('"device": "cpu"', '"device": "cuda:0"')
    assert '"cuda:0"' in text
    moved = write_members(tmp_path / "cuda.npz", with_header(parts, text))
    pd.testing.assert_frame_equal(load(moved).probas_, load(scdc_file).probas_)
    text = text.replace('"device": "cuda:0"', '"device": "nonsense"')
    refused(write_members(tmp_path / "bad.npz", with_header(parts, text)), "not one torch knows")


@pytest.mark.parametrize("command", ["report", "init-model", "partial"])
def test_the_command_line_refuses_an_edited_model_in_one_line(saved, tmp_path, capsys, command):
    """``report --load``, ``--init-model`` and ``--partial`` load through the checks (as
    ``predict`` does: the test above): a NaN confusion matrix is one line, exit 2, and no
    output."""
    path, _, _ = saved
    edit, _ = EDITS["nan confusion_"]
    forged = forge(path, tmp_path / "nan.npz", edit)
    table = tmp_path / "labels.csv"
    labels_table().to_csv(table, index=False)
    out = tmp_path / ("report.html" if command == "report" else "out.csv")
    args = {
        "report": ["report", "labels", str(table), "--load", str(forged), "-o", str(out)],
        "init-model": ["labels", "fit", str(table), "--model", "ds", "--init-model", str(forged)],
        "partial": [
            *["labels", "fit", str(table), "--model", "ds", "--init-model", str(forged)],
            "--partial",
        ],
    }[command]
    if command != "report":
        args = [*args, "--out", str(out)]
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nan.npz: the model file is damaged or was edited" in err
    assert "confusion_ holds NaN" in err and not out.exists()


def test_a_model_fitted_on_dask_without_task_posteriors_loads(saved, tmp_path):
    """A distributed fit leaves the tasks' posteriors in its output files (``tasks_path_``):
    its model file has no ``probas_`` and loads; without ``tasks_path_`` it is refused."""
    path, _, _ = saved

    def distributed(params, state):
        for name in ("probas_", "labels_", "held_out_counts_"):
            del state[name]
        state.update(tasks_path_="tasks.parquet", n_tasks_=20)

    model = load(forge(path, tmp_path / "dask.npz", distributed))
    assert model.tasks_path_ == "tasks.parquet" and model.confusion_ is not None

    def lost(params, state):
        distributed(params, state)
        del state["tasks_path_"]

    refused(forge(path, tmp_path / "lost.npz", lost), "has no attribute 'probas_'|probas_")


def test_a_forged_module_name_is_a_value_error(saved, tmp_path):
    path, _, _ = saved
    parts = members(path)
    header = dict(header_of(parts), module="crowdbayes.models.nowhere", **{"class": "Nothing"})
    forged = write_members(tmp_path / "module.npz", with_header(parts, header))
    refused(forged, "names a module 'crowdbayes.models.nowhere' this crowdbayes lacks")
