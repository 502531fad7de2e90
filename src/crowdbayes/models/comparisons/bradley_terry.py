r"""Bradley–Terry scores from pairwise comparisons, with Davidson ties and unreliable workers.

:class:`BradleyTerry` is the plain model: item scores :math:`s_i \sim N(0, \sigma^2)`, each
comparison an outcome (left, right or tie) of the Davidson likelihood
(:mod:`~crowdbayes.models.comparisons._davidson`), fitted by Newton's method to the posterior
mode and summarised by the Laplace approximation (the inverse Hessian at the mode gives every
score's posterior sd and interval).

:class:`CrowdBT` adds the workers, in the spirit of Crowd-BT (Chen et al., WSDM 2013): worker
:math:`j` answers faithfully with probability :math:`\eta_j \sim \mathrm{Beta}(a_0, b_0)`, and
otherwise answers at random (``noise="random"``: outcome :math:`o` with a probability
:math:`q_o` shared by all workers, learned) or gives the opposite answer (``noise="flip"``,
Crowd-BT's own model; a tie stays a tie). With an indicator :math:`z_n` (faithful or not) per
comparison, the fit is variational Bayes for :math:`q(z)\,q(\eta)` and MAP–Laplace for the
scores, the tie strength and :math:`q_o`: each iteration

1. :math:`q(\eta_j) = \mathrm{Beta}(a_0 + \sum_{n \in j} \rho_n,\ b_0 + \sum_{n \in j}(1-\rho_n))`;
2. :math:`q_o \propto 1 + \sum_n (1-\rho_n)[o_n = o]` (random noise only);
3. Newton's method on the scores and :math:`\theta = \log\nu` with the weighted likelihood
   :math:`\sum_n \rho_n \log p(o_n \mid d_n)` (+ :math:`(1-\rho_n) \log p(\bar o_n \mid d_n)`
   for flips);
4. :math:`\rho_n = \sigma\big(\mathbb E\log\eta_{j} - \mathbb E\log(1-\eta_{j}) + \log p(o_n
   \mid d_n) - \log p_\text{noise}(o_n)\big)`.

Every step maximises the same objective (``objective_history_``: the evidence lower bound
with the scores, θ and q at their current values,
:math:`\sum_n \log(e^{a_n} + e^{b_n}) + \log p(s) + \log p(\theta) + \log p(q) -
\sum_j \mathrm{KL}(q(\eta_j)\,\|\,p(\eta_j))`), so it never decreases. The E-step uses the
scores at their mode (not averaged over their Laplace posterior); the score intervals are
conditional on the fitted tie strength and responsibilities.

How far to trust the worker results (simulations from the random-noise model, 30 items, 15
workers with reliability uniform on [0.3, 1], 150 comparisons each, ties): ``noise="random"``
ranks the workers by reliability with Spearman 0.6–0.94 (mean absolute error 0.08–0.13), but
its Beta posteriors are mean-field and too narrow: their 90 % intervals held the true value
for about a third of the workers (errors ≈ 2.5 posterior sd; ties from noise and Davidson
ties are hard to tell apart). ``noise="flip"`` ranks such workers worse (Spearman 0.3–0.6),
though a pure spammer still stands out under both. Read ``reliability_`` as a ranking of the
workers and a spammer detector, not as calibrated intervals. The item-score intervals covered
the truth at about their level (tests/models/comparisons).

References
----------
Bradley, R. A. & Terry, M. E. (1952). Rank analysis of incomplete block designs. Biometrika 39.
Davidson, R. R. (1970). On extending the Bradley–Terry model to accommodate ties in paired
comparison experiments. JASA 65(329).
Chen, X., Bennett, P. N., Collins-Thompson, K. & Horvitz, E. (2013). Pairwise ranking
aggregation in a crowdsourced setting. WSDM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy import special, stats
from scipy.linalg import lapack
from scipy.sparse.linalg import cg, splu

from ...base import (
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    TOLERANCE,
    Estimator,
    Options,
    PositivePair,
)
from ...data.comparisons import Comparisons, as_comparisons
from ...data.io import TableLike
from ...gp.questions import (
    PAIR_QUESTION_VALUES,
    answer_probability,
    pair_question_values,
    question_order,
)
from ...inference.driver import run_iterations
from ._davidson import outcome_log_probs, weighted_terms

__all__ = ["BradleyTerry", "CrowdBT"]

#: prior of θ = log ν (the tie strength): N(log 0.5, 2²), wide; it keeps θ finite when the data
#: have few or no ties
TIE_PRIOR_MEAN, TIE_PRIOR_SD = float(np.log(0.5)), 2.0
#: Newton steps per M-step at most, and their tolerance on the largest coordinate change
NEWTON_STEPS, NEWTON_TOL = 50, 1e-9
#: columns of the identity solved at once for the posterior variances (sparse path)
_VARIANCE_BLOCK = 512
#: relative residual of the conjugate-gradient solve of a Newton system
_CG_RTOL = 1e-11
#: the posterior variances come from a dense Cholesky factor up to this many scores (O(n³)
#: flops and n² doubles: 5,000 scores take 200 MB and about 2 s), from sparse LU solves above
_DENSE_VARIANCE_LIMIT = 5000
#: the logistic answer σ(d) as a probit Φ(d / √ν) (σ(x) ≈ Φ(x √(π/8))), for the question
#: values of :mod:`crowdbayes.gp.questions`
_PROBIT_NOISE_VAR = 8.0 / np.pi
OUTCOMES = ("left", "right", "tie")


@dataclass
class _Design:
    """The encoded comparisons a fit works on, each oriented so that ``left < right`` (a
    swapped comparison swaps its left and right outcomes), and the distinct pairs they share:
    the likelihood depends on a comparison only through its pair's score difference and its
    outcome weights, which add up within a pair."""

    n_items: int
    left: np.ndarray  # per pair
    right: np.ndarray  # per pair
    pair: np.ndarray  # per comparison: its pair
    outcome: np.ndarray  # per comparison: 0 left, 1 right, 2 tie (in the pair's orientation)
    answer: np.ndarray  # per comparison: the same in the user's orientation (what was clicked)
    worker: np.ndarray
    n_workers: int

    @classmethod
    def of(cls, data: Comparisons) -> _Design:
        answer = np.where(data.outcome > 0, 0, np.where(data.outcome < 0, 1, 2))
        swap = data.left_codes > data.right_codes
        low = np.where(swap, data.right_codes, data.left_codes)
        high = np.where(swap, data.left_codes, data.right_codes)
        outcome = np.where(swap & (answer < 2), 1 - answer, answer)
        keys, pair = np.unique(low * data.n_items + high, return_inverse=True)
        return cls(
            data.n_items,
            keys // data.n_items,
            keys % data.n_items,
            pair.astype(np.int64),
            outcome.astype(np.int64),
            answer.astype(np.int64),
            data.worker_codes,
            data.n_workers,
        )

    @property
    def n_pairs(self) -> int:
        return len(self.left)

    def diff(self, s: np.ndarray) -> np.ndarray:
        """Score difference of every pair."""
        return s[self.left] - s[self.right]

    def pair_weights(self, weights: np.ndarray) -> np.ndarray:
        """(3, n_pairs) outcome weights summed within pairs from (3, n_comparisons) ones."""
        return np.stack([np.bincount(self.pair, w, self.n_pairs) for w in weights])


class _ScoreProblem:
    """The M-step over the scores (and θ): maximise
    ``Σ F_n(d_n, θ) − |s|²/(2σ²) − (θ − μ)²/(2τ²)`` for fixed outcome weights (given per pair,
    :meth:`_Design.pair_weights`)."""

    def __init__(self, design: _Design, prior_var: float, fit_theta: bool) -> None:
        self.design, self.prior_var, self.fit_theta = design, prior_var, fit_theta
        # The sparsity pattern of minus the Hessian, fixed: diagonal, both triangles of every
        # pair, and θ's row and column. Its CSC order is computed once.
        n = design.n_items
        items = np.arange(n)
        rows = [items, design.left, design.right]
        cols = [items, design.right, design.left]
        self.size = n
        if fit_theta:
            last = np.full(n + 1, n)
            rows += [np.arange(n + 1), last[:n]]
            cols += [last, items]
            self.size = n + 1
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        self._order = np.lexsort((rows, cols))
        self._indices = rows[self._order].astype(np.int32)
        self._indptr = np.searchsorted(cols[self._order], np.arange(self.size + 1)).astype(np.int32)

    def value(self, s: np.ndarray, theta: float, weights: np.ndarray) -> float:
        value = weighted_terms(self.design.diff(s), theta, weights)[0]
        return value + self._log_prior(s, theta)

    def _log_prior(self, s: np.ndarray, theta: float) -> float:
        value = -0.5 * float(s @ s) / self.prior_var
        if self.fit_theta:
            value -= 0.5 * ((theta - TIE_PRIOR_MEAN) / TIE_PRIOR_SD) ** 2
        return value

    def hessian(self, s: np.ndarray, theta: float, weights: np.ndarray):
        """Gradient and minus the Hessian (sparse, positive definite) at ``(s, θ)``."""
        d = self.design
        n = d.n_items
        _, g_d, c_d, g_t, c_t, cross = weighted_terms(d.diff(s), theta, weights)
        grad = np.bincount(d.left, g_d, n) - np.bincount(d.right, g_d, n) - s / self.prior_var
        diagonal = np.bincount(d.left, c_d, n) + np.bincount(d.right, c_d, n)
        values = [diagonal + 1.0 / self.prior_var, -c_d, -c_d]
        if self.fit_theta:
            grad = np.append(grad, g_t - (theta - TIE_PRIOR_MEAN) / TIE_PRIOR_SD**2)
            column = np.bincount(d.left, cross, n) - np.bincount(d.right, cross, n)
            values += [np.append(column, c_t + 1.0 / TIE_PRIOR_SD**2), column]
        data = np.concatenate(values)[self._order]
        matrix = sp.csc_matrix((data, self._indices, self._indptr), shape=(self.size, self.size))
        return grad, matrix

    def newton_step(self, s: np.ndarray, theta: float, weights: np.ndarray):
        """One damped Newton step; returns ``(s, θ, value, largest change)``. The step is halved
        until the objective does not decrease, so the iterates are monotone."""
        before = self.value(s, theta, weights)
        grad, matrix = self.hessian(s, theta, weights)
        step = _solve_positive_definite(matrix, grad)
        scale = 1.0
        for _ in range(40):
            new_s = s + scale * step[: self.design.n_items]
            new_theta = theta + scale * step[-1] if self.fit_theta else theta
            value = self.value(new_s, new_theta, weights)
            if value >= before:
                return new_s, new_theta, value, scale * float(np.abs(step).max())
            scale *= 0.5
        return s, theta, before, 0.0

    def maximise(self, s: np.ndarray, theta: float, weights: np.ndarray):
        """Newton's method to the mode (at most :data:`NEWTON_STEPS` steps)."""
        value = self.value(s, theta, weights)
        for _ in range(NEWTON_STEPS):
            s, theta, value, change = self.newton_step(s, theta, weights)
            if change < NEWTON_TOL:
                break
        return s, theta, value

    def variances(self, s: np.ndarray, theta: float, weights: np.ndarray) -> np.ndarray:
        """Laplace posterior variance of each score: the diagonal of the inverse of minus the
        Hessian at the mode. Every entry of that inverse is non-zero on a connected comparison
        graph, so its cost is cubic in the number of items: by a dense Cholesky factor
        (LAPACK ``potrf``/``potri``) up to :data:`_DENSE_VARIANCE_LIMIT` scores, by sparse LU
        solves a block of identity columns at a time above (less memory, more time on random
        comparison graphs, whose LU factors fill in)."""
        _, matrix = self.hessian(s, theta, weights)
        n, size = self.design.n_items, self.size
        if size <= _DENSE_VARIANCE_LIMIT:
            return _inverse_diagonal(matrix.toarray())[:n]
        lu = splu(matrix)
        out = np.empty(n)
        for start in range(0, n, _VARIANCE_BLOCK):
            stop = min(start + _VARIANCE_BLOCK, n)
            rhs = np.zeros((size, stop - start))
            rhs[np.arange(start, stop), np.arange(stop - start)] = 1.0
            out[start:stop] = lu.solve(rhs)[np.arange(start, stop), np.arange(stop - start)]
        return out


