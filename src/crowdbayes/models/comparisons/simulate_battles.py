"""Seeded arena-like battles: models of very uneven popularity, Davidson ties, style
covariates (for tests, the recovery checks and the leaderboard benchmark)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..._utils import as_generator
from ._davidson import outcome_log_probs

__all__ = ["SimulatedBattles", "simulate_battles"]


@dataclass(frozen=True)
class SimulatedBattles:
    """What :func:`simulate_battles` returns: ``battles`` (``model_a, model_b, winner`` and
    one column per covariate), the true centred ``scores`` of the models (logit scale) and
    the true ``coef`` of the covariates (per unit of the simulated differences, which are
    standard normal)."""

    battles: pd.DataFrame
    scores: pd.Series
    coef: pd.Series


def simulate_battles(
    n_models: int = 20,
    n_battles: int = 10_000,
    *,
    score_sd: float = 1.0,
    tie_strength: float = 0.22,
    popularity: float = 0.0,
    coef=(),
    random_state=None,
) -> SimulatedBattles:
    """Battles from Davidson's model (:mod:`._davidson`): true scores ``N(0, score_sd²)``
    (centred), each battle's two models drawn (distinct) with probabilities ``∝ rank^-popularity``
    (0: uniform; 1: Zipf-like, the arena's), covariates (one per entry of ``coef``) standard
    normal side differences, ``d = s_a − s_b + xᵀcoef``; ``tie_strength`` ν = 0.22 gives about
    10% ties between equal models."""
    rng = as_generator(random_state)
    scores = rng.normal(0.0, score_sd, n_models)
    scores -= scores.mean()
    weight = np.arange(1, n_models + 1, dtype=np.float64) ** -float(popularity)
    weight = rng.permutation(weight / weight.sum())
    a = rng.choice(n_models, n_battles, p=weight)
    b = rng.choice(n_models, n_battles, p=weight)
    while (same := np.flatnonzero(a == b)).size:
        b[same] = rng.choice(n_models, same.size, p=weight)
    coef = np.asarray(coef, dtype=np.float64)
    X = rng.standard_normal((n_battles, len(coef)))
    d = scores[a] - scores[b] + X @ coef
    theta = np.log(tie_strength) if tie_strength > 0 else -np.inf
    cumulative = np.cumsum(np.exp(outcome_log_probs(d, theta)), axis=0)
    outcome = (rng.random(n_battles) > cumulative[:-1]).sum(axis=0)
    ids = np.array([f"model-{i:03d}" for i in range(n_models)], dtype=object)
    frame = pd.DataFrame(
        {
            "model_a": ids[a],
            "model_b": ids[b],
            "winner": np.array(["model_a", "model_b", "tie"], dtype=object)[outcome],
        }
    )
    names = [f"style_{j}" for j in range(len(coef))]
    for j, name in enumerate(names):
        frame[name] = X[:, j]
    return SimulatedBattles(
        frame,
        pd.Series(scores, index=pd.Index(ids, name="model"), name="score"),
        pd.Series(coef, index=pd.Index(names, dtype=object), name="coef"),
    )
