"""What to ask next: the one ``suggest`` of every role that can choose questions."""

from __future__ import annotations

import numbers
from typing import Any, ClassVar

import numpy as np

from .._utils import as_generator
from ..base import OPEN_UNIT

__all__ = ["QuestionAsker"]


class QuestionAsker:
    """A model that can say which questions are worth asking next (``tags.suggest``).

    Its role gives :meth:`_suggest` (the selection) and ``expected_accuracy`` (the accuracy
    the model expects of its own answers, without gold); :meth:`suggest` checks the arguments
    once for all of them.
    """

    _tags: ClassVar[dict[str, Any]] = {"suggest": True}
    #: the question-selection strategies (besides ``"auto"``)
    question_strategies: ClassVar[tuple[str, ...]] = ()
    #: what ``strategy="auto"`` means (unless the role chooses by the questions:
    #: :meth:`_auto_strategy`)
    default_question_strategy: ClassVar[str] = ""

    def suggest(
        self,
        n: int,
        *,
        candidates: Any = None,
        available: Any = None,
        strategy: str = "auto",
        confidence: float | None = None,
        random_state: Any = None,
    ) -> Any:
        """The ``n`` most valuable questions to ask next, best first, with their ``score``.

        Computed from the fitted posterior by the role (labels: which task, and which of the
        ``available`` workers; pairs: which pair, and for whom). ``candidates`` limits the
        questions (tasks, pairs; default: the role's natural pool), ``available`` names the
        workers who can be asked now (models with ``tags.personal_questions``),
        ``confidence`` marks a question as answered once the posterior's most probable answer
        reaches it (never suggested again), ``strategy`` is ``"auto"`` or one of
        ``question_strategies``, and ``random_state`` breaks ties and draws the ``"random"``
        baseline. Returns a DataFrame of at most ``n`` rows (fewer when fewer questions are
        worth asking).
        """
        self.check_is_fitted()
        name = type(self).__name__
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"{name}.suggest: n must be a positive integer; got {n!r}")
        if strategy != "auto" and strategy not in self.question_strategies:
            choices = ", ".join(repr(s) for s in ("auto", *self.question_strategies))
            raise ValueError(f"{name}.suggest: strategy must be one of {choices}; got {strategy!r}")
        if available is not None and not self.tags.personal_questions:
            raise ValueError(
                f"{name} pools all workers, so it cannot say whom to ask: `available` needs a "
                "model of each worker (tags.personal_questions), such as CrowdGPPL"
            )
        if confidence is not None and not OPEN_UNIT.accepts(confidence):
            raise ValueError(
                f"{name}.suggest: confidence must be a number in (0, 1) or None; got {confidence!r}"
            )
        return self._suggest(
            int(n),
            candidates=candidates,
            available=available,
            strategy=self._auto_strategy(candidates, available) if strategy == "auto" else strategy,
            confidence=confidence,
            rng=as_generator(random_state),
        )

    def _auto_strategy(self, candidates, available) -> str:
        """What ``strategy="auto"`` means for these questions: :attr:`default_question_strategy`
        (a role may choose by the questions, e.g. by whether they name the worker to ask)."""
        return self.default_question_strategy

    def _suggest(self, n, *, candidates, available, strategy, confidence, rng):
        """The role's question selection (see :meth:`suggest`); the arguments are checked and
        ``strategy`` is never ``"auto"``."""
        raise NotImplementedError
