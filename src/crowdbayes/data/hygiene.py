"""Hygiene before inference: the checks a table's ids and labels go through before any model
sees them, each reported and recorded.

People type labels by hand, paste them from spreadsheets and export them from annotation tools,
so a class turns up as ``"dog"``, ``" dog"``, ``"Dog"`` and ``"dgo"``; left alone, each variant
becomes a class of its own that the models answer in with full confidence. The checks here:

- **Normalisation** (on by default, ``normalize=False`` to keep values as given): text ids and
  labels lose the :data:`SPACES` around them (whitespace, zero-width spaces, byte-order marks)
  and are put in Unicode normal form C (NFC: ``"e" + U+0301`` and ``"é"`` are one value). The
  count of values changed is warned (:class:`~crowdbayes.exceptions.DataWarning`) and recorded.
- **Near-duplicate classes** (when the classes are not declared): classes that differ only in
  case, and a class within a small edit distance of a class at least
  :data:`NEAR_DUPLICATE_RATIO` times more frequent, are warned with their counts and the fix
  (``merge_classes=``, or declared ``classes=``). They are never merged unless asked: ``"A"``
  and ``"a"`` may be distinct classes on purpose.
- **Columns**: a column asked for but absent is matched case- and whitespace-insensitively
  (``"Label "`` for ``label``), with a warning; a column still missing names the parameter and
  command-line flag to pass and the columns there are; repeated column names are refused.
- **Id types**: values that cannot be ids (lists, dictionaries, tuples, timezone-aware
  datetimes, periods, intervals) and non-finite numbers are refused, naming the column and rows.

Every finding is a :class:`DataCheck`; a container keeps its findings in ``data_checks`` for the
command-line summary and the HTML report. The work is done on the *distinct* values of a column
(the categories pandas factorises it into), never row by row, so that a million-row table pays
for normalisation only as much as it has distinct values: one ``str.strip`` per distinct value
and one NFC test of them all.
"""

from __future__ import annotations

import datetime
import os
import sys
import unicodedata
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..exceptions import DataWarning
from .validate import POSITIONS, RowNames, plain, show_values

__all__ = [
    "DataCheck",
    "Hygiene",
    "NEAR_DUPLICATE_RATIO",
    "SPACES",
    "clean_text",
    "loose_name",
    "edit_distance",
    "near_duplicate_classes",
    "parse_merge_classes",
]

#: a class this many times rarer than a class a small edit away from it is suspicious
NEAR_DUPLICATE_RATIO = 10
#: at most this many (rare, common) class pairs are compared by edit distance (the most
#: frequent classes first), so that thousands of classes are checked in well under a second
_MAX_PAIRS = 10_000
#: what is stripped from both ends of a value: the characters ``str.isspace`` calls spaces
#: (``str.strip()``'s), and the zero-width space and byte-order mark
SPACES = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\u200b\ufeff"
)


