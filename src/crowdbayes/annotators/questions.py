r"""The value of asking a worker for one more label on a task.

A task's class has posterior probabilities :math:`p_k`; a worker with confusion matrix
:math:`\theta` (rows: true class, columns: the label given; the posterior mean for a Bayesian
model) gives label :math:`x` with predictive probability :math:`q_x = \sum_k p_k \theta_{kx}`,
after which the class posterior is :math:`p'_k(x) = p_k \theta_{kx} / q_x`. The values:

- ``"information"`` — the expected information gain about the class, the mutual information
  :math:`I(c; x) = H(p) - \sum_x q_x H(p'(x))` (Lindley 1956; in crowdsourcing e.g.
  Kamar & Horvitz 2012);
- ``"accuracy"`` — the knowledge gradient, the expected gain in the probability that the
  task's answer is right: :math:`\sum_x q_x \max_k p'_k(x) - \max_k p_k` (Frazier, Powell &
  Dayanik 2008; Opt-KG, Chen, Lin & Zhou 2013, for binary labels);
- ``"uncertainty"`` — the entropy :math:`H(p)` of the class posterior (uncertainty sampling;
  the worker does not enter);
- ``"uncertainty_changes"`` — the entropy rounded down to bins of
  :data:`UNCERTAINTY_BIN` · log K, and within a bin the answer changes more labels are
  expected to buy (:func:`expected_answer_changes`): uncertainty sampling whose near-ties go to
  the task where more labels are likeliest to turn the answer. Replayed on the twelve shared
  label sets it is 0.0015 above the entropy when BayesianDawidSkene chooses the questions and
  0.0010 below it when the hierarchical model does
  (``benchmarks/active/results/active_labels_taskonly_20seeds.md``,
  ``active_labels_taskonly_hierarchical_7seeds.md``), so it is not the default;
- ``"random"`` — uniform draws (the baseline).

Everything is vectorised over questions: ``probas`` (n, K) and ``confusion`` (n, K, K) or
(K, K).

**Which worker to ask.** A question to a named worker is valued with that worker's confusion
matrix; the fitted one is the wrong matrix for it. The fit counts each of the worker's labels
at the task's posterior, which includes that very label: where a task has few labels the
posterior follows the label, so a prolific worker agrees with "the truth" it largely made,
whatever its skill (on RTE from one label per task the fitted matrices rate highest a worker
whose labels are 58% right, and a replay choosing by them asks it almost everything).
:func:`held_out_confusion_counts` counts each label against the task's Dawid–Skene posterior
from the *other* workers' labels, with the fitted matrices,

.. math::
    p^{(-j)}_{ik} \propto \pi_k \textstyle\prod_{j' \neq j} \theta_{j'kx_{ij'}}, \qquad
    N_{jkx} = \textstyle\sum_{i:\,x_{ij} = x} p^{(-j)}_{ik},

over the tasks that someone else labelled too (or that have gold): the agreement of the worker
with the others, as in leave-one-out or the cavity distributions of expectation propagation
(Minka 2001). The same formula serves every model with confusion matrices (for Dawid–Skene
it is the model's own posterior without j's labels; for models whose posterior has more in it,
task difficulty or features, it leaves that out). A worker's question confusion is then the
mean of a Dirichlet posterior per row (:func:`held_out_confusion`).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..maths import softmax_classes

__all__ = [
    "QUESTION_PRIOR",
    "QUESTION_VALUES",
    "UNCERTAINTY_BIN",
    "answer_change",
    "entropy",
    "expected_answer_changes",
    "held_out_confusion",
    "held_out_confusion_counts",
    "label_question_values",
    "uncertainty_then_changes",
]

QUESTION_VALUES = ("information", "accuracy", "uncertainty", "uncertainty_changes", "random")
#: width of the entropy bins of ``"uncertainty_changes"``, as a fraction of log K (the wider of
#: the two widths replayed, 0.02 and 0.05: ``benchmarks/active/active_labels_taskonly.py``)
UNCERTAINTY_BIN = 0.05
#: :func:`expected_answer_changes` looks up to this many labels ahead
LOOK_AHEAD = 3
#: Dirichlet pseudo-counts of a question confusion row: on the diagonal, off it (a mild lean to
#: honest workers, as the default prior of BayesianDawidSkene)
QUESTION_PRIOR = (2.0, 1.0)
#: log-confusions below this are raised to it (a zero entry, e.g. of a worker estimated
#: perfect, would otherwise make two workers' disagreeing labels impossible)
_LOG_FLOOR = np.log(1e-6)


def entropy(probas: np.ndarray, axis: int = -1) -> np.ndarray:
    """Shannon entropy (nats) along ``axis``, with 0 log 0 = 0."""
    p = np.asarray(probas, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p), 0.0)
    return -terms.sum(axis=axis)


def label_question_values(
    probas: np.ndarray,
    confusion: np.ndarray,
    strategy: str,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """The value of one more label for each question (module docstring).

    Parameters
    ----------
    probas : array (n, K)
        The class posterior of each question's task.
    confusion : array (n, K, K) or (K, K)
        The answering worker's confusion matrix per question (one for all).
    strategy : one of :data:`QUESTION_VALUES`
    rng : Generator
        Needed for ``"random"``.
    """
    p = np.asarray(probas, dtype=np.float64)
    if strategy == "uncertainty":
        return entropy(p)
    if strategy == "uncertainty_changes":
        return uncertainty_then_changes(p, confusion)
    if strategy == "random":
        if rng is None:
            raise ValueError("the random strategy needs a random generator")
        return rng.random(len(p))
    if strategy not in QUESTION_VALUES:
        raise ValueError(f"strategy must be one of {QUESTION_VALUES}; got {strategy!r}")
    theta = np.asarray(confusion, dtype=np.float64)
    joint = p[:, :, None] * theta  # (n, K true, K label)
    predictive = joint.sum(axis=1)  # q_x, (n, K)
    with np.errstate(divide="ignore", invalid="ignore"):
        posterior = np.where(predictive[:, None, :] > 0, joint / predictive[:, None, :], 0.0)
    if strategy == "information":
        after = (predictive * entropy(posterior, axis=1)).sum(axis=1)
        return np.maximum(entropy(p) - after, 0.0)
    best_after = (predictive * posterior.max(axis=1)).sum(axis=1)
    return np.maximum(best_after - p.max(axis=1), 0.0)


def uncertainty_then_changes(probas: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    r"""The ``"uncertainty_changes"`` score: with bins of width
    :math:`w = ` :data:`UNCERTAINTY_BIN` :math:`\cdot \log K` nats,
    :math:`w \lfloor H(p) / w \rfloor + \tfrac{w}{2} c`, where :math:`c \in [0, 1]` is
    :func:`expected_answer_changes`: a higher entropy bin first, and within a bin the higher
    expected changes (the score never leaves its bin, so the order is lexicographic)."""
    width = UNCERTAINTY_BIN * np.log(probas.shape[1])
    lower_edge = width * np.floor(entropy(probas) / width)
    return lower_edge + 0.5 * width * expected_answer_changes(probas, confusion)


def answer_change(probas: np.ndarray, confusion: np.ndarray, labels: int = 1) -> np.ndarray:
    r"""The probability that ``labels`` more labels change a task's answer: with the class
    posterior :math:`p` and the answering worker's confusion :math:`\theta`, the labels'
    counts :math:`c` (a multiset of ``labels`` classes) have probability
    :math:`q_c = \sum_k p_k \binom{m}{c} \prod_x \theta_{kx}^{c_x}` and move the posterior to
    :math:`p'_k(c) \propto p_k \prod_x \theta_{kx}^{c_x}`, so

    .. math::
        P(\text{change}) = \sum_c q_c \, 1[\arg\max_k p'_k(c) \ne \arg\max_k p_k].

    This is the look-ahead of the model itself (as trustworthy as its confusion estimates).
    ``probas`` (n, K); ``confusion`` (n, K, K) or (K, K)."""
    p = np.asarray(probas, dtype=np.float64)
    k = p.shape[1]
    theta = np.asarray(confusion, dtype=np.float64)  # (K, K) shared, or (n, K, K)
    current = p.argmax(axis=1)
    change = np.zeros(len(p))
    for drawn in itertools.combinations_with_replacement(range(k), labels):
        counts = np.bincount(drawn, minlength=k)
        ways = math.factorial(labels) / np.prod([math.factorial(c) for c in counts])
        likelihood = np.prod(theta**counts, axis=-1)  # (K true,) or (n, K true)
        joint = p * (ways * likelihood)
        change += joint.sum(axis=1) * (joint.argmax(axis=1) != current)
    return change


def expected_answer_changes(probas: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """The answer changes one more label of each task is expected to buy: the most, over
    :math:`m \\le` :data:`LOOK_AHEAD` more labels from the same confusion, of
    :func:`answer_change` divided by :math:`m` (one label alone can rarely turn an answer that
    a single label made: it makes a tie; two can). In [0, 1]; the stop rule's quantity
    (:func:`crowdbayes.active.audit.expected_changes`)."""
    rates = [answer_change(probas, confusion, m) / m for m in range(1, LOOK_AHEAD + 1)]
    return np.max(rates, axis=0)


def held_out_confusion_counts(
    task_codes: np.ndarray,
    worker_codes: np.ndarray,
    label_codes: np.ndarray,
    log_confusion: np.ndarray,
    log_prevalence: np.ndarray,
    gold_codes: np.ndarray,
    counted_tasks: np.ndarray,
    *,
    pairs_distinct: bool = False,
) -> np.ndarray:
    r"""Each worker's labels counted against the task's posterior from the *other* workers'
    labels (module docstring): :math:`N_{jkx}`, shape (workers, K, K).

    The posterior is Dawid–Skene's with the fitted matrices,
    :math:`p^{(-j)}_{ik} \propto \pi_k \prod_{j' \neq j} \prod_{x \in x_{ij'}}
    \theta_{j'kx}` (all of worker j's labels of the task left out, repeats included); a gold
    task is its gold class. Only the labels of ``counted_tasks`` count.

    Parameters
    ----------
    task_codes, worker_codes, label_codes : int arrays (n_labels,)
    log_confusion : array (n_workers, K, K)
        The log of the fitted confusion matrices (posterior means for a Bayesian model: the
        predictive probability of each label given the class).
    log_prevalence : array (K,)
    gold_codes : int array (n_tasks,)
        The gold class of each task, -1 where unknown.
    counted_tasks : bool array (n_tasks,)
        The tasks labelled by two or more workers or with gold
        (:meth:`~crowdbayes.Labels.cross_checked_tasks`): on the others a label can only agree
        with itself.
    pairs_distinct : bool
        No task–worker pair repeats (:attr:`~crowdbayes.Labels.pairs_distinct`): each label is
        then all of its worker's labels of the task, and the labels need no grouping by pair.
    """
    n_workers, k, _ = log_confusion.shape
    n_tasks = len(gold_codes)
    # own[c, l] = log θ[j_l, c, x_l], (K, n) C-ordered: each class's sums and the softmax's
    # reductions over the classes run over contiguous memory
    table = np.maximum(log_confusion, _LOG_FLOOR).transpose(1, 0, 2).reshape(k, -1)
    own = np.take(table, worker_codes * k + label_codes, axis=1)
    task_log = np.empty((k, n_tasks))
    for c in range(k):
        task_log[c] = np.bincount(task_codes, weights=own[c], minlength=n_tasks)
    if pairs_distinct:  # each label is its worker's only label of the task
        pair_log = own
    else:
        pair, pair_codes = np.unique(task_codes * n_workers + worker_codes, return_inverse=True)
        pair_codes = pair_codes.ravel()
        pair_log = np.empty((k, len(pair)))
        for c in range(k):
            pair_log[c] = np.bincount(pair_codes, weights=own[c], minlength=len(pair))
        pair_log = pair_log[:, pair_codes]
    others = log_prevalence[:, None] + task_log[:, task_codes] - pair_log
    without = softmax_classes(others)[0]  # (K, n)
    gold = gold_codes[task_codes]
    known = gold >= 0
    if known.any():
        without[:, known] = np.eye(k)[:, gold[known]]
    counted = counted_tasks[task_codes]
    cell = (worker_codes * k) * k + label_codes  # the cell (j, 0, x); + c·K for true class c
    if not counted.all():
        cell, without = cell[counted], without[:, counted]
    counts = np.zeros(n_workers * k * k)
    for c in range(k):
        counts += np.bincount(cell + c * k, weights=without[c], minlength=n_workers * k * k)
    return counts.reshape(n_workers, k, k)


def held_out_confusion(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The question confusion matrices from :func:`held_out_confusion_counts` (workers, K, K),
    and the pooled one (K, K) for a worker the fit has not seen: the mean of
    Dirichlet(:data:`QUESTION_PRIOR` + counts) per row, of each worker's counts and of the sum
    of everyone's. A worker the fit saw only on tasks no one else labelled is valued at the
    prior's mean (nothing is known of them; shrinking every worker to the pooled matrix
    instead scored lower in the spammer replay of ``tests/active/test_labels.py``)."""
    k = counts.shape[-1]
    on, off = QUESTION_PRIOR
    prior = off + (on - off) * np.eye(k)
    rows, pooled = counts + prior, counts.sum(axis=0) + prior
    return rows / rows.sum(axis=-1, keepdims=True), pooled / pooled.sum(axis=-1, keepdims=True)
