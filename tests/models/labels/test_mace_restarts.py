"""MACE's restarts and learned strategy prior (issue 40): the collapse the restarts fix on a
spammer-heavy crowd, the choice by objective, the strategy prior's empirical Bayes, and the
bar against crowd-kit's MACE on the simulated and the shared sets.

crowd-kit's MACE() takes 5 s to 13 min a set (pandas group-bys, 10 × 50 iterations), so the
shared-set test compares with its accuracies recorded by
``benchmarks/labels/mace_vs_crowdkit.py`` (``results/mace_vs_crowdkit_crowdkit.csv``, and
``..._aligned.csv`` for its MACE on the table recoded by
:func:`~crowdbayes.models.labels._mace_scenarios.appearance_sorted`, where its index bug does
not bite), and a slow test refits crowd-kit on the small sets to check that the record still
holds."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes import MACE, MajorityVote
from crowdbayes.annotators.hierarchical import dirichlet_multinomial_log_likelihoods
from crowdbayes.datasets import load_labels
from crowdbayes.metrics import accuracy
from crowdbayes.models.labels._mace_scenarios import appearance_sorted, simulate_spammer_crowd
from crowdbayes.models.labels.mace import symmetric_dirichlet_concentration

#: crowd-kit 1.4.2 MACE() accuracy on the gold tasks of each shared set
#: (benchmarks/labels/results/mace_vs_crowdkit_crowdkit.csv)
CROWDKIT = {
    "bluebird": 0.731481,
    "wsd": 0.994350,
    "temp": 0.939394,
    "rte": 0.925000,
    "dog": 0.830235,
    "duchenne": 0.786164,
    "web": 0.826611,
    "d_possent": 0.950000,
    "d_product": 0.929044,
    "s_adult": 0.762763,
    "trec": 0.597363,
    "s_rel": 0.500897,
}
#: crowd-kit 1.4.2 MACE() accuracy on the same tables recoded by ``appearance_sorted``
#: (benchmarks/labels/results/mace_vs_crowdkit_crowdkit_aligned.csv)
CROWDKIT_ALIGNED = {
    "bluebird": 0.861111,
    "wsd": 0.994350,
    "temp": 0.943723,
    "rte": 0.926250,
    "dog": 0.830235,
    "duchenne": 0.742138,
    "web": 0.838673,
    "d_possent": 0.957000,
    "d_product": 0.816236,
    "s_adult": 0.780781,
    "trec": 0.708571,
    "s_rel": 0.607399,
}
REFERENCES = {"as given": CROWDKIT, "aligned": CROWDKIT_ALIGNED}
#: sets where MACE() is still more than 0.005 below a reference (MACE() at the time of
#: writing: duchenne 0.7799, one task short of crowd-kit as given, whose 0.786 its index bug
#: makes: 0.742 aligned; web 0.8187 and S_Adult 0.7508, below both: the learned class prior,
#: see MACE's docstring and benchmarks/labels/results/mace_vs_crowdkit_notes.md); strict, so
#: a fix shows up
BELOW_THE_BAR = {"as given": {"duchenne", "web", "s_adult"}, "aligned": {"web", "s_adult"}}
BAR = 0.005


def fit(model, frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(frame)


@pytest.fixture(scope="module")
def one_class_spammers():
    """Binary, 2,000 tasks, 200 workers, 5 labels a task, 80% spammers who always give one
    class: a single run from the vote shares collapses the class prior onto one class."""
    return simulate_spammer_crowd(n_classes=2, spammer_share=0.8, spammer_kind="one-class")


def test_restarts_escape_the_collapsed_mode(one_class_spammers):
    crowd = one_class_spammers
    # with the class prior learned, as before the BIC choice (below)
    single = fit(MACE(n_restarts=0, learn_prevalence=True), crowd.labels)
    default = fit(MACE(learn_prevalence=True), crowd.labels)
    vote = fit(MajorityVote(ties="random", random_state=0), crowd.labels)
    # the single run puts (almost) every task in one class: below majority vote (0.52, 0.62)
    assert single.prevalence_.min() < 0.01
    assert accuracy(crowd.truth, single.labels_) < accuracy(crowd.truth, vote.labels_)
    # the restart kept has the best objective, and a higher one than the single run's
    assert default.best_restart_ == int(np.argmax(default.restart_objectives_))
    assert default.objective_history_[-1] > single.objective_history_[-1]
    # 0.7335; crowd-kit's MACE() 0.546 on this set (benchmarks/labels/results/mace_vs_crowdkit.md)
    assert accuracy(crowd.truth, default.labels_) >= 0.72
    spam = default.spamming_["mean"]
    assert spam[crowd.spammers].mean() > spam.drop(crowd.spammers).mean() + 0.3


def test_the_class_prior_chosen_by_bic_avoids_the_collapse(one_class_spammers):
    """The learned class prior gains 0.1 in log-likelihood here, less than BIC's price for it
    (0.5 log 2000 = 3.8): ``learn_prevalence="auto"`` keeps Hovy's uniform prior, and even one
    run does not collapse."""
    crowd = one_class_spammers
    for model in (MACE(learn_prevalence="auto"), MACE(learn_prevalence="auto", n_restarts=0)):
        fitted = fit(model, crowd.labels)
        assert fitted.class_prior_ == "uniform"
        scores = fitted.class_prior_scores_
        assert scores["uniform"] > scores["learned"]
        assert accuracy(crowd.truth, fitted.labels_) >= 0.72


def test_restarts_are_reproducible_and_keep_the_vote_share_start(one_class_spammers):
    frame = one_class_spammers.labels
    first, second = fit(MACE(), frame), fit(MACE(), frame)
    np.testing.assert_array_equal(first.restart_objectives_, second.restart_objectives_)
    assert len(first.restart_objectives_) == 11  # the vote-share start and 10 random ones
    single = fit(MACE(n_restarts=0, restart_iter=50), frame)
    assert first.restart_objectives_[0] == pytest.approx(single.objective_history_[49])


def test_em_refuses_a_strategy_prior_below_its_smoothing():
    frame = simulate_spammer_crowd(n_tasks=20, n_workers=10, labels_per_task=3).labels
    with pytest.raises(ValueError, match="smoothing \\+ strategy_prior >= 1"):
        MACE(strategy_prior=0.5).fit(frame)


@pytest.mark.slow  # crowd-kit's MACE: 20-60 s on 10,000 labels
def test_at_least_crowdkit_on_a_spammer_heavy_crowd(one_class_spammers):
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    crowd = one_class_spammers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = crowdkit.MACE().fit_predict(crowd.labels)
    ours = fit(MACE(), crowd.labels)
    assert accuracy(crowd.truth, ours.labels_) >= accuracy(crowd.truth, theirs) - BAR


@pytest.fixture(scope="module")
def shared_fits():
    """MACE()'s accuracy on each shared set, fitted once for both references."""
    cache = {}

    def accuracy_on(name):
        if name not in cache:
            data = load_labels(name)
            cache[name] = accuracy(data.gold, fit(MACE(), data.labels).labels_)
        return cache[name]

    return accuracy_on


