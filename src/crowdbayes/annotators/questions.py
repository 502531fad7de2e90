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
"""

from __future__ import annotations

import numpy as np

__all__ = ["QUESTION_VALUES", "label_question_values", "entropy"]

QUESTION_VALUES = ("information", "accuracy", "uncertainty", "random")


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
