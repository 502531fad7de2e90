"""A safe on-disk format for fitted models: one ``.npz`` file, no pickle.

A saved model is a set of named numeric or string arrays plus a small JSON header
(``{"format": "crowdbayes-model", "version": 1, "kind": ..., "meta": {...}}``) stored as a
0-d unicode array. Loading uses ``numpy.load(..., allow_pickle=False)``, so a model file can
never execute code; object arrays are refused when saving.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .data._io import write_atomically

__all__ = ["FORMAT", "VERSION", "save_arrays", "load_arrays"]

FORMAT = "crowdbayes-model"
VERSION = 1
_HEADER = "__header__"


def save_arrays(
    path: str | os.PathLike,
    kind: str,
    arrays: Mapping[str, Any],
    meta: Mapping[str, Any] | None = None,
) -> None:
    """Write ``arrays`` and a JSON ``meta`` header for a model of type ``kind`` to ``path``.

    The file is written atomically (a failed save leaves no file behind). ``meta`` must be JSON
    serialisable; arrays must be numeric, boolean or string (never object).
    """
    if _HEADER in arrays:
        raise ValueError(f"model file: the array name {_HEADER!r} is reserved")
    stored = {}
    for name, value in arrays.items():
        array = np.asarray(value)
        if array.dtype == object:
            array = _as_string_array(name, array)
        stored[name] = array
    header = {"format": FORMAT, "version": VERSION, "kind": kind, "meta": dict(meta or {})}
    stored[_HEADER] = np.array(json.dumps(header))

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            np.savez_compressed(handle, **stored)

    write_atomically([(path, write)])


def load_arrays(
    path: str | os.PathLike, kind: str | tuple[str, ...] | None = None
) -> tuple[str, dict[str, np.ndarray], dict[str, Any]]:
    """Read a file written by :func:`save_arrays`; returns ``(kind, arrays, meta)``.

    ``kind`` (one name or several) checks the model type and refuses anything else with a message
    naming both.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"model file not found: {path}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (ValueError, OSError) as err:
        raise ValueError(f"{path} is not a crowdbayes model file ({err})") from err
    if _HEADER not in arrays:
        raise ValueError(f"{path} is not a crowdbayes model file (no header)")
    header = json.loads(str(arrays.pop(_HEADER)))
    if header.get("format") != FORMAT:
        raise ValueError(f"{path} is not a crowdbayes model file")
    if header.get("version", 0) > VERSION:
        raise ValueError(
            f"{path} was written by a newer crowdbayes (format version {header['version']}); "
            "upgrade crowdbayes to read it"
        )
    wanted = (kind,) if isinstance(kind, str) else kind
    if wanted is not None and header["kind"] not in wanted:
        raise ValueError(f"{path} holds a {header['kind']} model; expected {' or '.join(wanted)}")
    return header["kind"], arrays, header["meta"]


def _as_string_array(name: str, array: np.ndarray) -> np.ndarray:
    """Ids stored as Python objects (strings, ints) become a unicode array; anything else is
    refused, since only pickle could store it."""
    if all(isinstance(v, str) for v in array.ravel()):
        return array.astype(str)
    raise TypeError(
        f"model file: array {name!r} holds Python objects, which the safe format cannot store"
    )
