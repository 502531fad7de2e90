"""The Battles container: winner forms, counting, covariates, categories, one-line errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes.data import Battles, as_battles
from crowdbayes.data.battles import A_WINS, B_WINS, TIE, BattleCounts, style_covariates


def table(**extra) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "model_a": ["x", "y", "x", "z", "y", "x"],
            "model_b": ["y", "x", "z", "x", "z", "y"],
            "winner": ["model_a", " Model_B ", "tie", "TIE (bothbad)", "model_a", "model_a"],
        }
    )
    for name, values in extra.items():
        frame[name] = values
    return frame


def test_winner_values_and_sizes():
    battles = Battles(table())
    assert battles.n_battles == 6 and battles.n_models == 3 and battles.n_ties == 2
    assert list(battles.model_ids) == ["x", "y", "z"]
    assert list(battles.outcome) == [A_WINS, B_WINS, TIE, TIE, A_WINS, A_WINS]
    assert battles.covariate_names == () and battles.judge_ids is None
    assert as_battles(battles) is battles
    assert "6 battles of 3 models, 2 ties" in repr(battles)


def test_one_hot_winner_columns():
    frame = table().drop(columns="winner")
    outcome = Battles(table()).outcome
    for k, name in enumerate(["winner_model_a", "winner_model_b", "winner_tie"]):
        frame[name] = (outcome == k).astype(int)
    np.testing.assert_array_equal(Battles(frame).outcome, outcome)
    frame.loc[0, "winner_tie"] = 1
    with pytest.raises(ValueError, match="1 row.*not one 1 and two 0s"):
        Battles(frame)


def test_counts_orient_and_add_up():
    battles = Battles(table())
    counts = battles.counts()
    assert counts.n_battles == 6 and (counts.a < counts.b).all()
    # x beat y three times: rows 0 and 5, and row 1 (y-x, b won: oriented x-y, a won)
    xy = (counts.a == 0) & (counts.b == 1)
    assert dict(zip(counts.outcome[xy], counts.count[xy], strict=True)) == {A_WINS: 3}
    zy = (counts.a == 1) & (counts.b == 2)  # row 4: y beat z
    assert dict(zip(counts.outcome[zy], counts.count[zy], strict=True)) == {A_WINS: 1}
    assert B_WINS not in counts.outcome
    frame = battles.collapsed()
    assert list(frame.columns) == ["model_a", "model_b", "outcome", "count"]
    assert frame["count"].sum() == 6
    np.testing.assert_array_equal(counts.battles_per_model(), [5, 4, 3])
    np.testing.assert_allclose(counts.wins_per_model(), [4.0, 1.0, 1.0])


def test_covariates_are_standardised_and_negated_when_swapped():
    raw = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 9.0])
    battles = Battles(table(length=raw), covariates=["length"])
    z = (raw - raw.mean()) / raw.std()
    np.testing.assert_allclose(battles.X[:, 0], z)
    np.testing.assert_allclose(battles.covariate_scale, [raw.std()])
    counts = battles.counts()
    assert counts.n_rows == 6  # every row distinct once its covariate is kept
    swapped = battles.a > battles.b
    expected = np.sort(np.where(swapped, -z, z))
    np.testing.assert_allclose(np.sort(counts.X[:, 0]), expected)
    assert list(battles.collapsed().columns) == ["model_a", "model_b", "outcome", "length", "count"]


def test_merged_counts_add():
    counts = Battles(table()).counts()
    both = counts.merged(counts)
    assert both.n_rows == counts.n_rows and both.n_battles == 12
    with pytest.raises(ValueError, match="other models"):
        counts.merged(BattleCounts.of(4, [0], [1], [0], None))


def test_judges_and_categories():
    frame = table(judge=["j1", "j2"] * 3, cat=["code", "math", "code", "code", "math", "math"])
    battles = Battles(frame, judge="judge", category="cat")
    assert list(battles.judge_ids) == ["j1", "j2"]
    assert list(battles.categories) == ["code", "math"]
    code = battles.subset("code")
    assert code.n_battles == 3 and code.n_models == 3
    with pytest.raises(ValueError, match="unknown category 'art'"):
        battles.subset("art")
    with pytest.raises(ValueError, match="no category column"):
        Battles(table()).subset("code")


def test_style_covariates():
    frame = pd.DataFrame({"len_a": [10, 0, 3], "len_b": [30, 0, 1]})
    out = style_covariates(frame, ["len"])
    np.testing.assert_allclose(out["len"], [-0.5, 0.0, 0.5])


def test_reads_a_csv_file(tmp_path):
    path = tmp_path / "battles.csv"
    table().to_csv(path, index=False)
    assert Battles(path).n_battles == 6


def same_battles(one: Battles, other: Battles) -> None:
    assert list(one.model_ids) == list(other.model_ids)
    for name in ("a", "b", "outcome", "X"):
        np.testing.assert_array_equal(getattr(one, name), getattr(other, name))


def test_a_csv_file_reads_as_its_table(tmp_path):
    """Read from a file only the columns needed, ids as categories: the same battles as the
    table, with ids such as 0001 kept and other columns (unparsed) ignored."""
    frame = table(length=[1.0, 2, 3, 4, 5, 7], notes=["a,b", "", "x", "y", "z", "w"])
    frame["model_a"] = frame["model_a"].replace({"x": "0001"})
    frame["model_b"] = frame["model_b"].replace({"x": "0001"})
    path = tmp_path / "battles.csv"
    frame.to_csv(path, index=False)
    same_battles(Battles(path, covariates=["length"]), Battles(frame, covariates=["length"]))
    assert "0001" in Battles(path).model_ids


def test_a_csv_file_with_ids_to_normalise_or_loose_names(tmp_path):
    frame = table().rename(columns={"model_a": " Model_A "})
    frame[" Model_A "] = frame[" Model_A "].replace({"x": " x"})
    path = tmp_path / "battles.csv"
    frame.to_csv(path, index=False)
    with pytest.warns(UserWarning):
        read = Battles(path)
    with pytest.warns(UserWarning):
        same_battles(read, Battles(frame))
    assert list(read.model_ids) == ["x", "y", "z"]
    assert any(check.kind != "separator" for check in read.data_checks)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_b": ["y", "x", "z", "x", "z", "x"]}, r"playing itself \(first at line 7"),
        ({"winner": ["model_a", "left", "tie", "tie", "tie", "tie"]}, r"first at line 3"),
        ({"model_a": ["x", "y", "x", " ", "y", "x"]}, r"only spaces \(line\(s\) \[5\]\)"),
    ],
)
def test_a_csv_file_names_lines_in_messages(tmp_path, change, message):
    path = tmp_path / "battles.csv"
    table(**change).to_csv(path, index=False)
    with pytest.raises(ValueError, match=message):
        Battles(path)


def test_read_table_reads_only_the_columns_asked_for_when_all_are_there(tmp_path):
    from crowdbayes.data.io import read_table

    path = tmp_path / "battles.csv"
    table(length=[1.0] * 6).to_csv(path, index=False)
    read = read_table(path, what="t", columns=["MODEL_A", "winner"], categorical=True)
    assert list(read.columns) == ["model_a", "winner"]
    every = read_table(path, what="t", columns=["model_a", "judge"])  # judge is not there
    assert list(every.columns) == ["model_a", "model_b", "winner", "length"]
    ids = read_table(path, what="t", id_columns=["model_a"], categorical=True)
    assert isinstance(ids["model_a"].dtype, pd.CategoricalDtype)


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("frame", "kwargs", "message"),
    [
        (table().assign(winner=["a", "model_b", "x", "tie", "tie", "tie"]), {}, r"2 winner value"),
        (table().assign(model_b=["y", "y", "z", "x", "z", "y"]), {}, r"1 battle.*playing itself"),
        (table(), {"covariates": ["length"]}, r"covariate column.*'length'.*missing"),
        (
            table(length=[1.0, np.nan, 2, 3, 4, 5]),
            {"covariates": ["length"]},
            r"covariate 'length' has 1 missing",
        ),
        (table(length=[1.0] * 6), {"covariates": ["length"]}, r"constant"),
        (table().drop(columns="winner"), {}, r"column 'winner' is missing"),
        (table().iloc[:0], {}, r"empty|no rows"),
    ],
)
def test_bad_input_is_one_line(frame, kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        Battles(frame, **kwargs)
    assert "\n" not in str(err.value)


def test_a_single_model_is_refused():
    frame = pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["tie"]})
    assert Battles(frame).n_models == 2
    frame = pd.DataFrame({"model_a": ["x", "x"], "model_b": ["x", "x"], "winner": ["tie"] * 2})
    with pytest.raises(ValueError, match="playing itself"):
        Battles(frame)


def test_categorical_columns_of_a_table_count_only_the_values_used():
    frame = table()
    for column in ("model_a", "winner"):
        values = frame[column].unique().tolist()
        frame[column] = pd.Categorical(frame[column], categories=[*values, "left", "w"])
    battles = Battles(frame)
    assert list(battles.model_ids) == ["x", "y", "z"]
    same_battles(battles, Battles(table()))


def test_a_csv_line_with_too_many_fields(tmp_path):
    """Refused when every column is read (a column is missing: the message lists them all);
    when only the columns needed are read, pandas does not see the extra field."""
    path = tmp_path / "battles.csv"
    path.write_text("model_a,model_b,winner,x\nx,y,tie,1\nx,y,tie,1,5\ny,x,model_a,2\n")
    with pytest.raises(ValueError, match=r"cannot be read as CSV: .*Expected 4 fields in line 3"):
        Battles(path, covariates=["length"])
    assert Battles(path).n_battles == 3
