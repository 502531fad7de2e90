"""The replay loop: ask, reveal held-back answers, refit, record.

A *pool* holds the answers of a real data set, split into those the model has seen and those
held back. Each round the strategy chooses questions — the model's own (``model.suggest``) or a
model-free baseline the pool plays (``"round_robin"``: the questions asked least so far;
``"random"``; for pairs ``"item_coverage"``: the pairs of the items compared least) — the pool
reveals a matching unused answer for each (for a question naming a worker, only that worker's
answer), and the model is refitted on everything revealed so far. The record of a round is the
number of answers seen, the accuracy against the gold answers and the model's gold-free
estimate of that accuracy, so budget–accuracy curves of strategies can be compared on the same
pool (the protocol of Simpson & Gurevych 2018, Experiment 5, for pairs; of incremental
relabelling for labels).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import pandas as pd

from .._utils import RandomState, as_generator

__all__ = [
    "Pool",
    "SeenAnswers",
    "WarmRefit",
    "rows_by_key",
    "fewest_first",
    "simulate",
    "POOL_STRATEGIES",
]

#: strategies a pool plays without asking the model (``"item_coverage"``: pairs only)
POOL_STRATEGIES = ("round_robin", "random", "item_coverage")


class Pool(Protocol):
    """What :func:`simulate` needs of a pool of answers."""

    #: answers seen by the model so far, and answers still held back
    n_observed: int
    n_remaining: int

    def fit_args(self) -> tuple:
        """The positional arguments of ``model.fit`` for the answers seen so far."""

    def candidates(self, worker_aware: bool) -> Any:
        """The questions that can still be answered (``suggest``'s ``candidates``)."""

    def baseline(self, strategy: str, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """``n`` questions chosen by a model-free strategy (:data:`POOL_STRATEGIES`)."""

    def reveal(self, questions: pd.DataFrame, rng: np.random.Generator) -> int:
        """Move a matching unused answer of each question into the seen ones; the count."""

    def score(self, model) -> float:
        """The model's accuracy against the pool's gold answers."""

    def estimate(self, model) -> float:
        """The model's gold-free estimate of that accuracy (on the same questions)."""


class SeenAnswers:
    """The bookkeeping every pool shares: its answers as ``table`` and the boolean mask ``seen``
    (set by the pool's constructor) of those revealed to the model."""

    table: pd.DataFrame
    seen: np.ndarray

    @property
    def n_observed(self) -> int:
        return int(self.seen.sum())

    @property
    def n_remaining(self) -> int:
        return int((~self.seen).sum())

    def observed(self) -> pd.DataFrame:
        """The answers seen so far."""
        return self.table[self.seen]


def rows_by_key(keys, rows) -> dict:
    """Row numbers grouped by key, in the given order (a pool reveals the last unused one)."""
    slots: dict = {}
    for key, row in zip(keys, rows, strict=True):
        slots.setdefault(key, []).append(int(row))
    return slots


def fewest_first(counts: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """The positions of the ``n`` smallest ``counts``, smallest first, ties in a random order
    (the model-free baselines that ask what was asked least)."""
    return np.lexsort((rng.random(len(counts)), counts))[:n]


class WarmRefit:
    """A ``refit`` for :func:`simulate`: each round continues from the previous fit
    (``model.fit(*pool.fit_args(), init=model)``), and whenever the answers seen have grown by a
    factor ``1 + restart_growth`` since the last cold fit, a cold fit of a fresh copy runs too and
    the one with the higher final objective (the last value of the model's ``history_name``
    trace: the EM log-likelihood, the ELBO) is kept.

    Why: a warm start stays in the basin of the mode it starts from. Early rounds see few labels
    per task, chosen by the strategy, and can put the fit in a mode the later data no longer
    support (S_Adult, information gain, one label per task at the start: a warm-refitted
    Bayesian Dawid–Skene ended at 0.30 accuracy with the whole pool, where a cold fit of the
    same labels reaches 0.74). Cold fits on a geometric schedule cost a bounded share of the
    replay: with growth ``g`` the cold fits' labels sum to at most ``(1 + g) / g`` times the
    final pool, against one warm pass per round. ``restart_growth=None`` never restarts; models
    without an objective trace are only refitted warm; a model whose ``fit`` takes no ``init``
    (``CommunityDawidSkene``) or declares it cannot warm-start (``GPPLLaplace``) is refitted
    cold every round (:func:`takes_init`).
    """

    def __init__(self, restart_growth: float | None = 0.25) -> None:
        if restart_growth is not None and restart_growth <= 0:
            raise ValueError(f"restart_growth must be positive or None; got {restart_growth}")
        self.restart_growth = restart_growth
        self.cold_at: int | None = None
        self.n_restarts = 0  # cold fits that beat the warm one

    def __call__(self, model, pool: Pool):
        args = pool.fit_args()
        if not model.is_fitted() or not takes_init(model):
            self.cold_at = pool.n_observed
            return model.fit(*args)
        model.fit(*args, init=model)
        if self.restart_growth is None or final_objective(model) is None:
            return model
        if pool.n_observed < (1 + self.restart_growth) * (self.cold_at or 0):
            return model
        self.cold_at = pool.n_observed
        cold = type(model)(**model.get_params()).fit(*args)
        if final_objective(cold) > final_objective(model):
            self.n_restarts += 1
            model._set_state(cold._get_state())  # the estimator contract's fitted state
        return model


def takes_init(model) -> bool:
    """Whether the model's ``fit`` continues from a fitted model (``tags.warm_start``; not
    ``GPPLLaplace``, whose ``fit`` refuses an ``init``, nor ``CommunityDawidSkene``)."""
    return model.tags.warm_start


def final_objective(model) -> float | None:
    """The last value of a fitted model's objective trace (``history_name``), if it keeps one."""
    name = getattr(model, "history_name", None)
    history = getattr(model, name, None) if name else None
    return float(history[-1]) if history is not None and len(history) else None


def simulate(
    model,
    pool: Pool,
    *,
    batch: int,
    budget: int | None = None,
    strategy: str = "auto",
    worker_aware: bool = False,
    confidence: float | None = None,
    refit: Callable[[Any, Pool], Any] | None = None,
    random_state: RandomState = None,
) -> pd.DataFrame:
    """Replay ``pool`` for ``model``: rounds of ``batch`` questions until ``budget`` answers
    (default: the whole pool) have been seen or nothing is left to ask.

    ``strategy`` is one of the model's question strategies (``"auto"`` included) or a pool
    baseline (:data:`POOL_STRATEGIES`); ``worker_aware`` lets the model choose the worker too;
    ``refit(model, pool)`` refits the model on the pool's answers (default
    ``model.fit(*pool.fit_args())``; a warm start, for instance). Returns one row per fit:
    ``round``, ``n_answers``, ``accuracy``, ``estimated_accuracy``, ``n_asked``, ``n_revealed``,
    ``seconds`` (of the suggestion and the refit).
    """
    if batch < 1:
        raise ValueError(f"batch must be a positive integer; got {batch}")
    rng = as_generator(random_state)
    budget = pool.n_observed + pool.n_remaining if budget is None else budget
    refit = refit or (lambda m, p: m.fit(*p.fit_args()))
    start = time.perf_counter()
    refit(model, pool)
    rows = [_record(0, model, pool, 0, 0, time.perf_counter() - start)]
    while pool.n_observed < budget and pool.n_remaining > 0:
        start = time.perf_counter()
        n = min(batch, budget - pool.n_observed)
        if strategy in POOL_STRATEGIES:
            questions = pool.baseline(strategy, n, rng)
        else:
            questions = model.suggest(
                n,
                candidates=pool.candidates(worker_aware),
                strategy=strategy,
                confidence=confidence,
                random_state=rng,
            )
        revealed = pool.reveal(questions, rng) if len(questions) else 0
        if revealed == 0:
            break  # nothing the strategy wants can be answered from the pool
        refit(model, pool)
        rows.append(
            _record(len(rows), model, pool, len(questions), revealed, time.perf_counter() - start)
        )
    return pd.DataFrame(rows)


def _record(index: int, model, pool: Pool, asked: int, revealed: int, seconds: float) -> dict:
    return {
        "round": index,
        "n_answers": pool.n_observed,
        "accuracy": pool.score(model),
        "estimated_accuracy": pool.estimate(model),
        "n_asked": asked,
        "n_revealed": revealed,
        "seconds": seconds,
    }
