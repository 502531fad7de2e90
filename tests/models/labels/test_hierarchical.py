"""HierarchicalAnnotation (Carpenter 2008) by Gibbs: exact posteriors on toys, coverage,
hyperprior behaviour on RTE, label switching, reproducibility and diagnostics."""

from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import gammaln, logsumexp

from crowdbayes import (
    DataWarning,
    DivergenceWarning,
    HierarchicalAnnotation,
    Labels,
    MajorityVote,
)
from crowdbayes.datasets import load_labels, simulate_labels
from crowdbayes.inference.relabel import best_permutation
from crowdbayes.metrics import accuracy

# ---------------------------------------------------------------------------- exact posteriors


def toy(votes: list[tuple[int, ...]], extra: list[tuple[int, int, int]] = ()) -> pd.DataFrame:
    """Task i gets label votes[i][j] from worker j; ``extra`` adds (task, worker, label) rows."""
    rows = [(i, j, x) for i, v in enumerate(votes) for j, x in enumerate(v)]
    rows += list(extra)
    return pd.DataFrame(
        {
            "task": [f"t{i}" for i, _, _ in rows],
            "worker": [f"w{j}" for _, j, _ in rows],
            "label": [x for _, _, x in rows],
        }
    )


def dm_log_marginal(counts: np.ndarray, alpha: np.ndarray) -> float:
    """Σ_rows log ∫ Π θ_x^{n_x} Dir(θ; α) dθ (probability of a label sequence)."""
    counts = np.atleast_2d(counts)
    return float(
        np.sum(gammaln(alpha.sum()) - gammaln(alpha.sum() + counts.sum(axis=1)))
        + np.sum(gammaln(counts + alpha) - gammaln(alpha))
    )


def enumerate_posterior(labels: Labels, log_rows, beta: float):
    """Every truth assignment c with log p(c, x) = log DM(class counts; β) + Σ_k log p(n_k·· ),
    where ``log_rows(k, counts)`` is the marginal likelihood of true class k's count rows."""
    k = labels.n_classes
    assignments, log_joint = [], []
    for assignment in itertools.product(range(k), repeat=labels.n_tasks):
        c = np.array(assignment)
        n = np.zeros((labels.n_workers, k, k))
        np.add.at(n, (labels.worker_codes, c[labels.task_codes], labels.label_codes), 1.0)
        value = dm_log_marginal(np.bincount(c, minlength=k), np.full(k, beta))
        value += sum(log_rows(r, n[:, r, :]) for r in range(k))
        assignments.append(c)
        log_joint.append(value)
    return np.array(assignments), np.array(log_joint)


def marginals(assignments: np.ndarray, log_weights: np.ndarray, k: int) -> np.ndarray:
    weights = np.exp(log_weights - logsumexp(log_weights))
    return np.stack([(weights[:, None] * (assignments == c)).sum(axis=0) for c in range(k)], 1)


def exact_fixed(labels: Labels, diagonal: float, off: float, beta: float) -> np.ndarray:
    """p(c_i | x) with fixed Dirichlet rows: θ_jk ~ Dir(off + (diagonal − off)·e_k)."""
    k = labels.n_classes
    alpha = off * np.ones((k, k)) + (diagonal - off) * np.eye(k)
    assignments, log_joint = enumerate_posterior(
        labels, lambda r, counts: dm_log_marginal(counts, alpha[r]), beta
    )
    return marginals(assignments, log_joint, k)


