"""Bayesian and community Dawid–Skene on sparse starts (issue 16): one or two random labels
per task.

With one label per task the data say nothing about the workers beyond how often each gives each
label, so a sound model answers like majority vote; with two, the workers are barely identified
and the fit must not slide into one class holding every task (it did: RTE at one label per task
scored 0.500 claiming 0.996). Pinned on the 12 shared sets with gold, against majority vote
(minus 0.005), on the mean over three random starts (the label pool's seeds 0, 1, 2).
"""

from __future__ import annotations

import warnings

import pytest

from crowdbayes import BayesianDawidSkene, CommunityDawidSkene, MajorityVote
from crowdbayes.active import LabelPool
from crowdbayes.datasets import load_labels
from crowdbayes.exceptions import ConvergenceWarning
from label_sets import GOLD_SETS

# Dawid–Skene models are less accurate than majority vote on S_Adult at every budget (all
# labels: 0.742 against 0.757; two labels per task: 0.640-0.658 against 0.673-0.700); on S_Rel
# at two labels per task the fit does not converge in 500 sweeps and ends 0.05-0.09 below
# majority vote on two of the three starts. The community model at two labels per task is
# below majority vote on bluebird (0.556 against 0.639: 39 workers with about 5.5 labels each)
# and web (0.505 against 0.553, five classes)
BELOW_MAJORITY_VOTE = {
    BayesianDawidSkene: {("s_adult", 2), ("s_rel", 2)},
    CommunityDawidSkene: {("bluebird", 2), ("web", 2)},
}
SEEDS = (0, 1, 2)


def _cases():
    for model, below in BELOW_MAJORITY_VOTE.items():
        for labels_per_task in (1, 2):
            for name in GOLD_SETS:
                marks = ()
                if (name, labels_per_task) in below:
                    marks = pytest.mark.xfail(
                        strict=True, reason="issue 16: below majority vote at 2 labels per task"
                    )
                yield pytest.param(
                    model,
                    name,
                    labels_per_task,
                    marks=marks,
                    id=f"{model.__name__}-{name}-{labels_per_task}",
                )


@pytest.mark.parametrize(("model_class", "name", "labels_per_task"), list(_cases()))
def test_at_least_majority_vote_on_a_sparse_start(data_root, model_class, name, labels_per_task):
    data = load_labels(name)
    scores, majority = [], []
    for seed in SEEDS:
        pool = LabelPool(data.labels, data.gold, start=labels_per_task, random_state=seed)
        (labels,) = pool.fit_args()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = model_class().fit(labels)
        scores.append(pool.score(model))
        majority.append(pool.score(MajorityVote().fit(labels)))
        assert model.labels_.nunique() > 1  # never every task in one class
    score, majority = sum(scores) / len(SEEDS), sum(majority) / len(SEEDS)
    assert score >= majority - 0.005, f"{name}: {score:.3f} < majority vote {majority:.3f}"


@pytest.mark.parametrize("model_class", [BayesianDawidSkene, CommunityDawidSkene])
@pytest.mark.parametrize("name", ["rte", "temp", "wsd"])
def test_one_label_per_task_follows_the_label_with_the_prior_confidence(
    data_root, name, model_class
):
    data = load_labels(name)
    pool = LabelPool(data.labels, data.gold, start=1, random_state=0)
    (labels,) = pool.fit_args()
    model = model_class().fit(labels)
    given = labels.to_frame().set_index("task")["label"]
    assert (model.labels_.loc[given.index] == given).all()
    # no evidence on the workers: the confidence is the prior's, the same for every task
    confidence = model.probas_.max(axis=1)
    assert confidence.max() - confidence.min() < 1e-9
    assert confidence.iloc[0] < 0.8
