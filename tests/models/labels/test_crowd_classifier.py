"""CrowdClassifier: the EM posterior is the brute-force product, the built-in classifier is
multinomial logistic regression, learning from crowds beats the two-stage pipeline, and bad
features are refused."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from crowdbayes import Labels
from crowdbayes.datasets import simulate_crowd_labels
from crowdbayes.models.labels import CrowdClassifier, DawidSkene
from crowdbayes.models.labels._softmax import SoftmaxRegression, class_probabilities


def blobs(n=2000, n_classes=4, n_features=5, seed=0, labelled_share=0.5):
    """Gaussian classes; the first ``labelled_share`` of the items labelled 1-3 times by 30
    workers of accuracy U(0.35, 0.85)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1.5, (n_classes, n_features))
    truth = rng.integers(n_classes, size=n)
    features = pd.DataFrame(
        centres[truth] + rng.normal(size=(n, n_features)),
        index=[f"i{k}" for k in range(n)],
        columns=[f"f{k}" for k in range(n_features)],
    )
    labelled = np.arange(int(labelled_share * n))
    table, _ = simulate_crowd_labels(
        truth, labelled, n_workers=30, accuracy=(0.35, 0.85), random_state=seed
    )
    table["task"] = "i" + table["task"].astype(str)
    gold = pd.Series(truth, index=features.index)
    return Labels(table, classes=list(range(n_classes))), features, gold


def test_em_posterior_is_the_product_of_classifier_and_workers():
    labels, features, _ = blobs(n=200, seed=1)
    model = CrowdClassifier(max_iter=5, tol=None).fit(labels, features)
    prior = class_probabilities(model.classifier_, features.loc[labels.tasks].to_numpy(), 4)
    confusion = model.confusion_.to_numpy().reshape(-1, 4, 4)
    workers = list(model.confusion_.index.get_level_values(0)[::4])
    table = labels.to_frame()
    expected = prior.copy()
    for task, worker, label in table.itertuples(index=False):
        expected[labels.tasks.get_loc(task)] *= confusion[workers.index(worker), :, label]
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(model.probas_.loc[labels.tasks].to_numpy(), expected, atol=1e-9)
    unlabelled = features.index[~features.index.isin(labels.tasks)]
    np.testing.assert_allclose(
        model.probas_.loc[unlabelled].to_numpy(),
        class_probabilities(model.classifier_, features.loc[unlabelled].to_numpy(), 4),
    )


def test_builtin_classifier_is_multinomial_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4)) * [1, 5, 0.2, 1]
    y = (X @ [1, 0.2, 3, -1] + rng.normal(size=300) > 0).astype(int) + (X[:, 0] > 1)
    ours = SoftmaxRegression(C=0.5).fit(X, y)
    standardised = (X - X.mean(axis=0)) / X.std(axis=0)
    theirs = LogisticRegression(C=0.5, max_iter=5000, tol=1e-10).fit(standardised, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(standardised), atol=1e-4)
    # soft one-hot targets are the hard labels
    onehot = np.eye(3)[y]
    np.testing.assert_allclose(
        SoftmaxRegression(C=0.5).fit_soft(X, onehot).predict_proba(X), ours.predict_proba(X)
    )


