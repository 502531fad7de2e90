"""Shared helpers for the benchmark scripts: data root, report header, subprocess runs, memory.

Not part of the package; imported by the scripts in the folders below this one, which put this
folder on ``sys.path`` near their top (run them from the repository root, e.g.
``.venv/bin/python benchmarks/labels/labels_accuracy.py``; see ``benchmarks/README.md``).
"""

from __future__ import annotations

import datetime
import hashlib
import multiprocessing as mp
import os
import platform
import shlex
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA_ENV_VAR = "CROWDBAYES_DATA"

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: when the benchmark started (this module is imported as its run begins): reports are written
#: at the end, and their header says when the run began
_STARTED = datetime.datetime.now(datetime.timezone.utc).astimezone()


# --------------------------------------------------------------------------- data root
def resolve_data_root() -> Path:
    """``$CROWDBAYES_DATA``, or ``<repo>/../shared/data`` when the variable is unset and that
    folder exists. The result is also put into the environment so that subprocesses (and
    ``crowdbayes.datasets``) see it."""
    value = os.environ.get(DATA_ENV_VAR, "").strip()
    if value:
        root = Path(value).expanduser().resolve()
    else:
        root = (REPO.parent / "shared" / "data").resolve()
        if not root.is_dir():
            raise SystemExit(
                f"{DATA_ENV_VAR} is not set and {root} does not exist: set {DATA_ENV_VAR} to the "
                "folder holding labels/<name>/labels.csv"
            )
    if not (root / "labels").is_dir():
        raise SystemExit(f"{root} has no labels/ folder")
    os.environ[DATA_ENV_VAR] = str(root)
    return root


def results_dir(script: str) -> Path:
    """Where the reports of ``script`` (pass ``__file__``) go: ``results/`` beside it."""
    return Path(script).resolve().parent / "results"


