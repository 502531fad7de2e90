r"""Judge reliabilities of a leaderboard: Crowd-BT on battles counted per judge.

When the battles say who judged them, each judge ``j`` gets Crowd-BT's reliability (Chen et al.
2013; :mod:`.crowd_bt`): with probability :math:`\eta_j \sim \mathrm{Beta}(a_0, b_0)` a vote
follows the board's Bradley–Terry–Davidson model, otherwise it is noise — drawn from outcome
shares :math:`q_o` learned for all judges (``noise="random"``: a spammer, :math:`\eta \approx 0`)
or the opposite answer (``noise="flip"``: an adversary, :math:`\eta \approx 0`; a spammer then
sits near ½). The fit is :class:`~.crowd_bt.CrowdBT`'s variational Bayes — alternately

1. :math:`q(\eta_j) = \mathrm{Beta}(a_0 + \sum_{r \in j} n_r\rho_r,\ b_0 + \sum_{r \in j}
   n_r(1-\rho_r))`;
2. :math:`q_o \propto 1 + \sum_r n_r (1-\rho_r)[o_r = o]` (random noise);
3. Newton on the scores and :math:`\theta = \log\nu` (:class:`._battles_fit.BattleProblem`)
   with outcome weights :math:`\sum_r n_r\rho_r` per (pair, outcome) (and
   :math:`n_r(1-\rho_r)` on the flipped outcome for flips);
4. :math:`\rho_r = \sigma\big(\psi(a_j) - \psi(b_j) + \log p(o_r \mid d_r) -
   \log p_\text{noise}(o_r)\big)`

— but on **rows** ``r``: the distinct ``(judge, pair, outcome)`` triples with their counts
:math:`n_r`. Every battle of a row has the same responsibility ρ (it depends on the judge, the
pair's score difference and the outcome only), so the counted fit equals CrowdBT's fit on the
battles one by one, at a cost per iteration of O(rows + pairs + models³) instead of
O(battles): 2,000,000 arena battles of 100 judges collapse to a few hundred thousand rows.
The scores have the board's prior, or :math:`N(0, 2^2)` (:data:`JUDGE_PRIOR_SCALE`) when the
board has none: without one, discounting a judge's votes can leave a model unbeaten and its
score without a maximum. The fit starts from the board's scores and stops when no judge's
posterior mean reliability moves by more than ``tol``. Ties follow Davidson's model whatever
the board's ``tie_model`` (a noise model needs the probability of a tie); style covariates are
not used (the judge model compares a vote with the models' scores alone).

How far to trust it (30 simulated boards of 12 models and 6,000 battles, 12 judges: eight
voting by the model with probability 1 to 0.5 and at random otherwise, two voting at random,
two flipping nine votes in ten; tests/models/comparisons/test_leaderboard_judges.py,
benchmarks/leaderboard/judges.py): with ``noise="flip"`` the reliabilities rank the judges with
Spearman 0.80-0.94 (mean 0.90); the random voters sit at 0.40-0.62, the adversaries at
0.03-0.29, a judge with half its votes random at 0.64-0.88 and those with at least 80 % faithful
votes at 0.79 or more — hence the default flag below 0.65 (:data:`FLAG_BELOW`). With
``noise="random"`` the ranking is worse (Spearman 0.53-0.95, mean 0.87): the learned outcome
shares can take up the ties (the random voters' third of ties look like noise, and Davidson's
tie strength drops), the random voters land at 0.02-0.50 and the adversaries anywhere in
0.01-0.91 (a flipped vote on a close pair is about as likely as a random one).

Each judge's row of :func:`judge_table` holds its battles, the reliability's posterior mean and
equal-tailed interval, and its **agreement** with the board: the share of its decisive battles
(ties left out) won by the model the board scores higher. The Beta posteriors are mean-field
and too narrow (:mod:`.crowd_bt` measures their coverage): read the reliabilities as a ranking
of the judges and a spammer detector, not as calibrated probabilities.

References
----------
Chen, X., Bennett, P. N., Collins-Thompson, K. & Horvitz, E. (2013). Pairwise ranking
aggregation in a crowdsourced setting. WSDM.
Davidson, R. R. (1970). On extending the Bradley–Terry model to accommodate ties in paired
comparison experiments. JASA 65(329).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..._utils import as_generator
from ...data.battles import A_WINS, B_WINS, TIE, BattleCounts
from ...inference.squarem import squarem_cycle
from ...maths import dirichlet_kl
from ._battles_fit import BattleProblem
from ._davidson import outcome_log_probs
from ._solver import TIE_PRIOR_MEAN

__all__ = [
    "FLAG_BELOW",
    "JUDGE_PRIOR_SCALE",
    "JudgeFit",
    "JudgeRows",
    "fit_judges",
    "judge_table",
    "simulate_judges",
]

#: the outcome a flipped vote gives: a win for the other side, a tie stays a tie
FLIPPED = np.array([B_WINS, A_WINS, TIE])
#: the default reliability below which a judge is flagged, by noise model (module docstring:
#: a random voter sits near ½ under flips, lower under random noise)
FLAG_BELOW = {"flip": 0.65, "random": 0.5}
#: the scores' prior sd in the judge model when the board has none (:class:`.CrowdBT`'s)
JUDGE_PRIOR_SCALE = 2.0
#: Newton steps of each M-step at most: a generalised EM step (the bound still rises, and the
#: fixed point, where the gradient is 0, is the same), which saves a fifth of the time
M_STEPS = 2


@dataclass
class JudgeRows:
    """Battles counted per distinct ``(judge, pair, outcome)``: the sorted distinct keys
    ``((judge·n + a)·n + b)·3 + outcome`` (``n`` = ``n_models``, models ``a < b``, outcome 0: a
    won, 1: b won, 2: tie; judges coded into ``judge_ids``) and their ``count``. Derived:
    ``judge``, ``outcome`` and ``pair`` (codes into the distinct pairs ``pair_a < pair_b``) of
    each row."""

    judge_ids: pd.Index
    key: np.ndarray
    count: np.ndarray
    n_models: int

    def __post_init__(self) -> None:
        n = self.n_models
        cell, self.outcome = np.divmod(self.key, 3)
        self.judge, pair_key = np.divmod(cell, n * n)
        pair_keys, pair = np.unique(pair_key, return_inverse=True)
        self.pair = pair.ravel()
        self.pair_a, self.pair_b = np.divmod(pair_keys, n)

    @classmethod
    def of(cls, judge_ids, judge, a, b, outcome, n_models: int, count=None) -> JudgeRows:
        """Orient every battle ``a < b`` (a swap swaps the winner) and add up equal rows."""
        judge_ids = pd.Index(judge_ids, name="judge")
        if 3.0 * len(judge_ids) * float(n_models) ** 2 >= 2.0**62:
            raise ValueError(
                f"Leaderboard: {len(judge_ids)} judges of {n_models} models are too many to "
                "count per (judge, pair, outcome)"
            )
        judge = np.asarray(judge, dtype=np.int64)
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        outcome = np.asarray(outcome, dtype=np.int64)
        count = np.ones(len(a), dtype=np.int64) if count is None else np.asarray(count)
        swap = a > b
        low, high = np.where(swap, b, a), np.where(swap, a, b)
        outcome = np.where(swap & (outcome < TIE), 1 - outcome, outcome)
        key = ((judge * n_models + low) * n_models + high) * 3 + outcome
        keys, inverse = np.unique(key, return_inverse=True)
        total = np.bincount(inverse.ravel(), count, len(keys)).astype(np.int64)
        return cls(judge_ids, keys, total, int(n_models))

    @property
    def n_judges(self) -> int:
        return len(self.judge_ids)

    def battles(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(judge, a, b, outcome)`` of the rows (each standing for ``count`` battles)."""
        return self.judge, self.pair_a[self.pair], self.pair_b[self.pair], self.outcome

    def merged(self, other: JudgeRows) -> JudgeRows:
        """These rows and ``other``'s (model codes of a board of ``other.n_models`` models,
        this board's first; judges matched by id, new ones added)."""
        judge_ids = self.judge_ids.append(other.judge_ids.difference(self.judge_ids))
        j, a, b, o = self.battles()
        j2, a2, b2, o2 = other.battles()
        return JudgeRows.of(
            judge_ids,
            np.concatenate([j, judge_ids.get_indexer(other.judge_ids)[j2]]),
            np.concatenate([a, a2]),
            np.concatenate([b, b2]),
            np.concatenate([o, o2]),
            other.n_models,
            np.concatenate([self.count, other.count]),
        )

    def state(self) -> dict:
        """What a model keeps (and saves) of the rows."""
        return {
            "judge_ids": self.judge_ids,
            "key": self.key,
            "count": self.count,
            "n_models": self.n_models,
        }


