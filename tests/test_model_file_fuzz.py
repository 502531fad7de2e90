"""Property-based fuzzing of model files, for every model family: bit flips, truncations, header
mutations (wrong types, wrong shapes, deep nesting, huge declared shapes and ranges, forged
entries), member swaps and forged arrays whose checksums hold. Loading a mutated file either
gives a model that predicts, or raises one ``ValueError`` naming the file — never another
exception. A subprocess loads hostile files and its peak resident memory (``VmHWM``) stays
within 200 MB of what it held after its imports.

Sizes: ``MAX_EXAMPLES`` per model in the normal suite, the same cases every run (about 15 s
for the 14 models on a 2-core machine, plus 8 s fitting them and 12 s for the memory test); the
``slow`` variant runs ten times more, new cases every run (6 minutes).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdbayes.base import Estimator, load
from test_estimators import fast, fit_quietly, inputs, predictions
from test_model_files import (
    HEADER,
    header_of,
    members,
    npy_header_only,
    with_array,
    with_header,
    write_members,
)

#: one model of each family (several label models: they differ the most in their state)
FUZZED = [
    "MajorityVote",
    "DawidSkene",
    "BayesianDawidSkene",
    "GLAD",
    "OrdinalDawidSkene",
    "ContinuousAggregation",
    "PlackettLuceMAP",
    "BradleyTerry",
    "CrowdBT",
    "GPPL",
    "CrowdGPPL",
    "CommunityPreferences",
    "LinkClustering",
    "SCDC",
]
MAX_EXAMPLES = 30
MB = 2**20


def _classes() -> dict[str, type]:
    from crowdbayes import list_models

    return {cls.__name__: cls for cls in list_models()}


@pytest.fixture(scope="module")
def fitted(tmp_path_factory) -> dict:
    """Each fuzzed model fitted on its tiny input and saved: name -> (file, input)."""
    folder = tmp_path_factory.mktemp("fuzz")
    classes = _classes()
    out = {}
    for name in FUZZED:
        if name not in classes:  # SCDC without torch
            continue
        cls = classes[name]
        data = inputs(cls)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fit_quietly(fast(cls), data)
        path = folder / f"{name}.npz"
        model.save(path)
        out[name] = (path, data)
    return out


# ------------------------------------------------------------------ mutations
def _paths(node, prefix=()):
    """Every place in a parsed JSON tree: tuples of keys / indices."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*prefix, i))


def _get(node, path):
    for key in path:
        node = node[key]
    return node


def _deep(depth: int):
    node: list = []
    for _ in range(depth):
        node = [node]
    return node


#: a RangeIndex of 10**15 entries, an object array of 10**9
RANGE_BOMB = {"t": "range", "start": 0, "stop": 10**15, "step": 1, "name": None}
OBJECTS_BOMB = {"t": "objects", "shape": [10**9], "v": [1]}
HOSTILE = [
    None,
    True,
    -1,
    0,
    10**30,
    1.5,
    float("nan"),
    "x",
    "",
    [],
    {},
    [10**12, 10**12],
    "<f8",
    "|O",
    "nonsense",
    _deep(150),
    {"t": "array", "k": "a0"},
    {"t": "array", "k": "a9999"},
    RANGE_BOMB,
    OBJECTS_BOMB,
    {"t": "objects", "shape": [2], "v": [1, [2]]},
    {"t": "tensor", "v": {"t": "array", "k": "a0"}, "device": "nonsense"},
    {"t": "tensor", "v": {"t": "array", "k": "a0"}, "device": "cuda"},
    {"t": "object", "cls": "crowdbayes.base:Estimator", "state": {"t": "dict", "v": []}},
    {"t": "object", "cls": "os:system", "state": {"t": "dict", "v": []}},
    {"t": "generator", "bit": "PCG64", "state": {"state": "x"}},
    {"t": "seedsequence", "entropy": -5, "spawn_key": [], "pool_size": 0, "n_children_spawned": 0},
    {"t": "float", "v": "inf"},
    {"t": "series", "values": {"t": "values", "dtype": "float64", "v": {"t": "array", "k": "a0"}}},
    {"t": "dict", "v": [[{"t": "list", "v": []}, 1]]},
    {"t": "unknown"},
]