def hyperprior_row_integral(n_points: int = 80):
    """log ∫ p(α) Π_j DM(n_j; α) dα for K = 2 rows, α = s·(m, 1 − m), by Gauss–Legendre.

    The model (src/crowdbayes/annotators/hierarchical.py): m ~ Dir(1, 1) = U(0, 1) and
    s ~ Pareto(shape 1.5, s_min 1), density 1.5 s^-2.5 on s ≥ 1. With u = s^-1.5 (the Pareto
    survival function) u ~ U(0, 1), so the integral is over the unit square (u, m) of a smooth
    bounded integrand; 80 nodes per axis agree with 200 to better than 1e-6 here.
    """
    nodes, weights = np.polynomial.legendre.leggauss(n_points)
    nodes, weights = (nodes + 1) / 2, weights / 2
    scale = nodes ** (-1 / 1.5)
    s, m = np.meshgrid(scale, nodes, indexing="ij")
    a0, a1 = (s * m).ravel(), (s * (1 - m)).ravel()
    log_w = (np.log(weights)[:, None] + np.log(weights)[None, :]).ravel()
    cache: dict[bytes, float] = {}

    def log_row(_: int, counts: np.ndarray) -> float:
        counts = counts[counts.sum(axis=1) > 0]
        key = np.sort(counts.view([("a", float), ("b", float)]), axis=0).tobytes()
        if key not in cache:
            total = a0 + a1
            value = np.zeros_like(a0)
            for n0, n1 in counts:
                value += gammaln(total) - gammaln(total + n0 + n1)
                value += gammaln(a0 + n0) - gammaln(a0) + gammaln(a1 + n1) - gammaln(a1)
            cache[key] = float(logsumexp(value + log_w))
        return cache[key]

    return log_row


def exact_sample_k2(labels: Labels, pivot: np.ndarray, beta: float = 1.0, n_points: int = 80):
    """p(c_i | x) under the sampled hyperprior (K = 2), restricted to the pivot's labelling.

    The hyperprior is symmetric, so p(c | x) = p(1 − c | x) exactly and every marginal of the
    full posterior is 1/2: comparing with the unrestricted posterior would be meaningless. The
    sampler relabels each sweep towards the pivot (majority vote): a state c is mapped to its
    mirror when the mirror agrees with the pivot on more tasks. The chain's law on labellings
    is then p(c | x)·w(c) with w = 2 where c agrees with the pivot better than 1 − c (its
    mirror's mass is folded onto it) and 0 where it agrees worse. On exact ties both mirror
    states are kept as drawn; their pair carries the right total mass, but how it splits
    between them depends on the kernel (not exactly 1/2 each), so the reference (w = 1 there)
    is exact only up to the tie set's mass, which is returned as a slack.

    Two further reasons to want a clearly identified toy: the model's Rao–Blackwellised
    estimate (conditional probabilities permuted with the drawn c) is biased when relabelling
    fires often, and chains that switch modes mix slowly. Here the tie set holds 0.3% of the
    mass and chains essentially never switch.
    """
    assignments, log_joint = enumerate_posterior(labels, hyperprior_row_integral(n_points), beta)
    agree = (assignments == pivot).sum(axis=1)
    mirror = (1 - assignments == pivot).sum(axis=1)
    weight = np.where(agree > mirror, 2.0, np.where(agree == mirror, 1.0, 0.0))
    with np.errstate(divide="ignore"):
        log_weight = log_joint + np.log(weight)
    tie_mass = float(np.exp(logsumexp(log_joint[agree == mirror]) - logsumexp(log_joint)))
    return marginals(assignments, log_weight, 2), tie_mass


def replicate_probas(labels: Labels, n_replicates: int, **options) -> tuple[np.ndarray, ...]:
    """Mean and Monte Carlo standard error of probas_ over independent seeds."""
    runs, relabelled = [], 0
    for seed in range(n_replicates):
        model = HierarchicalAnnotation(random_state=1000 + seed, calibrate=False, **options)
        model.fit(labels)
        runs.append(model.probas_.to_numpy())
        relabelled += int(model.n_relabelled_.sum())
    runs = np.array(runs)
    return runs.mean(axis=0), runs.std(axis=0, ddof=1) / np.sqrt(n_replicates), relabelled