@dataclass
class JudgeFit:
    """What :func:`fit_judges` finds: the Beta posteriors ``(a, b)`` of the reliabilities, the
    judge model's scores ``s`` (centred) and ``theta``, the noise's outcome shares ``q``,
    the iterations and whether the reliabilities settled."""

    a: np.ndarray
    b: np.ndarray
    s: np.ndarray
    theta: float
    q: np.ndarray
    n_iter: int
    converged: bool


def fit_judges(
    rows: JudgeRows,
    n_models: int,
    scores: np.ndarray,
    *,
    theta: float | None = None,
    noise: str = "flip",
    prior: tuple[float, float] = (2.0, 1.0),
    prior_var: float = JUDGE_PRIOR_SCALE**2,
    max_iter: int = 500,
    tol: float = 1e-5,
    sparse: bool = False,
) -> JudgeFit:
    """Crowd-BT's variational Bayes on counted rows (module docstring), from the board's
    ``scores`` (and tie strength ``exp(theta)``; None: the prior's), accelerated by SQUAREM
    (:mod:`crowdbayes.inference.squarem`; each of the ``max_iter`` cycles is three VB
    iterations, an extrapolation kept only where it does not lower the bound).
    ``prior_var``: the scores' prior variance (a prior always: the weighted likelihood alone
    may have no maximum when a judge's votes are discounted); ``sparse``: Newton on the sparse
    path of :mod:`._battles_fit` (large boards)."""
    vb = _JudgeVB(rows, n_models, prior, noise == "flip", prior_var, sparse)
    z = np.append(np.asarray(scores, dtype=np.float64), TIE_PRIOR_MEAN if theta is None else theta)
    z[:n_models] -= z[:n_models].mean()
    a0, b0 = vb.prior
    x = vb.pack(np.full(rows.n_judges, a0), np.full(rows.n_judges, b0), np.full(3, 1 / 3), z)
    converged, n_iter = False, 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007
        new = squarem_cycle(vb.update, x, vb.objective)
        change = np.abs(vb.reliability(new) - vb.reliability(x)).max()
        x = new
        if change < tol:
            converged = True
            break
    a, b, q, z = vb.unpack(x)
    s = z[:n_models] - z[:n_models].mean()
    return JudgeFit(a, b, s, float(z[-1]), q, n_iter, converged)