def test_learning_from_crowds_beats_dawid_skene_then_a_classifier():
    labels, features, gold = blobs(seed=3)
    model = CrowdClassifier(random_state=0).fit(labels, features)
    unlabelled = features.index[~features.index.isin(labels.tasks)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = DawidSkene().fit(labels)
    two_stage = SoftmaxRegression().fit(features.loc[ds.labels_.index].to_numpy(), ds.labels_)
    two_stage_answers = two_stage.predict_proba(features.loc[unlabelled].to_numpy()).argmax(1)
    crowd = (model.labels_.loc[unlabelled] == gold.loc[unlabelled]).mean()
    assert crowd > (two_stage_answers == gold.loc[unlabelled].to_numpy()).mean()
    labelled = labels.tasks
    consensus = (model.consensus_.loc[labelled] == gold.loc[labelled]).mean()
    assert consensus > (ds.labels_.loc[labelled] == gold.loc[labelled]).mean() + 0.05
    right = model.consensus_ == gold.loc[labelled]
    assert model.quality_[right].mean() > model.quality_[~right].mean() + 0.1
    # new rows get the classifier's answers
    new = features.loc[unlabelled[:20]]
    pd.testing.assert_frame_equal(model.predict_proba(new), model.probas_.loc[new.index])


def test_any_scikit_learn_classifier_with_predict_proba():
    from sklearn.naive_bayes import GaussianNB

    labels, features, gold = blobs(n=600, seed=4)
    model = CrowdClassifier(classifier=GaussianNB(), max_iter=20).fit(labels, features)
    unlabelled = features.index[~features.index.isin(labels.tasks)]
    assert (model.labels_.loc[unlabelled] == gold.loc[unlabelled]).mean() > 0.8
    assert model.classifier is not model.classifier_  # the parameter is left unfitted


def test_features_missing_for_labelled_tasks_are_refused_by_name():
    labels, features, _ = blobs(n=100, seed=5)
    with pytest.raises(
        ValueError,
        match=r"features: 2 id\(s\) used in the labels have no row in the feature table "
        r"\(first: \['i0', 'i1'\]\)",
    ):
        CrowdClassifier().fit(labels, features.drop(index=["i0", "i1"]))
    with pytest.raises(TypeError, match=r"CrowdClassifier.fit needs the tasks' features"):
        CrowdClassifier().fit(labels)
    bad = features.assign(f0=features["f0"].astype(str) + "x")
    with pytest.raises(ValueError, match=r"features: column\(s\) \['f0'\] are not numeric"):
        CrowdClassifier().fit(labels, bad)
    gap = features.copy()
    gap.iloc[3, 1] = np.nan
    with pytest.raises(ValueError, match="feature column 'f1' has 1 missing or infinite value"):
        CrowdClassifier().fit(labels, gap)
    model = CrowdClassifier(max_iter=3, tol=None).fit(labels, features)
    with pytest.raises(ValueError, match=r"missing feature column\(s\) \['f4'\]"):
        model.predict_proba(features.drop(columns="f4"))
    with pytest.raises(ValueError, match="parameter 'classifier' must be None or an object with"):
        CrowdClassifier(classifier="logistic").fit(labels, features)
    grades = Labels(labels.to_frame(), ordered=True)
    with pytest.raises(ValueError, match="CrowdClassifier treats classes as unordered"):
        CrowdClassifier().fit(grades, features)


# ------------------------------------------------------------------------------- real data
@pytest.mark.slow
def test_mnist_half_labelled_by_simulated_workers(data_root):
    """benchmarks/labels/crowd_classifier_mnist.py with one seed: measured 0.891 against 0.857 on
    the unlabelled half, consensus 0.952 against Dawid–Skene's 0.752 on the labelled half."""
    import importlib.util
    from pathlib import Path

    path = (
        Path(__file__).resolve().parents[3] / "benchmarks" / "labels" / "crowd_classifier_mnist.py"
    )
    spec = importlib.util.spec_from_file_location("crowd_classifier_mnist", path)
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)  # the script puts benchmarks/ on sys.path itself
    features, truth = benchmark.mnist_features()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = benchmark.run(0, features, truth, SoftmaxRegression)
    assert result["unlabelled: CrowdClassifier"] > result["unlabelled: DS, then classifier"]
    assert result["labelled: consensus"] > result["labelled: Dawid-Skene"]


def test_every_task_labelled_and_a_scikit_learn_classifier():
    from sklearn.linear_model import LogisticRegression

    labels, features, _ = blobs(n=200, seed=6, labelled_share=1.0)
    model = CrowdClassifier(classifier=LogisticRegression(), max_iter=5, tol=None)
    model.fit(labels, features)
    assert len(model.probas_) == 200 and model.consensus_.notna().all()