def assert_matches_exact(
    mean, se, exact, z_max: float = 5.0, se_floor: float = 0.002, slack: float = 0.0
) -> None:
    # Independent replicates give an honest standard error whatever the autocorrelation; with
    # 6 replicates the t statistic has 5 degrees of freedom, P(|t| > 5) ≈ 0.4% per cell. The
    # floor keeps near-certain tasks (se ≈ 0) from demanding more precision than the
    # quadrature and the estimator promise; ``slack`` is a known bound on the reference's error.
    z = np.maximum(np.abs(mean - exact) - slack, 0.0) / np.maximum(se, se_floor)
    assert z.max() < z_max, f"z={z.max():.1f}\nsampler:\n{mean.round(4)}\nexact:\n{exact.round(4)}"


FIXED_TOY_K2 = toy([(0, 0, 0), (0, 0, 1), (0, 1, 0), (1, 1, 1), (1, 1, 0), (0, 1, 1)])
# K = 3, five tasks; worker 0 labels task 1 twice (same label) and task 3 twice (another label)
FIXED_TOY_K3 = toy(
    [(0, 0, 1), (2, 2, 1), (1, 1, 0), (2, 0, 2), (1, 2, 1)], extra=[(1, 0, 2), (3, 0, 0)]
)


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["blocked", "collapsed"])
@pytest.mark.parametrize(
    "name, frame, prior",
    [("k2", FIXED_TOY_K2, (3.0, 1.0, 1.0)), ("k3", FIXED_TOY_K3, (2.0, 1.0, 1.5))],
    ids=["k2", "k3"],
)
def test_gibbs_matches_exact_posterior_fixed_hyperprior(sampler, name, frame, prior):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # the K = 3 toy repeats pairs on purpose
        labels = Labels(frame)
    diagonal, off, beta = prior
    exact = exact_fixed(labels, diagonal, off, beta)
    assert 0.15 < exact.max(axis=1).min() < 0.75  # some tasks are genuinely uncertain
    mean, se, relabelled = replicate_probas(
        labels,
        6,
        sampler=sampler,
        hyperprior="fixed",
        prior_diagonal=diagonal,
        prior_off_diagonal=off,
        prior_prevalence=beta,
        n_chains=2,
        n_warmup=20,
        n_samples=400,
    )
    assert relabelled == 0  # fixed, asymmetric prior: no relabelling
    assert_matches_exact(mean, se, exact)


@pytest.mark.slow
def test_gibbs_matches_exact_posterior_sampled_hyperprior():
    """θ integrated against s ~ Pareto(1.5, 1), m ~ U(0, 1) by 2-D quadrature; both samplers.

    Workers 0–2 agree on everything, workers 3–4 are noisy: the labelling is clear (the chains
    stay in the pivot's mode) while tasks 2, 5 and 6 keep real uncertainty.
    """
    votes = [
        (0, 0, 0, 0, 0), (0, 0, 0, 0, 1), (0, 0, 0, 1, 1), (1, 1, 1, 1, 1),
        (1, 1, 1, 1, 0), (1, 1, 1, 0, 0), (1, 1, 0, 1, 0), (0, 0, 0, 0, 0),
    ]  # fmt: skip
    labels = Labels(toy(votes))
    pivot = np.array([int(sum(v) > 2) for v in votes])
    exact, tie_mass = exact_sample_k2(labels, pivot)
    assert tie_mass < 0.005
    assert 0.05 < exact[2, 1] < 0.2 and 0.85 < exact[6, 1] < 0.97
    # the unrestricted posterior is symmetric: without relabelling every marginal would be 1/2
    for sampler in ("blocked", "collapsed"):
        mean, se, relabelled = replicate_probas(
            labels, 6, sampler=sampler, hyperprior="sample", n_chains=2, n_warmup=10,
            n_samples=150,
        )  # fmt: skip
        assert relabelled <= 10  # of 6 × 2 × 160 sweeps
        assert_matches_exact(mean, se, exact, slack=tie_mass)


