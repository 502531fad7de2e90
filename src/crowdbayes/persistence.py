"""The one model file format: numeric arrays plus a JSON header, in one ``.npz`` file, no pickle.

A saved estimator is a tree of Python values — its parameters and its fitted state — made of
JSON scalars, NumPy arrays, pandas objects (``Index``, ``MultiIndex``, ``Series``,
``DataFrame``), lists, tuples, dicts, paths, NumPy random generators, torch tensors and
instances of the classes that registered themselves with :func:`persistable` (every
:class:`~crowdbayes.base.Estimator` subclass, kernels, posterior summaries). :func:`encode`
turns such a tree into a JSON *description* whose leaves point at arrays stored beside it;
:func:`decode` inverts it exactly (dtypes, index names and value types included), so a loaded
model predicts bit for bit as the saved one did.

File layout (``FORMAT_VERSION`` 3): a zip of ``.npy`` members, deflated::

    a0.npy, a1.npy, ... : the arrays the descriptions point at
    __header__.npy      : 0-d unicode array, JSON {"format": "crowdbayes-model", "version": 3,
                          "crowdbayes": "<version>", "class": "<name>", "module": "<module>",
                          "params": <description>, "state": <description>,
                          "members": {"a0": {"dtype": "<f8", "shape": [3, 2],
                                             "sha256": "<hex digest of a0.npy>"}, ...}}

Version 2 files (the same without ``members``) are still read, without checksums.

Loading builds only registered classes and never unpickles, so a model file cannot run code.
Object arrays are stored as unicode arrays when they hold strings only, else as JSON lists of
scalars; anything else is refused when saving, with the path of the offending value in the
message.

A model file is untrusted input, and :func:`read_model_file` bounds everything it reads before
reading it: the header member (:data:`MAX_HEADER_BYTES`) and its nesting (:data:`MAX_DEPTH`,
counted by :func:`json_depth` before ``json.loads`` recurses); every array member's dtype
(numbers, strings, dates only) and shape from its ``.npy`` header, which must agree with the
header's table, and their total size (:func:`max_model_bytes`: 64 MiB or 32 times the file's
size, or ``CROWDBAYES_MAX_MODEL_BYTES``, or ``max_bytes=``), all before a byte of array data is
decompressed (deflate turns 1 MB of file into 1 GB of zeros); each member is then read to
exactly its declared size and its SHA-256 compared with the table, so that corruption is
reported as corruption. Whatever else a damaged or forged file trips while it is decoded is
one ``ValueError`` naming the file. What the decoded model holds is checked by
:mod:`crowdbayes.roles._state_checks`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._atomic import current_umask, write_atomically

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ModelFile",
    "persistable",
    "encode",
    "decode",
    "write_model_file",
    "read_model_file",
    "write_atomically",
    "current_umask",
]

FORMAT = "crowdbayes-model"
#: version 1: per-model-family layouts (crowdbayes 0.1 before the estimator contract)
#: version 2: no table of members (read still)
#: version 3: the header lists each array member's dtype, shape and SHA-256
FORMAT_VERSION = 3
_HEADER = "__header__"
_HEADER_KEYS = {"format", "version", "crowdbayes", "class", "module", "params", "state", "members"}

#: classes a model file may build, by "module:qualname"
_CLASSES: dict[str, type] = {}


def persistable(cls: type) -> type:
    """Class decorator: instances of ``cls`` may appear in a saved model.

    An instance is stored as its ``__dict__`` (encoded recursively) and rebuilt without calling
    ``__init__``; classes with ``__slots__`` are not supported.
    """
    _CLASSES[_class_key(cls)] = cls
    return cls


def _class_key(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


# --------------------------------------------------------------------------------- encoding
class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, value: np.ndarray, where: str) -> dict:
        if value.dtype == object:
            return self.object_array(value, where)
        if value.dtype.kind not in "biufcUSMm":
            raise TypeError(f"model file: {where} has dtype {value.dtype}, which cannot be stored")
        key = f"a{len(self.arrays)}"
        self.arrays[key] = value
        return {"t": "array", "k": key}

    def object_array(self, value: np.ndarray, where: str) -> dict:
        flat = value.ravel()
        if all(isinstance(v, str) for v in flat):
            node = self.array(value.astype(str), where)
            return {**node, "object": True}
        items = [self.scalar(v, f"{where}[{i}]") for i, v in enumerate(flat)]
        return {"t": "objects", "shape": list(value.shape), "v": items}

    @staticmethod
    def scalar(value: Any, where: str) -> Any:
        """A JSON scalar (Python or NumPy bool/int/float/str/None) as plain JSON."""
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (np.bool_,)):
            return bool(value)
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, (float, np.floating)):
            return float(value)
        raise TypeError(
            f"model file: {where} holds a {type(value).__name__}, which cannot be stored"
        )

    def index(self, index: pd.Index, where: str) -> dict:
        if isinstance(index, pd.MultiIndex):
            return {
                "t": "multiindex",
                "levels": [self.index(level, f"{where}.levels") for level in index.levels],
                "codes": [self.array(np.asarray(c), f"{where}.codes") for c in index.codes],
                "names": [self.encode(name, f"{where}.names") for name in index.names],
            }
        if isinstance(index, pd.RangeIndex):
            return {
                "t": "range",
                "start": index.start,
                "stop": index.stop,
                "step": index.step,
                "name": self.encode(index.name, f"{where}.name"),
            }
        return {
            "t": "index",
            "values": self.values(index, where),
            "name": self.encode(index.name, f"{where}.name"),
        }

    def values(self, values: pd.Index | pd.Series, where: str) -> dict:
        """The values of an Index or Series with their pandas dtype."""
        dtype = values.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            codes = pd.Categorical(values).codes
            return {
                "t": "categorical",
                "codes": self.array(np.asarray(codes), where),
                "categories": self.index(dtype.categories, f"{where}.categories"),
                "ordered": bool(dtype.ordered),
            }
        array = values.to_numpy()
        return {"t": "values", "dtype": str(dtype), "v": self.array(array, where)}

    def encode(self, value: Any, where: str) -> Any:
        if (
            value is None
            or isinstance(value, (bool, str, int, float))
            and not isinstance(value, np.generic)
        ):
            if isinstance(value, float) and not np.isfinite(value):
                return {"t": "float", "v": repr(value)}
            return value
        if isinstance(value, np.generic):
            return {"t": "scalar", "v": self.array(np.asarray(value), where)}
        if isinstance(value, np.ndarray):
            return self.array(value, where)
        if isinstance(value, pd.Index):
            return self.index(value, where)
        if isinstance(value, pd.Series):
            return {
                "t": "series",
                "values": self.values(value, where),
                "index": self.index(value.index, f"{where}.index"),
                "name": self.encode(value.name, f"{where}.name"),
            }
        if isinstance(value, pd.DataFrame):
            return {
                "t": "frame",
                "index": self.index(value.index, f"{where}.index"),
                "columns": self.index(value.columns, f"{where}.columns"),
                "data": [
                    self.values(value.iloc[:, j], f"{where}[{value.columns[j]!r}]")
                    for j in range(value.shape[1])
                ],
            }
        if isinstance(value, (list, tuple)):
            items = [self.encode(item, f"{where}[{i}]") for i, item in enumerate(value)]
            return {"t": "tuple" if isinstance(value, tuple) else "list", "v": items}
        if isinstance(value, dict):
            return {
                "t": "dict",
                "v": [
                    [self.encode(k, f"{where} key"), self.encode(v, f"{where}[{k!r}]")]
                    for k, v in value.items()
                ],
            }
        if isinstance(value, os.PathLike):
            return {"t": "path", "v": os.fspath(value)}
        if isinstance(value, np.random.Generator):
            bit = value.bit_generator
            return {"t": "generator", "bit": type(bit).__name__, "state": _json_state(bit.state)}
        if isinstance(value, np.random.SeedSequence):
            return {
                "t": "seedsequence",
                "entropy": self.encode(value.entropy, f"{where}.entropy"),
                "spawn_key": list(value.spawn_key),
                "pool_size": value.pool_size,
                "n_children_spawned": value.n_children_spawned,
            }
        if type(value).__module__.split(".")[0] == "torch":
            return self.tensor(value, where)
        key = _class_key(type(value))
        if key in _CLASSES:
            if not hasattr(value, "__dict__"):
                raise TypeError(f"model file: {where} ({key}) has no __dict__ to store")
            return {"t": "object", "cls": key, "state": self.encode(dict(vars(value)), where)}
        raise TypeError(
            f"model file: {where} holds a {type(value).__module__}.{type(value).__qualname__}, "
            "which the safe format cannot store"
        )

    def tensor(self, value: Any, where: str) -> dict:
        import torch

        if not isinstance(value, torch.Tensor):
            raise TypeError(f"model file: {where} holds a {type(value).__name__} (torch)")
        array = value.detach().cpu().numpy()
        return {"t": "tensor", "v": self.array(array, where), "device": str(value.device)}


def _json_state(state: Mapping) -> dict:
    """A bit generator's state with NumPy integers made plain (JSON-serialisable)."""
    out = {}
    for key, value in state.items():
        if isinstance(value, Mapping):
            out[key] = _json_state(value)
        elif isinstance(value, np.ndarray):
            out[key] = {"ndarray": value.tolist(), "dtype": str(value.dtype)}
        elif isinstance(value, np.integer):
            out[key] = int(value)
        else:
            out[key] = value
    return out