class _JudgeVB:
    """One VB iteration as a map of ``x = (log a, log b, log q, s, θ)`` (for SQUAREM), and
    the evidence lower bound it increases: :math:`\\sum_r n_r \\log(e^{f_r} + e^{g_r}) +
    \\log p(s, \\theta) + \\sum_o \\log q_o - \\sum_j \\mathrm{KL}(q(\\eta_j) \\| p(\\eta_j))`
    with :math:`f_r = \\psi(a_j) - \\psi(a_j + b_j) + \\log p(o_r \\mid d_r)` and
    :math:`g_r = \\psi(b_j) - \\psi(a_j + b_j) + \\log p_\\text{noise}(o_r)` (:mod:`.crowd_bt`).

    A row's :math:`f_r - g_r` is its judge's :math:`\\psi(a_j) - \\psi(b_j)` plus its cell's
    (pair and outcome) log-likelihood ratio, so the per-row work is one gather, a sigmoid (or a
    softplus for the bound) and the sums; everything else is per judge or per cell."""

    def __init__(
        self, rows: JudgeRows, n_models: int, prior, flip: bool, prior_var, sparse: bool = False
    ) -> None:
        self.rows, self.flip = rows, flip
        self.prior = tuple(float(v) for v in prior)
        self.m = rows.n_judges
        self.n_pairs = p = len(rows.pair_a)
        pairs = BattleCounts(
            n_models,
            rows.pair_a,
            rows.pair_b,
            np.zeros(p, dtype=np.int64),
            np.zeros((p, 0)),
            np.ones(p),
        )
        self.problem = BattleProblem(pairs, "davidson", prior_var, sparse=sparse)
        #: a row's cell: outcome-major, as the (3, pairs) arrays of the outcomes ravel
        self.cell = rows.outcome * p + rows.pair
        self.count = rows.count.astype(np.float64)
        # the rows come sorted by judge: sums per judge by segments
        self.judges, self.starts = np.unique(rows.judge, return_index=True)
        self.judge_total = self.per_judge(self.count)
        self.cell_total = np.bincount(self.cell, self.count, 3 * p)
        #: the cell of the flipped vote of each cell
        self.flipped = (FLIPPED[:, None] * p + np.arange(p)).ravel()

    def per_judge(self, values: np.ndarray) -> np.ndarray:
        """``values`` of the rows summed per judge."""
        total = np.zeros(self.m)
        total[self.judges] = np.add.reduceat(values, self.starts)
        return total

    def pack(self, a, b, q, z) -> np.ndarray:
        return np.concatenate([np.log(a), np.log(b), np.log(q), z])

    def unpack(self, x: np.ndarray):
        m = self.m
        with np.errstate(over="ignore", invalid="ignore"):
            q = np.exp(x[2 * m : 2 * m + 3])
            return np.exp(x[:m]), np.exp(x[m : 2 * m]), q / q.sum(), x[2 * m + 3 :]

    def reliability(self, x: np.ndarray) -> np.ndarray:
        a, b, _, _ = self.unpack(x)
        return a / (a + b)

    def _logits(self, a, b, q, z) -> tuple[np.ndarray, np.ndarray]:
        """:math:`f_r - g_r` of every row, and the noise's log-probability of every cell."""
        from scipy import special

        log_p = outcome_log_probs(self.problem.diff(z), z[-1]).ravel()
        noise = log_p[self.flipped] if self.flip else np.repeat(np.log(q), self.n_pairs)
        gap = special.digamma(a) - special.digamma(b)
        return gap[self.rows.judge] + (log_p - noise)[self.cell], noise

    def update(self, x: np.ndarray) -> np.ndarray:
        """Responsibilities ρ at ``x``, then q(η), q and the scores from them (NaN from a
        point SQUAREM extrapolated too far, which it then discards)."""
        a, b, q, z = self.unpack(x)
        if not all(np.isfinite(v).all() and (v > 0).all() for v in (a, b, q)):
            return np.full_like(x, np.nan)
        # ρ = σ(t) as (1 + tanh(t/2)) / 2: the same, four times faster than scipy's expit
        faithful = self.count * (0.5 + 0.5 * np.tanh(0.5 * self._logits(a, b, q, z)[0]))
        a0, b0 = self.prior
        a = a0 + self.per_judge(faithful)
        b = b0 + self.judge_total - (a - a0)
        weights = np.bincount(self.cell, faithful, 3 * self.n_pairs)
        noisy = self.cell_total - weights
        if self.flip:
            weights[self.flipped] += noisy
        else:
            noisy = noisy.reshape(3, self.n_pairs).sum(axis=1)
            q = (noisy + 1.0) / (noisy.sum() + 3.0)
        fitted = self.problem.maximise(z, weights.reshape(3, -1), max_iter=M_STEPS, tol=1e-8)
        return self.pack(a, b, q, fitted.z)

    def objective(self, x: np.ndarray) -> float:
        from scipy import special

        a, b, q, z = self.unpack(x)
        if not all(np.isfinite(v).all() and (v > 0).all() for v in (a, b, q)):
            return -np.inf
        logits, noise = self._logits(a, b, q, z)
        a0, b0 = self.prior
        kl = dirichlet_kl(np.stack([a, b], axis=-1), np.array([a0, b0]))
        # Σ n_r log(e^f + e^g) = Σ n_r (g_r + softplus(f_r − g_r)), softplus(t) =
        # max(t, 0) + log(1 + e^-|t|) (np.logaddexp is eight times slower)
        softplus = np.maximum(logits, 0.0) + np.log1p(np.exp(-np.abs(logits)))
        value = float(self.count @ softplus)
        value += float(self.judge_total @ (special.digamma(b) - special.digamma(a + b)))
        value += float(self.cell_total @ noise)
        value += self.problem._prior(z)[0] - float(kl.sum())
        return value if self.flip else value + float(np.log(q).sum())


