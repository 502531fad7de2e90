"""The ``crowdbayes`` command line.

    crowdbayes labels fit INPUT [--model mv|ds|bayes-ds|community-ds|hierarchical|glad|mace|kos|
                                mmsr|wawa|zbs|gold-mv] [--gold FILE]
                                [--eval-gold FILE] [--out FILE] [--workers-out FILE] [--seed N]
    crowdbayes labels fit --dataset rte ...
    crowdbayes labels fit INPUT --ordered [--classes LOW,...,HIGH] --model ordinal-ds
    crowdbayes labels fit INPUT --model crowd-classifier --features FILE [--out FILE]
    crowdbayes labels fit 'labels/*.parquet' --backend dask [--scheduler ADDRESS | --workers N]
                          --out DIR [--save-model M] [--init-model M [--partial]]
    crowdbayes values fit INPUT [--noise gaussian|student] [--out FILE] [--workers-out FILE]
                          [--eval-truth FILE]
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
place together). Output options are checked before any input is read (:mod:`._outputs`: an
existing file needs ``--force``); messages name command-line flags, not Python parameters
(:mod:`._messages`); Ctrl-C and ``SIGTERM`` exit with 130 and 143 (:mod:`._signals`).
"""

from __future__ import annotations

import argparse
import functools
import sys
import warnings
from collections.abc import Sequence

import numpy as np

from . import cluster, datasets, labels, prefs, rank, report, values
from ._common import EXIT_ERROR, CommandError
from ._messages import name_the_file, to_flags
from ._outputs import check_outputs
from ._signals import Terminated, exit_status, interrupts_as_exceptions

__all__ = ["main", "CommandError", "EXIT_ERROR"]

_FAMILIES = (labels, values, rank, prefs, cluster, report, datasets)


@functools.lru_cache(maxsize=1)
def _parser() -> argparse.ArgumentParser:
    """The parser of every command (built once: building it is most of a small run's time;
    parsing leaves it unchanged)."""
    parser = argparse.ArgumentParser(
        prog="crowdbayes", description="Bayesian inference from noisy human judgments."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for family in _FAMILIES:
        family.register(commands)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"crowdbayes: warning: {to_flags(str(message))}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crowdbayes`` command; returns the exit status.

    Ctrl-C and ``SIGTERM`` stop the command with no output file (nor temporary file) left
    behind, and the shell's status for a signal: 130 and 143.
    """
    args = _parser().parse_args(argv)
    with warnings.catch_warnings(), interrupts_as_exceptions():
        warnings.showwarning = _show_warning
        np.seterr(all="ignore")
        try:
            check_outputs(args)
            args.handler(args)
        except (ValueError, TypeError, OSError, ImportError, CommandError) as err:
            message = str(err).splitlines()[0] if str(err) else type(err).__name__
            print(f"crowdbayes: error: {to_flags(name_the_file(message, args))}", file=sys.stderr)
            return EXIT_ERROR
        except (KeyboardInterrupt, Terminated) as stop:
            print("crowdbayes: interrupted; no output written", file=sys.stderr)
            return exit_status(stop)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
