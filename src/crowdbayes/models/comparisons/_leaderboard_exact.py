r"""Draws from the exact posterior of a small leaderboard: an independence Metropolis–Hastings
sampler with a multivariate-t proposal at the Laplace mode.

**Target.** The log density is :class:`._battles_fit.BattleProblem`'s objective
:math:`\ell(z)` on the counted battles, :math:`z = (s, \beta, \theta)`: the log-likelihood
(Davidson ties, or a tie as half a win each) plus the log priors in use — the scores' Gaussian
prior with ``prior_var``, Davidson's :math:`\theta \sim N(\mu_\theta, \sigma_\theta^2)`, a flat
prior on the covariate coefficients β. :func:`log_posterior` evaluates it for many ``z`` at once
(equal to :meth:`BattleProblem.value`, which the tests check).

**The flat prior on the scores** (no ``prior_var``) is improper, but only along the shift
:math:`s \mapsto s + c\mathbf 1`, which leaves the likelihood unchanged. Write :math:`s = s_c +
m\mathbf 1` with :math:`s_c` centred and :math:`m` the mean (a linear change of variables with
constant Jacobian). The objective then carries the centring term :math:`-\tfrac c2
(\sum_i s_i)^2 = -\tfrac c2 n^2 m^2` (:mod:`._battles_fit`), so the density on the full space
factorises as :math:`L(s_c, \beta, \theta)\,p(\theta)\cdot e^{-c n^2 m^2 / 2}`: a proper
Gaussian on ``m`` independent of the rest. Sampling the full space and centring the scores
therefore gives exactly the posterior of the centred scores under the flat prior on the
centred subspace — no reference model is needed. That posterior is proper exactly when the
likelihood has a finite maximiser (a concave log density with a negative definite Hessian at
its maximum falls at least linearly along every ray from it): without covariates, when the
battles' win graph — an edge from winner to loser, a tie both ways — is strongly connected
(Zermelo 1929; Ford 1957). That condition is necessary with covariates too (it is checked,
:func:`improper_reason`); separation by the covariates alone would leave the fit unconverged.

**Sampler.** Proposals :math:`z' = \hat z + C^{-\top} y`, :math:`y \sim t_\nu(0, I)`, with
:math:`\hat z` the mode and :math:`CC^\top = M` minus the Hessian there (the Laplace
approximation's precision, its centring term included: the proposal is proper), so
:math:`\log q(z') = -\tfrac{\nu + p}{2}\log(1 + |y|^2/\nu) + \text{const}`. Each proposal is
accepted with probability :math:`\min(1, w(z')/w(z))`, :math:`w = \pi/q` (Hastings 1970;
Tierney 1994, §2.3.3). The chain is uniformly ergodic if and only if ``w`` is bounded
(Mengersen & Tweedie 1996, Thm 2.1), and then its acceptance rate is at least
:math:`1/\sup w` (normalised). Here the log posterior falls at least linearly along every ray
(above) while the t density falls only logarithmically, so ``w`` is bounded: the heavy-tailed
proposal is what makes the sampler exact and geometrically convergent whatever the skew of
the posterior on sparse boards — a Gaussian proposal would not be (its tails are lighter
than the posterior's exponential ones). The proposals do not depend on the chain, so their
densities are evaluated as one batch and the chain is a loop over precomputed weights.

**Degrees of freedom.** With ``p`` parameters a t proposal pays for its tails even on a
Gaussian target: its radius :math:`|y|^2 / p` is an :math:`F(p, \nu)` variable where the
target's is :math:`\chi^2_p / p`; for ``p`` = 52 the acceptance on a Gaussian target is 0.32
with ν = 4, 0.69 with ν = 30, 0.87 with ν = 100 (measured). :data:`PROPOSAL_DF` = 30 keeps
polynomial tails (``w`` bounded) at a small cost in acceptance on well-populated boards.

**Refined proposal.** On sparse boards the posterior is skewed and wider than Laplace says.
A pilot of :data:`PILOT` draws from the Laplace t gives importance weights :math:`w = \pi/q`;
their weighted mean and covariance (times :math:`(\nu - 2)/\nu`, the t's scale for that
covariance) define a second t proposal, which gets a pilot of its own, and the chain uses the
one whose pilot has the larger importance-sampling effective size :math:`(\sum w)^2/\sum w^2`
(Kong 1992; the refinement only when the first pilot's is at least :data:`MIN_PILOT_ESS` per
parameter, enough for a covariance). The pilots are then discarded, so the chain's proposal
is fixed and the sampler stays exact. Measured: on 20 models with 100 battles (flat prior)
the refinement raises the chain's smallest effective sample size from 400 to 550 in 128,000
proposals; on well-populated boards the Laplace t is kept.

**Monte Carlo error.** The chain is reported with its acceptance rate and effective sample
size, the smallest over the parameters by Geyer's (1992) initial monotone sequence estimator
of the integrated autocorrelation time. Proposals are drawn in blocks, the first of
:data:`BLOCK` and each later one as long as the chain so far, until the effective sample
size reaches :data:`TARGET_ESS` or :data:`MAX_PROPOSALS` have been drawn (then a warning);
the first :data:`BURN_IN` states (the chain starts at its first proposal) are dropped and the
rest thinned to at most :data:`MAX_KEPT` draws. A 90% interval's end from an effective sample
of 1,000 is within about :math:`\sqrt{0.05 \cdot 0.95/1000}/\varphi(1.645) \approx 0.07`
posterior sd of the exact quantile (one standard error).

**Size.** The acceptance of an independence sampler falls with the dimension (above), and
the cost of a proposal grows with the pairs: measured on simulated boards (one core), 10
models take 0.05 s, 50 models 0.8–1.0 s (acceptance 0.54–0.69 with 2,000–100,000 battles and
up to four covariates), 100 models 2 s and 200 models about three minutes (acceptance 0.36,
128,000 proposals). Boards of more than :data:`MAX_EXACT_MODELS` models are refused, naming
Laplace and the bootstrap instead.

References
----------
Ford, L. R. (1957). Solution of a ranking problem from binary comparisons. Amer. Math. Monthly
64(8).
Geyer, C. J. (1992). Practical Markov chain Monte Carlo. Statistical Science 7(4), 473–483.
Kong, A. (1992). A note on importance sampling using standardized weights. Technical Report
348, Department of Statistics, University of Chicago.
Hastings, W. K. (1970). Monte Carlo sampling methods using Markov chains and their
applications. Biometrika 57(1), 97–109.
Mengersen, K. L. & Tweedie, R. L. (1996). Rates of convergence of the Hastings and Metropolis
algorithms. Annals of Statistics 24(1), 101–121.
Tierney, L. (1994). Markov chains for exploring posterior distributions. Annals of Statistics
22(4), 1701–1728.
Zermelo, E. (1929). Die Berechnung der Turnier-Ergebnisse als ein Maximumproblem der
Wahrscheinlichkeitsrechnung. Math. Zeitschrift 29.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ...exceptions import ConvergenceWarning
from ._battles_fit import _CENTRING, BattleProblem, Mode
from ._solver import TIE_PRIOR_MEAN, TIE_PRIOR_SD

__all__ = [
    "ExactDraws",
    "MAX_EXACT_MODELS",
    "TProposal",
    "choose_proposal",
    "effective_sample_size",
    "exact_draws",
    "improper_reason",
    "log_posterior",
]

#: boards of more models than this are refused (use Laplace or the bootstrap)
MAX_EXACT_MODELS = 50
#: degrees of freedom of the t proposal (module docstring)
PROPOSAL_DF = 30.0
#: proposals of the first block (each later block doubles the chain); the chain stops once its
#: effective sample size reaches TARGET_ESS, or at MAX_PROPOSALS
BLOCK, TARGET_ESS, MAX_PROPOSALS = 4000, 1000.0, 128_000
#: the chain is thinned to at most this many draws
MAX_KEPT = 16_000
#: draws of each pilot (module docstring, "Refined proposal")
PILOT = 2000
#: states dropped at the start of the chain
BURN_IN = 200
#: the pilot's importance-sampling effective size, per parameter, needed to refine the proposal
MIN_PILOT_ESS = 4.0
#: log densities evaluated at once: at most this many (proposal, row) terms
BATCH_TERMS = 2_000_000


@dataclass
class ExactDraws:
    """The chain (draws × parameters, scores centred) and its diagnostics."""

    draws: np.ndarray
    acceptance_rate: float
    ess: float  # the smallest effective sample size over the parameters
    n_proposals: int


def log_posterior(problem: BattleProblem, Z: np.ndarray) -> np.ndarray:
    """:meth:`BattleProblem.value` of each row of ``Z`` (proposals × parameters), batched."""
    Z = np.atleast_2d(Z)
    n, k = problem.n, problem.k
    w_a, w_b, w_t = problem.weights
    out = np.empty(len(Z))
    step = max(1, BATCH_TERMS // max(1, len(problem.a)))
    for start in range(0, len(Z), step):
        block = Z[start : start + step]
        s = block[:, :n]
        half = 0.5 * (s[:, problem.a] - s[:, problem.b] + block[:, n : n + k] @ problem.X.T)
        log_z = np.logaddexp(half, -half)
        value = (w_a - w_b) @ half.T
        if problem.davidson:
            theta = block[:, -1]
            log_z = np.logaddexp(log_z, theta[:, None])
            value += theta * w_t.sum() - 0.5 * ((theta - TIE_PRIOR_MEAN) / TIE_PRIOR_SD) ** 2
        value -= log_z @ (w_a + w_b + w_t)
        if problem.prior_var is None:
            value -= 0.5 * _CENTRING * s.sum(axis=1) ** 2
        else:
            value -= 0.5 * (s * s).sum(axis=1) / problem.prior_var
        out[start : start + step] = value
    return out


def improper_reason(problem: BattleProblem) -> str | None:
    """Why the posterior is improper (module docstring), or None: without a prior on the
    scores, the win graph must be strongly connected."""
    if problem.prior_var is not None or problem.counts.reaches_all(wins=True):
        return None
    parts = int(problem.counts.win_groups()[0].max()) + 1
    if parts == 1:
        return None
    return f"{parts} groups of models never beat each other both ways"


def exact_draws(
    problem: BattleProblem,
    mode: Mode,
    rng: np.random.Generator,
    *,
    df: float = PROPOSAL_DF,
    block: int = BLOCK,
    target_ess: float = TARGET_ESS,
    max_proposals: int = MAX_PROPOSALS,
) -> ExactDraws:
    """Independence Metropolis–Hastings draws from the exact posterior (module docstring),
    the scores centred; refuses boards above :data:`MAX_EXACT_MODELS` models and improper
    posteriors in one line, and warns when the effective sample size stays below
    ``target_ess``."""
    if problem.n > MAX_EXACT_MODELS:
        raise ValueError(
            f"Leaderboard: exact posterior sampling takes at most {MAX_EXACT_MODELS} models "
            f"(this board has {problem.n}); use interval='laplace' or interval='bootstrap'"
        )
    reason = improper_reason(problem)
    if reason is not None:
        raise ValueError(
            f"Leaderboard: the exact posterior without a prior is improper ({reason}: their "
            "scores are unbounded); set prior_scale"
        )
    proposal = choose_proposal(problem, mode, rng, df, PILOT)
    p = problem.size
    states, log_w, accepted, drawn = [], -np.inf, 0, 0  # the first proposal is accepted
    current = mode.z
    ess = 0.0
    while drawn < max_proposals:
        size = min(max(block, drawn), max_proposals - drawn)
        proposals, log_q = proposal.draw(rng, size)
        weights = log_posterior(problem, proposals) - log_q
        uniform = np.log(rng.random(size))
        chain = np.empty((size, p))
        for i in range(size):
            if uniform[i] < weights[i] - log_w:
                current, log_w = proposals[i], weights[i]
                accepted += 1
            chain[i] = current
        states.append(chain)
        drawn += size
        kept = np.concatenate(states)[BURN_IN:]
        ess = float(effective_sample_size(kept).min())
        if ess >= target_ess:
            break
    else:
        warnings.warn(
            f"Leaderboard: the exact posterior sampler's effective sample size is {ess:.0f} "
            f"after {drawn} proposals (acceptance {accepted / drawn:.2f}); its intervals "
            "carry that Monte Carlo error",
            ConvergenceWarning,
            stacklevel=5,  # Leaderboard.fit's caller
        )
    kept = kept[:: -(-len(kept) // MAX_KEPT)]
    kept[:, : problem.n] -= kept[:, : problem.n].mean(axis=1, keepdims=True)
    return ExactDraws(kept, accepted / drawn, ess, drawn)


class TProposal:
    r"""The multivariate t proposal :math:`z = \mu + R y`, :math:`y \sim t_\nu(0, I)`
    (``R`` any square root of the scale matrix); :meth:`draw` gives the draws and their log
    density up to a constant, :math:`-\tfrac{\nu + p}{2}\log(1 + |y|^2/\nu)`."""

    def __init__(self, location: np.ndarray, root: np.ndarray, df: float) -> None:
        self.location, self.root, self.df = location, root, df

    def draw(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        p, df = len(self.location), self.df
        y = rng.standard_normal((size, p)) / np.sqrt(rng.chisquare(df, size) / df)[:, None]
        log_q = -0.5 * (df + p) * np.log1p((y * y).sum(axis=1) / df)
        return self.location + y @ self.root.T, log_q


def choose_proposal(
    problem: BattleProblem, mode: Mode, rng: np.random.Generator, df: float, size: int
) -> TProposal:
    r"""The Laplace t proposal, or its importance-sampling refinement if better (module
    docstring): ``size`` pilot draws of each, their importance weights :math:`w = \pi/q`
    normalised, and the one with the larger :math:`(\sum w)^2 / \sum w^2` (Kong 1992) is
    kept; the refinement has the pilot's weighted mean as location and its weighted
    covariance times :math:`(\nu - 2)/\nu` as scale."""
    from scipy.linalg import cholesky, solve_triangular

    factor = cholesky(mode.matrix, lower=True, check_finite=False)  # M = C Cᵀ: root C⁻ᵀ
    laplace = TProposal(
        mode.z, solve_triangular(factor, np.eye(len(mode.z)), lower=True, trans="T"), df
    )
    candidates = [laplace]
    z, log_q = laplace.draw(rng, size)
    weight = _normalised(log_posterior(problem, z) - log_q)
    quality = [1.0 / (weight @ weight)]
    if quality[0] >= MIN_PILOT_ESS * len(mode.z):  # enough to estimate a covariance
        location = weight @ z
        centred = z - location
        scale = (centred.T @ (centred * weight[:, None])) * (df - 2) / df
        try:
            refined = TProposal(location, cholesky(scale, lower=True), df)
        except np.linalg.LinAlgError:
            refined = None
        if refined is not None:
            z, log_q = refined.draw(rng, size)
            weight = _normalised(log_posterior(problem, z) - log_q)
            candidates.append(refined)
            quality.append(1.0 / (weight @ weight))
    return candidates[int(np.argmax(quality))]


def _normalised(log_weight: np.ndarray) -> np.ndarray:
    weight = np.exp(log_weight - log_weight.max())
    return weight / weight.sum()


def effective_sample_size(chain: np.ndarray) -> np.ndarray:
    r"""Effective sample size of each column of ``chain`` (states × parameters): ``N / τ``
    with :math:`\tau = -1 + 2\sum_{k<K}\Gamma_k`, :math:`\Gamma_k = \rho_{2k} + \rho_{2k+1}`
    the sums of adjacent autocorrelations (by FFT), made non-increasing and cut before the
    first non-positive one — Geyer's (1992) initial monotone sequence estimator, at most
    :math:`N \log_{10} N` (Stan's cap, for antithetic chains). A constant column has ``N``."""
    N = len(chain)
    x = chain - chain.mean(axis=0)
    spectrum = np.fft.rfft(x, n=2 * N, axis=0)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), n=2 * N, axis=0)[:N] / N
    variance = acov[0]
    moving = variance > 1e-300
    rho = acov[:, moving] / variance[moving]
    m = N // 2
    pairs = rho[0 : 2 * m : 2] + rho[1 : 2 * m : 2]
    positive = np.cumprod(pairs > 0, axis=0, dtype=bool)
    pairs = np.minimum.accumulate(np.where(positive, pairs, 0.0), axis=0)
    tau = np.maximum(-1.0 + 2.0 * pairs.sum(axis=0), 1.0 / np.log10(max(N, 10)))
    out = np.full(chain.shape[1], float(N))
    out[moving] = N / tau
    return out
