r"""The value of asking for one more comparison of a pair, under a probit preference model.

A comparison of items ``a`` and ``b`` is answered ``y = 1`` (``a`` preferred) with probability
``Φ(d / √ν)``, where ``d`` is the utility difference the question is about and ``ν`` the
answer's noise variance (``ν = α² = 2σ²`` for the GP preference likelihood; larger for a worker
whose answers also depend on their own, uncertain, tastes). Under the posterior
``d ~ N(μ, v)`` the answer is predicted with ``p = Φ(μ / √(ν + v))``. The values:

- ``"information"`` — the expected information gain about the utilities (BALD, Houlsby,
  Huszár, Ghahramani & Lengyel 2011, Sec. 3 "Gaussian process classification"): the mutual
  information between the answer and ``d``,

  .. math:: I(y; d) = h(p) - E_{d \sim N(μ, v)}[h(Φ(d/\sqrt{ν}))],

  with ``h`` the binary entropy. Approximating ``h(Φ(x)) ≈ \exp(-x²/(π \ln 2))`` (bits;
  largest error 0.0027 bits) makes the expectation a Gaussian integral, so in closed form

  .. math:: I ≈ h(p) - \frac{C \sqrt{ν}}{\sqrt{v + C² ν}}
            \exp\Big(-\frac{μ²}{2 (v + C² ν)}\Big) \ \text{bits}, \qquad C² = \frac{π \ln 2}{2},

  returned in nats. It is large where the model is uncertain about ``d`` *and* an answer
  would tell it something (``v`` large next to ``ν``), and small for a pair whose answer is a
  coin flip whatever the utilities (``μ ≈ 0`` but ``v`` small: a known tie);
- ``"power"`` — the information gain again, but the questions are *drawn* without
  replacement with probability proportional to it instead of taken best first (power BALD with
  exponent 1: Kirsch, Farquhar, Atighehchian, Jesson, Branchaud-Charron & Gal 2023,
  "Stochastic batch acquisition: a simple baseline for deep active learning", TMLR; drawn by
  the Gumbel-top-k trick, Kool, van Hoof & Welling 2019): it keeps sampling the pairs BALD
  rates a little lower. Measured (``benchmarks/active/results/active_pairs_strict_32.md``, GPPL on
  UKPConvArgStrict, all 32 topic folds, two draws): no better than BALD there — both lead
  random pairs up to about 100 comparisons and trail them by 0.01 afterwards (area 0.706
  each, random 0.707); with crowdGPPL on the raw crowd labels, valuing each worker by
  their fitted tastes, choosing the worker too helped the draws (area 0.762 against 0.744
  worker-blind, 4 of 4 folds; ``active_pairs_crowd_power.md``), while worker-blind BALD
  stayed best (0.772; on all 32 folds 0.689, and 0.669 choosing the worker:
  ``active_pairs_crowd_32.md``; with the workers' tastes at their prior, as crowdGPPL now
  values them, BALD choosing the worker is level with worker-blind BALD, 0.6925:
  ``active_pairs_crowd_workers_prior.md``). ``score`` is the information gain; the order
  is the draw;
- ``"mixed"`` — half of the questions by information gain best first, half drawn uniformly:
  the two lists alternate (which of them gives the first question is a fair coin, so a batch
  of one is either), a question already taken is skipped. The random half is the exploration
  of Osugi, Kim & Scott (2005, "Balancing exploration and exploitation: a new algorithm for
  active machine learning", ICDM): a question chosen for the training items' own uncertainty
  says little about items the training pairs do not reach, which a uniform sample estimates
  without bias (the sampling bias of active learning, Dasgupta & Hsu 2008). Measured on
  UKPConvArgStrict (GPPL, all 32 topic folds, two draws; ``active_pairs_strict_32.md``): it
  reaches 0.70 with 90 comparisons as BALD does, has the largest area under the
  accuracy–budget curve (0.711; BALD 0.706, random 0.707) and is never below random pairs by
  more than two paired standard errors (BALD: at 19 of 200 budgets): the default of GPPL and
  its variants. With crowdGPPL on the raw crowd labels (32 folds,
  ``active_pairs_crowd_mixed_32.md``) it falls behind BALD (area 0.677 against 0.689; not
  significantly, −0.012 ± 0.013), which stays crowdGPPL's default. ``score`` is the
  information gain;
- ``"uncertainty"`` — least-confident sampling, ``1 - max(p, 1 - p)``, the uncertainty
  sampling of Simpson & Gurevych (2018, Experiment 5): the pairs whose predicted answer is
  closest to a coin flip;
- ``"random"`` — uniform draws (the baseline).

Everything is vectorised over questions: ``mean``, ``var`` and ``noise_var`` are arrays of one
shape (``noise_var`` may be a scalar).
"""