def _solve_positive_definite(matrix: sp.csc_matrix, rhs: np.ndarray) -> np.ndarray:
    """``matrix⁻¹ rhs`` for minus the Hessian (sparse, symmetric positive definite: the
    comparison graph's weighted Laplacian plus the prior precision, and θ's row) by conjugate
    gradients with a Jacobi preconditioner, O(comparisons) per iteration; a sparse LU of a
    random comparison graph fills in instead (1.5 s per factorisation for 2,000 items and
    20,000 random pairs, against milliseconds here). Falls back to LU if CG has not met its
    tolerance within ``10 n`` iterations."""
    preconditioner = sp.diags(1.0 / matrix.diagonal())
    step, info = cg(
        matrix, rhs, rtol=_CG_RTOL, atol=0.0, M=preconditioner, maxiter=10 * matrix.shape[0]
    )
    return step if info == 0 else splu(matrix).solve(rhs)


def _inverse_diagonal(dense: np.ndarray) -> np.ndarray:
    """Diagonal of the inverse of a symmetric positive definite matrix, from its Cholesky
    factor (``potri`` writes the inverse's lower triangle in place)."""
    factor, info = lapack.dpotrf(dense, lower=1, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"minus the Hessian is not positive definite (potrf {info})")
    inverse, info = lapack.dpotri(factor, lower=1, overwrite_c=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"minus the Hessian is singular (potri {info})")
    return np.diag(inverse).copy()


