"""``crowdbayes datasets list``: the bundled data sets and those under CROWDBAYES_DATA."""

from __future__ import annotations

import argparse

from ._parser import add_common_options


def register(commands) -> None:
    """Add the ``datasets`` command to the top-level sub-parsers."""
    datasets = commands.add_parser("datasets", help="bundled and CROWDBAYES_DATA data sets")
    actions = datasets.add_subparsers(dest="action", required=True, metavar="VERB")
    listing = actions.add_parser("list", help="list the label sets found")
    add_common_options(listing)
    listing.set_defaults(handler=_datasets_list)


def _datasets_list(args: argparse.Namespace) -> None:
    import pandas as pd

    from ..datasets import list_datasets

    table = list_datasets()
    if table.empty:
        print("no data sets found; set CROWDBAYES_DATA to the data directory")
        return
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.drop(columns=["location"]).to_string(index=False))
