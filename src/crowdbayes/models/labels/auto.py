r"""Choosing the label model per data set, without gold: the information hidden labels carry
about their tasks.

Every label model predicts the next label a worker gives a task,

.. math::
    p_i(l) = p(x_{ij} = l \mid \text{other labels}) = \sum_k \hat p(c_i = k) \, \hat\pi^{(j)}_{kl},

from the task's posterior :math:`\hat p(c_i)` (``probas_``) and the worker's confusion row
(``confusion_``). :func:`held_out_label_scores` hides one label of each task that has at
least three, from a worker with at least one other label, refits every candidate on the rest,
and predicts the hidden labels (exact refits, the cross-validation of Vehtari, Gelman & Gabry
2017 on labels rather than tasks, since the truth is never observed); ``n_folds`` disjoint
hidden sets. :class:`AutoLabelModel` fits the best candidate on every label.

**The score.** Let :math:`H_j` be the :math:`n_j` hidden labels of worker :math:`j` (over all
folds) and :math:`m_j(l) = n_j^{-1} \sum_{i' \in H_j} p_{i'}(l)` the model's prediction of
the worker's label when the task is not known. The plain log score splits as

.. math::
    \log p_i(x_{ij}) = \log m_j(x_{ij}) + g_{ij}, \qquad
    g_{ij} = \log \frac{p_i(x_{ij})}{m_j(x_{ij})},

and the candidates are ranked by the mean *gain* :math:`g_{ij}` alone. The first term only
says how often the worker presses each button, which a model can predict perfectly while
knowing nothing about the tasks: on a crowd where many workers always press one button,
one-coin Dawid–Skene puts every task in one class, reads those workers as always right or
always wrong, and wins the plain log score while its answers are no better than a coin
(``benchmarks/defaults``: accuracy 0.52 against majority vote's 0.65). The gain of a label of a
one-button worker is 0 under any model that fits that worker, and so is every gain of a model
whose task posteriors are all alike.

The gain is a proper score for telling tasks apart. With
:math:`r_j(i \mid l) = p_i(l) / \sum_{i' \in H_j} p_{i'}(l)`, the model's probability that a
label :math:`l` of worker :math:`j` came from task :math:`i` among its hidden tasks,

.. math::
    g_{ij} = \log n_j + \log r_j(i \mid x_{ij}),

the log score of guessing the task from the label (the contrastive form of van den Oord, Li &
Vinyals 2018). If worker :math:`j` labels task :math:`i` with probabilities :math:`q_i(l)`,
the expected gain is at most its value at :math:`r_j(i \mid l) \propto q_i(l)` (Gibbs'
inequality for each :math:`l`: a proper score in the sense of Gneiting & Raftery 2007,
strictly proper for :math:`r`), where it is the mutual information between the worker's
label and the task (uniform over :math:`H_j`). The maximum is reached by every
:math:`p_i(l) = c_j(l)\,q_i(l)`: the score is blind to exactly the per-worker label
frequencies the plain log score rewards and to nothing else. A worker with one hidden label
has gain 0.

**The choice.** The gain of a model that says nothing about the tasks is 0, and a model
over-confident about the tasks pays for it (its gains are negative where the labels carry
little information, as on a crowd of 70% spammers: there every candidate's gain was about
-0.03 and, by the gain alone, one draw in eight of a smaller such crowd, 400 tasks from 100
workers, still chose one-coin). Where no candidate tells the tasks apart better than
majority vote beyond noise, the choice is majority vote: :func:`choose_candidate` takes the
best-scoring candidate among those whose mean gain beats majority vote's by more than two
standard errors of the paired difference (:data:`BASELINE`, ``_MIN_Z``; the simplest model
unless the data show a better one, in the spirit of the one-standard-error rule of Hastie,
Tibshirani & Friedman 2009, section 7.10). The standard errors are clustered by worker
(Liang & Zeger 1986): a worker's gains share its marginal :math:`m_j` and its confusion
estimate.

A rule that refuses a candidate putting nearly every task in one class was not taken: it is a
threshold that would also refuse the right model on a heavily imbalanced set.

Gold tasks stay clamped in every refit (their class is known), and a hidden label of a gold
task is scored like any other.

References
----------
A. Vehtari, A. Gelman, J. Gabry. "Practical Bayesian model evaluation using leave-one-out
cross-validation and WAIC", Statistics and Computing 27 (2017).
T. Gneiting, A. E. Raftery. "Strictly proper scoring rules, prediction, and estimation",
Journal of the American Statistical Association 102 (2007).
A. van den Oord, Y. Li, O. Vinyals. "Representation learning with contrastive predictive
coding", arXiv:1807.03748 (2018).
T. Hastie, R. Tibshirani, J. Friedman. "The Elements of Statistical Learning", 2nd ed.,
Springer (2009).
K.-Y. Liang, S. L. Zeger. "Longitudinal data analysis using generalized linear models",
Biometrika 73 (1986).
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
from ._held_out import HELD_OUT_FLOOR as _FLOOR
from ._held_out import held_out_folds

__all__ = ["AutoLabelModel", "BASELINE", "CANDIDATES", "choose_candidate", "held_out_label_scores"]

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
#: differ from its defaults: one short Gibbs chain for the sampler, 50 warm-up sweeps and 50
#: draws (the predictive probability averages over the posterior, so fewer draws add Monte
#: Carlo noise to the score; the chosen model is then fitted at its defaults). Against one
#: chain of 100 + 100 sweeps (before issue 40's time bound) its gain moved by -0.0025 to
#: +0.0015 nats on the 12 shared sets and no choice changed (the closest, TREC: bayes-ds
#: 0.0456 against 0.0450 and 0.0454; ``benchmarks/labels/results/auto_choice.md``); the three
#: refits cost half the sweeps (about 0.27 of 0.64 s of CPU on 10,000 labels)
_REFIT: dict[str, dict[str, Any]] = {
    "hierarchical": {"n_chains": 1, "n_warmup": 50, "n_samples": 50},
}

#: the candidate a choice falls back on, and how many standard errors of the paired
#: difference another candidate's gain must beat it by (module docstring, "The choice")
BASELINE = "mv"
_MIN_Z = 2.0


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


def _predictive_distributions(model, labels: Labels, rows: np.ndarray) -> np.ndarray:
    """p(x = l | the refit ``model``) for every class l (columns) of each hidden row: the
    task's posterior times the worker's confusion (module docstring); NaN reads as 0."""
    k = labels.n_classes
    probas = model.probas_.reindex(columns=labels.classes).to_numpy(np.float64)
    tasks = model.probas_.index.get_indexer(labels.tasks[labels.task_codes[rows]])
    fitted_workers = pd.Index(model.confusion_.index.get_level_values(0)[::k])
    confusion = model.confusion_.reindex(columns=labels.classes).to_numpy(np.float64)
    confusion = confusion.reshape(-1, k, k)
    workers = fitted_workers.get_indexer(labels.workers[labels.worker_codes[rows]])
    return np.nan_to_num(np.einsum("nk,nkl->nl", probas[tasks], confusion[workers]), nan=0.0)


def _predictive_log_scores(model, labels: Labels, rows: np.ndarray) -> np.ndarray:
    """log p(hidden label | the refit ``model``) of each row, floored at ``_FLOOR``."""
    p = _predictive_distributions(model, labels, rows)
    return np.log(np.maximum(p[np.arange(len(rows)), labels.label_codes[rows]], _FLOOR))


def task_information_gains(labels: Labels, rows: np.ndarray, predictive: np.ndarray) -> np.ndarray:
    """The gain of each hidden row (module docstring): log p_i(x) minus the log of the mean of
    p_i'(x) over the hidden rows of the same worker; 0 for a worker with one hidden row."""
    workers = labels.worker_codes[rows]
    sums = np.zeros((labels.n_workers, predictive.shape[1]))
    np.add.at(sums, workers, predictive)
    counts = np.bincount(workers, minlength=labels.n_workers)
    marginal = sums[workers] / counts[workers, None]
    observed = labels.label_codes[rows]
    picked = np.arange(len(rows))
    own = np.maximum(predictive[picked, observed], _FLOOR)
    return np.log(own) - np.log(np.maximum(marginal[picked, observed], _FLOOR))


