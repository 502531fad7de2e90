"""Shared test setup: one thread per numerical library, and the location of the shared data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Set before numpy/scipy start their thread pools; no library is imported to do it.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

_REPO = Path(__file__).resolve().parent.parent
_DEFAULT_DATA = _REPO.parent / "shared" / "data"
if not os.environ.get("CROWDBAYES_DATA") and _DEFAULT_DATA.is_dir():
    os.environ["CROWDBAYES_DATA"] = str(_DEFAULT_DATA)


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The shared data root (``CROWDBAYES_DATA``); skips locally and fails on CI when absent."""
    value = os.environ.get("CROWDBAYES_DATA", "")
    root = Path(value) if value else None
    if root is None or not root.is_dir():
        message = f"shared data not found: CROWDBAYES_DATA={value!r}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return root


#: fixtures that make a test slow by nature: the shared real data sets, a Dask cluster
_SLOW_FIXTURES = ("data_root", "client")


def pytest_collection_modifyitems(config, items) -> None:
    """Tests on the shared real data or on a Dask cluster are ``slow`` (left out by
    ``make test-fast``, run by ``make test``), as are those marked so one by one."""
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in _SLOW_FIXTURES):
            item.add_marker(pytest.mark.slow)


def pytest_configure(config) -> None:
    """On CI every optional dependency the tests use is installed (``make test`` installs the
    dev extra and torch), so an import that would make ``pytest.importorskip`` skip a test
    file is an error there, not a silent skip."""
    if os.environ.get("CI", "").lower() != "true":
        return
    import importlib

    for module in (
        "torch",
        "dask.dataframe",
        "distributed",
        "pyarrow",
        "sklearn",
        "matplotlib",
        "krippendorff",
        "statsmodels",
    ):
        importlib.import_module(module)


@pytest.fixture(scope="module")
def client():
    """A real Dask ``LocalCluster``: 2 worker processes, one thread each, on loopback (one per
    test module, so a module that kills a worker does not disturb the next)."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as opened,
    ):
        yield opened
