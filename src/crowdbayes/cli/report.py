"""``crowdbayes report labels|rank|prefs|leaderboard|cluster``: one self-contained HTML
quality report.

    crowdbayes report labels INPUT|--dataset NAME [--model M] [--gold F] [--eval-gold F] ...
                             [-o report.html] [--load MODEL] [--bootstrap N]
    crowdbayes report rank RANKINGS [--features ITEMS] [--model M] ... [-o report.html]
    crowdbayes report prefs COMPARISONS --features ITEMS [--model M] ... [-o report.html]
    crowdbayes report cluster LINKS [--features F] [--model M] ... [-o report.html]
    crowdbayes report leaderboard BATTLES [--style] [--category-column C] ... [-o board.html]

Each ``report`` command is built from its family's record (:mod:`._record`): the input and the
options of the family's ``fit`` — ``--model`` and every option mean the same (labels: ``--gold``
clamps, ``--eval-gold`` only scores) — then it fits the model as ``fit`` does (or reads one
saved by ``fit --save-model`` with ``--load``) and writes the page of
:func:`crowdbayes.report.build` to ``-o`` (stdout without it). What was warned while loading and
fitting is printed as usual and listed in the report. ``--save-model`` also writes the fitted
model; the report and the model are written together, atomically: on any error neither is left
behind.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

from ._common import CommandError
from ._outputs import add_output
from ._record import Family, model_writer, say, write_outputs
from .cluster import FAMILY as CLUSTER
from .labels import FAMILY as LABELS
from .leaderboard import FAMILY as LEADERBOARD
from .prefs import FAMILY as PREFS
from .rank import FAMILY as RANK

__all__ = ["register"]

#: the families with a report, and what the report is on
_REPORTS = (
    (LABELS, "report on class labels aggregated by a label model"),
    (RANK, "report on a Plackett-Luce model of rankings or choices"),
    (PREFS, "report on a model of pairwise comparisons (GP, Bradley-Terry, communities)"),
    (LEADERBOARD, "report on a leaderboard from pairwise battles"),
    (CLUSTER, "report on a crowd clustering model of must-link / cannot-link judgments"),
)


def register(commands) -> None:
    """Add the ``report`` command to the top-level sub-parsers."""
    report = commands.add_parser(
        "report", help="fit (or load) a model and write a self-contained HTML quality report"
    )
    actions = report.add_subparsers(dest="action", required=True, metavar="FAMILY")
    for family, help in _REPORTS:
        parser = actions.add_parser(
            family.name,
            help=help,
            description=f"{help[0].upper()}{help[1:]}: the input and options of "
            f"`crowdbayes {family.name} fit`, and -o for the HTML page.",
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog=family.table.epilog(),
        )
        family.add_fit_arguments(parser)
        add_output(parser, "--out", "write the HTML report here (default: stdout)", short="-o")
        parser.add_argument(
            "--load",
            metavar="MODEL",
            help="report on this model, saved by `fit --save-model`, instead of fitting one",
        )
        parser.add_argument("--title", help="the report's title")
        family.add_save_model(parser)
        parser.add_argument(
            "--bootstrap",
            type=int,
            metavar="N",
            help="bootstrap replicates of the agreement intervals of class labels (default "
            "1000; 200 above 200,000 labels), or of a leaderboard's bootstrap intervals",
        )
        parser.set_defaults(handler=_report, family=family)


def _loaded(args: argparse.Namespace, family: Family):
    """The model of ``--load``, checked, with ``args.model`` set to its table name (so the
    input is read as that model needs it)."""
    model = family.load_model(args.load)
    given = family.table.given(args)
    if given:
        raise CommandError(
            f"--load reports on the saved model as it is: drop {', '.join(sorted(given))}"
        )
    args.model = family.table.name_of(model) or args.model
    family.check_inputs(model.tags, args)
    return model


def _load_and_fit(args: argparse.Namespace, family: Family):
    """The inputs and the fitted (or loaded) model, as the fit command reads and fits them;
    the fit's wall time (None when loaded)."""
    if args.load:
        model = _loaded(args, family)
        return family.read(args, model), model, None
    model = family.make_model(args)
    inputs = family.read(args, model)
    start = time.perf_counter()
    model = family.fit(model, inputs, args)
    return inputs, model, time.perf_counter() - start


def _report(args: argparse.Namespace) -> None:
    from pathlib import Path

    from ..report import build

    family: Family = args.family
    if args.bootstrap is not None and args.bootstrap < 0:
        raise CommandError(f"--bootstrap must be at least 0; got {args.bootstrap}")
    if args.save_model and args.load:
        raise CommandError("--load reports on a saved model; --save-model would copy it")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            inputs, model, seconds = _load_and_fit(args, family)
    finally:
        for note in caught:  # shown as the fit command shows them, and kept for the report
            warnings.showwarning(note.message, note.category, note.filename, note.lineno)
    start = time.perf_counter()
    report = build(
        model,
        inputs.data,
        title=args.title,
        source=inputs.source,
        notes=caught,
        fit_seconds=seconds,
        n_boot=args.bootstrap,
        random_state=args.seed,
        **inputs.report,
    )
    outputs = []
    if args.out:
        outputs.append((args.out, lambda tmp: Path(tmp).write_text(report.html, encoding="utf-8")))
    if args.save_model:
        outputs.append((args.save_model, model_writer(model)))
    write_outputs(args, outputs)
    if not args.out:
        sys.stdout.write(report.html)
        sys.stdout.flush()
    took = time.perf_counter() - start
    fitted = "loaded" if seconds is None else f"fit in {seconds:.2f} s"
    lines = [
        f"{type(model).__name__} on {inputs.source}: {fitted}; report built in {took:.2f} s "
        f"({len(report.figures)} figures, {len(report.html) / 1e6:.2f} MB): "
        f"{args.out or 'stdout'}"
    ]
    if report.omitted:
        lines.append("figures left out: " + "; ".join(f"{n}: {why}" for n, why in report.omitted))
    say(args, lines)
