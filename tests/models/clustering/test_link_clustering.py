"""LinkClustering: the ELBO against enumeration, its monotonicity, recovery and determinism."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy import integrate, stats
from scipy.special import betaln, gammaln, logsumexp

from crowdbayes.data.links import Links
from crowdbayes.datasets.clustering import simulate_pair_links
from crowdbayes.exceptions import NotFittedError
from crowdbayes.metrics.clustering import unsupervised_accuracy
from crowdbayes.models.clustering import LinkClustering
from crowdbayes.models.clustering._contraction import (
    additive_contraction,
    component_weights,
    conflict_colouring,
)
from crowdbayes.models.clustering.link_graph import LinkGraph, greedy_colouring
from crowdbayes.models.clustering.link_vb import link_model_elbo
from set_partitions import set_partitions

# A tiny problem: 4 items in two pairs {0, 1}, {2, 3}; two workers, one of them noisy.
TINY = pd.DataFrame(
    {
        "worker": [0, 0, 0, 0, 0, 0, 1, 1, 1],
        "left": [0, 2, 0, 1, 0, 1, 0, 1, 0],
        "right": [1, 3, 2, 3, 3, 2, 1, 2, 3],
        "label": [1, 1, 0, 0, 0, 0, 1, 1, 0],
    }
)
PRIOR_PI = np.array([0.7, 0.7])
PRIOR_A, PRIOR_B = np.array([2.0, 1.0]), np.array([1.5, 1.0])


def expect(f, a, b):
    return integrate.quad(lambda x: f(x) * stats.beta.pdf(x, a, b), 0, 1, limit=200)[0]


def elbo_by_enumeration(resp, prevalence, alpha, beta) -> float:
    """E_q[log p(L, z, π, α, β)] + H[q], summing q(z) over all K^n assignments and
    integrating the Beta/Dirichlet expectations numerically."""
    n, k = resp.shape
    # E log π_k from the Beta marginals of the Dirichlet
    e_log_pi = np.array(
        [expect(np.log, prevalence[j], prevalence.sum() - prevalence[j]) for j in range(k)]
    )
    e = {
        (m, name): expect(f, *params[m])
        for m in range(2)
        for name, f, params in (
            ("la", np.log, alpha),
            ("l1a", lambda x: np.log1p(-x), alpha),
            ("lb", np.log, beta),
            ("l1b", lambda x: np.log1p(-x), beta),
        )
    }
    total = 0.0
    for z in itertools.product(range(k), repeat=n):
        qz = np.prod(resp[np.arange(n), z])
        value = sum(e_log_pi[z[i]] for i in range(n))
        for m, i, j, label in TINY.itertuples(index=False):
            if z[i] == z[j]:
                value += e[(m, "la")] if label else e[(m, "l1a")]
            else:
                value += e[(m, "l1b")] if label else e[(m, "lb")]
        total += qz * value
    entropy_z = -np.sum(resp * np.log(resp))
    # E log p(π) + H[q(π)], E log p(α) + H[q(α)], ...
    prior_pi = gammaln(PRIOR_PI.sum()) - gammaln(PRIOR_PI).sum() + (PRIOR_PI - 1) @ e_log_pi
    total += prior_pi + stats.dirichlet(prevalence).entropy() + entropy_z
    for m in range(2):
        total += (
            (PRIOR_A[0] - 1) * e[(m, "la")] + (PRIOR_A[1] - 1) * e[(m, "l1a")] - betaln(*PRIOR_A)
        )
        total += (
            (PRIOR_B[0] - 1) * e[(m, "lb")] + (PRIOR_B[1] - 1) * e[(m, "l1b")] - betaln(*PRIOR_B)
        )
        total += stats.beta(*alpha[m]).entropy() + stats.beta(*beta[m]).entropy()
    return total


def log_evidence_by_enumeration(k: int) -> tuple[float, np.ndarray]:
    """Exact log p(L) (π, α, β integrated out analytically, z summed) and the exact posterior
    probability that each pair of items shares a cluster."""
    n = 4
    logs, same = [], []
    for z in itertools.product(range(k), repeat=n):
        z = np.array(z)
        counts = np.bincount(z, minlength=k)
        log_p = (
            gammaln(PRIOR_PI.sum())
            - gammaln(PRIOR_PI.sum() + n)
            + (gammaln(PRIOR_PI + counts) - gammaln(PRIOR_PI)).sum()
        )
        for m in range(2):
            rows = TINY[TINY.worker == m]
            s = z[rows.left] == z[rows.right]
            lab = rows.label.to_numpy()
            n11, n10 = np.sum(s & (lab == 1)), np.sum(s & (lab == 0))
            n00, n01 = np.sum(~s & (lab == 0)), np.sum(~s & (lab == 1))
            log_p += betaln(PRIOR_A[0] + n11, PRIOR_A[1] + n10) - betaln(*PRIOR_A)
            log_p += betaln(PRIOR_B[0] + n00, PRIOR_B[1] + n01) - betaln(*PRIOR_B)
        logs.append(log_p)
        same.append(z[:, None] == z[None, :])
    logs = np.array(logs)
    post = np.exp(logs - logsumexp(logs))
    return float(logsumexp(logs)), np.tensordot(post, np.array(same, dtype=float), axes=1)


def tiny_model(**kwargs) -> LinkClustering:
    params = dict(
        prior_prevalence=0.7, prior_alpha=(2.0, 1.0), prior_beta=(1.5, 1.0), random_state=0
    )
    params.update(kwargs)
    return LinkClustering(2, **params)


def test_elbo_formula_matches_enumeration():
    rng = np.random.default_rng(0)
    resp = rng.dirichlet(np.ones(2), size=4)
    prevalence = np.array([1.3, 2.9])
    alpha = np.array([[3.0, 1.2], [1.1, 2.0]])
    beta = np.array([[2.5, 0.8], [4.0, 3.0]])
    ours = link_model_elbo(
        resp,
        prevalence,
        alpha,
        beta,
        TINY.left.to_numpy(),
        TINY.right.to_numpy(),
        TINY.worker.to_numpy(),
        TINY.label.to_numpy(),
        PRIOR_PI,
        PRIOR_A,
        PRIOR_B,
    )
    assert ours == pytest.approx(elbo_by_enumeration(resp, prevalence, alpha, beta), rel=1e-6)


def test_fitted_elbo_bounds_the_exact_evidence_and_finds_the_posterior_mode():
    model = tiny_model(n_init=3, tol=1e-12, max_iter=500).fit(TINY)
    log_evidence, same = log_evidence_by_enumeration(2)
    assert model.elbo_ <= log_evidence + 1e-9
    # mean field covers one of the K! = 2 label-swapped modes (log 2) and loses the
    # dependence between z, α and β on so few links: the gap measured here is 1.27 nats
    assert log_evidence - model.elbo_ < np.log(2) + 1.5
    probas = model.probas_.loc[[0, 1, 2, 3]].to_numpy()
    vb_same = probas @ probas.T
    off = ~np.eye(4, dtype=bool)
    clear = off & (np.abs(same - 0.5) > 0.1)
    assert clear.sum() >= 8
    assert np.all((vb_same[clear] > 0.5) == (same[clear] > 0.5))
    assert model.assignments_[0] == model.assignments_[1] != model.assignments_[2]


def test_the_reported_elbo_is_the_formula_at_the_fit():
    model = tiny_model(n_init=1).fit(TINY)
    assert np.isfinite(model.elbo_) and model.elbo_ == model.elbo_history_[-1]


def simulated(seed=1):
    truth = pd.Series(np.repeat(np.arange(3), 20), index=[f"i{j}" for j in range(60)])
    alpha = np.array([0.95, 0.9, 0.85, 0.8, 0.7, 0.95, 0.9, 0.6])
    beta = np.array([0.95, 0.85, 0.9, 0.8, 0.9, 0.7, 0.95, 0.9])
    sim = simulate_pair_links(
        truth, n_workers=8, pairs_per_worker=300, alpha=alpha, beta=beta, random_state=seed
    )
    return sim


def test_elbo_never_decreases_from_a_poor_start():
    sim = simulated()
    links = sim.to_links()
    model = LinkClustering(5, tol=None, max_iter=40)
    graph, order = LinkGraph.build(
        links.n_items,
        links.n_workers,
        links.left_codes,
        links.right_codes,
        links.worker_codes,
        links.labels,
    )
    rng = np.random.default_rng(0)
    # the true clusters with 40% of the items moved at random, then blurred
    start = sim.truth.loc[links.item_ids[order]].to_numpy().copy()
    moved = rng.random(60) < 0.4
    start[moved] = rng.integers(5, size=moved.sum())
    resp = 0.6 * np.eye(5)[start] + 0.4 * rng.dirichlet(np.ones(5), size=60)
    state, run = model._vb(graph, model._priors(), resp)
    history = np.array(run.history)
    assert history.size == 40
    assert np.all(np.diff(history) >= -1e-8 * np.abs(history[1:]))
    assert history[-1] > history[0] + 1.0  # it did climb


def test_recovers_clusters_and_workers():
    sim = simulated()
    model = LinkClustering(3, n_init=3, random_state=0).fit(sim.to_links())
    assert unsupervised_accuracy(sim.truth, model.assignments_) >= 0.98
    workers = model.workers_.loc[range(8)]
    assert np.abs(workers["alpha"] - sim.alpha).mean() < 0.05
    assert np.abs(workers["beta"] - sim.beta).mean() < 0.05
    inside = (workers["alpha_lower"] <= sim.alpha) & (sim.alpha <= workers["alpha_upper"])
    inside_b = (workers["beta_lower"] <= sim.beta) & (sim.beta <= workers["beta_upper"])
    assert inside.sum() + inside_b.sum() >= 12  # 90% intervals: about 14.4 of 16 expected
    assert np.all(np.diff(model.elbo_history_) >= -1e-8 * np.abs(model.elbo_))
    assert model.n_clusters_used_ == 3
    assert list(workers.columns) == [
        "alpha",
        "alpha_sd",
        "alpha_lower",
        "alpha_upper",
        "beta",
        "beta_sd",
        "beta_lower",
        "beta_upper",
        "n_links",
    ]
    assert (workers["n_links"] == 300).all()


def test_extra_clusters_stay_empty_with_a_sparse_prior():
    sim = simulated()
    model = LinkClustering(8, prior_prevalence=0.05, n_init=2, random_state=0)
    model.fit(sim.to_links())
    assert model.n_clusters_used_ == 3
    assert unsupervised_accuracy(sim.truth, model.assignments_) >= 0.98


def test_same_seed_same_result():
    links = simulated(seed=4).to_links()
    first = LinkClustering(3, n_init=2, random_state=7).fit(links)
    second = LinkClustering(3, n_init=2, random_state=7).fit(links)
    pd.testing.assert_frame_equal(first.probas_, second.probas_)
    pd.testing.assert_frame_equal(first.workers_, second.workers_)
    assert first.restart_elbos_ == second.restart_elbos_


def test_only_linked_items_are_assigned():
    obs = np.zeros((6, 2))
    df = pd.DataFrame(
        {"worker": [0, 0, 1], "left": [0, 1, 0], "right": [1, 4, 4], "label": [1, 0, 0]}
    )
    model = LinkClustering(2, n_init=1, random_state=0).fit(Links(df, obs))
    assert list(model.assignments_.index) == [0, 1, 4]
    assert model.probas_.shape == (3, 2)
    np.testing.assert_allclose(model.probas_.sum(axis=1), 1.0)


def test_worker_posterior_all_links_and_a_subset_by_hand():
    model = LinkClustering(
        2, prior_alpha=tuple(PRIOR_A), prior_beta=tuple(PRIOR_B), n_init=2, random_state=0
    ).fit(TINY)
    pairs = model.assignments_
    assert pairs[0] == pairs[1] != pairs[2] == pairs[3]
    assert model.probas_.max(axis=1).min() > 0.99  # q(z) all but hard
    fitted = model.worker_posterior(interval="central")
    np.testing.assert_allclose(fitted[["alpha_a", "alpha_b"]], model.worker_params_.iloc[:, :2])
    for column in ("alpha", "alpha_lower", "alpha_upper", "beta", "beta_lower", "beta_upper"):
        np.testing.assert_allclose(fitted[column], model.workers_[column])
    # worker 1's links: (0, 1) must-link in one cluster; (1, 2) must-link and (0, 3)
    # cannot-link across the two. Every link counts with weight s_ij = r_i·r_j towards α and
    # 1 − s_ij towards β: α ~ Beta(2 + s01 + s12, 1 + s03),
    # β ~ Beta(1.5 + (1 − s03), 1 + (1 − s01) + (1 − s12)); about Beta(3, 1), Beta(2.5, 2)
    r = model.probas_.to_numpy()
    s01, s12, s03 = r[0] @ r[1], r[1] @ r[2], r[0] @ r[3]
    subset = model.worker_posterior(TINY[TINY["worker"] == 1])
    expected = [2 + s01 + s12, 1 + s03, 2.5 - s03, 3 - s01 - s12]
    np.testing.assert_allclose(subset.loc[1, ["alpha_a", "alpha_b", "beta_a", "beta_b"]], expected)
    np.testing.assert_allclose(expected, [3, 1, 2.5, 2], atol=2e-2)
    np.testing.assert_allclose(
        subset.loc[1, ["n_same", "n_different"]], [s01 + s12 + s03, 3 - s01 - s12 - s03]
    )
    # worker 0 has no link in the subset: the prior, nothing counted
    np.testing.assert_allclose(subset.loc[0, ["alpha_a", "alpha_b"]], PRIOR_A)
    assert subset.loc[0, "n_same"] == 0 and subset.loc[0, "n_different"] == 0
    # the density of α rises almost to 1: the HPD interval ends within 1e-3 of 1, the central
    # one well below
    assert subset.loc[1, "alpha_upper"] > 1 - 1e-3
    central = model.worker_posterior(TINY[TINY["worker"] == 1], interval="central")
    assert central.loc[1, "alpha_upper"] < 0.99
    with pytest.raises(ValueError, match="level must be in"):
        model.worker_posterior(level=1.0)
    with pytest.raises(ValueError, match="kind must be one of"):
        model.worker_posterior(interval="equal")
    with pytest.raises(ValueError, match="items were not in the fit"):
        model.worker_posterior(
            pd.DataFrame({"worker": [1], "left": [0], "right": [9], "label": [1]})
        )
    with pytest.raises(ValueError, match="workers were not in the fit"):
        model.worker_posterior(
            pd.DataFrame({"worker": [5], "left": [0], "right": [1], "label": [1]})
        )


def test_colouring_is_proper():
    rng = np.random.default_rng(2)
    left, right = rng.integers(30, size=(2, 200))
    keep = left != right
    colour = greedy_colouring(30, left[keep], right[keep])
    assert np.all(colour[left[keep]] != colour[right[keep]])


def test_additive_contraction_stops_with_no_positive_pair_and_finds_a_planted_optimum():
    """Greedy additive edge contraction: no two components it returns are joined by positive
    weight (its stopping rule), and on a planted problem (three groups, noisy links) its
    partition maximises Σ w [same component] over all 877 partitions of 7 items."""
    rng = np.random.default_rng(0)
    truth = np.array([0, 0, 0, 1, 1, 2, 2])
    left, right = np.triu_indices(7, k=1)
    same = truth[left] == truth[right]
    weights = np.where(same, 2.0, -2.0) + rng.normal(0, 0.5, left.size)
    weights[0] = -0.5  # one noisy cannot-link inside group 0
    component = additive_contraction(7, left, right, weights, rng)
    assert set(component) == set(range(component.max() + 1))
    between = component_weights(
        component, np.r_[left, right], np.r_[right, left], np.r_[weights, weights]
    )
    assert between.nnz == 0 or between.data.max() <= 0

    def objective(labels):
        return float(weights[labels[left] == labels[right]].sum())

    best = -np.inf
    for partition in set_partitions(list(range(7))):
        labels = np.empty(7, dtype=np.int64)
        for b, block in enumerate(partition):
            labels[block] = b
        best = max(best, objective(labels))
    assert objective(component) == pytest.approx(best)
    assert len(set(zip(component, truth, strict=True))) == 3  # the planted groups


def _conflicts(n, i, j):
    rows, cols = np.concatenate([i, j]), np.concatenate([j, i])
    return sp.csr_matrix((-np.ones(rows.size), (rows, cols)), shape=(n, n))


def test_conflict_colouring_is_proper_when_colours_suffice():
    """DSatur colours a bipartite conflict graph properly with 2 colours (Brélaz 1979) and any
    graph with max degree + 1 colours; on an odd cycle with 2 colours it leaves one conflict."""
    rng = np.random.default_rng(3)
    side = rng.integers(2, size=40)
    i, j = np.triu_indices(40, k=1)
    edge = (side[i] != side[j]) & (rng.random(i.size) < 0.2)
    colour = conflict_colouring(_conflicts(40, i[edge], j[edge]), np.ones(40), 2, rng)
    assert np.all(colour[i[edge]] != colour[j[edge]])

    edge = rng.random(i.size) < 0.2
    degree = np.bincount(np.concatenate([i[edge], j[edge]]), minlength=40).max()
    colour = conflict_colouring(_conflicts(40, i[edge], j[edge]), np.ones(40), degree + 1, rng)
    assert np.all(colour[i[edge]] != colour[j[edge]])
    assert colour.min() >= 0 and colour.max() <= degree

    cycle = np.arange(5)
    colour = conflict_colouring(_conflicts(5, cycle, (cycle + 1) % 5), np.ones(5), 2, rng)
    assert np.sum(colour == colour[(cycle + 1) % 5]) == 1


def test_not_fitted_and_bad_parameters():
    with pytest.raises(NotFittedError, match="not fitted yet"):
        LinkClustering().predict()
    with pytest.raises(NotFittedError, match="not fitted yet"):
        LinkClustering().predict_proba()
    for kwargs, message in [
        ({"n_clusters": 0}, r"'n_clusters' must be an integer in \[1, inf.; got 0"),
        ({"n_clusters": 2.5}, "'n_clusters' must be an integer"),
        ({"n_init": 0}, r"'n_init' must be an integer in \[1, inf"),
        ({"prior_alpha": (1.0, 0.0)}, "'prior_alpha' must be two positive numbers"),
        ({"init_accuracy": (1.0, 2.0, 3.0)}, "'init_accuracy' must be two positive numbers"),
        ({"prior_prevalence": -1.0}, r"'prior_prevalence' must be a number in \(0, inf\)"),
        ({"credible_level": 1.5}, r"'credible_level' must be a number in \(0, 1\)"),
        ({"init_smoothing": 1.0}, "'init_smoothing'"),
        ({"tol": -1.0}, r"'tol' must be a number in \[0, inf. or None"),
        ({"random_state": "seed"}, "'random_state'"),
    ]:
        with pytest.raises(ValueError, match=message):
            LinkClustering(**kwargs).fit(TINY)


def test_every_parameter_is_constrained_and_a_refused_value_names_it(check_constraints):
    """The estimator contract: every ``__init__`` parameter has constraints, the defaults pass
    them, and a value outside them is a ValueError naming the parameter."""
    check_constraints(LinkClustering)


def test_clone_repr_and_generator_random_state():
    from crowdbayes.base import clone

    model = LinkClustering(3, n_init=2, random_state=7)
    assert repr(model) == "LinkClustering(n_clusters=3, n_init=2, random_state=7)"
    twin = clone(model)
    assert twin is not model and twin.get_params() == model.get_params()
    links = simulated(seed=4).to_links()
    by_seed = LinkClustering(3, n_init=2, random_state=7).fit(links)
    by_generator = LinkClustering(3, n_init=2, random_state=np.random.default_rng(7)).fit(links)
    pd.testing.assert_frame_equal(by_seed.probas_, by_generator.probas_)


def test_save_and_load_restore_identical_results(tmp_path):
    import crowdbayes

    links = simulated(seed=4).to_links()
    model = LinkClustering(3, n_init=2, random_state=7).fit(links)
    path = tmp_path / "links.npz"
    model.save(path)
    loaded = crowdbayes.load(path)
    assert type(loaded) is LinkClustering
    assert loaded.get_params() == model.get_params()
    pd.testing.assert_frame_equal(loaded.predict_proba(), model.predict_proba())
    pd.testing.assert_series_equal(loaded.predict(), model.assignments_)
    pd.testing.assert_frame_equal(loaded.workers_, model.workers_)
    pd.testing.assert_series_equal(loaded.prevalence_, model.prevalence_)
    assert loaded.elbo_history_ == model.elbo_history_
    assert loaded.restart_elbos_ == model.restart_elbos_
    assert (loaded.elbo_, loaded.n_iter_, loaded.converged_) == (
        model.elbo_,
        model.n_iter_,
        model.converged_,
    )
    assert LinkClustering.load(path).n_clusters_used_ == model.n_clusters_used_
    with pytest.raises(NotFittedError):
        LinkClustering().save(tmp_path / "unfitted.npz")


# ----------------------------------------------------------------------- real MNIST annotations
# (marked slow: real data, and left out of `make test-fast`)
@pytest.fixture(scope="module")
def semicrowd(data_root):
    import warnings

    from crowdbayes.datasets.clustering import load_semicrowd_mnist, task_groupings
    from crowdbayes.exceptions import DataWarning
    from crowdbayes.metrics.clustering import link_worker_accuracy

    crowd = load_semicrowd_mnist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # the one repeated pair, kept
        links = crowd.to_links()
    return (
        crowd,
        links,
        link_worker_accuracy(crowd.links, crowd.digits),
        task_groupings(crowd.links),
    )


def real_data_scores(crowd, measured, groupings, model) -> dict:
    """Pearson correlations of the estimated and measured worker α, β, and the mean NMI of
    the inferred partition and of the worker's own grouping with the true digits per task."""
    from crowdbayes.metrics.clustering import per_task_nmi

    workers = model.workers_.loc[measured.index]
    nmi = per_task_nmi(groupings, crowd.digits, model.assignments_)
    return {
        "alpha_r": np.corrcoef(workers["alpha"], measured["alpha"])[0, 1],
        "beta_r": np.corrcoef(workers["beta"], measured["beta"])[0, 1],
        "raw_nmi": nmi["worker"].mean(),
        "inferred_nmi": nmi["inferred"].mean(),
    }


