"""The spellings of the first command line still work for one release (issue 39).

``--links`` (now the positional LINKS of ``cluster fit``), ``--save`` (``--save-model``),
``--items`` (``--features``), ``--workers`` of ``prefs`` (``--worker-features``) and of
``labels fit`` (``--dask-workers``): each old spelling prints exactly one deprecation line on
stderr, and writes byte for byte the files that the new spelling writes. These are the only
tests that use the old spellings; every other test uses the new ones.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowdbayes.cli import main
from crowdbayes.datasets import simulate_labels
from crowdbayes.datasets.clustering import simulate_pair_links
from pl_simulate import simulate_tables


def deprecation(old: str, new: str) -> str:
    return f"crowdbayes: warning: {old} is deprecated; use {new} (removed in a later release)"


def contents(path: Path) -> dict[str, bytes]:
    """The bytes of the file at ``path``, or of every file under the directory ``path``."""
    if path.is_dir():
        return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))}
    return {path.name: path.read_bytes()}


def check_spellings(
    tmp_path: Path,
    capsys,
    argv: Callable[[Path, bool], list],
    note: str,
    outputs: tuple[str, ...],
) -> None:
    """Run ``argv(folder, old)`` with the old spelling and then with the new one, each writing
    its ``outputs`` into an empty ``folder`` (the same path: a model file may record the path
    of the results): both succeed and write the same files, and the old spelling prints the
    deprecation line ``note`` once, the new one none."""
    written, notes = {}, {}
    folder = tmp_path / "out"
    for spelling in ("old", "new"):
        folder.mkdir()
        code = main([str(word) for word in argv(folder, spelling == "old")])
        err = capsys.readouterr().err
        assert code == 0, err
        notes[spelling] = [line for line in err.splitlines() if "deprecated" in line]
        assert sorted(p.name for p in folder.iterdir()) == sorted(outputs)
        written[spelling] = {name: contents(folder / name) for name in outputs}
        folder.rename(tmp_path / spelling)
    assert notes == {"old": [note], "new": []}
    assert written["old"] == written["new"]


@pytest.fixture
def labels_csv(tmp_path) -> Path:
    path = tmp_path / "labels.csv"
    simulate_labels(60, 6, 4, n_classes=2, random_state=0).labels.to_csv(path, index=False)
    return path


@pytest.fixture
def links_csv(tmp_path) -> Path:
    truth = pd.Series(np.repeat(np.arange(3), 10))
    sim = simulate_pair_links(
        truth, n_workers=3, pairs_per_worker=100, alpha=0.9, beta=0.9, random_state=0
    )
    path = tmp_path / "links.csv"
    sim.links.to_csv(path, index=False)
    return path


@pytest.fixture
def comparisons(tmp_path) -> dict[str, Path]:
    """Comparisons of 12 items by 4 workers, the items' and the workers' features."""
    rng = np.random.default_rng(0)
    ids = np.array([f"i{k}" for k in range(12)])
    x = rng.uniform(0, 3, 12)
    left = rng.integers(0, 12, 150)
    right = (left + rng.integers(1, 12, 150)) % 12
    worker = rng.integers(0, 4, 150)
    sign = np.where(worker < 2, 1.0, -1.0)  # workers 2 and 3 prefer the opposite
    won = rng.random(150) < 1 / (1 + np.exp(-2 * sign * (x[left] - x[right])))
    tables = {
        "comparisons": pd.DataFrame(
            {
                "worker": [f"u{k}" for k in worker],
                "left": ids[left],
                "right": ids[right],
                "label": np.where(won, ids[left], ids[right]),
            }
        ),
        "items": pd.DataFrame({"item": ids, "x": x}),
        "workers": pd.DataFrame({"worker": [f"u{k}" for k in range(4)], "w": [1.0, 1, -1, -1]}),
    }
    paths = {}
    for name, table in tables.items():
        paths[name] = tmp_path / f"{name}.csv"
        table.to_csv(paths[name], index=False)
    return paths


def test_links_names_the_input_of_cluster_fit(tmp_path, capsys, links_csv):
    def argv(folder, old):
        source = ["--links", links_csv] if old else [links_csv]
        return ["cluster", "fit", *source, "--clusters", 3, "-o", folder / "a.csv",
                "--workers-out", folder / "w.csv", "--no-progress"]  # fmt: skip

    check_spellings(
        tmp_path, capsys, argv, deprecation("--links", "LINKS"), outputs=("a.csv", "w.csv")
    )


@pytest.mark.parametrize(
    "command",
    [
        ["labels", "fit", "{labels}", "--model", "ds"],
        ["cluster", "fit", "{links}", "--clusters", "3"],
        ["prefs", "fit", "{comparisons}", "--model", "bt"],
    ],
)
def test_save_is_save_model(tmp_path, capsys, labels_csv, links_csv, comparisons, command):
    names = {"labels": labels_csv, "links": links_csv, "comparisons": comparisons["comparisons"]}
    words = [str(word).format(**names) for word in command]

    def argv(folder, old):
        flag = "--save" if old else "--save-model"
        return [*words, "-o", folder / "out.csv", flag, folder / "model.npz", "--no-progress"]

    check_spellings(
        tmp_path,
        capsys,
        argv,
        deprecation("--save", "--save-model"),
        outputs=("out.csv", "model.npz"),
    )


@pytest.mark.parametrize("family", ["rank", "prefs"])
def test_items_is_features(tmp_path, capsys, comparisons, family):
    if family == "rank":
        table, features, _ = simulate_tables(0, n_queries=100, n_items=20)
        table.to_csv(tmp_path / "rankings.csv", index=False)
        features.rename_axis("item").to_csv(tmp_path / "items.csv")
        command = ["rank", "fit", tmp_path / "rankings.csv", "--model", "pl-map"]
    else:
        command = ["prefs", "fit", comparisons["comparisons"], "--model", "gppl-vi"]

    def argv(folder, old):
        flag = "--items" if old else "--features"
        return [*command, flag, tmp_path / "items.csv", "-o", folder / "out.csv",
                "--save-model", folder / "model.npz", "--no-progress"]  # fmt: skip

    check_spellings(
        tmp_path,
        capsys,
        argv,
        deprecation("--items", "--features"),
        outputs=("out.csv", "model.npz"),
    )


def test_workers_of_prefs_is_worker_features(tmp_path, capsys, comparisons):
    def argv(folder, old):
        flag = "--workers" if old else "--worker-features"
        return ["prefs", "fit", comparisons["comparisons"], "--model", "crowdgppl",
                "--features", comparisons["items"], flag, comparisons["workers"],
                "--components", 2, "--inducing", 10, "--max-iter", 20,
                "-o", folder / "out.csv", "--save-model", folder / "model.npz",
                "--no-progress"]  # fmt: skip

    check_spellings(
        tmp_path,
        capsys,
        argv,
        deprecation("--workers", "--worker-features"),
        outputs=("out.csv", "model.npz"),
    )


@pytest.mark.slow
def test_workers_of_labels_fit_is_dask_workers(tmp_path, capsys, labels_csv):
    pytest.importorskip("distributed")
    source = tmp_path / "labels.parquet"
    pd.read_csv(labels_csv).to_parquet(source, index=False)
    fit = ["labels", "fit", source, "--backend", "dask", "--model", "mv", "--no-progress"]
    note = deprecation("--workers", "--dask-workers")
    # the old spelling sets the number of Dask worker processes (checked before a cluster starts)
    assert main([str(word) for word in [*fit, "--workers", 0, "-o", tmp_path / "zero"]]) == 2
    assert capsys.readouterr().err.splitlines() == [
        note,
        "crowdbayes: error: --dask-workers must be at least 1; got 0",
    ]

    def argv(folder, old):
        flag = "--workers" if old else "--dask-workers"
        return [*fit, flag, 1, "-o", folder / "tasks", "--workers-out", folder / "w.csv",
                "--save-model", folder / "model.npz"]  # fmt: skip

    check_spellings(tmp_path, capsys, argv, note, outputs=("tasks", "w.csv", "model.npz"))