def test_quadrature_reference_is_converged():
    labels = Labels(toy([(0, 0, 1), (1, 1, 1), (0, 1, 0), (1, 0, 1)]))
    row = hyperprior_row_integral(80)
    fine = hyperprior_row_integral(200)
    counts = np.array([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0]])
    assert row(0, counts) == pytest.approx(fine(0, counts), abs=1e-6)
    # and the prior integrates to one: no counts → log 1
    assert row(0, np.zeros((2, 2))) == pytest.approx(0.0, abs=1e-9)
    # a Monte Carlo check of the same integral from prior draws
    rng = np.random.default_rng(0)
    s = rng.pareto(1.5, 400_000) + 1.0  # numpy's Lomax + 1 = Pareto(1.5, s_min=1)
    m = rng.random(400_000)
    a0, a1 = s * m, s * (1 - m)
    log_lik = sum(
        gammaln(a0 + a1) - gammaln(a0 + a1 + n0 + n1)
        + gammaln(a0 + n0) - gammaln(a0) + gammaln(a1 + n1) - gammaln(a1)
        for n0, n1 in counts
    )  # fmt: skip
    monte_carlo = logsumexp(log_lik) - np.log(len(s))
    assert row(0, counts) == pytest.approx(monte_carlo, abs=0.01)
    assert labels.n_tasks == 4


# ---------------------------------------------------------------------------- coverage


@pytest.mark.slow
def test_credible_intervals_cover_true_worker_parameters():
    # 200 workers drawn from the model's own prior family (Beta(7.5, 2.5) sensitivities and
    # specificities: mean 0.75, scale 10 ≥ s_min), 50 labels each. Intervals at 90%: about 90%
    # of workers' true sensitivities and specificities should be inside (binomial sd ≈ 2%).
    data = simulate_labels(
        n_tasks=2000,
        n_workers=200,
        labels_per_task=5,
        accuracy_mean=0.75,
        accuracy_concentration=10,
        random_state=0,
    )
    model = HierarchicalAnnotation(n_chains=2, n_warmup=100, n_samples=200, random_state=0)
    model.fit(data.to_labels())
    assert model.credible_level_ == 0.9
    for table, k in ((model.sensitivity_, 1), (model.specificity_, 0)):
        table = table.loc[data.workers]
        truth = data.confusion[:, k, k]
        inside = (table["lower"] <= truth) & (truth <= table["upper"])
        assert 0.85 <= inside.mean() <= 0.95, (k, inside.mean())
        assert ((table["lower"] <= table["mean"]) & (table["mean"] <= table["upper"])).all()
        # and the intervals are informative, not [0, 1]
        assert (table["upper"] - table["lower"]).median() < 0.4
    # the learned hyperprior is close to the generating one
    np.testing.assert_allclose(np.diag(model.prior_mean_.to_numpy()), 0.75, atol=0.04)
    assert (model.prior_scale_ > 4).all() and (model.prior_scale_ < 25).all()
    assert accuracy(data.truth, model.labels_) >= accuracy(
        data.truth, MajorityVote(random_state=0).fit(data.to_labels()).labels_
    )


# ---------------------------------------------------------------------------- hyperpriors on RTE


def test_moment_hyperprior_diverges_on_rte():
    labels = load_labels("rte").to_labels()
    model = HierarchicalAnnotation(
        n_chains=2, n_warmup=30, n_samples=30, hyperprior="moment", random_state=0
    )
    with pytest.warns(
        DivergenceWarning, match=r"moment-matched prior scales diverged \(hit max_scale=1e\+06\)"
    ):
        model.fit(labels)
    assert model.diverged_
    assert model.prior_scale_.max() >= 1e5


def test_sampled_hyperprior_stays_finite_on_rte():
    labels = load_labels("rte").to_labels()
    model = HierarchicalAnnotation(n_chains=2, n_warmup=50, n_samples=50, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DivergenceWarning)
        model.fit(labels)
    assert not model.diverged_
    assert np.isfinite(model.prior_scale_).all()
    assert (model.prior_scale_ >= 1.0).all() and (model.prior_scale_ < 1e4).all()
    diagnostics = model.diagnostics_
    assert np.isfinite(diagnostics.loc[[f"prior_scale[{c}]" for c in (0, 1)], "mean"]).all()


