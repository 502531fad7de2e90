"""Capacity checks: refuse a fit whose dense arrays cannot fit in memory, before allocating them.

A model of class labels holds dense arrays whose size grows with the product of the input's
dimensions, not with its number of rows: tasks × classes posteriors, workers × classes² confusion
matrices, and for the Gibbs sampler classes³ Gaussian references per chain. 40,000 rows with
10,000 classes ask for 37 GiB per copy of the confusion matrices of 50 workers; without a check
such a fit runs for a while, takes what memory there is, and ends in numpy's ``MemoryError``.

:func:`check_memory` compares a lower bound of what a fit needs (each model says which arrays it
holds at once, :meth:`crowdbayes.roles.LabelAggregator._dense_arrays`) with :func:`memory_bound`
and raises :class:`CapacityError` naming the size needed, the bound and what to change — in
microseconds, before any array is allocated.

The bound is ``CROWDBAYES_MAX_MEMORY`` (``4GiB``, ``500MB``, ``2e9``: bytes) where set, else
:data:`AVAILABLE_SHARE` of the memory available to this process: the smallest of the kernel's
``MemAvailable`` (``/proc/meminfo``, else ``os.sysconf``), a cgroup's ``memory.max`` (a
container's limit) and the address-space limit (``ulimit -v``). Where none can be read, nothing
is refused. The sizes counted are a lower bound of what the fit allocates, so a fit refused
would not have fitted; one allowed may still run out of memory (then the command line says
what size numpy asked for).

Pure Python: importing this module imports no numpy (the command line starts without it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = [
    "AVAILABLE_SHARE",
    "CapacityError",
    "ENV_VAR",
    "available_memory",
    "check_memory",
    "format_size",
    "memory_bound",
    "parse_size",
]

#: the environment variable that sets the bound (a size, e.g. ``4GiB``)
ENV_VAR = "CROWDBAYES_MAX_MEMORY"
#: the share of the available memory that a fit's dense arrays may take by default
AVAILABLE_SHARE = 0.8
#: the least automatic bound (bytes): fits smaller than this are never refused for their size
MIN_BOUND = 256 * 2**20
#: bytes of one float64, the element of every dense array counted
FLOAT_BYTES = 8

_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


class CapacityError(ValueError, MemoryError):
    """A fit refused before it started: its dense arrays would need more memory than allowed.

    A ``ValueError`` (the input is too large for the model: the command line exits with 2) and
    a ``MemoryError`` (what a caller guarding against memory exhaustion catches)."""


def parse_size(text: str) -> int:
    """Bytes of a size written ``4GiB``, ``4 GB``, ``500M``, ``1.5e9`` (decimal units k, M, G,
    T; binary KiB, MiB, GiB, TiB; case-insensitive)."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(
            f"{ENV_VAR}: {text!r} is not a size; write e.g. 4GiB, 500MB or 2000000000 (bytes)"
        )
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"{ENV_VAR}: {text!r} must be a positive size")
    return size


def format_size(n_bytes: float) -> str:
    """``n_bytes`` for a reader: ``71.3 GiB``, ``512.0 MiB``, ``3 bytes``."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:,.1f} {unit}"
    return f"{int(n_bytes)} bytes"


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as file:
            for line in file:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="utf-8") as file:
            return int(file.read().strip())
    except (OSError, ValueError):  # missing, or "max" (no limit)
        return None


def _cgroup_limit() -> int | None:
    """The memory limit of this process's cgroup (v2 ``memory.max``; a container's limit)."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as file:
            lines = file.read().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            folder = "/sys/fs/cgroup" + line[3:].rstrip("/")
            return _read_int(f"{folder}/memory.max")
    return None


def _address_space_limit() -> int | None:
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def available_memory() -> int | None:
    """Bytes of memory this process can still use (module docstring), None if unknown."""
    known = [
        size
        for size in (_meminfo_available(), _cgroup_limit(), _address_space_limit())
        if size is not None and size > 0  # a reading of 0 is a failed reading, not a limit
    ]
    return min(known) if known else None


def memory_bound() -> tuple[int | None, str]:
    """The most a fit's dense arrays may take, in bytes (None: no bound), and where that
    number comes from (for the message)."""
    text = os.environ.get(ENV_VAR, "").strip()
    if text:
        return parse_size(text), f"{ENV_VAR}={text}"
    available = available_memory()
    if available is None:
        return None, "unknown available memory"
    share = f"{AVAILABLE_SHARE:.0%} of the {format_size(available)} available"
    # never below MIN_BOUND: a momentary dip of the available memory must not refuse a small fit
    bound = max(int(AVAILABLE_SHARE * available), MIN_BOUND)
    return bound, f"{share}; set {ENV_VAR} to change it"


def check_memory(what: str, arrays: Mapping[str, int], hint: str) -> None:
    """Refuse (:class:`CapacityError`) when the dense arrays ``arrays`` (a description of each
    -> its number of float64 elements) of ``what`` exceed :func:`memory_bound`; ``hint`` says
    what to change."""
    needed = FLOAT_BYTES * sum(arrays.values())
    bound, source = memory_bound()
    if bound is None or needed <= bound:
        return
    largest = sorted(arrays.items(), key=lambda item: -item[1])[:3]
    parts = ", ".join(f"{name} {format_size(FLOAT_BYTES * n)}" for name, n in largest if n)
    raise CapacityError(
        f"{what} needs at least {format_size(needed)} of memory for its dense arrays ({parts}), "
        f"more than the {format_size(bound)} allowed ({source}): {hint}"
    )