def _worker_clustered_se(values: np.ndarray, workers: np.ndarray) -> float:
    """Standard error of ``values.mean()`` with the values of one worker summed first (the
    cluster-robust "sandwich" variance, Liang & Zeger 1986): the gains of a worker share
    its marginal and its confusion estimate, so they are not independent."""
    n = len(values)
    if n < 2:
        return 0.0
    _, codes = np.unique(workers, return_inverse=True)
    n_clusters = codes.max() + 1
    if n_clusters < 2:
        return 0.0
    residual = np.bincount(codes, weights=values - values.mean(), minlength=n_clusters)
    return float(np.sqrt(n_clusters / (n_clusters - 1) * np.sum(residual**2)) / n)


def _training_sets(labels: Labels, folds: list[np.ndarray]) -> list[Labels]:
    """The labels left after hiding each fold's rows (same classes, gold kept), built once
    and shared by every candidate's refits."""
    frame, gold = labels.to_frame(), _gold_series(labels)
    trains = []
    for rows in folds:
        kept = np.ones(labels.n_labels, dtype=bool)
        kept[rows] = False
        trains.append(Labels(frame[kept], classes=labels.classes, gold=gold))
    return trains


def held_out_label_scores(
    labels: Labels,
    candidates: Sequence[str] = CANDIDATES,
    *,
    n_folds: int = 3,
    random_state: RandomState = 0,
    baseline: str | None = BASELINE,
) -> pd.DataFrame:
    """Each candidate's mean task-information gain on hidden labels (module docstring).

    Returns a DataFrame indexed by candidate name with ``score`` (the mean gain per hidden
    label, in nats; higher is better), ``se`` (its standard error, clustered by worker),
    ``over_baseline`` and ``over_baseline_se`` (the score minus the ``baseline`` candidate's,
    paired over the same hidden labels, and its clustered standard error; NaN when the
    baseline is not a candidate), ``log_score`` (the plain mean log predictive probability,
    for reference: it also rewards predicting each worker's label frequencies), ``hidden``
    (how many labels were scored) and ``seconds`` (the time of the refits), best first.
    Raises ``ValueError`` when no task has the three labels needed to hide one.
    """
    rng = np.random.default_rng(random_state)
    folds = [rows for rows in held_out_folds(labels, n_folds, rng) if len(rows)]
    if not folds:
        raise ValueError(
            "cannot choose a model from the labels: no task has 3 or more labels from workers "
            "who gave at least 2 (pick a model yourself, e.g. majority vote)"
        )
    trains = _training_sets(labels, folds)
    hidden = np.concatenate(folds)
    workers = labels.worker_codes[hidden]
    gains, results = {}, []
    for name in candidates:
        start, predictive = time.perf_counter(), []
        for rows, train in zip(folds, trains, strict=True):
            model = _candidate(name, random_state, refit=True).fit(train)
            predictive.append(_predictive_distributions(model, labels, rows))
        predictive = np.concatenate(predictive)
        gains[name] = task_information_gains(labels, hidden, predictive)
        observed = predictive[np.arange(len(hidden)), labels.label_codes[hidden]]
        results.append(
            {
                "model": name,
                "score": float(gains[name].mean()),
                "se": _worker_clustered_se(gains[name], workers),
                "log_score": float(np.log(np.maximum(observed, _FLOOR)).mean()),
                "hidden": len(hidden),
                "seconds": time.perf_counter() - start,
            }
        )
    for row in results:
        paired = gains[row["model"]] - gains[baseline] if baseline in gains else None
        row["over_baseline"] = np.nan if paired is None else float(paired.mean())
        row["over_baseline_se"] = (
            np.nan if paired is None else _worker_clustered_se(paired, workers)
        )
    table = pd.DataFrame(results).set_index("model")
    columns = ["score", "se", "over_baseline", "over_baseline_se", "log_score", "hidden"]
    table = table[[*columns, "seconds"]]
    return table.sort_values("score", ascending=False, kind="stable")


