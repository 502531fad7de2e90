"""The ``crowdbayes`` command line.

    crowdbayes labels fit INPUT [-o TASKS] [--model M] [--workers-out FILE] [--save-model M]
    crowdbayes labels next INPUT --n N [-o NEXT] [--tasks FILE] [--available FILE]
    crowdbayes values fit INPUT [-o TASKS] [--workers-out FILE] [--save-model M]
    crowdbayes rank fit RANKINGS [--features ITEMS] [-o SCORES] [--save-model M]
    crowdbayes rank predict MODEL --pairs PAIRS [--features ITEMS] [-o P]
    crowdbayes prefs fit COMPARISONS [--features ITEMS] [-o UTILITIES] [--save-model M]
    crowdbayes prefs predict MODEL --pairs PAIRS [-o P]
    crowdbayes prefs next COMPARISONS --n N [-o NEXT]
    crowdbayes prefs communities MODEL [-o WORKERS]
    crowdbayes cluster fit LINKS [--features F] [-o ASSIGNMENTS] [--save-model M]
    crowdbayes report labels|rank|prefs|cluster INPUT ... [-o report.html]
    crowdbayes datasets list

Every family is built from one record (:mod:`._record`), so every verb follows the same
conventions: the main input is the positional argument; ``-o/--out`` names the per-item
results (without it they go to stdout as CSV and the summary to stderr; with it the summary
goes to stdout); ``--save-model`` writes the model file; progress and warnings go to stderr;
``--no-progress`` and ``--quiet`` are accepted everywhere; old spellings of options (``--save``,
``--items``, ``--links``, ``--workers``) are accepted for one release with a deprecation line.
A mistyped command, option or model name gets a suggestion.

Exit status: 0 success; 1 a failure while running (a numerical failure, memory, a missing
optional package, a file that could not be written); 2 bad usage or bad input (the message says
which); 130 and 143 interrupted (Ctrl-C, ``SIGTERM``), with no output file (nor temporary file)
left behind. Errors are one line on stderr; messages name command-line flags, not Python
parameters (:mod:`._messages`); output files are checked before any input is read
(:mod:`._outputs`) and written together, all or nothing.

Building the parser imports neither numpy nor pandas: each command imports what it needs when
it runs.
"""

from __future__ import annotations

import argparse
import functools
import sys
import warnings
from collections.abc import Sequence

from .._version import __version__
from . import cluster, datasets, labels, prefs, rank, report, values
from ._common import EXIT_ERROR, EXIT_FAILURE, CommandError
from ._messages import name_the_file, to_flags
from ._outputs import check_outputs
from ._parser import Parser, deprecation_notes, suggest_options
from ._signals import Terminated, exit_status, interrupts_as_exceptions

__all__ = ["main", "CommandError", "EXIT_ERROR", "EXIT_FAILURE"]

_FAMILIES = (labels, values, rank, prefs, cluster, report, datasets)

_EPILOG = """exit status: 0 success, 1 failure while running, 2 bad usage or bad input,
130/143 interrupted (no output file left behind)"""


@functools.lru_cache(maxsize=1)
def _parser() -> Parser:
    """The parser of every command (built once; parsing leaves it unchanged)."""
    parser = Parser(
        prog="crowdbayes",
        description="Bayesian inference from noisy human judgments.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"crowdbayes {__version__}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=Parser
    )
    for family in _FAMILIES:
        family.register(commands)
    return parser


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; an unknown option is refused by the command it was given to,
    with the closest option of that command."""
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = getattr(args, "parser_", parser)
        command.error(f"unrecognized arguments: {suggest_options(command, unknown)}")
    if getattr(args, "input", "") is None:  # the old flag of a positional input (--links)
        args.input = getattr(args, "input_alias", None)
    return args


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"crowdbayes: warning: {to_flags(str(message))}", file=sys.stderr)


#: errors that say the input or the command line is wrong (exit 2); any other error is a
#: failure while running (exit 1)
_BAD_INPUT = (CommandError, ValueError, TypeError, KeyError, LookupError)
_BAD_FILE = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def _exit_code(err: BaseException) -> int:
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(err, numpy.linalg.LinAlgError):
        return EXIT_FAILURE  # a numerical failure of the fit, not of the input
    if isinstance(err, (*_BAD_INPUT, *_BAD_FILE, UnicodeError)):
        return EXIT_ERROR
    return EXIT_FAILURE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crowdbayes`` command; returns the exit status (module docstring).

    Ctrl-C and ``SIGTERM`` stop the command with no output file (nor temporary file) left
    behind, and the shell's status for a signal: 130 and 143.
    """
    args = _parse(argv)
    with warnings.catch_warnings(), interrupts_as_exceptions():
        warnings.showwarning = _show_warning
        deprecation_notes(args)
        try:
            check_outputs(args)
            args.handler(args)
        except (Exception, MemoryError) as err:
            message = str(err).splitlines()[0] if str(err) else type(err).__name__
            print(f"crowdbayes: error: {to_flags(name_the_file(message, args))}", file=sys.stderr)
            return _exit_code(err)
        except (KeyboardInterrupt, Terminated) as stop:
            print("crowdbayes: interrupted; no output written", file=sys.stderr)
            return exit_status(stop)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