@dataclass(frozen=True)
class DataCheck:
    """One finding about the input: ``kind`` (``normalized``, ``near_duplicate_classes``,
    ``rare_classes``, ``merged_classes``, ``column_matched``, ``separator``, ``duplicates``,
    ``ties``), the one-line ``message`` shown to the user, the ``counts`` behind it, and
    whether it was ``warned`` or only recorded (the separator sniffed, the classes merged as
    asked): a summary or a report shows the ones not warned, or all of them."""

    kind: str
    message: str
    counts: Mapping[str, int] = field(default_factory=dict)
    #: whether the message was warned (a :class:`DataWarning`) or only recorded
    warned: bool = True

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "message": self.message,
            "counts": dict(self.counts),
            "warned": self.warned,
        }


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _caller_level() -> int:
    """The ``stacklevel`` of the first caller outside this package, for the caller of
    :func:`warnings.warn` (so that a warning points at the user's ``Labels(...)`` line)."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def clean_text(value):
    """``value`` without the :data:`SPACES` around it, in Unicode NFC; other types as they
    are."""
    if not isinstance(value, str):
        return value
    return unicodedata.normalize("NFC", value.strip(SPACES))


def _cleaned(values: np.ndarray) -> np.ndarray | None:
    """:func:`clean_text` of every value, or None when no value changes. For text, one
    ``str.strip`` per value and one NFC test of them all joined by NUL (a starter that
    composes with nothing, so the join is NFC exactly when every value is); the values are put
    in NFC one by one only when that test fails."""
    if not _is_text(values):
        cleaned = np.array([clean_text(v) for v in values], dtype=object)
        return None if (cleaned == values).all() else cleaned
    stripped = [v.strip(SPACES) for v in values]
    joined = "\x00".join(stripped)
    nfc = joined.isascii() or unicodedata.is_normalized("NFC", joined)
    if nfc and sum(map(len, stripped)) == sum(map(len, values)):
        return None
    if not nfc:
        stripped = [unicodedata.normalize("NFC", v) for v in stripped]
    return np.array(stripped, dtype=object)


def _clean_strings(uniques: pd.Index) -> bool:
    """Whether ``uniques``, of pandas' string dtype, are plain ASCII with nothing to strip
    (pandas' vectorised string methods: a fast path for the usual clean column)."""
    if not isinstance(uniques.dtype, pd.StringDtype):
        return False
    text = pd.Series(uniques, copy=False)
    return bool(text.str.isascii().all()) and bool(
        (text.str.strip(SPACES).str.len() == text.str.len()).all()
    )


def _may_hold_text(dtype) -> bool:
    """Whether values of ``dtype`` may be text (a categorical's: its categories')."""
    if isinstance(dtype, pd.CategoricalDtype):
        dtype = dtype.categories.dtype
    return pd.api.types.is_object_dtype(dtype) or isinstance(dtype, pd.StringDtype)


def _is_text(values: np.ndarray) -> bool:
    return pd.api.types.infer_dtype(values, skipna=False) == "string"


_NOT_IDS = (tuple, list, dict, set, frozenset, pd.Interval, pd.Period)


def _not_an_id(value) -> str | None:
    """Why ``value`` cannot be an id or a class (None: it can)."""
    if isinstance(value, _NOT_IDS):
        return f"a {type(value).__name__}"
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return "a timezone-aware datetime"
    if isinstance(value, (float, np.floating)) and not np.isfinite(value):
        return f"a non-finite number ({value})"
    return None


def _first_unhashable(values) -> int | None:
    for position, value in enumerate(values):
        try:
            hash(value)
        except TypeError:
            return position
    return None


class Hygiene:
    """The checks of one container's input (``what`` names it in messages): columns resolved,
    id columns encoded and normalised, findings warned and kept in :attr:`checks`.

    ``checks`` starts with the findings of reading the file (``rows.checks``)."""

    def __init__(self, what: str, *, normalize: bool = True, rows: RowNames = POSITIONS) -> None:
        if not isinstance(normalize, (bool, np.bool_)):
            raise TypeError(f"normalize must be True or False; got {normalize!r}")
        self.what, self.normalize = what, bool(normalize)
        self.checks: list[DataCheck] = list(getattr(rows, "checks", ()))
        self._changed: dict[str, int] = {}
        self._examples: list[tuple[str, str]] = []
        self._merge: Mapping = {}

    # ----------------------------------------------------------------------- findings
    def record(self, kind: str, message: str, counts=None, *, warn: bool = True) -> None:
        """Keep a finding (and warn it as a :class:`DataWarning` unless ``warn`` is false)."""
        self.checks.append(DataCheck(kind, message, dict(counts or {}), warned=warn))
        if warn:
            warnings.warn(message, DataWarning, stacklevel=_caller_level())

    # ----------------------------------------------------------------------- columns
    def columns(
        self,
        df: pd.DataFrame,
        required: Mapping[str, str],
        optional: Mapping[str, str] | None = None,
    ) -> pd.DataFrame:
        """``df`` with the columns named in ``required`` and ``optional`` (``{parameter:
        column}``) present under those names: a column absent by its exact name is taken from
        the one column equal to it ignoring case and surrounding whitespace (with a warning);
        a required column still missing is refused naming the parameter and flag to pass.
        Repeated column names are refused."""
        names = list(df.columns)
        try:
            repeated = pd.Index(names)[pd.Index(names).duplicated()].unique().tolist()
        except TypeError:  # unhashable column names
            bad = _first_unhashable(names)
            raise TypeError(
                f"{self.what}: column name {names[bad]!r} (column {bad + 1}) is not a "
                "valid name (a list or other unhashable value); give text names"
            ) from None
        if repeated:
            raise ValueError(
                f"{self.what}: the table has repeated column names {show_values(repeated)}; "
                "rename them so that each column has one name"
            )
        renames = {}
        for param, name in {**(optional or {}), **required}.items():
            if name in df.columns or name in renames.values():
                continue
            key = loose_name(name) if isinstance(name, str) else None
            matches = [c for c in names if isinstance(c, str) and loose_name(c) == key]
            if len(matches) > 1:
                raise ValueError(
                    f"{self.what}: column {name!r} is missing, and {show_values(matches)} all "
                    f"match it but for case or spaces; pass {_how(param)} naming one"
                )
            if matches:
                renames[matches[0]] = name
                self.record(
                    "column_matched",
                    f"{self.what}: column {matches[0]!r} taken as {name!r} (they differ only "
                    "in case or spaces)",
                    {"columns": 1},
                )
            elif param in required:
                raise ValueError(
                    f"{self.what}: column {name!r} is missing; got {list(map(str, names))}; "
                    f"pass {_how(param)} naming the column that holds the {param}s"
                )
        return df.rename(columns=renames) if renames else df

    # ----------------------------------------------------------------------- values
    def encode(
        self, column: pd.Series, name: str, rows: RowNames = POSITIONS
    ) -> tuple[np.ndarray, pd.Index]:
        """Integer codes and distinct values of an id or label column (as ``pd.factorize``,
        order of first appearance), the values normalised when :attr:`normalize` is set
        (variants that become equal share a code) and checked to be usable ids."""
        try:
            codes, uniques = pd.factorize(column, sort=False)
        except TypeError:
            bad = _first_unhashable(column.to_numpy())
            if bad is None:
                raise
            value = column.iloc[bad]
            raise TypeError(
                f"{self.what}: column {name!r} holds a {type(value).__name__} at "
                f"{rows.one(bad)} ({value!r}), not an id; ids and labels must be text or numbers"
            ) from None
        uniques = pd.Index(uniques)
        self._check_kinds(codes, uniques, name, rows)
        if self.normalize and len(uniques) and _may_hold_text(uniques.dtype):
            if _clean_strings(uniques):
                return codes, uniques
            values = np.asarray(uniques, dtype=object)
            cleaned = _cleaned(values)
            if cleaned is None:
                return codes, uniques
            blank = np.flatnonzero(cleaned == "")
            if blank.size:
                where = np.flatnonzero(np.isin(codes, blank))
                raise ValueError(
                    f"{self.what}: column {name!r} has {where.size} value(s) that are only "
                    f"spaces ({rows.some(where)}): a missing value; fill them in or drop the rows"
                )
            changed = np.flatnonzero(cleaned != values)
            if changed.size:
                self._note_changes(codes, values, cleaned, changed, name, rows)
                merged, uniques = pd.factorize(cleaned, sort=False)
                codes = merged[codes]
                uniques = pd.Index(uniques)
        return codes, uniques

    def normalized(self, column: pd.Series, name: str, rows: RowNames = POSITIONS) -> pd.Series:
        """The column with its values normalised and checked as in :meth:`encode` (the column
        itself when no value changed)."""
        before = self._changed.get(name, 0)
        codes, uniques = self.encode(column, name, rows)
        if self._changed.get(name, 0) == before:
            return column
        return pd.Series(uniques.take(codes), index=column.index, name=column.name)

    def _check_kinds(self, codes, uniques: pd.Index, name: str, rows: RowNames) -> None:
        dtype = uniques.dtype
        why = None
        if isinstance(dtype, pd.DatetimeTZDtype):
            why = "timezone-aware datetimes"
        elif isinstance(dtype, pd.PeriodDtype):
            why = "periods"
        elif isinstance(dtype, pd.IntervalDtype):
            why = "intervals"
        if why is not None:
            raise TypeError(
                f"{self.what}: column {name!r} holds {why}, which cannot be ids or classes "
                "(they cannot be saved with a model); convert them to text first"
            )
        if dtype.kind == "f":
            bad = np.flatnonzero(~np.isfinite(uniques.to_numpy()))
        elif pd.api.types.is_object_dtype(dtype) and not _is_text(uniques.to_numpy()):
            bad = np.array(
                [i for i, v in enumerate(uniques) if _not_an_id(v) is not None], dtype=np.int64
            )
        else:
            return
        if bad.size:
            where = np.flatnonzero(np.isin(codes, bad))
            value = uniques[bad[0]]
            raise ValueError(
                f"{self.what}: column {name!r} holds {_not_an_id(value) or repr(value)} at "
                f"{rows.some(where)} ({len(where)} row(s)), which cannot be an id or a class; "
                "ids and labels must be text or finite numbers"
            )

    def _note_changes(self, codes, values, cleaned, changed, name, rows) -> None:
        counts = np.bincount(codes, minlength=len(values))
        self._changed[name] = self._changed.get(name, 0) + int(counts[changed].sum())
        for i in changed[: 3 - len(self._examples)]:
            self._examples.append((values[i], cleaned[i]))

    def report_normalized(self) -> None:
        """Warn and record, once, how many values normalisation changed (if any)."""
        if not self._changed:
            return
        total = sum(self._changed.values())
        columns = ", ".join(f"{n} in {c!r}" for c, n in self._changed.items())
        shown = ", ".join(f"{a!r} → {b!r}" for a, b in self._examples)
        self.record(
            "normalized",
            f"{self.what}: normalised {total} value(s) ({columns}): spaces around them removed "
            f"and Unicode put in NFC, e.g. {shown}; pass normalize=False to keep them as given",
            {"values": total, **self._changed},
        )
        self._changed = {}

    # ----------------------------------------------------------------------- classes
    def merge(self, uniques: pd.Index, mapping: Mapping | None, name: str) -> pd.Index:
        """The distinct labels with the classes of ``mapping`` (``{variant: class}``) merged
        (recorded); a class that is both merged and merged into is refused."""
        if not mapping:
            return uniques
        if not isinstance(mapping, Mapping):
            raise TypeError(
                f"merge_classes must be a mapping such as {{'Dog': 'dog'}}; got {mapping!r}"
            )
        if self.normalize:
            mapping = {clean_text(k): clean_text(v) for k, v in mapping.items()}
        self._merge = mapping
        chained = [v for v in mapping.values() if v in mapping]
        if chained:
            raise ValueError(
                f"merge_classes: {chained[0]!r} is merged into another class and has classes "
                "merged into it; map every variant to the final class"
            )
        present = set(uniques)
        merged = [k for k in mapping if k in present]
        absent = [k for k in mapping if k not in present]
        if absent:
            self.record(
                "merged_classes",
                f"{self.what}: merge_classes names {show_values(absent)}, which no label is",
                {"absent": len(absent)},
            )
        if not merged:
            return uniques
        self.record(
            "merged_classes",
            f"{self.what}: merged class(es) "
            + ", ".join(f"{k!r} into {mapping[k]!r}" for k in merged)
            + " as asked",
            {"classes": len(merged)},
            warn=False,
        )
        return pd.Index([mapping.get(u, u) for u in uniques], dtype=object)

    def merged(self, labels: pd.Series) -> pd.Series:
        """``labels`` (e.g. gold labels) with the classes that :meth:`merge` merged, merged too."""
        mapping = self._merge
        return labels.map(lambda v: mapping.get(v, v)) if mapping else labels

    def classes(self, counts: np.ndarray, classes: pd.Index) -> None:
        """Warn about near-duplicate classes (:func:`near_duplicate_classes`)."""
        found = near_duplicate_classes(list(classes), counts)
        if not found:
            return
        shown = "; ".join(
            f"{classes[v]!r} ({counts[v]}) {reason} {classes[m]!r} ({counts[m]})"
            for v, m, reason in found[:5]
        )
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        merge = {plain(classes[v]): plain(classes[m]) for v, m, _ in found}
        variants = {v for v, _, _ in found}
        kept = [plain(c) for i, c in enumerate(classes) if i not in variants]
        self.record(
            "near_duplicate_classes",
            f"{self.what}: {len(found)} class(es) look like variants of another: {shown}{more}; "
            f"if they are the same class pass merge_classes={merge}, or declare the classes to "
            f"check every label against them, e.g. classes={kept}",
            {"classes": len(found), "labels": int(sum(counts[v] for v, _, _ in found))},
        )


def loose_name(name: str) -> str:
    """A column name as matched when the exact name is missing: NFC, stripped, case-folded."""
    return unicodedata.normalize("NFC", name).strip().casefold()


def _how(param: str) -> str:
    return f"{param}='<column>' (--{param}-column on the command line)"


# --------------------------------------------------------------------------- near duplicates
def edit_distance(a: str, b: str, limit: int) -> int:
    """The optimal-string-alignment distance between ``a`` and ``b`` (insertions, deletions,
    substitutions and swaps of adjacent characters, each counting 1: ``dgo``–``dog`` is 1), or
    ``limit + 1`` as soon as it exceeds ``limit`` (Damerau 1964; the dynamic programme of
    Wagner & Fischer 1974 with the transposition case, rows cut off at the limit)."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    start = 0  # a common prefix and suffix cost nothing: compare what lies between
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    a, b = a[start:], b[start:]
    end = 0
    while end < min(len(a), len(b)) and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[: len(a) - end], b[: len(b) - end]
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = ca != cb
            best = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                best = min(best, previous2[j - 2] + 1)
            current[j] = best
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return min(previous[-1], limit + 1)


def _allowed_edits(a: str, b: str) -> int:
    """Edits allowed between two class names: none below 3 characters (``A`` and ``B`` are not
    typos of each other), 1 up to 5 characters, 2 beyond."""
    shorter = min(len(a), len(b))
    return 0 if shorter < 3 else 1 if shorter <= 5 else 2


def near_duplicate_classes(classes: Sequence, counts: np.ndarray) -> list[tuple[int, int, str]]:
    """``(variant, main, reason)`` code triples: text classes equal to a more frequent one but
    for case (``reason`` "differs only in case or spaces from"), and text classes within
    :func:`_allowed_edits` of a class at least :data:`NEAR_DUPLICATE_RATIO` times more frequent
    ("is a small edit from"). Each variant is paired with its most frequent main class."""
    counts = np.asarray(counts)
    text = [i for i, c in enumerate(classes) if isinstance(c, str)]
    by_count = sorted(text, key=lambda i: -counts[i])
    found: dict[int, tuple[int, str]] = {}
    first_of: dict[str, int] = {}
    for i in by_count:
        key = loose_name(classes[i])
        if key in first_of:
            found[i] = (first_of[key], "differs only in case or spaces from")
        else:
            first_of[key] = i
    rare = [i for i in by_count if i not in found]
    pairs = 0
    for main in by_count:
        for variant in reversed(rare):  # rarest first: stop at the first too frequent
            if counts[variant] * NEAR_DUPLICATE_RATIO > counts[main]:
                break
            pairs += 1
            if pairs > _MAX_PAIRS:
                break
            if variant in found or variant == main:
                continue
            limit = _allowed_edits(classes[variant], classes[main])
            if limit and edit_distance(classes[variant], classes[main], limit) <= limit:
                found[variant] = (main, "is a small edit from")
        if pairs > _MAX_PAIRS:
            break
    return [(v, m, reason) for v, (m, reason) in found.items()]


def parse_merge_classes(text: str | None) -> dict | None:
    """``--merge-classes "Dog=dog,dgo=dog"`` as ``{"Dog": "dog", "dgo": "dog"}`` (integers where
    both sides of every pair are whole numbers, as ``--classes`` reads them)."""
    if text is None:
        return None
    pairs = [p.strip() for p in text.split(",") if p.strip()]
    mapping = {}
    for pair in pairs:
        variant, sep, main = pair.partition("=")
        if not sep or not variant.strip() or not main.strip():
            raise ValueError(
                f"--merge-classes: {pair!r} is not VARIANT=CLASS; e.g. --merge-classes "
                '"Dog=dog,dgo=dog"'
            )
        mapping[variant.strip()] = main.strip()
    try:
        return {int(k): int(v) for k, v in mapping.items()}
    except ValueError:
        return mapping
