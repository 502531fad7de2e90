"""Agreement statistics: published worked examples, naive references, the reference packages
(``krippendorff``, statsmodels' ``fleiss_kappa``, scikit-learn's ``cohen_kappa_score``) on the
shared label sets, and the bootstrap over tasks."""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from crowdbayes import Labels
from crowdbayes.metrics import (
    agreement_table,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    worker_agreement,
)
from crowdbayes.metrics.agreement import _alpha_per_unit, _bootstrap
from label_sets import ALL_SETS

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers,
# 12 units, values 1-5, missing values (None); α = 0.743 nominal, 0.815 ordinal, 0.849
# interval, 0.797 ratio (as given there and reproduced by the krippendorff package's doctests).
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def long_format(matrix) -> pd.DataFrame:
    """Coders × units reliability data (None = missing) as a long ``task, worker, label``."""
    rows = [
        (f"u{unit}", f"c{coder}", value)
        for coder, values in enumerate(matrix)
        for unit, value in enumerate(values)
        if value is not None and not (isinstance(value, float) and np.isnan(value))
    ]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def reliability_matrix(labels: Labels) -> np.ndarray:
    """Workers × tasks label codes (NaN where missing); one label per worker and task."""
    matrix = np.full((labels.n_workers, labels.n_tasks), np.nan)
    matrix[labels.worker_codes, labels.task_codes] = labels.label_codes
    return matrix


def test_krippendorff_2011_worked_example():
    labels = Labels(long_format(KRIPPENDORFF_2011))
    expected = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}
    for level, value in expected.items():
        assert krippendorff_alpha(labels, level) == pytest.approx(value, abs=5e-4), level


def test_alpha_equals_the_package_with_missing_values_and_a_naive_pair_count():
    rng = np.random.default_rng(3)
    matrix = rng.integers(1, 5, size=(6, 40)).astype(float)
    matrix[rng.random(matrix.shape) < 0.4] = np.nan
    labels = Labels(long_format(matrix.tolist()))
    for level in ("nominal", "ordinal", "interval", "ratio"):
        reference = krippendorff.alpha(
            reliability_data=matrix, value_domain=[1.0, 2.0, 3.0, 4.0], level_of_measurement=level
        )
        assert krippendorff_alpha(labels, level) == pytest.approx(reference, abs=1e-12)
    # nominal α from its definition by a double loop over the pairable values of each unit:
    # D_o counts disagreeing ordered pairs within units (weight 1/(m_u − 1)), D_e over all
    observed, values = 0.0, []
    for unit in matrix.T:
        present = unit[~np.isnan(unit)]
        if len(present) < 2:
            continue
        values.extend(present)
        pairs = [(a, b) for i, a in enumerate(present) for j, b in enumerate(present) if i != j]
        observed += sum(a != b for a, b in pairs) / (len(present) - 1)
    values = np.array(values)
    n = len(values)
    expected = sum(a != b for a, b in itertools.permutations(values, 2)) / (n - 1)
    assert krippendorff_alpha(labels) == pytest.approx(1 - observed / expected, abs=1e-12)


def naive_fleiss(labels: Labels) -> float:
    """Fleiss' κ by a loop over tasks, each task's agreement with its own number of labels."""
    counts = labels.vote_counts().T
    per_task, totals = [], np.zeros(labels.n_classes)
    for row in counts:
        m = row.sum()
        if m < 2:
            continue
        per_task.append(sum(n * (n - 1) for n in row) / (m * (m - 1)))
        totals += row
    p = totals / totals.sum()
    p_e = float((p**2).sum())
    return (np.mean(per_task) - p_e) / (1 - p_e)


