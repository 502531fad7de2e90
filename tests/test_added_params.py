"""Model files written before a parameter existed still load, as the model they were fitted as.

A class lists such parameters in ``_added_params`` with the value that gives the older
behaviour; a file without the parameter loads with that value (and a file with it keeps its
own). Anything else missing is still refused as damaged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdbayes import __version__, load, persistence
from crowdbayes.datasets.synthetic import simulate_labels
from crowdbayes.models.labels import BayesianDawidSkene, HierarchicalAnnotation
from crowdbayes.models.plackett_luce import PlackettLuceVI
from pl_simulate import simulate_rankings


def _write_without(model, path, *names: str) -> None:
    """Save ``model`` as a file from before ``names`` existed: those parameters left out."""
    params = {k: v for k, v in model.get_params().items() if k not in names}
    persistence.write_model_file(path, type(model), params, model._get_state(), __version__)


def _labels():
    return simulate_labels(60, 8, 4, n_classes=3, random_state=0).labels


@pytest.mark.parametrize(
    "model",
    [
        HierarchicalAnnotation(calibrate=False, n_chains=1, n_warmup=20, n_samples=20),
        BayesianDawidSkene(calibrate=False),
    ],
    ids=["hierarchical", "bayes-ds"],
)
def test_a_label_model_file_without_calibrate_loads_uncalibrated(model, tmp_path):
    model.fit(_labels())
    _write_without(model, tmp_path / "old.npz", "calibrate")
    loaded = load(tmp_path / "old.npz")
    assert loaded.calibrate is False
    pd.testing.assert_frame_equal(loaded.probas_, model.probas_)


def test_a_file_without_a_parameter_nobody_added_is_still_refused(tmp_path):
    model = BayesianDawidSkene().fit(_labels())
    _write_without(model, tmp_path / "edited.npz", "max_iter")
    with pytest.raises(ValueError, match=r"damaged or was edited.*missing \['max_iter'\]"):
        load(tmp_path / "edited.npz")


def test_a_file_that_names_the_parameter_keeps_its_value(tmp_path):
    model = BayesianDawidSkene(calibrate=True).fit(_labels())
    model.save(tmp_path / "new.npz")
    assert load(tmp_path / "new.npz").calibrate is True


def test_a_rankings_file_without_item_effects_loads_without_them(tmp_path):
    rankings, _ = simulate_rankings(14, n_queries=80)
    model = PlackettLuceVI(eta=0.5, item_effects=False).fit(rankings)
    _write_without(model, tmp_path / "old.npz", "item_effects")
    loaded = load(tmp_path / "old.npz")
    assert loaded.item_effects is False
    ids = model.predict_utility().index[:4]
    np.testing.assert_allclose(
        loaded.predict_proba(ids[:2], ids[2:4]), model.predict_proba(ids[:2], ids[2:4])
    )
