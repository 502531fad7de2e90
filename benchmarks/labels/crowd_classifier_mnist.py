"""Learning from crowds on MNIST: CrowdClassifier against "Dawid–Skene, then a classifier".

The 10,000 MNIST test digits (the training images are not in the shared data). Features: the
first 50 principal components of the pixels / 255 (computed on all 10,000 images, no labels
used). Each seed splits the digits in half at random: the labelled half gets 1–3 labels per
digit (uniformly) from 50 simulated workers (:func:`crowdbayes.datasets.simulate_crowd_labels`:
accuracy U(0.5, 0.9); half of a worker's mistakes go to a confusable digit, 4↔9, 3↔5, 7↔1,
0↔6, 2→7, 8→3, the rest uniformly), the other half gets none.

- unlabelled half, accuracy: ``CrowdClassifier`` (EM of Raykar et al. 2010) against
  Dawid–Skene on the labels, then the same classifier trained on its answers;
- labelled half, accuracy: the consensus (out-of-fold classifier probabilities with the
  labels) and the EM posterior against Dawid–Skene and majority vote;
- the quality score: mean on consensus answers that are right and wrong.

Both classifiers are the built-in L2 multinomial logistic regression; ``--sklearn`` also runs
scikit-learn's ``LogisticRegression`` in both places.

Usage (from the repository root)::

    .venv/bin/python benchmarks/labels/crowd_classifier_mnist.py [--seeds 3] [--sklearn]
        [--output benchmarks/labels/results/crowd_classifier_mnist.md]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

import numpy as np
import pandas as pd

from _common import resolve_data_root, results_dir, write_markdown_report

RESULTS = results_dir(__file__)

CONFUSABLE = {4: 9, 9: 4, 3: 5, 5: 3, 7: 1, 1: 7, 0: 6, 6: 0, 2: 7, 8: 3}


def mnist_features(n_components: int = 50) -> tuple[np.ndarray, np.ndarray]:
    from crowdbayes.datasets import load_mnist_test

    data = load_mnist_test()
    pixels = data.images.reshape(len(data.images), -1).astype(np.float64) / 255.0
    centred = pixels - pixels.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ vt[:n_components].T, data.labels


def run(seed: int, features: np.ndarray, truth: np.ndarray, make_classifier) -> dict:
    from crowdbayes import Labels
    from crowdbayes.datasets import simulate_crowd_labels
    from crowdbayes.models.labels import CrowdClassifier, DawidSkene, MajorityVote
    from crowdbayes.models.labels._softmax import class_probabilities

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(truth))
    labelled, unlabelled = np.sort(order[: len(truth) // 2]), np.sort(order[len(truth) // 2 :])
    table, _ = simulate_crowd_labels(truth, labelled, confusable=CONFUSABLE, random_state=seed)
    labels = Labels(table, classes=list(range(10)))
    frame = pd.DataFrame(features, columns=[f"pc{k}" for k in range(features.shape[1])])
    gold = pd.Series(truth)

    start = time.perf_counter()
    crowd = CrowdClassifier(classifier=make_classifier(), random_state=seed).fit(labels, frame)
    crowd_seconds = time.perf_counter() - start
    ds = DawidSkene().fit(labels)
    mv = MajorityVote(random_state=seed).fit(labels)
    two_stage = make_classifier().fit(
        features[ds.labels_.index.to_numpy()], ds.labels_.to_numpy().astype(np.int64)
    )
    two_stage_answers = class_probabilities(two_stage, features[unlabelled], 10).argmax(axis=1)

    def acc(predicted: pd.Series, items: np.ndarray) -> float:
        return float((predicted.loc[items].to_numpy() == gold.loc[items].to_numpy()).mean())

    right = crowd.consensus_.loc[labelled].to_numpy() == truth[labelled]
    quality = crowd.quality_.loc[labelled].to_numpy()
    return {
        "unlabelled: CrowdClassifier": acc(crowd.labels_, unlabelled),
        "unlabelled: DS, then classifier": float((two_stage_answers == truth[unlabelled]).mean()),
        "labelled: consensus": acc(crowd.consensus_, labelled),
        "labelled: CrowdClassifier EM posterior": acc(crowd.labels_, labelled),
        "labelled: Dawid-Skene": acc(ds.labels_, labelled),
        "labelled: majority vote": acc(mv.labels_, labelled),
        "quality score, consensus right": float(quality[right].mean()),
        "quality score, consensus wrong": float(quality[~right].mean()),
        "labels": float(labels.n_labels),
        "CrowdClassifier fit s": crowd_seconds,
        "EM iterations": float(crowd.n_iter_),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sklearn", action="store_true")
    parser.add_argument("--output", default=str(RESULTS / "crowd_classifier_mnist.md"))
    args = parser.parse_args()
    resolve_data_root()
    from crowdbayes.models.labels._softmax import SoftmaxRegression

    features, truth = mnist_features()
    classifiers = {"built-in logistic regression": SoftmaxRegression}
    if args.sklearn:
        from sklearn.linear_model import LogisticRegression

        classifiers["scikit-learn LogisticRegression"] = lambda: LogisticRegression(max_iter=500)
    sections = []
    for name, make in classifiers.items():
        results = []
        for seed in range(args.seeds):
            results.append(run(seed, features, truth, make))
            print(name, seed, {k: round(v, 4) for k, v in results[-1].items()}, flush=True)
        frame = pd.DataFrame(results)
        rows = [
            f"| {key} | {frame[key].mean():.4f} | "
            + ", ".join(f"{v:.4f}" for v in frame[key])
            + " |"
            for key in frame.columns
        ]
        sections += [
            f"## {name}",
            "",
            "| quantity | mean | per seed |",
            "| --- | --- | --- |",
            *rows,
            "",
        ]
    write_markdown_report(
        args.output,
        "Learning from crowds: MNIST test digits, half labelled by simulated workers",
        sections,
    )


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    main()