def test_fleiss_with_unequal_label_counts_equals_the_loop_and_statsmodels_when_equal():
    rng = np.random.default_rng(1)
    rows = [
        (f"t{t}", f"w{w}", int(rng.integers(0, 3)))
        for t in range(60)
        for w in rng.choice(12, size=int(rng.integers(1, 7)), replace=False)
    ]
    labels = Labels(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    assert fleiss_kappa(labels) == pytest.approx(naive_fleiss(labels), abs=1e-12)
    equal = Labels(long_format(rng.integers(0, 3, size=(5, 30)).tolist()))
    reference = statsmodels_fleiss(equal.vote_counts().T)
    assert fleiss_kappa(equal) == pytest.approx(reference, abs=1e-12)


def test_cohen_kappa_of_every_pair_equals_scikit_learn():
    rng = np.random.default_rng(2)
    matrix = rng.integers(0, 3, size=(4, 50)).astype(float)
    matrix[rng.random(matrix.shape) < 0.3] = np.nan
    labels = Labels(long_format(matrix.tolist()))
    pairs = cohen_kappa(labels, min_common=5)
    assert len(pairs) == 6
    for row in pairs.itertuples():
        a, b = (int(str(w)[1:]) for w in (row.worker_a, row.worker_b))
        both = ~np.isnan(matrix[a]) & ~np.isnan(matrix[b])
        assert row.n_common == both.sum()
        assert row.kappa == pytest.approx(cohen_kappa_score(matrix[a, both], matrix[b, both]))
        assert row.agreement == pytest.approx(np.mean(matrix[a, both] == matrix[b, both]))
    assert pairs["kappa"].is_monotonic_increasing
    assert len(cohen_kappa(labels, min_common=1000)) == 0


def naive_worker_agreement(table: pd.DataFrame) -> pd.Series:
    """Each worker's share of labels equal to the majority of the task's other labels (a tie
    between t classes counts 1/t for each of them)."""
    scores: dict = {}
    for _, group in table.groupby("task"):
        for i, row in group.iterrows():
            others = group.drop(index=i)["label"].value_counts()
            if others.empty:
                continue
            modes = others[others == others.max()].index
            share = 1 / len(modes) if row["label"] in modes else 0.0
            scores.setdefault(row["worker"], []).append(share)
    return pd.Series({worker: np.mean(values) for worker, values in scores.items()})


def test_worker_agreement_with_the_leave_one_out_majority_and_a_given_consensus():
    rng = np.random.default_rng(4)
    rows = [
        (f"t{t}", f"w{w}", "ab"[int(rng.random() < 0.3 + 0.1 * w)])
        for t in range(40)
        for w in rng.choice(6, size=int(rng.integers(1, 5)), replace=False)
    ]
    table = pd.DataFrame(rows, columns=["task", "worker", "label"])
    labels = Labels(table)
    result = worker_agreement(labels)
    expected = naive_worker_agreement(table)
    assert result["agreement"].reindex(expected.index).to_numpy() == pytest.approx(
        expected.to_numpy()
    )
    assert result["agreement"].is_monotonic_increasing
    consensus = pd.Series("a", index=[f"t{t}" for t in range(20)])  # half the tasks
    given = worker_agreement(labels, consensus)
    seen = table[table["task"].isin(consensus.index)]
    share = (seen["label"] == "a").groupby(seen["worker"]).mean()
    assert given["agreement"].reindex(share.index).to_numpy() == pytest.approx(share.to_numpy())
    # κ against a constant consensus is 0 (p_o equals p_e)
    assert np.allclose(given["kappa"].dropna(), 0.0)


def test_bootstrap_replicate_is_the_statistic_of_the_resampled_tasks():
    """One replicate of the weighted-sum bootstrap equals α recomputed from a table in which
    the drawn tasks appear as often as they were drawn (each copy a new task)."""
    rng = np.random.default_rng(5)
    matrix = rng.integers(0, 3, size=(5, 30)).astype(float)
    matrix[rng.random(matrix.shape) < 0.3] = np.nan
    table = long_format(matrix.tolist())
    labels = Labels(table)
    per_unit, finish = _alpha_per_unit(labels, "ordinal")
    replicate = _bootstrap(per_unit, finish, 1, np.random.default_rng(9))[0]
    counts = labels.vote_counts().T
    pairable = labels.tasks[counts.sum(axis=1) >= 2]
    drawn = pairable[
        np.random.default_rng(9).integers(0, len(pairable), size=(1, len(pairable)))[0]
    ]
    copies = [
        table[table["task"] == task].assign(task=f"{task}#{k}") for k, task in enumerate(drawn)
    ]
    resampled = Labels(pd.concat(copies), classes=list(labels.classes))
    assert replicate == pytest.approx(krippendorff_alpha(resampled, "ordinal"), abs=1e-12)


def test_agreement_table_intervals_and_errors():
    rng = np.random.default_rng(6)
    table = long_format(rng.integers(0, 2, size=(8, 60)).tolist())
    result = agreement_table(table, n_boot=200, random_state=0, min_common=5)
    assert list(result.columns) == ["estimate", "lower", "upper", "units", "note"]
    assert (result["lower"] <= result["estimate"]).all()
    assert (result["estimate"] <= result["upper"]).all()
    again = agreement_table(table, n_boot=200, random_state=0, min_common=5)
    pd.testing.assert_frame_equal(result, again)
    plain = agreement_table(table, n_boot=0)
    assert plain["lower"].isna().all() and np.allclose(plain["estimate"], result["estimate"])
    with pytest.raises(ValueError, match="level must be one of nominal, ordinal, interval"):
        krippendorff_alpha(table, "cardinal")
    with pytest.raises(ValueError, match="level 'interval' needs numeric classes"):
        krippendorff_alpha(table.assign(label=table["label"].map({0: "no", 1: "yes"})), "interval")
    with pytest.raises(ValueError, match="no task has labels from two or more workers"):
        fleiss_kappa(pd.DataFrame({"task": [1, 2], "worker": ["a", "b"], "label": [0, 1]}))
    with pytest.raises(ValueError, match="n_boot must be a non-negative integer"):
        agreement_table(table, n_boot=-1)
    with pytest.raises(ValueError, match=r"consensus: 1 task\(s\) have a class outside \[0, 1\]"):
        worker_agreement(table, pd.Series({"u0": 7}))


# ------------------------------------------------------------------------------ real data
def shared(data_root, name: str) -> Labels:
    from crowdbayes.datasets import load_labels

    return load_labels(name).to_labels()


@pytest.mark.parametrize("name", ALL_SETS)
def test_alpha_equals_krippendorff_package_on_shared_sets(data_root, name):
    """Nominal α on every shared set (value counts: repeated labels of a worker on a task
    count as values of the unit, as in the coincidence matrix); the numeric levels on the
    sets with numeric classes; and from the coders × units matrix on sets where each worker
    labels a task once."""
    labels = shared(data_root, name)
    counts = labels.vote_counts().T
    reference = krippendorff.alpha(value_counts=counts, level_of_measurement="nominal")
    assert abs(krippendorff_alpha(labels) - reference) <= 1e-9
    numeric = pd.to_numeric(pd.Series(list(labels.classes)), errors="coerce")
    if labels.n_classes > 2 and not numeric.isna().any():
        for level in ("ordinal", "interval", "ratio"):
            reference = krippendorff.alpha(
                value_counts=counts, value_domain=numeric.to_numpy(), level_of_measurement=level
            )
            assert abs(krippendorff_alpha(labels, level) - reference) <= 1e-9, level
    pairs = labels.task_codes * labels.n_workers + labels.worker_codes
    if len(np.unique(pairs)) == labels.n_labels and labels.n_workers * labels.n_tasks < 5e6:
        reference = krippendorff.alpha(
            reliability_data=reliability_matrix(labels), level_of_measurement="nominal"
        )
        assert abs(krippendorff_alpha(labels) - reference) <= 1e-9


EQUAL_COUNT_SETS = ["bluebird", "d_possent", "d_product", "dog", "rte", "temp", "wsd"]


@pytest.mark.parametrize("name", EQUAL_COUNT_SETS)
def test_fleiss_equals_statsmodels_on_shared_sets(data_root, name):
    """The seven shared sets in which every task has the same number of labels (statsmodels'
    ``fleiss_kappa`` requires it), at 1e-9."""
    labels = shared(data_root, name)
    counts = labels.vote_counts().T
    assert len(np.unique(counts.sum(axis=1))) == 1
    assert abs(fleiss_kappa(labels) - statsmodels_fleiss(counts)) <= 1e-9


@pytest.mark.parametrize("name", ALL_SETS)
def test_bootstrap_intervals_cover_the_estimate_on_shared_sets(data_root, name):
    table = agreement_table(shared(data_root, name), n_boot=200, random_state=0)
    bounded = table[table["lower"].notna()]
    assert len(bounded) >= 3, table
    assert (bounded["lower"] <= bounded["estimate"]).all(), table
    assert (bounded["estimate"] <= bounded["upper"]).all(), table


def test_pairwise_cohen_and_worker_agreement_on_rte(data_root):
    labels = shared(data_root, "rte")
    table = labels.to_frame()
    pairs = cohen_kappa(labels, min_common=10)
    assert len(pairs) > 100
    for row in pairs.iloc[[0, len(pairs) // 2, -1]].itertuples():
        a = table[table["worker"] == row.worker_a].set_index("task")["label"]
        b = table[table["worker"] == row.worker_b].set_index("task")["label"]
        common = a.index.intersection(b.index)
        assert row.n_common == len(common)
        assert row.kappa == pytest.approx(cohen_kappa_score(a[common], b[common]))
    summary = agreement_table(labels, n_boot=300, random_state=0)
    mean_kappa = summary.filter(like="Cohen", axis=0).iloc[0]
    assert mean_kappa["estimate"] == pytest.approx(pairs["kappa"].mean())
    assert mean_kappa["lower"] <= mean_kappa["estimate"] <= mean_kappa["upper"]
    workers = worker_agreement(labels, n_boot=200, random_state=0)
    assert len(workers) == labels.n_workers
    for name in ("agreement", "kappa"):
        finite = workers[workers[f"{name}_lower"].notna()]
        assert len(finite) > 0.9 * len(workers)
        assert (finite[f"{name}_lower"] <= finite[name]).all()
        assert (finite[name] <= finite[f"{name}_upper"]).all()
