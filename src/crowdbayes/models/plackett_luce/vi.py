"""Variational Plackett–Luce with item features: a closed-form Gaussian posterior over θ.

Model (Guo et al. 2019): s_i = exp(θᵀx_i), p(c | A) = s_c / Σ_{j∈A} s_j (Eq. 3), prior
θ ~ N(μ₀, S₀) with S₀ = I/η. Lemma 1 bounds every top-query's log-probability below by a quadratic
in θ — Jaakkola–Jordan with parameter ζ_l for pairs, Bouchard with α_l, ξ_lj for larger sets — so
the bound on the evidence is Gaussian-conjugate and Algorithm 1 alternates

- MINORIZATION (Eqs. 17–18): S⁻¹ = S₀⁻¹ + 2 Σ_pairs λ(ζ_l) d_l d_lᵀ + 2 Σ_sets Σ_j λ(ξ_lj) x_j x_jᵀ,
  μ = S (S₀⁻¹μ₀ + Σ_pairs d_l/2 + Σ_sets (x_c + Σ_j (2λ(ξ_lj)α_l − ½) x_j)), d_l = x_c − x_c̄;
- MAXIMIZATION: ζ_l = √(d_lᵀ(S + μμᵀ)d_l) (Eq. 19) and, alternating to convergence,
  α_l = ((m_l − 2)/4 + Σ_j λ(ξ_lj) x_jᵀμ) / Σ_j λ(ξ_lj) (Eq. 22),
  ξ_lj = √(x_jᵀSx_j + (x_jᵀμ − α_l)²) (Eq. 23);

until √(‖Δξ‖² + ‖Δζ‖²) ≤ ε (Eq. 26). The bound after each minorization (Eq. 25),

    L̄ = Σ_l M_l + ½ log(|S|/|S₀|) + ½ μᵀS⁻¹μ − ½ μ₀ᵀS₀⁻¹μ₀,

never decreases and lower-bounds log p(D | η); its value at convergence (L̄∞) chooses η without
held-out data. With pairs only the algorithm is Jaakkola–Jordan Bayesian logistic regression on
the differences d_l.

Sufficient statistics: the sums in Eqs. 17–18 and the M_l of Eq. 25 are sums over top-queries
(:func:`bound_local_stats`: a d × d precision sum, a d-vector and a scalar), and ζ_l, α_l, ξ_l of
a query depend only on that query and (μ, S) (:meth:`BoundPartition.step`). One iteration is
therefore a map over partitions of the queries and a small global update
(:func:`bound_global_update`, O(d³)); :func:`variational_bound_fit` runs the loop
(:func:`iterate_bound`) on one partition, and
:func:`crowdbayes.distributed.fit_rankings_distributed` on a Dask cluster, with the same
functions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve

from ...base import NON_NEGATIVE, POSITIVE, POSITIVE_INT, TOLERANCE, Options
from ...data.features import FeatureTable
from ...data.rankings import Rankings
from ...inference.driver import run_iterations
from ...inference.squarem import squarem_cycle
from ...linalg import blas_threads
from ._base import FeatureModel
from ._bounds import jj_lambda, jj_lambda_and_derivative, jj_lambda_parts, log_sigmoid
from ._stages import column_size, segment_max, segment_min, segment_sum
from .gaussian_vi import gaussian_vi_fit
from .item_effects import (
    SIGMA2_MIN,
    ItemEffectPrior,
    ItemLink,
    item_effect_table,
    link_draws,
    link_handle,
    link_moments,
)

__all__ = ["PlackettLuceVI", "feature_centre", "variational_bound_fit"]

DEFAULT_ETA_GRID = tuple(float(v) for v in np.logspace(-3, 3, 13))
#: ``eta="auto"`` stops this many grid values after the best without a better one
ETA_PATIENCE = 3
#: up to this many features the fit's products are thin: one BLAS thread runs them fastest
_THIN = 64


@dataclass
class _Design:
    """The top-queries of a data set split into pairs (ζ) and larger sets (α, ξ)."""

    X: np.ndarray  # (n_items, d)
    pair_winners: np.ndarray  # item codes; the pair difference is d_l = x_winner − x_loser
    pair_losers: np.ndarray
    set_items: np.ndarray  # item codes of the members of the larger sets, concatenated
    set_offsets: np.ndarray  # (n_sets + 1,)
    set_chosen: np.ndarray  # chosen item code per set
    # case weights (``Rankings(..., weight=)``) of the pairs and of the larger sets; None: one
    # each. Each top-query's Lemma 1 term is multiplied by its weight, so the local parameters
    # that maximise it (ζ, ξ, α) do not depend on the weight: it scales the statistics only.
    pair_weights: np.ndarray | None = None
    set_weights: np.ndarray | None = None

    @classmethod
    def from_rankings(cls, rankings: Rankings, X: np.ndarray, *, pairs_as_sets=False) -> _Design:
        """``pairs_as_sets``: bound pairs by Bouchard's bound too (the item effects' design:
        every term then depends on one item's utility)."""
        sizes = rankings.stage_sizes
        starts = rankings.stage_offsets[:-1]
        pair = (sizes == 2) & (not pairs_as_sets)
        winners = rankings.stage_items[starts[pair]]
        losers = rankings.stage_items[starts[pair] + 1]
        member_in_set = np.repeat(~pair, sizes)
        set_sizes = sizes[~pair]
        weights = rankings.stage_weights
        return cls(
            X=X,
            pair_winners=winners,
            pair_losers=losers,
            set_items=rankings.stage_items[member_in_set],
            set_offsets=np.concatenate([[0], np.cumsum(set_sizes)]),
            set_chosen=rankings.stage_items[starts[~pair]],
            pair_weights=None if weights is None else weights[pair],
            set_weights=None if weights is None else weights[~pair],
        )

    @cached_property
    def set_sizes(self) -> np.ndarray:
        return np.diff(self.set_offsets)

    @cached_property
    def _column_size(self) -> int | None:
        return column_size(self.set_offsets)

    def set_sum(self, values: np.ndarray) -> np.ndarray:
        """Σ over the members of every larger set (:func:`~._stages.segment_sum`)."""
        return segment_sum(values, self.set_offsets, self._column_size)

    def set_min(self, values: np.ndarray) -> np.ndarray:
        return segment_min(values, self.set_offsets, self._column_size)

    def set_max(self, values: np.ndarray) -> np.ndarray:
        return segment_max(values, self.set_offsets, self._column_size)

    def minus_per_set(self, values: np.ndarray, per_set: np.ndarray, out: np.ndarray):
        """``values − np.repeat(per_set, set_sizes)`` (one value per member) into ``out``:
        sets of one size broadcast over a (sets × size) view, others gather by set."""
        size = self._column_size
        if size is None:
            return np.subtract(values, np.take(per_set, self.member_set, out=out), out=out)
        np.subtract(values.reshape(-1, size), per_set[:, None], out=out.reshape(-1, size))
        return out

    @cached_property
    def member_set(self) -> np.ndarray:
        """The set of every member (``np.repeat`` of a per-set array is a gather by it)."""
        return np.repeat(np.arange(len(self.set_offsets) - 1), self.set_sizes)

    @cached_property
    def member_weights(self) -> np.ndarray | None:
        """The case weight of every set member (its set's; None without weights)."""
        return None if self.set_weights is None else self.set_weights[self.member_set]

    def per_set_total(self, values: np.ndarray) -> float:
        """Σ_l w_l values_l over the larger sets (w_l their case weights, 1 without)."""
        return float(values.sum() if self.set_weights is None else values @ self.set_weights)

    @cached_property
    def half_excess(self) -> np.ndarray:
        """(m_l − 2)/2 per set, the constant term of F′(α) in :func:`_newton`."""
        return (self.set_sizes - 2) / 2.0

    @cached_property
    def scratch(self) -> _Scratch:
        """Work arrays of one entry per set member (:class:`_Scratch`)."""
        return _Scratch(len(self.set_items))

    def __getstate__(self) -> dict:
        """The fields and cached indices, without the work arrays (rebuilt where unpickled)."""
        state = dict(self.__dict__)
        state.pop("scratch", None)
        return state

    @cached_property
    def set_members(self) -> tuple[np.ndarray, np.ndarray]:
        """Codes and features of the items that appear in the larger sets."""
        used = np.unique(self.set_items)
        return used, self.X[used]

    def pair_quadratic(self, weights: np.ndarray) -> np.ndarray:
        """Σ_l w_l d_l d_lᵀ = Xᵀ L X with L the weighted graph Laplacian of the pairs: costs
        O(n_pairs·d + n_items·d²) instead of O(n_pairs·d²) when items recur across pairs."""
        n, d = self.X.shape
        if len(weights) == 0:
            return np.zeros((d, d))
        degree = np.bincount(self.pair_winners, weights, n) + np.bincount(
            self.pair_losers, weights, n
        )
        adjacency = sp.coo_matrix((weights, (self.pair_winners, self.pair_losers)), shape=(n, n))
        laplacian = sp.diags(degree.astype(np.float64)) - adjacency - adjacency.T
        return self.X.T @ (laplacian @ self.X)

    def pair_forms(self, A: np.ndarray) -> np.ndarray:
        """d_lᵀ A d_l for every pair, through the items (A symmetric)."""
        if len(self.pair_winners) == 0:
            return np.zeros(0)
        XA = self.X @ A
        on_items = np.einsum("id,id->i", XA, self.X)
        cross = np.einsum("ld,ld->l", XA[self.pair_winners], self.X[self.pair_losers])
        return on_items[self.pair_winners] + on_items[self.pair_losers] - 2.0 * cross

    def pair_sum(self) -> np.ndarray:
        """Σ_l w_l d_l (w_l the pairs' case weights, 1 without)."""
        n = self.X.shape[0]
        w = self.pair_weights
        counts = np.bincount(self.pair_winners, w, minlength=n) - np.bincount(
            self.pair_losers, w, minlength=n
        )
        return self.X.T @ counts

    def pair_weighted(self, values: np.ndarray) -> np.ndarray:
        """w_l values_l per pair (``values`` itself without case weights)."""
        return values if self.pair_weights is None else values * self.pair_weights


