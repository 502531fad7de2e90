"""``CommunityPreferences``: a Dirichlet-process mixture of GP preference functions."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..._utils import RandomState, spawn_generators
from ...base import (
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    Interval,
    Options,
    PositivePair,
)
from ...data.comparisons import Comparisons, as_comparisons
from ...data.validate import show_values
from ...exceptions import ConvergenceWarning, DataWarning
from ...gp import (
    EP,
    TIE_POLICIES,
    InducingBasis,
    LatentPosterior,
    SparsePosterior,
    choose_inducing,
    kept_comparisons,
    pair_probabilities,
)
from ...gp.inducing import prior_difference_variance
from ...gp.prior import ITEM_PRIOR_CONSTRAINTS, item_inputs
from ...inference import rhat
from ...inference.announce import warn_unmixed
from ...inference.parallel import resolve_n_jobs
from ...kernels import Kernel
from ...linalg import safe_cholesky
from ...roles import PairwiseScorer
from ._crp import canonical_labels, co_membership, least_squares_partition
from .community import SamplerSettings, UserData, fit_community
from .sampler import SAMPLERS, sample_chains

__all__ = ["CommunityPreferences", "communities_table"]


class CommunityPreferences(PairwiseScorer):
    """Community preferences: a Dirichlet-process mixture of GP preference functions
    (Abbasnejad, Sanner, Bonilla & Poupart, IJCAI 2013).

    Every community ``c`` has a utility function ``f_c ~ GP(0, output_scale · k(x, x'))`` over
    item features; user ``u`` belongs to community ``z_u`` and prefers item ``i`` to ``j``
    with probability ``Φ((f_{z_u}(i) - f_{z_u}(j)) / (√2 σ))``; memberships follow a Chinese
    restaurant process with concentration ``λ``:

    .. math:: p(z_u = c | z_{-u}) = \\frac{n_c^{-u}}{U - 1 + λ}, \\qquad
       p(z_u = \\text{new} | z_{-u}) = \\frac{λ}{U - 1 + λ}

    (their Eqs. 20–21). Inference is Gibbs sampling over memberships with each community's
    utility posterior approximated by EP (their Eqs. 1–15, the shared
    :func:`~crowdbayes.models.gp_preference.expectation_propagation`); a user's conditional is
    the CRP prior times the expected likelihood of their comparisons under the community's
    posterior (their Eqs. 16–19), and a new community is weighed under the GP prior. Empty
    communities are garbage-collected. See :mod:`crowdbayes.models.communities.sampler` for the
    two samplers.

    Parameters
    ----------
    kernel, lengthscale, output_scale, noise
        The GP prior and judgment noise, as in
        :class:`~crowdbayes.models.gp_preference.GPPreferenceEP` (shared by all communities;
        :func:`crowdbayes.gp.make_item_kernel`).
    concentration : float
        CRP concentration ``λ`` (fixed), or its starting value with ``concentration_prior``.
    concentration_prior : (shape, rate), optional
        A ``Gamma(shape, rate)`` prior on ``λ``, sampled after each sweep (Escobar & West, 1995).
    sampler : {"blocked", "collapsed"}
        ``"blocked"``: the paper's scheme, community posteriors refreshed once per sweep, cost
        linear in users. ``"collapsed"``: exact ratios of EP marginal likelihoods, EP per
        candidate community and user (small problems; checks).
    n_sweeps, burn_in, thin : int
        Gibbs sweeps per chain; draws kept after ``burn_in`` sweeps, every ``thin``-th.
    n_chains : int
        Independent chains (spawned random generators).
    n_jobs : int or None
        Processes the chains run on (forked; ``-1``: every available core). ``None`` (default)
        uses every available core when the sampling is long enough to pay for starting
        processes, otherwise one. The results do not depend on it: each chain draws from its
        own generator, spawned from ``random_state``.
    n_predictive : int
        Kept draws per chain whose community posteriors are stored for :meth:`predict_proba`.
    init : "sequential" or int
        Starting memberships of every chain: one sequential CRP pass with ADF-filtered
        community beliefs (``_Chain._seat_sequentially`` in
        :mod:`~crowdbayes.models.communities.sampler`), or users spread uniformly at random
        over this many communities.
    split_merge : int
        Metropolis–Hastings split–merge moves per sweep (Jain & Neal, 2004), which let whole
        communities merge or split; 0 for single-user Gibbs moves only.
    ties : {"drop", "half"}
        As in :class:`~crowdbayes.models.gp_preference.GPPreferenceEP`.
    damping, ep_max_iter, ep_tol : settings of the EP runs inside the sampler (the
        :class:`~crowdbayes.gp.EP` strategy).
    n_inducing : int, optional
        For large item sets: run every community's EP on this many inducing items (chosen by
        farthest-point selection in feature space among the compared items) under the
        projected-process / DTC prior ``Q = K_nm K_mm⁻¹ K_mn`` (:mod:`crowdbayes.gp.sparse_ep`),
        ``O(P M² + M³)`` per EP sweep instead of ``O(N³)``. With every compared item inducing
        it equals the exact EP. None (default): exact.
    random_state : int, Generator or None
    progress : bool
        Show a progress bar over the sweeps (the chains' mean).

    Attributes
    ----------
    partition_ : Series (workers)
        Point estimate of the communities (Dahl's least-squares partition among the draws),
        labelled ``0, 1, ...`` by decreasing size.
    co_membership_ : DataFrame (workers × workers)
        Posterior probability that two workers share a community.
    n_communities_ : Series
        Posterior of the number of communities (index ``k``).
    community_utility_ : DataFrame
        Per community of ``partition_`` (first index level) and item: posterior ``mean`` and
        ``sd`` of the utility given the partition.
    memberships_ : ndarray (draws, workers)
        Sampled community labels (labels are arbitrary per draw); ``chain_`` the chain of each.
    n_communities_samples_, concentration_samples_ : ndarray (chains, draws)
    rhat_n_communities_ : float
        Rank-normalised split R-hat of the number of communities (NaN with fewer than 4
        kept draws per chain, or when it never varies). Above 1.05 the fit warns
        (:class:`ConvergenceWarning`) and says how to sample more; a fit projected to take
        over 30 s says so before it starts (a :class:`DataWarning`).
    worker_ids_, item_ids_, kernel_, n_ties_dropped_, n_ep_unconverged_, history_
    n_split_merge_accepted_ : int
        Accepted split–merge moves over all chains.
    """

    _tags = {"features": "optional", "posterior": "sampled", "personal_predictions": True}
    _diagnostics = {
        "chains": "n_chains",
        "sweeps": "n_sweeps",
        "rhat_n_communities": "rhat_n_communities_",
        "ties_dropped": "n_ties_dropped_",
    }
    _traces = {"history_": "communities per sweep (each chain)"}
    _rhats = ("rhat_n_communities_",)

    parameter_constraints = {
        **ITEM_PRIOR_CONSTRAINTS,
        "output_scale": [POSITIVE],
        "noise": [POSITIVE],
        "concentration": [POSITIVE],
        "concentration_prior": [PositivePair(), None],
        "sampler": [Options(*SAMPLERS)],
        "n_sweeps": [POSITIVE_INT],
        "burn_in": [NON_NEGATIVE_INT],
        "thin": [POSITIVE_INT],
        "n_chains": [POSITIVE_INT],
        "n_predictive": [POSITIVE_INT],
        "init": [Options("sequential"), POSITIVE_INT],
        "split_merge": [NON_NEGATIVE_INT],
        "ties": [Options(*TIE_POLICIES)],
        "damping": [Interval(numbers.Real, 0, 1, closed="right")],
        "ep_max_iter": [POSITIVE_INT],
        "ep_tol": [NON_NEGATIVE],
        "n_inducing": [Interval(numbers.Integral, 2, None), None],
        "n_jobs": [None, Options(-1), POSITIVE_INT],
        "random_state": list(RANDOM_STATE),
        "progress": [bool],
    }
    #: the per-user data of the fit and the cache of community posteriors (rebuilt on demand)
    _transient = ("_users", "_cache")

    def __init__(
        self,
        kernel: str | Kernel = "matern32",
        lengthscale: str | float | np.ndarray = "median",
        output_scale: float = 1.0,
        noise: float = 1.0,
        *,
        concentration: float = 1.0,
        concentration_prior: tuple[float, float] | None = None,
        sampler: str = "blocked",
        n_sweeps: int = 60,
        burn_in: int = 20,
        thin: int = 1,
        n_chains: int = 2,
        n_predictive: int = 10,
        init: str | int = "sequential",
        split_merge: int = 2,
        ties: str = "drop",
        damping: float = 0.5,
        ep_max_iter: int = 100,
        ep_tol: float = 1e-3,
        n_inducing: int | None = None,
        n_jobs: int | None = None,
        random_state: RandomState = None,
        progress: bool = False,
    ) -> None:
        self.kernel = kernel
        self.lengthscale = lengthscale
        self.output_scale = output_scale
        self.noise = noise
        self.concentration = concentration
        self.concentration_prior = concentration_prior
        self.sampler = sampler
        self.n_sweeps = n_sweeps
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.n_predictive = n_predictive
        self.init = init
        self.split_merge = split_merge
        self.ties = ties
        self.damping = damping
        self.ep_max_iter = ep_max_iter
        self.ep_tol = ep_tol
        self.n_inducing = n_inducing
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.progress = progress

    # ------------------------------------------------------------------ fitting
    def check_params(self) -> None:
        """The parameter constraints, then ``burn_in < n_sweeps``."""
        super().check_params()
        if self.burn_in >= self.n_sweeps:
            raise ValueError(
                f"{type(self).__name__}: parameter 'burn_in' must be in [0, n_sweeps="
                f"{self.n_sweeps}); got {self.burn_in}"
            )

    def fit(
        self, comparisons: Comparisons | pd.DataFrame, items: pd.DataFrame | None = None
    ) -> CommunityPreferences:
        """Sample community memberships for the workers of ``comparisons`` (a
        :class:`~crowdbayes.data.Comparisons`, DataFrame or path; ``items`` the item feature
        table when passing a DataFrame or path)."""
        self.check_params()
        name = type(self).__name__
        self._prepare(comparisons, items)
        if self.n_inducing is not None and self.feature_names_ is None:
            raise ValueError(
                f"{name}: n_inducing={self.n_inducing} needs item features (without them the "
                "items are independent and inducing items carry nothing about the others)"
            )
        settings = self._settings()
        n_jobs = resolve_n_jobs(
            self.n_jobs, self.n_chains, self.n_chains * self.n_sweeps * self._users.n_users * 2e-3
        )
        chains = sample_chains(
            self._users,
            settings,
            spawn_generators(self.random_generator(), self.n_chains),
            n_sweeps=self.n_sweeps,
            burn_in=self.burn_in,
            thin=self.thin,
            n_predictive=self.n_predictive,
            n_jobs=n_jobs,
            progress=self.progress,
            desc=f"{name} sweeps",
            announce={
                "name": name,
                "fewer": f"n_sweeps={max(2, self.n_sweeps // 2)}, burn_in={self.burn_in // 2}",
                "faster": "GPPreferenceEP (--model ep) or CrowdBT (--model crowd-bt)",
            },
        )
        self.history_ = [c.history for c in chains]
        self.n_ep_unconverged_ = sum(c.n_ep_unconverged for c in chains)
        self.n_split_merge_accepted_ = sum(c.n_split_merge_accepted for c in chains)
        if self.n_ep_unconverged_:
            warnings.warn(
                f"{name}: {self.n_ep_unconverged_} EP run(s) inside the sampler stopped at "
                f"ep_max_iter={self.ep_max_iter} before ep_tol={self.ep_tol}",
                ConvergenceWarning,
                stacklevel=2,
            )
        self._memberships = np.concatenate([c.memberships for c in chains])
        self._chain = np.concatenate([np.full(len(c.memberships), i) for i, c in enumerate(chains)])
        self._n_comm = np.stack([c.n_communities for c in chains])
        self._lam = np.stack([c.concentration for c in chains])
        # number the stored community posteriors 0..V-1 across chains
        self._versions, predictive = [], []
        for c in chains:
            ids = {v: len(self._versions) + i for i, v in enumerate(sorted(c.versions))}
            self._versions.extend(c.versions[v] for v in sorted(c.versions))
            predictive.append(np.vectorize(ids.get, otypes=[np.int64])(c.predictive))
        self._predictive = np.concatenate(predictive)
        self._pred_lam = np.concatenate([c.predictive_concentration for c in chains])
        self._summarise()
        warn_unmixed(
            name,
            self.rhat_n_communities_,
            # (no n_chains: the command line reads it as the labels' --chains, which prefs
            # has not)
            f"n_sweeps={2 * self.n_sweeps}, burn_in={2 * self.burn_in}",
        )
        return self

    def _prepare(self, comparisons, items) -> None:
        """The sampler's inputs from the data (worker and item codes, each user's comparisons,
        the kernel); no sampling."""
        data = as_comparisons(comparisons, items=items)
        keep, self.n_ties_dropped_ = kept_comparisons(data, self.ties, type(self).__name__, 3)
        user_codes, users = pd.factorize(data.worker_codes[keep], sort=True)
        self.worker_ids_ = data.worker_ids[users]
        train = np.unique(np.concatenate([data.left_codes[keep], data.right_codes[keep]]))
        self.item_ids_, self.feature_names_, self._train = data.item_ids, data.feature_names, train
        self._X, self.kernel_ = item_inputs(
            data, self.kernel, self.lengthscale, train, self.output_scale
        )
        self._users = UserData.build(
            user_codes,
            np.searchsorted(train, data.left_codes[keep]),
            np.searchsorted(train, data.right_codes[keep]),
            data.outcome[keep],
            len(users),
            len(train),
        )
        self._n_comparisons = np.diff(self._users.start)

    def _settings(self, sampler: str | None = None) -> SamplerSettings:
        X = self._X[self._train]
        basis = None
        if self.n_inducing is None:
            K = self.kernel_(X)
            chol = safe_cholesky(K, what=f"{type(self).__name__}: prior covariance")
        else:
            inducing = choose_inducing(X, int(self.n_inducing))
            basis = InducingBasis.build(self.kernel_(X[inducing], X), inducing)
            K, chol = basis.prior_cov, None
        return SamplerSettings(
            K=K,
            chol=chol,
            basis=basis,
            noise=self.noise,
            ep=EP(damping=self.damping, max_iter=self.ep_max_iter, tol=self.ep_tol),
            sampler=sampler or self.sampler,
            concentration=self.concentration,
            concentration_prior=self.concentration_prior,
            init=self.init,
            split_merge=self.split_merge,
        )

    # ------------------------------------------------------------------ summaries
    def _summarise(self) -> None:
        """Posterior summaries from the stored draws, and each community of the point
        partition refitted for ``community_utility_``."""
        workers = self.worker_ids_
        co = co_membership(self._memberships)
        self.co_membership_ = pd.DataFrame(co, index=workers, columns=workers)
        best = least_squares_partition(self._memberships, co)
        labels = canonical_labels(self._memberships[best])
        # relabel by decreasing size (ties by first appearance)
        sizes = np.bincount(labels)
        order = np.argsort(-sizes, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        partition = rank[labels]
        self.partition_ = pd.Series(partition, index=workers, name="community")
        k = self._n_comm.ravel()
        values, counts = np.unique(k, return_counts=True)
        self.n_communities_ = pd.Series(
            counts / counts.sum(), index=pd.Index(values, name="k"), name="probability"
        )
        self.n_communities_samples_ = self._n_comm
        self.concentration_samples_ = self._lam
        self.memberships_ = self._memberships
        self.chain_ = self._chain
        self.rhat_n_communities_ = (
            float(rhat(self._n_comm)) if self._n_comm.shape[1] >= 4 else float("nan")
        )
        self._cache = {}
        settings = self._settings("blocked")
        self._chol, self._basis = settings.chol, settings.basis
        frames = []
        for c in range(partition.max() + 1):
            fitted = fit_community(self._users, np.flatnonzero(partition == c), settings)
            sites = (fitted.pairs.left, fitted.pairs.right, fitted.tau, fitted.nu)
            mean, var = self._posterior(sites).predict(
                self.kernel_(self._X[self._train], self._X), self.kernel_.diag(self._X)
            )
            frames.append(pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=self.item_ids_))
        self.community_utility_ = pd.concat(
            frames, keys=range(len(frames)), names=["community", "item"]
        )

    def _posterior(self, sites) -> LatentPosterior | SparsePosterior:
        left, right, tau, nu = sites
        if self._basis is not None:
            return SparsePosterior(self._basis, left, right, tau, nu)
        return LatentPosterior(self._chol, left, right, tau, linear=nu)

    def _version_posterior(self, version: int) -> LatentPosterior:
        cache = self.__dict__.setdefault("_cache", {})  # not saved: rebuilt after load
        if version not in cache:
            cache[version] = self._posterior(self._versions[version])
        return cache[version]

    # ------------------------------------------------------------------ prediction
    def _item_rows(self, ids: pd.Index, what: str) -> np.ndarray:
        codes = self.item_ids_.get_indexer(ids)
        unknown = np.flatnonzero(codes < 0)
        if unknown.size:
            raise ValueError(
                f"{what}: {unknown.size} item id(s) were not seen in fit: "
                f"{show_values(ids[unknown].unique())}"
            )
        if self.feature_names_ is None:
            uncompared = ~np.isin(codes, self._train)
            if uncompared.any():
                raise ValueError(
                    f"{what}: item(s) {show_values(ids[uncompared].unique())} were never "
                    "compared and the model has no item features"
                )
        return codes

    def predict_proba(
        self,
        left: Sequence,
        right: Sequence,
        items=None,
        *,
        workers=None,
        worker_features=None,
        worker=None,
    ) -> pd.Series:
        """Personal ``P(left ≻ right)`` averaged over the posterior of the worker's community
        (:class:`~crowdbayes.roles.ItemScorer`; ``worker=`` is the old name of ``workers``,
        one id for every pair or one per pair).

        For draw ``s`` in which a worker belongs to community ``c``, the community's EP
        posterior gives ``Φ(E[f_l - f_r] / √(2σ² + Var[f_l - f_r]))``; the result is the mean
        over the stored draws. A pair without a worker, or with a worker not seen in fit (with
        a warning), gets the prediction for a new member of the crowd: the CRP predictive,
        community ``c`` with weight ``n_c / (U + λ)`` and a new community (``½``) with weight
        ``λ / (U + λ)``.
        """
        if worker is not None:
            warnings.warn(
                "predict_proba(worker=...) is deprecated: use workers=",
                DeprecationWarning,
                stacklevel=2,
            )
            many = not np.isscalar(worker) and not isinstance(worker, tuple)
            workers = list(worker) if many else [worker] * len(list(left))
        return super().predict_proba(
            left, right, items, workers=workers, worker_features=worker_features
        )

    def _pair_proba(self, left, right, items=None, *, workers=None, worker_features=None):
        self._refuse_new_items(items, worker_features)
        weights, new_weight = self._community_weights(len(left), workers, "predict_proba")
        ids = left.append(right).unique()
        X = self._X[self._item_rows(ids, "predict_proba")]
        li, ri = ids.get_indexer(left), ids.get_indexer(right)
        K_cross = self.kernel_(self._X[self._train], X)
        K_diff = K_cross[:, li] - K_cross[:, ri]
        prior_var = prior_difference_variance(self.kernel_, X, li, ri)
        p = 0.5 * new_weight
        for version in np.flatnonzero(weights.any(axis=0)):
            mean_d, var_d = self._version_posterior(version).predict(K_diff, prior_var)
            p = p + weights[:, version] * pair_probabilities(mean_d, var_d, self.noise)
        return p

    def _utility(self, items, *, worker=None, worker_features=None) -> pd.DataFrame:
        """Posterior ``mean`` and ``sd`` of the utilities of fitted ``items`` (all by default)
        for ``worker`` (None: a new member of the crowd): the mixture over the stored draws of
        the worker's community posteriors, a new community contributing the GP prior."""
        self._refuse_new_items(items, worker_features)
        ids = self.item_ids_ if items is None else pd.Index(list(items))
        X = self._X[self._item_rows(ids, "predict_utility")]
        who = None if worker is None else [worker]
        weights, new_weight = self._community_weights(1, who, "predict_utility")
        prior = self.kernel_.diag(X)
        K_cross = self.kernel_(self._X[self._train], X)
        mean = np.zeros(len(ids))
        second = new_weight[0] * prior
        for version in np.flatnonzero(weights[0]):
            m, v = self._version_posterior(version).predict(K_cross, prior)
            mean += weights[0, version] * m
            second += weights[0, version] * (v + m**2)
        sd = np.sqrt(np.maximum(second - mean**2, 0.0))
        return pd.DataFrame({"mean": mean, "sd": sd}, index=pd.Index(ids, name="item"))

    @property
    def worker_groups_(self) -> pd.Series:
        """Each worker's community (``partition_``)."""
        return self.partition_

    @property
    def utility_(self) -> pd.DataFrame:
        """Each fitted item's utility for a new member of the crowd (:meth:`predict_utility`)."""
        return self.predict_utility()

    def item_table(self) -> pd.DataFrame:
        """One row per item: ``mean_<c>`` and ``sd_<c>`` of each community ``c`` of the point
        partition (``community_utility_``; what ``prefs fit --out`` writes)."""
        self.check_is_fitted()
        wide = self.community_utility_.unstack("community")
        wide.columns = [f"{stat}_{community}" for stat, community in wide.columns]
        return wide

    def _refuse_new_items(self, items, worker_features) -> None:
        if items is not None or worker_features is not None:
            raise ValueError(
                f"{type(self).__name__} predicts the items and workers seen in fit only (no "
                "feature tables)"
            )

    def _community_weights(self, n_rows: int, workers, what: str) -> tuple[np.ndarray, np.ndarray]:
        """``(weights, new_weight)``: per row, the posterior weight of every stored community
        posterior (rows × versions) and of a new community, for the row's worker (None: a new
        member of the crowd; a worker not seen in fit is one, with a warning)."""
        n_draws, U = len(self._predictive), len(self.worker_ids_)
        weights = np.zeros((n_rows, len(self._versions)))
        new_weight = np.zeros(n_rows)
        users = np.full(n_rows, -1)
        if workers is not None:
            wanted = pd.Index(list(workers))
            users = self.worker_ids_.get_indexer(wanted)
            if (users < 0).any():
                warnings.warn(
                    f"{what}: {int((users < 0).sum())} row(s) name worker(s) not seen in fit "
                    f"({show_values(wanted[users < 0].unique())}); predicting for a new member "
                    "of the crowd for them",
                    DataWarning,
                    stacklevel=4,
                )
        crowd = users < 0
        if crowd.any():
            for draw, lam in zip(self._predictive, self._pred_lam, strict=True):
                versions, sizes = np.unique(draw, return_counts=True)
                weights[np.ix_(crowd, versions)] += sizes / (U + lam) / n_draws
                new_weight[crowd] += lam / (U + lam) / n_draws
        seen = np.flatnonzero(~crowd)
        if seen.size:
            rows = np.repeat(seen, n_draws)
            np.add.at(weights, (rows, self._predictive[:, users[seen]].T.ravel()), 1.0 / n_draws)
        return weights, new_weight


def communities_table(model: CommunityPreferences) -> pd.DataFrame:
    """One row per worker, for the CLI's ``prefs communities``: the point-partition
    ``community``, its ``size``, ``confidence`` (the mean posterior co-membership with the
    other members of the community; for a singleton, the posterior probability of being
    alone) and the worker's ``n_comparisons`` (after dropped ties)."""
    model.check_is_fitted()
    partition = model.partition_.to_numpy()
    co = model.co_membership_.to_numpy()
    sizes = np.bincount(partition)[partition]
    same = partition[:, None] == partition[None, :]
    shared = ((co * same).sum(axis=1) - 1.0) / np.maximum(sizes - 1, 1)
    alone = np.mean(
        [np.bincount(labels)[labels] == 1 for labels in map(canonical_labels, model.memberships_)],
        axis=0,
    )
    table = pd.DataFrame(
        {
            "community": partition,
            "size": sizes,
            "confidence": np.where(sizes > 1, shared, alone),
        },
        index=model.worker_ids_,
    )
    table["n_comparisons"] = model._n_comparisons
    return table
