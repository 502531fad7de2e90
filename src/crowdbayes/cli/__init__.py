"""The ``crowdbayes`` command line.

    crowdbayes labels fit INPUT [--model mv|ds|bayes-ds|community-ds|hierarchical] [--gold FILE]
                                [--eval-gold FILE] [--out FILE] [--workers-out FILE] [--seed N]
    crowdbayes labels fit --dataset rte ...
    crowdbayes labels fit 'labels/*.parquet' --backend dask [--scheduler ADDRESS | --workers N]
                          --out DIR [--save-model M] [--init-model M [--partial]]
    crowdbayes rank fit RANKINGS [--items ITEMS] [--model pl-vi|pl-map|pl-mm|pl-gibbs]
                             [--save MODEL] [--out SCORES]
    crowdbayes rank predict MODEL --pairs PAIRS [--items ITEMS] --out P
    crowdbayes prefs fit COMPARISONS --items ITEMS [--workers WORKERS]
                         [--model gppl|crowdgppl|gppl-vi|ep] --save MODEL [--out UTILITIES]
    crowdbayes prefs predict MODEL --pairs PAIRS [--items ITEMS] [--workers WORKERS] --out P
    crowdbayes cluster fit --links LINKS [--features FILE] [--model links-vb|scdc|bayes-scdc]
                           [--clusters K] --out ASSIGNMENTS [--proba] [--workers-out FILE]
                           [--seed N] [--epochs N] [--device cpu|cuda]
    crowdbayes labels next INPUT --n N [--model M] [--tasks FILE] [--available FILE]
                           [--confidence P] --out NEXT
    crowdbayes prefs next COMPARISONS --items ITEMS --n N [--model M] --out NEXT
    crowdbayes report labels|rank|prefs|cluster ... (the inputs of fit) --out report.html
    crowdbayes datasets list

Each command family lives in its own module with a ``register(commands)`` function that adds its
sub-parsers and sets ``handler``. Errors are reported as one line on stderr with exit status 2,
and no partial output file is left behind (outputs are written to temporary files and moved into
place together).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

import numpy as np

from . import cluster, datasets, labels, prefs, rank, report
from ._common import EXIT_ERROR, CommandError

__all__ = ["main", "CommandError", "EXIT_ERROR"]

_FAMILIES = (labels, rank, prefs, cluster, report, datasets)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crowdbayes", description="Bayesian inference from noisy human judgments."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for family in _FAMILIES:
        family.register(commands)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"crowdbayes: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crowdbayes`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        np.seterr(all="ignore")
        try:
            args.handler(args)
        except (ValueError, TypeError, OSError, ImportError, CommandError) as err:
            message = str(err).splitlines()[0] if str(err) else type(err).__name__
            print(f"crowdbayes: error: {message}", file=sys.stderr)
            return EXIT_ERROR
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