class _Scratch:
    """Named work arrays of one entry per set member, reused by every pass of a fit.

    The per-member arrays of the MAXIMIZATION step (:func:`_newton`) and of the sets'
    statistics (:func:`item_level_stats`) are the fit's hot loop. As fresh numpy temporaries
    each is a new allocation of the members' length, which the allocator serves with fresh
    pages (glibc: mmap above 128 KiB, and the heap trimmed as they are freed), and the page
    faults of first touching them cost about as much as the arithmetic (10,000 sets of 5:
    half of the fit; raising ``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_`` gives the
    same speed-up). Written with ``out=`` into these arrays, the same operations in the same
    order give the same numbers with no allocation. The statistics and bounds a pass returns
    are fresh arrays, never views into these; one design is not stepped by two threads at
    once (a partition is stepped once per pass). Cost: 11 floats per set member for as long
    as the design lives (the in-memory fit's designs live for one value of η; a distributed
    partition's for the fit).
    """

    ROWS = ("m", "v", "residual", "square", "xi", "safe", "half", "lam", "work")
    #: λ(ξ) and log σ(ξ) − ξ/2 of the bounds' ξ array ``parts_of`` (:func:`_xi_parts`)
    PARTS = ("xi_lam", "xi_terms")

    def __init__(self, n_members: int) -> None:
        block = np.empty((len(self.ROWS) + len(self.PARTS), n_members))
        for name, row in zip(self.ROWS + self.PARTS, block, strict=True):
            setattr(self, name, row)
        self.parts_of: np.ndarray | None = None


@dataclass
class _Bounds:
    """The variational parameters of Lemma 1."""

    zeta: np.ndarray
    xi: np.ndarray
    alpha: np.ndarray


@dataclass
class VIResult:
    """Output of :func:`variational_bound_fit`."""

    mean: np.ndarray
    cov: np.ndarray
    lower_bound: float
    bound_history: list[float]
    n_iter: int
    converged: bool
    bounds: _Bounds
    link: ItemLink | None = None  # the item effects' (:mod:`.item_effects`)


