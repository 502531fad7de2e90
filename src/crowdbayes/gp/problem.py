"""What a GP preference model gives its inference strategy, and what the strategy gives back.

The model (Simpson & Gurevych, 2018, Eqs. 1–2; 2020, Sec. 3.1): each item has a utility
``f(x)`` with prior ``f ~ GP(0, k_θ / s)`` over its features, ``s ~ Gamma(a₀, b₀)``; the
comparison ``p`` of items ``a_p, b_p`` prefers ``a_p`` with probability ``Φ(z_p)``,
``z_p = (f(a_p) - f(b_p)) / α``, ``α = √2 σ``. A :class:`PreferenceProblem` holds the data of
one fit in the form every strategy reads (item feature rows, the compared items, the soft
labels, ``α``, the gamma prior and the fixed noise ``Q`` of the linearised likelihood); a
strategy returns a :class:`UtilityFit`: the Gaussian posterior ``q(u)`` of the utility at its
inducing inputs, ``q(s)`` and how the iterations went.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..kernels import Kernel
from .factors import GammaFactor, GaussianFactor, gaussian_prior_kl
from .inducing import InducingProjection
from .likelihood import PairCounts, difference_scale
from .linearised import beta_noise_variance, expected_linear_loglik, prior_difference_variance
from .pairs import EncodedPairs

__all__ = ["PreferenceProblem", "UtilityFit", "linearised_bound"]


class PreferenceProblem:
    """The comparisons of one fit as the inference strategies see them.

    Parameters
    ----------
    X : ndarray (N, D)
        Feature rows of every item (the codes in ``pairs`` index them).
    pairs : EncodedPairs
        The comparisons: item codes and soft labels ``y``.
    noise : float
        Judgment noise sd ``σ``; ``alpha = √2 σ``.
    prior : GammaFactor
        The prior ``Gamma(a₀, b₀)`` of the inverse function scale ``s``.
    noise_var : ndarray (P,)
        ``Q_p`` of the linearised likelihood (:meth:`build` computes it).

    Attributes
    ----------
    items : ndarray of int
        The compared items' codes (sorted); ``X_items`` their feature rows.
    left, right : ndarray of int
        Each comparison's items as positions in ``items``.
    """

    def __init__(
        self,
        X: np.ndarray,
        pairs: EncodedPairs,
        *,
        noise: float,
        prior: GammaFactor,
        noise_var: np.ndarray,
    ) -> None:
        self.X = X
        self.pairs = pairs
        self.noise = noise
        self.alpha = difference_scale(noise)
        self.prior = prior
        self.noise_var = noise_var
        self.items, codes = np.unique(
            np.concatenate([pairs.left, pairs.right]), return_inverse=True
        )
        n = len(pairs.left)
        self.left, self.right = codes[:n], codes[n:]
        self.X_items = X[self.items]

    @classmethod
    def build(
        cls,
        X: np.ndarray,
        pairs: EncodedPairs,
        kernel: Kernel,
        *,
        noise: float,
        prior: GammaFactor,
        prior_scale: float,
    ) -> PreferenceProblem:
        """The problem with ``Q_p`` from the prior variance of each comparison's difference:
        the kernel's (:func:`prior_difference_variance`) times ``prior_scale`` (the prior
        variance of the utility per unit of kernel variance, ``b₀/a₀`` for GPPL)."""
        prior_var = prior_difference_variance(kernel, X, pairs.left, pairs.right)
        prior_var *= prior_scale
        noise_var = beta_noise_variance(prior_var, pairs.y, difference_scale(noise))
        return cls(X, pairs, noise=noise, prior=prior, noise_var=noise_var)

    @property
    def n_comparisons(self) -> int:
        return len(self.pairs.y)

    def pair_counts(self) -> PairCounts:
        """The comparisons grouped by pair of compared items (codes into ``items``), for the
        engines on an explicit prior covariance (EP, Laplace)."""
        outcome = np.rint(2.0 * self.pairs.y - 1.0).astype(int)
        return PairCounts.from_comparisons(self.left, self.right, outcome)


@dataclass
class UtilityFit:
    """What an inference strategy returns: ``q(u)`` at the inducing inputs, ``q(s)``, and the
    iterations (``history``: the monitored values); ``log_marginal`` is the strategy's estimate
    of the log marginal likelihood where it has one (EP, Laplace)."""

    factor: GaussianFactor
    scale: GammaFactor
    n_iter: int
    converged: bool
    history: list[float] = field(default_factory=list)
    log_marginal: float | None = None


def linearised_bound(
    problem: PreferenceProblem,
    projection: InducingProjection,
    factor: GaussianFactor,
    scale: GammaFactor,
    *,
    through_items: bool = False,
) -> float:
    """The lower bound of SVI and VI (:mod:`.linearised`; Simpson & Gurevych, 2020, Eq. 30
    with the linearised likelihood of Eq. 11) of ``q(u) = factor``, ``q(s) = scale`` on all
    the problem's comparisons; ``through_items`` computes the comparisons' moments through
    the compared items (:meth:`~.inducing.InducingProjection.item_pair_moments`)."""
    moments = projection.item_pair_moments if through_items else projection.pair_moments
    mean_d, var_d = moments(problem.X_items, problem.left, problem.right, factor, scale)
    loglik = expected_linear_loglik(
        problem.pairs.y, problem.noise_var, mean_d, var_d, problem.alpha
    )
    return loglik - gaussian_prior_kl(projection.chol, projection.K_inv, factor, scale) - scale.kl()
