"""A pool of real pairwise comparisons for :func:`~crowdbayes.active.simulate`.

Start: ``start`` comparisons drawn at random from the pool (two, as in Simpson & Gurevych
2018, Experiment 5); the rest are held back. A question ``(left, right)`` is answered by a
random unused comparison of that pair, in either orientation; ``(left, right, worker)`` only
by that worker's comparison of it. Accuracy is measured on held-out gold pairs (the consensus
``predict_proba`` on the right side of ½; a prediction of exactly ½ counts as half right), and
the model's gold-free estimate (``expected_accuracy``) on the same pairs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._utils import RandomState, as_generator
from ..data import Comparisons
from ..data.comparisons import TIE
from ..data.features import read_features
from .replay import SeenAnswers, fewest_first, rows_by_key

__all__ = ["PairPool"]


class PairPool(SeenAnswers):
    """Real comparisons ``left, right, label`` (and ``worker``), ``start`` of them seen, the
    rest held back.

    Parameters
    ----------
    comparisons : DataFrame
        The pool: columns ``left``, ``right``, ``label`` (the preferred item's id or
        ``"equal"``) and optionally ``worker`` (needed for worker-aware questions and for
        models of each worker).
    gold : DataFrame
        Held-out pairs with their true answer: ``left``, ``right``, ``label`` (ties are left
        out of the score). Their items must be known to the fitted model: give their features
        in ``items``.
    items : DataFrame, optional
        Item features, indexed by item id (or with an ``item`` column), for every item of the
        pool and of ``gold``; passed to every fit.
    start : int
        Comparisons revealed before the first fit.
    random_state : seed
        Draws the starting comparisons.
    """

    def __init__(
        self,
        comparisons: pd.DataFrame,
        gold: pd.DataFrame,
        items: pd.DataFrame | None = None,
        *,
        start: int = 2,
        random_state: RandomState = None,
    ) -> None:
        for what, table in (("comparisons", comparisons), ("gold", gold)):
            missing = [c for c in ("left", "right", "label") if c not in table.columns]
            if missing:
                raise ValueError(
                    f"PairPool: {what} column(s) {missing} missing; got {list(table.columns)}"
                )
        if start < 1 or start > len(comparisons):
            raise ValueError(
                f"PairPool: start must lie in [1, {len(comparisons)}] (the pool's size); "
                f"got {start}"
            )
        rng = as_generator(random_state)
        columns = [c for c in ("worker", "left", "right", "label") if c in comparisons.columns]
        self.table = comparisons[columns].reset_index(drop=True)
        self.has_workers = "worker" in self.table.columns
        self.items = None if items is None else read_features(items)
        gold = gold[gold["label"] != TIE]
        self.gold = gold[["left", "right", "label"]].reset_index(drop=True)
        self._gold_left_won = (self.gold["label"] == self.gold["left"]).to_numpy()
        left, right = self.table["left"].to_numpy(), self.table["right"].to_numpy()
        self._pair = _pair_keys(left, right)
        self.seen = np.zeros(len(self.table), dtype=bool)
        self.seen[rng.choice(len(self.table), start, replace=False)] = True
        # every held-back comparison under its pair (and its pair and worker), in a random
        # order: reveal takes the last unused one
        order = rng.permutation(len(self.table))
        self._by_pair = rows_by_key(self._pair[order], order)
        self._by_worker = {}
        if self.has_workers:
            workers = self.table["worker"].to_numpy()[order]
            self._by_worker = rows_by_key(list(zip(self._pair[order], workers, strict=True)), order)

    def fit_args(self) -> tuple:
        return (Comparisons(self.observed(), items=self.items),)

    def candidates(self, worker_aware: bool) -> pd.DataFrame:
        """The pairs with a held-back comparison (``left``, ``right``, each unordered pair once,
        in the orientation of one of its comparisons); with ``worker_aware`` every
        ``(left, right, worker)`` that can be answered."""
        rest = self.table[~self.seen]
        if worker_aware:
            if not self.has_workers:
                raise ValueError("PairPool: worker-aware questions need a 'worker' column")
            keys = pd.DataFrame({"pair": self._pair[~self.seen], "worker": rest["worker"]})
            keep = ~keys.duplicated().to_numpy()
            return rest.loc[keep, ["left", "right", "worker"]].reset_index(drop=True)
        keep = ~pd.Series(self._pair[~self.seen]).duplicated().to_numpy()
        return rest.loc[keep, ["left", "right"]].reset_index(drop=True)

    def baseline(self, strategy: str, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """``random``: pairs drawn at random among those with a held-back comparison;
        ``round_robin``: the pairs with the fewest comparisons seen (ties at random);
        ``item_coverage``: the pairs whose two items have been compared fewest times in all
        (ties at random), a balanced design that spreads the comparisons over as many items
        as the pool has before any item is compared twice."""
        pairs = self.candidates(False)
        if strategy == "random":
            chosen = rng.permutation(len(pairs))[:n]
        elif strategy == "round_robin":
            key = _pair_keys(pairs["left"].to_numpy(), pairs["right"].to_numpy())
            seen = pd.Series(self._pair[self.seen]).value_counts()
            chosen = fewest_first(seen.reindex(key, fill_value=0).to_numpy(), n, rng)
        elif strategy == "item_coverage":
            seen = self.table[self.seen]
            per_item = pd.concat([seen["left"], seen["right"]]).value_counts()
            counts = sum(
                per_item.reindex(pairs[side], fill_value=0).to_numpy() for side in ("left", "right")
            )
            chosen = fewest_first(counts, n, rng)
        else:
            raise ValueError(
                f"unknown pool strategy {strategy!r}: a pair pool plays 'round_robin', 'random' "
                "or 'item_coverage'"
            )
        return pairs.iloc[chosen].assign(score=np.nan).reset_index(drop=True)

    def reveal(self, questions: pd.DataFrame, rng: np.random.Generator) -> int:
        """Reveal one unused comparison per question row (either orientation; a row with a
        ``worker`` only that worker's); the number revealed."""
        keys = _pair_keys(questions["left"].to_numpy(), questions["right"].to_numpy())
        by_worker = "worker" in questions.columns and self.has_workers
        if by_worker:
            keys = list(zip(keys, questions["worker"].to_numpy(), strict=True))
        slots = self._by_worker if by_worker else self._by_pair
        revealed = 0
        for key in keys:
            rows = slots.get(key)
            while rows and self.seen[rows[-1]]:
                rows.pop()
            if rows:
                self.seen[rows.pop()] = True
                revealed += 1
        return revealed

    def score(self, model) -> float:
        """Accuracy on the gold pairs (a prediction of exactly ½ counts as half right)."""
        p = model.predict_proba(self.gold["left"], self.gold["right"]).to_numpy()
        right = np.where(self._gold_left_won, p > 0.5, p < 0.5)
        return float(np.mean(np.where(p == 0.5, 0.5, right)))

    def estimate(self, model) -> float:
        """The model's gold-free accuracy estimate on the gold pairs."""
        return float(model.expected_accuracy(self.gold["left"], self.gold["right"]))


def _pair_keys(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """One key per unordered pair of ids (``"a\\x00b"`` with ``a ≤ b`` as text)."""
    left, right = left.astype(str), right.astype(str)
    first = left <= right
    low, high = np.where(first, left, right), np.where(first, right, left)
    return np.char.add(np.char.add(low, "\x00"), high)