def judge_table(
    rows: JudgeRows, fit: JudgeFit, board_scores: np.ndarray, level: float, threshold: float
) -> pd.DataFrame:
    """One row per judge, most reliable first: ``battles``, ``decisive`` (battles not tied),
    ``agreement`` (share of the decisive battles won by the model with the higher
    ``board_scores``; NaN without any), ``reliability`` (posterior mean) with its ``level``
    interval ``lower, upper``, and ``flagged`` (reliability below ``threshold``)."""
    from scipy import stats

    n = rows.n_judges
    judge, a, b, outcome = rows.battles()
    decisive = outcome != TIE
    winner = np.where(outcome == A_WINS, a, b)
    loser = np.where(outcome == A_WINS, b, a)
    agrees = decisive & (board_scores[winner] > board_scores[loser])
    n_decisive = np.bincount(judge, rows.count * decisive, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        agreement = np.bincount(judge, rows.count * agrees, n) / n_decisive
    tail = (1.0 - level) / 2.0
    reliability = fit.a / (fit.a + fit.b)
    table = pd.DataFrame(
        {
            "battles": np.bincount(judge, rows.count, n).astype(np.int64),
            "decisive": n_decisive.astype(np.int64),
            "agreement": agreement,
            "reliability": reliability,
            "lower": stats.beta.ppf(tail, fit.a, fit.b),
            "upper": stats.beta.ppf(1.0 - tail, fit.a, fit.b),
            "flagged": reliability < threshold,
        },
        index=rows.judge_ids.copy(),
    )
    return table.iloc[np.argsort(-reliability, kind="stable")]


def simulate_judges(
    battles: pd.DataFrame,
    reliability,
    *,
    kind="random",
    random_state=None,
) -> pd.DataFrame:
    """``battles`` (a :func:`.simulate_battles` table) with a ``judge`` column — each battle
    given to one of the judges ``judge-00``, ``judge-01``, ... uniformly — and each judge's
    votes corrupted: with probability ``1 - reliability[j]`` a vote is replaced by noise of
    ``kind[j]`` (or ``kind`` for all): ``"random"`` (a uniform draw of model_a, model_b, tie)
    or ``"flip"`` (the other side wins; a tie stays a tie)."""
    rng = as_generator(random_state)
    reliability = np.asarray(reliability, dtype=np.float64)
    kinds = np.broadcast_to(np.asarray(kind, dtype=object), reliability.shape)
    names = np.array(["model_a", "model_b", "tie"], dtype=object)
    outcome = pd.Index(names).get_indexer(battles["winner"])
    judge = rng.integers(0, len(reliability), len(battles))
    noisy = rng.random(len(battles)) >= reliability[judge]
    flips = noisy & (kinds[judge] == "flip")
    randoms = noisy & (kinds[judge] == "random")
    outcome = np.where(flips, FLIPPED[outcome], outcome)
    outcome = np.where(randoms, rng.integers(0, 3, len(battles)), outcome)
    ids = np.array([f"judge-{j:02d}" for j in range(len(reliability))], dtype=object)
    return battles.assign(winner=names[outcome], judge=ids[judge])
