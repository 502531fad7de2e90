"""Audits and stop rules of a fitted label model: the model-facing side of
:mod:`crowdbayes.metrics.audit` (the designs and estimators, with their maths) and the
expected number of answers that more labels would change.

- :func:`plan_audit` — the tasks an expert should check, with exact inclusion probabilities;
- :func:`audit_accuracy` — the accuracy of the model's answers over all tasks from the checked
  audit (prediction-powered inference, Angelopoulos et al. 2023; PPI++, 2024), overall and per
  answered class, with how many more audited tasks would halve the interval;
- :func:`expected_changes` — for each suggested question, the answer changes its label is
  expected to buy (the stop rule of ``crowdbayes labels next``).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

from ..metrics import audit as _audit

__all__ = ["audit_accuracy", "expected_changes", "plan_audit"]


def _posteriors(model_or_posteriors: Any) -> tuple[pd.DataFrame, pd.Series | None]:
    """The posteriors and answers of a fitted label model (``probas_``, ``labels_``), or a
    tasks × classes table itself (answers: its most probable classes)."""
    if isinstance(model_or_posteriors, pd.DataFrame):
        return model_or_posteriors, None
    model_or_posteriors.check_is_fitted()
    return model_or_posteriors.probas_, model_or_posteriors.labels_


def plan_audit(model_or_posteriors: Any, n: int, **options) -> pd.DataFrame:
    """:func:`crowdbayes.metrics.audit.plan_audit` for a fitted label model (its answers
    ``labels_`` and posteriors ``probas_``) or for a posterior table."""
    posteriors, answers = _posteriors(model_or_posteriors)
    return _audit.plan_audit(posteriors, n, answers=answers, **options)


def audit_accuracy(
    model_or_posteriors: Any, audit: pd.DataFrame, *, level: float = 0.9
) -> pd.DataFrame:
    """:func:`crowdbayes.metrics.audit.audit_accuracy` of a fitted label model's answers (or of
    a posterior table's most probable classes)."""
    posteriors, answers = _posteriors(model_or_posteriors)
    return _audit.audit_accuracy(posteriors, audit, level=level, answers=answers)


#: ``expected_changes`` looks up to this many labels ahead
LOOK_AHEAD = 3


def answer_change(probas: np.ndarray, confusion: np.ndarray, labels: int = 1) -> np.ndarray:
    r"""The probability that ``labels`` more labels change a task's answer: with the class
    posterior :math:`p` and the answering worker's confusion :math:`\theta` (as in
    :mod:`crowdbayes.annotators.questions`), the labels' counts :math:`c` (a multiset of
    ``labels`` classes) have probability
    :math:`q_c = \sum_k p_k \binom{m}{c} \prod_x \theta_{kx}^{c_x}` and move the posterior to
    :math:`p'_k(c) \propto p_k \prod_x \theta_{kx}^{c_x}`, so

    .. math::
        P(\text{change}) = \sum_c q_c \, 1[\arg\max_k p'_k(c) \ne \arg\max_k p_k].

    This is the look-ahead of the model itself (as trustworthy as its confusion estimates).
    ``probas`` (n, K); ``confusion`` (n, K, K) or (K, K)."""
    p = np.asarray(probas, dtype=np.float64)
    k = p.shape[1]
    theta = np.broadcast_to(np.asarray(confusion, dtype=np.float64), (len(p), k, k))
    current = p.argmax(axis=1)
    change = np.zeros(len(p))
    for drawn in itertools.combinations_with_replacement(range(k), labels):
        counts = np.bincount(drawn, minlength=k)
        ways = math.factorial(labels) / np.prod([math.factorial(c) for c in counts])
        joint = p * ways * np.prod(theta ** counts[None, None, :], axis=2)  # (n, K true)
        change += joint.sum(axis=1) * (joint.argmax(axis=1) != current)
    return change


def expected_changes(model: Any, questions: pd.DataFrame) -> np.ndarray:
    """The answer changes one label of each question that ``model.suggest`` returned
    (``task``, and ``worker`` when a worker is named) is expected to buy: the most, over
    :math:`m \\le` :data:`LOOK_AHEAD` more labels of the task from the same worker's
    confusion, of :func:`answer_change` divided by :math:`m` (one label alone can rarely turn
    an answer that a single label made: it makes a tie; two can). A task the model has not
    seen has the prevalence as its posterior."""
    probas = model.probas_.reindex(questions["task"]).to_numpy(dtype=np.float64, copy=True)
    unseen = np.isnan(probas).any(axis=1)
    probas[unseen] = model.prevalence_.to_numpy()
    confusion = model._question_confusion(questions)
    rates = [answer_change(probas, confusion, m) / m for m in range(1, LOOK_AHEAD + 1)]
    return np.max(rates, axis=0)
