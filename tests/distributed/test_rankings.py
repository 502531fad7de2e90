"""PlackettLuceVI (Algorithm 1) on a real LocalCluster (2 worker processes on loopback): the same
posterior as in memory, rankings kept whole per partition."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from crowdbayes import PlackettLuceVI, Rankings  # noqa: E402
from crowdbayes.distributed import fit_rankings_distributed  # noqa: E402
from pl_simulate import simulate_tables  # noqa: E402


@pytest.fixture(scope="module")
def data():
    # sets of 4 ranked top-3: top-queries over 4, 3 and 2 items (Bouchard sets and JJ pairs)
    table, features, _ = simulate_tables(5, n_queries=240, set_size=4, n_ranked=3, n_items=40)
    return table, features


def model(tol: float | None = None) -> PlackettLuceVI:
    # tol=None: exactly max_iter iterations of both, the same iterates
    return PlackettLuceVI(eta=0.7, tol=tol, max_iter=25 if tol is None else 1000)


@pytest.fixture(scope="module")
def reference(data):
    table, features = data
    return model().fit(Rankings(table, features))


def assert_same_posterior(fitted, reference) -> None:
    assert fitted.n_iter_ == reference.n_iter_
    np.testing.assert_allclose(fitted.coef_, reference.coef_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(fitted.coef_cov_, reference.coef_cov_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(fitted.bound_history_, reference.bound_history_, rtol=1e-10)
    assert list(fitted.coef_.index) == list(reference.coef_.index)


def test_shuffled_by_query_equals_in_memory(client, data, reference):
    table, features = data
    rows = table.sample(frac=1.0, random_state=0)  # a query's rows scattered over partitions
    frame = dd.from_pandas(rows, npartitions=4, sort=False)
    passes = []
    fitted = fit_rankings_distributed(
        model(), frame, features, client=client, on_pass=lambda i, s: passes.append((i, s))
    )
    assert_same_posterior(fitted, reference)
    # one pass at the prior, then at least one per iteration (three per SQUAREM cycle)
    assert [i for i, _ in passes] == list(range(1, len(passes) + 1))
    assert len(passes) >= fitted.n_iter_ + 1
    assert all(s >= 0 for _, s in passes)
    # the fitted model predicts like the in-memory one
    pd.testing.assert_frame_equal(fitted.score(features), reference.score(features), atol=1e-8)


def test_grouped_parquet_files_equal_in_memory_to_convergence(client, data, tmp_path):
    table, features = data
    for i, queries in enumerate(np.array_split(table["query"].unique(), 3)):
        table[table["query"].isin(queries)].to_parquet(tmp_path / f"part-{i}.parquet")
    fitted = fit_rankings_distributed(model(1e-3), tmp_path, features, client=client, grouped=True)
    reference = model(1e-3).fit(Rankings(table, features))
    assert reference.converged_ and fitted.converged_
    assert_same_posterior(fitted, reference)


def test_grouped_promise_with_a_split_query_is_refused(client, data):
    table, features = data
    moved = pd.concat([table.iloc[1:], table.iloc[:1]])  # query 0 in the first and last part
    frame = dd.from_pandas(moved, npartitions=3, sort=False)
    with pytest.raises(ValueError, match=r"rankings: grouped=True .* query\(s\) have rankings in"):
        fit_rankings_distributed(model(), frame, features, client=client, grouped=True)


def test_unsupported_settings_are_refused(client, data):
    table, features = data
    frame = dd.from_pandas(table, npartitions=2)
    with pytest.raises(ValueError, match="only method='bound'"):
        fit_rankings_distributed(PlackettLuceVI(method="gaussian"), frame, features, client=client)
    with pytest.raises(ValueError, match="numeric eta"):
        fit_rankings_distributed(PlackettLuceVI(eta="auto"), frame, features, client=client)
    with pytest.raises(TypeError, match="Dask DataFrame or a Parquet"):
        fit_rankings_distributed(model(), table, features, client=client)


def test_bad_partition_is_named(client, data):
    table, features = data
    bad = table.copy()
    last = bad["query"] == bad["query"].iloc[-1]
    bad.loc[last, "item"] = 10_000 + np.arange(last.sum())  # items without features
    frame = dd.from_pandas(bad, npartitions=2, sort=False)
    with pytest.raises(ValueError, match=r"partition \d: .*no row in the feature table"):
        fit_rankings_distributed(model(), frame, features, client=client)


def test_frame_indexed_by_query_is_grouped(client, data):
    table, features = data
    frame = dd.from_pandas(table, npartitions=3).set_index("query")  # sorted divisions
    quick = dict(eta=0.7, tol=None, max_iter=3)
    fitted = fit_rankings_distributed(
        PlackettLuceVI(**quick), frame, features, client=client, grouped=True
    )
    reference = PlackettLuceVI(**quick).fit(Rankings(table, features))
    assert_same_posterior(fitted, reference)
