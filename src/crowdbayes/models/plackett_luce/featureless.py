"""Feature-less Plackett–Luce: one positive score s_i per item, Gamma(a, β) prior.

Both algorithms use the same two sums over top-queries: n_i, the number of times item i is chosen,
and, for every item, a sum over the sets containing it — of 1/Σ_{t∈A_l} s_t for MM, of the
auxiliary variables z_l for Gibbs.

- :class:`PlackettLuceMM` — Hunter (2004) minorise–maximise with the Gamma prior (Guo et al. 2019,
  Eq. 7; Caron & Doucet 2012): s_i ← (a − 1 + n_i) / (β + Σ_l δ_li / Σ_{t∈A_l} s_t).
  With a = 1, β = 0 it is the maximum-likelihood MM (choix's ``mm_*`` with ``alpha=0``).
- :class:`PlackettLuceGibbs` — Caron & Doucet (2012): with z_l ~ Exp(Σ_{t∈A_l} s_t) (the
  Thurstonian arrival times), s_i | z ~ Gamma(a + n_i, β + Σ_l δ_li z_l); followed by their
  rescaling step, which redraws the total Σ_i s_i from its Gamma(N a, β) posterior (the likelihood
  does not depend on the total) to fix the slow mixing of the overall scale.

References: D. Hunter, "MM algorithms for generalized Bradley–Terry models", Ann. Stat. 2004;
F. Caron, A. Doucet, "Efficient Bayesian inference for generalized Bradley–Terry models",
J. Comput. Graph. Stat. 2012.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from numbers import Integral

import numpy as np
import pandas as pd

from ..._utils import spawn_generators
from ...base import (
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    TOLERANCE,
    Interval,
    Options,
)
from ...data.rankings import Rankings
from ...inference.diagnostics import summarize
from ...inference.driver import run_iterations
from ...inference.parallel import resolve_n_jobs, run_chains
from ...inference.squarem import squarem_cycle
from ._base import ItemScoreModel
from ._set_sums import SetSums

__all__ = ["PlackettLuceMM", "PlackettLuceGibbs"]


def _wins(rankings: Rankings) -> np.ndarray:
    return np.bincount(rankings.chosen, minlength=rankings.n_items).astype(np.float64)


class PlackettLuceMM(ItemScoreModel):
    """MAP (or maximum-likelihood) item scores by Hunter's MM algorithm.

    Parameters
    ----------
    shape, rate : float
        Gamma(a, β) prior on every s_i. The default a = 1, β = 0 is maximum likelihood, which
        exists only if every item both wins and loses somewhere (checked).
    tol : float
        Stop when no log-score moves by more than ``tol`` in an iteration.
    max_iter : int
    accelerate : bool
        Run the MM map inside SQUAREM cycles (Varadhan & Roland 2008; three maps per iteration,
        monotone in the log-posterior), typically 5–10× fewer maps to the same fixed point.

    Attributes
    ----------
    scores_ : Series, s_i (with β = 0 scaled to geometric mean one);
    log_scores_ : Series, log s_i centred to mean zero;
    n_iter_, converged_
    """

    parameter_constraints = {
        "shape": [POSITIVE],
        "rate": [NON_NEGATIVE],
        "tol": TOLERANCE,
        "max_iter": [POSITIVE_INT],
        "accelerate": [bool],
        "progress": [bool],
    }

    def __init__(
        self,
        shape: float = 1.0,
        rate: float = 0.0,
        *,
        tol: float = 1e-10,
        max_iter: int = 100_000,
        accelerate: bool = True,
        progress: bool = False,
    ) -> None:
        self.shape = shape
        self.rate = rate
        self.tol = tol
        self.max_iter = max_iter
        self.accelerate = accelerate
        self.progress = progress

    def _fit(self, rankings: Rankings) -> None:
        wins = _wins(rankings)
        numerator = self.shape - 1.0 + wins
        if self.rate == 0:
            self._require_ml_exists(rankings, wins)
        elif (numerator <= 0).any():
            raise ValueError(
                "PlackettLuceMM: with shape < 1 an item that never wins has no MAP score; "
                "use shape >= 1"
            )
        sums = SetSums(rankings)
        log_numerator = np.log(numerator)

        def mm_map(log_s: np.ndarray) -> np.ndarray:
            """Eq. 7 in log space."""
            denominator = self.rate + sums.inverse_totals_per_item(log_s)
            new = log_numerator - np.log(denominator)
            if self.rate == 0:  # scale-free likelihood: fix the geometric mean at one
                new -= new.mean()
            return new

        def log_posterior(log_s: np.ndarray) -> float:
            # Σ_l log s_{c_l} = Σ_i n_i log s_i
            log_lik = wins @ log_s - sums.log_totals(log_s)
            return float(
                log_lik + (self.shape - 1.0) * log_s.sum() - self.rate * np.exp(log_s).sum()
            )

        state = {"log_s": np.zeros(rankings.n_items)}

        def step(_: int) -> float:
            if self.accelerate:
                log_s = squarem_cycle(mm_map, state["log_s"], log_posterior)
            else:
                log_s = mm_map(state["log_s"])
            change = np.max(np.abs(log_s - state["log_s"]))
            state["log_s"] = log_s
            return change

        run = run_iterations(
            step,
            max_iter=self.max_iter,
            tol=self.tol,
            monitor="change",
            progress=self.progress,
            desc="PL-MM",
            warn_name="PlackettLuceMM",
        )
        self.n_iter_, self.converged_ = run.n_iter, run.converged
        self.item_ids_ = rankings.item_ids
        log_s = state["log_s"]
        self.scores_ = pd.Series(np.exp(log_s), index=self.item_ids_, name="score")
        self.log_scores_ = pd.Series(log_s - log_s.mean(), index=self.item_ids_, name="log_score")

    @staticmethod
    def _require_ml_exists(rankings: Rankings, wins: np.ndarray) -> None:
        appearances = np.bincount(rankings.stage_items, minlength=rankings.n_items)
        never_win = np.flatnonzero(wins == 0)
        never_lose = np.flatnonzero(wins == appearances)
        for items, what in ((never_win, "never wins"), (never_lose, "never loses")):
            if items.size:
                raise ValueError(
                    f"PlackettLuceMM: the maximum-likelihood scores do not exist: "
                    f"{items.size} item(s) {what} (first: {rankings.item_ids[items[0]]!r}); "
                    "use a Gamma prior (e.g. shape=2, rate=1)"
                )

    def _moments(self, codes):
        return self.log_scores_.to_numpy()[codes], np.zeros((len(codes), len(codes)))

    def _draws(self, codes, n_draws, rng):
        return self.log_scores_.to_numpy()[codes][:, None]


class PlackettLuceGibbs(ItemScoreModel):
    """Posterior samples of the item scores by Caron & Doucet's Gibbs sampler.

    Parameters
    ----------
    shape, rate : float
        Gamma(a, β) prior on every s_i (proper: β > 0).
    n_samples, n_warmup, n_chains : int
        Recorded sweeps per chain, discarded warm-up sweeps, independent chains.
    n_jobs : int or None
        Processes the chains run on (forked; ``-1``: every available core). ``None`` (default)
        uses every available core when the sweeps are long enough to pay for starting
        processes, otherwise one. The results do not depend on it: each chain draws from its
        own generator, spawned from ``random_state``.
    random_state : int, Generator or None
    progress : bool

    Attributes
    ----------
    samples_ : ndarray, shape (n_chains, n_samples, n_items): draws of log s_i, each draw centred
        to mean zero over items (the identified part).
    log_scores_ : Series, posterior mean of the centred log-scores;
    log_scores_sd_ : Series, their posterior sd;
    summary_ : DataFrame with mean, sd, quantiles, R-hat and ESS per item.
    """

    _tags = {"posterior": "sampled"}
    _rhats = ("summary_",)
    parameter_constraints = {
        "shape": [POSITIVE],
        "rate": [POSITIVE],
        "n_samples": [Interval(Integral, 4, None)],
        "n_warmup": [NON_NEGATIVE_INT],
        "n_chains": [POSITIVE_INT],
        "n_jobs": [None, Options(-1), POSITIVE_INT],
        "random_state": RANDOM_STATE,
        "progress": [bool],
    }

    def __init__(
        self,
        shape: float = 1.0,
        rate: float = 1.0,
        *,
        n_samples: int = 1000,
        n_warmup: int = 200,
        n_chains: int = 2,
        n_jobs: int | None = None,
        random_state=None,
        progress: bool = False,
    ) -> None:
        self.shape = shape
        self.rate = rate
        self.n_samples = n_samples
        self.n_warmup = n_warmup
        self.n_chains = n_chains
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.progress = progress

    def _fit(self, rankings: Rankings) -> None:
        n_items, n_sweeps = rankings.n_items, self.n_warmup + self.n_samples
        chains = [
            _ScoreChain(rng, rng.gamma(self.shape, 1.0 / self.rate, size=n_items), self.n_samples)
            for rng in spawn_generators(self.random_generator(), self.n_chains)
        ]
        shared = (
            SetSums(rankings, use_kernel=False),
            self.shape + _wins(rankings),
            float(self.shape),
            float(self.rate),
            self.n_warmup,
        )
        per_sweep = 2e-7 * (len(rankings.stage_items) + n_items)
        n_jobs = resolve_n_jobs(self.n_jobs, self.n_chains, self.n_chains * n_sweeps * per_sweep)
        chains = run_chains(
            _caron_doucet_sweep,
            chains,
            shared,
            n_sweeps=n_sweeps,
            n_jobs=n_jobs,
            progress=self.progress,
            desc="PL-Gibbs sweeps",
        )
        samples = np.stack([chain.samples for chain in chains])
        self.item_ids_ = rankings.item_ids
        self.samples_ = samples
        flat = samples.reshape(-1, rankings.n_items)
        self.log_scores_ = pd.Series(flat.mean(axis=0), index=self.item_ids_, name="log_score")
        self.log_scores_sd_ = pd.Series(flat.std(axis=0), index=self.item_ids_, name="sd")
        if self.n_chains * self.n_samples >= 8:
            self.summary_ = summarize(samples, names=[str(i) for i in self.item_ids_])
        self.n_iter_ = self.n_warmup + self.n_samples
        self.converged_ = True

    def _moments(self, codes):
        return self.log_scores_.to_numpy()[codes], None

    def _draws(self, codes, n_draws, rng):
        return self.samples_.reshape(-1, len(self.item_ids_))[:, codes].T


@dataclass
class _ScoreChain:
    """One chain of :class:`PlackettLuceGibbs`: its generator, current scores and the centred
    log-scores recorded after warm-up."""

    rng: np.random.Generator
    scores: np.ndarray
    n_samples: InitVar[int]
    samples: np.ndarray = field(init=False)

    def __post_init__(self, n_samples: int) -> None:
        self.samples = np.empty((n_samples, len(self.scores)))


def _caron_doucet_sweep(
    chain: _ScoreChain,
    sweep: int,
    sums: SetSums,
    posterior_shape: np.ndarray,
    shape: float,
    rate: float,
    n_warmup: int,
) -> None:
    """One sweep of Caron & Doucet (2012): the arrival times z_l ~ Exp(Σ_{t∈A_l} s_t), the
    scores s_i | z ~ Gamma(a + n_i, β + Σ_l δ_li z_l), then the total Σ_i s_i redrawn from its
    Gamma(N a, β) posterior; recorded (centred, in logs) from ``n_warmup`` on."""
    rng = chain.rng
    arrival = rng.exponential(1.0 / sums.totals(chain.scores))
    scores = rng.gamma(posterior_shape, 1.0 / (rate + sums.per_item(arrival)))
    total = rng.gamma(len(scores) * shape, 1.0 / rate)
    chain.scores = scores * (total / scores.sum())
    if sweep >= n_warmup:
        log_s = np.log(chain.scores)
        chain.samples[sweep - n_warmup] = log_s - log_s.mean()
