"""Issue 41 point 2, property-based: whitespace, Unicode-form and case variants of a valid label
table give the same answers as the table itself, plus a warning (case variants: once merged as
the warning suggests)."""

from __future__ import annotations

import tempfile
import unicodedata
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from crowdbayes.data import Labels
from crowdbayes.data.hygiene import SPACES, Hygiene, clean_text
from crowdbayes.exceptions import DataWarning
from crowdbayes.models.labels import DawidSkene, MajorityVote

#: class names, some with characters that have a decomposed Unicode form
CLASS_NAMES = ["cat", "dog", "café", "naïve", "ñandú", "bird", "crème brûlée"]
PADDING = st.text(alphabet=" \t\u00a0\u200b\u3000\ufeff", max_size=2)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def label_tables(draw) -> pd.DataFrame:
    """A valid long table: 3–10 tasks, 2–5 workers, 2–4 classes (each used)."""
    n_tasks = draw(st.integers(3, 10))
    n_workers = draw(st.integers(2, 5))
    classes = draw(st.lists(st.sampled_from(CLASS_NAMES), min_size=2, max_size=4, unique=True))
    rows = []
    for t in range(n_tasks):
        workers = draw(st.sets(st.integers(0, n_workers - 1), min_size=1))
        for w in sorted(workers):
            rows.append((f"task {t}", f"w{w}", draw(st.sampled_from(classes))))
    table = pd.DataFrame(rows, columns=["task", "worker", "label"])
    assume(table["label"].nunique() >= 2 and table["worker"].nunique() >= 2)
    return table


def answers(labels: Labels) -> list[pd.DataFrame]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [model.fit(labels).probas_ for model in (MajorityVote(), DawidSkene())]


def build(data, **options) -> tuple[Labels, list[str]]:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        labels = Labels(data, **options)
    return labels, [str(w.message) for w in record if issubclass(w.category, DataWarning)]


def assert_same_answers(got: Labels, want: Labels) -> None:
    assert list(got.tasks) == list(want.tasks) and list(got.classes) == list(want.classes)
    for a, b in zip(answers(got), answers(want), strict=True):
        pd.testing.assert_frame_equal(a, b)


def padded(table: pd.DataFrame, data) -> pd.DataFrame:
    """Each value with random spaces around it, and in NFD (decomposed) now and then."""

    def variant(value: str) -> str:
        if data.draw(st.booleans()):
            value = unicodedata.normalize("NFD", value)
        return data.draw(PADDING) + value + data.draw(PADDING)

    return table.apply(lambda column: column.map(variant))


@SETTINGS
@given(table=label_tables(), data=st.data())
def test_spaces_and_unicode_forms_give_the_same_answers_and_a_warning(table, data):
    want, quiet = build(table)
    assert quiet == []
    variant = padded(table, data)
    got, said = build(variant)
    assert_same_answers(got, want)
    changed = int((variant != table).to_numpy().sum())
    if changed:
        assert len(said) == 1 and f"normalised {changed} value(s)" in said[0]
        assert [c.kind for c in got.data_checks] == ["normalized"]
        assert got.data_checks[0].counts["values"] == changed
    else:
        assert said == []


@settings(max_examples=10, deadline=None)
@given(table=label_tables(), data=st.data())
def test_the_same_holds_through_a_csv_file(table, data):
    variant = padded(table, data)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "labels.csv"
        variant.to_csv(path, index=False)
        got, _ = build(path)
    assert_same_answers(got, build(table)[0])


@SETTINGS
@given(table=label_tables(), data=st.data())
def test_case_variants_are_warned_and_merging_them_gives_the_same_answers(table, data):
    counts = table["label"].value_counts()
    main = data.draw(
        st.sampled_from(sorted(counts.index[counts >= 3])) if (counts >= 3).any() else st.nothing()
    )
    spelled = data.draw(st.sampled_from([main.upper(), main.title()]).filter(lambda v: v != main))
    rows = np.flatnonzero(table["label"].to_numpy() == main)
    chosen = data.draw(
        st.sets(st.sampled_from(list(rows)), min_size=1, max_size=(len(rows) - 1) // 2)
    )
    variant = table.copy()
    variant.loc[sorted(chosen), "label"] = spelled
    got, said = build(variant)
    assert spelled in list(got.classes) and main in list(got.classes)  # never merged unasked
    assert any(
        f"{spelled!r} ({len(chosen)}) differs only in case or spaces from {main!r}" in s
        for s in said
    ), said
    assert any(f"merge_classes={{{spelled!r}: {main!r}}}" in s for s in said), said
    merged, _ = build(variant, merge_classes={spelled: main})
    assert_same_answers(merged, build(table)[0])


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.text(), st.integers()), min_size=1, max_size=30))
def test_encoding_normalises_exactly_as_clean_text(values):
    column = pd.Series(values, dtype=object)
    assume(not any(isinstance(v, str) and not v.strip(SPACES) for v in values))
    hygiene = Hygiene("labels")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        codes, uniques = hygiene.encode(column, "label")
    assert [uniques[c] for c in codes] == [clean_text(v) for v in values]
    assert not pd.Index(uniques).has_duplicates


def test_clean_text_is_idempotent_and_strips_every_unicode_space():
    import sys

    spaces = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
    assert set(SPACES) == set(spaces) | {"\u200b", "\ufeff"}
    assert clean_text(SPACES + "a b" + SPACES) == "a b"
    with pytest.raises(ValueError, match="only spaces"):
        Hygiene("labels").encode(pd.Series(["a", SPACES]), "label")