@pytest.fixture(scope="module")
def truth_fit(semicrowd):
    """VB started at the true digits (a diagnosis, not an estimator: it uses the truth)."""
    crowd, links, _, _ = semicrowd
    return LinkClustering(10, n_init=1, n_polish=0, random_state=0).fit(links, init=crowd.digits)


@pytest.mark.slow
def test_real_annotations_at_the_model_optimum_near_the_truth(semicrowd, truth_fit):
    """Started at the true digits, VB settles where the model puts the truth: there the
    partition within each task beats the workers' own groupings and the specificities track
    the measured ones. Sensitivities do not (next test)."""
    crowd, _, measured, groupings = semicrowd
    scores = real_data_scores(crowd, measured, groupings, truth_fit)
    assert truth_fit.elbo_ == pytest.approx(-7536.1, abs=1.0)
    assert scores["inferred_nmi"] >= scores["raw_nmi"]  # 0.9832 vs 0.9822
    assert scores["beta_r"] >= 0.9  # 0.941
    assert scores["alpha_r"] < 0.5  # 0.213: the limit of links-only inference on these data


@pytest.mark.slow
def test_real_annotations_alpha_is_not_identifiable_from_links(semicrowd, truth_fit):
    """Why α r stays low. With z clamped to the truth the exact Beta posteriors of α track the
    measured α (r = 0.995): the model's α means what was measured. But the measured α is set by
    a few images that one worker put in the wrong group and nobody else saw; VB at the truth
    moves those images to their annotator's group (81 items, 75 seen by one worker only). The
    links are the same under either labelling, and had VB's labelling been the truth the
    measured α would correlate only 0.13 with the actual one; an estimate with r ≥ 0.8 against
    both would force r ≥ 2·0.8² − 1 = 0.28 between them, so any links-only estimator misses
    α r ≥ 0.8 under one of two labellings that give the same links, and the model's posterior
    prefers VB's labelling to the true one."""
    from crowdbayes.annotators.two_coin import two_coin_posterior, two_coin_statistics
    from crowdbayes.metrics.clustering import link_worker_accuracy

    crowd, links, measured, _ = semicrowd
    frame, digits = crowd.links, crowd.digits
    same = digits.loc[frame["left"]].to_numpy() == digits.loc[frame["right"]].to_numpy()
    codes = pd.Index(links.worker_ids).get_indexer(frame["worker"])
    alpha_counts, _ = two_coin_statistics(
        same.astype(float), codes, frame["label"].to_numpy(), links.n_workers
    )
    oracle = two_coin_posterior(np.array([1.0, 1.0]), alpha_counts)
    oracle = pd.Series(oracle[:, 0] / oracle.sum(axis=1), index=links.worker_ids)
    assert np.corrcoef(oracle.loc[measured.index], measured["alpha"])[0, 1] >= 0.99  # 0.995

    assigned = truth_fit.assignments_
    table = pd.crosstab(assigned, digits.loc[assigned.index])
    relabelled = pd.Series(table.idxmax(axis=1).loc[assigned].to_numpy(), index=assigned.index)
    moved = relabelled.index[relabelled != digits.loc[assigned.index]]
    seen = (
        pd.concat(
            [
                frame[["worker", "left"]].set_axis(["worker", "item"], axis=1),
                frame[["worker", "right"]].set_axis(["worker", "item"], axis=1),
            ]
        )
        .groupby("item")["worker"]
        .nunique()
    )
    assert 60 <= moved.size <= 100  # 81
    assert (seen.loc[moved] == 1).mean() >= 0.85  # 75 of 81
    as_if = link_worker_accuracy(frame, relabelled).loc[measured.index]
    assert np.corrcoef(as_if["alpha"], measured["alpha"])[0, 1] < 2 * 0.8**2 - 1  # 0.131
    workers = truth_fit.workers_.loc[measured.index]
    assert np.corrcoef(workers["alpha"], as_if["alpha"])[0, 1] >= 0.9  # 0.937