def test_fixed_hyperprior_keeps_the_prior():
    labels = simulate_labels(200, 10, 3, random_state=3).to_labels()
    model = HierarchicalAnnotation(
        n_chains=2, n_warmup=5, n_samples=10, hyperprior="fixed", prior_diagonal=5.0,
        prior_off_diagonal=2.0, random_state=0,
    )  # fmt: skip
    model.fit(labels)
    np.testing.assert_allclose(model.prior_scale_.to_numpy(), 7.0)
    np.testing.assert_allclose(model.prior_mean_.to_numpy(), [[5 / 7, 2 / 7], [2 / 7, 5 / 7]])
    assert (model.n_relabelled_ == 0).all()


# ---------------------------------------------------------------------------- label switching


@pytest.mark.slow
def test_relabelling_keeps_weak_data_in_the_pivot_mode():
    """Few, noisy labels: under the symmetric hyperprior (``hyperprior_diagonal=0``) the chains
    wander into the mirror labelling and are mapped back; the default hyperprior leans to the
    diagonal, which breaks the symmetry, and gives the same answers."""
    data = simulate_labels(
        n_tasks=30, n_workers=6, labels_per_task=3, accuracy_mean=0.65,
        accuracy_concentration=10, random_state=1,
    )  # fmt: skip
    labels = data.to_labels()
    pivot = MajorityVote(ties="first").fit(labels).labels_
    for sampler, diagonal in [("blocked", 0.0), ("collapsed", 0.0), ("blocked", 3.0)]:
        model = HierarchicalAnnotation(
            n_chains=4, n_warmup=50, n_samples=150, sampler=sampler, random_state=0,
            hyperprior_diagonal=diagonal,
        ).fit(labels)  # fmt: skip
        if diagonal == 0.0:
            assert model.n_relabelled_.sum() >= 4, model.n_relabelled_
        assert (model.labels_ == pivot).mean() >= 0.9
        # aligned: workers look better than chance and probabilities are not washed out to 1/2
        assert (np.diag(model.prior_mean_.to_numpy()) > 0.6).all()
        assert np.abs(model.probas_[1] - 0.5).mean() > 0.2
        assert (model.sensitivity_["mean"].mean() > 0.6) and (
            model.specificity_["mean"].mean() > 0.6
        )


@pytest.mark.slow
def test_no_relabelling_on_easy_data():
    data = simulate_labels(
        n_tasks=300, n_workers=10, labels_per_task=5, accuracy_mean=0.8,
        accuracy_concentration=20, random_state=5,
    )  # fmt: skip
    for sampler in ("blocked", "collapsed"):
        model = HierarchicalAnnotation(
            n_chains=2, n_warmup=20, n_samples=30, sampler=sampler, random_state=0
        ).fit(data.to_labels())
        assert (model.n_relabelled_ == 0).all()
        assert accuracy(data.truth, model.labels_) > 0.9


