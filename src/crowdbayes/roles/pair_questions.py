"""Which pairs to have compared next: the one question selection of every pairwise family
(Bradley–Terry, Crowd-BT, the GP preference models).

A candidate question is a pair ``(left, right)`` (and, for a model of each worker, the worker
to ask). The family says what it knows about the pair — the posterior mean and variance of the
score difference (:meth:`PairQuestions._pair_moments`) and how an answer depends on it
(:meth:`PairQuestions._answer_model`: a probit with the answer's noise variance) — and the value
of the question is :func:`~crowdbayes.gp.questions.pair_question_values` of that (BALD,
uncertainty, …). Everything else is here: the candidates (a table, or every pair of the fitted
items, or a uniform sample of them), pairs already decided at ``confidence`` left out, the
order (:func:`~crowdbayes.gp.questions.question_order`), and each unordered pair once before
any pair a second time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..data.validate import show_values
from ..gp.questions import (
    INFORMATION_VALUED,
    PAIR_QUESTION_VALUES,
    answer_probability,
    pair_question_values,
    question_order,
)
from .questions import QuestionAsker

__all__ = ["PairQuestions", "UniquePairs", "triangular_pair"]


class PairQuestions(QuestionAsker):
    """``suggest`` and ``expected_accuracy`` for a model of pairwise comparisons (module
    docstring). The family gives :meth:`_pair_moments` and, where an answer is not the plain
    probit of the consensus difference, :meth:`_noise_var`, :meth:`_answer_model`,
    :meth:`_learnable_moments` and :meth:`_answer_informs`."""

    question_strategies: ClassVar[tuple[str, ...]] = PAIR_QUESTION_VALUES
    default_question_strategy: ClassVar[str] = "information"
    #: without ``candidates``: every pair of the fitted items when there are at most this
    #: many, else this many distinct pairs drawn uniformly at random (``random_state``)
    max_candidate_pairs: ClassVar[int] = 50_000

    def expected_accuracy(
        self,
        left: Sequence | None = None,
        right: Sequence | None = None,
        items: pd.DataFrame | None = None,
    ) -> float:
        """The accuracy the model expects of its own pairwise answers, without gold: the mean
        over the pairs ``(left[i], right[i])`` of ``max(p, 1 - p)``, ``p`` the (consensus)
        ``predict_proba``. Without pairs: over every pair of the fitted items, or a fixed
        sample of them (the default candidates of :meth:`suggest`, seed 0)."""
        self.check_is_fitted()
        if left is None and right is None:
            li, ri = self._default_pairs(np.random.default_rng(0))
            left, right = self.item_ids_[li], self.item_ids_[ri]
        elif left is None or right is None:
            raise ValueError("expected_accuracy: give both left and right, or neither")
        p = self.predict_proba(left, right, items).to_numpy()
        return float(np.mean(np.maximum(p, 1.0 - p))) if len(p) else float("nan")

    def _suggest(self, n, *, candidates, available, strategy, confidence, rng) -> pd.DataFrame:
        """Which pairs to have compared next (and, for a model of each worker, by whom).

        Candidates: a table with ``left`` and ``right`` columns (and optionally ``worker``) of
        item ids the model knows, or None: every pair of the fitted items when there are at
        most :attr:`max_candidate_pairs`, else that many distinct pairs drawn at random. Each
        candidate is valued by :func:`~crowdbayes.gp.questions.pair_question_values` on the
        model's prediction of the answer (:meth:`_answer_model`). A pair whose predicted
        (consensus) answer has ``max(p, 1 - p) ≥ confidence`` is decided and left out. The
        questions are ordered by :func:`~crowdbayes.gp.questions.question_order` (best first;
        drawn for ``"power"``; best first and a uniform draw alternating for ``"mixed"``);
        each unordered pair appears once before any pair appears a second time.
        """
        questions, li, ri = self._question_table(candidates, available, rng)
        if len(questions) and (strategy != "random" or confidence is not None):
            pairs = UniquePairs(li, ri, len(self.item_ids_))
            mean, var = pairs.expand(*self._pair_moments(pairs.low, pairs.high))
            if confidence is not None:
                p = answer_probability(mean, var, self._noise_var())
                keep = np.maximum(p, 1.0 - p) < confidence
                questions, li, ri = questions[keep].reset_index(drop=True), li[keep], ri[keep]
                mean, var = mean[keep], var[keep]
        if not len(questions):
            return questions.assign(score=np.zeros(0))
        pairs = UniquePairs(li, ri, len(self.item_ids_))
        if strategy == "random":
            score = pair_question_values(np.zeros(len(questions)), 0.0, 1.0, "random", rng)
        else:
            learnable = strategy in INFORMATION_VALUED
            answer = self._answer_model(questions, pairs, mean, var, learnable)
            score = pair_question_values(*answer, strategy, rng)
            if learnable:
                score = score * self._answer_informs(questions)
        order = question_order(score, strategy, rng)
        repeat = pd.Series(pairs.key[order]).groupby(pairs.key[order]).cumcount().to_numpy()
        order = order[np.lexsort((np.arange(len(order)), repeat))][:n]
        return questions.iloc[order].assign(score=score[order]).reset_index(drop=True)

    # ------------------------------------------------------------------ the family's part
    def _pair_moments(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance of the (consensus) score difference
        ``f(left) - f(right)`` for item codes ``left``, ``right``."""
        raise NotImplementedError

    def _noise_var(self) -> float:
        """The variance of the answer's noise on the probit scale: the answer to a pair is 1
        with probability ``Φ(d / √noise_var)``."""
        raise NotImplementedError

    def _answer_model(
        self,
        questions: pd.DataFrame,
        pairs: UniquePairs,
        mean: np.ndarray,
        var: np.ndarray,
        learnable: bool,
    ) -> tuple[np.ndarray, np.ndarray, Any]:
        """``(mean, var, noise_var)``: the answer to each question is ``y = 1`` with
        probability ``Φ(d / √noise_var)``, ``d ~ N(mean, var)`` (:mod:`crowdbayes.gp.questions`).
        A pooled model: the consensus difference and :meth:`_noise_var`. With ``learnable``
        (the information strategies) ``var`` is only the part of the uncertainty a refit can
        reduce (:meth:`_learnable_moments`)."""
        if learnable:
            mean, var = self._learnable_moments(pairs, mean, var)
        return mean, var, self._noise_var()

    def _learnable_moments(
        self, pairs: UniquePairs, mean: np.ndarray, var: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The moments of the differences that an answer can inform: all of them for a model
        that represents every compared item."""
        return mean, var

    def _answer_informs(self, questions: pd.DataFrame) -> np.ndarray | float:
        """The probability that each question's answer informs the scores (a factor on its
        information gain): 1 for a pooled model."""
        return 1.0

    # ------------------------------------------------------------------ the candidates
    def _question_table(
        self, candidates: Any, available: Any, rng: np.random.Generator
    ) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
        """The candidate questions as a table (``left``, ``right``, maybe ``worker``) and the
        item codes of each side."""
        if candidates is None:
            li, ri = self._default_pairs(rng)
            table = pd.DataFrame({"left": self.item_ids_[li], "right": self.item_ids_[ri]})
        elif isinstance(candidates, pd.DataFrame):
            missing = [c for c in ("left", "right") if c not in candidates.columns]
            if missing:
                raise ValueError(
                    f"candidates: column(s) {missing} missing; got {list(candidates.columns)}"
                )
            columns = [c for c in ("left", "right", "worker") if c in candidates.columns]
            table = candidates[columns].reset_index(drop=True)
            li = self.item_ids_.get_indexer(table["left"])
            ri = self.item_ids_.get_indexer(table["right"])
            unknown = pd.unique(np.concatenate([table["left"][li < 0], table["right"][ri < 0]]))
            if len(unknown):
                raise ValueError(
                    f"candidates: {len(unknown)} item id(s) were not seen in fit: "
                    f"{show_values(unknown)} (a model knows the items it was fitted with, "
                    "rows of its item table included)"
                )
            same = li == ri
            if same.any():
                raise ValueError(
                    f"candidates: {int(same.sum())} pair(s) compare an item with itself, e.g. "
                    f"{table['left'][same].iloc[0]!r}"
                )
        else:
            raise ValueError(
                "candidates: expected a table with 'left' and 'right' columns (or None); got "
                f"a {type(candidates).__name__}"
            )
        if available is not None:
            workers = pd.Index(np.atleast_1d(np.asarray(available, dtype=object))).unique()
            if len(workers) == 0:
                raise ValueError("available: no worker given")
            codes = np.arange(len(table))
            if "worker" in table.columns:
                codes = codes[table["worker"].isin(workers).to_numpy()]
                table = table.iloc[codes].reset_index(drop=True)
            else:
                table = table.merge(pd.DataFrame({"worker": workers}), how="cross")
                codes = np.repeat(codes, len(workers))
            li, ri = li[codes], ri[codes]
        return table, np.asarray(li, dtype=np.int64), np.asarray(ri, dtype=np.int64)

    def _default_pairs(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Every unordered pair of the fitted items (codes ``i < j``), or
        :attr:`max_candidate_pairs` of them drawn without replacement when there are more."""
        n = len(self.item_ids_)
        total = n * (n - 1) // 2
        if total <= self.max_candidate_pairs:
            return np.triu_indices(n, k=1)
        k = np.sort(rng.choice(total, self.max_candidate_pairs, replace=False))
        return triangular_pair(k, n)


