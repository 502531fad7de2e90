"""Label models on the shared real label sets (``CROWDBAYES_DATA``), with published yardsticks.

RTE (Snow et al. 2008): 800 tasks, 164 workers, 10 labels per task. Published accuracies:
majority vote 0.897 (ties split at random), Dawid–Skene 0.9275; Carpenter's hierarchical model
is at least as good and better calibrated.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes import (
    BayesianDawidSkene,
    ConvergenceWarning,
    DataWarning,
    DawidSkene,
    HierarchicalAnnotation,
    MajorityVote,
)
from crowdbayes.datasets import load_labels
from crowdbayes.metrics import accuracy, log_loss
from label_sets import GOLD_SETS


@pytest.fixture(scope="module")
def rte(data_root):
    data = load_labels("rte")
    assert data.location is not None and str(data.location).startswith(str(data_root))
    return data


@pytest.fixture(scope="module")
def crowdkit_rte_log_loss(rte) -> float:
    from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # crowd-kit's pandas deprecations
        model = CrowdKitDawidSkene(n_iter=100).fit(rte.labels)
    assert accuracy(rte.gold, model.labels_.loc[rte.gold.index]) == pytest.approx(0.9275)
    return log_loss(rte.gold, model.probas_.loc[rte.gold.index])


def test_rte_majority_vote_with_random_ties(rte):
    labels = rte.to_labels()
    scores = [
        accuracy(rte.gold, MajorityVote(ties="random", random_state=seed).fit(labels).labels_)
        for seed in range(3)
    ]
    for score in scores:
        assert score == pytest.approx(0.897, abs=0.01)


def test_rte_hierarchical_default_settings(rte, crowdkit_rte_log_loss):
    model = HierarchicalAnnotation(random_state=0).fit(rte.to_labels())
    assert accuracy(rte.gold, model.labels_) >= 0.9275
    assert log_loss(rte.gold, model.probas_) < crowdkit_rte_log_loss
    assert not model.diverged_
    assert model.max_rhat_ < 1.1


def test_rte_bayesian_dawid_skene(rte, crowdkit_rte_log_loss):
    model = BayesianDawidSkene().fit(rte.to_labels())
    assert model.converged_
    assert accuracy(rte.gold, model.labels_) >= 0.9275
    assert log_loss(rte.gold, model.probas_) < crowdkit_rte_log_loss


def test_rte_gold_clamping_with_shared_gold(rte):
    """Half the gold given to the model: those tasks are fixed, the rest do not get worse."""
    given = rte.gold.iloc[::2]
    held_out = rte.gold.drop(given.index)
    with_gold = BayesianDawidSkene().fit(rte.to_labels(gold=given))
    without = BayesianDawidSkene().fit(rte.to_labels())
    assert (with_gold.labels_.loc[given.index] == given).all()
    assert accuracy(held_out, with_gold.labels_) >= accuracy(held_out, without.labels_) - 0.005


def fast_models():
    return {
        "MajorityVote": MajorityVote(random_state=0),
        "DawidSkene": DawidSkene(),
        "DawidSkene-one_coin": DawidSkene(one_coin=True),
        "BayesianDawidSkene": BayesianDawidSkene(),
        # a short run: this pass checks that everything runs and is sane, not precision
        "HierarchicalAnnotation": HierarchicalAnnotation(
            n_chains=2, n_warmup=20, n_samples=30, random_state=0
        ),
    }


@pytest.mark.parametrize("name", GOLD_SETS)
def test_every_gold_label_set(name, data_root):
    data = load_labels(name)
    assert data.gold is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # some sets repeat task–worker pairs
        labels = data.to_labels()
    gold = data.gold[data.gold.index.isin(labels.tasks)]
    assert len(gold) >= 0.95 * len(data.gold)
    scores = {}
    for model_name, model in fast_models().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(labels)
        probas = model.probas_
        assert list(probas.index) == list(labels.tasks), model_name
        assert list(probas.columns) == list(labels.classes), model_name
        values = probas.to_numpy()
        assert np.isfinite(values).all() and (values >= 0).all(), model_name
        np.testing.assert_allclose(values.sum(axis=1), 1.0, atol=1e-9, err_msg=model_name)
        assert pd.Index(model.labels_.index).equals(labels.tasks)
        scores[model_name] = accuracy(gold, model.labels_)
    majority = scores["MajorityVote"]
    assert scores["BayesianDawidSkene"] >= majority - 0.02, scores
    assert scores["HierarchicalAnnotation"] >= majority - 0.02, scores