def adversarial_majority(seed: int = 0, n_tasks: int = 60, n_gold: int = 12):
    """Three of five workers flip labels 90% of the time; gold on the first tasks says so."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_tasks)
    rows = []
    for i in range(n_tasks):
        for j, acc in enumerate([0.1, 0.1, 0.1, 0.9, 0.9]):
            rows.append((f"t{i}", f"w{j}", int(truth[i] if rng.random() < acc else 1 - truth[i])))
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    truth = pd.Series(truth, index=[f"t{i}" for i in range(n_tasks)])
    return frame, truth, truth.iloc[:n_gold]


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["blocked", "collapsed"])
@pytest.mark.parametrize("hyperprior", ["sample", "moment"])
def test_gold_identifies_classes_against_an_adversarial_majority(sampler, hyperprior):
    """The pivot (majority vote, gold where known) disagrees with the truth on most tasks, so a
    relabelling step would flip the chain — gold tasks included — onto the majority's story.
    With gold the classes are identified and the sampler must not relabel."""
    frame, truth, gold = adversarial_majority()
    labels = Labels(frame, gold=gold)
    rest = truth.drop(gold.index)
    assert accuracy(rest, MajorityVote(ties="first").fit(labels).labels_) < 0.3
    model = HierarchicalAnnotation(
        n_chains=2, n_warmup=30, n_samples=50, sampler=sampler, hyperprior=hyperprior,
        random_state=0,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DivergenceWarning)
        model.fit(labels)
    assert (model.n_relabelled_ == 0).all()
    np.testing.assert_array_equal(model.probas_.loc[gold.index].to_numpy(), np.eye(2)[gold])
    assert accuracy(rest, model.labels_) > 0.8
    if hyperprior == "sample":  # (moment matching pools workers' rows far more strongly)
        assert (model.confusion_.xs("w0", level="worker").to_numpy().diagonal() < 0.4).all()


def test_best_permutation_finds_the_matching_relabelling():
    rng = np.random.default_rng(0)
    pivot = rng.integers(0, 3, 50)
    cycle = np.array([1, 2, 0])
    permuted = cycle[pivot]  # classes renamed 0→1, 1→2, 2→0
    permutation = best_permutation(permuted, pivot, 3)
    np.testing.assert_array_equal(permutation[permuted], pivot)
    np.testing.assert_array_equal(best_permutation(pivot, pivot, 3), np.arange(3))
    # an exact tie keeps the labelling as it is
    tie = np.array([0, 0, 1, 1])
    np.testing.assert_array_equal(best_permutation(tie, np.array([0, 1, 1, 0]), 2), [0, 1])
    np.testing.assert_array_equal(best_permutation(1 - tie, tie, 2), [1, 0])


# ---------------------------------------------------------------------------- reproducibility


@pytest.fixture(scope="module")
def easy_labels() -> Labels:
    return simulate_labels(
        n_tasks=200, n_workers=8, labels_per_task=5, n_classes=3, accuracy_mean=0.8,
        accuracy_concentration=20, random_state=9,
    ).to_labels()  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["blocked", "collapsed"])
def test_same_seed_same_result_different_seed_different(sampler, easy_labels):
    options = dict(n_chains=2, n_warmup=10, n_samples=20, sampler=sampler)
    first = HierarchicalAnnotation(random_state=3, **options).fit(easy_labels)
    second = HierarchicalAnnotation(random_state=3, **options).fit(easy_labels)
    other = HierarchicalAnnotation(random_state=4, **options).fit(easy_labels)
    pd.testing.assert_frame_equal(first.probas_, second.probas_)
    pd.testing.assert_frame_equal(first.confusion_, second.confusion_)
    pd.testing.assert_frame_equal(first.diagnostics_, second.diagnostics_)
    assert not np.allclose(first.probas_.to_numpy(), other.probas_.to_numpy())
    # a Generator works as random_state too, and consumes no global state
    state = np.random.get_state()  # noqa: NPY002 - checking the legacy global state is untouched
    HierarchicalAnnotation(random_state=np.random.default_rng(3), **options).fit(easy_labels)
    assert np.array_equal(np.random.get_state()[1], state[1])  # noqa: NPY002


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["blocked", "collapsed"])
def test_results_do_not_depend_on_the_number_of_processes(sampler, easy_labels):
    """Each chain draws from its own generator: one process or several (forked), same numbers."""
    options = dict(n_chains=3, n_warmup=25, n_samples=20, sampler=sampler, random_state=5)
    one = HierarchicalAnnotation(n_jobs=1, **options).fit(easy_labels)
    many = HierarchicalAnnotation(n_jobs=2, **options).fit(easy_labels)
    every = HierarchicalAnnotation(n_jobs=-1, **options).fit(easy_labels)
    for other in (many, every):
        pd.testing.assert_frame_equal(one.probas_, other.probas_)
        pd.testing.assert_frame_equal(one.confusion_, other.confusion_)
        pd.testing.assert_frame_equal(one.diagnostics_, other.diagnostics_)
        np.testing.assert_array_equal(one.log_likelihood_trace_, other.log_likelihood_trace_)


def hyperparameter_conditional_moments(counts: np.ndarray, diagonal: float = 0.0) -> np.ndarray:
    """E[(log s_k, z_k)] under p(α_k | counts) for K = 2, by quadrature on a fine grid (the
    hyperprior of each row's mean Dir(1 + diagonal e_k))."""
    from crowdbayes.annotators.hierarchical import CountRows

    log_scale = np.linspace(0.0, 8.0, 801)
    z = np.linspace(-6.0, 6.0, 801)
    grid = np.stack(np.meshgrid(log_scale, z, indexing="ij"), axis=-1).reshape(-1, 1, 2)
    coords = np.broadcast_to(grid, (len(grid), 2, 2))
    log_density = CountRows(counts).log_posterior(coords, 1.5, 1.0, diagonal)
    weights = np.exp(log_density - log_density.max(axis=0))
    weights /= weights.sum(axis=0)
    return np.einsum("gk,gd->kd", weights, grid[:, 0])


@pytest.mark.slow
@pytest.mark.parametrize("diagonal", [0.0, 1.0])
@pytest.mark.parametrize("with_reference", [False, True])
def test_hyperparameter_update_leaves_its_conditional_invariant(with_reference, diagonal):
    """Many independent replicates of the α update (the coordinate-wise slice sweep before the
    chain has a reference; the elliptical slice step after) end at draws from p(α | counts):
    their mean coordinates match quadrature within 4 Monte-Carlo standard errors."""
    from crowdbayes.models.labels import _gibbs

    rng = np.random.default_rng(11)
    counts = rng.poisson([[8.0, 2.0], [1.5, 6.0]], size=(12, 2, 2)).astype(float)
    exact = hyperparameter_conditional_moments(counts, diagonal)
    settings = _gibbs.GibbsSettings(
        "blocked", "sample", 1.0, 1.5, 1.0, 1e6, False, False, hyperprior_diagonal=diagonal
    )
    draws = []
    for replicate in np.random.default_rng(0).spawn(400):
        chain = _gibbs.ChainState(
            classes=np.zeros(1, dtype=int), alpha=np.array([[4.0, 1.0], [1.0, 4.0]]),
            rng=replicate, stats=counts,
        )  # fmt: skip
        for step in range(8):
            _gibbs.update_hyperparameters(chain, settings, refresh=with_reference and step == 0)
        alpha = chain.alpha
        draws.append(np.stack([np.log(alpha.sum(1)), np.log(alpha[:, 0] / alpha[:, 1])], 1))
    draws = np.array(draws)
    se = draws.std(axis=0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - exact) < 4 * se)


