r"""Choosing the label model per data set, without gold: held-out label likelihood.

Every label model predicts the next label a worker gives a task,

.. math::
    p(x_{ij} = l \mid \text{other labels}) = \sum_k \hat p(c_i = k) \, \hat\pi^{(j)}_{kl},

from the task's posterior :math:`\hat p(c_i)` (``probas_``) and the worker's confusion row
(``confusion_``). :func:`held_out_label_scores` hides one label of each task that has at
least three, from a worker with at least one other label, refits every candidate on the rest,
and scores the hidden labels by this predictive probability; repeated over ``n_folds``
disjoint hidden sets, the mean log score per label estimates each candidate's predictive
log-likelihood (the cross-validation of Vehtari, Gelman & Gabry 2017 by exact refits, on
labels rather than tasks, since the truth is never observed). The model that predicts
unseen labels best is the one whose picture of the workers and of the tasks is closest to
the data — no gold is needed. :class:`AutoLabelModel` fits the winner on every label.

Gold tasks stay clamped in every refit (their class is known), and a hidden label of a gold
task is scored like any other.

References
----------
A. Vehtari, A. Gelman, J. Gabry. "Practical Bayesian model evaluation using leave-one-out
cross-validation and WAIC", Statistics and Computing 27 (2017).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..._utils import RandomState
from ...base import POSITIVE_INT, RANDOM_STATE
from ...data import Labels
from ._base import LabelModel

__all__ = ["AutoLabelModel", "CANDIDATES", "held_out_label_scores"]

#: the models :class:`AutoLabelModel` chooses among by default, by command-line name: one
#: vote-based, one one-coin, the Dawid–Skene family (EM and variational Bayes) and the
#: hierarchical model (collapsed Gibbs)
CANDIDATES = ("mv", "one-coin", "ds", "bayes-ds", "hierarchical")

#: every model the choice knows, by command-line name: (module, class, parameters)
_KNOWN: dict[str, tuple[str, str, dict[str, Any]]] = {
    "mv": ("majority_vote", "MajorityVote", {}),
    "wawa": ("wawa", "Wawa", {}),
    "one-coin": ("dawid_skene", "DawidSkene", {"one_coin": True}),
    "ds": ("dawid_skene", "DawidSkene", {}),
    "bayes-ds": ("bayesian_dawid_skene", "BayesianDawidSkene", {}),
    "glad": ("glad", "GLAD", {}),
    "mace": ("mace", "MACE", {}),
    "hierarchical": ("hierarchical", "HierarchicalAnnotation", {}),
}

#: the settings of a candidate's refits on the labels left after hiding some, where they
#: differ from its defaults: one shorter Gibbs chain for the sampler (the predictive
#: probability averages over the posterior, so fewer draws add Monte Carlo noise to the
#: score, not a bias; the chosen model is then fitted at its defaults)
_REFIT: dict[str, dict[str, Any]] = {
    "hierarchical": {"n_chains": 1, "n_warmup": 100, "n_samples": 100},
}

#: the smallest predictive probability a hidden label is scored at (a model that rules a
#: label out entirely is penalised by log(1e-6) for it, not by minus infinity)
_FLOOR = 1e-6


def _candidate(name: str, random_state: RandomState, *, refit: bool = False):
    import importlib
    import inspect

    if name not in _KNOWN:
        raise ValueError(f"unknown candidate model {name!r}; choose among {sorted(_KNOWN)}")
    module, cls_name, params = _KNOWN[name]
    if refit:
        params = {**params, **_REFIT.get(name, {})}
    cls = getattr(importlib.import_module(f"{__package__}.{module}"), cls_name)
    if "random_state" in inspect.signature(cls).parameters:
        params = {**params, "random_state": random_state}
    return cls(**params)


def _gold_series(labels: Labels) -> pd.Series | None:
    known = labels.gold_codes >= 0
    if not known.any():
        return None
    return pd.Series(labels.classes[labels.gold_codes[known]], index=labels.tasks[known])


def held_out_folds(labels: Labels, n_folds: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Row positions of the labels hidden in each fold: at most one label of each task per
    fold, from tasks with at least three labels and from workers with at least two (so that
    the refit still knows the worker and the task keeps two labels)."""
    per_task = np.bincount(labels.task_codes, minlength=labels.n_tasks)
    per_worker = np.bincount(labels.worker_codes, minlength=labels.n_workers)
    eligible = np.flatnonzero(
        (per_task[labels.task_codes] >= 3) & (per_worker[labels.worker_codes] >= 2)
    )
    shuffled = rng.permutation(eligible)
    # the rank of each shuffled row among its task's rows: fold f hides the rows of rank f
    order = np.argsort(labels.task_codes[shuffled], kind="stable")
    tasks = labels.task_codes[shuffled][order]
    starts = np.r_[0, np.flatnonzero(np.diff(tasks)) + 1]
    rank = np.arange(len(tasks)) - np.repeat(starts, np.diff(np.r_[starts, len(tasks)]))
    rows = shuffled[order]
    return [np.sort(rows[rank == fold]) for fold in range(n_folds)]


