"""Issue 7 (c): generate a Parquet data set of synthetic crowd labels of any size (1,000,000,000
labels for the cluster run), in independent seeded files that several machines can share.

    .venv/bin/python benchmarks/scale/scale_generate.py --labels 1000000000 --out /shared/labels-1b
    .venv/bin/python benchmarks/scale/scale_generate.py --labels 1000000000 --out DIR \\
        --files 0:100
    .venv/bin/python benchmarks/scale/scale_generate.py --labels 1000000000 --out DIR \\
        --files 100:200

Files are ``part-NNNNN.parquet`` of ``--labels-per-file`` labels (whole tasks, sorted by task:
fit with ``--grouped``); file ``i`` depends only on ``(seed, i)`` (see ``_scale_data``), so
``--files A:B`` on different machines builds the same data set as one run. Prints the generation
throughput. Then fit, e.g.::

    crowdbayes labels fit DIR --backend dask --scheduler tcp://HOST:8786 --model ds --grouped \\
        --out TASKS_DIR --save-model ds.npz
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _scale_data import write_parquet_dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--labels-per-file", type=int, default=5_000_000)
    parser.add_argument("--crowd", type=int, default=100_000, help="number of crowd workers")
    parser.add_argument("--labels-per-task", type=int, default=10)
    parser.add_argument("--classes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--files", help="A:B, the file numbers to write (default: all)")
    args = parser.parse_args()
    files = None
    if args.files:
        first, last = (int(v) for v in args.files.split(":"))
        files = range(first, last)
    start = time.perf_counter()
    written = write_parquet_dataset(
        args.out,
        args.labels,
        labels_per_file=args.labels_per_file,
        n_workers=args.crowd,
        labels_per_task=args.labels_per_task,
        n_classes=args.classes,
        seed=args.seed,
        files=files,
    )
    seconds = time.perf_counter() - start
    size = sum(p.stat().st_size for p in written)
    labels = args.labels_per_file * len(written)  # upper bound; the last file may be shorter
    print(
        f"wrote {len(written)} files ({size / 2**20:,.0f} MiB) to {args.out} in {seconds:.1f} s "
        f"(~{labels / seconds / 1e6:.1f} M labels/s)"
    )


if __name__ == "__main__":
    main()
