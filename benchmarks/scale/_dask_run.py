"""One measured ``fit_distributed`` on a fresh LocalCluster: wall and CPU time per iteration,
each worker process's peak memory (sampled from ``/proc``, so a killed worker's peak is kept),
what the workers keep between passes, restarts, and an optional SIGKILL of a worker mid-pass.

Shared by ``scale_dask_1b.py`` (the 1B run, the size table, the kill experiment)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from crowdbayes.distributed import fit_distributed

_TICKS = os.sysconf("SC_CLK_TCK")


def _status_kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


class ProcessSampler:
    """Every ``interval`` seconds, the peak RSS (``VmHWM``), RSS and CPU seconds of the
    processes in ``pids`` (a set the caller may grow, e.g. with a restarted worker); the last
    reading of a process that died is kept."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.pids: set[int] = set()
        self.peak_mib: dict[int, float] = {}
        self.cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        for pid in list(self.pids):
            try:
                hwm = _status_kib(pid, "VmHWM:") / 1024
                cpu = cpu_seconds(pid)
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue  # gone: keep its last reading
            self.peak_mib[pid] = max(self.peak_mib.get(pid, 0.0), hwm)
            self.cpu[pid] = cpu

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> ProcessSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


def deep_nbytes(value, seen: set | None = None) -> int:
    """Bytes of the NumPy arrays inside ``value`` (tuples, lists, dicts, dataclass fields and
    object attributes, each array counted once): what an object really holds when Dask's
    ``sizeof`` cannot see into it."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):  # a view: its base, once (a buffer received: itself)
        base = value.base
        return deep_nbytes(base, seen) if isinstance(base, np.ndarray) else value.nbytes
    if isinstance(value, dict):
        return sum(deep_nbytes(v, seen) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(deep_nbytes(v, seen) for v in value)
    if hasattr(value, "__dict__"):
        return deep_nbytes(vars(value), seen)
    return 0


def kept_by_worker(dask_worker, prefix: str | tuple = ("_encode_file", "encode_partition")) -> dict:
    """What a Dask worker holds in memory (Dask's count of the stored data, and the arrays'
    bytes of the keys named ``prefix...``) and its RSS."""
    held = [ts for ts in dask_worker.state.tasks.values() if ts.state == "memory"]
    encoded = [ts for ts in held if str(ts.key).startswith(prefix)]
    seen: set = set()
    return {
        "keys": len(encoded),
        "managed_bytes": int(sum(ts.nbytes for ts in encoded)),
        "array_bytes": int(sum(deep_nbytes(dask_worker.data[ts.key], seen) for ts in encoded)),
        "encoded": {str(ts.key): int(ts.nbytes) for ts in encoded},
        "all_keys": len(held),
        "all_bytes": int(sum(ts.nbytes for ts in held)),
        "rss_mib": _status_kib(os.getpid(), "VmRSS:") / 1024,
    }


def fit_once(
    model,
    data: Path,
    out: Path,
    *,
    n_workers: int,
    memory_limit: str,
    kill_after: int | None = None,
    log=print,
) -> dict:
    """Fit ``model`` on the Parquet directory ``data`` (grouped: files hold whole tasks) on a
    new LocalCluster of ``n_workers`` single-threaded processes with ``memory_limit`` each;
    with ``kill_after``, SIGKILL the first worker half an iteration after pass ``kill_after``
    ended (so during the next pass). Returns the measurements and the fitted model."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        memory_limit=memory_limit,
        dashboard_address=None,
    )
    client = Client(cluster)
    sampler = ProcessSampler()
    record: dict = {"iterations": [], "kills": []}
    killer: list[threading.Timer] = []
    try:
        pids_before = client.run(os.getpid)
        sampler.pids |= set(pids_before.values())
        own_cpu0 = time.process_time()

        def victim_kill(pid: int) -> None:
            record["kills"].append({"pid": pid, "at_s": time.perf_counter() - start})
            os.kill(pid, signal.SIGKILL)

        def on_iteration(iteration: int, objective, seconds: float) -> None:
            sampler.sample()
            cpu = sum(sampler.cpu.values())
            record["iterations"].append(
                {"iteration": iteration, "objective": objective, "wall_s": seconds, "cpu_s": cpu}
            )
            log(f"  iteration {iteration}: {seconds:.2f} s wall, objective {objective}")
            if iteration == 1:
                record["kept"] = client.run(kept_by_worker)
            if kill_after is not None and iteration == kill_after:
                victim = pids_before[sorted(pids_before)[0]]
                timer = threading.Timer(seconds / 2, victim_kill, args=(victim,))
                killer.append(timer)
                timer.start()
            if record["kills"]:  # follow the restarted worker
                try:
                    sampler.pids |= set(client.run(os.getpid).values())
                except Exception:  # a worker still starting
                    pass

        with sampler:
            start = time.perf_counter()
            result = fit_distributed(
                model,
                data,
                out=out,
                client=client,
                grouped=True,
                on_iteration=on_iteration,
            )
            total = time.perf_counter() - start
            for timer in killer:
                timer.join()
            pids_after = client.run(os.getpid)
            sampler.pids |= set(pids_after.values())
        record.update(
            total_s=total,
            driver_cpu_s=time.process_time() - own_cpu0,
            worker_cpu_s={str(pid): cpu for pid, cpu in sampler.cpu.items()},
            peak_mib={str(pid): mib for pid, mib in sampler.peak_mib.items()},
            workers_before={addr: pid for addr, pid in pids_before.items()},
            workers_after={addr: pid for addr, pid in pids_after.items()},
            restarted=sorted(set(pids_before.values()) - set(pids_after.values())),
            n_labels=result.n_labels,
            n_tasks=result.n_tasks,
            n_crowd=result.n_workers,
            n_partitions=result.n_partitions,
            n_iter=int(result.model.n_iter_),
            converged=bool(result.model.converged_),
            iteration_seconds=list(result.iteration_seconds),
        )
    finally:
        client.close()
        cluster.close()
    return {"record": record, "model": result.model}


