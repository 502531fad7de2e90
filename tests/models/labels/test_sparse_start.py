"""Every label model on sparse starts (issue 16): one or two random labels per task.

With one label per task the data say nothing about the workers beyond how often each gives each
label, so a sound model answers like majority vote; with two, the workers are barely identified
and the fit must not slide into one class holding every task (it did: RTE at one label per task
scored 0.500 claiming 0.996). Pinned on the 12 shared sets with gold, against majority vote
(minus 0.005), on the mean over three random starts (the label pool's seeds 0, 1, 2).

HierarchicalAnnotation runs at one label per task only (its 72 fits at both budgets take
minutes; two labels: ``benchmarks/active/results/active_sparse_hierarchical.md``). Left out:
GoldMajorityVote (it needs gold, which a sparse start does not give it) and the models of
other data (ordinal grades, features, continuous values). KOS is binary: it runs on the binary
sets only.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes import (
    KOS,
    MACE,
    BayesianDawidSkene,
    CommunityDawidSkene,
    DawidSkene,
    HierarchicalAnnotation,
    MajorityVote,
)
from crowdbayes.active import LabelPool
from crowdbayes.datasets import load_labels, simulate_labels
from crowdbayes.exceptions import ConvergenceWarning
from label_models import LABEL_MODELS
from label_sets import GOLD_SETS

MODELS = LABEL_MODELS

# At two labels per task a worker has a handful of labels, each paired with one other worker's:
# the workers are barely identified, and these fits end below majority vote (model / majority
# vote, mean of the three starts, measured 2026-11-26). At one label per task none is.
# - DS (maximum likelihood, as Dawid & Skene) fits a full matrix to ~5 labels per worker and
#   over-trusts it (bluebird claims 0.89); BayesianDawidSkene's priors are the remedy there.
# - BDS: see its docstring; S_Adult is below majority vote at every budget for the
#   Dawid-Skene family (all labels: 0.739-0.766 against 0.760).
# - S_Adult (DS, MACE, BDS) and S_Rel (BDS): their gold tasks have another class mix than the
#   set's tasks, on which the models learn the class prior; without it the same fits are above
#   majority vote (test_below_majority_vote_only_through_the_class_prior_where_gold_is_selected).
# - MMSR and KOS estimate skills from the agreement of pairs of workers, which two labels per
#   task leave nearly empty (MMSR's prior of two pseudo-tasks per pair lifts bluebird and dog;
#   WSD, with a class of 1%, stays 0.006 below).
BELOW_MAJORITY_VOTE = {
    "DS": {"bluebird": (0.593, 0.639), "s_adult": (0.672, 0.682)},
    "MACE": {"s_adult": (0.666, 0.682)},
    "BDS": {"s_adult": (0.651, 0.682), "s_rel": (0.410, 0.455)},
    "GLAD": {"trec": (0.603, 0.614)},
    "MMSR": {"wsd": (0.968, 0.974)},
    "KOS": {
        "bluebird": (0.549, 0.639),
        "rte": (0.508, 0.733),
        "temp": (0.566, 0.768),
        "trec": (0.568, 0.614),
    },
}
SEEDS = (0, 1, 2)


@functools.cache
def _starts(name: str, labels_per_task: int) -> tuple:
    """The three random starts of a set (pool, labels) and majority vote's mean score on them,
    shared by every model's test."""
    data = load_labels(name)
    starts, majority = [], 0.0
    for seed in SEEDS:
        pool = LabelPool(data.labels, data.gold, start=labels_per_task, random_state=seed)
        (labels,) = pool.fit_args()
        starts.append((pool, labels))
        majority += pool.score(MajorityVote().fit(labels)) / len(SEEDS)
    return tuple(starts), majority


def _cases():
    for key in MODELS:
        for labels_per_task in (1, 2):
            for name in GOLD_SETS:
                marks = ()
                measured = BELOW_MAJORITY_VOTE.get(key, {}).get(name)
                if labels_per_task == 2 and measured is not None:
                    marks = pytest.mark.xfail(
                        strict=True,
                        reason=f"issue 16: {measured[0]:.3f} against majority vote "
                        f"{measured[1]:.3f} at 2 labels per task",
                    )
                yield pytest.param(
                    key, name, labels_per_task, marks=marks, id=f"{key}-{name}-{labels_per_task}"
                )


