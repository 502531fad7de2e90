"""One record per command family, and the verbs every family gets from it.

A :class:`Family` says, once, what is particular to a kind of judgment: its input and the
options that read it, its model table, how a model is fitted to the input, the per-item table
it writes, the per-worker table, the summary, and — where the family has them — how it predicts
from a saved model and which questions it asks next. From that record this module builds the
same verbs, with the same flags and the same conventions, for every family:

- ``<family> fit INPUT`` — the main input positional; ``-o/--out`` for the per-item results
  (without it they go to stdout as CSV and the summary to stderr; with it the summary goes to
  stdout); ``--save-model`` for the model file; ``--workers-out`` where the family has
  per-worker results; ``--seed``; the model table's ``--model`` and options;
- ``<family> predict MODEL`` (families with predictions) — ``-o`` as above;
- ``<family> next INPUT --n N`` (families whose models suggest questions) — ``-o`` as above;
- ``report <family> INPUT`` — the fit's inputs and options, ``-o`` for the HTML page;

and every command takes ``--progress/--no-progress`` and ``--quiet``. The command line's
capability checks read the models' tags (:class:`crowdbayes.base.Tags`), never their classes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._common import CommandError, show_progress
from ._models import ModelTable, positive_int
from ._outputs import add_output
from ._parser import Parser, add_common_options, add_deprecated

__all__ = ["Family", "Inputs", "NextVerb", "PredictVerb", "emit", "say", "write_results"]

#: optional packages and the extra that installs them
_EXTRAS = {"torch": "deep", "dask": "dask", "matplotlib": "plot", "pyarrow": "parquet"}


@dataclass
class Inputs:
    """What a family read for a command: the data the model fits, where it came from (for
    messages), the extra arguments of :func:`crowdbayes.report.build`, and anything else the
    family's summary needs (``extra``)."""

    data: Any
    source: str
    report: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PredictVerb:
    """``<family> predict MODEL``: the options it adds and the table it computes."""

    help: str
    add_options: Callable[[Parser], None]
    predict: Callable[[Any, argparse.Namespace], Any]


@dataclass(frozen=True)
class NextVerb:
    """``<family> next INPUT --n N``: its options, the candidates and workers it offers
    ``suggest``, how it names the columns, and its summary."""

    help: str
    add_options: Callable[[Parser], None]
    questions: Callable[[Any, Inputs, argparse.Namespace], tuple[Any, Any]]
    table: Callable[[Any, argparse.Namespace], Any]
    summary: Callable[[Any, Inputs, Any, argparse.Namespace], list[str]]


def _fit_model(model, inputs: Inputs, args: argparse.Namespace):
    return model.fit(inputs.data)


