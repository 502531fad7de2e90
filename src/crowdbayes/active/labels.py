"""A pool of real class labels for :func:`~crowdbayes.active.simulate`.

Start: ``start`` labels of every task drawn at random from its real labels (every task has at
least that many in the data sets used here); the rest are held back. A question ``task`` is
answered by a random unused label of the task; ``(task, worker)`` only by that worker's label.
Accuracy is measured on the gold tasks, and the model's gold-free estimate on the same tasks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._utils import RandomState, as_generator
from ..data import Labels
from .replay import SeenAnswers, fewest_first, rows_by_key

__all__ = ["LabelPool"]


class LabelPool(SeenAnswers):
    """Real labels ``task, worker, label``, ``start`` per task seen, the rest held back.

    Parameters
    ----------
    labels : DataFrame
        Long table with columns ``task``, ``worker``, ``label``.
    gold : Series
        True class of (some) tasks, indexed by task.
    start : int
        Labels per task revealed before the first fit (fewer for tasks that have fewer).
    classes : sequence, optional
        The classes, in order (default: those of ``labels``, sorted), so that every fit sees all
        of them even when a class has not been revealed yet.
    random_state : seed
        Draws the starting labels.
    """

    def __init__(
        self,
        labels: pd.DataFrame,
        gold: pd.Series,
        *,
        start: int = 1,
        classes: Sequence | None = None,
        random_state: RandomState = None,
    ) -> None:
        missing = [c for c in ("task", "worker", "label") if c not in labels.columns]
        if missing:
            raise ValueError(f"LabelPool: column(s) {missing} missing; got {list(labels.columns)}")
        if start < 1:
            raise ValueError(f"LabelPool: start must be at least 1; got {start}")
        rng = as_generator(random_state)
        self.table = labels[["task", "worker", "label"]].reset_index(drop=True)
        self.classes = (
            list(classes) if classes is not None else sorted(self.table["label"].unique())
        )
        self.gold = gold[gold.index.isin(self.table["task"])]
        order = rng.permutation(len(self.table))
        rank = self.table.iloc[order].groupby("task", sort=False).cumcount()
        self.seen = np.zeros(len(self.table), dtype=bool)
        self.seen[order[rank.to_numpy() < start]] = True

    def fit_args(self) -> tuple:
        return (Labels(self.observed(), classes=self.classes, duplicates="keep"),)

    def candidates(self, worker_aware: bool):
        """Tasks with a held-back label; with ``worker_aware`` the ``(task, worker)`` pairs."""
        rest = self.table[~self.seen]
        if worker_aware:
            return rest[["task", "worker"]].drop_duplicates().reset_index(drop=True)
        return pd.Index(rest["task"].unique(), name="task")

    def baseline(self, strategy: str, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """``round_robin``: the tasks with the fewest labels seen (ties at random); ``random``:
        tasks drawn at random among those with a held-back label."""
        tasks = self.candidates(False)
        if strategy == "random":
            chosen = rng.permutation(len(tasks))[:n]
        elif strategy == "round_robin":
            counts = self.observed()["task"].value_counts().reindex(tasks, fill_value=0)
            chosen = fewest_first(counts.to_numpy(), n, rng)
        else:
            raise ValueError(
                f"unknown pool strategy {strategy!r}: a label pool plays 'round_robin' or 'random'"
            )
        return pd.DataFrame({"task": tasks[chosen], "score": np.nan})

    def reveal(self, questions: pd.DataFrame, rng: np.random.Generator) -> int:
        """Reveal one unused label per question row (a task may be asked several times)."""
        unseen = np.flatnonzero(~self.seen)
        shuffled = unseen[rng.permutation(len(unseen))]
        rest = self.table.iloc[shuffled]
        by_worker = "worker" in questions.columns
        keys = list(zip(rest["task"], rest["worker"], strict=True)) if by_worker else rest["task"]
        slots = rows_by_key(keys, shuffled)
        wanted = (
            zip(questions["task"], questions["worker"], strict=True)
            if by_worker
            else questions["task"]
        )
        revealed = 0
        for key in wanted:
            rows = slots.get(key)
            if rows:
                self.seen[rows.pop()] = True
                revealed += 1
        return revealed

    def score(self, model) -> float:
        """Accuracy on the gold tasks."""
        predicted = model.labels_.reindex(self.gold.index)
        return float((predicted.to_numpy() == self.gold.to_numpy()).mean())

    def estimate(self, model) -> float:
        """The model's gold-free accuracy estimate on the gold tasks."""
        return float(model.expected_accuracy(self.gold.index))
