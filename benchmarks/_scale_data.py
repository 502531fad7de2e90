"""Synthetic crowd labels at scale, generated in independent, seeded chunks of tasks.

Chunk ``c`` draws from ``SeedSequence(seed, spawn_key=(c,))``, so any chunk (one Parquet file)
can be produced alone, by any process, and the data set is the same however it is split.

Model: ``n_workers`` one-coin workers (accuracy ~ Beta(7, 3), mean 0.7; errors uniform over the
other classes), prevalence uniform over ``n_classes``, ``labels_per_task`` labels per task from
consecutive workers (``start, start + 1, ...`` modulo ``n_workers``, ``start`` uniform), so a
task never has two labels from one worker. Tasks of a chunk are consecutive ids; labels are
sorted by task, so every file holds whole tasks (``--grouped`` input).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "worker_accuracy",
    "chunk",
    "write_parquet_dataset",
    "encoded_bytes",
    "report_path",
    "finish_report",
]


def worker_accuracy(n_workers: int, seed: int) -> np.ndarray:
    """Each worker's probability of giving the true class (the same for every chunk)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**31,)))
    return rng.beta(7.0, 3.0, size=n_workers)


def chunk(
    index: int,
    first_task: int,
    n_tasks: int,
    *,
    n_workers: int,
    labels_per_task: int,
    n_classes: int,
    seed: int,
    accuracy: np.ndarray,
) -> tuple[pd.DataFrame, np.ndarray]:
    """Labels (``task`` int64, ``worker`` int32, ``label`` int8) and true classes of the tasks
    ``first_task .. first_task + n_tasks - 1``."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))
    truth = rng.integers(n_classes, size=n_tasks, dtype=np.int8)
    start = rng.integers(n_workers, size=n_tasks)
    workers = (start[:, None] + np.arange(labels_per_task)) % n_workers
    workers = workers.ravel().astype(np.int32)
    true_rows = np.repeat(truth, labels_per_task)
    correct = rng.random(len(workers)) < accuracy[workers]
    shift = rng.integers(1, n_classes, size=len(workers), dtype=np.int8)
    labels = np.where(correct, true_rows, (true_rows + shift) % n_classes).astype(np.int8)
    tasks = np.repeat(np.arange(first_task, first_task + n_tasks, dtype=np.int64), labels_per_task)
    return pd.DataFrame({"task": tasks, "worker": workers, "label": labels}), truth


def write_parquet_dataset(
    out: str | os.PathLike,
    n_labels: int,
    *,
    labels_per_file: int = 5_000_000,
    n_workers: int = 100_000,
    labels_per_task: int = 10,
    n_classes: int = 2,
    seed: int = 0,
    files: range | None = None,
) -> list[Path]:
    """Write ``n_labels`` labels (rounded down to whole tasks) as ``part-NNNNN.parquet`` files of
    about ``labels_per_file`` labels each (only the file numbers in ``files``, if given: several
    machines can share the work). Returns the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tasks_per_file = max(1, labels_per_file // labels_per_task)
    n_tasks = n_labels // labels_per_task
    n_files = -(-n_tasks // tasks_per_file)
    accuracy = worker_accuracy(n_workers, seed)
    written = []
    for index in files if files is not None else range(n_files):
        first = index * tasks_per_file
        count = min(tasks_per_file, n_tasks - first)
        frame, _ = chunk(
            index,
            first,
            count,
            n_workers=n_workers,
            labels_per_task=labels_per_task,
            n_classes=n_classes,
            seed=seed,
            accuracy=accuracy,
        )
        path = out / f"part-{index:05d}.parquet"
        frame.to_parquet(path, index=False)
        written.append(path)
    return written


def encoded_bytes(n_labels: int) -> int:
    """Bytes of the encoded label arrays of :class:`crowdbayes.Labels` (task, worker and label
    codes, int64 each)."""
    return 3 * 8 * n_labels


def report_path(output: Path | None, name: str, labels: int, full_size: int, results: Path) -> Path:
    """``output`` if given; ``results/<name>.md`` at the target size; else a temporary file (a
    quick check never overwrites a committed report)."""
    if output is not None:
        return output
    if labels >= full_size:
        return results / f"{name}.md"
    return Path(tempfile.gettempdir()) / f"{name}-{labels}.md"


def finish_report(
    output: Path, title: str, lines: list[str], details: list[str], labels: int, full_size: int
) -> None:
    """Note a run below the target size, write the report (the shared header, ``details``, then
    ``lines``) and echo it."""
    from _common import write_markdown_report

    if labels < full_size:
        lines.append(f"- note: run at {labels:,} labels, not the {full_size:,} of the target")
    write_markdown_report(output, title, lines, details, echo=True)
