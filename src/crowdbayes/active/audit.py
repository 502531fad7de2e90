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

from typing import Any

import numpy as np
import pandas as pd

from ..annotators.questions import expected_answer_changes
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


def expected_changes(model: Any, questions: pd.DataFrame) -> np.ndarray:
    """The answer changes one label of each question that ``model.suggest`` returned
    (``task``, and ``worker`` when a worker is named) is expected to buy
    (:func:`crowdbayes.annotators.questions.expected_answer_changes` with the answering
    worker's question confusion). A task the model has not seen has the prevalence as its
    posterior."""
    return expected_answer_changes(
        model._question_posteriors(questions), model._question_confusion(questions)
    )