def test_reference_sweeps_end_at_the_first_recorded_sweep():
    from crowdbayes.models.labels._gibbs import reference_sweeps

    assert reference_sweeps(200) == {10, 20, 40, 80, 160, 200}
    assert reference_sweeps(0) == {0}
    assert reference_sweeps(10) == {10}


@pytest.mark.slow
def test_diagnostics_on_easy_data(easy_labels):
    model = HierarchicalAnnotation(n_chains=3, n_warmup=50, n_samples=100, random_state=0)
    model.fit(easy_labels)
    diagnostics = model.diagnostics_
    assert {"mean", "sd", "rhat", "ess_bulk", "ess_tail"} <= set(diagnostics.columns)
    expected_rows = {"log_likelihood"} | {
        f"{name}[{c}]" for name in ("prevalence", "prior_scale") for c in range(3)
    }
    assert expected_rows == set(diagnostics.index)
    assert (diagnostics["rhat"] < 1.1).all()
    assert (diagnostics["ess_bulk"] > 30).all()
    rhat = model.confusion_rhat_.to_numpy()
    assert model.confusion_rhat_.shape == model.confusion_.shape
    assert np.nanmax(rhat) < 1.1
    assert np.nanmax(model.probas_rhat_.to_numpy()) < 1.1
    assert 1.0 <= model.max_rhat_ < 1.1
    assert model.log_likelihood_trace_.shape == (3, 100)
    assert model.n_iter_ == 150 and model.converged_ is None
    np.testing.assert_allclose(model.probas_.sum(axis=1), 1.0, atol=1e-12)
    assert model.prevalence_.sum() == pytest.approx(1.0)