@dataclass(frozen=True)
class BoundPrior:
    """The prior N(μ₀, I/η) as Eqs. 17–18 and 25 use it."""

    precision: np.ndarray  # S₀⁻¹ = ηI
    shift: np.ndarray  # S₀⁻¹μ₀
    const: float  # μ₀ᵀS₀⁻¹μ₀
    logdet: float  # log|S₀⁻¹|
    mean: np.ndarray
    cov: np.ndarray

    @classmethod
    def of(cls, eta: float, d: int, prior_mean: np.ndarray | None = None) -> BoundPrior:
        if not eta > 0:
            raise ValueError(f"eta (the prior precision) must be positive; got {eta}")
        mu0 = np.zeros(d) if prior_mean is None else np.asarray(prior_mean, dtype=np.float64)
        return cls(
            eta * np.eye(d),
            eta * mu0,
            float(eta * mu0 @ mu0),
            d * np.log(eta),
            mu0,
            np.eye(d) / eta,
        )

    @property
    def start(self) -> tuple[np.ndarray, np.ndarray]:
        """The arguments of the first MAXIMIZATION: the prior's mean and covariance."""
        return self.mean, self.cov

    def update(self, stats: dict):
        """:func:`bound_global_update` as :func:`iterate_bound` calls it: ``((μ, S), L̄)``,
        ``(None, -inf)`` when S⁻¹ is not positive definite."""
        try:
            mean, cov, bound = bound_global_update(stats, self)
        except np.linalg.LinAlgError:
            return None, -np.inf
        return (mean, cov), bound

    def natural(self, stats: dict) -> np.ndarray:
        """The summed statistics as one vector (what the SQUAREM cycles extrapolate)."""
        return np.concatenate([stats["precision"].ravel(), stats["shift"]])

    def stats_of_natural(self, x: np.ndarray) -> dict:
        d = len(self.shift)
        return {"precision": x[: d * d].reshape(d, d), "shift": x[d * d :], "bound": 0.0}


def bound_local_stats(design: _Design, b: _Bounds) -> dict:
    """One partition's sums in Eqs. 17–18 and 25 at its local parameters ζ, ξ, α.

    Returns ``precision`` 2(Σ_pairs λ(ζ_l) d_l d_lᵀ + Σ_sets Σ_j λ(ξ_lj) x_j x_jᵀ) (d × d),
    ``shift`` Σ_pairs d_l/2 + Σ_sets (x_c + Σ_j (2λ(ξ_lj)α_l − ½) x_j) (d,), ``bound``
    Σ_l M_l (the top-queries' terms of Eq. 25) and ``change2`` 0 (see :class:`BoundPartition`).
    All are sums over top-queries, so they add over partitions that split the queries; with
    case weights every top-query's terms are multiplied by its weight w_l.
    """
    X = design.X
    lam_zeta = jj_lambda(b.zeta)
    sets = item_level_stats(design, b)
    precision = (
        2.0 * design.pair_quadratic(design.pair_weighted(lam_zeta))
        + (X * sets["weight"][:, None]).T @ X
    )
    shift = design.pair_sum() / 2.0 + X.T @ sets["shift"]
    pair_terms = log_sigmoid(b.zeta) - b.zeta / 2.0 + lam_zeta * b.zeta**2
    bound = float(design.pair_weighted(pair_terms).sum()) + sets["bound"]
    return {"precision": precision, "shift": shift, "bound": bound, "change2": 0.0}


def item_level_stats(design: _Design, b: _Bounds) -> dict:
    """The larger sets' part of Eqs. 17–18 and 25 per item: the quadratic bound
    −½ vᵀdiag(w)v + bᵀv + Σ_l M_l in the items' utilities v, with ``weight``
    w_i = 2 Σ_{(l,j): j=i} λ(ξ_lj), ``shift`` b_i = #{l: c_l = i} + Σ_{(l,j): j=i}
    (2λ(ξ_lj)α_l − ½) and ``bound`` the sets' Σ_l M_l (:mod:`.item_effects` uses them as they
    are; with features, Σ_i w_i x_i x_iᵀ and Σ_i b_i x_i are the sets' sums in Eqs. 17–18).
    With case weights c_l every set's terms are multiplied by c_l (its λ, its count, its M_l)."""
    n_items = design.X.shape[0]
    w = design.scratch  # the expressions of the docstring, in place (:class:`_Scratch`)
    lam_xi, xi_terms = _xi_parts(b.xi, w)
    alpha_per_member = np.take(b.alpha, design.member_set, out=w.residual)
    member_shift = np.multiply(lam_xi, 2.0, out=w.work)  # 2λ(ξ_lj)α_l − ½
    member_shift *= alpha_per_member
    member_shift -= 0.5
    case = design.member_weights
    if case is None:
        weight = 2.0 * np.bincount(design.set_items, lam_xi, minlength=n_items)
    else:
        weight = 2.0 * np.bincount(design.set_items, lam_xi * case, minlength=n_items)
        member_shift *= case
    shift = np.bincount(design.set_chosen, design.set_weights, minlength=n_items) + np.bincount(
        design.set_items, member_shift, minlength=n_items
    )
    # M_l's members: log σ(ξ) − ξ/2 + λ(ξ)(ξ² − α_l²)
    quadratic = np.multiply(b.xi, b.xi, out=w.half)
    quadratic -= np.multiply(alpha_per_member, alpha_per_member, out=w.square)
    quadratic *= lam_xi
    member_terms = np.add(xi_terms, quadratic, out=w.work)
    set_terms = (design.set_sizes - 2) * b.alpha / 2.0
    if len(b.alpha):
        set_terms = set_terms + design.set_sum(member_terms)
    bound = design.per_set_total(set_terms)
    return {"weight": weight, "shift": shift, "bound": bound, "change2": 0.0}


def _xi_parts(xi: np.ndarray, w: _Scratch) -> tuple[np.ndarray, np.ndarray]:
    """λ(ξ) (:func:`~crowdbayes.models.plackett_luce._bounds.jj_lambda`, the same operations)
    and log σ(ξ) − ξ/2 of the members' ``xi``, in ``w.xi_lam`` and ``w.xi_terms``; computed
    once per ξ array (the bounds' arrays are never modified in place): the item effects' level
    move and the statistics after it keep ξ. ``w.safe`` and ``w.half`` are overwritten."""
    if w.parts_of is not xi:
        jj_lambda_parts(xi, w.safe, w.half, w.xi_lam)
        terms = log_sigmoid(xi, out=w.xi_terms)
        terms -= np.divide(xi, 2.0, out=w.half)
        w.parts_of = xi
    return w.xi_lam, w.xi_terms


