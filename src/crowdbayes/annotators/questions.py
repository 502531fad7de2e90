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
- ``"random"`` — uniform draws (the baseline).

Everything is vectorised over questions: ``probas`` (n, K) and ``confusion`` (n, K, K) or
(K, K).

**Which worker to ask.** A question to a named worker is valued with that worker's confusion
matrix; the fitted one is the wrong matrix for it. The fit counts each of the worker's labels
at the task's posterior, which includes that very label: where a task has few labels the
posterior follows the label, so a prolific worker agrees with "the truth" it largely made,
whatever its skill. Choosing by it, a replay on RTE (one label per task to start) gave every
question of 15 rounds to a worker whose labels are 58% right (the fitted matrix called it the
best of 164), and the accuracy fell from 0.76 to 0.61. :func:`held_out_confusion_counts`
counts each label against the task's posterior *without* it,

.. math::
    p^{(-j)}_{ik} \propto p_{ik} / \theta_{jkx_{ij}}, \qquad
    N_{jkx} = \textstyle\sum_{i:\,x_{ij} = x} p^{(-j)}_{ik},

over the tasks that someone else labelled too (or that have gold): the agreement of the worker
with the others, as in leave-one-out or the cavity distributions of expectation propagation
(Minka 2001). A worker's question confusion is then the mean of
Dirichlet(:data:`QUESTION_PRIOR` + :math:`N_{jk:}`) per row.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "QUESTION_PRIOR",
    "QUESTION_VALUES",
    "entropy",
    "held_out_confusion",
    "held_out_confusion_counts",
    "label_question_values",
]

QUESTION_VALUES = ("information", "accuracy", "uncertainty", "random")
#: Dirichlet pseudo-counts of a question confusion row: on the diagonal, off it (a mild lean to
#: honest workers, as the default prior of BayesianDawidSkene)
QUESTION_PRIOR = (2.0, 1.0)


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


def held_out_confusion_counts(
    task_codes: np.ndarray,
    worker_codes: np.ndarray,
    label_codes: np.ndarray,
    probas: np.ndarray,
    confusion: np.ndarray,
    counted_tasks: np.ndarray,
) -> np.ndarray:
    """Each worker's labels counted against the task's posterior without the label (module
    docstring): :math:`N_{jkx}`, shape (workers, K, K).

    Parameters
    ----------
    task_codes, worker_codes, label_codes : int arrays (n_labels,)
    probas : array (n_tasks, K)
        The fitted class posterior of every task (all of its labels).
    confusion : array (n_workers, K, K)
        The fitted confusion matrices that produced ``probas`` (posterior means).
    counted_tasks : bool array (n_tasks,)
        The tasks that count: labelled by more than one worker, or with gold.
    """
    n_workers, k, _ = confusion.shape
    keep = counted_tasks[task_codes]
    t, j, x = task_codes[keep], worker_codes[keep], label_codes[keep]
    own = confusion[j, :, x]  # θ_{j k x_ij}, (n, K)
    p = probas[t]
    with np.errstate(divide="ignore", invalid="ignore"):
        without = np.where(own > 0, p / own, 0.0)
    total = without.sum(axis=1, keepdims=True)
    without = np.where(total > 0, without / np.where(total > 0, total, 1.0), p)
    cell = (j * k) * k + x  # the cell (j, 0, x); + c·K for true class c
    counts = np.zeros(n_workers * k * k)
    for c in range(k):
        counts += np.bincount(cell + c * k, weights=without[:, c], minlength=n_workers * k * k)
    return counts.reshape(n_workers, k, k)


def held_out_confusion(counts: np.ndarray) -> np.ndarray:
    """The question confusion matrices from :func:`held_out_confusion_counts`: the mean of
    Dirichlet(:data:`QUESTION_PRIOR` + counts) per row (..., K, K)."""
    k = counts.shape[-1]
    on, off = QUESTION_PRIOR
    rows = counts + off + (on - off) * np.eye(k)
    return rows / rows.sum(axis=-1, keepdims=True)