def test_multimodal_chains_show_in_rhat():
    """Chains that settle in different modes must be flagged: R-hat well above 1."""
    data = simulate_labels(
        n_tasks=30, n_workers=6, labels_per_task=3, accuracy_mean=0.65,
        accuracy_concentration=10, random_state=1,
    )  # fmt: skip
    # fixed symmetric prior and no relabelling: the two mirror modes are equally likely
    model = HierarchicalAnnotation(
        n_chains=4, n_warmup=0, n_samples=40, hyperprior="fixed", prior_diagonal=1.0,
        prior_off_diagonal=1.0, random_state=2,
    )  # fmt: skip
    model.fit(data.to_labels())
    assert np.nanmax(model.probas_rhat_.to_numpy()) > 1.1 or model.max_rhat_ > 1.1


@pytest.mark.slow
def test_keep_trace_gives_draws_and_quantile_intervals(easy_labels):
    model = HierarchicalAnnotation(
        n_chains=2, n_warmup=10, n_samples=40, keep_trace=True, credible_level=0.8, random_state=0
    ).fit(easy_labels)
    draws = model.trace_["confusion"]
    assert draws.shape == (2, 40, easy_labels.n_workers, 3, 3)
    np.testing.assert_allclose(draws.sum(axis=-1), 1.0, atol=1e-9)
    lower = np.quantile(draws.reshape(-1, *draws.shape[2:]), 0.1, axis=0)
    upper = np.quantile(draws.reshape(-1, *draws.shape[2:]), 0.9, axis=0)
    np.testing.assert_allclose(model.confusion_lower_.to_numpy(), lower.reshape(-1, 3))
    np.testing.assert_allclose(model.confusion_upper_.to_numpy(), upper.reshape(-1, 3))
    assert model.credible_level_ == 0.8
    # the posterior mean is Rao–Blackwellised, close to (not equal to) the mean of the draws
    np.testing.assert_allclose(
        model.confusion_.to_numpy(), draws.mean(axis=(0, 1)).reshape(-1, 3), atol=0.05
    )
    without = HierarchicalAnnotation(n_chains=2, n_warmup=10, n_samples=40, random_state=0)
    assert not hasattr(without.fit(easy_labels), "trace_")


def test_single_chain_runs_without_numerical_warnings(easy_labels):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = HierarchicalAnnotation(n_chains=1, n_warmup=5, n_samples=20, random_state=0)
        model.fit(easy_labels)
    assert model.probas_.shape == (easy_labels.n_tasks, 3)


@pytest.mark.slow
def test_vb_initialisation_agrees_with_majority_start(easy_labels):
    options = dict(n_chains=2, n_warmup=20, n_samples=40, random_state=0)
    from_vb = HierarchicalAnnotation(init="vb", **options).fit(easy_labels)
    from_votes = HierarchicalAnnotation(init="majority", **options).fit(easy_labels)
    assert (from_vb.labels_ == from_votes.labels_).mean() > 0.97


@pytest.mark.parametrize(
    "options, message",
    [
        ({"sampler": "metropolis"}, "'sampler' must be one of 'blocked', 'collapsed'; got "),
        ({"hyperprior": "flat"}, "'hyperprior' must be one of 'sample', 'moment', 'fixed'; got"),
        ({"n_samples": 3}, "'n_samples' must be an integer in [4, inf); got 3"),
        ({"n_chains": 0}, "'n_chains' must be an integer in [1, inf); got 0"),
        ({"prior_diagonal": 0.0}, "'prior_diagonal' must be a number in (0, inf); got 0.0"),
        ({"credible_level": 1.0}, "'credible_level' must be a number in (0, 1); got 1.0"),
        ({"init": "random"}, "'init' must be one of 'majority', 'vb'; got 'random'"),
    ],
)
def test_invalid_parameters(options, message, easy_labels):
    with pytest.raises(ValueError, match=re.escape(message)):
        HierarchicalAnnotation(**options).fit(easy_labels)
