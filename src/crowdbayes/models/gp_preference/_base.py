"""What every GP preference estimator shares: the parameter constraints of the item prior, the
resolution of item ids or feature tables into input rows, the length-scale summary, the start
of a warm fit, and what to ask next (:meth:`GPPreferenceBase.suggest`, one implementation for
all five estimators).

:class:`GPPreferenceBase` is the base of :class:`~.ep.GPPreferenceEP` and of the GPPL model
(:class:`~._gppl.GPPLBase`, hence :class:`~.gppl.GPPL`, :class:`~.gppl.GPPLVI`,
:class:`~.gppl.GPPLLaplace` and :class:`~.crowd.CrowdGPPL`). It expects ``kernel`` and
``lengthscale`` parameters and, once fitted, ``item_ids_``, ``feature_names_``, ``kernel_``
and ``_X`` (the input rows of every item).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ...base import (
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    TOLERANCE,
    Estimator,
    Interval,
    Options,
)
from ...data.comparisons import Comparisons
from ...data.validate import show_values
from ...gp import (
    INFORMATION_VALUED,
    PAIR_QUESTION_VALUES,
    TIE_POLICIES,
    answer_probability,
    pair_question_values,
    question_order,
)
from ...gp.prior import ITEM_PRIOR_CONSTRAINTS, item_inputs
from ...kernels import Kernel

__all__ = ["GPPreferenceBase"]


#: constraints of the parameters the GP preference estimators share, by name
SHARED_CONSTRAINTS = {
    **ITEM_PRIOR_CONSTRAINTS,
    "output_scale": [POSITIVE],
    "noise": [POSITIVE],
    "ties": [Options(*TIE_POLICIES)],
    "shape_s0": [POSITIVE],
    "rate_s0": [POSITIVE],
    "n_inducing": [POSITIVE_INT],
    "batch_size": [POSITIVE_INT, None],
    "forgetting_rate": [Interval(numbers.Real, 0, 1)],
    "delay": [NON_NEGATIVE],
    "n_inner": [POSITIVE_INT],
    "max_iter": [POSITIVE_INT],
    "tol": TOLERANCE,
    "optimize_lengthscale": [bool],
    "random_state": list(RANDOM_STATE),
    "progress": [bool],
}


def constraints_of(*names: str, **more: list) -> dict[str, list]:
    """The shared constraints of ``names`` plus ``more``: one estimator's table."""
    return {**{name: SHARED_CONSTRAINTS[name] for name in names}, **more}