def _numpy_state(state: Mapping) -> dict:
    out = {}
    for key, value in state.items():
        if isinstance(value, Mapping) and "ndarray" in value:
            out[key] = np.array(value["ndarray"], dtype=value["dtype"])
        elif isinstance(value, Mapping):
            out[key] = _numpy_state(value)
        else:
            out[key] = value
    return out


def encode(value: Any, where: str = "value") -> tuple[Any, dict[str, np.ndarray]]:
    """``(description, arrays)`` of a tree of storable values (see the module docstring)."""
    encoder = _Encoder()
    description = encoder.encode(value, where)
    return description, encoder.arrays


# --------------------------------------------------------------------------------- decoding
class _Decoder:
    def __init__(self, arrays: Mapping[str, np.ndarray], max_items: int = 2**62) -> None:
        self.arrays = arrays
        #: the most entries a lazily built index (a ``RangeIndex``) may claim
        self.max_items = max_items

    def array(self, node: dict) -> np.ndarray:
        if node["t"] == "objects":
            values = np.empty(len(node["v"]), dtype=object)
            values[:] = node["v"]
            return values.reshape(node["shape"])
        array = self.arrays[node["k"]]
        return array.astype(object) if node.get("object") else array

    def index(self, node: dict) -> pd.Index:
        kind = node["t"]
        if kind == "multiindex":
            return pd.MultiIndex(
                levels=[self.index(level) for level in node["levels"]],
                codes=[self.array(c) for c in node["codes"]],
                names=[self.decode(name) for name in node["names"]],
            )
        if kind == "range":
            bounds = range(node["start"], node["stop"], node["step"])
            if len(bounds) > self.max_items:
                raise ValueError(f"a range index of {len(bounds)} entries")
            return pd.RangeIndex(
                bounds.start, bounds.stop, bounds.step, name=self.decode(node["name"])
            )
        values = node["values"]
        name = self.decode(node["name"])
        if values["t"] == "categorical":
            return pd.CategoricalIndex(self.categorical(values), name=name)
        return pd.Index(self.array(values["v"]), dtype=values["dtype"], name=name, copy=False)

    def categorical(self, node: dict) -> pd.Categorical:
        return pd.Categorical.from_codes(
            self.array(node["codes"]),
            categories=self.index(node["categories"]),
            ordered=node["ordered"],
        )

    def series_values(self, node: dict):
        if node["t"] == "categorical":
            return self.categorical(node), None
        return self.array(node["v"]), node["dtype"]

    def decode(self, node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        kind = node["t"]
        if kind == "float":
            return float(node["v"])
        if kind == "scalar":
            return self.array(node["v"])[()]
        if kind in ("array", "objects"):
            return self.array(node)
        if kind in ("index", "multiindex", "range"):
            return self.index(node)
        if kind == "series":
            values, dtype = self.series_values(node["values"])
            return pd.Series(
                values,
                index=self.index(node["index"]),
                dtype=dtype,
                name=self.decode(node["name"]),
                copy=False,
            )
        if kind == "frame":
            index, columns = self.index(node["index"]), self.index(node["columns"])
            data = {}
            for j, column in enumerate(node["data"]):
                values, dtype = self.series_values(column)
                data[j] = pd.Series(values, index=index, dtype=dtype, copy=False)
            frame = pd.concat(data, axis=1) if data else pd.DataFrame(index=index)
            frame.columns = columns
            return frame
        if kind == "list":
            return [self.decode(item) for item in node["v"]]
        if kind == "tuple":
            return tuple(self.decode(item) for item in node["v"])
        if kind == "dict":
            return {self.decode(k): self.decode(v) for k, v in node["v"]}
        if kind == "path":
            return Path(node["v"])
        if kind == "generator":
            bit_class = getattr(np.random, node["bit"], None)
            if not (isinstance(bit_class, type) and issubclass(bit_class, np.random.BitGenerator)):
                raise ValueError(f"model file: unknown bit generator {node['bit']!r}")
            bit = bit_class()
            bit.state = _numpy_state(node["state"])
            return np.random.Generator(bit)
        if kind == "seedsequence":
            return np.random.SeedSequence(
                self.decode(node["entropy"]),
                spawn_key=tuple(node["spawn_key"]),
                pool_size=node["pool_size"],
                n_children_spawned=node["n_children_spawned"],
            )
        if kind == "tensor":
            return _tensor(self.array(node["v"]), node["device"])
        if kind == "object":
            cls = _CLASSES.get(node["cls"])
            if cls is None:
                raise ValueError(
                    f"model file: the class {node['cls']} is not one crowdbayes can restore"
                )
            obj = cls.__new__(cls)
            obj.__dict__.update(self.decode(node["state"]))
            return obj
        raise ValueError(f"model file: unknown entry type {kind!r}")


def _tensor(array: np.ndarray, device: Any) -> Any:
    """A stored tensor, on the CPU (the model moves it to its own device): ``device``, where
    it was saved from, must name a device torch knows, and the array a dtype torch stores."""
    import torch

    if not isinstance(device, str):
        raise ValueError(f"a tensor's device is {device!r}, not a device name")
    try:
        torch.device(device)
    except RuntimeError:
        raise ValueError(f"a tensor's device {device[:40]!r} is not one torch knows") from None
    if array.dtype.kind not in "biufc":
        raise ValueError(f"a tensor of dtype {array.dtype}")
    return torch.from_numpy(np.array(array))


def decode(description: Any, arrays: Mapping[str, np.ndarray]) -> Any:
    """The tree that :func:`encode` described."""
    return _Decoder(arrays).decode(description)


# --------------------------------------------------------------------------------- limits
#: the environment variable that sets the most bytes a model file's arrays may hold
MAX_BYTES_VARIABLE = "CROWDBAYES_MAX_MODEL_BYTES"
#: the default bound on a file's arrays: this many bytes, or ...
MIN_BOUND = 64 * 2**20
#: ... this many times the file's size, whichever is larger (deflate reaches ~1000x on zeros;
#: numeric model arrays compress a few times at most)
RATIO_BOUND = 32
#: the most bytes of the header member (4 bytes a character: 4M characters of JSON)
MAX_HEADER_BYTES = 16 * 2**20
#: the deepest nesting of ``[`` and ``{`` in the header
MAX_DEPTH = 100
_CHUNK = 2**20


def max_model_bytes(file_size: int, max_bytes: int | None = None) -> int:
    """The most bytes the arrays of a model file of ``file_size`` bytes may hold: ``max_bytes``
    if given, else the environment's ``CROWDBAYES_MAX_MODEL_BYTES``, else
    ``max(MIN_BOUND, RATIO_BOUND * file_size)``."""
    if max_bytes is None:
        given = os.environ.get(MAX_BYTES_VARIABLE, "").strip()
        if not given:
            return max(MIN_BOUND, RATIO_BOUND * file_size)
        try:
            max_bytes = int(given)
        except ValueError:
            raise ValueError(
                f"{MAX_BYTES_VARIABLE} must be a number of bytes; got {given[:40]!r}"
            ) from None
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise ValueError(f"max_bytes must be a number of bytes (>= 0); got {max_bytes!r}")
    return max_bytes


def _raise_bound_advice(path: Path, needed: int, bound: int) -> None:
    raise ValueError(
        f"{path}: the model file's arrays would take {needed:,} bytes, more than the "
        f"{bound:,} allowed for a file of its size (a damaged or hostile file?); if you trust "
        f"it, set {MAX_BYTES_VARIABLE} or pass max_bytes= to load"
    )


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters (a forged file's values, echoed in an
    error message, can be anything)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def json_depth(text: str) -> int:
    """The deepest nesting of JSON arrays and objects in ``text`` (brackets in strings are not
    counted), found without parsing, so that a header of 100,000 ``[`` is refused before
    ``json.loads`` recurses into it."""
    bare = _STRINGS.sub('""', text).encode("ascii", "replace")
    codes = np.frombuffer(bare, dtype=np.uint8)
    steps = np.zeros(len(codes), dtype=np.int32)
    steps[(codes == ord("[")) | (codes == ord("{"))] = 1
    steps[(codes == ord("]")) | (codes == ord("}"))] = -1
    return int(np.cumsum(steps).max(initial=0))


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


# --------------------------------------------------------------------------------- the file
@dataclasses.dataclass(frozen=True)
class ModelFile:
    """What a model file holds: the class (name and module), parameters and fitted state."""

    class_name: str
    module: str
    params: dict
    state: dict
    version: int
    crowdbayes_version: str


class _Hashing:
    """A file object that passes what is written or read through a SHA-256."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()

    def write(self, data: Any) -> int:
        self.digest.update(data)
        return self.handle.write(data)

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        return data


def _member_entry(array: np.ndarray, digest: str) -> dict:
    return {"dtype": array.dtype.str, "shape": list(array.shape), "sha256": digest}


def write_model_file(
    path: str | os.PathLike,
    cls: type,
    params: Mapping[str, Any],
    state: Mapping[str, Any],
    crowdbayes_version: str,
    *,
    overwrite: bool = True,
    make_parents: bool = True,
) -> None:
    """Write a model file atomically (a failed save leaves no file, nor a temporary one); an
    existing file is replaced only with ``overwrite`` (else ``FileExistsError``, also when
    another process created it meanwhile), a missing directory created only with
    ``make_parents``.

    Each array is a ``.npy`` member of a deflated zip; the header (the last member) lists every
    array's dtype, shape and the SHA-256 of its member's bytes."""
    encoder = _Encoder()
    params_node = encoder.encode(dict(params), "parameters")
    state_node = encoder.encode(dict(state), "fitted state")
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "crowdbayes": crowdbayes_version,
        "class": cls.__name__,
        "module": cls.__module__,
        "params": params_node,
        "state": state_node,
    }

    def write(tmp: Path) -> None:
        members = {}
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for key, array in encoder.arrays.items():
                with archive.open(f"{key}.npy", "w", force_zip64=True) as member:
                    hashing = _Hashing(member)
                    np.lib.format.write_array(hashing, np.asanyarray(array), allow_pickle=False)
                members[key] = _member_entry(array, hashing.digest.hexdigest())
            text = json.dumps({**header, "members": members})
            with archive.open(f"{_HEADER}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.array(text), allow_pickle=False)

    write_atomically([(path, write)], overwrite=overwrite, make_parents=make_parents)


class _Archive:
    """The members of a model file, read with every size known and bounded before it is
    decompressed (see :func:`read_model_file`)."""

    def __init__(self, path: Path, archive: zipfile.ZipFile, bound: int) -> None:
        self.path, self.archive, self.bound = path, archive, bound
        self.members: dict[str, zipfile.ZipInfo] = {}
        for info in archive.infolist():
            key = info.filename[:-4] if info.filename.endswith(".npy") else ""
            if not key or key in self.members or info.is_dir():
                raise self.error(f"an unexpected member {info.filename[:60]!r}")
            if info.flag_bits & 0x1 or info.compress_type not in (
                zipfile.ZIP_STORED,
                zipfile.ZIP_DEFLATED,
            ):
                raise self.error(f"the member {key[:60]!r} is encrypted or oddly compressed")
            self.members[key] = info
        if _HEADER not in self.members:
            raise ValueError(f"{path} is not a crowdbayes model file (no header)")

    def error(self, what: str) -> ValueError:
        return ValueError(
            f"{self.path}: the model file is damaged or was edited ({one_line(what)})"
        )

    def layout(self, key: str, handle: Any) -> tuple[np.dtype, tuple, bool]:
        """The dtype, shape and order of member ``key`` (its ``.npy`` header), checked."""
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            raise self.error(f"the member {key!r} is in .npy version {version}")
        if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
            raise self.error(f"the member {key!r} has dtype {dtype}")
        if dtype.kind not in "biufcUSMm":
            raise self.error(f"the member {key!r} has dtype {dtype}")
        return dtype, tuple(shape), fortran

    def sizes(self, expected: Mapping[str, dict] | None) -> dict[str, tuple]:
        """Every array member's layout, from the ``.npy`` headers (checked against
        ``expected``, the header's table, where there is one), before any array is read; the
        sum of their sizes is held to the bound."""
        keys = set(self.members) - {_HEADER}
        if expected is not None and set(expected) != keys:
            extra = [key[:60] for key in sorted(keys - set(expected))]
            missing = [key[:60] for key in sorted(set(expected) - keys)]
            raise self.error(
                f"members {extra[:3]} not listed, {missing[:3]} listed and missing"
                if extra
                else f"the members {missing[:3]} are missing"
            )
        layouts, total = {}, 0
        if expected is not None:
            total = sum(_declared_bytes(key, entry, self) for key, entry in expected.items())
            if total > self.bound:
                _raise_bound_advice(self.path, total, self.bound)
        total = 0
        for key in sorted(keys):
            with self.archive.open(self.members[key]) as handle:
                layout = self.layout(key, handle)
            if expected is not None:
                entry = expected[key]
                if (layout[0].str, list(layout[1])) != (entry["dtype"], entry["shape"]):
                    raise self.error(
                        f"the member {key!r} holds {layout[0].str} {list(layout[1])}; the "
                        f"header lists {entry['dtype']} {entry['shape']}"
                    )
            total += _nbytes(layout[0], layout[1])
            if total > self.bound:
                _raise_bound_advice(self.path, total, self.bound)
            layouts[key] = layout
        return layouts

    def read(self, key: str, digest: str | None = None) -> np.ndarray:
        """Member ``key``, read exactly to its declared size (and its SHA-256 checked)."""
        with self.archive.open(self.members[key]) as raw:
            handle = _Hashing(raw)
            dtype, shape, fortran = self.layout(key, handle)
            array = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
            view = array.reshape(-1, order="A").view(np.uint8) if array.nbytes else None
            done = 0
            while view is not None and done < view.size:
                chunk = handle.read(min(_CHUNK, view.size - done))
                if not chunk:
                    raise self.error(f"the member {key!r} is shorter than its header says")
                view[done : done + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
                done += len(chunk)
            if handle.read(1):
                raise self.error(f"the member {key!r} is longer than its header says")
        if digest is not None and handle.digest.hexdigest() != digest:
            raise ValueError(
                f"{self.path} is corrupted: the member {key!r} does not match its checksum"
            )
        return array

    def header(self) -> dict:
        """The JSON header, bounded in size and depth before it is parsed."""
        with self.archive.open(self.members[_HEADER]) as handle:
            dtype, shape, _ = self.layout(_HEADER, handle)
        if dtype.kind != "U" or shape != ():
            raise ValueError(f"{self.path} is not a crowdbayes model file (no JSON header)")
        if dtype.itemsize > MAX_HEADER_BYTES:
            raise self.error(
                f"a header of {dtype.itemsize:,} bytes, more than the {MAX_HEADER_BYTES:,} allowed"
            )
        text = self.read(_HEADER).item()
        if not isinstance(text, str):
            raise self.error("the header is not text")
        depth = json_depth(text)
        if depth > MAX_DEPTH:
            raise self.error(f"the header nests {depth} deep, more than the {MAX_DEPTH} allowed")
        try:
            header = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{self.path} is not a crowdbayes model file (unreadable header: {err})"
            ) from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ValueError(f"{self.path} is not a crowdbayes model file")
        unknown = sorted(set(header) - _HEADER_KEYS)
        if unknown:
            raise self.error(f"the header holds unknown entries {unknown[:3]}")
        return header


def _nbytes(dtype: np.dtype, shape: tuple) -> int:
    return int(np.prod(shape, dtype=object)) * dtype.itemsize if shape else dtype.itemsize


def _declared_bytes(key: str, entry: Any, archive: _Archive) -> int:
    """The size of member ``key`` as the header's table lists it (its entry checked)."""
    try:
        dtype = np.dtype(entry["dtype"])
        shape = entry["shape"]
        ok = isinstance(entry["sha256"], str) and isinstance(shape, list) and len(shape) <= 32
        ok = ok and all(type(n) is int and n >= 0 for n in shape)
    except (TypeError, KeyError, ValueError):
        ok = False
    if not ok:
        raise archive.error(f"the header's entry of member {key!r} is not a dtype and shape")
    return _nbytes(dtype, tuple(shape))


#: the format versions this crowdbayes reads (version 2: no table of members, no checksums)
READABLE_VERSIONS = (2, FORMAT_VERSION)


def read_model_file(
    path: str | os.PathLike,
    restore: Callable[[str, str], type],
    *,
    max_bytes: int | None = None,
) -> tuple:
    """Read a model file; ``restore(class_name, module)`` returns the class to build.

    Returns ``(cls, params, state, ModelFile)``. What is read is bounded before it is read:
    the header to :data:`MAX_HEADER_BYTES` and :data:`MAX_DEPTH`, the arrays together to
    :func:`max_model_bytes` (from each member's ``.npy`` header, checked against the header's
    table of members); each member is read to exactly its declared size and its SHA-256
    checked. Every way a file can be damaged, cut, edited or forged raises a ``ValueError``
    naming the file (a missing file: ``FileNotFoundError``). Files of a format version this
    crowdbayes does not read are refused with a message naming both versions.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"model file not found: {path}")
    if not path.is_file():
        raise ValueError(f"{path} is not a crowdbayes model file (not a regular file)")
    bound = max_model_bytes(path.stat().st_size, max_bytes)
    try:
        with zipfile.ZipFile(path) as archive:
            return _read_archive(_Archive(path, archive, bound), restore)
    except (ImportError, FileNotFoundError):
        raise  # a model that needs a missing package; a file removed while read
    except ValueError as err:
        if str(path) in str(err):
            raise
        raise ValueError(
            f"{path} is not a crowdbayes model file, or it is damaged ({one_line(str(err))})"
        ) from None
    except Exception as err:  # noqa: BLE001 - zipfile, zlib and numpy on a forged file
        problem = one_line(f"{type(err).__name__}: {err}")
        if "CRC" in str(err).upper() or isinstance(err, zlib.error):
            raise ValueError(f"{path} is corrupted ({problem})") from None
        raise ValueError(
            f"{path} is not a crowdbayes model file, or it is damaged or truncated ({problem})"
        ) from None


def _read_archive(archive: _Archive, restore: Callable[[str, str], type]) -> tuple:
    path = archive.path
    header = archive.header()
    version = header.get("version", 0)
    if version not in READABLE_VERSIONS or type(version) is not int:
        newer = isinstance(version, int) and version > FORMAT_VERSION
        advice = "upgrade crowdbayes to read it" if newer else "refit the model and save it again"
        raise ValueError(
            f"{path} is in model format version {one_line(str(version), 20)}; this crowdbayes "
            "reads version "
            f"{FORMAT_VERSION}: {advice}"
        )
    table = header.get("members") if version >= 3 else None
    if version >= 3 and not isinstance(table, dict):
        raise archive.error("the header has no table of members")
    archive.sizes(table)
    arrays = {
        key: archive.read(key, None if table is None else table[key]["sha256"])
        for key in archive.members
        if key != _HEADER
    }
    if not (isinstance(header.get("class"), str) and isinstance(header.get("module"), str)):
        raise archive.error("the header names no class")
    cls = restore(header["class"], header["module"])
    try:
        decoder = _Decoder(arrays, max_items=archive.bound)
        params, state = decoder.decode(header["params"]), decoder.decode(header["state"])
    except ValueError as err:
        raise archive.error(str(err)) from None
    except Exception as err:  # noqa: BLE001 - whatever a forged description trips in pandas
        raise archive.error(f"{type(err).__name__}: {err}") from None
    if not (isinstance(params, dict) and isinstance(state, dict)):
        raise archive.error("no parameters")
    info = ModelFile(
        header["class"], header["module"], params, state, version, str(header.get("crowdbayes"))
    )
    return cls, params, state, info
