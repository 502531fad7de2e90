"""Chains in processes: how many processes :func:`resolve_n_jobs` picks."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from crowdbayes.inference.parallel import available_cores, resolve_n_jobs


def _report_n_jobs(conn) -> None:
    conn.send(resolve_n_jobs(-1, 4, 100.0))
    conn.close()


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="chains fork their processes"
)
def test_a_daemonic_process_runs_its_chains_itself():
    """A daemonic process (a Pool worker, a benchmark's child) may not start processes."""
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe(duplex=False)
    process = context.Process(target=_report_n_jobs, args=(child,), daemon=True)
    process.start()
    assert parent.recv() == 1
    process.join()
    assert resolve_n_jobs(-1, 4, 100.0) == min(4, available_cores())


def test_n_jobs_is_capped_by_chains_and_cores():
    assert resolve_n_jobs(8, 2, 100.0) <= 2
    assert resolve_n_jobs(None, 4, 0.1) == 1  # too short to pay for processes
    assert resolve_n_jobs(1, 4, 100.0) == 1


def test_a_signal_while_the_futures_are_polled_leaves_no_lock_held(monkeypatch):
    """A handler that raises (the command line's, for Ctrl-C and SIGTERM) must not run inside
    ``concurrent.futures.wait``: there it can leave a future's lock held, and the pool's
    shutdown then waits forever. Simulated deterministically: the signal is raised right after
    ``wait`` has taken the first future's lock; the exception must come out of ``wait_for``
    after the poll, with every lock free."""
    import concurrent.futures._base as futures_base
    import signal
    from concurrent.futures import Future

    from crowdbayes.inference.parallel import wait_for

    class Stop(BaseException):
        pass

    def raise_stop(signum, frame):
        raise Stop()

    def enter_then_signal(self):
        self.futures[0]._condition.acquire()
        signal.raise_signal(signal.SIGTERM)  # handled between bytecodes, here
        for future in self.futures[1:]:
            future._condition.acquire()

    futures = [Future(), Future()]
    monkeypatch.setattr(futures_base._AcquireFutures, "__enter__", enter_then_signal)
    previous = signal.signal(signal.SIGTERM, raise_stop)
    try:
        with pytest.raises(Stop):
            wait_for(futures, lambda: False, poll=0.01)
    finally:
        signal.signal(signal.SIGTERM, previous)
    # the pool's thread must be able to take every lock (they are re-entrant: try from another)
    free = []

    def try_locks():
        for future in futures:
            if future._condition.acquire(timeout=1.0):
                future._condition.release()
                free.append(future)

    other = threading.Thread(target=try_locks)
    other.start()
    other.join()
    assert len(free) == len(futures), "a future's lock was left held"
