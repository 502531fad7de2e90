"""Item effects for :class:`~crowdbayes.PlackettLuceVI`: log s_i = θᵀx_i + u_i, u_i ~ N(0, σ²).

The features' utility θᵀx_i plus one score per item, as the feature-less models have, shrunk
towards 0 by a Gaussian prior whose variance σ² is learnt (empirical Bayes on the variational
bound). With informative features the bound prefers σ → 0 and the model is Guo et al.'s; with
signal the features miss, the rankings move each item's u_i as a feature-less model would.

**The bound in the utilities.** Write v = Xθ + u for the items' log-scores. Lemma 1 of Guo et
al. (2019) with Bouchard's bound on every top-query — a pair too, taken as a set of two, so
that every term is a function of one item's utility — is, at fixed local parameters (α_l, ξ_lj),

    log p(D | v) ≥ Σ_l M_l − ½ vᵀWv + bᵀv,   W = diag(w),  w_i = 2 Σ_{(l,j): j = i} λ(ξ_lj),
    b_i = #{l: c_l = i} + Σ_{(l,j): j = i} (2λ(ξ_lj)α_l − ½),

(Eqs. 17–18 with x_j replaced by the indicator of item j). The prior θ ~ N(0, I/η),
u ~ N(0, σ²I) is Gaussian, so the optimal q(θ, u) is Gaussian and u integrates out item by item
(W is diagonal): with τ = 1/σ² and the shrink factors c_i = τ/(w_i + τ) = 1/(1 + σ²w_i),

    S⁻¹ = ηI + Xᵀ diag(c w) X,    μ = S Xᵀ(c b),
    v = c ⊙ Xθ + o + ε,  θ ~ N(μ, S),  ε_i ~ N(0, r_i) independent,
    o_i = σ² c_i b_i,  r_i = σ² c_i

(the Schur complement of the u-block; u_i = v_i − x_iᵀθ). An item seen often (σ²w_i ≫ 1) has
c_i → 0: its utility comes from its own choices; an item never seen has c_i = 1, o_i = 0,
r_i = σ²: the features' prediction with the item effect's variance — how new items are scored.

**The bound at σ²** (Eq. 25 with the u-block integrated out, the matrix determinant lemma on
the diagonal block):

    L̄(σ²) = Σ_l M_l + ½ [d log η − log|S⁻¹| − Σ_i log(1 + σ²w_i) + σ² Σ_i c_i b_i² + μᵀXᵀ(c b)],

which at σ² = 0 is Eq. 25 for the features alone. Every MINORIZATION step maximises it over
σ² (in log σ² over [``SIGMA2_MIN``, ``SIGMA2_MAX``], by the root of its derivative; each
evaluation O(n d² + d³)): the joint maximisation over q(θ, u) and σ² at fixed local
parameters, so the bound still never decreases along Algorithm 1. The prior on σ is flat in
log σ² over that range: there is no tuning constant. The MAXIMIZATION step is Eqs. 22–23 with the
moments of v above (E v_i = c_i x_iᵀμ + o_i, Var v_i = c_i² x_iᵀSx_i + r_i).

References: Y. Guo, J. Cheng, Y. Zhou, G. Chen, "Variational inference for Plackett–Luce
models with item features" (ACML 2019); G. Bouchard, "Efficient bounds for the softmax function"
(2007); the item effect as a random intercept: e.g. Gelman & Hill, *Data Analysis Using
Regression and Multilevel/Hierarchical Models* (2007), ch. 12.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = [
    "SIGMA2_MAX",
    "SIGMA2_MIN",
    "ItemEffectPrior",
    "ItemLink",
    "item_effect_table",
    "link_draws",
    "link_handle",
    "link_moments",
]

#: the range of σ² the bound is maximised over (σ from 10⁻⁴, where u is nothing, to 100)
SIGMA2_MIN, SIGMA2_MAX = 1e-8, 1e4
#: the first step (in log σ²) of the search for a bracket around the maximum
_STEP = 0.05


@dataclass(frozen=True)
class ItemLink:
    """The items' log-scores under q: v = scale ⊙ Xθ + offset + N(0, diag(residual_var))."""

    scale: np.ndarray
    offset: np.ndarray
    residual_var: np.ndarray
    sigma2: float

    def item_moments(
        self, X: np.ndarray, mean: np.ndarray, cov: np.ndarray, codes: np.ndarray, rows=None
    ):
        """E v_i and Var v_i for the items ``codes`` (rows of ``X``; ``rows``: ``X[codes]``
        where the caller keeps it)."""
        rows = X[codes] if rows is None else rows
        c = self.scale[codes]
        return (
            c * (rows @ mean) + self.offset[codes],
            c**2 * ((rows @ cov) * rows).sum(axis=1) + self.residual_var[codes],
        )


