"""``crowdbayes report labels|rank|prefs|cluster``: one self-contained HTML quality report.

    crowdbayes report labels INPUT|--dataset NAME [--model M] [--gold F] [--eval-gold F] ...
                             --out report.html [--load MODEL] [--bootstrap N]
    crowdbayes report rank RANKINGS [--items ITEMS] [--model M] ... --out report.html
    crowdbayes report prefs COMPARISONS --items ITEMS [--model M] ... --out report.html
    crowdbayes report cluster --links LINKS [--features F] [--model M] ... --out report.html

Each ``report`` command takes the inputs and options of the family's ``fit`` command — its
parser is built from the fit command's, so ``--model`` and every option mean the same (labels:
``--gold`` clamps, ``--eval-gold`` only scores) — fits the model (or reads one saved by ``fit``
with ``--load``) and writes the page of :func:`crowdbayes.report.build` to ``--out``. What was
warned while loading and fitting is printed as usual and listed in the report. The fit commands'
other outputs (``--workers-out``, ``--proba``, the Dask backend, warm starts) are refused by
name; ``--save``/``--save-model`` also write the fitted model. The report and the model are
written together, atomically: on any error neither is left behind.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import load
from ..data import Comparisons
from ..data.io import write_atomically
from . import cluster, labels, prefs, rank
from ._common import CommandError, show_progress
from ._models import TABLES
from ._outputs import add_output

__all__ = ["register"]


@dataclass(frozen=True)
class _Family:
    """How one command family's ``fit`` becomes a ``report``."""

    name: str
    module: Any
    help: str
    families: tuple[str, ...]  # model families a --load file may hold
    #: fit options that have no meaning in a report: flag -> (dest, store_true)
    refused: dict[str, tuple[str, bool]] = field(default_factory=dict)
    #: where the fit command saves the model (None: it cannot)
    save_flag: str | None = None


_LABELS = _Family(
    "labels",
    labels,
    "report on class labels aggregated by a label model",
    ("labels",),
    {
        "--workers-out": ("workers_out", False),
        "--backend": ("backend", False),
        "--scheduler": ("scheduler", False),
        "--workers": ("workers", False),
        "--grouped": ("grouped", True),
        "--out-of-core": ("out_of_core", True),
        "--init-model": ("init_model", False),
        "--partial": ("partial", True),
    },
    "--save-model",
)
_RANK = _Family(
    "rank",
    rank,
    "report on a Plackett-Luce model of rankings or choices",
    ("plackett_luce",),
    {"--top-k": ("top_k", False)},
    "--save",
)
_PREFS = _Family(
    "prefs",
    prefs,
    "report on a GP preference or communities model of pairwise comparisons",
    ("gp_preference", "communities"),
    {},
    "--save",
)
_CLUSTER = _Family(
    "cluster",
    cluster,
    "report on a crowd clustering model of must-link / cannot-link judgments",
    ("clustering",),
    {"--workers-out": ("workers_out", False), "--proba": ("proba", True)},
    "--save",
)


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    # argparse has no public accessor for a parser's sub-commands: they are the choices of
    # its one _SubParsersAction
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise LookupError(f"no sub-command {name!r}")


def _fit_parser(family: _Family) -> argparse.ArgumentParser:
    """The family's own ``fit`` parser, built by its ``register`` on a scratch parser (so the
    report's options are the fit command's, and stay so)."""
    scratch = argparse.ArgumentParser(add_help=False)
    family.module.register(scratch.add_subparsers())
    return _subcommand(_subcommand(scratch, family.name), "fit")


def register(commands) -> None:
    """Add the ``report`` command to the top-level sub-parsers."""
    report = commands.add_parser(
        "report", help="fit (or load) a model and write a self-contained HTML quality report"
    )
    actions = report.add_subparsers(dest="action", required=True)
    for family in (_LABELS, _RANK, _PREFS, _CLUSTER):
        fit = _fit_parser(family)
        parser = actions.add_parser(
            family.name,
            parents=[fit],
            conflict_handler="resolve",
            help=family.help,
            description=f"{family.help[0].upper()}{family.help[1:]}: the inputs and options of "
            f"`crowdbayes {family.name} fit`, and --out for the HTML page.",
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog=fit.epilog,
        )
        add_output(parser, "--out", "write the HTML report here", required=True)
        parser.add_argument(
            "--load",
            metavar="MODEL",
            help="report on this model, saved by `fit` (.npz), instead of fitting one",
        )
        parser.add_argument("--title", help="the report's title")
        if family.save_flag:
            add_output(parser, family.save_flag, "also save the fitted model here (.npz)")
        if family is _LABELS:
            parser.add_argument(
                "--bootstrap",
                type=int,
                metavar="N",
                help="bootstrap replicates of the agreement intervals (default 1000; 200 above "
                "200,000 labels)",
            )
        for flag, (dest, switch) in family.refused.items():
            extra = {"action": "store_true"} if switch else {"default": None}
            parser.add_argument(flag, dest=dest, help=argparse.SUPPRESS, **extra)
        outputs = parser.get_default("output_options")
        parser.set_defaults(
            output_options=tuple(o for o in outputs if o.flag not in family.refused)
        )
        parser.set_defaults(handler=_report, family=family)