@pytest.mark.parametrize(("key", "name", "labels_per_task"), list(_cases()))
def test_at_least_majority_vote_on_a_sparse_start(data_root, key, name, labels_per_task):
    starts, majority = _starts(name, labels_per_task)
    scores = []
    for pool, labels in starts:
        if key == "KOS" and labels.n_classes != 2:
            # a multi-class set: KOS must refuse it, naming the problem
            with pytest.raises(ValueError, match="KOS is for binary labels"):
                MODELS[key]().fit(labels)
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = MODELS[key]().fit(labels)
        scores.append(pool.score(model))
        assert model.labels_.nunique() > 1  # never every task in one class
    score = sum(scores) / len(SEEDS)
    assert score >= majority - 0.005, f"{name}: {score:.3f} < majority vote {majority:.3f}"


#: the sparse-start cases below majority vote whose gold tasks are a selected few of the set's
#: (S_Adult: 333 of 11,040 tasks, S_Rel: 4,460 of 20,232) with another class mix than the rest
SELECTED_GOLD_CASES = [("DS", "s_adult"), ("MACE", "s_adult"), ("BDS", "s_adult"), ("BDS", "s_rel")]


@pytest.mark.parametrize(("key", "name"), SELECTED_GOLD_CASES)
def test_below_majority_vote_only_through_the_class_prior_where_gold_is_selected(
    data_root, key, name
):
    """S_Adult's and S_Rel's gold tasks are not drawn at random from their tasks: the crowd's
    labels give class 0 (no adult content) 64% of the time on S_Adult's gold tasks against 76%
    on all its tasks, and S_Rel's class 3 17% against 7%. A model that learns the classes'
    shares learns them on all the tasks and applies them to gold tasks of another mix, which
    majority vote (no class prior) does not. With the fitted class prior divided out of each
    posterior (Saerens, Latinne & Decaestecker 2002: the same fit, every class equally likely
    a priori) the four fits below majority vote at two labels per task are above it: S_Adult
    0.701–0.734 against 0.682, S_Rel 0.506 against 0.455 (measured 2026-11-28)."""
    starts, majority = _starts(name, 2)
    with_prior, without = [], []
    for pool, labels in starts:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = MODELS[key]().fit(labels)
        gold = pool.gold
        flat = model.probas_.reindex(gold.index) / model.prevalence_.to_numpy()
        without.append(float((flat.idxmax(axis=1) == gold).mean()))
        with_prior.append(pool.score(model))
    assert sum(with_prior) / len(SEEDS) < majority - 0.005  # the recorded case
    score = sum(without) / len(SEEDS)
    assert score >= majority - 0.005, f"{name}: {score:.3f} < majority vote {majority:.3f}"


@pytest.mark.parametrize("name", GOLD_SETS)
def test_hierarchical_model_answers_like_majority_vote_at_one_label_per_task(data_root, name):
    """Nothing is learnt about any worker: the hyperprior's lean to the diagonal makes the
    answer the label (S_Adult, S_Rel and WSD were below majority vote with the symmetric
    hyperprior and the relabelling judged on every task). Fewer sweeps than the defaults, for
    time; the defaults match majority vote on all 12 sets too (measured in the issue-16 notes)."""
    starts, majority = _starts(name, 1)
    scores = []
    for seed, (pool, labels) in zip(SEEDS, starts, strict=True):
        model = HierarchicalAnnotation(n_warmup=100, n_samples=100, random_state=seed)
        scores.append(pool.score(model.fit(labels)))
    score = sum(scores) / len(SEEDS)
    assert score >= majority - 0.005, f"{name}: {score:.3f} < majority vote {majority:.3f}"