# --------------------------------------------------------------------------- report header
def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_total() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def src_fingerprint() -> str:
    """SHA-256 (first 12 hex digits) over the package sources, so a result can be matched to the
    code it measured (the working tree may be ahead of any commit)."""
    digest = hashlib.sha256()
    src = REPO / "src" / "crowdbayes"
    for path in sorted([*src.rglob("*.py"), *src.rglob("*.c")]):
        digest.update(str(path.relative_to(src)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def command_line() -> str:
    """The command that is running, as one could type it from the repository root."""
    exe = Path(sys.executable)
    try:
        exe_text = str(exe.relative_to(REPO))
    except ValueError:
        exe_text = str(exe)
    data = os.environ.get(DATA_ENV_VAR, "")
    try:
        data = os.path.relpath(data, REPO) if data else data
    except ValueError:
        pass
    prefix = f"{DATA_ENV_VAR}={shlex.quote(data)} " if data else ""
    return prefix + shlex.join([exe_text, *sys.argv])


def machine_lines() -> list[str]:
    """Markdown bullet lines describing the run: date, machine and versions."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    threads = ", ".join(f"{v}={os.environ.get(v, 'unset')}" for v in _THREAD_VARS)
    return [
        f"- date: {_STARTED.strftime('%Y-%m-%d %H:%M %Z')} (start of the run)",
        f"- machine: {platform.node()}, {platform.system()} {platform.release()}, "
        f"{_cpu_model()}, nproc={affinity} (os.cpu_count={os.cpu_count()}), "
        f"RAM {_memory_total()}",
        f"- python {platform.python_version()}; crowdbayes {_version('crowdbayes')} "
        f"(src sha256 {src_fingerprint()}), crowd-kit {_version('crowd-kit')}, "
        f"numpy {_version('numpy')}, scipy {_version('scipy')}, pandas {_version('pandas')}",
        f"- threads: {threads}; load average at start {_LOAD_AT_START}",
    ]


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as text."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


_LOAD_AT_START = load_average()


def fingerprint_lines(seen: set[str]) -> list[str]:
    """A warning line when the measured processes imported different package sources."""
    if len(seen) <= 1:
        return []
    return [
        f"- **warning: src/crowdbayes changed during the run**; the fits saw source "
        f"fingerprints {', '.join(sorted(seen))}, so the results mix code versions",
    ]


# --------------------------------------------------------------------------- subprocess runs
def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so that running child processes are cleaned up."""

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def run_isolated(
    target: Callable, args: tuple, timeout: float, startup_timeout: float = 300.0
) -> tuple[str, object]:
    """Run ``target(conn, *args)`` in a fresh 'spawn' process and return ``(status, payload)``.

    The child must ``conn.send(("ready", None))`` once its inputs are prepared (imports, data)
    and then ``conn.send((status, payload))``. ``timeout`` counts from "ready", so start-up and
    data loading do not eat into a model's time limit. On time-out the child is terminated and
    ``("timeout", None)`` is returned; a child that dies gives ``("error", ...)``.
    """
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=target, args=(child, *args), daemon=True)
    proc.start()
    child.close()
    try:
        for stage, limit in (("start-up", startup_timeout), ("run", timeout)):
            if not parent.poll(limit):
                proc.terminate()
                proc.join(10)
                if proc.is_alive():
                    proc.kill()
                    proc.join()
                return ("timeout", f"no answer within {limit:g} s ({stage})")
            status, payload = parent.recv()
            if status != "ready":
                return status, payload
        return ("error", "child answered 'ready' twice")
    except EOFError:
        proc.join()
        return ("error", f"child process died (exit code {proc.exitcode})")
    finally:
        parent.close()
        if proc.is_alive():
            proc.join(30)
            if proc.is_alive():
                proc.kill()
                proc.join()


def measure_repeated(
    target: Callable, spec: dict, repeats: int, timeout: float, sources: set[str]
) -> dict:
    """Run ``target`` (a :func:`run_isolated` child) ``repeats`` times on ``spec`` and summarise.

    Each child's payload must hold ``seconds``, ``cpu_seconds``, ``hwm_mib`` (None when the
    kernel high-water mark is unavailable), ``polled_mib``, ``iterations``, ``warnings`` and
    ``src`` (the source fingerprint, collected in ``sources``). Returns the first payload updated
    with ``status="ok"``, ``runs``, median ``seconds`` (and ``min_seconds``/``max_seconds``),
    median ``cpu_seconds``, ``hwm_mib`` and ``polled_mib``, ``iterations_all`` and the union of
    ``warnings``; on a failed run ``{"status", "detail", "runs"}``.
    """
    runs = []
    for i in range(repeats):
        status, payload = run_isolated(target, (spec,), timeout=timeout)
        if status != "ok":
            print(f"  {spec['label']}: {status}: {payload}", flush=True)
            return {"status": status, "detail": payload, "runs": runs}
        runs.append(payload)
        sources.add(payload["src"])
        peak = payload["hwm_mib"] if payload["hwm_mib"] is not None else payload["polled_mib"]
        print(
            f"  {spec['label']} [{i + 1}/{repeats}]: {payload['seconds']:.3f} s, "
            f"peak +{format_mib(peak)} MiB (polled +{format_mib(payload['polled_mib'])}), "
            f"{payload['iterations']} iterations",
            flush=True,
        )
    seconds = [r["seconds"] for r in runs]
    hwm = [r["hwm_mib"] for r in runs]
    return {
        **runs[0],
        "status": "ok",
        "runs": runs,
        "seconds": statistics.median(seconds),
        "min_seconds": min(seconds),
        "max_seconds": max(seconds),
        "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
        "hwm_mib": statistics.median(hwm) if None not in hwm else None,
        "polled_mib": statistics.median(r["polled_mib"] for r in runs),
        "iterations_all": sorted({r["iterations"] for r in runs}),
        "warnings": sorted({w for r in runs for w in r["warnings"]}),
    }


def format_mib(value: float) -> str:
    """MiB with one decimal below 10, whole numbers above."""
    return f"{value:.1f}" if abs(value) < 10 else f"{value:.0f}"


# --------------------------------------------------------------------------- memory
def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not found in /proc/self/status")


def _reset_hwm() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) of this process; False where not permitted."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class PeakRSS:
    """Peak resident-memory increase of this process while the ``with`` block runs.

    Two measurements, both relative to VmRSS just before the block:

    - ``hwm_mib``: the kernel's high-water mark VmHWM after the block, having reset it with
      ``/proc/self/clear_refs`` just before (exact; ``None`` where the reset is not allowed);
    - ``polled_mib``: the largest VmRSS seen by a background thread reading
      ``/proc/self/status`` every ``interval`` seconds (may miss very short spikes).
    """

    def __init__(self, interval: float = 0.002) -> None:
        self.interval = interval
        self.hwm_mib: float | None = None
        self.polled_mib: float = 0.0
        self.baseline_mib: float = 0.0

    def __enter__(self) -> PeakRSS:
        self._hwm_ok = _reset_hwm()
        self._baseline = _status_kib("VmRSS")
        self._peak = self._baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._peak = max(self._peak, _status_kib("VmRSS"))
            time.sleep(self.interval)

    def __exit__(self, *exc) -> None:
        self._peak = max(self._peak, _status_kib("VmRSS"))
        self._stop.set()
        self._thread.join()
        self.baseline_mib = self._baseline / 1024
        self.polled_mib = (self._peak - self._baseline) / 1024
        if self._hwm_ok:
            self.hwm_mib = (_status_kib("VmHWM") - self._baseline) / 1024