class UniquePairs:
    """The distinct unordered pairs among questions with item codes ``left``, ``right``:
    ``low``, ``high`` (codes, ``low < high``) of each distinct pair, and for each question its
    pair's ``key`` and the ``sign`` that turns a moment of ``f(low) - f(high)`` into one of
    ``f(left) - f(right)``."""

    def __init__(self, left: np.ndarray, right: np.ndarray, n_items: int) -> None:
        low, high = np.minimum(left, right), np.maximum(left, right)
        self.key = low * n_items + high
        _, first, self.inverse = np.unique(self.key, return_index=True, return_inverse=True)
        self.low, self.high = low[first], high[first]
        self.sign = np.where(left == low, 1.0, -1.0)

    def expand(self, mean: np.ndarray, var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Moments of the distinct pairs as moments of every question's ``f(left) - f(right)``."""
        return self.sign * mean[self.inverse], var[self.inverse]


def triangular_pair(k: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k``-th pair ``(i, j)``, ``i < j < n``, in the row-major order of
    ``numpy.triu_indices(n, 1)``."""
    k = np.asarray(k, dtype=np.int64)
    # pairs before row i: i n - i (i + 1) / 2; solve for the largest i with that ≤ k
    b = 2 * n - 1
    i = np.floor((b - np.sqrt(b * b - 8.0 * k)) / 2).astype(np.int64)
    before = i * n - i * (i + 1) // 2
    # guard the float root at row boundaries
    over = before > k
    i[over] -= 1
    before = i * n - i * (i + 1) // 2
    under = k - before >= n - 1 - i
    i[under] += 1
    before = i * n - i * (i + 1) // 2
    return i, k - before + i + 1