@pytest.fixture(scope="module")
def real_fit(semicrowd):
    _, links, _, _ = semicrowd
    return LinkClustering(10, n_init=1, n_polish=1, random_state=0).fit(links)


@pytest.mark.slow
def test_real_annotations_from_scratch_regression(semicrowd, real_fit):
    crowd, _, measured, groupings = semicrowd
    scores = real_data_scores(crowd, measured, groupings, real_fit)
    # measured: ELBO -7369, per-task NMI 0.9772 (the restart at K' = 15 merged down to 10; the
    # contraction start at K alone: -7575, 0.9749; the optimum reached from the true digits:
    # -7536, -7374 polished; workers' own groupings: 0.9822). The greedy start alone at K got
    # -8430, 0.9655 (n_init=5, n_polish=2: -8119, 0.9698).
    assert real_fit.elbo_ > -7650
    assert scores["inferred_nmi"] > 0.97
    assert real_fit.n_clusters_used_ == 10


@pytest.mark.slow
def test_real_annotations_more_clusters_than_digits(semicrowd):
    """With K = 15 a digit may take different clusters in different regions of tasks, which
    spares the search most of the alignment of the tasks' labellings. The search from scratch
    then ends above the ELBO of VB polished from the true digits, yet with a lower per-task NMI
    than there and than the workers' own groupings: at K = 15 the per-task shortfall is the
    model's preference among the optima we know, not only the search's."""
    crowd, links, measured, groupings = semicrowd
    scratch = LinkClustering(15, random_state=0).fit(links)
    near_truth = LinkClustering(15, n_init=1, n_polish=5, random_state=0).fit(
        links, init=crowd.digits
    )
    scores = real_data_scores(crowd, measured, groupings, scratch)
    truth_scores = real_data_scores(crowd, measured, groupings, near_truth)
    # measured: from scratch ELBO -7371, per-task NMI 0.9811, 12 clusters used; from the true
    # digits -7397, 0.9835; workers' own 0.9822
    assert scratch.elbo_ > near_truth.elbo_ + 10
    assert truth_scores["inferred_nmi"] > truth_scores["raw_nmi"]
    assert 0.978 < scores["inferred_nmi"] < truth_scores["inferred_nmi"]
    assert 10 <= scratch.n_clusters_used_ <= 15


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="issue 6 acceptance not met from scratch: alpha is not identifiable from these links "
    "(test_real_annotations_alpha_is_not_identifiable_from_links), and the per-task NMI stays "
    "below the workers' own (0.977 at K = 10, 0.981 at K = 15 < 0.9822), also at solutions whose "
    "ELBO is above that of the optimum near the truth (benchmarks/cluster/cluster_semicrowd.py)",
)
def test_real_annotations_issue_acceptance(semicrowd, real_fit):
    crowd, _, measured, groupings = semicrowd
    scores = real_data_scores(crowd, measured, groupings, real_fit)
    assert scores["alpha_r"] >= 0.8 and scores["beta_r"] >= 0.8
    assert scores["inferred_nmi"] >= scores["raw_nmi"]


