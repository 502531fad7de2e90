"""What every reader of an export shares: the result (:class:`Export`), the error that names
the file and what to pass (:class:`ExportError`), the choice of the answer field, and the
reduction of one answer to the scalar a model reads."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

__all__ = [
    "Export",
    "ExportError",
    "Rows",
    "choose_field",
    "one_answer",
    "parse_nested",
]


#: how a message names the option that picks the answer field, in Python and on the
#: command line
_SPELLINGS = {
    "python": {"answer": "answer_field=", "format": "format="},
    "cli": {"answer": "--label-column ", "format": "--format "},
}


class ExportError(ValueError):
    """A bad export: one line naming the file and what to pass.

    The message is a template whose ``{answer}`` and ``{format}`` name the options that choose
    the answer field and the format: ``answer_field=`` and ``format=`` in Python (``str``),
    ``--label-column`` and ``--format`` on the command line (:meth:`for_cli`).
    """

    def __init__(self, template: str) -> None:
        self.template = template
        super().__init__(self.spelled("python"))

    def spelled(self, language: str) -> str:
        return self.template.format(**_SPELLINGS[language])

    def for_cli(self, answer_flag: str = "--label-column") -> str:
        spellings = dict(_SPELLINGS["cli"], answer=f"{answer_flag} ")
        return self.template.format(**spellings)


@dataclass
class Export:
    """Judgments read from a tool's export, as a long table.

    Attributes
    ----------
    table : DataFrame
        One row per judgment. Its columns keep the export's own names: ``columns`` maps each
        role (``task``, ``worker``, ``answer``; for pairs also ``left`` and ``right``; for
        rankings ``item`` and ``rank``) to its column.
    columns : dict
    format : str
        The format read (``label-studio``, ``toloka``, ``mturk``, ``prolific``, ``argilla``,
        ``wide``).
    source : str
        The file (or ``DataFrame``) read.
    gold : Series or None
        Known answers the export carries (Label Studio ``ground_truth`` annotations, Toloka
        ``GOLDEN:*`` columns), indexed by task.
    dropped : dict
        What was not read, and why: ``{reason: count}`` (rejected, cancelled, empty,
        several choices, region results ...).
    notes : list of str
        What the reader decided on the way (the field chosen, how multiple choices were read).
    """

    table: pd.DataFrame
    columns: dict
    format: str
    source: str
    gold: pd.Series | None = None
    dropped: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def task(self) -> str:
        return self.columns["task"]

    @property
    def worker(self) -> str:
        return self.columns["worker"]

    @property
    def answer(self) -> str:
        return self.columns["answer"]

    def summary(self) -> str:
        """One line: what was read (the format, the answer field), what was dropped and why,
        the gold found."""
        field = self.columns.get("answer", self.columns.get("rank"))
        parts = [f"read {len(self.table)} answers from {format_name(self.format)} ({field})"]
        if self.dropped:
            parts.append("dropped " + ", ".join(f"{n} {why}" for why, n in self.dropped.items()))
        else:
            parts.append("nothing dropped")
        if self.gold is not None and len(self.gold):
            n = len(self.gold)
            parts.append(f"gold for {n} task{'' if n == 1 else 's'}")
        return "; ".join(parts)


_FORMAT_NAMES = {
    "label-studio": "a Label Studio export",
    "toloka": "a Toloka export",
    "mturk": "a Mechanical Turk batch",
    "prolific": "a Prolific export",
    "argilla": "an Argilla dataset",
    "wide": "a wide table (one column per annotator)",
}


def format_name(name: str) -> str:
    """The format as a message names it (``a Toloka export``)."""
    return _FORMAT_NAMES.get(name, name)


class Rows:
    """The long table a reader builds, one judgment at a time, with what it drops."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.dropped: Counter = Counter()
        self.gold: dict = {}

    def add(self, *values) -> None:
        self.rows.append(values)

    def drop(self, reason: str, n: int = 1) -> None:
        if n:
            self.dropped[reason] += n

    def frame(self, columns: Sequence[str]) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(columns))

    def export(
        self, format: str, source: str, columns: dict, *, notes: Sequence[str] = ()
    ) -> Export:
        """The :class:`Export` of these rows: ``columns`` maps each role to its column, in
        the order of the values of a row; the gold (if any) is named as the answer."""
        gold = None
        if self.gold:
            gold = pd.Series(self.gold, name=columns.get("answer"))
            gold = gold.rename_axis(columns["task"])
        return Export(
            self.frame(list(columns.values())),
            dict(columns),
            format,
            source,
            gold=gold,
            dropped=dict(self.dropped),
            notes=list(notes),
        )


def choose_field(
    candidates: Iterable[str],
    given: str | None,
    *,
    what: str,
    source: str,
    kind: str,
    others: Iterable[str] = (),
    hint: str = "",
) -> str:
    """The answer field: ``given`` (which must be a field of the export), else the one
    candidate; no candidate, or several, is an :class:`ExportError` listing them.

    ``others`` are the export's fields that hold another kind of answer (named in the
    message when there is no candidate); ``hint`` says which command reads them.
    """
    candidates = list(dict.fromkeys(candidates))
    everything = list(dict.fromkeys([*candidates, *others]))
    if given is not None:
        if given in everything:
            return given
        shown = ", ".join(map(repr, everything)) or "none"
        raise ExportError(
            f"{what} ({source}): no answer field {given!r} in {format_name(kind)}; its fields "
            f"are {shown}"
        )
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        found = f"; it has {', '.join(map(repr, others))}{hint}" if others else ""
        raise ExportError(f"{what} ({source}): {format_name(kind)} with no {_ANSWERS[what]}{found}")
    shown = ", ".join(map(repr, candidates))
    raise ExportError(
        f"{what} ({source}): {format_name(kind)} with {len(candidates)} answer fields "
        f"({shown}); pass {{answer}}{_quoted(candidates[0])} to choose one"
    )


_ANSWERS = {
    "labels": "class answers (single or multiple choice)",
    "values": "numeric answers (numbers or ratings)",
    "comparisons": "pairwise answers (which of two is preferred)",
    "rankings": "ranking answers",
}


def _quoted(name: str) -> str:
    """A field name as typed in a shell: quoted when it holds a space or a shell character."""
    return (
        name
        if name.replace(".", "").replace(":", "").replace("-", "").replace("_", "").isalnum()
        else f"'{name}'"
    )


def parse_nested(value: Any) -> Any:
    """A list or dict stored as JSON text (a CSV cell of a nested column) as Python; other
    values unchanged. NumPy arrays (Parquet's lists) become lists."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            import ast

            try:
                return ast.literal_eval(value)
            except (ValueError, SyntaxError):
                return value
    return value


def is_missing(value: Any) -> bool:
    """An empty answer: None, NaN, an empty string, list or dict."""
    if value is None:
        return True
    if isinstance(value, float) and value != value:
        return True
    if isinstance(value, (str, list, dict, tuple)) and len(value) == 0:
        return True
    if isinstance(value, str) and not value.strip():
        return True
    return False


def one_answer(value: Any, rows: Rows) -> Any:
    """The one answer in ``value`` (a list of chosen classes, or a scalar), or None with the
    reason counted: an empty answer, or several classes chosen at once (the label models read
    one class per answer, so such an answer is dropped and counted, never split into votes)."""
    if isinstance(value, dict) and "choices" in value:
        value = value["choices"]
    if isinstance(value, (list, tuple)):
        if len(value) > 1:
            rows.drop("with several classes chosen")
            return None
        value = value[0] if value else None
    if is_missing(value):
        rows.drop("empty")
        return None
    return value