def save_params(model, path: Path) -> None:
    """The fitted global parameters (confusion matrices, prevalence) as ``.npz``."""
    np.savez(
        path,
        confusion=model.confusion_.to_numpy(),
        prevalence=np.asarray(model.prevalence_, dtype=np.float64),
    )


def compare_runs(out_a: Path, out_b: Path, params_a: Path, params_b: Path) -> dict:
    """Task by task and parameter by parameter differences of two fits' outputs (the Parquet
    task files are read one pair at a time)."""
    files_a = sorted(out_a.glob("*.parquet"))
    files_b = sorted(out_b.glob("*.parquet"))
    if [f.name for f in files_a] != [f.name for f in files_b]:
        return {"same_files": False}
    tasks = label_diff = 0
    proba_diff = 0.0
    index_equal = True
    for fa, fb in zip(files_a, files_b, strict=True):
        a, b = pd.read_parquet(fa), pd.read_parquet(fb)
        index_equal &= bool(a.index.equals(b.index))
        tasks += len(a)
        label_diff += int((a["label"].to_numpy() != b["label"].to_numpy()).sum())
        pa = a.drop(columns="label").to_numpy()
        pb = b.drop(columns="label").to_numpy()
        proba_diff = max(proba_diff, float(np.max(np.abs(pa - pb))) if len(pa) else 0.0)
    pa, pb = np.load(params_a), np.load(params_b)
    return {
        "same_files": True,
        "tasks": tasks,
        "same_task_index": index_equal,
        "labels_differing": label_diff,
        "max_abs_proba_diff": proba_diff,
        "max_abs_confusion_diff": float(np.max(np.abs(pa["confusion"] - pb["confusion"]))),
        "max_abs_prevalence_diff": float(np.max(np.abs(pa["prevalence"] - pb["prevalence"]))),
    }