def _observed_weights(design: _Design, faithful: np.ndarray, flip: bool) -> np.ndarray:
    """(3, n_pairs) outcome weights: ``faithful`` on each comparison's observed outcome and,
    for flips, the rest on the opposite one (a tie's opposite is a tie), summed within pairs."""
    n = len(design.outcome)
    weights = np.zeros((3, n))
    columns = np.arange(n)
    weights[design.outcome, columns] = faithful
    if flip:
        opposite = np.array([1, 0, 2])[design.outcome]
        weights[opposite, columns] += 1.0 - faithful
    return design.pair_weights(weights)


class _PairwiseModel(Estimator):
    """What both estimators share: input checks, the score summaries, predictions."""

    _abstract = True

    def _design(self, data: Comparisons | TableLike) -> tuple[Comparisons, _Design]:
        data = as_comparisons(data)
        if self.tie_model == "none" and data.n_ties:
            raise ValueError(
                f"{type(self).__name__}(tie_model='none') cannot take ties: "
                f"{data.n_ties} of {data.n_comparisons} comparisons are 'equal'; fit with "
                "tie_model='davidson', or drop them when reading: Comparisons(data, ties='drop')"
            )
        if data.n_items < 2:
            raise ValueError(f"{type(self).__name__}: need at least 2 items; got {data.n_items}")
        return data, _Design.of(data)

    def _set_scores(self, data: Comparisons, mean: np.ndarray, variance: np.ndarray) -> None:
        sd = np.sqrt(np.maximum(variance, 0.0))
        z = stats.norm.ppf(0.5 + self.credible_level / 2)
        self.item_ids_ = data.item_ids
        self.utility_ = pd.DataFrame(
            {"mean": mean, "sd": sd, "lower": mean - z * sd, "upper": mean + z * sd},
            index=data.item_ids,
        )
        self.credible_level_ = float(self.credible_level)

    def _codes(self, items: Sequence, what: str) -> np.ndarray:
        ids = pd.Index(items)
        codes = self.item_ids_.get_indexer(ids)
        unknown = np.flatnonzero(codes < 0)
        if unknown.size:
            shown = ", ".join(repr(v) for v in ids[unknown].unique()[:5])
            raise ValueError(
                f"{what}: {unknown.size} item id(s) were not in the fitted comparisons: {shown}"
            )
        return codes

    def predict_utility(self, items: Sequence | None = None) -> pd.DataFrame:
        """Posterior mean, sd and interval of the scores (all items, or ``items``)."""
        self.check_is_fitted()
        if items is None:
            return self.utility_.copy()
        return self.utility_.iloc[self._codes(items, "items")]

    def predict_proba(self, left: Sequence, right: Sequence, items: None = None) -> pd.Series:
        """P(``left`` preferred to ``right`` | not a tie), averaged over the Laplace posterior of
        the two scores (taken independent): :math:`\\sigma(\\mu_d / \\sqrt{1 + \\pi v_d / 8})`.
        ``items`` is accepted for the command line's sake and must be None (no features)."""
        self.check_is_fitted()
        if items is not None:
            raise ValueError(
                f"{type(self).__name__} has no item features: it predicts fitted items only"
            )
        left_codes = self._codes(left, "left")
        right_codes = self._codes(right, "right")
        if len(left_codes) != len(right_codes):
            raise ValueError(
                f"left and right differ in length: {len(left_codes)} vs {len(right_codes)}"
            )
        mean = self.utility_["mean"].to_numpy()
        var = self.utility_["sd"].to_numpy() ** 2
        mu = mean[left_codes] - mean[right_codes]
        v = var[left_codes] + var[right_codes]
        return pd.Series(special.expit(mu / np.sqrt(1 + np.pi * v / 8)), name="p_left")

    # ------------------------------------------------------------------ what to ask next
    question_strategies = PAIR_QUESTION_VALUES
    default_question_strategy = "information"
    #: without ``candidates``: every pair of the fitted items when there are at most this
    #: many, else this many distinct pairs drawn at random
    max_candidate_pairs = 50_000

    def _default_pairs(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.item_ids_)
        if n * (n - 1) // 2 <= self.max_candidate_pairs:
            left, right = np.triu_indices(n, k=1)
            return left, right
        draws = 2 * self.max_candidate_pairs
        left, right = rng.integers(n, size=draws), rng.integers(n, size=draws)
        low, high = np.minimum(left, right), np.maximum(left, right)
        keys = np.unique((low * n + high)[low != high])
        keys = rng.permutation(keys)[: self.max_candidate_pairs]
        return keys // n, keys % n

    def _difference_moments(self, left: np.ndarray, right: np.ndarray):
        mean = self.utility_["mean"].to_numpy()
        var = self.utility_["sd"].to_numpy() ** 2
        return mean[left] - mean[right], var[left] + var[right]

    def expected_accuracy(self, left: Sequence | None = None, right: Sequence | None = None):
        """The accuracy the model expects of its own answers, without gold: the mean of
        ``max(p, 1 − p)`` over the pairs given, or over the default candidates of
        :meth:`suggest` (seed 0)."""
        self.check_is_fitted()
        if left is None and right is None:
            li, ri = self._default_pairs(np.random.default_rng(0))
            left, right = self.item_ids_[li], self.item_ids_[ri]
        elif left is None or right is None:
            raise ValueError("expected_accuracy: give both left and right, or neither")
        p = self.predict_proba(left, right).to_numpy()
        return float(np.mean(np.maximum(p, 1.0 - p))) if len(p) else float("nan")

    def _suggest(self, n, *, candidates, available, strategy, confidence, rng) -> pd.DataFrame:
        """Which pairs to have compared next: each candidate valued by
        :func:`~crowdbayes.gp.questions.pair_question_values` with the score difference's
        Laplace mean and variance (scores taken independent) and the logistic answer as a
        probit. Candidates: a ``left, right`` table of fitted items, or every pair of them (a
        random sample of :attr:`max_candidate_pairs` when there are more). Pairs decided at
        ``confidence`` are left out; each unordered pair appears once, best first."""
        name = type(self).__name__
        if available is not None:
            raise ValueError(
                f"{name} pools all workers, so it cannot say whom to ask; `available` applies "
                "to CrowdGPPL"
            )
        if candidates is None:
            li, ri = self._default_pairs(rng)
        else:
            if not isinstance(candidates, pd.DataFrame) or not {"left", "right"} <= set(
                candidates.columns
            ):
                raise ValueError("candidates: a table with 'left' and 'right' columns is needed")
            li = self._codes(candidates["left"], "candidates")
            ri = self._codes(candidates["right"], "candidates")
            low, high = np.minimum(li, ri), np.maximum(li, ri)
            keep = low != high
            _, first = np.unique((low * len(self.item_ids_) + high)[keep], return_index=True)
            rows = np.flatnonzero(keep)[np.sort(first)]
            li, ri = li[rows], ri[rows]
        mean, var = self._difference_moments(li, ri)
        if confidence is not None:
            p = answer_probability(mean, var, _PROBIT_NOISE_VAR)
            keep = np.maximum(p, 1.0 - p) < confidence
            li, ri, mean, var = li[keep], ri[keep], mean[keep], var[keep]
        strategy = self.default_question_strategy if strategy == "auto" else strategy
        score = pair_question_values(mean, var, _PROBIT_NOISE_VAR, strategy, rng)
        order = question_order(score, strategy, rng)[:n]
        return pd.DataFrame(
            {
                "left": self.item_ids_[li[order]],
                "right": self.item_ids_[ri[order]],
                "score": score[order],
            }
        )

    def predict_outcome_proba(self, left: Sequence, right: Sequence) -> pd.DataFrame:
        """P(left), P(right), P(tie) at the posterior mean scores (Davidson's model)."""
        self.check_is_fitted()
        mean = self.utility_["mean"].to_numpy()
        d = mean[self._codes(left, "left")] - mean[self._codes(right, "right")]
        theta = np.log(self.tie_strength_) if self.tie_strength_ > 0 else -np.inf
        return pd.DataFrame(np.exp(outcome_log_probs(d, theta)).T, columns=list(OUTCOMES))


