"""``crowdbayes leaderboard fit --backend dask``: BATTLES (a Parquet file, directory or glob)
counted on a Dask cluster (:func:`crowdbayes.distributed.count_battles`), then fitted here as
in memory.

Only the counting runs on the cluster: a board is fitted on the distinct ``(pair, outcome,
covariates)`` rows, a few tens of thousands for an arena without covariates, so the fit, the
intervals, the robustness check, the per-category boards and the outputs are those of the
memory backend (:mod:`.leaderboard`), on the counts. An input that is not Parquet is refused
before a cluster starts, and the local cluster's workers keep their logs to themselves, so an
error is the one line of :func:`crowdbayes.cli.main`."""

from __future__ import annotations

import argparse
import logging
import time

from ._common import CommandError
from ._parser import Parser
from ._record import Inputs, say

__all__ = ["add_dask_options", "dask_backend", "read_on_dask"]


def add_dask_options(parser: Parser) -> None:
    """``--backend``, ``--scheduler`` and ``--dask-workers`` (``leaderboard fit``)."""
    scale = parser.add_argument_group("scale")
    scale.add_argument(
        "--backend",
        choices=["memory", "dask"],
        default="memory",
        help="memory (default), or dask: BATTLES is a Parquet file, directory or glob, counted "
        "on a Dask cluster (the fit then runs here, on the counts)",
    )
    scale.add_argument("--scheduler", help="address of a running Dask scheduler (tcp://host:port)")
    scale.add_argument(
        "--dask-workers", type=int, default=2, help="local Dask worker processes (default 2)"
    )


def dask_backend(args: argparse.Namespace) -> bool:
    """Whether BATTLES is to be counted on Dask; the Dask options refused without it."""
    if getattr(args, "backend", "memory") == "dask":
        return True
    if getattr(args, "scheduler", None):
        raise CommandError("--scheduler needs --backend dask")
    return False


def check_options(args: argparse.Namespace) -> None:
    """Refuse what the Dask counting cannot do, before a cluster starts."""
    from .labels_dask import check_parquet

    if args.style is not None:
        raise CommandError(
            "--style needs --backend memory; with --backend dask give the covariate columns "
            "(differences a minus b) with --covariates"
        )
    if getattr(args, "partial", False):
        raise CommandError("--partial needs --backend memory")
    if args.dask_workers < 1:
        raise CommandError(f"--dask-workers must be at least 1; got {args.dask_workers}")
    check_parquet(args.input, "battles")


def battle_columns(args: argparse.Namespace) -> dict:
    """The column names and the id hygiene of ``Battles`` as the command line gives them (the
    same on both backends)."""
    return {
        "model_a": args.model_a_column,
        "model_b": args.model_b_column,
        "winner": args.winner_column,
        "judge": args.judge_column,
        "category": args.category_column,
        "normalize": args.normalize,
    }


def read_on_dask(args: argparse.Namespace, covariates: list[str]) -> Inputs:
    """BATTLES counted on Dask as :class:`~crowdbayes.distributed.CountedBattles` (what the
    family's fit, summary and report take in place of :class:`~crowdbayes.data.Battles`)."""
    from ..distributed import count_battles

    check_options(args)
    # a local cluster's workers would print the traceback of a failed task on stderr
    quiet = None if args.scheduler else {"silence_logs": logging.CRITICAL}
    start = time.perf_counter()
    data = count_battles(
        args.input,
        scheduler=args.scheduler,
        n_workers=args.dask_workers,
        **battle_columns(args),
        covariates=covariates or None,
        cluster_options=quiet,
    )
    seconds = time.perf_counter() - start
    say(
        args,
        [
            f"counted on dask: {data.n_battles:,} battles in {data.n_partitions} partition(s) "
            f"into {data.counts().n_rows:,} distinct rows in {seconds:.2f} s"
        ],
    )
    return Inputs(data, str(args.input))