@st.composite
def header_mutation(draw, header: dict) -> tuple[dict, str]:
    """``header`` with one place replaced by a hostile value, deleted, or swapped with another
    place; sometimes downgraded to version 2 (no table of members, so no checksums). Returns
    the header and what was done."""
    header = json.loads(json.dumps(header))
    places = [p for p in _paths(header) if p]
    place = draw(st.sampled_from(places))
    parent, key = _get(header, place[:-1]), place[-1]
    action = draw(st.sampled_from(["replace", "delete", "swap"]))
    detail = f"{action} {list(place)}"
    if action == "replace":
        value = draw(st.sampled_from(HOSTILE))
        parent[key] = json.loads(json.dumps(value))
        detail += f" with {json.dumps(value)[:80]}"
    elif action == "delete" and isinstance(parent, dict):
        del parent[key]
    else:
        other = draw(st.sampled_from(places))
        detail = f"swap {list(place)} and {list(other)}"
        try:
            other_parent = _get(header, other[:-1])
            parent[key], other_parent[other[-1]] = other_parent[other[-1]], parent[key]
        except (KeyError, IndexError, TypeError):
            pass  # the second place was inside the first
    if draw(st.booleans()) and isinstance(header, dict):
        header["version"] = 2
        header.pop("members", None)
        detail += ", as version 2"
    return header, detail


def _hostile_arrays(array: np.ndarray) -> list[np.ndarray]:
    shape = array.shape
    return [
        np.full(shape, np.nan),
        np.full(shape, np.inf),
        np.zeros(shape),
        np.full(shape, -1e300),
        np.zeros((*shape, 2)),
        np.zeros(shape[:-1]) if shape else np.zeros(3),
        np.zeros(0),
        np.full(shape, "x"),
        np.zeros(shape, dtype=np.int8),
        np.zeros(shape, dtype="datetime64[s]"),
    ]


@st.composite
def mutated(draw, path: Path) -> Mutation:
    """A mutation of the model file at ``path``, named by what it did."""
    kind, detail, payload = draw(_mutations(path))
    return Mutation(f"{kind}: {detail}", payload)


