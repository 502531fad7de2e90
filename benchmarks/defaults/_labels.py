"""The labels family of the defaults report: the default of ``labels fit`` (the CLI's own
choice: the hierarchical model, or :data:`crowdbayes.cli.labels.FAST_MODEL` from
:data:`~crowdbayes.cli.labels.LARGE_INPUT_LABELS` labels on) and ``--model auto`` against
majority vote, on the shared sets with gold and the simulated sets of
:mod:`_label_scenarios`; every candidate of the automatic choice is fitted too, for the
leave-one-set-out table.

``--model auto`` is evaluated without refitting its winner: :class:`AutoLabelModel` fits
``_candidate(choice, random_state)`` on every label, which is the same seeded fit as the
candidate's own full fit here (a test checks that the two agree), so its answer is that
candidate's; its time is the held-out scoring plus that fit.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crowdbayes.cli.labels import FAST_MODEL, LABELS, LARGE_INPUT_LABELS
from crowdbayes.data import Labels
from crowdbayes.models.labels.auto import CANDIDATES, _candidate, held_out_label_scores

__all__ = ["LabelSetResult", "default_label_model", "evaluate_label_set", "load_shared_set"]


def default_label_model(n_labels: int) -> str:
    """What ``labels fit`` without ``--model`` fits on ``n_labels`` labels (its size rule)."""
    return FAST_MODEL if n_labels >= LARGE_INPUT_LABELS else LABELS.default


@dataclass
class LabelSetResult:
    """Per-unit results of one set, pooled over its draws: ``correct[model]`` and
    ``confidence[model]`` per gold task, mean fit ``seconds[model]``; ``default`` is the CLI's
    default there, ``choices`` the automatic choice of each draw (None: auto not run)."""

    name: str
    source: str
    n_labels: int
    default: str
    correct: dict = field(default_factory=dict)
    confidence: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    choices: list | None = None

    @property
    def accuracy(self) -> dict[str, float]:
        return {m: float(np.mean(c)) for m, c in self.correct.items()}


def load_shared_set(name: str) -> tuple[Labels, pd.Series]:
    """A shared label set as ``labels fit --dataset NAME`` reads it (no gold clamped) and its
    gold."""
    from crowdbayes.datasets import load_labels

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_labels(name)
        labels = Labels(data.labels)
    return labels, data.gold[data.gold.index.isin(labels.tasks)]


def _fit(name: str, labels: Labels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = _candidate(name, 0).fit(labels)
        return model, time.perf_counter() - start


def evaluate_label_set(
    name: str,
    source: str,
    draws: list[tuple[Labels, pd.Series]],
    *,
    candidates: tuple[str, ...] = CANDIDATES,
) -> LabelSetResult:
    """Fit the default, majority vote and (below the size rule) every candidate of ``--model
    auto`` and the choice itself on each draw, scored on its truth. ``candidates`` are
    ``--model auto``'s (a shorter list makes a quick test)."""
    n_labels = draws[0][0].n_labels
    default = default_label_model(n_labels)
    large = default != LABELS.default
    models = ("mv", default) if large else tuple(dict.fromkeys(("mv", default, *candidates)))
    result = LabelSetResult(name, source, n_labels, default, choices=None if large else [])
    parts: dict[str, list] = {}
    for labels, truth in draws:
        fitted = {}
        for model in models:
            fitted[model], seconds = _fit(model, labels)
            hit = (fitted[model].labels_.reindex(truth.index) == truth).to_numpy()
            confidence = fitted[model].probas_.max(axis=1).reindex(truth.index).to_numpy()
            parts.setdefault(model, []).append((hit, confidence, seconds))
        if not large:
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                choice = str(held_out_label_scores(labels, candidates).index[0])
            scoring = time.perf_counter() - start
            hit, confidence, seconds = parts[choice][-1]
            parts.setdefault("auto", []).append((hit, confidence, scoring + seconds))
            result.choices.append(choice)
    for model, runs in parts.items():
        result.correct[model] = np.concatenate([r[0] for r in runs]).astype(float)
        result.confidence[model] = np.concatenate([r[1] for r in runs])
        result.seconds[model] = float(np.mean([r[2] for r in runs]))
    return result
