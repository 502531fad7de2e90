"""The ``crowdbayes`` command line.

    crowdbayes labels fit INPUT [-o TASKS] [--model M] [--workers-out FILE] [--save-model M]
    crowdbayes labels next INPUT --n N [-o NEXT] [--tasks FILE] [--available FILE]
        [--audit SHEET] [--stop-when changes<X,width<Y]
    crowdbayes labels audit INPUT --n N [-o SHEET] [--design stratified|uniform]
    crowdbayes labels accuracy INPUT --audit SHEET [-o ACCURACY]
    crowdbayes values fit INPUT [-o TASKS] [--workers-out FILE] [--save-model M]
    crowdbayes rank fit RANKINGS [--features ITEMS] [-o SCORES] [--save-model M]
    crowdbayes rank predict MODEL --pairs PAIRS [--features ITEMS] [-o P]
    crowdbayes prefs fit COMPARISONS [--features ITEMS] [-o UTILITIES] [--save-model M]
    crowdbayes prefs predict MODEL --pairs PAIRS [-o P]
    crowdbayes prefs next COMPARISONS --n N [-o NEXT]
    crowdbayes prefs communities MODEL [-o WORKERS]
    crowdbayes leaderboard fit BATTLES [-o BOARD] [--save-model M] [--init-model M --partial]
    crowdbayes leaderboard predict MODEL --pairs PAIRS [-o P]
    crowdbayes cluster fit LINKS [--features F] [-o ASSIGNMENTS] [--save-model M]
    crowdbayes report labels|rank|prefs|leaderboard|cluster INPUT ... [-o report.html]
    crowdbayes datasets list

Every family is built from one record (:mod:`._record`), so every verb follows the same
conventions: the main input is the positional argument; ``-o/--out`` names the per-item
results (without it they go to stdout as CSV and the summary to stderr; with it the summary
goes to stdout); ``--save-model`` writes the model file; progress and warnings go to stderr;
``--no-progress`` and ``--quiet`` are accepted everywhere; old spellings of options (``--save``,
``--items``, ``--links``, ``--workers``) are accepted for one release with a deprecation line.
A mistyped command, option or model name gets a suggestion.

Exit status: 0 success; 1 a failure while running (a numerical failure, memory, a missing
optional package, a file that could not be written, an internal error); 2 bad usage or bad
input (the message says which; a corrupt file, an input too large for the model's dense
arrays: :mod:`crowdbayes._capacity`); 130 and 143 interrupted (Ctrl-C, ``SIGTERM``), with no
output file (nor temporary file) left behind. Any error is one line on stderr, whatever its
type (``--debug`` or ``CROWDBAYES_DEBUG=1`` adds the traceback); ``--quiet``, ``--debug``
and ``--version`` may come before or after the command; messages name command-line flags, not
Python parameters (:mod:`._messages`); output files are checked before any input is read
(:mod:`._outputs`) and written together, all or nothing.

Building the parser imports neither numpy nor pandas: each command imports what it needs when
it runs.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import traceback
import warnings
from collections.abc import Sequence

from . import cluster, convert, datasets, labels, leaderboard, prefs, rank, report, values
from ._common import EXIT_ERROR, EXIT_FAILURE, CommandError
from ._messages import error_line, is_corrupt_data, printable, to_flags
from ._models import check_integers
from ._outputs import check_outputs
from ._parser import GENERAL_OPTIONS, Parser, deprecation_notes, suggest_options
from ._signals import Terminated, exit_status, interrupts_as_exceptions

__all__ = ["main", "CommandError", "EXIT_ERROR", "EXIT_FAILURE"]

_FAMILIES = (labels, values, rank, prefs, leaderboard, cluster, report, datasets, convert)

_EPILOG = """exit status: 0 success, 1 failure while running, 2 bad usage or bad input,
3 a `next --stop-when` rule met (no questions written), 130/143 interrupted (no output file
left behind)"""


@functools.lru_cache(maxsize=1)
def _parser() -> Parser:
    """The parser of every command (built once; parsing leaves it unchanged)."""
    parser = Parser(
        prog="crowdbayes",
        description="Bayesian inference from noisy human judgments.",
        epilog=_EPILOG,
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=Parser
    )
    for family in _FAMILIES:
        family.register(commands)
    return parser


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; an unknown option is refused by the command it was given to,
    with the closest option of that command. The general options (``--quiet``, ``--debug``)
    are False when not given."""
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = getattr(args, "parser_", parser)
        command.error(f"unrecognized arguments: {suggest_options(command, unknown)}")
    if getattr(args, "input", "") is None:  # the old flag of a positional input (--links)
        args.input = getattr(args, "input_alias", None)
    for name in GENERAL_OPTIONS:
        setattr(args, name, getattr(args, name, False))
    check_integers(args)
    return args


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"crowdbayes: warning: {printable(to_flags(str(message)))}", file=sys.stderr)


#: errors that say the input or the command line is wrong (exit 2); any other error is a
#: failure while running (exit 1)
_BAD_INPUT = (CommandError, ValueError, TypeError, KeyError, LookupError, EOFError)
_BAD_FILE = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def _exit_code(err: BaseException) -> int:
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(err, numpy.linalg.LinAlgError):
        return EXIT_FAILURE  # a numerical failure of the fit, not of the input
    if isinstance(err, (*_BAD_INPUT, *_BAD_FILE, UnicodeError)) or is_corrupt_data(err):
        return EXIT_ERROR
    return EXIT_FAILURE


def _debug_wanted(argv: Sequence[str] | None) -> bool:
    """``--debug`` among the options (before a ``--``), or ``CROWDBAYES_DEBUG`` set to
    anything but ``0`` or nothing: known before the command line is parsed, so that an error
    while parsing it shows its traceback too."""
    words = list(sys.argv[1:] if argv is None else argv)
    words = words[: words.index("--")] if "--" in words else words
    return "--debug" in words or os.environ.get("CROWDBAYES_DEBUG", "") not in ("", "0")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crowdbayes`` command; returns the exit status (module docstring).

    Any error of a command, whatever its type, is one line on stderr (``crowdbayes: error:
    ...``) and the documented exit status; ``--debug`` (or ``CROWDBAYES_DEBUG=1``) prints the
    traceback above it. Ctrl-C and ``SIGTERM`` stop the command with no output file (nor
    temporary file) left behind, and the shell's status for a signal: 130 and 143.
    """
    debug = _debug_wanted(argv)
    args = None
    with warnings.catch_warnings(), interrupts_as_exceptions():
        warnings.showwarning = _show_warning
        try:
            args = _parse(argv)
            deprecation_notes(args)
            check_outputs(args)
            status = args.handler(args)  # `next --stop-when` returns EXIT_STOP
        except (KeyboardInterrupt, Terminated) as stop:
            from .._atomic import written_before

            written = written_before(stop)  # a signal during the commit's clean-up
            what = (
                f"the outputs were written first: {', '.join(map(str, written))}"
                if written
                else "no output written"
            )
            print(f"crowdbayes: interrupted; {what}", file=sys.stderr)
            return exit_status(stop)
        except Exception as err:  # MemoryError, RecursionError ... are Exceptions too
            if debug:
                traceback.print_exception(err)
            print(f"crowdbayes: error: {error_line(err, args)}", file=sys.stderr)
            return _exit_code(err)
    return status if isinstance(status, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