_SHARED = {
    "tie_model": [Options("davidson", "none")],
    "prior_scale": [POSITIVE],
    "max_iter": [POSITIVE_INT],
    "tol": TOLERANCE,
    "credible_level": [OPEN_UNIT],
    "progress": [bool],
}


class BradleyTerry(_PairwiseModel):
    r"""Bradley–Terry scores with Davidson ties: posterior mode and Laplace intervals.

    :math:`s_i \sim N(0, \sigma^2)` (``prior_scale`` = σ), each comparison an outcome of
    Davidson's model (:mod:`crowdbayes.models.comparisons`), all workers trusted alike.
    Newton's method finds the mode; ``objective_history_`` is the log posterior after each
    Newton step (never decreasing).

    Parameters
    ----------
    tie_model : {"davidson", "none"}
        ``"davidson"`` models ties with a fitted tie strength ν (``tie_strength_``);
        ``"none"`` is the plain Bradley–Terry model, which cannot take ties (refused).
    prior_scale : float
        Prior sd of the scores (they are identified only up to a shift; the prior fixes it).
    max_iter, tol : Newton steps at most; stop when the objective changes by less than
        ``tol · max(1, |objective|)``.
    credible_level : float
        Level of the score intervals.
    progress : bool

    Attributes
    ----------
    utility_ : DataFrame (items × [mean, sd, lower, upper])
    tie_strength_ : float (0 with ``tie_model="none"``)
    n_iter_, converged_, objective_history_
    """

    parameter_constraints = dict(_SHARED)
    flip = False

    def __init__(
        self,
        tie_model: str = "davidson",
        prior_scale: float = 2.0,
        max_iter: int = 100,
        tol: float | None = 1e-10,
        credible_level: float = 0.95,
        progress: bool = False,
    ) -> None:
        self.tie_model = tie_model
        self.prior_scale = prior_scale
        self.max_iter = max_iter
        self.tol = tol
        self.credible_level = credible_level
        self.progress = progress

    def fit(self, data: Comparisons | TableLike) -> BradleyTerry:
        """Fit to comparisons (a :class:`~crowdbayes.Comparisons` or a
        ``worker, left, right, label`` table; ``label`` = the preferred id or ``"equal"``)."""
        self.check_params()
        data, design = self._design(data)
        fit_theta = self.tie_model == "davidson"
        problem = _ScoreProblem(design, self.prior_scale**2, fit_theta)
        weights = _observed_weights(design, np.ones(len(design.outcome)), flip=False)
        state = {"s": np.zeros(design.n_items), "theta": TIE_PRIOR_MEAN if fit_theta else -np.inf}

        def step(_):
            s, theta, value, change = problem.newton_step(state["s"], state["theta"], weights)
            state.update(s=s, theta=theta, change=change)
            return value

        result = run_iterations(
            step,
            max_iter=self.max_iter,
            tol=self.tol,
            progress=self.progress,
            desc="Bradley-Terry Newton",
            warn_name=type(self).__name__,
        )
        s, theta = state["s"], state["theta"]
        self._set_scores(data, s, problem.variances(s, theta, weights))
        self.tie_strength_ = float(np.exp(theta))
        self.n_iter_, self.converged_ = result.n_iter, result.converged
        self.objective_history_ = np.array(result.history)
        return self


