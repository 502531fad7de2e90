"""Independent Markov chains on several processes.

Every chain carries its own random generator (spawned from the estimator's ``random_state``), so
a chain's draws do not depend on which process runs it, on how many processes there are, or on
the order in which they finish: the results are the same for any ``n_jobs``.

The processes are forked (POSIX), so the data the chains share is inherited rather than pickled;
only each chain's state travels, there and back. Where ``fork`` is unavailable the chains run
one after another.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

from .._atomic import signals_deferred
from .driver import run_iterations

__all__ = [
    "available_cores",
    "resolve_n_jobs",
    "run_chains",
    "sweep_counters",
    "chain_processes",
    "wait_for",
]

# (function, shared arguments) of the running map_chains, inherited by its forked workers
_JOB: tuple[Callable[..., Any], tuple] | None = None


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform reports it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def resolve_n_jobs(n_jobs: int | None, n_chains: int, estimated_seconds: float) -> int:
    """Processes to use: ``n_jobs`` (``-1``: every core) capped at the chains and cores; ``None``
    picks every core only when the sequential run is estimated to take over a second (forking
    and sending states back costs tens of milliseconds). One inside a daemonic process (a
    ``multiprocessing.Pool`` worker, say), which may not start processes of its own."""
    cores = available_cores()
    if n_jobs is None:
        n_jobs = cores if estimated_seconds > 1.0 else 1
    elif n_jobs == -1:
        n_jobs = cores
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if multiprocessing.current_process().daemon:  # e.g. a Pool worker: may not have children
        return 1
    return max(1, min(n_jobs, n_chains, cores))


def run_chains(
    sweep: Callable[..., None],
    chains: list,
    shared: tuple,
    *,
    n_sweeps: int,
    n_jobs: int,
    progress: bool = False,
    desc: str = "sweeps",
) -> list:
    """Run ``sweep(chain, index, *shared)`` for ``index`` in ``range(n_sweeps)`` on every chain
    (``sweep`` updates the chain in place); returns the chains, in order.

    With ``n_jobs > 1`` each chain runs all its sweeps in one of ``n_jobs`` forked processes
    (:func:`chain_processes`) and comes back when done; the progress bar follows the chains'
    mean sweep count (with more chains than processes some chains only start when others
    end). Otherwise the chains take turns, one sweep each. A chain only uses its own
    generator, so the results are the same either way.
    """
    if n_jobs > 1:
        counters = sweep_counters(len(chains))
        work = (sweep, n_sweeps, shared, counters)
        with chain_processes(_all_sweeps, work, n_jobs) as submit:
            futures = submit(list(enumerate(chains)))

            def wait_sweep(index: int) -> None:
                wait_for(futures, lambda: sum(counters) >= (index + 1) * len(chains))

            run_iterations(wait_sweep, max_iter=n_sweeps, progress=progress, desc=desc)
            with signals_deferred():  # see wait_for
                return [future.result() for future in futures]

    def turn(index: int) -> None:
        for chain in chains:
            sweep(chain, index, *shared)

    run_iterations(turn, max_iter=n_sweeps, progress=progress, desc=desc)
    return chains


def _all_sweeps(numbered: tuple[int, Any], sweep, n_sweeps: int, shared: tuple, counters) -> Any:
    """Every sweep of chain ``numbered = (number, chain)``, counted in ``counters[number]``."""
    number, chain = numbered
    for index in range(n_sweeps):
        sweep(chain, index, *shared)
        counters[number] = index + 1
    return chain


def sweep_counters(n_chains: int):
    """Per-chain counters in shared memory (before forking): chain processes write how many
    sweeps they have done, the parent reads them to report progress."""
    return multiprocessing.get_context("fork").Array("q", n_chains, lock=False)


@contextmanager
def chain_processes(function: Callable[..., Any], shared: tuple, n_jobs: int):
    """A pool of ``n_jobs`` forked processes running ``function(chain, *shared)``; yields
    ``submit(chains) -> list of futures``. ``shared`` is inherited by the processes, not pickled:
    only each chain travels, there and back."""
    global _JOB
    _JOB = (function, shared)
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=n_jobs, mp_context=context) as pool:
            try:
                yield lambda chains: [pool.submit(_run, chain) for chain in chains]
            except BaseException:
                # Ctrl-C, SIGTERM or a chain's error: the other chains must not run on (the
                # executor's exit would wait for them, however long they still have to go)
                _stop_workers(pool)
                raise
    finally:
        _JOB = None


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's processes and drop the chains not started (the executor has no public
    way to stop running work before Python 3.14's ``terminate_workers``)."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    with signals_deferred():  # a second Ctrl-C (library use) must not stop the kills half-way
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            if process.is_alive():
                process.kill()
        # a worker killed while sending its chain back leaves half a message in the result
        # pipe, whose write end this process holds too: the pool's thread would wait for the
        # rest forever; closed, it reads the end of the pipe and marks the pool broken
        result_queue = getattr(pool, "_result_queue", None)
        if result_queue is not None:
            result_queue._writer.close()
    pool.shutdown(wait=True, cancel_futures=True)


def wait_for(futures: list[Future], ready: Callable[[], bool], poll: float = 0.05) -> None:
    """Block until ``ready()`` (polled) or every future is done; re-raise a chain's error.

    Ctrl-C or ``SIGTERM`` arriving while the futures are polled is delivered when the poll
    returns, at most ``poll`` seconds later (:func:`crowdbayes._atomic.signals_deferred`): the
    command line's handlers raise, and an exception raised inside ``concurrent.futures.wait``
    can leave one of its locks held (between taking the futures' locks one by one, or a
    ``Condition.__enter__`` and its ``with`` block: Python runs handlers between bytecodes), so
    that the pool's own thread, which takes the same locks to report the killed workers, never
    finishes and the shutdown waits for it forever — an interrupted fit that hung once in CI."""
    while not ready():
        with signals_deferred():
            done, _ = wait(futures, timeout=poll, return_when=FIRST_EXCEPTION)
        for future in done:
            if future.exception() is not None:
                raise future.exception()
        if len(done) == len(futures):
            return


def _run(chain: Any) -> Any:
    function, shared = _JOB
    return function(chain, *shared)