def _predictive_log_scores(model, labels: Labels, rows: np.ndarray) -> np.ndarray:
    """log p(hidden label | the refit ``model``) of each row, floored at ``_FLOOR``."""
    k = labels.n_classes
    probas = model.probas_.reindex(columns=labels.classes).to_numpy(np.float64)
    tasks = model.probas_.index.get_indexer(labels.tasks[labels.task_codes[rows]])
    fitted_workers = pd.Index(model.confusion_.index.get_level_values(0)[::k])
    confusion = model.confusion_.reindex(columns=labels.classes).to_numpy(np.float64)
    confusion = confusion.reshape(-1, k, k)
    workers = fitted_workers.get_indexer(labels.workers[labels.worker_codes[rows]])
    observed = labels.label_codes[rows]
    p = np.einsum("nk,nk->n", probas[tasks], confusion[workers, :, observed])
    return np.log(np.maximum(np.nan_to_num(p, nan=0.0), _FLOOR))


def held_out_label_scores(
    labels: Labels,
    candidates: Sequence[str] = CANDIDATES,
    *,
    n_folds: int = 3,
    random_state: RandomState = 0,
) -> pd.DataFrame:
    """Each candidate's mean log predictive probability of hidden labels (module docstring).

    Returns a DataFrame indexed by candidate name with ``score`` (mean log probability per
    hidden label; higher is better), ``se`` (its standard error over the hidden labels),
    ``hidden`` (how many labels were scored) and ``seconds`` (the time of the refits),
    best first. Raises ``ValueError`` when no task has the three labels needed to hide one.
    """
    rng = np.random.default_rng(random_state)
    folds = [rows for rows in held_out_folds(labels, n_folds, rng) if len(rows)]
    if not folds:
        raise ValueError(
            "cannot choose a model from the labels: no task has 3 or more labels from workers "
            "who gave at least 2 (pick a model yourself, e.g. majority vote)"
        )
    frame, gold = labels.to_frame(), _gold_series(labels)
    results = []
    for name in candidates:
        start, scores = time.perf_counter(), []
        for rows in folds:
            kept = np.ones(labels.n_labels, dtype=bool)
            kept[rows] = False
            train = Labels(frame[kept], classes=labels.classes, gold=gold)
            model = _candidate(name, random_state, refit=True).fit(train)
            scores.append(_predictive_log_scores(model, labels, rows))
        scores = np.concatenate(scores)
        results.append(
            {
                "model": name,
                "score": float(scores.mean()),
                "se": float(scores.std(ddof=1) / np.sqrt(len(scores))) if len(scores) > 1 else 0.0,
                "hidden": len(scores),
                "seconds": time.perf_counter() - start,
            }
        )
    table = pd.DataFrame(results).set_index("model")
    return table.sort_values("score", ascending=False, kind="stable")


class AutoLabelModel(LabelModel):
    """The label model that predicts held-out labels best on these labels, fitted on all.

    The candidates (default :data:`CANDIDATES`: majority vote, one-coin Dawid–Skene,
    Dawid–Skene, Bayesian Dawid–Skene, the hierarchical model) are scored by
    :func:`held_out_label_scores`; the best is fitted on every label and its results are this
    model's. ``scores_`` holds the table of
    scores, ``choice_`` the chosen name and ``model_`` the fitted model. Labels on which no
    label can be hidden (no task with three labels) get majority vote, with a warning.

    Parameters
    ----------
    candidates : sequence of str
        Command-line names of the models to choose among (``mv``, ``wawa``, ``one-coin``,
        ``ds``, ``bayes-ds``, ``glad``, ``mace``, ``hierarchical``).
    n_folds : int
        How many disjoint sets of hidden labels (one label per task each).
    random_state : int, Generator or None
        Seeds the hidden sets and the candidates.
    """

    _tags: ClassVar[dict[str, Any]] = {"min_workers": 1, "posterior": "approximate"}
    parameter_constraints: ClassVar[dict] = {
        "candidates": [list, tuple],
        "n_folds": [POSITIVE_INT],
        "random_state": RANDOM_STATE,
    }

    def __init__(
        self,
        candidates: Sequence[str] = CANDIDATES,
        n_folds: int = 3,
        random_state: RandomState = 0,
    ) -> None:
        self.candidates = candidates
        self.n_folds = n_folds
        self.random_state = random_state

    def _fit(self, labels: Labels) -> None:
        import warnings

        from ...exceptions import DataWarning

        if len(self.candidates) == 0:
            raise ValueError("candidates: give at least one model to choose among")
        try:
            self.scores_ = held_out_label_scores(
                labels, self.candidates, n_folds=self.n_folds, random_state=self.random_state
            )
            self.choice_ = str(self.scores_.index[0])
        except ValueError as err:
            if "no task has 3" not in str(err):
                raise
            warnings.warn(f"{err}: using majority vote", DataWarning, stacklevel=3)
            self.scores_, self.choice_ = None, "mv"
        self.model_ = _candidate(self.choice_, self.random_state).fit(labels)
        for name, value in vars(self.model_).items():
            if name.endswith("_") and not name.startswith("_") and name not in vars(self):
                setattr(self, name, value)
