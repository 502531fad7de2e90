"""Tiny valid tables of every CLI input type, their other spellings, and ways to break them.

Used by ``test_fuzzed_inputs.py``: a table is a header and rows of text cells; :func:`render`
writes it as CSV bytes, spelled plainly or with a byte-order mark, Windows line endings,
every field quoted and the columns in another order (the same table to any CSV reader).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hypothesis import strategies as st


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Spelling:
    bom: bool = False
    crlf: bool = False
    quote: bool = False
    order: tuple[int, ...] | None = None


def render(table: Table, spelling: Spelling = Spelling()) -> bytes:
    order = spelling.order or tuple(range(len(table.columns)))

    def line(cells) -> str:
        cells = [cells[i] for i in order] + list(cells[len(order) :])  # a ragged row's extra
        return ",".join(f'"{c}"' if spelling.quote else c for c in cells)

    newline = "\r\n" if spelling.crlf else "\n"
    text = newline.join([line(table.columns), *(line(row) for row in table.rows)]) + newline
    return ("\ufeff" if spelling.bom else "").encode() + text.encode()


@dataclass(frozen=True)
class InputType:
    """One input of the command line: how to draw a valid table of it, which of its columns
    must be there, may not be blank, or hold numbers, the other files its command needs, and
    the command (``FILE``: the drawn table, ``OUT``: the output, ``@name``: a side file)."""

    name: str
    tables: st.SearchStrategy
    required: tuple[str, ...]
    not_blank: tuple[str, ...]
    numeric: tuple[str, ...]
    command: str
    side_files: dict[str, bytes] = field(default_factory=dict)
    #: whether only the first (id) column may move: the order of feature columns is the order
    #: of the model's weights, and so of its floating-point sums
    ordered: bool = False

    def argv(self, table: Path, folder: Path, out: Path) -> list[str]:
        names = {"FILE": str(table), "OUT": str(out)}
        return [
            str(folder / w[1:]) if w.startswith("@") else names.get(w, w)
            for w in self.command.split()
        ]


def _table(columns, rows) -> Table:
    return Table(tuple(columns), tuple(tuple(map(str, row)) for row in rows))


# ---------------------------------------------------------------------------- the valid tables
@st.composite
def labels_tables(draw) -> Table:
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=2, max_size=10, unique=True
        )
    )
    labels = ["yes", "no", *draw(st.lists(st.sampled_from(["yes", "no", "maybe"]), min_size=8))]
    rows = [(f"t{t}", f"w{w}", labels[i]) for i, (t, w) in enumerate(pairs)]
    return _table(("task", "worker", "label"), rows)


@st.composite
def gold_tables(draw) -> Table:
    tasks = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4, unique=True))
    rows = [(f"t{t}", draw(st.sampled_from(["yes", "no"]))) for t in tasks]
    return _table(("task", "label"), rows)


@st.composite
def rankings_tables(draw) -> Table:
    rows = []
    for query in range(draw(st.integers(1, 4))):
        items = draw(st.lists(st.integers(0, 4), min_size=2, max_size=3, unique=True))
        rows += [(f"q{query}", f"i{item}", rank + 1) for rank, item in enumerate(items)]
    return _table(("query", "item", "rank"), rows)


_NUMBERS = st.floats(-5, 5, allow_nan=False).map(lambda x: f"{x:.3f}")


@st.composite
def features_tables(draw) -> Table:
    rows = [(f"i{i}", draw(_NUMBERS), draw(_NUMBERS)) for i in range(4)]
    return _table(("item", "x0", "x1"), rows)


def _judged_pairs(pairs: list[str], *, unique: bool) -> st.SearchStrategy:
    """Up to 8 (worker 0 or 1, pair of one-character item names) judgments."""
    return st.lists(
        st.tuples(st.integers(0, 1), st.sampled_from(pairs)),
        min_size=1,
        max_size=8,
        unique=unique,
    )


@st.composite
def links_tables(draw) -> Table:
    pairs = draw(_judged_pairs(["ab", "ac", "bc", "bd", "cd", "ad"], unique=True))
    rows = [(f"w{w}", pair[0], pair[1], draw(st.sampled_from("01"))) for w, pair in pairs]
    return _table(("worker", "left", "right", "label"), rows)


@st.composite
def comparisons_tables(draw) -> Table:
    pairs = draw(_judged_pairs(["01", "02", "12", "10", "20", "21"], unique=False))
    rows = [(f"u{w}", f"i{p[0]}", f"i{p[1]}", f"i{p[draw(st.integers(0, 1))]}") for w, p in pairs]
    return _table(("worker", "left", "right", "label"), rows)


# ---------------------------------------------------------------------------- the side files
_LABELS = render(
    _table(("task", "worker", "label"), [(f"t{t}", f"w{w}", ("yes", "no")[(t + w) % 2])
                                         for t in range(4) for w in range(2)])
)  # fmt: skip
_RANKINGS = render(
    _table(("query", "item", "rank"), [(q, f"i{(q + k) % 4}", k + 1) for q in range(6)
                                       for k in range(2)])
)  # fmt: skip
_ITEMS = render(_table(("item", "x"), [("i0", 0.0), ("i1", 1.0), ("i2", 2.5)]))


INPUT_TYPES = {
    t.name: t
    for t in (
        InputType(
            "labels",
            labels_tables(),
            required=("task", "worker", "label"),
            not_blank=("task", "worker", "label"),
            numeric=(),
            command="labels fit FILE --model mv --out OUT",
        ),
        InputType(
            "gold",
            gold_tables(),
            required=("task", "label"),
            not_blank=("task", "label"),
            numeric=(),
            command="labels fit @labels.csv --gold FILE --model mv --out OUT",
            side_files={"labels.csv": _LABELS},
        ),
        InputType(
            "rankings",
            rankings_tables(),
            required=("query", "item", "rank"),
            not_blank=("query", "item"),  # an empty rank is an unranked item
            numeric=("rank",),
            command="rank fit FILE --model pl-mm --shape 2 --rate 1 --no-progress --out OUT",
        ),
        InputType(
            "features",
            features_tables(),
            required=("item",),  # one feature column is enough
            not_blank=("item", "x0", "x1"),
            numeric=("x0", "x1"),
            command="rank fit @rankings.csv --items FILE --model pl-map --max-iter 5 "
            "--no-progress --out OUT",
            side_files={"rankings.csv": _RANKINGS},
            ordered=True,
        ),
        InputType(
            "links",
            links_tables(),
            required=("worker", "left", "right", "label"),
            not_blank=("worker", "left", "right", "label"),
            numeric=("label",),
            command="cluster fit --links FILE --clusters 2 --max-iter 2 --no-progress --out OUT",
        ),
        InputType(
            "comparisons",
            comparisons_tables(),
            required=("left", "right", "label"),
            not_blank=("left", "right", "label"),
            numeric=(),
            command="prefs fit FILE --items @items.csv --model gppl-laplace --no-progress "
            "--save @model.npz --out OUT",
            side_files={"items.csv": _ITEMS},
        ),
    )
}


# ---------------------------------------------------------------------------- breaking them
@st.composite
def spellings(draw, n_columns: int, ordered: bool = False) -> Spelling:
    if ordered:  # the first column moves, the others keep their order
        order = list(range(1, n_columns))
        order.insert(draw(st.integers(0, n_columns - 1)), 0)
    else:
        order = draw(st.permutations(range(n_columns)))
    spelling = Spelling(
        bom=draw(st.booleans()),
        crlf=draw(st.booleans()),
        quote=draw(st.booleans()),
        order=tuple(order),
    )
    if spelling == Spelling(order=tuple(range(n_columns))):
        return Spelling(bom=True, crlf=True)
    return spelling


def _npy_bytes() -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.arange(6.0).reshape(3, 2))
    return buffer.getvalue()


@st.composite
def broken(draw, table: Table, kind: InputType) -> tuple[str, bytes]:
    """``(what was done, file content)``: a table no reader should accept."""
    columns = list(table.columns)
    how = draw(
        st.sampled_from(
            ["empty", "blank lines", "header only", "npy", "binary", "no column", "blank cell",
             "ragged", *(["text in a number"] if kind.numeric else [])]
        )
    )  # fmt: skip
    row = draw(st.integers(0, len(table.rows) - 1))
    rows = [list(r) for r in table.rows]
    if how == "empty":
        return how, b""
    if how == "blank lines":
        return how, b"\n\r\n \n"
    if how == "header only":
        return how, render(Table(table.columns, ()))
    if how == "npy":
        return how, _npy_bytes()
    if how == "binary":
        return how, draw(st.binary(min_size=1, max_size=50)) + b"\x00" + render(table)
    if how == "no column":
        gone = columns.index(draw(st.sampled_from(kind.required)))
        kept = [i for i in range(len(columns)) if i != gone]
        return how, render(
            Table(tuple(columns[i] for i in kept), tuple(tuple(r[i] for i in kept) for r in rows))
        )
    if how == "blank cell":
        rows[row][columns.index(draw(st.sampled_from(kind.not_blank)))] = ""
    elif how == "ragged":
        rows[row] = [*rows[row], "extra"]
    else:  # text in a number
        rows[row][columns.index(draw(st.sampled_from(kind.numeric)))] = "many"
    return how, render(Table(table.columns, tuple(map(tuple, rows))))


_CELL_TEXT = st.text(
    st.characters(codec="utf-8", exclude_characters="\x00"), min_size=0, max_size=12
)


@st.composite
def mangled(draw, table: Table) -> tuple[str, bytes]:
    """``(what was done, content)``: one cell replaced by arbitrary text, or a line of
    arbitrary bytes added: valid or not, a reader must say which in one line."""
    if draw(st.booleans()):
        rows = [list(r) for r in table.rows]
        row = draw(st.integers(0, len(rows) - 1))
        column = draw(st.integers(0, len(table.columns) - 1))
        text = draw(_CELL_TEXT)
        rows[row][column] = '"' + text.replace('"', '""') + '"'
        return f"cell {text!r}", render(Table(table.columns, tuple(map(tuple, rows))))
    junk = draw(st.binary(min_size=1, max_size=30))
    content = render(table)
    at = draw(st.integers(0, len(content)))
    return f"bytes {junk!r} at {at}", content[:at] + junk + content[at:]