@pytest.mark.parametrize(
    ("name", "reference"),
    [
        pytest.param(
            name,
            reference,
            marks=pytest.mark.xfail(strict=True, reason="issue 40: still below crowd-kit")
            if name in BELOW_THE_BAR[reference]
            else (),
        )
        for reference in REFERENCES
        for name in CROWDKIT
    ],
)
def test_at_least_crowdkit_on_the_shared_sets(data_root, shared_fits, name, reference):
    assert shared_fits(name) >= REFERENCES[reference][name] - BAR


@pytest.mark.slow  # crowd-kit's MACE: 5-15 s a fit
@pytest.mark.parametrize("name", ["bluebird", "wsd"])
def test_the_recorded_crowdkit_accuracies_hold(data_root, name):
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    data = load_labels(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = crowdkit.MACE().fit_predict(data.labels)
        aligned = crowdkit.MACE().fit_predict(appearance_sorted(data.labels))
    assert accuracy(data.gold, theirs) == pytest.approx(CROWDKIT[name], abs=1e-6)
    assert accuracy(data.gold, aligned) == pytest.approx(CROWDKIT_ALIGNED[name], abs=1e-6)


def test_appearance_sorted_keeps_the_labels_and_sorts_ids_by_appearance():
    frame = pd.DataFrame(
        {
            "task": ["a", "a", "b", "b", "c"],
            "worker": ["z", "y", "z", "x", "x"],
            "label": [2, 0, 1, 2, 0],
        }
    )
    out = appearance_sorted(frame)
    workers, _ = pd.factorize(out["worker"])
    assert list(pd.unique(out["worker"])) == sorted(pd.unique(out["worker"]))
    assert list(pd.unique(out["label"])) == [0, 1, 2]
    assert len(set(workers)) == 3
    # the same answers: each (task, original worker) keeps its label
    back = out.join(frame["worker"].rename("original"))
    pd.testing.assert_frame_equal(back.sort_index()[["task", "label"]], frame[["task", "label"]])
    assert back.groupby("worker")["original"].nunique().eq(1).all()


def test_symmetric_dirichlet_concentration_is_the_maximum_likelihood():
    rng = np.random.default_rng(0)
    for true in (0.1, 5.0):
        strategies = rng.dirichlet(np.full(4, true), size=300)
        counts = np.stack([rng.multinomial(30, p) for p in strategies]).astype(float)
        beta = symmetric_dirichlet_concentration(counts, 1.0)
        assert beta == pytest.approx(true, rel=0.3)

        def loglik(b, counts=counts):
            return dirichlet_multinomial_log_likelihoods(counts, np.full(4, b)).sum()

        assert loglik(beta) >= max(loglik(beta * 1.05), loglik(beta / 1.05))
    # rows without counts carry no evidence
    assert symmetric_dirichlet_concentration(np.zeros((3, 4)), 0.7) == 0.7


@pytest.mark.parametrize(
    ("share", "kind", "crowdkit", "learned", "class_prior"),
    [(0.6, "uniform", 0.818, (50, 1e3), True), (0.8, "one-class", 0.6425, (0, 0.5), "auto")],
)
def test_the_strategy_prior_learns_how_uniform_spammers_are(
    share, kind, crowdkit, learned, class_prior
):
    """4 classes, 200 workers: uniform spammers get a near-uniform strategy prior (a flat one
    left this crowd 0.0085 below crowd-kit's Dirichlet(10)), one-class spammers a sparse one
    (where Dirichlet(10) collapses). On the one-class crowd the learned class prior follows the
    spammers' class (MACE(): 0.615, crowd-kit as given 0.368): the uniform one that BIC keeps
    reaches crowd-kit's aligned 0.6425."""
    crowd = simulate_spammer_crowd(n_classes=4, spammer_share=share, spammer_kind=kind)
    model = fit(MACE(learn_prevalence=class_prior), crowd.labels)
    assert learned[0] < model.strategy_concentration_ < learned[1]
    # crowd-kit MACE()'s accuracy, the higher of as given and aligned (0.368 as given on the
    # one-class crowd; benchmarks/labels/results/mace_vs_crowdkit_crowdkit*.csv)
    assert accuracy(crowd.truth, model.labels_) >= crowdkit - BAR
    fixed = fit(MACE(learn_prevalence=class_prior, learn_strategy_prior=False), crowd.labels)
    assert fixed.strategy_concentration_ is None
    if kind == "uniform":
        assert accuracy(crowd.truth, fixed.labels_) < crowdkit - BAR


def test_vb_does_not_learn_the_strategy_prior():
    frame = simulate_spammer_crowd(n_tasks=20, n_workers=10, labels_per_task=3).labels
    with pytest.raises(ValueError, match="learn_strategy_prior=True is EM's"):
        MACE(variational=True, learn_strategy_prior=True).fit(frame)
