"""Label models (MajorityVote, DawidSkene, BayesianDawidSkene) against brute force, invariants,
crowd-kit, and data simulated from the model."""

from __future__ import annotations

import itertools
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import digamma, gammaln, logsumexp

from crowdbayes import (
    BayesianDawidSkene,
    ConvergenceWarning,
    DataWarning,
    DawidSkene,
    HierarchicalAnnotation,
    Labels,
    MajorityVote,
    NotFittedError,
)
from crowdbayes.annotators import confusion_statistics, label_log_likelihood
from crowdbayes.datasets import load_labels, simulate_labels
from crowdbayes.metrics import accuracy, worker_recovery_error

# ---------------------------------------------------------------------------- helpers


def task_major(array: np.ndarray, n_tasks: int, n_classes: int) -> np.ndarray:
    """(n_tasks, K) view of a per-task, per-class array given in either layout.

    The engines may keep such arrays class-major (K, n_tasks) for speed; the tests check values,
    so they accept either orientation (test problems never have n_tasks == K).
    """
    array = np.asarray(array)
    assert n_tasks != n_classes
    if array.shape == (n_classes, n_tasks):
        return array.T
    assert array.shape == (n_tasks, n_classes), array.shape
    return array


def call_confusion_statistics(labels: Labels, resp: np.ndarray) -> np.ndarray:
    """``confusion_statistics`` with task-major responsibilities, in whichever layout the
    engine uses (the one ``label_log_likelihood`` returns)."""
    k = resp.shape[1]
    relative, _ = label_log_likelihood(labels, np.zeros((labels.n_workers, k, k)))
    class_major = relative.shape == (k, labels.n_tasks)
    return confusion_statistics(labels, np.ascontiguousarray(resp.T) if class_major else resp)


def naive_log_likelihood(labels: Labels, log_conf: np.ndarray) -> np.ndarray:
    """ll[i, k] = Σ over label rows of task i of log θ[worker, k, label] (a plain loop)."""
    k = log_conf.shape[1]
    ll = np.zeros((labels.n_tasks, k))
    for i, j, x in zip(labels.task_codes, labels.worker_codes, labels.label_codes, strict=True):
        for c in range(k):
            ll[i, c] += log_conf[j, c, x]
    return ll


def naive_statistics(labels: Labels, resp: np.ndarray) -> np.ndarray:
    k = resp.shape[1]
    n = np.zeros((labels.n_workers, k, k))
    for i, j, x in zip(labels.task_codes, labels.worker_codes, labels.label_codes, strict=True):
        for c in range(k):
            n[j, c, x] += resp[i, c]
    return n


def toy_labels(k: int, seed: int, n_tasks: int = 7, n_workers: int = 4) -> Labels:
    """A small random label set where worker 0 labels task 0 twice (once more than the rest)."""
    rng = np.random.default_rng(seed)
    rows = [(i, j, int(rng.integers(k))) for i in range(n_tasks) for j in range(n_workers)]
    rows = [r for r in rows if rng.random() < 0.8 or r[1] == 0]
    rows.append((0, 0, (rows[0][2] + 1) % k))  # worker 0 labels task 0 a second time
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    with pytest.warns(DataWarning):
        return Labels(frame, classes=list(range(k)))


def random_log_confusion(rng, n_workers: int, k: int, zeros: bool = False) -> np.ndarray:
    conf = rng.dirichlet(np.ones(k), size=(n_workers, k))
    if zeros:
        conf[0, k - 1, :] = np.eye(k)[0]  # worker 0 never says anything but 0 for class K-1
        conf[1, 0, 1] = 0.0
        conf[1, 0] /= conf[1, 0].sum()
    with np.errstate(divide="ignore"):
        return np.log(conf)


def dirichlet_multinomial(counts: np.ndarray, alpha: np.ndarray) -> float:
    """log ∫ Π θ_x^{n_x} Dir(θ; α) dθ summed over rows (a label sequence, not a multiset)."""
    counts = np.atleast_2d(counts)
    return float(
        np.sum(gammaln(alpha.sum()) - gammaln(alpha.sum() + counts.sum(axis=1)))
        + np.sum(gammaln(counts + alpha) - gammaln(alpha))
    )


