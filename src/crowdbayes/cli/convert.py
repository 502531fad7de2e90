"""``crowdbayes convert INPUT -o long.csv``: the long table of a tool's export, and the
``--format`` option of every command that reads judgments.

    crowdbayes convert EXPORT -o long.csv [--format F] [--kind labels|values|pairs|rankings]
                       [--label-column FIELD]

The export (Label Studio JSON or JSON-MIN, Toloka TSV, Mechanical Turk batch CSV, Prolific
JSONL, an Argilla dataset, a wide one-column-per-annotator table) is read as the fitting
commands read it (:func:`crowdbayes.exports.read_judgments`) and written as a long table, one
judgment a row, with the export's own column names; with ``--gold-out`` the gold answers the
export carries go to a ``task, label`` file. The summary says what was read and what was
dropped, and why. The output is written atomically (``-o``; CSV, TSV or Parquet by its
suffix; without ``-o`` the table goes to stdout).
"""

from __future__ import annotations

import argparse

from ._outputs import add_output
from ._parser import add_common_options
from ._record import add_escape_formulas

__all__ = ["add_format_option", "register"]

#: what ``--kind`` reads the answers as, and the help of each
_KINDS = ("labels", "values", "pairs", "rankings")


def add_format_option(parser, tools: str) -> None:
    """``--format`` for a command that reads judgments (``tools``: the exports it reads, for
    the help)."""
    from ..exports import FORMATS

    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help=f"the file's format (default auto: detected from its content): long (a table "
        f"of judgments), or a tool's export ({tools}); the answer field is chosen "
        "automatically when there is one, else named with --label-column",
    )


def register(commands) -> None:
    """Add ``convert`` to the top-level sub-parsers."""
    parser = commands.add_parser(
        "convert",
        help="write the long table of a tool's export (Label Studio, Toloka, MTurk, ...)",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", metavar="EXPORT", help="the export, as the tool wrote it")
    add_format_option(parser, "Label Studio, Toloka, MTurk, Prolific, Argilla, wide")
    parser.add_argument(
        "--kind",
        choices=_KINDS,
        default="labels",
        help="read the answers as class labels (default), numbers, pairwise preferences or "
        "rankings",
    )
    parser.add_argument(
        "--label-column",
        help="the answer field to read (the export's own name, e.g. OUTPUT:result), when "
        "the export has several",
    )
    add_output(parser, "--out", "write the long table here (default: stdout)", short="-o")
    add_output(parser, "--gold-out", "write the export's gold answers (task, label) here")
    add_escape_formulas(parser)
    add_common_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> None:
    """``crowdbayes convert``: read the export, write its long table (and its gold)."""
    from ._record import emit, say, table_output, write_outputs

    export = convert(args)
    files = []
    if args.out:
        files.append((args.out, table_output(args, export.table, args.out, index=False)))
    if args.gold_out:
        if export.gold is None or not len(export.gold):
            raise ValueError(f"--gold-out: {args.input} carries no gold answers")
        gold = export.gold.rename_axis(export.task).rename(export.answer).reset_index()
        files.append((args.gold_out, table_output(args, gold, args.gold_out, index=False)))
    write_outputs(args, files)  # together, atomically (crowdbayes._atomic)
    if not args.out:
        emit(export.table, index=False, args=args)
    written = [str(path) for path, _ in files]
    lines = [export.summary(), *export.notes]
    if written:
        lines.append(f"wrote {', '.join(written)}")
    say(args, lines)


def convert(args: argparse.Namespace):
    """The :class:`~crowdbayes.exports.Export` of ``args.input``, errors in the command
    line's words."""
    from ..exports import ExportError, read_judgments

    try:
        return read_judgments(
            args.input, format=args.format, kind=args.kind, answer_field=args.label_column
        )
    except ExportError as err:
        raise ValueError(err.for_cli("--label-column")) from None