class CrowdBT(_PairwiseModel):
    r"""Bradley–Terry scores with unreliable workers (Crowd-BT / NoisyBT), fitted by variational
    Bayes with Laplace scores (module docstring of
    :mod:`crowdbayes.models.comparisons.bradley_terry`).

    Parameters
    ----------
    noise : {"flip", "random"}
        What an unfaithful answer is: the opposite of the model's answer (Crowd-BT's model,
        the default), or drawn at random from learned outcome shares (``noise_outcomes_``).
        On UKPConvArg the flip model ranked the arguments better (mean within-topic Spearman
        0.914 against 0.907 on all 84,445 crowd labels, 0.875 against 0.867 on CrowdSample;
        benchmarks/comparisons_ukp.py); a random answerer is detected by both (simulations in
        tests/models/comparisons), as reliability near 0 under "random" and near ½ under
        "flip".
    tie_model : {"davidson", "none"}
        As in :class:`BradleyTerry` (``"none"`` refuses ties).
    prior_scale : float
        Prior sd of the scores.
    reliability_prior : (a0, b0)
        Beta prior of each worker's probability of answering faithfully (the default, mean
        2/3, says workers are more often faithful than not, which also tells the flip model's
        two mirror-image solutions apart).
    max_iter, tol : outer iterations at most; stop when the objective changes by less than
        ``tol · max(1, |objective|)``.
    credible_level : float
        Level of the score and reliability intervals.
    progress : bool

    Attributes
    ----------
    utility_ : DataFrame (items × [mean, sd, lower, upper])
    reliability_ : DataFrame (workers × [mean, sd, lower, upper, a, b, comparisons])
        The Beta posterior of each worker's probability of answering faithfully.
    faithful_proba_ : ndarray (n_comparisons,)
        Posterior probability that each answer was faithful.
    noise_outcomes_ : Series
        Shares of left / right / tie among random answers (``noise="random"``).
    tie_strength_ : float
    n_iter_, converged_, objective_history_
    """

    parameter_constraints = {
        **_SHARED,
        "noise": [Options("random", "flip")],
        "reliability_prior": [PositivePair()],
    }

    def __init__(
        self,
        noise: str = "flip",
        tie_model: str = "davidson",
        prior_scale: float = 2.0,
        reliability_prior: tuple[float, float] = (2.0, 1.0),
        max_iter: int = 500,
        tol: float | None = 1e-7,
        credible_level: float = 0.95,
        progress: bool = False,
    ) -> None:
        self.noise = noise
        self.tie_model = tie_model
        self.prior_scale = prior_scale
        self.reliability_prior = reliability_prior
        self.max_iter = max_iter
        self.tol = tol
        self.credible_level = credible_level
        self.progress = progress

    def fit(self, data: Comparisons | TableLike) -> CrowdBT:
        """Fit to comparisons (a :class:`~crowdbayes.Comparisons` or a
        ``worker, left, right, label`` table; ``label`` = the preferred id or ``"equal"``)."""
        self.check_params()
        data, design = self._design(data)
        fit_theta = self.tie_model == "davidson"
        flip = self.noise == "flip"
        a0, b0 = (float(v) for v in self.reliability_prior)
        problem = _ScoreProblem(design, self.prior_scale**2, fit_theta)
        n = len(design.outcome)
        n_outcomes = 3 if fit_theta else 2
        # start: the plain model's mode, workers at their prior
        s, theta, _ = problem.maximise(
            np.zeros(design.n_items),
            TIE_PRIOR_MEAN if fit_theta else -np.inf,
            _observed_weights(design, np.ones(n), flip=False),
        )
        state = {
            "s": s,
            "theta": theta,
            "a": np.full(design.n_workers, a0),
            "b": np.full(design.n_workers, b0),
            "q": np.full(n_outcomes, 1.0 / n_outcomes),
        }
        state["rho"], _ = self._e_step(design, state, flip)

        def step(_):
            rho = state["rho"]
            state["a"] = a0 + np.bincount(design.worker, rho, design.n_workers)
            state["b"] = b0 + np.bincount(design.worker, 1.0 - rho, design.n_workers)
            if not flip:
                counts = np.bincount(design.answer, 1.0 - rho, 3)[:n_outcomes]
                state["q"] = (counts + 1.0) / (counts.sum() + n_outcomes)
            weights = _observed_weights(design, rho, flip)
            state["s"], state["theta"], _ = problem.maximise(state["s"], state["theta"], weights)
            state["rho"], data_term = self._e_step(design, state, flip)
            return data_term + self._prior_terms(problem, state, a0, b0, flip)

        result = run_iterations(
            step,
            max_iter=self.max_iter,
            tol=self.tol,
            progress=self.progress,
            desc="Crowd-BT VB",
            warn_name=type(self).__name__,
        )
        weights = _observed_weights(design, state["rho"], flip)
        self._set_scores(data, state["s"], problem.variances(state["s"], state["theta"], weights))
        self.tie_strength_ = float(np.exp(state["theta"]))
        self._set_workers(data, design, state)
        self.faithful_proba_ = state["rho"]
        if not flip:
            self.noise_outcomes_ = pd.Series(
                state["q"], index=list(OUTCOMES[:n_outcomes]), name="share"
            )
        self.n_iter_, self.converged_ = result.n_iter, result.converged
        self.objective_history_ = np.array(result.history)
        return self

    @staticmethod
    def _e_step(design: _Design, state: dict, flip: bool) -> tuple[np.ndarray, float]:
        """Responsibilities ρ (faithful) and the data term Σ log(e^a + e^b) of the bound."""
        log_probs = outcome_log_probs(design.diff(state["s"]), state["theta"])
        log_faithful = log_probs[design.outcome, design.pair]
        if flip:
            log_noise = log_probs[np.array([1, 0, 2])[design.outcome], design.pair]
        else:
            log_noise = np.log(state["q"])[design.answer]
        a, b = state["a"][design.worker], state["b"][design.worker]
        digamma_total = special.digamma(a + b)
        first = special.digamma(a) - digamma_total + log_faithful
        second = special.digamma(b) - digamma_total + log_noise
        rho = special.expit(first - second)
        return rho, float(np.logaddexp(first, second).sum())

    @staticmethod
    def _prior_terms(problem, state, a0: float, b0: float, flip: bool) -> float:
        """log p(s) + log p(θ) + log p(q) − Σ_j KL(Beta(a_j, b_j) ‖ Beta(a0, b0))."""
        a, b = state["a"], state["b"]
        kl = (
            special.betaln(a0, b0)
            - special.betaln(a, b)
            + (a - a0) * special.digamma(a)
            + (b - b0) * special.digamma(b)
            + (a0 - a + b0 - b) * special.digamma(a + b)
        )
        value = problem._log_prior(state["s"], state["theta"]) - float(kl.sum())
        if not flip:
            value += float(np.log(state["q"]).sum())
        return value

    def _set_workers(self, data: Comparisons, design: _Design, state: dict) -> None:
        a, b = state["a"], state["b"]
        tail = (1 - self.credible_level) / 2
        self.worker_ids_ = data.worker_ids
        self.reliability_ = pd.DataFrame(
            {
                "mean": a / (a + b),
                "sd": np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1))),
                "lower": stats.beta.ppf(tail, a, b),
                "upper": stats.beta.ppf(1 - tail, a, b),
                "a": a,
                "b": b,
                "comparisons": np.bincount(design.worker, minlength=design.n_workers),
            },
            index=data.worker_ids,
        )