class GPPreferenceBase(Estimator):
    """Shared item handling of the GP preference estimators (module docstring)."""

    _abstract = True

    def _set_items(
        self,
        data: Comparisons,
        compared: np.ndarray,
        variance: float,
        kernel: Kernel | None = None,
    ) -> Kernel:
        """Set ``item_ids_``, ``feature_names_`` and the input rows ``_X`` of every item;
        return the prior kernel over them (:func:`~crowdbayes.gp.prior.item_inputs`; a given
        ``kernel``, kept from a previous fit, is used as it is)."""
        self.item_ids_ = data.item_ids
        self.feature_names_ = data.feature_names
        chosen = self.kernel if kernel is None else kernel
        self._X, kernel = item_inputs(data, chosen, self.lengthscale, compared, variance)
        return kernel

    # ------------------------------------------------------------------ warm starts
    #: whether ``fit(..., init=model)`` can start from a previous posterior
    warm_starts: ClassVar[bool] = True

    def _previous_state(self, init: Any) -> dict | None:
        """The attributes of ``init`` (a fitted model of this class), read before the refit
        overwrites them (``init`` may be the model itself); None without ``init``."""
        if init is None:
            return None
        name = type(self).__name__
        if not self.warm_starts:
            raise ValueError(f"{name} cannot warm-start; fit it without init")
        if type(init) is not type(self) or not init.is_fitted():
            got = type(init).__name__
            if type(init) is type(self):
                got += " that is not fitted"
            raise ValueError(f"{name}.fit: init must be a fitted {name}; got a {got}")
        return dict(vars(init))

    @property
    def lengthscale_(self) -> pd.Series | None:
        """Length-scale of each feature (None without features or length-scales)."""
        self.check_is_fitted()
        ls = getattr(self.kernel_, "lengthscale", None)
        if ls is None or self.feature_names_ is None:
            return None
        ls = np.broadcast_to(ls, (len(self.feature_names_),))
        return pd.Series(ls, index=self.feature_names_, name="lengthscale")

    def _resolve(self, items: Sequence | pd.DataFrame, what: str) -> tuple[pd.Index, np.ndarray]:
        """Feature rows for ``items``: known ids, or a feature DataFrame of new items, their ids
        in an ``item`` column or, without one, the index (as every feature table)."""
        id_column = [c for c in getattr(items, "columns", ()) if str(c) == "item"]
        if id_column:
            items = items.set_index(id_column[0])
        if isinstance(items, pd.DataFrame):
            if self.feature_names_ is None:
                raise ValueError(
                    f"{what}: this model was fitted without item features, so it cannot "
                    "predict from a feature table"
                )
            missing = [c for c in self.feature_names_ if c not in map(str, items.columns)]
            if missing:
                raise ValueError(f"{what}: feature column(s) missing: {show_values(missing)}")
            frame = items.rename(columns=str)[list(self.feature_names_)]
            X = frame.to_numpy(dtype=np.float64)
            if not np.isfinite(X).all():
                rows = np.flatnonzero(~np.isfinite(X).all(axis=1))
                raise ValueError(
                    f"{what}: {rows.size} row(s) have missing or infinite features "
                    f"({show_values(frame.index[rows])})"
                )
            return pd.Index(items.index, name="item"), X
        ids = pd.Index(list(items), name="item")
        codes = self.item_ids_.get_indexer(ids)
        unknown = np.flatnonzero(codes < 0)
        if unknown.size:
            hint = (
                "; pass their features as a DataFrame indexed by item id"
                if self.feature_names_ is not None
                else " (the model has no item features, so it knows only compared items)"
            )
            raise ValueError(
                f"{what}: {unknown.size} item id(s) were not seen in fit: "
                f"{show_values(ids[unknown].unique())}{hint}"
            )
        return ids, self._X[codes]

    def _pair_items(
        self, left: Sequence, right: Sequence, items: pd.DataFrame | None, what: str
    ) -> tuple[pd.Index, pd.Index, np.ndarray, np.ndarray, np.ndarray]:
        """``(left, right, X, li, ri)``: the pairs' ids, the input rows ``X`` of the distinct
        items they name (known ids, or rows of ``items``) and each pair's two rows of ``X``."""
        left, right = pd.Index(list(left)), pd.Index(list(right))
        if len(left) != len(right):
            raise ValueError(f"{what}: {len(left)} left and {len(right)} right items")
        wanted = left.append(right).unique()
        described = wanted.intersection(items.index, sort=False) if items is not None else []
        ids, X = self._resolve(wanted.difference(described, sort=False), what)
        if len(described):
            ids_new, X_new = self._resolve(items.loc[described], what)
            ids, X = ids.append(ids_new), np.vstack([X, X_new])
        return left, right, X, ids.get_indexer(left), ids.get_indexer(right)

    # ------------------------------------------------------------------ what to ask next
    question_strategies = PAIR_QUESTION_VALUES
    #: what ``strategy="auto"`` means: half of the questions by information gain, half drawn
    #: (benchmarks/results/active_pairs_strict_32.md; CrowdGPPL keeps ``"information"``)
    default_question_strategy: ClassVar[str] = "mixed"
    #: without ``candidates``: every pair of the fitted items when there are at most this
    #: many, else this many distinct pairs drawn uniformly at random (``random_state``)
    max_candidate_pairs: ClassVar[int] = 50_000
    #: whether the model can say whom to ask (``available``, a ``worker`` column)
    personal_questions: ClassVar[bool] = False

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
        item ids the model knows (compared in fit, or rows of its item table), or None: every
        pair of the fitted items when there are at most :attr:`max_candidate_pairs`, else that
        many distinct pairs drawn at random. Each candidate is valued by
        :func:`~crowdbayes.gp.pair_question_values` on the model's prediction of the answer
        (:meth:`_answer_model`). A pair whose predicted (consensus) answer has
        ``max(p, 1 - p) ≥ confidence`` is decided and left out. The questions are ordered by
        :func:`~crowdbayes.gp.question_order` (best first; drawn for ``"power"``; best first
        and a uniform draw alternating for ``"mixed"``); each unordered pair appears once
        before any pair appears a second time.
        """
        name = type(self).__name__
        if available is not None and not self.personal_questions:
            raise ValueError(
                f"{name} pools all workers, so it cannot say whom to ask; `available` "
                "applies to CrowdGPPL"
            )
        questions, li, ri = self._question_table(candidates, available, rng)
        strategy = self.default_question_strategy if strategy == "auto" else strategy
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

    def _answer_informs(self, questions: pd.DataFrame) -> np.ndarray | float:
        """The probability that each question's answer informs the utilities (a factor on its
        information gain): 1 for a pooled model (crowdGPPL: not a tie)."""
        return 1.0

    def _noise_var(self) -> float:
        """``α² = 2σ²``: the variance of the judgment noise on a utility difference."""
        return 2.0 * self.noise**2

    def _pair_moments(self, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance of the (consensus) ``f(left) - f(right)`` for item
        codes ``left``, ``right``."""
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
        A pooled model: the consensus difference and the judgment noise ``α²``. With
        ``learnable`` (the information strategy) ``var`` is only the part of the uncertainty a
        refit can reduce (:meth:`_learnable_moments`)."""
        if learnable:
            mean, var = self._learnable_moments(pairs, mean, var)
        return mean, var, self._noise_var()

    def _learnable_moments(
        self, pairs: UniquePairs, mean: np.ndarray, var: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The moments of the differences that an answer can inform: all of them for a model
        that represents every compared item (EP, Laplace, VI)."""
        return mean, var

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