def bound_global_update(stats: dict, prior: BoundPrior) -> tuple[np.ndarray, np.ndarray, float]:
    """MINORIZATION (Eqs. 17–18) and the bound of Eq. 25 from the statistics summed over
    every partition: S⁻¹ = S₀⁻¹ + Σ precision, μ = S(S₀⁻¹μ₀ + Σ shift); returns (μ, S, L̄)."""
    precision = prior.precision + stats["precision"]
    shift = prior.shift + stats["shift"]
    factor = cho_factor(precision, lower=True)
    mean = cho_solve(factor, shift)
    cov = cho_solve(factor, np.eye(len(shift)))
    logdet_precision = 2.0 * np.log(np.diag(factor[0])).sum()
    bound = (
        stats["bound"]
        + 0.5 * (prior.logdet - logdet_precision)
        + 0.5 * mean @ shift
        - 0.5 * prior.const
    )
    return mean, cov, float(bound)


@dataclass
class BoundPartition:
    """The top-queries of one partition and their local parameters (ζ, α, ξ live here and
    never leave it)."""

    design: _Design
    bounds: _Bounds | None = None

    def step(
        self, mean: np.ndarray, cov: np.ndarray, inner: _Inner, link: ItemLink | None = None
    ) -> tuple[BoundPartition, dict]:
        """MAXIMIZATION (Eqs. 19–23) at the globals (μ, S), then this partition's statistics
        at the new local parameters; ``change2`` is its share of ‖Δξ‖² + ‖Δζ‖² (Eq. 26).
        With a ``link`` (item effects, :mod:`.item_effects`) the moments of the utilities are
        the link's and the statistics are per item (:func:`item_level_stats`)."""
        new = _maximize(self.design, mean, cov, self.bounds, inner, link)
        stats = (bound_local_stats if link is None else item_level_stats)(self.design, new)
        if self.bounds is not None:
            stats["change2"] = float(
                np.sum((new.xi - self.bounds.xi) ** 2) + np.sum((new.zeta - self.bounds.zeta) ** 2)
            )
        return BoundPartition(self.design, new), stats


def iterate_bound(
    first_stats: dict,
    pass_stats,
    prior: BoundPrior,
    *,
    tol: float,
    max_iter: int,
    progress: bool = False,
    desc: str = "PL-VI",
    warn_name: str | None = None,
    accelerate: bool = False,
):
    """Algorithm 1's loop on summed statistics, for one partition or many.

    ``first_stats`` are the statistics at the starting local parameters, ``pass_stats(μ, S)``
    runs :meth:`BoundPartition.step` on every partition and returns the summed statistics.
    Each iteration is a ``prior.update`` (MINORIZATION and the bound: :func:`bound_global_update`
    for a :class:`BoundPrior`, the item effects' for an
    :class:`~crowdbayes.models.plackett_luce.item_effects.ItemEffectPrior`) and a pass
    (MAXIMIZATION, ``pass_stats`` called with what the update returned) — or, with
    ``accelerate``, a SQUAREM cycle of three passes (:class:`_Accelerated`); it stops when
    √(Σ change2) ≤ ``tol`` (Eq. 26). Returns ``(*posterior, bound_history, run)``:
    ``(mean, cov, bound_history, run)`` for a :class:`BoundPrior`.
    """
    state: dict = {"stats": first_stats}
    history: list[float] = []
    cycle = _Accelerated(prior, pass_stats) if accelerate else None

    def step(_: int) -> float:
        if cycle is not None:
            state["stats"] = cycle(state["stats"])
        posterior, bound = prior.update(state["stats"])
        if cycle is None:
            state["stats"] = pass_stats(*posterior)
        state["posterior"] = posterior
        history.append(bound)
        return float(np.sqrt(state["stats"]["change2"]))

    run = run_iterations(
        step,
        max_iter=max_iter,
        tol=tol,
        monitor="change",
        progress=progress,
        desc=desc,
        warn_name=warn_name,
    )
    return (*state["posterior"], history, run)


class _Accelerated:
    """SQUAREM cycles (:func:`~crowdbayes.inference.squarem.squarem_cycle`) of Algorithm 1.

    The fixed-point map acts on the summed statistics x (``prior.natural``: S⁻¹ − S₀⁻¹ and
    S⁻¹μ − S₀⁻¹μ₀ of the Gaussian, or the item effects' w and b): x ↦ the statistics of a
    MAXIMIZATION pass at the posterior the MINORIZATION (Eqs. 17–18) makes of x. Its objective
    is the bound L̄ of Eq. 25 at the local parameters that pass chose, so an extrapolated point
    is kept only when its bound is at least that of two plain steps: the bound still never
    decreases. An extrapolation without a valid posterior (S⁻¹ not positive definite, a
    negative w) is refused the same way. One cycle
    makes three passes and moves, on slowly converging data, as far as many plain ones.
    """

    def __init__(self, prior, pass_stats) -> None:
        self.prior, self.pass_stats = prior, pass_stats
        self.stats: dict[bytes, dict] = {}  # the statistics behind each map output

    def natural(self, stats: dict) -> np.ndarray:
        x = self.prior.natural(stats)
        self.stats[x.tobytes()] = stats
        return x

    def fixed_point(self, x: np.ndarray) -> np.ndarray:
        posterior, _ = self.prior.update(self.prior.stats_of_natural(x))
        if posterior is None:
            return np.full_like(x, np.nan)
        return self.natural(self.pass_stats(*posterior))

    def bound(self, x: np.ndarray) -> float:
        return self.prior.update(self.stats[x.tobytes()])[1]

    def __call__(self, stats: dict) -> dict:
        """The statistics after one cycle from ``stats``."""
        self.stats.clear()
        x = squarem_cycle(self.fixed_point, self.natural(stats), self.bound)
        return self.stats[x.tobytes()]