@dataclass(frozen=True)
class ItemEffectPrior:
    """θ ~ N(0, I/η), u ~ N(0, σ²I) with σ² maximising the bound (module docstring).

    Plays the part of :class:`~crowdbayes.models.plackett_luce.vi.BoundPrior` in
    :func:`~crowdbayes.models.plackett_luce.vi.iterate_bound` on item-level statistics
    (``weight`` w and ``shift`` b, n-vectors, and ``bound`` Σ_l M_l).
    """

    eta: float
    X: np.ndarray
    #: the last maximising log σ² (where the next search starts) and recent maxima
    last: list = field(default_factory=list, compare=False, repr=False)
    memo: dict = field(default_factory=dict, compare=False, repr=False)
    #: an n × d work array for :meth:`posterior` (a fresh one per call is a large allocation
    #: whose page faults cost as much as the products with thousands of items)
    work: dict = field(default_factory=dict, compare=False, repr=False)

    def posterior(self, weight: np.ndarray, shift: np.ndarray, sigma2: float):
        """(μ, S, link, L̄ − Σ_l M_l, ∂L̄/∂log σ²) at σ², or None when S⁻¹ is not positive
        definite. With m_i = x_iᵀμ and q_i = x_iᵀSx_i,

            ∂L̄/∂σ² = ½ Σ_i c_i² [(b_i − w_i m_i)² + w_i² q_i − w_i − σ²w_i²],

        zero exactly where σ² = Σ_i E[u_i²]/n (the EM update of σ², Dempster et al. 1977).
        """
        scale = 1.0 / (1.0 + sigma2 * weight)
        d = self.X.shape[1]
        rows = self.work.get("rows")
        if rows is None:
            rows = self.work["rows"] = np.empty_like(self.X)
        weighted = np.multiply(self.X, (scale * weight)[:, None], out=rows)
        precision = self.eta * np.eye(d) + weighted.T @ self.X
        linear = self.X.T @ (scale * shift)
        try:
            chol = np.linalg.cholesky(precision)
        except np.linalg.LinAlgError:
            return None
        cov = np.linalg.inv(precision)
        mean = cov @ linear
        logdet = 2.0 * np.log(np.diag(chol)).sum()
        value = 0.5 * (
            d * np.log(self.eta)
            - logdet
            - np.log1p(sigma2 * weight).sum()
            + sigma2 * (scale * shift**2).sum()
            + mean @ linear
        )
        m = self.X @ mean
        q = np.multiply(np.matmul(self.X, cov, out=rows), self.X, out=rows).sum(axis=1)
        slope = 0.5 * np.sum(
            scale**2 * ((shift - weight * m) ** 2 + weight**2 * q - weight - sigma2 * weight**2)
        )
        link = ItemLink(scale, sigma2 * scale * shift, sigma2 * scale, sigma2)
        return mean, cov, link, float(value), float(sigma2 * slope)

    def update(self, stats: dict):
        """The joint maximisation over q(θ, u) and σ²: ``((μ, S, link), L̄)``, or
        ``(None, -inf)`` for statistics without a posterior (an extrapolation's)."""
        weight, shift = stats["weight"], stats["shift"]
        if not np.all(weight >= 0) or not np.all(np.isfinite(shift)):
            return None, -np.inf
        key = weight.tobytes() + shift.tobytes()
        if key not in self.memo:  # SQUAREM asks again for the points it compares
            if len(self.memo) > 8:
                self.memo.clear()
            self.memo[key] = self._maximise(weight, shift)
        found = self.memo[key]
        if found is None:
            return None, -np.inf
        mean, cov, link, value, _ = found
        return (mean, cov, link), stats["bound"] + value

    def _maximise(self, weight: np.ndarray, shift: np.ndarray):
        """:meth:`posterior` at the σ² that maximises L̄: in t = log σ², where ∂L̄/∂t changes
        sign from + to − (in a bracket grown from the last maximum by steps of ``_STEP``,
        doubling, then :func:`_illinois`), or at an end of [``SIGMA2_MIN``, ``SIGMA2_MAX``]."""

        def at(t: float):
            return self.posterior(weight, shift, float(np.exp(t)))

        low, high = np.log(SIGMA2_MIN), np.log(SIGMA2_MAX)
        t = self.last[0] if self.last else low
        found = at(t)
        if found is None:
            return None
        if t == low and found[4] <= 0:  # σ → 0 again: the features' fit
            return found
        step = _STEP if found[4] > 0 else -_STEP
        while True:
            other_t = float(np.clip(t + step, low, high))
            other = at(other_t)
            if other is None:
                return None
            if (other[4] > 0) != (found[4] > 0):  # a sign change: the root lies between
                root = _illinois(at, (t, found), (other_t, other))
                if root is None:
                    return None
                t, found = root
                break
            t, found = other_t, other
            if t in (low, high):  # the maximum is at an end
                break
            step *= 2.0
        self.last[:] = [t]
        return found

    def natural(self, stats: dict) -> np.ndarray:
        """(w, b): what the SQUAREM cycles extrapolate."""
        return np.concatenate([stats["weight"], stats["shift"]])

    def stats_of_natural(self, x: np.ndarray) -> dict:
        n = len(x) // 2
        return {"weight": x[:n], "shift": x[n:], "bound": 0.0}

    @property
    def start(self):
        """The arguments of the first MAXIMIZATION: the prior, with u = 0."""
        n, d = self.X.shape
        zero = np.zeros(n)
        return np.zeros(d), np.eye(d) / self.eta, ItemLink(np.ones(n), zero, zero, 0.0)