def choose_candidate(scores: pd.DataFrame, baseline: str | None = BASELINE) -> str:
    """The best-scoring candidate whose gain beats the ``baseline``'s by more than
    ``_MIN_Z`` paired standard errors, else the baseline (module docstring, "The choice");
    the best-scoring candidate when the baseline was not scored."""
    if baseline not in scores.index:
        return str(scores.index[0])
    margin = scores["over_baseline"] - _MIN_Z * scores["over_baseline_se"]
    better = scores.index[(margin > 0).to_numpy()]
    return str(better[0]) if len(better) else baseline


class AutoLabelModel(LabelModel):
    """The label model whose predictions of held-out labels tell their tasks apart best
    (module docstring), fitted on all labels.

    The candidates (default :data:`CANDIDATES`: majority vote, one-coin Dawid–Skene,
    Dawid–Skene, Bayesian Dawid–Skene, the hierarchical model) are scored by
    :func:`held_out_label_scores` and chosen by :func:`choose_candidate`: the best one that
    beats majority vote beyond noise, else majority vote. The choice is fitted on every label
    and its results are this model's. ``scores_`` holds the table of scores, ``choice_`` the
    chosen name and ``model_`` the fitted model. Labels on which no label can be hidden (no
    task with three labels) get majority vote, with a warning.

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
            self.choice_ = choose_candidate(self.scores_)
        except ValueError as err:
            if "no task has 3" not in str(err):
                raise
            warnings.warn(f"{err}: using majority vote", DataWarning, stacklevel=3)
            self.scores_, self.choice_ = None, "mv"
        self.model_ = _candidate(self.choice_, self.random_state).fit(labels)
        for name, value in vars(self.model_).items():
            if name.endswith("_") and not name.startswith("_") and name not in vars(self):
                setattr(self, name, value)
