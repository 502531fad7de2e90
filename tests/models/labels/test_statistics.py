"""The sufficient-statistics interface: statistics add over task partitions, and a fit mapped over
partitions (pure numpy, no Dask) equals the in-memory fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes import BayesianDawidSkene, DawidSkene, Labels, MajorityVote
from crowdbayes.datasets import simulate_labels
from crowdbayes.inference.statistics import add_stats, iterate_statistics

MODELS = {
    "mv": lambda: MajorityVote(ties="first"),
    "ds": lambda: DawidSkene(),
    "ds-one-coin": lambda: DawidSkene(one_coin=True),
    "bayes-ds": lambda: BayesianDawidSkene(),
}


def labels_with_gold(k: int, seed: int = 0) -> Labels:
    data = simulate_labels(60, 8, 3, k, accuracy_mean=0.7, random_state=seed)
    gold = data.truth.iloc[::7]
    return data.to_labels(gold=gold)


def assert_stats_close(left: dict, right: dict) -> None:
    assert left.keys() == right.keys()
    for key in left:
        np.testing.assert_allclose(left[key], right[key], rtol=1e-12, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("k", [2, 3])
def test_local_stats_add_over_task_partitions(name, k):
    labels = labels_with_gold(k, seed=k)
    model = MODELS[name]().fit(labels)
    globals_ = model.globals_ if model.iterative else model.start_globals()
    whole_tasks: dict = {}
    whole = model.local_stats(labels, globals_, whole_tasks)
    parts, probas = [], np.zeros((k, labels.n_tasks))
    for positions, block in labels.task_blocks(4):
        tasks: dict = {}
        parts.append(model.local_stats(block, globals_, tasks))
        probas[:, positions] = tasks["probas"]
    assert_stats_close(add_stats(*parts), whole)
    np.testing.assert_allclose(probas, whole_tasks["probas"], rtol=0, atol=1e-14)
    if model.iterative:
        initial = [model.initial_stats(block) for _, block in labels.task_blocks(3)]
        assert_stats_close(add_stats(*initial), model.initial_stats(labels))


@pytest.mark.parametrize("name", list(MODELS))
def test_fit_mapped_over_partitions_equals_in_memory_fit(name):
    labels = labels_with_gold(3, seed=5)
    reference = MODELS[name]().fit(labels)
    model = MODELS[name]()
    blocks = labels.task_blocks(5)
    probas = np.zeros((3, labels.n_tasks))

    def pass_stats(globals_):
        parts = []
        for index, (positions, block) in enumerate(blocks):
            tasks: dict = {}
            parts.append(model.local_stats(block, model.partition_globals(globals_, index), tasks))
            probas[:, positions] = tasks["probas"]
        return add_stats(*parts)

    fit = iterate_statistics(
        model,
        initial=lambda: add_stats(*(model.initial_stats(b) for _, b in blocks)),
        pass_stats=pass_stats,
    )
    assert fit.n_iter == reference.n_iter_
    np.testing.assert_allclose(probas.T, reference.probas_.to_numpy(), rtol=0, atol=1e-10)
    model._set_fit(fit, labels)
    pd.testing.assert_frame_equal(model.confusion_, reference.confusion_, atol=1e-10)
    pd.testing.assert_series_equal(model.prevalence_, reference.prevalence_, atol=1e-10)
    if model.iterative:
        history = getattr(reference, reference.history_name)
        np.testing.assert_allclose(fit.history, history, rtol=1e-10)


def test_bayesian_elbo_from_statistics_matches_direct_formula():
    """The ELBO written in summed statistics equals its per-task definition."""
    labels = labels_with_gold(3, seed=2)
    model = BayesianDawidSkene(max_iter=3, tol=None).fit(labels)
    before = model.globals_
    tasks: dict = {}
    stats = model.local_stats(labels, before, tasks)
    after = model.global_update(stats)
    resp = tasks["probas"]
    from scipy.special import digamma, gammaln

    def kl(post, prior):
        prior = np.broadcast_to(prior, post.shape)
        log_b = lambda a: gammaln(a).sum(-1) - gammaln(a.sum(-1))  # noqa: E731
        e_log = digamma(post) - digamma(post.sum(-1, keepdims=True))
        return log_b(prior) - log_b(post) + ((post - prior) * e_log).sum(-1)

    e_log_theta = digamma(after["alpha"]) - digamma(after["alpha"].sum(-1, keepdims=True))
    e_log_pi = digamma(after["beta"]) - digamma(after["beta"].sum())
    expected = 0.0
    for i, j, x in zip(labels.task_codes, labels.worker_codes, labels.label_codes, strict=True):
        expected += resp[:, i] @ e_log_theta[j, :, x]
    expected += (resp.sum(axis=1) * e_log_pi).sum()
    positive = resp[resp > 0]
    entropy = -(positive * np.log(positive)).sum()
    alpha_prior, beta_prior = model._priors(3)
    direct = (
        expected + entropy - kl(after["beta"], beta_prior) - kl(after["alpha"], alpha_prior).sum()
    )
    np.testing.assert_allclose(model.objective(stats, before, after), direct, rtol=1e-11)


def test_add_stats_rejects_mismatched_statistics():
    with pytest.raises(ValueError, match="statistics disagree on their keys"):
        add_stats({"a": 1.0}, {"b": 1.0})
    with pytest.raises(ValueError, match="at least one"):
        add_stats()


def test_task_blocks_rejects_bad_counts():
    labels = labels_with_gold(2)
    with pytest.raises(ValueError, match="n_blocks must be between 1 and 60; got 0"):
        labels.task_blocks(0)


def test_random_ties_per_partition_need_an_integer_seed():
    model = MajorityVote(random_state=np.random.default_rng(0))
    with pytest.raises(ValueError, match="needs an integer random_state; got Generator"):
        model.partition_globals(model.start_globals(), 0)
    seeded = MajorityVote(random_state=3)
    first = seeded.partition_globals(seeded.start_globals(), 1)["random_state"].random()
    again = seeded.partition_globals(seeded.start_globals(), 1)["random_state"].random()
    other = seeded.partition_globals(seeded.start_globals(), 2)["random_state"].random()
    assert first == again != other


def test_plackett_luce_vi_statistics_add_over_query_partitions():
    """PlackettLuceVI (Algorithm 1): the statistics of two partitions of the queries add up to
    the whole's, and the loop over partitions reproduces the in-memory fit."""
    from crowdbayes import PlackettLuceVI, Rankings
    from crowdbayes.models.plackett_luce.vi import (
        BoundPartition,
        BoundPrior,
        _Design,
        bound_local_stats,
        iterate_bound,
        make_inner,
    )
    from pl_simulate import simulate_tables

    table, features, _ = simulate_tables(2, n_queries=150, set_size=4, n_ranked=3, n_items=30)
    queries = table["query"].unique()

    def partition(rows: pd.DataFrame) -> BoundPartition:
        rankings = Rankings(rows, features)
        return BoundPartition(_Design.from_rankings(rankings, rankings.X))

    whole = partition(table)
    halves = [partition(table[table["query"].isin(q)]) for q in np.array_split(queries, 2)]
    prior = BoundPrior.of(0.5, features.shape[1])
    inner = make_inner("newton", 1e-10, 200)
    mean, cov = prior.mean + 0.1, prior.cov * 0.8
    whole, whole_stats = whole.step(mean, cov, inner)
    stepped = [half.step(mean, cov, inner) for half in halves]
    assert_stats_close(add_stats(*(stats for _, stats in stepped)), whole_stats)
    np.testing.assert_allclose(
        bound_local_stats(whole.design, whole.bounds)["precision"], whole_stats["precision"]
    )

    # Algorithm 1 over the two partitions: MAXIMIZATION at the prior, then the shared loop
    started = [half.step(prior.mean, prior.cov, inner) for half in halves]
    state = {"parts": [part for part, _ in started]}

    def pass_stats(m, s):
        results = [part.step(m, s, inner) for part in state["parts"]]
        state["parts"] = [part for part, _ in results]
        return add_stats(*(stats for _, stats in results))

    first = add_stats(*(stats for _, stats in started))
    mean2, cov2, history, run = iterate_bound(first, pass_stats, prior, tol=1e-8, max_iter=500)
    reference = PlackettLuceVI(eta=0.5, tol=1e-8, max_iter=500, accelerate=False, centre=False).fit(
        Rankings(table, features)
    )
    assert run.n_iter == reference.n_iter_
    np.testing.assert_allclose(mean2, reference.coef_.to_numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(cov2, reference.coef_cov_.to_numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(history, reference.bound_history_, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::crowdbayes.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("model", [DawidSkene, BayesianDawidSkene])
def test_fit_keeps_only_the_last_posteriors(model, monkeypatch):
    """With tol None every pass but the last runs without a tasks dict (no posteriors)."""
    labels = simulate_labels(200, 15, 4, n_classes=3, random_state=0).to_labels()
    seen = []
    local_stats = model.local_stats

    def spy(self, block, globals_, tasks=None):
        seen.append(tasks is not None)
        return local_stats(self, block, globals_, tasks)

    monkeypatch.setattr(model, "local_stats", spy)
    model(max_iter=6, tol=None).fit(labels)
    assert seen == [False] * 5 + [True]
    seen.clear()
    model(max_iter=6).fit(labels)  # a tolerance: any pass may be the last
    assert all(seen)