def _level_move(part: BoundPartition, stats: dict, prior: ItemEffectPrior, sigma2: float):
    """Item effects: every α_l moved by the same c, ξ kept, c maximising the bound with
    q(θ, u) optimal at σ² — the items' common level, which the likelihood does not see.

    Moving every α_l and utility by c leaves every Lemma 1 term unchanged, so along this
    direction only the prior of u pins the level (precision n/σ², against ~Σ_i w_i for the
    bound's curvature at fixed α): MAXIMIZATION and MINORIZATION alone take it there by a
    fraction ~n/(σ²Σ_i w_i) per iteration (thousands of iterations when σ is large). At fixed
    ξ the bound is quadratic in c: b moves by c·w, Σ_l M_l by
    c Σ_l [(m_l − 2)/2 − 2α_l Σ_j λ_lj] − c² Σ_i w_i/2, and the q-optimal part (½ bᵀKb with
    Kb = E_q[v]) by c wᵀE_q[v] + c² wᵀKw/2, Kw = σ²c⊙w + c⊙XSXᵀ(c⊙w) (c_i the shrink
    factors) — so its maximum is one Newton step; the bound never decreases.
    """
    design, bounds = part.design, part.bounds
    if len(bounds.alpha) == 0 or sigma2 <= SIGMA2_MIN * (1 + 1e-9):  # no item effect to move
        return part, stats
    weight = stats["weight"]
    found = prior.posterior(weight, stats["shift"], sigma2)
    if found is None:
        return part, stats
    mean, cov, link = found[:3]
    X = prior.X
    utility = link.scale * (X @ mean) + link.offset
    cw = link.scale * weight
    k_w = sigma2 * cw + link.scale * (X @ (cov @ (X.T @ cw)))
    lam_sum = design.set_sum(_xi_parts(bounds.xi, design.scratch)[0])
    slope = (
        design.per_set_total((design.set_sizes - 2) / 2.0 - 2.0 * bounds.alpha * lam_sum)
        + weight @ utility
    )
    curvature = weight @ k_w - weight.sum()
    if not curvature < 0:
        return part, stats
    moved_bounds = replace(bounds, alpha=bounds.alpha - slope / curvature)
    moved = item_level_stats(design, moved_bounds)
    moved["change2"] = stats["change2"]
    return BoundPartition(design, moved_bounds), moved


def _maximize(design: _Design, mean, cov, previous: _Bounds | None, inner, link=None) -> _Bounds:
    """Eq. 19 for ζ, and the argmax of Eq. 20 over α, ξ for every larger set (the utilities'
    moments from θ ~ N(μ, S), through the item effects' ``link`` when given)."""
    zeta = np.sqrt(np.maximum(design.pair_forms(cov + np.outer(mean, mean)), 0.0))
    n_sets = len(design.set_offsets) - 1
    if n_sets == 0:
        return _Bounds(zeta=zeta, xi=np.zeros(0), alpha=np.zeros(0))
    used, X_used = design.set_members
    item_mean = np.zeros(design.X.shape[0])
    item_var = np.zeros(design.X.shape[0])
    if link is None:
        item_mean[used] = X_used @ mean
        item_var[used] = ((X_used @ cov) * X_used).sum(axis=1)
    else:
        item_mean[used], item_var[used] = link.item_moments(design.X, mean, cov, used, X_used)
    w = design.scratch
    m_j = np.take(item_mean, design.set_items, out=w.m)
    v_j = np.take(item_var, design.set_items, out=w.v)
    if previous is None:
        previous = _Bounds(zeta, np.ones(len(m_j)), _alpha_update(design, m_j, np.ones(len(m_j))))
    solve = _alternate if inner.method == "alternate" else _newton
    alpha, xi = solve(design, m_j, v_j, previous, inner)
    return _Bounds(zeta=zeta, xi=xi, alpha=alpha)


@dataclass
class _Inner:
    """How problem (20) is solved: ``method``, tolerance and iteration cap."""

    method: str = "newton"
    tol: float = 1e-10
    max_iter: int = 200


def _alpha_update(design: _Design, m_j, xi) -> np.ndarray:
    """Eq. 22: α_l = ((m_l − 2)/4 + Σ_j λ(ξ_lj) x_jᵀμ) / Σ_j λ(ξ_lj)."""
    lam = jj_lambda(xi)
    return ((design.set_sizes - 2) / 4.0 + design.set_sum(lam * m_j)) / design.set_sum(lam)


def _xi_update(design: _Design, m_j, v_j, alpha) -> np.ndarray:
    """Eq. 23: ξ_lj = √(x_jᵀSx_j + (x_jᵀμ − α_l)²) (a new array; the rest in place)."""
    residual = design.minus_per_set(m_j, alpha, design.scratch.residual)
    return np.sqrt(np.add(v_j, np.multiply(residual, residual, out=residual), out=residual))


def _alternate(design, m_j, v_j, previous: _Bounds, inner: _Inner):
    """The paper's alternation (21a)/(21b): Eq. 22 for α, then Eq. 23 for ξ, to convergence."""
    xi = previous.xi
    for _ in range(inner.max_iter):
        alpha = _alpha_update(design, m_j, xi)
        new_xi = _xi_update(design, m_j, v_j, alpha)
        change = np.max(np.abs(new_xi - xi))
        xi = new_xi
        if change < inner.tol:
            break
    return alpha, xi


def _newton(design, m_j, v_j, previous: _Bounds, inner: _Inner):
    """The same argmax by safeguarded Newton's method on α with ξ profiled out by Eq. 23.

    With ξ_j(α) from Eq. 23 the objective is F(α) = −α + Σ_j [log σ(ξ_j) − (m_j − α + ξ_j)/2]
    + const, strictly concave, with F′(α) = (m − 2)/2 + 2 Σ_j λ(ξ_j)(m_j − α) — zero exactly at
    the fixed point of Eq. 22 — and F″(α) = −2 Σ_j [λ(ξ_j) + λ′(ξ_j)(m_j − α)²/ξ_j] < 0.
    F′ flattens far from the optimum (it tends to −1 as α → ∞), where a plain Newton step
    overshoots, so each set keeps a bracket [lo, hi] with F′(lo) > 0 > F′(hi) (lo = min_j m_j,
    where every residual is ≥ 0; hi from :func:`_upper_bracket`) and a Newton step that leaves
    it is replaced by bisection (Press et al., *Numerical Recipes*, ``rtsafe``). Converges in a
    few steps where the alternation can need hundreds, also when the prior's variance is huge
    and α has thousands to travel.
    """
    sizes = design.set_sizes
    lo = design.set_min(m_j)
    hi = _upper_bracket(design, m_j, v_j)
    alpha = np.clip(previous.alpha, lo, hi)
    for _ in range(inner.max_iter):
        gradient, curvature = _profiled_derivatives(design, m_j, v_j, alpha)
        below = gradient > 0
        lo, hi = np.where(below, alpha, lo), np.where(below, hi, alpha)
        proposal = alpha - gradient / curvature
        inside = (proposal >= lo) & (proposal <= hi)
        new = np.where(inside, proposal, 0.5 * (lo + hi))
        step, alpha = new - alpha, new
        if np.all((np.abs(step) < inner.tol) | (np.abs(gradient) <= _GRADIENT_ROUNDOFF * sizes)):
            break
    return alpha, _xi_update(design, m_j, v_j, alpha)


#: |F′| below this times the set size is rounding noise (F′ sums O(1) terms)
_GRADIENT_ROUNDOFF = 64 * np.finfo(np.float64).eps