@dataclass(frozen=True)
class Family:
    """The record of one command family (module docstring)."""

    name: str
    help: str
    #: the kind of judgment its models fit (their ``tags.judgment``)
    judgment: str
    table: ModelTable
    #: the positional input: its name in the usage line and its help
    input_metavar: str
    input_help: str
    #: the options that read the input (columns, features, gold ...), for fit, next, report
    add_input_options: Callable[[Parser], None]
    #: ``read(args, model) -> Inputs``
    read: Callable[[argparse.Namespace, Any], Inputs]
    #: the per-item results of a fitted model: ``item_table(model, args) -> DataFrame``
    item_table: Callable[[Any, argparse.Namespace], Any]
    #: the summary lines after a fit: ``summary(model, inputs, seconds, args, item_table)``
    summary: Callable[[Any, Inputs, float, argparse.Namespace, Any], list[str]]
    #: fits a model to the inputs and returns the fitted model (default
    #: ``model.fit(inputs.data)``)
    fit: Callable[[Any, Inputs, argparse.Namespace], Any] = _fit_model
    #: the per-worker results (``--workers-out``), where the family has them
    worker_table: Callable[[Any], Any] | None = None
    #: options of ``fit`` alone (not of ``next`` or ``report``)
    add_fit_options: Callable[[Parser], None] | None = None
    #: replaces the standard fit run when it returns True (the Dask backend)
    special_fit: Callable[[argparse.Namespace], bool] | None = None
    #: the input that ``--save-model`` may name to update it in place (labels: the
    #: ``--init-model`` of the daily update)
    save_model_replaces: str | None = None
    #: an old flag that named the positional input (kept for a release)
    input_alias: str | None = None
    #: the input may be a named data set instead (``--dataset``)
    datasets: bool = False
    predict: PredictVerb | None = None
    next: NextVerb | None = None
    #: more verbs of the family: ``add(actions)`` adds their parsers
    more_verbs: Callable[[Any], None] | None = None

    # ------------------------------------------------------------------ the parsers
    def register(self, commands) -> None:
        """Add ``<family>`` and its verbs to the top-level sub-parsers."""
        family = commands.add_parser(self.name, help=self.help, description=self.help)
        actions = family.add_subparsers(dest="action", required=True, metavar="VERB")
        fit = self._verb_parser(actions, "fit", f"fit a {self.name} model", epilog=True)
        self.add_fit_arguments(fit)
        add_output(
            fit,
            "--out",
            "write the per-item results here (default: stdout)",
            short="-o",
            directory_ok=self.special_fit is not None,  # the Dask backend writes a directory
        )
        self.add_save_model(fit, replaces=self.save_model_replaces)
        if self.worker_table is not None:
            add_output(fit, "--workers-out", "write the per-worker results here")
        if self.add_fit_options is not None:
            self.add_fit_options(fit)
        fit.set_defaults(handler=self.run_fit)
        if self.predict is not None:
            verb = self._verb_parser(actions, "predict", self.predict.help)
            verb.add_argument("model_file", metavar="MODEL", help="a model file (--save-model)")
            self.predict.add_options(verb)
            add_output(verb, "--out", "write the predictions here (default: stdout)", short="-o")
            add_common_options(verb)
            verb.set_defaults(handler=self.run_predict)
        if self.next is not None:
            verb = self._verb_parser(actions, "next", self.next.help, epilog=True)
            self.add_fit_arguments(verb)
            verb.add_argument("--n", required=True, help="how many questions to suggest")
            verb.add_argument(
                "--confidence",
                help="a question whose answer the model already gives with this probability "
                "(0-1) is done and never suggested",
            )
            self.next.add_options(verb)
            add_output(verb, "--out", "write the questions here (default: stdout)", short="-o")
            verb.set_defaults(handler=self.run_next)
        if self.more_verbs is not None:
            self.more_verbs(actions)

    def _verb_parser(self, actions, verb: str, help: str, *, epilog: bool = False) -> Parser:
        return actions.add_parser(
            verb,
            help=help,
            description=help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog=self.table.epilog() if epilog else None,
        )

    def add_fit_arguments(self, parser: Parser) -> None:
        """The input, the options that read it, the model table, ``--seed`` and the options
        every command has: what ``fit``, ``next`` and ``report`` share."""
        if self.datasets:
            source = parser.add_mutually_exclusive_group(required=True)
            source.add_argument(
                "input", nargs="?", metavar=self.input_metavar, help=self.input_help
            )
            source.add_argument("--dataset", help="a named data set (`crowdbayes datasets list`)")
        elif self.input_alias is not None:
            parser.add_argument(
                "input", nargs="?", metavar=self.input_metavar, help=self.input_help
            )
            add_deprecated(parser, self.input_alias, self.input_metavar, "input_alias")
        else:
            parser.add_argument("input", metavar=self.input_metavar, help=self.input_help)
        self.add_input_options(parser)
        parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        self.table.add_arguments(parser)
        add_common_options(parser)

    @staticmethod
    def add_save_model(parser: Parser, replaces: str | None = None) -> None:
        """``--save-model`` (and its old spelling ``--save``)."""
        add_output(
            parser,
            "--save-model",
            "save the fitted model here (.npz, no pickle)",
            replaces=replaces,
        )
        add_deprecated(parser, "--save", "--save-model", "save_model")

    # ------------------------------------------------------------------ the model
    def make_model(self, args: argparse.Namespace, *, progress: bool | None = None):
        """The estimator of ``--model`` with the options given, its parameters checked, and
        the inputs it needs or refuses checked by its tags."""
        if getattr(args, "input", "") is None and getattr(args, "dataset", None) is None:
            raise CommandError(f"give the {self.input_metavar} file (positional argument)")
        spec = self.table.spec(args.model)
        try:
            tags = spec.tags()
        except ImportError as err:
            # a missing optional package is a failure while running (exit 1), not bad usage
            raise ImportError(_missing_package(f"--model {args.model}", err)) from None
        self.check_inputs(tags, args)
        shown = show_progress(args.progress) if progress is None else progress
        return self.table.make(args, random_state=args.seed, progress=shown)

    def check_inputs(self, tags, args: argparse.Namespace) -> None:
        """Refuse the inputs a model of these tags cannot use, and ask for those it needs."""
        name = args.model
        features = getattr(args, "features", None)
        if features is None and tags.features == "required":
            raise CommandError(f"--model {name} needs --features FILE (the items' features)")
        if features is not None and tags.features == "none":
            users = self.table.users(lambda t: t.features != "none")
            raise CommandError(f"--features applies to --model {', '.join(users)}, not {name}")
        if getattr(args, "worker_features", None) is not None and not tags.worker_features:
            users = self.table.users(lambda t: t.worker_features)
            raise CommandError(
                f"--worker-features applies to --model {', '.join(users)}, not {name}"
            )

    # ------------------------------------------------------------------ fit
    def run_fit(self, args: argparse.Namespace) -> None:
        """``<family> fit``: fit, write the outputs together, then print the summary."""
        if self.special_fit is not None and self.special_fit(args):
            return
        model = self.make_model(args)
        inputs = self.read(args, model)
        start = time.perf_counter()
        model = self.fit(model, inputs, args)
        seconds = time.perf_counter() - start
        table = self.item_table(model, args)
        files = []
        if args.out:
            files.append((args.out, _table_writer(table)))
        if self.worker_table is not None and args.workers_out:
            files.append((args.workers_out, _table_writer(self.worker_table(model), index=False)))
        if args.save_model:
            files.append((args.save_model, lambda tmp: model.save(tmp, overwrite=True)))
        _write(files)
        if not args.out:
            emit(table)
        written = [str(path) for path, _ in files]
        say(args, [*self.summary(model, inputs, seconds, args, table), *_wrote(written)])

    # ------------------------------------------------------------------ predict
    def run_predict(self, args: argparse.Namespace) -> None:
        """``<family> predict MODEL``: predictions of a saved model of this family."""
        model = self.load_model(args.model_file)
        table = self.predict.predict(model, args)
        write_results(args, table, index=False)
        say(args, [f"{type(model).__name__}: {len(table)} predictions"])

    def load_model(self, path: str):
        """The model saved at ``path``, refused unless it is one of this family's models
        (by its tags' kind of judgment)."""
        from ..base import load

        model = load(path)
        if model.tags.judgment != self.judgment:
            raise CommandError(
                f"{path} holds a {type(model).__name__} model (judgment "
                f"{model.tags.judgment!r}), not one of `crowdbayes {self.name}`"
            )
        return model

    # ------------------------------------------------------------------ next
    def run_next(self, args: argparse.Namespace) -> None:
        """``<family> next``: fit the model, then write the questions it suggests."""
        n = positive_int("--n")(args.n)
        confidence = _confidence(args.confidence)
        model = self.make_model(args)
        if not model.tags.suggest:
            users = self.table.users(lambda t: t.suggest)
            raise CommandError(
                f"--model {args.model} cannot suggest questions; use --model {', '.join(users)}"
            )
        if getattr(args, "available", None) is not None and not model.tags.personal_questions:
            users = self.table.users(lambda t: t.personal_questions)
            raise CommandError(
                f"--available: --model {args.model} pools all workers and cannot say whom to "
                f"ask; use --model {', '.join(users)}"
            )
        inputs = self.read(args, model)
        model = self.fit(model, inputs, args)
        candidates, available = self.next.questions(model, inputs, args)
        questions = model.suggest(
            n,
            candidates=candidates,
            available=available,
            strategy=args.strategy,
            confidence=confidence,
            random_state=args.seed,
        )
        if len(questions) == 0:
            decided = "" if confidence is None else f" at --confidence {args.confidence}"
            raise CommandError(f"nothing left to ask: every candidate is decided{decided}")
        table = self.next.table(questions, args)
        write_results(args, table, index=False)
        say(args, self.next.summary(model, inputs, table, args))


