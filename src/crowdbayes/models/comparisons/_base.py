"""What :class:`~.bradley_terry.BradleyTerry` and :class:`~.crowd_bt.CrowdBT` share under
the role :class:`~crowdbayes.roles.PairwiseScorer`: input checks, the score summaries, the
predictions, and the answer model their question selection
(:class:`~crowdbayes.roles.PairQuestions`) values."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import pandas as pd

from ...base import OPEN_UNIT, POSITIVE, POSITIVE_INT, TOLERANCE, Options
from ...data.comparisons import Comparisons, as_comparisons
from ...data.io import TableLike
from ...roles import PairQuestions, PairwiseScorer
from ._davidson import outcome_log_probs
from ._solver import _Design

__all__ = ["BradleyTerryBase", "OUTCOMES", "SHARED_CONSTRAINTS"]

#: the logistic answer σ(d) as a probit Φ(d / √ν) (σ(x) ≈ Φ(x √(π/8))), for the question
#: values of :mod:`crowdbayes.gp.questions`
_PROBIT_NOISE_VAR = 8.0 / np.pi
OUTCOMES = ("left", "right", "tie")


class BradleyTerryBase(PairQuestions, PairwiseScorer):
    """What both estimators share: input checks, the score summaries, predictions."""

    _abstract = True
    _tags = {"posterior": "approximate"}
    _diagnostics = {"iterations": "n_iter_", "converged": "converged_"}
    _traces = {"objective_history_": "objective"}

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
        # the normal quantile; scipy.special and scipy.stats cost 0.2 s and 1 s to import
        z = NormalDist().inv_cdf(0.5 + self.credible_level / 2)
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

    def _utility(self, items, *, worker=None, worker_features=None) -> pd.DataFrame:
        """Posterior mean, sd and interval of the scores (all items, or ``items``)."""
        if items is None:
            return self.utility_.copy()
        return self.utility_.iloc[self._codes(items, "items")]

    def _pair_proba(self, left: pd.Index, right: pd.Index, items=None) -> np.ndarray:
        """P(``left`` preferred to ``right`` | not a tie), averaged over the Laplace posterior of
        the two scores (taken independent): :math:`\\sigma(\\mu_d / \\sqrt{1 + \\pi v_d / 8})`."""
        if items is not None:
            raise ValueError(
                f"{type(self).__name__} has no item features: it predicts fitted items only"
            )
        mu, v = self._pair_moments(self._codes(left, "left"), self._codes(right, "right"))
        from scipy import special  # lazily: 0.2 s to import

        return special.expit(mu / np.sqrt(1 + np.pi * v / 8))

    # ------------------------------------------------------------------ what to ask next
    def _pair_moments(self, left: np.ndarray, right: np.ndarray):
        """Laplace mean and variance of the score difference of item codes ``left``,
        ``right`` (the scores taken independent)."""
        mean = self.utility_["mean"].to_numpy()
        var = self.utility_["sd"].to_numpy() ** 2
        return mean[left] - mean[right], var[left] + var[right]

    def _noise_var(self) -> float:
        """The logistic answer σ(d) as a probit Φ(d / √ν): σ(x) ≈ Φ(x √(π/8)), ν = 8/π."""
        return _PROBIT_NOISE_VAR

    def predict_outcome_proba(self, left: Sequence, right: Sequence) -> pd.DataFrame:
        """P(left), P(right), P(tie) at the posterior mean scores (Davidson's model)."""
        self.check_is_fitted()
        mean = self.utility_["mean"].to_numpy()
        d = mean[self._codes(left, "left")] - mean[self._codes(right, "right")]
        theta = np.log(self.tie_strength_) if self.tie_strength_ > 0 else -np.inf
        return pd.DataFrame(np.exp(outcome_log_probs(d, theta)).T, columns=list(OUTCOMES))


SHARED_CONSTRAINTS = {
    "tie_model": [Options("davidson", "none")],
    "prior_scale": [POSITIVE],
    "max_iter": [POSITIVE_INT],
    "tol": TOLERANCE,
    "credible_level": [OPEN_UNIT],
    "progress": [bool],
}
