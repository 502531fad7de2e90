"""Majority vote with an explicit tie policy."""

from __future__ import annotations

import numpy as np

from ..._utils import RandomState, as_generator
from ...annotators.confusion import confusion_counts, full_confusion_map
from ...base import RANDOM_STATE, Options
from ...data.labels import LabelBlock
from ...inference.statistics import Globals, Stats
from .statistics import StatsLabelModel

__all__ = ["MajorityVote"]

_TIE_POLICIES = ("random", "first")


class MajorityVote(StatsLabelModel):
    """Each task's class is the one most workers gave it.

    ``probas_`` are the vote shares. Ties are broken by ``ties``:

    - ``"random"`` (default): uniformly among the tied classes, with a generator seeded by
      ``random_state`` (same seed, same answer);
    - ``"first"``: the tied class that comes first in ``labels.classes``.

    ``confusion_`` is each worker's agreement with the majority labels (smoothed by one
    pseudo-count per cell), a cheap reliability summary; gold tasks keep their gold label.

    Parameters
    ----------
    ties : {"random", "first"}
    random_state : int, Generator or None
    """

    _tags = {"min_workers": 1, "dask": True}
    parameter_constraints = {"ties": [Options(*_TIE_POLICIES)], "random_state": RANDOM_STATE}

    def __init__(self, ties: str = "random", random_state: RandomState = 0) -> None:
        self.ties = ties
        self.random_state = random_state

    iterative = False

    def _dense_arrays(self, n_tasks: int, n_workers: int, n_classes: int) -> dict[str, int]:
        """As every label model's, less one tasks × classes array: the vote shares are the
        posterior, with no working copy beside them."""
        return {
            **super()._dense_arrays(n_tasks, n_workers, n_classes),
            "tasks × classes": 2 * n_tasks * n_classes,
        }

    # ------------------------------------------------------------------ sufficient statistics
    def start_globals(self) -> Globals:
        return {"random_state": self.random_state}

    def partition_globals(self, globals_: Globals, index: int) -> Globals:
        """Partition ``index`` breaks ties with its own stream, spawned from the integer seed
        (so a distributed fit is reproducible, but its random tie-breaks differ from the
        in-memory fit's single stream; ``ties="first"`` gives identical results)."""
        seed = globals_["random_state"]
        if self.ties == "random" and not isinstance(seed, (int, np.integer)):
            raise ValueError(
                "a partitioned MajorityVote with random ties needs an integer random_state; "
                f"got {type(seed).__name__}"
            )
        if self.ties == "first":
            return globals_
        sequence = np.random.SeedSequence(int(seed), spawn_key=(index,))
        return {"random_state": np.random.default_rng(sequence)}

    def local_stats(self, block: LabelBlock, globals_: Globals, tasks: dict | None = None) -> Stats:
        """Winners and vote shares of the partition's tasks; the statistics are the confusion
        counts of the workers against the winners, the winners' class counts and ties."""
        votes = block.vote_counts()
        shares = votes / votes.sum(axis=0)
        rng = as_generator(globals_["random_state"])
        winners = majority_classes(votes, self.ties, rng)
        known = block.gold_codes >= 0
        winners[known] = block.gold_codes[known]
        shares[:, known] = np.eye(block.n_classes)[:, block.gold_codes[known]]
        if tasks is not None:
            tasks["probas"], tasks["labels"] = shares, winners
        return {
            "confusion": confusion_counts(block, winners),
            "classes": np.bincount(winners, minlength=block.n_classes).astype(np.float64),
            "ties": int((np.sum(votes == votes.max(axis=0), axis=0) > 1).sum()),
        }

    def global_update(self, stats: Stats) -> Globals:
        """Agreement with the majority (one pseudo-count per cell) and the winners' shares."""
        return {
            "confusion": full_confusion_map(stats["confusion"], 1.0),
            "prevalence": stats["classes"] / stats["classes"].sum(),
            "ties": np.asarray(stats["ties"]),
        }

    def _set_global_results(self, ids, globals_: Globals) -> None:
        self.n_ties_ = int(globals_["ties"])
        self._set_prevalence(ids, globals_["prevalence"])
        self._set_confusion(ids, globals_["confusion"])


def majority_classes(votes: np.ndarray, ties: str, rng: np.random.Generator) -> np.ndarray:
    """Most-voted class of each task from class-major (K, n_tasks) ``votes``, ties broken by
    ``ties`` ("random" or "first")."""
    if ties == "first":
        return np.argmax(votes, axis=0)
    is_max = votes == votes.max(axis=0)
    keys = np.where(is_max, rng.random(votes.shape[::-1]).T, -1.0)
    return np.argmax(keys, axis=0)
