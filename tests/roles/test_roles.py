"""The roles (crowdbayes.roles) and the tags (crowdbayes.base.Tags): what every model of a kind
of judgment holds and predicts, whatever its family."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes import NotFittedError, list_models
from crowdbayes.base import DIAGNOSTICS, Estimator, OptionalResult, Tags
from test_estimators import MODELS, fast, fit_quietly, ids, inputs

#: the results every fitted model of each kind of judgment holds
RESULTS = {
    "labels": ("classes_", "labels_", "probas_", "prevalence_", "confusion_"),
    "values": ("values_", "worker_params_"),
    "rankings": ("item_ids_", "utility_"),
    "pairs": ("item_ids_", "utility_"),
    "links": ("assignments_", "probas_", "n_clusters_used_"),
}


@pytest.fixture(scope="module")
def fitted():
    cache = {}

    def fit(cls):
        if cls not in cache:
            data = inputs(cls)
            cache[cls] = (fit_quietly(fast(cls), data), data)
        return cache[cls]

    return fit


@pytest.mark.parametrize("cls", MODELS, ids=ids)
def test_every_model_holds_the_results_of_its_role(cls, fitted):
    model, _ = fitted(cls)
    assert cls.tags.judgment in RESULTS
    for name in RESULTS[cls.tags.judgment]:
        assert getattr(model, name) is not None, name
    facts = model.diagnostics()
    assert set(facts) <= set(DIAGNOSTICS)
    assert all(isinstance(v, (bool, int, float)) for v in facts.values())
    for name, label, values in model.convergence_traces():
        assert name.endswith("_") and label and values.ndim in (1, 2)
    assert isinstance(model.rhat(), pd.Series)


@pytest.mark.parametrize(
    "cls", [c for c in MODELS if c.tags.judgment in ("rankings", "pairs")], ids=lambda c: c.__name__
)
def test_every_model_of_items_predicts_the_same_way(cls, fitted):
    model, _ = fitted(cls)
    utility = model.predict_utility()
    assert {"mean", "sd"} <= set(utility.columns) and utility.index.equals(model.item_ids_)
    left, right = list(model.item_ids_[:3]), list(model.item_ids_[1:4])
    p = model.predict_proba(left, right)
    assert isinstance(p, pd.Series) and p.name == "p_left"
    assert list(p.index.names) == ["left", "right"] and len(p) == 3
    assert np.all((p > 0) & (p < 1))
    swapped = model.predict_proba(right, left).to_numpy()
    np.testing.assert_allclose(p.to_numpy() + swapped, 1.0, atol=1e-6)
    if not cls.tags.personal_predictions:
        with pytest.raises(ValueError, match="pools all workers"):
            model.predict_proba(left, right, workers=["w"] * 3)


@pytest.mark.parametrize(
    "cls", [c for c in MODELS if c.tags.judgment == "links"], ids=lambda c: c.__name__
)
def test_every_clusterer_gives_one_item_table(cls, fitted):
    model, _ = fitted(cls)
    table = model.item_table(with_proba=True)
    assert list(table.columns[:2]) == ["cluster", "probability"]
    assert table.index.equals(model.assignments_.index)
    np.testing.assert_allclose(table.filter(like="p_").sum(axis=1), 1.0, atol=1e-6)


def test_the_suggest_capability_is_a_tag_and_a_method():
    for cls in list_models():
        assert cls.tags.suggest == hasattr(cls, "suggest"), cls.__name__


# ------------------------------------------------------------------------------ the tags
def test_tags_merge_along_the_class_hierarchy():
    class Mixin:
        _tags = {"suggest": True}

    class Base(Estimator):
        _abstract = True
        _tags = {"judgment": "labels", "min_workers": 2}

    class Model(Mixin, Base):
        _abstract = True
        _tags = {"min_workers": 1}

    assert Model.tags == Tags(judgment="labels", suggest=True, min_workers=1)
    assert Base.tags.min_workers == 2 and not Base.tags.suggest


def test_a_tag_that_does_not_exist_is_refused():
    with pytest.raises(TypeError, match=r"Bad._tags: unknown tag\(s\) \['sugest'\]"):

        class Bad(Estimator):
            _abstract = True
            _tags = {"sugest": True}

    with pytest.raises(ValueError, match="judgment must be one of"):
        Tags(judgment="votes")


# ------------------------------------------------------------------------------ optional results
def test_an_optional_result_is_none_once_fitted_and_not_fitted_before():
    class Model(Estimator):
        _abstract = True
        extra_ = OptionalResult()
        other_ = OptionalResult()

        def __init__(self) -> None:
            pass

    model = Model()
    with pytest.raises(NotFittedError, match="Model is not fitted yet.*'extra_'"):
        _ = model.extra_
    assert not hasattr(model, "extra_")
    model.result_ = 1.0
    model.other_ = "set"
    assert model.extra_ is None and model.other_ == "set"
    assert "extra_" not in model._get_state()  # not saved: nothing was set