def _profiled_derivatives(design, m_j, v_j, alpha, *, curvature: bool = True):
    """F′(α) and F″(α) of :func:`_newton`, per set (F″ None when not ``curvature``).

    With r_j = m_j − α, ξ_j = √(v_j + r_j²) (Eq. 23), t_j = tanh(ξ_j/2):
    λ(ξ) = t/(4ξ) and λ′(ξ) = (ξ(1 − t²)/2 − t)/(4ξ²) (−ξ/48 for ξ < 10⁻³), as
    :func:`~crowdbayes.models.plackett_luce._bounds.jj_lambda_and_derivative` computes them,
    here in place in the design's :class:`_Scratch` arrays (the same operations in the same
    order: the same numbers).
    """
    w = design.scratch
    residual = design.minus_per_set(m_j, alpha, w.residual)
    square = np.multiply(residual, residual, out=w.square)
    xi = np.sqrt(np.add(v_j, square, out=w.xi), out=w.xi)
    lam, half, safe = jj_lambda_parts(xi, w.safe, w.half, w.lam)
    gradient = design.half_excess + 2.0 * design.set_sum(np.multiply(lam, residual, out=w.work))
    if not curvature:
        return gradient, None
    small = xi < 1e-3
    if small.any():  # the series branch (rare): as jj_lambda_and_derivative has it
        terms = np.multiply(jj_lambda_and_derivative(xi)[1], square, out=w.work)
    else:
        terms = np.multiply(half, half, out=w.work)  # λ′(ξ) = (ξ(1 − t²)/2 − t)/(4ξ²)
        np.subtract(1.0, terms, out=terms)
        terms *= xi
        terms /= 2.0
        terms -= half
        terms /= np.multiply(np.multiply(xi, xi, out=w.residual), 4.0, out=w.residual)
        terms *= square
    terms /= safe  # λ + λ′(ξ) r²/ξ
    terms += lam
    return gradient, -2.0 * design.set_sum(terms)


def _upper_bracket(design, m_j, v_j):
    """Per set an α with F′(α) < 0: max_j m_j + R, R = √(m·max_j v_j) + m + 2 doubled where
    needed (F′ → −1 as α → ∞, so a few doublings at most)."""
    reach = np.sqrt(design.set_sizes * design.set_max(v_j)) + design.set_sizes
    top = design.set_max(m_j)
    for _ in range(64):
        hi = top + reach + 2.0
        gradient, _ = _profiled_derivatives(design, m_j, v_j, hi, curvature=False)
        if not (gradient >= 0).any():
            return hi
        reach = np.where(gradient >= 0, 2.0 * reach + 2.0, reach)
    return hi


def variational_bound_fit(
    rankings: Rankings,
    X: np.ndarray,
    *,
    eta: float,
    prior_mean: np.ndarray | None = None,
    tol: float = 1e-6,
    max_iter: int = 500,
    inner: str = "newton",
    inner_tol: float = 1e-10,
    inner_max_iter: int = 200,
    start: _Bounds | None = None,
    progress: bool = False,
    warn_name: str | None = "PlackettLuceVI",
    accelerate: bool = False,
    item_effects: bool = False,
) -> VIResult:
    """Algorithm 1 of Guo et al. (2019) with prior N(prior_mean, I/η); a pure function.

    ``item_effects``: log s_i = θᵀx_i + u_i with u_i ~ N(0, σ²), σ² maximising the bound
    (:mod:`.item_effects`; every query bounded by Bouchard's bound, pairs too; prior mean 0).
    """
    if item_effects and prior_mean is not None:
        raise ValueError("item_effects: the prior mean of θ must be 0 (prior_mean not supported)")
    design = _Design.from_rankings(rankings, X, pairs_as_sets=item_effects)
    prior = ItemEffectPrior(eta, X) if item_effects else BoundPrior.of(eta, X.shape[1], prior_mean)
    local_stats = item_level_stats if item_effects else bound_local_stats
    solver = make_inner(inner, inner_tol, inner_max_iter)
    if start is None:
        part, first = BoundPartition(design).step(*prior.start[:2], solver, *prior.start[2:])
    else:
        part, first = BoundPartition(design, start), local_stats(design, start)
    parts = [part]

    def pass_stats(mean, cov, link=None):
        parts[0], stats = parts[0].step(mean, cov, solver, link)
        if link is not None:
            parts[0], stats = _level_move(parts[0], stats, prior, link.sigma2)
        return stats

    *posterior, history, run = iterate_bound(
        first,
        pass_stats,
        prior,
        tol=tol,
        max_iter=max_iter,
        progress=progress,
        desc=f"PL-VI eta={eta:.3g}",
        warn_name=warn_name,
        accelerate=accelerate,
    )
    mean, cov, *link = posterior
    return VIResult(
        mean=mean,
        cov=cov,
        lower_bound=history[-1],
        bound_history=history,
        n_iter=run.n_iter,
        converged=run.converged,
        bounds=parts[0].bounds,
        link=link[0] if link else None,
    )


def feature_centre(features: FeatureTable) -> np.ndarray:
    """The point ``PlackettLuceVI(centre=True)`` moves the features to 0: the mean row of the
    whole feature table (so an in-memory and a distributed fit centre alike)."""
    return features.values.mean(axis=0)


def make_inner(inner: str, inner_tol: float, inner_max_iter: int) -> _Inner:
    """The per-set solver options, validated."""
    if inner not in ("newton", "alternate"):
        raise ValueError(f"inner must be 'newton' or 'alternate'; got {inner!r}")
    return _Inner(inner, inner_tol, inner_max_iter)


