"""The one model file format: numeric arrays plus a JSON header, in one ``.npz`` file, no pickle.

A saved estimator is a tree of Python values — its parameters and its fitted state — made of
JSON scalars, NumPy arrays, pandas objects (``Index``, ``MultiIndex``, ``Series``,
``DataFrame``), lists, tuples, dicts, paths, NumPy random generators, torch tensors and
instances of the classes that registered themselves with :func:`persistable` (every
:class:`~crowdbayes.base.Estimator` subclass, kernels, posterior summaries). :func:`encode`
turns such a tree into a JSON *description* whose leaves point at arrays stored beside it;
:func:`decode` inverts it exactly (dtypes, index names and value types included), so a loaded
model predicts bit for bit as the saved one did.

File layout (``FORMAT_VERSION`` 2)::

    __header__ : 0-d unicode array, JSON {"format": "crowdbayes-model", "version": 2,
                 "crowdbayes": "<version>", "class": "<name>", "module": "<module>",
                 "params": <description>, "state": <description>}
    a0, a1, ... : the arrays the descriptions point at

Loading uses ``numpy.load(..., allow_pickle=False)`` and builds only registered classes, so a
model file cannot run code. Object arrays are stored as unicode arrays when they hold strings
only, else as JSON lists of scalars; anything else is refused when saving, with the path of the
offending value in the message.
"""

from __future__ import annotations

import dataclasses
import json
import os
import zipfile
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
FORMAT_VERSION = 2
_HEADER = "__header__"

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
    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.arrays = arrays

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
            return pd.RangeIndex(
                node["start"], node["stop"], node["step"], name=self.decode(node["name"])
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
            import torch

            return torch.from_numpy(np.array(self.array(node["v"]))).to(node["device"])
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


def decode(description: Any, arrays: Mapping[str, np.ndarray]) -> Any:
    """The tree that :func:`encode` described."""
    return _Decoder(arrays).decode(description)


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


def write_model_file(
    path: str | os.PathLike,
    cls: type,
    params: Mapping[str, Any],
    state: Mapping[str, Any],
    crowdbayes_version: str,
) -> None:
    """Write a model file atomically (a failed save leaves no file, nor a temporary one)."""
    encoder = _Encoder()
    params_node = encoder.encode(dict(params), "parameters")
    state_node = encoder.encode(dict(state), "fitted state")
    arrays = encoder.arrays
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "crowdbayes": crowdbayes_version,
        "class": cls.__name__,
        "module": cls.__module__,
        "params": params_node,
        "state": state_node,
    }
    stored = dict(arrays)
    stored[_HEADER] = np.array(json.dumps(header))

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            np.savez_compressed(handle, **stored)

    write_atomically([(path, write)])


def read_model_file(path: str | os.PathLike, restore: Callable[[str, str], type]) -> tuple:
    """Read a model file; ``restore(class_name, module)`` returns the class to build.

    Returns ``(cls, params, state, ModelFile)``. Files of an older or newer format version are
    refused with a message naming both versions.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"model file not found: {path}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise ValueError(
            f"{path} is not a crowdbayes model file, or it is truncated ({err})"
        ) from None
    if _HEADER not in arrays:
        raise ValueError(f"{path} is not a crowdbayes model file (no header)")
    try:
        header = json.loads(str(arrays.pop(_HEADER)))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not a crowdbayes model file (unreadable header)") from err
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"{path} is not a crowdbayes model file")
    version = header.get("version", 0)
    if version != FORMAT_VERSION:
        newer = isinstance(version, int) and version > FORMAT_VERSION
        advice = "upgrade crowdbayes to read it" if newer else "refit the model and save it again"
        raise ValueError(
            f"{path} is in model format version {version}; this crowdbayes reads version "
            f"{FORMAT_VERSION}: {advice}"
        )
    try:
        cls = restore(header["class"], header["module"])
        decoder = _Decoder(arrays)
        params, state = decoder.decode(header["params"]), decoder.decode(header["state"])
    except (KeyError, TypeError, AttributeError, IndexError) as err:
        raise ValueError(
            f"{path}: the model file is damaged or was edited ({type(err).__name__}: {err})"
        ) from None
    if not (isinstance(params, dict) and isinstance(state, dict)):
        raise ValueError(f"{path}: the model file is damaged or was edited (no parameters)")
    info = ModelFile(
        header["class"], header["module"], params, state, version, header.get("crowdbayes", "")
    )
    return cls, params, state, info