@pytest.mark.parametrize(("name", "refits"), [("bluebird", True), ("web", True), ("rte", False)])
@pytest.mark.parametrize(
    "make", [CommunityDawidSkene, lambda: BayesianDawidSkene(prior_prevalence="auto")]
)
def test_the_refit_rule_takes_the_strong_prior_when_a_class_vanishes(data_root, make, name, refits):
    """At two random labels per task the flat prior's fit of bluebird puts every task in one
    class and web's uses three of five classes; RTE's keeps both."""
    starts, _ = _starts(name, 2)
    _, labels = starts[0]
    model = make().fit(labels)
    expected = type(model).collapse_prevalence if refits else 1.0
    assert model.prior_prevalence_ == expected


@pytest.mark.parametrize("key", ["DS", "BDS", "CDS", "MACE", "MACE-VB"])
@pytest.mark.parametrize("name", ["rte", "temp", "wsd"])
def test_one_label_per_task_follows_the_label_with_the_prior_confidence(data_root, name, key):
    data = load_labels(name)
    pool = LabelPool(data.labels, data.gold, start=1, random_state=0)
    (labels,) = pool.fit_args()
    model = MODELS[key]().fit(labels)
    given = labels.to_frame().set_index("task")["label"]
    assert (model.labels_.loc[given.index] == given).all()
    # no evidence on the workers: the confidence is the prior's, the same for every task
    confidence = model.probas_.max(axis=1)
    assert confidence.max() - confidence.min() < 1e-9
    assert confidence.iloc[0] < 0.8


# ------------------------------------------------------------- the cut, on simulated labels
CUT_MODELS = {
    "DS": (DawidSkene, "confusion_", "log_posterior_history_"),
    "MACE": (MACE, "confusion_", "objective_history_"),
    "MACE-VB": (lambda **kw: MACE(variational=True, **kw), "confusion_", "objective_history_"),
}


def _with_single_worker_tasks(k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Simulated labels (3 per task), and the same plus 300 tasks that one worker labelled."""
    frame = simulate_labels(
        n_tasks=300, n_workers=15, labels_per_task=3, n_classes=k, random_state=k
    ).labels
    rng = np.random.default_rng(k)
    extra = pd.DataFrame(
        {
            "task": [f"single{i}" for i in range(300)],
            "worker": rng.choice(frame["worker"].unique(), size=300),
            "label": rng.choice(frame["label"].unique(), size=300),
        }
    )
    return frame, pd.concat([frame, extra], ignore_index=True)


@pytest.mark.parametrize("key", list(CUT_MODELS))
@pytest.mark.parametrize("k", [2, 3])
def test_tasks_one_worker_labelled_do_not_move_the_workers(key, k):
    """Cut tasks (one label, no gold) add nothing to the worker statistics: the workers' fit is
    the one without them, however their labels are spread."""
    model_class, attribute, _ = CUT_MODELS[key]
    frame, more = _with_single_worker_tasks(k)
    alone = model_class(max_iter=50, tol=None).fit(frame)
    extended = model_class(max_iter=50, tol=None).fit(more)
    np.testing.assert_allclose(
        getattr(extended, attribute).to_numpy(), getattr(alone, attribute).to_numpy(), atol=1e-10
    )
    np.testing.assert_allclose(extended.prevalence_, alone.prevalence_, atol=1e-10)
    np.testing.assert_allclose(extended.probas_.loc[alone.probas_.index], alone.probas_, atol=1e-10)


@pytest.mark.parametrize("key", list(CUT_MODELS))
def test_objective_never_decreases_with_cut_tasks(key):
    model_class, _, history_name = CUT_MODELS[key]
    _, more = _with_single_worker_tasks(3)
    history = np.asarray(getattr(model_class(max_iter=60, tol=None).fit(more), history_name))
    assert np.isfinite(history).all() and len(history) == 60
    assert np.all(np.diff(history) >= -1e-9 * np.maximum(1.0, np.abs(history[1:])))


def test_kos_follows_the_label_when_no_message_reaches_a_task():
    """With one label per task every KOS message is zero: the plain vote decides, not a coin."""
    frame, _ = _with_single_worker_tasks(2)
    single = frame.drop_duplicates("task")
    model = KOS(random_state=0).fit(single)
    given = single.set_index("task")["label"]
    assert (model.labels_.loc[given.index] == given).all()