@st.composite
def _mutations(draw, path: Path) -> tuple[str, str, bytes | dict]:
    raw = path.read_bytes()
    parts = members(path)
    kind = draw(st.sampled_from(["flip", "truncate", "header", "swap", "array"]))
    if kind == "flip":
        data = bytearray(raw)
        bits = draw(st.lists(st.integers(0, len(raw) * 8 - 1), min_size=1, max_size=3))
        for bit in bits:
            data[bit // 8] ^= 1 << (bit % 8)
        return kind, f"bits {bits}", bytes(data)
    if kind == "truncate":
        size = draw(st.integers(0, len(raw) - 1))
        return kind, f"to {size} bytes", raw[:size]
    if kind == "header":
        header, detail = draw(header_mutation(header_of(parts)))
        return kind, detail, with_header(parts, header)
    keys = [name[:-4] for name in parts if name != HEADER]
    if kind == "swap" and len(keys) >= 2:
        first, second = draw(st.lists(st.sampled_from(keys), min_size=2, max_size=2, unique=True))
        a, b = f"{first}.npy", f"{second}.npy"
        parts[a], parts[b] = parts[b], parts[a]
        if not draw(st.booleans()):
            return kind, f"{first} and {second}", parts
        header = header_of(parts)  # the table swapped too: the checksums hold
        table = header["members"]
        table[first], table[second] = table[second], table[first]
        return kind, f"{first} and {second} with their table entries", with_header(parts, header)
    key = draw(st.sampled_from(keys))
    array = np.load(path, allow_pickle=False)[key]
    if draw(st.booleans()):  # a huge declared shape, listed in the table
        header = header_of(parts)
        header["members"][key].update(dtype="<f8", shape=[125_000_000_000])
        forged = {**with_header(parts, header), f"{key}.npy": npy_header_only("<f8", (10**11,))}
        return "array", f"{key} declared 931 GiB", forged
    index = draw(st.integers(0, len(_hostile_arrays(array)) - 1))
    hostile = _hostile_arrays(array)[index]
    detail = f"{key} {array.dtype}{list(array.shape)} -> {hostile.dtype}{list(hostile.shape)}"
    return "array", detail, with_array(parts, key, hostile)


class Mutation:
    """A mutated file (raw bytes, or members to zip again), shown by what was done to it."""

    def __init__(self, what: str, payload: bytes | dict) -> None:
        self.what, self.payload = what, payload

    def __repr__(self) -> str:
        return f"Mutation({self.what})"


def _write(mutation: bytes | dict | Mutation, target: Path) -> Path:
    if isinstance(mutation, Mutation):
        mutation = mutation.payload
    if isinstance(mutation, bytes):
        target.write_bytes(mutation)
        return target
    return write_members(target, mutation)


def _load_or_refuse(target: Path, data: tuple) -> str:
    """Load ``target``: a model that predicts, or one ValueError naming the file."""
    try:
        model = load(target)
    except ValueError as err:
        message = str(err)
        assert "\n" not in message and str(target) in message, message
        return "refused"
    assert isinstance(model, Estimator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        predictions(model, data)
    return "loaded"


def _fuzz(fitted, name: str, examples: int, derandomize: bool = True) -> None:
    if name not in fitted:
        pytest.skip(f"{name} needs torch")
    path, data = fitted[name]
    target = path.with_name(f"{name}-mutated.npz")

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=derandomize,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(st.data())
    def check(draw_data):
        mutation = draw_data.draw(mutated(path))
        _load_or_refuse(_write(mutation, target), data)

    check()


@pytest.mark.parametrize("name", FUZZED)
def test_mutated_model_files_load_or_raise_one_value_error(fitted, name):
    _fuzz(fitted, name, MAX_EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("name", FUZZED)
def test_mutated_model_files_load_or_raise_one_value_error_at_length(fitted, name):
    # the same cases every run (a CI run must not fail by chance); CROWDBAYES_FUZZ_FRESH=1 draws
    # new ones, to look for more (the swap of GPPL's feature rows was found that way)
    fresh = os.environ.get("CROWDBAYES_FUZZ_FRESH", "") == "1"
    _fuzz(fitted, name, 10 * MAX_EXAMPLES, derandomize=not fresh)


# ------------------------------------------------------------------ memory
_MEASURE = textwrap.dedent(
    """
    import json, sys
    import crowdbayes
    from crowdbayes.base import load
    import crowdbayes.models.labels

    def peak():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

    base, results = peak(), []
    for path in sys.argv[1:]:
        try:
            load(path)
            outcome = "loaded"
        except ValueError as err:
            outcome = "ValueError: " + str(err)[:200]
        except BaseException as err:
            outcome = "OTHER " + type(err).__name__ + ": " + str(err)[:200]
        results.append([path, outcome, peak() - base])
    print(json.dumps(results))
    """
)


def _zero_bomb(saved: Path, out: Path, megabytes: int, version_2: bool = False) -> Path:
    """``saved`` with its objective trace made ``megabytes`` MiB of float64 zeros, deflated
    (about a thousandth of that on disk), the header's table agreeing (or, ``version_2``,
    absent): streamed, so that the test itself never holds the array."""
    parts = members(saved)
    header = header_of(parts)
    key = next(v["k"] for k, v in header["state"]["v"] if k == "log_posterior_history_")
    shape = (megabytes * MB // 8,)
    start = npy_header_only("<f8", shape)
    digest = hashlib.sha256(start)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open(f"{key}.npy", "w", force_zip64=True) as member:
            member.write(start)
            zeros = bytes(MB)
            for _ in range(megabytes):
                member.write(zeros)
                digest.update(zeros)
        header["members"][key] = {"dtype": "<f8", "shape": list(shape), "sha256": "-"}
        header["members"][key]["sha256"] = digest.hexdigest()
        if version_2:
            header["version"] = 2
            del header["members"]
        for name, data in with_header(parts, header).items():
            if name != f"{key}.npy":
                archive.writestr(name, data)
    return out


def _hostile_files(folder: Path, saved: Path) -> list[Path]:
    """Hostile variants of a Dawid–Skene file, each meant to make the loader allocate."""
    parts = members(saved)
    header = header_of(parts)
    files = [
        _zero_bomb(saved, folder / "bomb-256mib.npz", 256),
        _zero_bomb(saved, folder / "bomb-version-2.npz", 256, version_2=True),
        _zero_bomb(saved, folder / "bomb-60mib.npz", 60),
    ]

    def add(name, parts):
        files.append(write_members(folder / name, parts, compress=True))

    huge = json.loads(json.dumps(header))
    huge["members"]["a0"].update(dtype="<f8", shape=[125_000_000_000])
    add("931gib.npz", {**with_header(parts, huge), "a0.npy": npy_header_only("<f8", (10**11,))})
    add("deep.npz", with_header(parts, "[" * 100_000 + "]" * 100_000))
    add("header-400mb.npz", {**parts, HEADER: npy_header_only("<U100000000", ())})
    many = json.dumps(header)[:-1] + ', "x": [' + "[]," * (1_300_000) + "[]]}"
    add("many-lists.npz", with_header(parts, many))
    for name, bomb in (("range.npz", RANGE_BOMB), ("objects.npz", OBJECTS_BOMB)):
        edited = json.loads(json.dumps(header))
        edited["state"]["v"][0][1] = bomb
        add(name, with_header(parts, edited))
    return files


def test_loading_hostile_files_stays_within_200_mb_of_memory(fitted, tmp_path):
    files = _hostile_files(tmp_path, fitted["DawidSkene"][0])
    assert all(path.stat().st_size < 3 * MB for path in files)
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    for path, outcome, grown in results:
        assert not outcome.startswith("OTHER"), (path, outcome)
        assert grown < 200 * MB, (path, outcome, grown / MB)
    outcomes = {Path(path).name: outcome for path, outcome, _ in results}
    assert outcomes["bomb-60mib.npz"] == "loaded"  # within the bound: a legitimate file
    for name in ("bomb-256mib.npz", "bomb-version-2.npz", "931gib.npz"):
        assert "would take" in outcomes[name], outcomes[name]