def exact_log_evidence(labels: Labels, alpha: np.ndarray, beta: np.ndarray) -> float:
    """log p(x) of the Bayesian Dawid–Skene model by enumerating every truth assignment, with
    θ and π integrated out analytically (Dirichlet-multinomial marginals)."""
    k = alpha.shape[0]
    terms = []
    for assignment in itertools.product(range(k), repeat=labels.n_tasks):
        c = np.array(assignment)
        n = np.zeros((labels.n_workers, k, k))
        np.add.at(n, (labels.worker_codes, c[labels.task_codes], labels.label_codes), 1.0)
        term = dirichlet_multinomial(np.bincount(c, minlength=k), beta)
        term += sum(dirichlet_multinomial(n[:, r, :], alpha[r]) for r in range(k))
        terms.append(term)
    return float(logsumexp(terms))


def synthetic(k: int, seed: int, **kwargs):
    options = dict(
        n_tasks=600, n_workers=20, labels_per_task=5, accuracy_mean=0.7, accuracy_concentration=8
    )
    options.update(kwargs)
    return simulate_labels(n_classes=k, random_state=seed, **options)


def quiet_fit(model, labels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(labels)


# ---------------------------------------------------------------------------- E-step / M-step


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_label_log_likelihood_against_loop(k, seed):
    labels = toy_labels(k, seed)
    rng = np.random.default_rng(100 + seed)
    log_conf = random_log_confusion(rng, labels.n_workers, k)
    relative, offset = label_log_likelihood(labels, log_conf)
    relative = task_major(relative, labels.n_tasks, k)
    ll = naive_log_likelihood(labels, log_conf)
    np.testing.assert_allclose(relative, ll - ll[:, [k - 1]], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(offset, ll[:, k - 1].sum(), rtol=1e-12)
    # the documented evidence identity
    log_pi = np.log(rng.dirichlet(np.ones(k)))
    np.testing.assert_allclose(
        logsumexp(log_pi + relative, axis=1).sum() + offset,
        logsumexp(log_pi + ll, axis=1).sum(),
        rtol=1e-12,
    )


@pytest.mark.parametrize("k", [2, 3])
def test_label_log_likelihood_with_impossible_labels(k):
    """Zero confusion cells (log θ = −inf, as maximum likelihood produces) keep posteriors and the
    evidence right."""
    labels = toy_labels(k, seed=3)
    rng = np.random.default_rng(7)
    log_conf = random_log_confusion(rng, labels.n_workers, k, zeros=True)
    relative, offset = label_log_likelihood(labels, log_conf)
    relative = task_major(relative, labels.n_tasks, k)
    ll = naive_log_likelihood(labels, log_conf)
    assert np.isneginf(ll).any()  # the toy does hit an impossible label
    assert not np.isnan(relative).any() and np.isfinite(offset)
    log_pi = np.log(np.full(k, 1.0 / k))
    np.testing.assert_allclose(
        logsumexp(log_pi + relative, axis=1).sum() + offset,
        logsumexp(log_pi + ll, axis=1).sum(),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        np.exp(relative - logsumexp(relative, axis=1, keepdims=True)),
        np.exp(ll - logsumexp(ll, axis=1, keepdims=True)),
        atol=1e-12,
    )


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_confusion_statistics_against_loop(k, seed):
    labels = toy_labels(k, seed)
    resp = np.random.default_rng(seed).dirichlet(np.ones(k), size=labels.n_tasks)
    stats = call_confusion_statistics(labels, resp)
    expected = naive_statistics(labels, resp)
    assert stats.shape == (labels.n_workers, k, k)
    np.testing.assert_allclose(stats, expected, rtol=1e-12, atol=1e-12)
    # one-hot responsibilities give integer counts; the double label on task 0 counts twice
    onehot = np.eye(k)[np.arange(labels.n_tasks) % k]
    stats = call_confusion_statistics(labels, onehot)
    np.testing.assert_array_equal(stats, naive_statistics(labels, onehot))
    assert stats[0, 0].sum() >= 2


@pytest.mark.parametrize("k", [2, 3])
def test_weighted_confusion_statistics_against_loop(k):
    labels = toy_labels(k, 0)
    resp = np.random.default_rng(1).dirichlet(np.ones(k), size=labels.n_tasks)
    resp[::2] = 0.0  # tasks left out
    stats = confusion_statistics(labels, np.ascontiguousarray(resp.T), sums_to_one=False)
    np.testing.assert_allclose(stats, naive_statistics(labels, resp), rtol=1e-12, atol=1e-12)


def test_bayesian_dawid_skene_single_worker_tasks_do_not_feed_back():
    """Tasks seen by one worker are labelled but leave the workers' and the prevalence's
    posteriors (and the ELBO) as the other tasks make them: the cut of the model docstring."""
    table = synthetic(3, 0, n_tasks=200).labels
    labels = Labels(table)
    rng = np.random.default_rng(0)
    extra = pd.DataFrame(
        {
            "task": table["task"].max() + 1 + np.arange(300),
            "worker": rng.choice(table["worker"].unique(), 300),
            "label": rng.choice(labels.classes, 300),
        }
    )
    base = quiet_fit(BayesianDawidSkene(tol=1e-12), labels)
    with_singles = quiet_fit(
        BayesianDawidSkene(tol=1e-12), Labels(pd.concat([table, extra]), classes=labels.classes)
    )
    np.testing.assert_allclose(
        with_singles.globals_["alpha"], base.globals_["alpha"], rtol=1e-9, atol=1e-9
    )
    np.testing.assert_allclose(with_singles.globals_["beta"], base.globals_["beta"], rtol=1e-9)
    np.testing.assert_allclose(with_singles.elbo_history_[-1], base.elbo_history_[-1], rtol=1e-9)
    np.testing.assert_allclose(
        with_singles.probas_.loc[base.probas_.index].to_numpy(), base.probas_.to_numpy(), atol=1e-9
    )
    # the single-worker tasks get the posterior of their one label under the workers' fit
    task = extra.iloc[0]
    worker = with_singles.workers_.get_loc(task["worker"])
    label = list(labels.classes).index(task["label"])
    log_post = (
        with_singles.globals_["log_prevalence"]
        + with_singles.globals_["log_confusion"][worker, :, label]
    )
    expected = np.exp(log_post - np.logaddexp.reduce(log_post))
    # (probas_ come from the last E-step, one global update before globals_)
    np.testing.assert_allclose(
        with_singles.probas_.loc[task["task"]].to_numpy(), expected, atol=1e-5
    )


# ---------------------------------------------------------------------------- monotonicity


def assert_non_decreasing(history: np.ndarray, rtol: float = 1e-9) -> None:
    history = np.asarray(history)
    assert np.isfinite(history).all()
    drops = np.diff(history)
    allowed = rtol * np.maximum(1.0, np.abs(history[1:]))
    assert (drops >= -allowed).all(), f"objective fell by {-drops.min():.3g} at {drops.argmin()}"


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("one_coin", [False, True])
def test_dawid_skene_log_posterior_never_decreases(k, one_coin):
    data = synthetic(k, seed=10 + k, accuracy_mean=0.6, labels_per_task=3)
    model = DawidSkene(smoothing=0.01, one_coin=one_coin, max_iter=80, tol=None)
    model.fit(data.to_labels())
    history = model.log_posterior_history_
    assert len(history) == model.n_iter_ == 80
    assert_non_decreasing(history)
    assert history[-1] > history[0] + 1.0  # it did climb


@pytest.mark.parametrize("k", [2, 4])
def test_bayesian_dawid_skene_elbo_never_decreases(k):
    data = synthetic(k, seed=20 + k, accuracy_mean=0.6, labels_per_task=3)
    model = BayesianDawidSkene(max_iter=80, tol=None).fit(data.to_labels())
    history = model.elbo_history_
    assert len(history) == model.n_iter_ == 80
    assert_non_decreasing(history)
    assert history[-1] > history[0] + 1.0


def test_converged_flag_and_convergence_warning():
    labels = synthetic(2, seed=5).to_labels()
    model = DawidSkene(tol=1e-7).fit(labels)
    assert model.converged_ and model.n_iter_ < 100
    with pytest.warns(ConvergenceWarning, match=r"DawidSkene did not converge in 2 iterations"):
        DawidSkene(max_iter=2, tol=1e-12).fit(labels)
    with pytest.warns(ConvergenceWarning, match=r"BayesianDawidSkene did not converge in 2"):
        BayesianDawidSkene(max_iter=2, tol=1e-12).fit(labels)


ELBO_TOYS = {
    # K = 2: 6 tasks × 3 workers, one worker labels a task twice
    "k2": (
        [(0, 0, 0), (0, 1, 0), (0, 2, 1), (1, 0, 1), (1, 1, 1), (1, 2, 1), (2, 0, 0), (2, 1, 0),
         (3, 0, 1), (3, 1, 0), (3, 2, 1), (4, 0, 0), (4, 2, 0), (5, 1, 1), (5, 2, 1), (5, 2, 0)],
        2,
    ),
    # K = 3: 5 tasks × 3 workers
    "k3": (
        [(0, 0, 0), (0, 1, 0), (0, 2, 1), (1, 0, 2), (1, 1, 2), (1, 2, 2), (2, 0, 1), (2, 1, 1),
         (2, 2, 0), (3, 0, 2), (3, 1, 0), (4, 0, 1), (4, 1, 1), (4, 2, 2)],
        3,
    ),
}  # fmt: skip


def dirichlet_kl(q: np.ndarray, p: np.ndarray) -> float:
    """KL(Dir(q) || Dir(p)) summed over rows (last axis)."""
    q, p = np.broadcast_arrays(q, p)
    e_log = digamma(q) - digamma(q.sum(axis=-1, keepdims=True))
    return float(
        np.sum(gammaln(q.sum(-1)) - gammaln(q).sum(-1) - gammaln(p.sum(-1)) + gammaln(p).sum(-1))
        + np.sum((q - p) * e_log)
    )


def independent_elbo(labels: Labels, resp, alpha_post, alpha_prior, beta_prior) -> float:
    """The mean-field ELBO of q(c) q(θ) q(π), written out term by term with plain loops."""
    beta_post = beta_prior + resp.sum(axis=0)
    e_log_pi = digamma(beta_post) - digamma(beta_post.sum())
    e_log_theta = digamma(alpha_post) - digamma(alpha_post.sum(axis=-1, keepdims=True))
    value = float((resp * e_log_pi).sum())
    for i, j, x in zip(labels.task_codes, labels.worker_codes, labels.label_codes, strict=True):
        value += float(resp[i] @ e_log_theta[j, :, x])
    value -= float(np.sum(resp[resp > 0] * np.log(resp[resp > 0])))
    value -= dirichlet_kl(beta_post, beta_prior)
    value -= dirichlet_kl(alpha_post, alpha_prior[None])
    return value


@pytest.mark.parametrize("name", sorted(ELBO_TOYS))
@pytest.mark.parametrize("prior", [(2.0, 1.0, 1.0), (1.0, 1.0, 2.0)])
def test_elbo_is_below_exact_log_evidence(name, prior):
    rows, k = ELBO_TOYS[name]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        labels = Labels(frame, classes=list(range(k)))
    diagonal, off, prevalence = prior
    model = BayesianDawidSkene(
        prior_diagonal=diagonal, prior_off_diagonal=off, prior_prevalence=prevalence, tol=1e-12
    )
    model = quiet_fit(model, labels)
    alpha = off * np.ones((k, k)) + (diagonal - off) * np.eye(k)
    beta = np.full(k, prevalence)
    log_evidence = exact_log_evidence(labels, alpha, beta)
    elbo = model.elbo_history_
    assert (elbo <= log_evidence + 1e-9).all()

    # the reported bound is the ELBO of the reported q (checked term by term)
    resp = model.probas_.to_numpy()
    alpha_post = model.confusion_posterior_.to_numpy().reshape(-1, k, k)
    np.testing.assert_allclose(alpha_post, alpha + naive_statistics(labels, resp), rtol=1e-10)
    np.testing.assert_allclose(
        independent_elbo(labels, resp, alpha_post, alpha, beta), elbo[-1], rtol=1e-9, atol=1e-9
    )

    # Mean-field q(c)q(θ)q(π) sits in one of the K! mirror modes of the posterior (exactly
    # symmetric when the prior is) and drops the c–θ coupling. Measured gaps on these toys:
    # 1.2 / 2.0 nats (diagonal prior, K = 2 / 3) and 1.8 / 3.4 (symmetric prior, where log K! =
    # 0.7 / 1.8 is lost to the mirror modes alone).
    gap = log_evidence - elbo[-1]
    assert 0 < gap < np.log(math.factorial(k)) + 2.0


# ---------------------------------------------------------------------------- crowd-kit


CROWDKIT_NOISE = pytest.mark.filterwarnings("ignore::Warning:crowdkit.*")


def crowdkit_and_ours(frame: pd.DataFrame, n_iter: int, tol: float | None):
    from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene

    # tol=-inf: crowd-kit runs exactly n_iter EM iterations (tol=0 stops at the first step
    # whose per-label bound does not rise)
    theirs = CrowdKitDawidSkene(n_iter=n_iter, tol=-np.inf if tol is None else tol).fit(frame)
    ours = DawidSkene(
        smoothing=0.0,
        diagonal_smoothing=0.0,
        prevalence_smoothing=0.0,
        max_iter=n_iter,
        tol=tol,
    )
    ours = quiet_fit(ours, frame)  # zero cells (log 0) must not raise numerical warnings
    tasks = ours.labels_.index
    assert (theirs.labels_.loc[tasks] == ours.labels_).all()
    their_probas = theirs.probas_.loc[tasks, ours.probas_.columns].to_numpy()
    return theirs, ours, np.abs(their_probas - ours.probas_.to_numpy()).max()


def assert_same_parameters(theirs, ours) -> None:
    classes = list(ours.classes_)
    prevalence = theirs.priors_.loc[classes].to_numpy()
    np.testing.assert_allclose(prevalence, ours.prevalence_.to_numpy(), atol=1e-9)
    # crowd-kit: errors_.loc[(worker, observed), true]; ours: confusion_.loc[(worker, true), obs]
    errors = theirs.errors_.stack().rename_axis(["worker", "observed", "true"])
    errors = errors.reorder_levels(["worker", "true", "observed"])
    ours_long = ours.confusion_.stack()
    ours_long.index = ours_long.index.set_names(["worker", "true", "observed"])
    their_values = errors.reindex(ours_long.index).fillna(0.0)  # unseen labels: no row there
    np.testing.assert_allclose(their_values.to_numpy(), ours_long.to_numpy(), atol=1e-9)


@CROWDKIT_NOISE
@pytest.mark.parametrize("n_iter", [1, 20])
@pytest.mark.parametrize("source", ["rte", "synthetic-k3"])
def test_dawid_skene_iterates_match_crowdkit(source, n_iter):
    """Same start (vote shares), same EM: identical after any number of iterations, up to
    crowd-kit's clipping of probabilities at 1e-10."""
    if source == "rte":
        frame = load_labels("rte").labels
    else:
        frame = simulate_labels(
            400, 20, 5, 3, accuracy_mean=0.75, accuracy_concentration=10, random_state=1
        ).labels
    theirs, ours, max_diff = crowdkit_and_ours(frame, n_iter, None)
    assert max_diff < 1e-9
    assert_same_parameters(theirs, ours)


@CROWDKIT_NOISE
def test_dawid_skene_converged_matches_crowdkit_on_rte():
    # crowd-kit to its own stopping rule (its bound stops rising: 28 iterations), ours to a
    # fixed point (1000 iterations; tol=0 is never met): probabilities agree to ~1e-6
    # (measured 8.5e-7). At crowd-kit's default tol=1e-5 it stops after 9 iterations, ~1e-2
    # away.
    _, ours, max_diff = crowdkit_and_ours(load_labels("rte").labels, 1000, 0.0)
    assert max_diff < 1e-5


# ---------------------------------------------------------------------------- majority vote


def tie_frame() -> pd.DataFrame:
    """30 tasks tied between "b" and "c" (never "a"), and one clear "a" task."""
    rows = []
    for t in range(30):
        rows += [(f"t{t}", "w1", "b"), (f"t{t}", "w2", "c"), (f"t{t}", "w3", "a")]
        rows += [(f"t{t}", "w4", "b"), (f"t{t}", "w5", "c")]
    rows += [("clear", "w1", "a"), ("clear", "w2", "a"), ("clear", "w3", "c")]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def test_majority_vote_random_ties_are_seeded_and_only_among_tied():
    frame = tie_frame()
    first = MajorityVote(ties="random", random_state=1).fit(frame)
    again = MajorityVote(ties="random", random_state=1).fit(frame)
    other = MajorityVote(ties="random", random_state=2).fit(frame)
    pd.testing.assert_series_equal(first.labels_, again.labels_)
    assert (first.labels_ != other.labels_).any()
    tied = first.labels_.drop("clear")
    assert set(tied) == {"b", "c"}  # both tied classes come up; "a" never does
    assert first.labels_["clear"] == "a"
    assert first.n_ties_ == 30
    np.testing.assert_allclose(first.probas_.loc["t0"].to_numpy(), [0.2, 0.4, 0.4])
    np.testing.assert_allclose(first.probas_.sum(axis=1), 1.0)


def test_majority_vote_first_tie_policy_follows_class_order():
    frame = tie_frame()
    model = MajorityVote(ties="first").fit(frame)
    assert set(model.labels_.drop("clear")) == {"b"}
    labels = Labels(frame, classes=["c", "b", "a"])
    model = MajorityVote(ties="first").fit(labels)
    assert set(model.labels_.drop("clear")) == {"c"}
    assert model.n_ties_ == 30


def test_majority_vote_rejects_unknown_tie_policy():
    with pytest.raises(
        ValueError, match=r"parameter 'ties' must be one of 'random', 'first'; got 'x'"
    ):
        MajorityVote(ties="x").fit(tie_frame())


def test_majority_vote_accuracy_matches_rte_published():
    data = load_labels("rte")
    model = MajorityVote(ties="random", random_state=0).fit(data.labels)
    assert accuracy(data.gold, model.labels_) == pytest.approx(0.897, abs=0.01)


# ---------------------------------------------------------------------------- gold clamping

# factories, so that no fitted estimator is shared between tests
ALL_MODELS = {
    "MajorityVote": lambda: MajorityVote(),
    "DawidSkene": lambda: DawidSkene(),
    "DawidSkene-one_coin": lambda: DawidSkene(one_coin=True),
    "BayesianDawidSkene": lambda: BayesianDawidSkene(),
    "Hierarchical-blocked": lambda: HierarchicalAnnotation(
        n_chains=2, n_warmup=30, n_samples=40, random_state=0
    ),
    "Hierarchical-collapsed": lambda: HierarchicalAnnotation(
        n_chains=2, n_warmup=10, n_samples=20, sampler="collapsed", hyperprior="fixed",
        random_state=0,
    ),
}  # fmt: skip


def model_names(names) -> list:
    """Parameters for ``names``; the Gibbs samplers' cases are marked slow."""
    slow = pytest.mark.slow
    return [pytest.param(n, marks=slow) if n.startswith("Hierarchical") else n for n in names]


@pytest.mark.parametrize("name", model_names(sorted(ALL_MODELS)))
def test_gold_tasks_get_their_gold_label(name):
    data = synthetic(3, seed=31, n_tasks=300, labels_per_task=3, accuracy_mean=0.55)
    gold = data.truth.iloc[::4].copy()
    # a few gold labels that no worker gave, so that clamping is visible
    n_contrary = 0
    for task in gold.index[:40]:
        unseen = sorted(set(range(3)) - set(data.labels.loc[data.labels["task"] == task, "label"]))
        if unseen:
            gold.loc[task] = unseen[0]
            n_contrary += 1
    assert n_contrary >= 5
    labels = data.to_labels(gold=gold)
    model = quiet_fit(ALL_MODELS[name](), labels)
    probas = model.probas_.loc[gold.index]
    expected = np.eye(3)[gold.to_numpy()]
    np.testing.assert_array_equal(probas.to_numpy(), expected)
    assert (model.labels_.loc[gold.index] == gold).all()
    np.testing.assert_allclose(model.probas_.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize(
    "name", model_names(["DawidSkene", "BayesianDawidSkene", "Hierarchical-blocked"])
)
def test_gold_clamping_helps_the_other_tasks(name):
    data = synthetic(3, seed=41, n_tasks=400, labels_per_task=3, accuracy_mean=0.55)
    gold = data.truth.iloc[: len(data.truth) // 3]
    rest = data.truth.drop(gold.index)
    without = quiet_fit(ALL_MODELS[name](), data.to_labels())
    acc_without = accuracy(rest, without.labels_)
    with_gold = quiet_fit(ALL_MODELS[name](), data.to_labels(gold=gold))
    acc_with = accuracy(rest, with_gold.labels_)
    # measured gains on this weak-worker set: +5 to +12 points
    assert acc_with >= acc_without + 0.02
    np.testing.assert_allclose(with_gold.probas_.loc[gold.index].max(axis=1), 1.0)


# ---------------------------------------------------------------------------- API contract


def string_id_data():
    data = synthetic(3, seed=51, n_tasks=120, n_workers=8, labels_per_task=4)
    names = np.array(["cat", "dog", "fish"])
    frame = pd.DataFrame(
        {
            "task": [f"item-{t:04d}" for t in data.labels["task"]],
            "worker": [f"rater{w}" for w in data.labels["worker"]],
            "label": names[data.labels["label"].to_numpy()],
        }
    )
    truth = pd.Series(
        names[data.truth.to_numpy()], index=[f"item-{t:04d}" for t in data.truth.index]
    )
    return frame, truth


@pytest.mark.parametrize("name", model_names(sorted(ALL_MODELS)))
def test_results_are_in_user_ids(name):
    frame, truth = string_id_data()
    model = quiet_fit(ALL_MODELS[name](), frame)
    tasks = list(pd.unique(frame["task"]))
    assert list(model.probas_.index) == tasks
    assert list(model.probas_.columns) == ["cat", "dog", "fish"]
    assert list(model.labels_.index) == tasks
    assert set(model.labels_) <= {"cat", "dog", "fish"}
    np.testing.assert_allclose(model.probas_.sum(axis=1), 1.0, atol=1e-12)
    assert list(model.prevalence_.index) == ["cat", "dog", "fish"]
    assert model.prevalence_.sum() == pytest.approx(1.0)
    pd.testing.assert_series_equal(model.predict(), model.labels_)
    pd.testing.assert_frame_equal(model.predict_proba(), model.probas_)
    assert accuracy(truth, model.labels_) > 0.6

    confusion = model.confusion_
    workers = list(pd.unique(frame["worker"]))
    assert confusion.shape == (len(workers) * 3, 3)
    assert list(confusion.index.get_level_values(0).unique()) == workers
    assert list(confusion.index.get_level_values(1)[:3]) == ["cat", "dog", "fish"]
    assert list(confusion.columns) == ["cat", "dog", "fish"]
    np.testing.assert_allclose(confusion.sum(axis=1), 1.0, atol=1e-9)
    assert (confusion.to_numpy() >= 0).all()

    table = model.worker_table()
    assert len(table) == len(workers) * 9
    bayesian = isinstance(model, (BayesianDawidSkene, HierarchicalAnnotation))
    columns = ["worker", "true", "observed", "mean"] + (
        ["sd", "lower", "upper"] if bayesian else []
    )
    assert list(table.columns) == columns
    row = table[(table.worker == "rater3") & (table.true == "dog") & (table.observed == "fish")]
    assert row["mean"].item() == pytest.approx(confusion.loc[("rater3", "dog"), "fish"])
    if bayesian:
        assert (table["lower"] <= table["mean"] + 1e-12).all()
        assert (table["mean"] <= table["upper"] + 1e-12).all()
        assert (table["sd"] > 0).all()


@pytest.mark.parametrize("name", model_names(sorted(ALL_MODELS)))
def test_fit_predict_helpers(name):
    model = ALL_MODELS[name]()
    frame, _ = string_id_data()
    labels = Labels(frame)
    predicted = model.fit_predict(labels)
    pd.testing.assert_series_equal(predicted, model.labels_)
    probas = model.fit_predict_proba(labels)
    pd.testing.assert_frame_equal(probas, model.probas_)


@pytest.mark.parametrize("name", model_names(sorted(ALL_MODELS)))
def test_predict_before_fit_raises_not_fitted(name):
    model = ALL_MODELS[name]()
    name = type(model).__name__
    message = re.escape(f"{name} is not fitted yet: call {name}.fit(...) first")
    with pytest.raises(NotFittedError, match=message):
        model.predict()
    with pytest.raises(NotFittedError, match=message):
        model.predict_proba()
    with pytest.raises(NotFittedError, match=message):
        model.worker_table()


def test_binary_models_report_sensitivity_and_specificity():
    data = synthetic(2, seed=61, n_tasks=300, n_workers=10)
    model = BayesianDawidSkene().fit(data.to_labels())
    confusion = model.confusion_
    np.testing.assert_allclose(
        model.sensitivity_["mean"].to_numpy(), confusion.xs(1, level="true")[1].to_numpy()
    )
    np.testing.assert_allclose(
        model.specificity_["mean"].to_numpy(), confusion.xs(0, level="true")[0].to_numpy()
    )
    assert list(model.sensitivity_.columns) == ["mean", "sd", "lower", "upper"]
    assert model.credible_level_ == 0.9


def test_invalid_hyperparameters():
    labels = synthetic(2, seed=62, n_tasks=50, n_workers=5).to_labels()
    message = r"DawidSkene: parameter 'smoothing' must be a number in \[0, inf\); got -1"
    with pytest.raises(ValueError, match=message):
        DawidSkene(smoothing=-1).fit(labels)
    with pytest.raises(ValueError, match=r"'prior_off_diagonal' must be a number in \(0, inf\)"):
        BayesianDawidSkene(prior_off_diagonal=0).fit(labels)


# ---------------------------------------------------------------------------- recovery


def confusion_array(model, workers, k: int) -> np.ndarray:
    """The fitted confusion_ as an array (workers, true, observed) in the given worker order."""
    index = pd.MultiIndex.from_product([workers, range(k)])
    frame = model.confusion_.reindex(index)
    assert not frame.isna().any().any()
    return frame.to_numpy().reshape(len(workers), k, k)


@pytest.mark.parametrize("k", [2, 3])
def test_recovery_of_worker_confusion(k):
    data = simulate_labels(
        n_tasks=2000,
        n_workers=20,
        labels_per_task=5,
        n_classes=k,
        accuracy_mean=0.7,
        accuracy_concentration=10,
        random_state=70 + k,
    )
    labels = data.to_labels()
    truth = data.truth
    majority = accuracy(truth, MajorityVote(random_state=0).fit(labels).labels_)
    # The yardstick: confusion matrices counted with the true classes known (sampling error
    # only, about 0.02 with ~500 labels per worker). EM/VB must come close to it.
    onehot = np.eye(k)[truth.loc[labels.tasks].to_numpy()]
    oracle_counts = naive_statistics(labels, onehot)
    oracle = oracle_counts / oracle_counts.sum(axis=2, keepdims=True)
    order = [list(labels.workers).index(w) for w in data.workers]
    oracle_error = worker_recovery_error(data.confusion, oracle[order])
    assert oracle_error < 0.03
    for model in (DawidSkene(), BayesianDawidSkene()):
        model.fit(labels)
        estimated = confusion_array(model, data.workers, k)
        error = worker_recovery_error(data.confusion, estimated)
        # measured: 0.031 / 0.025 against an oracle of 0.023 (K = 2 / 3)
        assert error < 1.5 * oracle_error, (type(model).__name__, error, oracle_error)
        assert accuracy(truth, model.labels_) >= majority
        np.testing.assert_allclose(model.prevalence_.to_numpy(), data.prevalence, atol=0.03)
    # a model that ignores workers does recover worse (the check has teeth)
    flat = confusion_array(MajorityVote().fit(labels), data.workers, k)
    assert worker_recovery_error(data.confusion, flat) > error