def run_in_processes(
    function: Callable,
    calls: list[tuple],
    jobs: int,
    *,
    initializer: Callable | None = None,
    initargs: tuple = (),
    first=None,
) -> list:
    """``function(*call)`` for every call, in ``jobs`` processes when ``jobs > 1`` (submitted
    in the order of the key ``first``, if given: the longest first); results in ``calls``'
    order."""
    if jobs <= 1:
        return [function(*call) for call in calls]
    from concurrent.futures import ProcessPoolExecutor

    order = sorted(range(len(calls)), key=lambda i: first(calls[i])) if first else range(len(calls))
    with ProcessPoolExecutor(jobs, initializer=initializer, initargs=initargs) as pool:
        futures = {i: pool.submit(function, *calls[i]) for i in order}
        return [futures[i].result() for i in range(len(calls))]


def write_report(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{path.name}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def markdown_table(table, digits: int = 4, index: bool = True) -> str:
    """A pipe table of a DataFrame (pandas' ``to_markdown`` needs the optional ``tabulate``);
    floats with ``digits`` decimals, NaN as an empty cell."""
    frame = table.reset_index() if index else table

    def cell(value) -> str:
        if isinstance(value, float):
            return "" if value != value else f"{value:.{digits}f}"
        return str(value)

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + " --- |" * frame.shape[1]]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join(lines)


def report_header(title: str, details: Sequence[str] = ()) -> list[str]:
    """The first lines of every report: ``# title``, the command that made it, the machine lines
    (date, machine, versions, threads, load at the start), ``details`` (more header bullets: run
    time, load at the end, ...) and a blank line."""
    return [f"# {title}", "", f"command: `{command_line()}`", *machine_lines(), *details, ""]


def markdown_report(title: str, lines: list[str], details: Sequence[str] = ()) -> str:
    """The text of a report: :func:`report_header`, then ``lines``."""
    return "\n".join([*report_header(title, details), *lines, ""])


def write_markdown_report(
    path: str | Path | None,
    title: str,
    lines: list[str],
    details: Sequence[str] = (),
    *,
    echo: bool = False,
) -> str:
    """Write :func:`markdown_report` to ``path`` atomically (nothing is written when ``path`` is
    None); ``echo`` also prints it. Returns the text."""
    text = markdown_report(title, lines, details)
    if echo:
        print(text)
    if path is not None:
        write_report(Path(path), text)
        print(f"wrote {path}")
    return text