def _missing_package(what: str, err: ImportError) -> str:
    # the deep models' module re-raises the ImportError of torch with its own message
    cause = err.__cause__ if isinstance(err.__cause__, ImportError) else err
    package = (err.name or cause.name or "").split(".")[0]
    extra = _EXTRAS.get(package)
    install = f": pip install 'crowdbayes[{extra}]'" if extra else ""
    return f"{what} needs {package or err}{install}"


def _confidence(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise CommandError(f"--confidence must lie between 0 and 1; got {text!r}")
    return value


# ---------------------------------------------------------------------------- output
def _table_writer(table, *, index: bool = True):
    from ..data.io import table_writer

    return table_writer(table, index=index)


def _write(files: list) -> None:
    from ..data.io import write_atomically

    if files:
        write_atomically(files)


def write_results(args: argparse.Namespace, table, *, index: bool = True) -> None:
    """The results of a command: to the file ``-o`` names (atomically), else to stdout."""
    if args.out:
        _write([(args.out, _table_writer(table, index=index))])
    else:
        emit(table, index=index)


def emit(table, *, index: bool = True) -> None:
    """Write ``table`` to stdout as CSV (the per-item results when no ``-o`` is given)."""
    try:
        table.to_csv(sys.stdout, index=index)
        sys.stdout.flush()
    except BrokenPipeError:  # `... | head`: the reader has what it wanted
        _silence_stdout()


def _silence_stdout() -> None:
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _wrote(paths: list[str]) -> list[str]:
    return [f"wrote {', '.join(paths)}"] if paths else []


def say(args: argparse.Namespace, lines: list[str]) -> None:
    """The summary: on stdout when the results went to a file (``-o``), on stderr when they
    went to stdout, nowhere with ``--quiet``."""
    if getattr(args, "quiet", False) or not lines:
        return
    stream = sys.stdout if getattr(args, "out", None) else sys.stderr
    print("\n".join(lines), file=stream, flush=True)