# ------------------------------------------------------------------------------ checks
def _check_refused(args: argparse.Namespace, family: _Family) -> None:
    for flag, (dest, _) in family.refused.items():
        if getattr(args, dest, None):
            raise CommandError(
                f"{flag} is an option of `{family.name} fit`; `report {family.name}` writes "
                "only --out (and the model with --save/--save-model)"
            )


def _loaded(args: argparse.Namespace, family: _Family):
    """The model of ``--load``, checked, with ``args.model`` set to its table name (so the
    input loading of the fit command treats the data as that model needs)."""
    model = load(args.load)
    if model.family not in family.families:
        raise CommandError(
            f"{args.load} holds a {type(model).__name__} model ({model.family}), not one that "
            f"`report {family.name}` reports on"
        )
    table = TABLES[family.name]
    given = table.given(args)
    if given:
        raise CommandError(
            f"--load reports on the saved model as it is: drop {', '.join(sorted(given))}"
        )
    names = [name for name, spec in table.models.items() if spec.class_name == type(model).__name__]
    if names:
        args.model = names[0]
    return model


# ------------------------------------------------------------------------------ per family
def _labels_inputs(args, progress):
    if getattr(args, "features", None) is not None or args.model == "crowd-classifier":
        raise CommandError(
            "`report labels` does not fit --model crowd-classifier or read --features; "
            "use `labels fit` for it"
        )
    data, eval_gold, name = labels._load_inputs(args)
    return data, {"eval_gold": eval_gold}, name, lambda: labels._make_model(args, progress)


def _rank_inputs(args, progress, loaded):
    from ..models.plackett_luce import FeatureModel

    model = loaded or rank._make_model(args, progress)
    data = rank._load_rankings(args, isinstance(model, FeatureModel))
    return data, {}, args.rankings, lambda: model


def _prefs_inputs(args, progress):
    data = Comparisons(
        args.comparisons,
        items=args.items,
        workers=args.workers,
        item_column=args.item_column,
        worker_column=args.worker_column,
    )
    return data, {}, args.comparisons, lambda: prefs._make_model(args, progress)


def _cluster_inputs(args, progress, loaded):
    deep = cluster._check_options(args)
    if deep:
        cluster._import_torch(args.model)
    model = loaded or cluster._make_model(args, progress)
    links = cluster._load_links(args, deep)
    if loaded is None:
        cluster._fit_to_links(model, links, args, deep)  # as cluster fit does
    return links, {}, args.links, lambda: model


def _inputs(args: argparse.Namespace, family: _Family, progress: bool, loaded):
    """``(data, build options, source name, make_model)`` as the fit command reads them."""
    if family is _LABELS:
        return _labels_inputs(args, progress)
    if family is _RANK:
        return _rank_inputs(args, progress, loaded)
    if family is _PREFS:
        return _prefs_inputs(args, progress)
    return _cluster_inputs(args, progress, loaded)


def _fit(model, data, family: _Family):
    if family is _CLUSTER:
        return cluster._fit(model, data)
    return model.fit(data)


# ------------------------------------------------------------------------------ the command
def _load_and_fit(args: argparse.Namespace, family: _Family, progress: bool):
    """The data and the fitted (or loaded) model, as the fit command reads and fits them;
    the fit's wall time (None when loaded)."""
    loaded = _loaded(args, family) if args.load else None
    data, options, source, make_model = _inputs(args, family, progress, loaded)
    model = loaded or make_model()
    if loaded is not None:
        return data, options, source, model, None
    start = time.perf_counter()
    _fit(model, data, family)
    return data, options, source, model, time.perf_counter() - start


def _report(args: argparse.Namespace) -> None:
    from ..report import build

    family: _Family = args.family
    _check_refused(args, family)
    n_boot = getattr(args, "bootstrap", None)
    if n_boot is not None and n_boot < 0:
        raise CommandError(f"--bootstrap must be at least 0; got {n_boot}")
    save = (
        getattr(args, family.save_flag.lstrip("-").replace("-", "_")) if family.save_flag else None
    )
    if save and args.load:
        raise CommandError(f"--load reports on a saved model; {family.save_flag} would copy it")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data, options, source, model, seconds = _load_and_fit(
                args, family, show_progress(args.progress)
            )
    finally:
        for note in caught:  # shown as the fit command shows them, and kept for the report
            warnings.showwarning(note.message, note.category, note.filename, note.lineno)
    start = time.perf_counter()
    report = build(
        model,
        data,
        title=args.title,
        source=source,
        notes=caught,
        fit_seconds=seconds,
        n_boot=n_boot,
        random_state=getattr(args, "seed", 0),
        **options,
    )
    outputs = [(args.out, lambda tmp: Path(tmp).write_text(report.html, encoding="utf-8"))]
    if save:
        outputs.append((save, model.save))
    write_atomically(outputs)
    took = time.perf_counter() - start
    fitted = "loaded" if seconds is None else f"fit in {seconds:.2f} s"
    print(
        f"{type(model).__name__} on {source}: {fitted}; report built in {took:.2f} s "
        f"({len(report.figures)} figures, {len(report.html) / 1e6:.2f} MB): {args.out}"
    )
    if report.omitted:
        omitted = "; ".join(f"{name}: {why}" for name, why in report.omitted)
        print(f"figures left out: {omitted}", file=sys.stderr)