def _illinois(at, a, b, xtol: float = 1e-4, max_iter: int = 100):
    """The root of ``at(t)[4]`` between the points ``a`` and ``b`` = (t, at(t)) of opposite
    signs, by regula falsi with the Illinois modification (the end kept twice in a row has its
    value halved; Dahlquist & Björck, *Numerical Methods*, 1974, §6.2); stops when a step
    moves t by less than ``xtol``; returns (t, at(t))."""
    (ta, found_a), (tb, found_b) = a, b
    ga, gb, t = found_a[4], found_b[4], tb
    for _ in range(max_iter):
        new_t = tb - gb * (tb - ta) / (gb - ga)
        found = at(new_t)
        if found is None:
            return None
        g = found[4]
        if (g > 0) != (gb > 0):
            ta, ga = tb, gb
        else:
            ga /= 2.0
        tb, gb = new_t, g
        if g == 0 or abs(new_t - t) < xtol:
            break
        t = new_t
    return new_t, found


def item_effect_table(ids: pd.Index, X, mean, cov, link: ItemLink) -> pd.DataFrame:
    """Posterior of every training item's effect u_i = v_i − x_iᵀθ = (c_i − 1) x_iᵀθ + o_i + ε_i,
    with the link's columns (what predictions for these items use)."""
    loading = link.scale - 1.0
    return pd.DataFrame(
        {
            "mean": loading * (X @ mean) + link.offset,
            "sd": np.sqrt(loading**2 * ((X @ cov) * X).sum(axis=1) + link.residual_var),
            "scale": link.scale,
            "offset": link.offset,
            "residual_var": link.residual_var,
        },
        index=ids,
    )


def link_handle(X, centre, ids: pd.Index, table: pd.DataFrame, sigma2: float) -> np.ndarray:
    """Per item the row r_i and the two columns o_i, Var ε_i with log-score
    v_i = r_iᵀθ + o_i + ε_i: r_i = x_i + (c_i − 1)(x_i − centre), so that the utility is
    x_iᵀθ + u_i on the features' own scale (as without item effects: the common shift
    centreᵀθ cancels in every comparison). The training items' c_i, o_i, Var ε_i from
    ``table`` (:func:`item_effect_table`), any other item's u ~ N(0, σ²) (c = 1, o = 0)."""
    codes = table.index.get_indexer(ids)
    known = codes >= 0
    link = np.tile([1.0, 0.0, sigma2], (len(ids), 1))
    link[known] = table[["scale", "offset", "residual_var"]].to_numpy()[codes[known]]
    rows = X + (link[:, 0] - 1.0)[:, None] * (X - centre)
    return np.column_stack([rows, link[:, 1:]])


def link_moments(handle: np.ndarray, mean: np.ndarray, cov: np.ndarray):
    """Mean and covariance of the log-scores v = Rθ + o + ε of the items in ``handle``."""
    rows, offset, residual = handle[:, :-2], handle[:, -2], handle[:, -1]
    return rows @ mean + offset, rows @ cov @ rows.T + np.diag(residual)


def link_draws(handle, mean, cov, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Joint draws (items × draws) of the log-scores; the posterior mean when ``n_draws`` is 0."""
    rows, offset, residual = handle[:, :-2], handle[:, -2], handle[:, -1]
    if n_draws == 0:
        return (rows @ mean + offset)[:, None]
    thetas = rng.multivariate_normal(mean, cov, size=n_draws, method="cholesky")
    noise = rng.standard_normal((len(rows), n_draws)) * np.sqrt(residual)[:, None]
    return rows @ thetas.T + offset[:, None] + noise
