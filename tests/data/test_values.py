"""The Values container: numeric answers validated once, errors that name column and rows."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes.data import Values, as_values


def table(values=(1.5, 2.0, 3.25, 4.0)):
    return pd.DataFrame(
        {"task": ["a", "a", "b", "b"], "worker": ["x", "y", "x", "y"], "value": list(values)}
    )


def test_encodes_ids_and_values():
    values = Values(table())
    assert list(values.tasks) == ["a", "b"] and list(values.workers) == ["x", "y"]
    np.testing.assert_array_equal(values.values, [1.5, 2.0, 3.25, 4.0])
    assert values.n_values == 4 and values.values.dtype == np.float64
    pd.testing.assert_frame_equal(values.to_frame(), table())
    assert "4 values, 2 tasks, 2 workers" in repr(values)


def test_numbers_as_text_are_read_and_other_text_is_refused_by_row():
    assert Values(table(["1", "2.5", "3e2", "-4"])).values.tolist() == [1, 2.5, 300, -4]
    with pytest.raises(
        ValueError,
        match=r"values: column 'value' has 2 value\(s\) that are not numbers "
        r"\(row\(s\) \[1, 3\]: \['abc', 'n/a!'\]\)",
    ):
        Values(table(["1", "abc", "3", "n/a!"]))


def test_missing_infinite_and_boolean_values_are_refused():
    with pytest.raises(
        ValueError, match=r"column 'value' has 1 missing value\(s\) \(row\(s\) \[2\]"
    ):
        Values(table([1.0, 2.0, np.nan, 3.0]))
    with pytest.raises(
        ValueError, match=r"column 'value' has 1 infinite value\(s\) \(row\(s\) \[0\]"
    ):
        Values(table([np.inf, 2.0, 1.0, 3.0]))
    with pytest.raises(ValueError, match="column 'value' holds True/False, not numbers"):
        Values(table([True, False, True, True]))


def test_columns_empty_tables_and_duplicates():
    with pytest.raises(ValueError, match=r"values: column 'score' is missing; got \['task'"):
        Values(table(), value="score")
    with pytest.raises(ValueError, match=r"values: the table is empty \(0 rows\)"):
        Values(table().iloc[:0])
    repeated = pd.concat([table(), table().iloc[:1]])
    with pytest.raises(ValueError, match="values: 1 row.* repeat a task–worker pair"):
        Values(repeated, duplicates="error")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert Values(repeated, duplicates="drop").n_values == 4


def test_as_values_refuses_class_labels():
    from crowdbayes import Labels

    labels = Labels(table().rename(columns={"value": "label"}))
    with pytest.raises(TypeError, match=r"expected continuous answers .*got Labels \(class labels"):
        as_values(labels)


def test_csv_path(tmp_path):
    path = tmp_path / "v.csv"
    table().to_csv(path, index=False)
    assert Values(str(path)).n_tasks == 2
