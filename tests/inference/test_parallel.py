"""Chains in processes: how many processes :func:`resolve_n_jobs` picks."""

from __future__ import annotations

import multiprocessing

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
