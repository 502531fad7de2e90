"""Every label model on imbalanced classes: the model's own simulated data, ten per cent
positives, three labels per task, ten workers (1,000 tasks, three sets).

Pinned against majority vote (minus 0.005) on the mean over the three sets. Known failures
(strict xfails, measured 2026-11-27):

- BayesianDawidSkene and CommunityDawidSkene: their constant prevalence priors (Dirichlet(100)
  and (30), chosen so that sparse two-label starts of the real shared sets do not put every
  task in one class) pull the classes towards equal shares, and here the truth and a balanced
  mode are a few nats of likelihood apart: 0.708 and 0.765, against majority vote's 0.837 and
  0.916 / 0.907 with a flat prior (test below). A prior as strong as the share of two-view
  tasks (flat once every task has three labels) fixed this but broke three-label starts of the
  real sets (bluebird 0.556, web 0.528 against majority vote's 0.698, 0.627;
  ``benchmarks/results/active_sparse_two_view.md``): the collapse there comes from workers
  with few labels, not from two views alone. Issue 16.
- M-MSR estimates skills from the agreement of pairs of workers and has no class prior: 0.822.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from crowdbayes import BayesianDawidSkene, CommunityDawidSkene, MajorityVote
from crowdbayes.datasets import simulate_labels
from crowdbayes.exceptions import ConvergenceWarning
from label_models import LABEL_MODELS

MODELS = LABEL_MODELS
BELOW_MAJORITY_VOTE = {"BDS": 0.708, "CDS": 0.765, "MMSR": 0.822}
SEEDS = (0, 1, 2)


@functools.cache
def _simulated() -> tuple:
    """Three sets of 1,000 tasks, 10 workers, 3 labels per task, 10% positives; and majority
    vote's mean accuracy on them."""
    sets = [
        simulate_labels(
            n_tasks=1000, n_workers=10, labels_per_task=3, prevalence=[0.9, 0.1], random_state=s
        )
        for s in SEEDS
    ]
    return tuple(sets), float(np.mean([_accuracy(MajorityVote(), sim) for sim in sets]))


def _accuracy(model, sim) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(sim.labels)
    return float((model.labels_.reindex(sim.truth.index) == sim.truth).mean())


def _cases():
    for key in MODELS:
        marks = ()
        if key in BELOW_MAJORITY_VOTE:
            marks = pytest.mark.xfail(
                strict=True, reason=f"{BELOW_MAJORITY_VOTE[key]} against majority vote 0.837"
            )
        yield pytest.param(key, marks=marks, id=key)


@pytest.mark.parametrize("key", list(_cases()))
def test_at_least_majority_vote_on_imbalanced_classes(key):
    sets, majority = _simulated()
    score = float(np.mean([_accuracy(MODELS[key](), sim) for sim in sets]))
    assert score >= majority - 0.005, f"{key}: {score:.3f} < majority vote {majority:.3f}"


@pytest.mark.parametrize("model_class", [BayesianDawidSkene, CommunityDawidSkene])
def test_a_flat_prevalence_prior_passes(model_class):
    """The same data with a flat Dirichlet(1) on the prevalence: the defaults' prior is what
    fails above (the test there can pass)."""
    sets, majority = _simulated()
    score = np.mean([_accuracy(model_class(prior_prevalence=1.0), sim) for sim in sets])
    assert score >= majority + 0.05