class PlackettLuceVI(FeatureModel):
    """Bayesian Plackett–Luce with item features by variational inference (Guo et al. 2019).

    Parameters
    ----------
    eta : float or "auto"
        Prior precision: θ ~ N(0, I/η). ``"auto"`` fits every value of ``eta_grid`` and keeps the
        one with the highest bound ceiling L̄∞ (no held-out data needed); the curve is in
        ``eta_curve_``. The grid is fitted from the strongest prior down, each fit starting from
        the last one's local parameters: a strong prior converges in a few iterations and
        hands the weaker ones a start close to their optimum (car choice: 204 iterations over
        13 values of η instead of 341 from the weakest up). The descent stops once the ceiling
        has fallen for ``ETA_PATIENCE`` (3) values in a row after its best — the weak priors
        are the slow fits, and the ceiling is unimodal in η on every data set measured (the
        same η as the whole grid: ``tests/models/plackett_luce``); ``eta_curve_`` holds the
        values fitted.
    eta_grid : sequence of float
        Candidate precisions for ``eta="auto"`` (default 10⁻³ … 10³, two per decade).
    tol : float or None
        Stopping rule of Eq. 26: √(‖Δξ‖² + ‖Δζ‖²) ≤ tol (None: exactly ``max_iter``).
    max_iter : int
        Outer iterations at most (a ConvergenceWarning if tol is not reached).
    inner : {"newton", "alternate"}
        How the per-set problem (20) over α, ξ is solved: ``"alternate"`` is the paper's
        alternation of Eqs. 22–23; ``"newton"`` (default) reaches the same optimum by Newton's
        method on α with ξ set by Eq. 23, in a few steps instead of up to hundreds.
    inner_tol, inner_max_iter :
        The inner solver stops when α (Newton) or ξ (alternation) moves by less than
        ``inner_tol``.
    method : {"bound", "gaussian"}
        ``"bound"`` (default) is Algorithm 1 exactly: the posterior that maximises the Lemma 1
        bound. ``"gaussian"`` then moves that Gaussian to a stationary point of the exact ELBO
        (:func:`~crowdbayes.models.plackett_luce.gaussian_vi.gaussian_vi_fit`, Monte Carlo over
        ``n_draws`` fixed antithetic draws): for pairs the two nearly coincide, but with sets of
        three or more Bouchard's bound inflates θ and ``"gaussian"`` is the calibrated choice.
        η is chosen by the bound in both cases.
    n_draws : int
        Monte Carlo draws per iteration for ``method="gaussian"``.
    centre : bool
        Run Algorithm 1 on features centred at the feature table's mean (default). The model
        does not change — Eq. 3 depends on the features only through differences within a
        query, and the prior is on θ — but Bouchard's bound on a set of three or more does: its
        α_l must absorb the utility θᵀx̄ that all members share, which is uncertain under q(θ)
        when x̄ is far from 0. Centred, the bound is tighter (a higher L̄∞, so by the
        variational principle the better Gaussian) and Algorithm 1 converges in far fewer
        iterations (car choice, raw features, ``eta="auto"``: 119 s → 23 s, the same θ to four
        decimals). Pairs-only data give exactly the same fit either way. ``False`` is the
        paper's algorithm on the features as given.
    accelerate : bool
        Run Algorithm 1 in SQUAREM cycles (default; three passes per iteration, the bound
        still never decreases): the same fixed point in several times fewer passes where the
        plain iteration converges slowly (car choice: hundreds of iterations per η).
    item_effects : bool or "auto"
        Add one effect per item to the features' utility: log s_i = θᵀx_i + u_i with
        u_i ~ N(0, σ²), σ chosen with q by the bound (:mod:`.item_effects`). With informative
        features the bound takes σ → 0 and the fit is the features' alone; with signal the
        features miss, the items' own choices rank them (as the feature-less models do). New
        items are scored by θᵀx with u ~ N(0, σ²). Every query is then bounded by Bouchard's
        bound, pairs too; ``method="bound"`` only, in memory only (not
        :func:`~crowdbayes.distributed.fit_rankings_distributed`). ``"auto"`` (the command
        line's default): item effects when ``method="bound"`` and every query offers three
        items or more (the sets are bounded by Bouchard's bound either way); none on data
        with pairs, where they would replace the tighter Jaakkola–Jordan bound by a looser
        one (UKPConvArg1, one topic: L̄∞ −4143 against −3648) and cost ~10× the time at
        d = 392.
    progress : bool
        Show a progress bar over iterations.

    Attributes
    ----------
    coef_, coef_sd_, coef_cov_ : posterior N(μ, S) over θ, indexed by feature name.
    eta_ : the prior precision used.
    lower_bound_ : L̄∞, the bound at the last iteration (a lower bound on log p(D | η)).
    bound_history_ : L̄_k per iteration (never decreases).
    eta_curve_ : DataFrame (eta, lower_bound, n_iter, converged) when ``eta="auto"``.
    sigma_ : σ of the item effects (None without them).
    item_effects_ : DataFrame per training item (None without item effects): ``mean`` and
        ``sd`` of u_i, and what predictions use — u_i = (``scale`` − 1)(x_i − ``centre_``)ᵀθ
        + ``offset`` + N(0, ``residual_var``) jointly with θ ~ N(``coef_``, ``coef_cov_``);
        the log-score x_iᵀθ + u_i (an item not in the rankings: u_i ~ N(0, σ²)).
    n_iter_, converged_ : iterations of Algorithm 1 (plus the Gaussian refinement).

    Notes
    -----
    Case weights (``Rankings(..., weight=column)``, ``tags.case_weights``): top-query l's term
    of the likelihood is raised to its query's weight c_l, log p(D | θ) = Σ_l c_l log p(c_l |
    A_l, θ) — in Eq. 25 every top-query's bound is multiplied by c_l, which leaves the local
    parameters that maximise it (ζ, ξ, α) unchanged and scales its statistics in Eqs. 17–18
    (and the Gaussian refinement's expected gradient and curvature) by c_l. A whole-number
    weight k is k copies of the query; importance weights make the fit that of the sample a
    uniform design would have drawn (``rank next``'s sampled sets,
    :func:`crowdbayes.active.rankings.suggest_sets`). Weights are in-memory only (not
    :func:`crowdbayes.distributed.fit_rankings_distributed`).

    With ``method="bound"`` and a numeric ``eta`` the fit is a map over partitions of the
    queries plus a d × d global update, and
    :func:`crowdbayes.distributed.fit_rankings_distributed` runs it on a Dask cluster (see
    the module docstring).
    """

    _tags = {"posterior": "approximate", "case_weights": True}
    _diagnostics = {"eta": "eta_", "lower_bound": "lower_bound_"}
    _traces = {"bound_history_": "lower bound"}
    _added_params = {"item_effects": False}  # files written before it: fitted without
    parameter_constraints = {
        "eta": [POSITIVE, Options("auto")],
        "eta_grid": [tuple, list, np.ndarray],
        "tol": TOLERANCE,
        "max_iter": [POSITIVE_INT],
        "inner": [Options("newton", "alternate")],
        "inner_tol": [NON_NEGATIVE],
        "inner_max_iter": [POSITIVE_INT],
        "method": [Options("bound", "gaussian")],
        "n_draws": [POSITIVE_INT],
        "centre": [bool],
        "accelerate": [bool],
        "item_effects": [bool, Options("auto")],
        "progress": [bool],
    }

    def __init__(
        self,
        eta: float | str = 1.0,
        *,
        eta_grid=DEFAULT_ETA_GRID,
        tol: float = 1e-6,
        max_iter: int = 500,
        inner: str = "newton",
        inner_tol: float = 1e-10,
        inner_max_iter: int = 200,
        method: str = "bound",
        n_draws: int = 64,
        centre: bool = True,
        accelerate: bool = True,
        item_effects: bool | str = False,
        progress: bool = False,
    ) -> None:
        self.eta = eta
        self.eta_grid = eta_grid
        self.tol = tol
        self.max_iter = max_iter
        self.inner = inner
        self.inner_tol = inner_tol
        self.inner_max_iter = inner_max_iter
        self.method = method
        self.n_draws = n_draws
        self.centre = centre
        self.accelerate = accelerate
        self.item_effects = item_effects
        self.progress = progress

    def _fit(self, rankings: Rankings) -> None:
        X = rankings.require_features(type(self).__name__)
        centre = feature_centre(rankings.features) if self.centre else np.zeros(X.shape[1])
        X = X - centre
        with blas_threads(1 if X.shape[1] <= _THIN else None):
            link = self._fit_features(rankings, X)
        self.centre_ = pd.Series(centre, index=rankings.features.names, name="centre")
        if link is not None:
            self.sigma_ = float(np.sqrt(link.sigma2))
            mean, cov = self.coef_.to_numpy(), self.coef_cov_.to_numpy()
            self.item_effects_ = item_effect_table(rankings.item_ids, X, mean, cov, link)

    def _fit_features(self, rankings: Rankings, X: np.ndarray) -> ItemLink | None:
        """Fit θ (and the item effects) to the centred features ``X``; the item effects' link."""
        options = dict(
            tol=self.tol,
            max_iter=self.max_iter,
            inner=self.inner,
            inner_tol=self.inner_tol,
            inner_max_iter=self.inner_max_iter,
            progress=self.progress,
            accelerate=self.accelerate,
            item_effects=self._with_item_effects(rankings),
        )
        if isinstance(self.eta, str):
            grid = sorted((float(e) for e in self.eta_grid), reverse=True)
            rows, best, start = [], None, None
            for eta in grid:
                result = variational_bound_fit(rankings, X, eta=eta, start=start, **options)
                start = result.bounds
                rows.append((eta, result.lower_bound, result.n_iter, result.converged))
                if best is None or result.lower_bound > best[1].lower_bound:
                    best = (eta, result)
                elif len(rows) - 1 - [row[0] for row in rows].index(best[0]) >= ETA_PATIENCE:
                    break  # the ceiling has fallen for ETA_PATIENCE values in a row
            self.eta_curve_ = pd.DataFrame(
                rows, columns=["eta", "lower_bound", "n_iter", "converged"]
            ).sort_values("eta", ignore_index=True)
            eta, result = best
        else:
            eta = float(self.eta)
            result = variational_bound_fit(rankings, X, eta=eta, **options)
        self._set_bound_fit(eta, result)
        mean, cov = result.mean, result.cov
        if self.method == "gaussian":
            mean, cov, n_refine, refined = gaussian_vi_fit(
                rankings,
                X,
                eta=eta,
                mean=mean,
                cov=cov,
                n_draws=self.n_draws,
                progress=self.progress,
            )
            self.n_iter_ += n_refine
            self.converged_ = self.converged_ and refined
        self._set_posterior(rankings, mean, cov)
        return result.link

    def check_params(self) -> None:
        """The constraints, and ``eta_grid`` non-empty and positive when ``eta="auto"``."""
        super().check_params()
        grid = np.asarray(self.eta_grid, dtype=np.float64).ravel()
        if self.eta == "auto" and (grid.size == 0 or not (grid > 0).all()):
            raise ValueError(
                f"PlackettLuceVI: parameter 'eta_grid' must hold positive values; got "
                f"{self.eta_grid!r}"
            )
        if self.item_effects is True and self.method != "bound":
            raise ValueError(
                f"PlackettLuceVI: item_effects=True needs method='bound'; got "
                f"method={self.method!r} (item_effects='auto' leaves them out there)"
            )

    def _with_item_effects(self, rankings: Rankings) -> bool:
        """``item_effects``, with ``"auto"`` resolved for these rankings (see the parameter)."""
        if self.item_effects != "auto":
            return self.item_effects
        return self.method == "bound" and bool(rankings.stage_sizes.min(initial=3) >= 3)

    def _set_bound_fit(self, eta: float, result: VIResult) -> None:
        self.eta_ = eta
        self.lower_bound_ = result.lower_bound
        self.bound_history_ = list(result.bound_history)
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.sigma_, self.item_effects_ = None, None  # set by an item-effect fit after this

    def check_bound_params(self) -> float:
        """The numeric ``eta`` of a ``method="bound"`` fit (what the distributed backend
        supports), or a ValueError naming what is not supported."""
        if self.method != "bound":
            raise ValueError(
                f"PlackettLuceVI: only method='bound' is a sum over top-queries; got "
                f"method={self.method!r}"
            )
        if isinstance(self.eta, str):
            raise ValueError("PlackettLuceVI: give a numeric eta (eta='auto' is in-memory only)")
        if self.item_effects is not False:
            raise ValueError(
                f"PlackettLuceVI: item_effects={self.item_effects!r} is in-memory only; "
                "use item_effects=False"
            )
        make_inner(self.inner, self.inner_tol, self.inner_max_iter)
        return float(self.eta)

    # -- predictions with item effects (the features' alone otherwise) -------------------------

    def _items(self, items):
        ids, X = super()._items(items)
        effects = getattr(self, "item_effects_", None)  # None also in files saved before them
        if effects is None:
            return ids, X
        return ids, link_handle(X, self.centre_.to_numpy(), ids, effects, self.sigma_**2)

    def _moments(self, handle):
        if getattr(self, "item_effects_", None) is None:
            return super()._moments(handle)
        return link_moments(handle, self.coef_.to_numpy(), self.coef_cov_.to_numpy())

    def _draws(self, handle, n_draws, rng):
        if getattr(self, "item_effects_", None) is None:
            return super()._draws(handle, n_draws, rng)
        return link_draws(handle, self.coef_.to_numpy(), self.coef_cov_.to_numpy(), n_draws, rng)