from __future__ import annotations

import numpy as np

from .question_strategies import INFORMATION_VALUED, PAIR_QUESTION_VALUES

__all__ = [
    "PAIR_QUESTION_VALUES",
    "binary_entropy",
    "answer_probability",
    "probit_information_gain",
    "pair_question_values",
    "question_order",
    "INFORMATION_VALUED",
]

#: ``C²`` of the closed form (module docstring)
_C2 = np.pi * np.log(2.0) / 2.0


def binary_entropy(p: np.ndarray) -> np.ndarray:
    """``-p ln p - (1 - p) ln(1 - p)`` in nats, with ``0 ln 0 = 0``."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p), 0.0) + np.where(p < 1, (1 - p) * np.log1p(-p), 0.0)
    return -terms


def answer_probability(mean: np.ndarray, var: np.ndarray, noise_var) -> np.ndarray:
    """``p = Φ(μ / √(ν + v))``: the predicted probability that the answer is ``y = 1``."""
    from scipy.special import ndtr

    mean = np.asarray(mean, dtype=np.float64)
    return ndtr(mean / np.sqrt(np.asarray(noise_var, dtype=np.float64) + np.asarray(var)))


def probit_information_gain(mean: np.ndarray, var: np.ndarray, noise_var) -> np.ndarray:
    """BALD for the probit answer model in closed form, in nats (module docstring).

    Parameters
    ----------
    mean, var : array
        Posterior mean and variance of the difference ``d`` the question is about.
    noise_var : float or array
        ``ν``: the answer is ``y = 1`` with probability ``Φ(d / √ν)``.
    """
    mean = np.asarray(mean, dtype=np.float64)
    var = np.maximum(np.asarray(var, dtype=np.float64), 0.0)
    nu = np.asarray(noise_var, dtype=np.float64)
    spread = var + _C2 * nu
    expected_bits = np.sqrt(_C2 * nu / spread) * np.exp(-0.5 * mean * mean / spread)
    gain = binary_entropy(answer_probability(mean, var, nu)) - np.log(2.0) * expected_bits
    return np.maximum(gain, 0.0)


def pair_question_values(
    mean: np.ndarray,
    var: np.ndarray,
    noise_var,
    strategy: str,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """The value of one more answer to each question (module docstring).

    Parameters
    ----------
    mean, var, noise_var : arrays
        The answer model of each question (see :func:`probit_information_gain`).
    strategy : one of :data:`PAIR_QUESTION_VALUES`
    rng : Generator
        Needed for ``"random"``.
    """
    if strategy in INFORMATION_VALUED:
        return probit_information_gain(mean, var, noise_var)
    if strategy == "uncertainty":
        p = answer_probability(mean, var, noise_var)
        return 1.0 - np.maximum(p, 1.0 - p)
    if strategy == "random":
        if rng is None:
            raise ValueError("the random strategy needs a random generator")
        return rng.random(np.shape(mean))
    raise ValueError(f"strategy must be one of {PAIR_QUESTION_VALUES}; got {strategy!r}")


def question_order(score: np.ndarray, strategy: str, rng: np.random.Generator) -> np.ndarray:
    """The questions' indices, first to ask first: by decreasing ``score`` (ties in a random
    order); for ``"power"``, a draw without replacement with probability proportional to
    ``score`` (the order of ``log score + Gumbel noise``; questions worth nothing come last,
    in a random order); for ``"mixed"``, the best-first order and a uniform permutation
    alternating, a fair coin choosing which starts, each question at its first place."""
    score = np.asarray(score, dtype=np.float64)
    ties = rng.random(len(score))
    if strategy == "power":
        with np.errstate(divide="ignore"):
            score = np.log(np.maximum(score, 0.0)) + rng.gumbel(size=len(score))
    best_first = np.lexsort((ties, -score))
    if strategy != "mixed":
        return best_first
    drawn = rng.permutation(len(score))
    lists = (best_first, drawn) if rng.random() < 0.5 else (drawn, best_first)
    alternating = np.stack(lists, axis=1).ravel()
    _, first_place = np.unique(alternating, return_index=True)
    return alternating[np.sort(first_place)]
