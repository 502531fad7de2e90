"""``crowdbayes datasets list`` and ``crowdbayes datasets copy``: every data set that can be
loaded (the bundled samples of every kind of judgment, and the label, preference and clustering
sets under CROWDBAYES_DATA), and a bundled sample copied to a folder to try the commands on."""

from __future__ import annotations

import argparse

from ._common import CommandError
from ._parser import add_common_options

#: the bundled samples (kept here so that building the parser imports no pandas; a test checks
#: them against crowdbayes.datasets.samples.SAMPLES)
SAMPLE_NAMES = ("rte", "grades", "numbers", "rankings", "comparisons", "links")


def register(commands) -> None:
    """Add the ``datasets`` command to the top-level sub-parsers."""
    datasets = commands.add_parser("datasets", help="bundled samples and CROWDBAYES_DATA sets")
    actions = datasets.add_subparsers(dest="action", required=True, metavar="VERB")
    listing = actions.add_parser(
        "list", help="list every data set that can be loaded, of every kind of judgment"
    )
    add_common_options(listing)
    listing.set_defaults(handler=_datasets_list)
    copy = actions.add_parser(
        "copy",
        help="copy a bundled sample into a folder: NAME.csv plus NAME_<file> for its other "
        "files (features, gold, truth)",
    )
    copy.add_argument("name", metavar="NAME", choices=SAMPLE_NAMES, help=", ".join(SAMPLE_NAMES))
    copy.add_argument("folder", metavar="FOLDER", nargs="?", default=".", help="default: .")
    copy.add_argument("--force", action="store_true", help="overwrite files that exist")
    add_common_options(copy)
    copy.set_defaults(handler=_datasets_copy)


def _datasets_list(args: argparse.Namespace) -> None:
    from ..datasets.catalogue import list_all

    table = list_all()
    shown = table[["name", "kind", "size", "load"]].astype(str)
    widths = [max(len(c), *shown[c].map(len)) for c in shown.columns]
    for row in [list(shown.columns), *shown.to_numpy().tolist()]:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    if not args.quiet:
        shared = "" if (~table["bundled"]).any() else "; set CROWDBAYES_DATA for the shared sets"
        print(f"\n{len(table)} data sets, {int(table['bundled'].sum())} bundled{shared}")


def _datasets_copy(args: argparse.Namespace) -> None:
    from ..datasets.samples import SAMPLES, copy_sample

    try:
        written = copy_sample(args.name, args.folder, force=args.force)
    except ValueError as err:
        raise CommandError(str(err)) from None
    if not args.quiet:
        print(f"wrote {', '.join(str(p) for p in written)}")
        print(f"try: {SAMPLES[args.name].command}")
