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
  a family's stop rule (``labels next --stop-when``) ends a collection loop: when it is met
  the command writes no questions and exits with :data:`EXIT_STOP`;
- ``report <family> INPUT`` — the fit's inputs and options, ``-o`` for the HTML page;

and every command takes ``--progress/--no-progress`` and ``--quiet``. The command line's
capability checks read the models' tags (:class:`crowdbayes.base.Tags`), never their classes.

The files a command writes are committed together (:func:`write_outputs`: all the old ones or
all the new ones, never a mix; an output that another program created meanwhile is not
overwritten without ``--force``); the ids and labels of CSV outputs that a spreadsheet would
run as formulas are warned about, or escaped with ``--escape-formulas``; the summary is printed
with control characters escaped (:mod:`._safety`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._common import CommandError, show_progress
from ._models import ModelTable, open_unit, positive_int
from ._outputs import add_output
from ._parser import Parser, add_common_options, add_deprecated
from ._safety import safe_for_spreadsheets, terminal_safe

__all__ = [
    "EXIT_STOP",
    "Family",
    "Inputs",
    "NextVerb",
    "PredictVerb",
    "emit",
    "model_writer",
    "say",
    "table_output",
    "write_outputs",
    "write_results",
]

#: exit status of ``<family> next`` when its stop rule is met (no questions written)
EXIT_STOP = 3

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


#: a family's stop rule of ``next``: ``(model, inputs, questions, args) -> (lines, met)``
StopRule = Callable[[Any, Inputs, Any, argparse.Namespace], tuple[list[str], "str | None"]]


@dataclass(frozen=True)
class NextVerb:
    """``<family> next INPUT --n N``: its options, the candidates and workers it offers
    ``suggest``, how it names the columns, its summary, and (optionally) its stop rule:
    ``stop(model, inputs, questions, args) -> (lines, met)``, the lines it reports and, when
    the rule is met, the message that ends the collection instead of writing questions."""

    help: str
    add_options: Callable[[Parser], None]
    questions: Callable[[Any, Inputs, argparse.Namespace], tuple[Any, Any]]
    table: Callable[[Any, argparse.Namespace], Any]
    summary: Callable[[Any, Inputs, Any, argparse.Namespace], list[str]]
    stop: StopRule | None = None
    #: the model ``next`` fits without ``--model`` (None: the family's default), when a
    #: faster model asks better questions than the one that gives the final answers
    default_model: str | None = None


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
        add_escape_formulas(fit)
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
            add_escape_formulas(verb)
            add_common_options(verb)
            verb.set_defaults(handler=self.run_predict)
        if self.next is not None:
            default = self.next.default_model
            verb = self._verb_parser(
                actions, "next", self.next.help, epilog=True, default_model=default
            )
            self.add_fit_arguments(verb, default_model=default)
            verb.add_argument("--n", required=True, help="how many questions to suggest")
            verb.add_argument(
                "--confidence",
                help="a question whose answer the model already gives with this probability "
                "(0-1) is done and never suggested",
            )
            self.next.add_options(verb)
            add_output(verb, "--out", "write the questions here (default: stdout)", short="-o")
            add_escape_formulas(verb)
            verb.set_defaults(handler=self.run_next)
        if self.more_verbs is not None:
            self.more_verbs(actions)

    def _verb_parser(
        self,
        actions,
        verb: str,
        help: str,
        *,
        epilog: bool = False,
        default_model: str | None = None,
    ) -> Parser:
        return actions.add_parser(
            verb,
            help=help,
            description=help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog=self.table.epilog(default_model) if epilog else None,
        )

    def add_fit_arguments(self, parser: Parser, default_model: str | None = None) -> None:
        """The input, the options that read it, the model table (``--model`` defaulting to
        ``default_model``, else the table's), ``--seed`` and the options every command has:
        what ``fit``, ``next`` and ``report`` share."""
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
        self.table.add_arguments(parser, default=default_model)
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
            files.append((args.out, table_output(args, table, args.out)))
        if self.worker_table is not None and args.workers_out:
            workers = _named_workers(self.worker_table(model), args)
            files.append((args.workers_out, table_output(args, workers, args.workers_out)))
        if args.save_model:
            files.append((args.save_model, model_writer(model)))
        write_outputs(args, files)
        if not args.out:
            emit(table, args=args)
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
    def run_next(self, args: argparse.Namespace) -> int:
        """``<family> next``: fit the model, then write the questions it suggests — or, when
        the family's stop rule is met, write nothing and return :data:`EXIT_STOP`."""
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
        stop_lines, met = [], None
        if self.next.stop is not None:
            stop_lines, met = self.next.stop(model, inputs, questions, args)
        if met is not None:
            say(args, [*stop_lines, met])
            return EXIT_STOP
        table = self.next.table(questions, args)
        write_results(args, table, index=False)
        say(args, [*self.next.summary(model, inputs, table, args), *stop_lines])
        return 0


def _named_workers(table, args: argparse.Namespace):
    """The per-worker results with the workers' column named as the input names it (an
    export's own id name, or ``--worker-column``)."""
    from ._inputs import id_names

    column = vars(args).get("worker_column", "worker")
    return table.rename(columns={"worker": id_names(args, "task", column)[1]})


def _missing_package(what: str, err: ImportError) -> str:
    # the deep models' module re-raises the ImportError of torch with its own message
    cause = err.__cause__ if isinstance(err.__cause__, ImportError) else err
    package = (err.name or cause.name or "").split(".")[0]
    extra = _EXTRAS.get(package)
    install = f": pip install 'crowdbayes[{extra}]'" if extra else ""
    return f"{what} needs {package or err}{install}"


def _confidence(text: str | None) -> float | None:
    return None if text is None else open_unit("--confidence")(text)


# ---------------------------------------------------------------------------- output
def add_escape_formulas(parser: Parser) -> None:
    """``--escape-formulas`` (for the commands that write tables)."""
    parser.add_argument(
        "--escape-formulas",
        action="store_true",
        help="write ids and labels that start with =, +, -, @, a tab or a carriage return "
        "prefixed with ' so that a spreadsheet shows them instead of running them as formulas "
        "(OWASP); without it they are written as they are, with a warning",
    )


def _spreadsheet_ready(args: argparse.Namespace, table, where: str):
    return safe_for_spreadsheets(table, where, escape=getattr(args, "escape_formulas", False))


def table_output(args: argparse.Namespace, table, path, *, index: bool = True):
    """The writer of ``table`` to ``path`` (CSV, TSV or Parquet by its extension), for
    :func:`write_outputs`; a CSV or TSV is made safe to open in a spreadsheet first."""
    from ..data.io import table_writer

    if not str(path).lower().endswith((".parquet", ".pq")):
        table = _spreadsheet_ready(args, table, str(path))
    return table_writer(table, index=index)


def model_writer(model):
    """The writer of ``model``'s file, for :func:`write_outputs`."""
    return lambda tmp: model.save(tmp, overwrite=True)  # the file staged for it exists


def may_replace(args: argparse.Namespace, path) -> bool:
    """Whether the output ``path`` may replace a file that exists: with ``--force``, or when
    it is the input its option is declared to update in place (``--save-model`` naming the
    ``--init-model``)."""
    if getattr(args, "force", False):
        return True
    key = Path(path).resolve()
    for option in getattr(args, "output_options", ()):
        if option.replaces is None:
            continue
        value, replaced = getattr(args, option.dest, None), getattr(args, option.replaces, None)
        if value and replaced and Path(value).resolve() == key == Path(replaced).resolve():
            return True
    return False


def write_outputs(args: argparse.Namespace, files: list, outputs=None) -> None:
    """Write ``files`` — ``(path, write)`` pairs — as one set: all of them or none, moved into
    place in one step that no signal splits, and refusing a file that appeared since the
    command started unless it may be replaced (:class:`crowdbayes._atomic.OutputSet`).
    ``outputs``: an :class:`~crowdbayes._atomic.OutputSet` that holds more staged outputs
    already (the Dask backend's directory), committed with them."""
    from .._atomic import OutputSet

    if not files and outputs is None:
        return
    with contextlib.ExitStack() as stack:
        if outputs is None:
            outputs = stack.enter_context(OutputSet(overwrite=False))
        for path, write in files:
            write(outputs.file(path, overwrite=may_replace(args, path)))
        try:
            outputs.commit()
        except FileExistsError as err:  # another run wrote one of them meanwhile
            raise FileExistsError(str(err).replace("overwrite=True", "--force")) from None


def write_results(args: argparse.Namespace, table, *, index: bool = True) -> None:
    """The results of a command: to the file ``-o`` names (atomically), else to stdout."""
    if args.out:
        write_outputs(args, [(args.out, table_output(args, table, args.out, index=index))])
    else:
        emit(table, index=index, args=args)


def emit(table, *, index: bool = True, args: argparse.Namespace | None = None) -> None:
    """Write ``table`` to stdout as CSV (the per-item results when no ``-o`` is given), made
    safe to open in a spreadsheet (:func:`table_output`)."""
    table = _spreadsheet_ready(args, table, "stdout")
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
    print("\n".join(map(terminal_safe, lines)), file=stream, flush=True)