@pytest.mark.slow
def test_real_annotations_cli_default_meets_the_workers_per_task(semicrowd):
    """Issue 40, point 5: ``crowdbayes cluster fit --model links-vb --clusters 10`` (the model's
    defaults, ``--seed 0``) reaches the workers' own per-task NMI within 0.005.

    Measured: 0.9773 at ELBO -7398 (a restart at K' = 15 merged down to 10), against
    0.9822 - 0.005 = 0.9772; without the search at K' (``search_factor=1``) 0.9749 at -7575.
    Over seeds 0-4 the bar is met at four of five (seed 1: 0.9771, a restart at K wins by the
    ELBO); ``benchmarks/cluster/results/cluster_link_vb_search.md``."""
    crowd, links, measured, groupings = semicrowd
    model = LinkClustering(10, random_state=0).fit(links)
    scores = real_data_scores(crowd, measured, groupings, model)
    assert scores["inferred_nmi"] >= scores["raw_nmi"] - 0.005


def identifiable_coverage(crowd, model) -> tuple[int, int]:
    """Workers whose α (and β) measured on the links between images seen by ≥ 2 workers lie
    in the 90% HPD interval of the posterior given the fitted q(z) on those links."""
    from crowdbayes.metrics.clustering import (
        link_worker_accuracy,
        links_between_items_seen_by,
        worker_interval_coverage,
    )

    identifiable = crowd.links[links_between_items_seen_by(crowd.links)]
    measured = link_worker_accuracy(identifiable, crowd.digits)
    posterior = model.worker_posterior(identifiable, level=0.9, interval="hpd")
    covered = worker_interval_coverage(measured, posterior)
    return int(covered["alpha"].sum()), int(covered["beta"].sum())


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::crowdbayes.exceptions.DataWarning")  # the repeat
def test_real_annotations_calibrated_where_identifiable_near_the_truth(semicrowd, truth_fit):
    """At the model's optimum near the truth the worker posteriors given q(z) on the
    identifiable links cover the measured α and β (measured: 46 and 45 of 48)."""
    crowd = semicrowd[0]
    n_alpha, n_beta = identifiable_coverage(crowd, truth_fit)
    assert n_alpha >= 43 and n_beta >= 43


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::crowdbayes.exceptions.DataWarning")  # the repeat
@pytest.mark.xfail(
    strict=True,
    reason="issue 19 first point not met from scratch: at K = 15 (per-task NMI 0.9811 ≥ "
    "0.9822 − 0.005) the HPD intervals cover α for 47 but β for only 39 of 48 workers: the fit "
    "follows the merges of workers 26, 34, 36 on identifiable pairs (split again near the truth "
    "for 26 and 34) and puts 1–2 pairs of six perfect workers against the digits; at K = 10 the "
    "search falls short of the optimum near the truth "
    "(benchmarks/cluster/results/cluster_semicrowd.md)",
)
def test_real_annotations_issue19_acceptance(semicrowd):
    crowd, links, measured, groupings = semicrowd
    model = LinkClustering(15, n_init=5, n_polish=2, random_state=0).fit(links)
    scores = real_data_scores(crowd, measured, groupings, model)
    assert scores["inferred_nmi"] >= scores["raw_nmi"] - 0.005
    n_alpha, n_beta = identifiable_coverage(crowd, model)
    assert n_alpha >= 43 and n_beta >= 43
