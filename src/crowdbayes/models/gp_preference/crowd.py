"""crowdGPPL: consensus and personal preferences from crowds (Simpson & Gurevych, 2020).

Worker ``j``'s utility for item ``x`` is (2020, Eq. 5)

.. math:: f(x, j) = t(x) + Σ_{c=1}^{C} v_c(x) \\, w_c(j),

with GP priors ``t ~ GP(0, k/s^{(t)})``, ``v_c ~ GP(0, k/s_c^{(v)})`` over item features and
``w_c ~ GP(0, k_w/s_c^{(w)})`` over worker features, or ``w_{c,j} ~ N(0, 1/s_c^{(w)})``
independently when there are none, each inverse scale with a gamma prior. A comparison by
worker ``j`` prefers ``a`` over ``b`` with probability ``Φ((f(a, j) - f(b, j)) / α)``.

The consensus ``t`` is the GPPL model (:mod:`._gppl`), and its predictions are GPPL's; the
personal components are crowdGPPL's own. Inference is mean-field SVI over ``t``, each ``v_c``
and each ``w_c`` (:mod:`._crowd_svi`, 2020, Eqs. 20–24, 32–38), whose block updates run on the
mini-batch schedule of the GP engine's :class:`~crowdbayes.gp.SVI` strategy: crowdGPPL is
*given* that strategy (composition), it does not override GPPL's inference. Where workers
answer many comparisons each, the updates and the bound run through per-worker Gram matrices
(:mod:`._crowd_grams`: the same maths, one Gram pass per batch instead of two products per
component; about 2× faster on 10,000 comparisons by 20 workers). The bound is
computed after every pass through the data (costing about one SVI iteration for a few thousand
items); SVI stops when it changes by less than ``tol`` per comparison between two passes, and
the final value is ``lower_bound_``. Length-scales are not optimised for crowdGPPL: the
gradient at fixed ``q`` would be as cheap as GPPL's (a sum over ``t`` and the ``v_c``), but each
L-BFGS-B evaluation needs a refit of all ``2C + 1`` blocks.

Predictions (2020, Eq. 25, App. D): ``E[f(x, j)] = t̂(x) + Σ_c v̂_c(x) ŵ_{c,j}`` and
``Var[f(a, j) - f(b, j)] = Var[Δt] + Σ_c (ŵ_{c,j}² + ω_{c,j}) Var[Δv_c] + ω_{c,j} Δv̂_c²``.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import pandas as pd

from ..._utils import RandomState
from ...base import POSITIVE, POSITIVE_INT
from ...data.comparisons import Comparisons, as_comparisons
from ...data.validate import show_values
from ...exceptions import DataWarning
from ...gp import (
    SVI,
    GammaFactor,
    InducingProjection,
    encode_pairs,
    make_item_kernel,
    pair_probabilities,
)
from ...gp.prior import ITEM_PRIOR_CONSTRAINTS
from ...kernels import Kernel, kmeans_inducing_points
from ...maths import beta_binomial_rates
from ._base import constraints_of
from ._crowd_grams import WorkerGramSVI
from ._crowd_svi import CrowdSVI, _DiagonalWorkers, _InducingWorkers
from ._gppl import GPPLBase

__all__ = ["CrowdGPPL"]


class CrowdGPPL(GPPLBase):
    """crowdGPPL (Simpson & Gurevych, 2020, Secs. 3.2, 4.3): a consensus utility ``t`` plus
    ``C`` latent item components ``v_c`` weighted per worker by ``w_c``; see the module
    docstring for the model and the SVI updates.

    Parameters
    ----------
    n_components : int
        ``C``; unneeded components shrink toward zero through their inverse scales.
    kernel, lengthscale, n_inducing, batch_size, forgetting_rate, delay, noise, ties,
    max_iter, random_state, progress
        As for :class:`~.gppl.GPPL` (the :class:`~crowdbayes.gp.SVI` strategy's settings).
    tol : float
        Stop when the lower bound changes by less than ``tol`` nats per comparison between
        two passes through the data (checked after every pass). With the default schedule the
        bound keeps creeping up slowly as ``ρ_n`` shrinks, so the default 0.02 stops after a
        few passes; lower it (and raise ``max_iter``) to run longer (measurements on a
        UKPConvArgCrowdSample fold: ``benchmarks/prefs/results/crowdgppl_tolerance.md``).
    shape_s0, rate_s0 : float
        Gamma prior of the consensus inverse scale ``s^{(t)}``.
    shape_sv, rate_sv, shape_sw, rate_sw : float
        Gamma priors of the inverse scales of ``v_c`` and ``w_c``.
    worker_kernel, worker_lengthscale, n_inducing_workers
        Kernel over worker features (when ``fit`` gets a worker table) and its inducing workers.

    Attributes
    ----------
    consensus_ : DataFrame (items × [mean, sd])
        Posterior of the consensus utility ``t`` (also ``utility_``).
    item_factors_ : DataFrame (items × C)
        Posterior means of ``v_c`` at every item.
    worker_factors_ : DataFrame (workers × C)
        Posterior means of the workers' latent vectors ``w_{·,j}``.
    component_scale_ : Series
        ``1/(E[s_c^{(v)}] E[s_c^{(w)}])``: the prior variance each component keeps (ARD).
    lower_bound_ : float
        The bound (module docstring) at the end of the fit.
    bound_history_ : list of float
        The bound after every pass through the data.
    worker_tie_rates_ : Series
        Each worker's rate of answering "equal" (ties, dropped or kept), shrunk to the pooled
        rate ``tie_rate_`` by a beta prior fitted to all workers
        (:func:`~crowdbayes.maths.beta_binomial_rates`). :meth:`suggest` counts a question to a
        worker as informative only when the answer is not a tie (:meth:`_answer_informs`).
    tie_rate_ : float
        The share of ties among all the comparisons given to ``fit``.
    n_iter_, converged_, history_
        SVI iterations, whether ``tol`` was met, the per-comparison change of the bound
        after every pass (``inf`` after the first, which has no predecessor).
    """

    _tags = {
        "worker_features": True,
        "personal_predictions": True,
        "personal_questions": True,
    }
    _traces = {"bound_history_": "lower bound"}
    parameter_constraints = constraints_of(
        "kernel",
        "lengthscale",
        "n_inducing",
        "batch_size",
        "forgetting_rate",
        "delay",
        "shape_s0",
        "rate_s0",
        "noise",
        "ties",
        "max_iter",
        "tol",
        "random_state",
        "progress",
        n_components=[POSITIVE_INT],
        shape_sv=[POSITIVE],
        rate_sv=[POSITIVE],
        shape_sw=[POSITIVE],
        rate_sw=[POSITIVE],
        worker_kernel=ITEM_PRIOR_CONSTRAINTS["kernel"],
        worker_lengthscale=ITEM_PRIOR_CONSTRAINTS["lengthscale"],
        n_inducing_workers=[POSITIVE_INT],
    )

    def __init__(
        self,
        n_components: int = 20,
        kernel: str | Kernel = "matern32",
        lengthscale: str | float | np.ndarray = "auto",
        *,
        n_inducing: int = 200,
        batch_size: int | None = 1000,
        forgetting_rate: float = 0.9,
        delay: float = 1.0,
        shape_s0: float = 2.0,
        rate_s0: float = 2.0,
        shape_sv: float = 2.0,
        rate_sv: float = 2.0,
        shape_sw: float = 2.0,
        rate_sw: float = 2.0,
        worker_kernel: str | Kernel = "matern32",
        worker_lengthscale: str | float | np.ndarray = "auto",
        n_inducing_workers: int = 100,
        noise: float = 1.0,
        ties: str = "drop",
        max_iter: int = 1000,
        tol: float | None = 2e-2,
        random_state: RandomState = None,
        progress: bool = False,
    ) -> None:
        self.n_components = n_components
        self.kernel = kernel
        self.lengthscale = lengthscale
        self.n_inducing = n_inducing
        self.batch_size = batch_size
        self.forgetting_rate = forgetting_rate
        self.delay = delay
        self.shape_s0 = shape_s0
        self.rate_s0 = rate_s0
        self.shape_sv = shape_sv
        self.rate_sv = rate_sv
        self.shape_sw = shape_sw
        self.rate_sw = rate_sw
        self.worker_kernel = worker_kernel
        self.worker_lengthscale = worker_lengthscale
        self.n_inducing_workers = n_inducing_workers
        self.noise = noise
        self.ties = ties
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.progress = progress

    def _inference(self) -> SVI:
        """The mini-batch schedule and the inducing points of the consensus and components."""
        return SVI(
            n_inducing=self.n_inducing,
            batch_size=self.batch_size,
            forgetting_rate=self.forgetting_rate,
            delay=self.delay,
            max_iter=self.max_iter,
            tol=self.tol,
        )

    def fit(
        self,
        comparisons: Comparisons | pd.DataFrame,
        items: pd.DataFrame | None = None,
        workers: pd.DataFrame | None = None,
        *,
        init: CrowdGPPL | None = None,
    ) -> CrowdGPPL:
        """Fit to comparisons with a ``worker`` column; ``items``/``workers`` are the feature
        tables when passing a DataFrame or path.

        ``init`` (a fitted CrowdGPPL with the same number of components, e.g. this one)
        warm-starts the fit as for :meth:`GPPL.fit`: the consensus and the item components
        begin at its posterior, and so do the workers it knew (each by id; workers with
        features only when the worker table is the same)."""
        self.check_params()
        name = type(self).__name__
        data = as_comparisons(comparisons, items=items, workers=workers)
        pairs = encode_pairs(data, self.ties, name)
        previous = self._previous_state(init)
        if previous is not None and previous["n_components"] != self.n_components:
            raise ValueError(
                f"{name}.fit: init has {previous['n_components']} components; this model has "
                f"{self.n_components}"
            )
        self.n_ties_dropped_ = pairs.n_ties_dropped
        self._count_ties(data)
        rng = self.random_generator()
        strategy = self._inference()
        projection = self._design(data, pairs.items, strategy, rng, previous)
        self._n_compared = len(pairs.items)
        kernel = projection.kernel
        self.worker_ids_ = data.worker_ids
        self.worker_feature_names_ = data.worker_feature_names
        C = self.n_components
        prior_v = GammaFactor.prior(self.shape_sv, self.rate_sv)
        prior_w = GammaFactor.prior(self.shape_sw, self.rate_sw)
        worker_model = self._make_workers(data.W, prior_w, rng)
        if previous is not None:
            worker_model = self._warm_workers(worker_model, previous, data.W)
        prior_t = GammaFactor.prior(self.shape_s0, self.rate_s0)
        problem = self._problem(pairs, kernel, CrowdSVI.prior_spread(prior_t, prior_v, prior_w, C))
        with self._lent_cross(projection, problem, previous):
            svi = WorkerGramSVI(
                problem,
                projection,
                worker_model,
                prior_v=prior_v,
                prior_w=prior_w,
                worker_counts=np.bincount(pairs.worker, minlength=data.n_workers),
                chunk=max(1000, self.batch_size or 0),
            )
            if previous is not None:
                scales = [previous["scale_"], *previous["_component_scales"]]
                start = self._start_factors(
                    previous, projection, data, [previous["_factor"], *previous["_components"]],
                    scales,
                )  # fmt: skip
                svi.t, svi.V = start[0], start[1:]
                svi.scale_t, svi.scales_v = scales[0], list(scales[1:])
                strategy = self._warm_schedule(strategy, len(pairs.y), previous)
            self.lower_bound_ = self._run(svi, strategy, rng)
        if previous is None:
            self._svi_offset = self.n_iter_
        return self

    def _count_ties(self, data: Comparisons) -> None:
        """``worker_tie_rates_`` and ``tie_rate_`` from every comparison given (ties included
        whatever the tie policy)."""
        ties = np.bincount(data.worker_codes[data.outcome == 0], minlength=data.n_workers)
        answers = np.bincount(data.worker_codes, minlength=data.n_workers)
        self.tie_rate_ = float(ties.sum() / answers.sum())
        self.worker_tie_rates_ = pd.Series(
            beta_binomial_rates(ties, answers), index=data.worker_ids, name="tie_rate"
        )

    def _warm_workers(self, fresh, previous: dict, W: np.ndarray | None):
        """The workers' posteriors from the previous fit where it knew them (by id); ``fresh``
        (the cold start) for the others. With worker features the previous worker model is
        kept only when the worker table is unchanged."""
        old = previous["_workers"]
        if isinstance(fresh, _DiagonalWorkers) and isinstance(old, _DiagonalWorkers):
            position = previous["worker_ids_"].get_indexer(self.worker_ids_)
            known = position >= 0
            fresh.precision[:, known] = old.precision[:, position[known]]
            fresh.linear[:, known] = old.linear[:, position[known]]
            fresh.scales = list(old.scales)
            return fresh
        if (
            isinstance(old, _InducingWorkers)
            and W is not None
            and previous["worker_ids_"].equals(self.worker_ids_)
            and old.A.shape[0] == len(W)
            and np.allclose(old.projection.weights(W), old.A)
        ):
            return copy.deepcopy(old)
        return fresh

    # ------------------------------------------------------------------ inference
    def _make_workers(
        self, W: np.ndarray | None, prior: GammaFactor, rng: np.random.Generator
    ) -> _DiagonalWorkers | _InducingWorkers:
        C = self.n_components
        if W is None:
            return _DiagonalWorkers(C, len(self.worker_ids_), prior, rng)
        kernel = make_item_kernel(self.worker_kernel, self.worker_lengthscale, W)
        Zw = kmeans_inducing_points(W, self.n_inducing_workers, random_state=rng)
        return _InducingWorkers(InducingProjection(kernel, Zw), W, C, prior, rng)

    def _run(self, svi: CrowdSVI, strategy: SVI, rng: np.random.Generator) -> float:
        """Run SVI on ``strategy``'s schedule; set the fitted attributes and return the final
        lower bound."""
        n_pairs = len(svi.pairs.y)
        self.bound_history_ = []

        started: list[bool] = []

        def bound() -> float:
            if not started:  # the loop's reference before the first pass: nothing to compute
                started.append(True)
                return -np.inf
            self.bound_history_.append(svi.bound())
            return self.bound_history_[-1]

        # convergence: the bound's change over one pass through the data, per comparison
        result = strategy.run(
            svi.update,
            bound,
            n_pairs,
            rng,
            progress=self.progress,
            desc="crowdGPPL SVI",
            warn_name=type(self).__name__,
            change=lambda new, old: abs(new - old) / n_pairs,
        )
        self.n_iter_, self.converged_, self.history_ = (
            result.n_iter,
            result.converged,
            result.history,
        )
        self._components = svi.V
        self._component_scales = svi.scales_v
        self._workers = svi.workers
        self._set_results(svi.projection, svi.t, svi.scale_t)
        self._set_crowd_results()
        batch = n_pairs if self.batch_size is None else min(self.batch_size, n_pairs)
        if result.n_iter % math.ceil(n_pairs / batch) == 0:  # the loop's last check
            return self.bound_history_[-1]
        return svi.bound()

    def _set_crowd_results(self) -> None:
        self.consensus_ = self.utility_
        columns = [f"c{c}" for c in range(self.n_components)]
        A = self._items().A
        self.item_factors_ = pd.DataFrame(
            np.stack([A @ v.mean for v in self._components], axis=1),
            index=self.item_ids_,
            columns=columns,
        )
        w_mean, _ = self._workers.moments()
        self.worker_factors_ = pd.DataFrame(w_mean.T, index=self.worker_ids_, columns=columns)
        self.component_scale_ = pd.Series(
            [
                1.0 / (sv.mean * sw.mean)
                for sv, sw in zip(self._component_scales, self._workers.scales, strict=True)
            ],
            index=columns,
            name="scale",
        )

    # ------------------------------------------------------------------ prediction
    def _worker_moments(
        self, workers: Sequence, what: str, worker_features: pd.DataFrame | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(E[w], Var[w], known)`` (C × n) for worker ids; unknown workers without features
        fall back to the consensus (``E[w] = Var[w] = 0``, ``known`` False) with a
        :class:`DataWarning` giving their number."""
        ids = pd.Index(list(workers))
        codes = self.worker_ids_.get_indexer(ids)
        known = codes >= 0
        C = self.n_components
        mean, var = np.zeros((C, len(ids))), np.zeros((C, len(ids)))
        if known.any():
            m, v = self._workers.moments(codes[known])
            mean[:, known], var[:, known] = m, v
        unknown = ~known
        if (
            unknown.any()
            and worker_features is not None
            and isinstance(self._workers, _InducingWorkers)
        ):
            names = list(self.worker_feature_names_)
            rows = worker_features.reindex(ids[unknown])
            describable = rows.notna().all(axis=1).to_numpy()
            if describable.any():
                W = rows.loc[:, names].to_numpy(dtype=np.float64)[describable]
                m, v = self._workers.moments(A=self._workers.projection.weights(W))
                where = np.flatnonzero(unknown)[describable]
                mean[:, where], var[:, where] = m, v
                known[where] = True
                unknown = ~known
        if unknown.any():
            warnings.warn(
                f"{what}: {int(unknown.sum())} row(s) name worker(s) not seen in fit "
                f"({show_values(ids[unknown].unique())}); using the consensus for them",
                DataWarning,
                stacklevel=3,
            )
        return mean, var, known

    def _utility(self, items, *, worker=None, worker_features=None) -> pd.DataFrame:
        """Consensus utilities (``worker=None``), or worker ``worker``'s personal utilities
        ``t̂ + Σ_c v̂_c ŵ_{c,j}`` with their sd (items as for :meth:`GPPL.predict_utility`;
        also for items nobody compared, given their features)."""
        consensus = super()._utility(items)
        if worker is None:
            return consensus
        ids = consensus.index
        X = self._X if items is None else self._resolve(items, "predict_utility")[1]
        w_mean, w_var, _ = self._worker_moments([worker], "predict_utility", worker_features)
        mean = consensus["mean"].to_numpy().copy()
        var = consensus["sd"].to_numpy() ** 2
        for c, (v, s) in enumerate(zip(self._components, self._component_scales, strict=True)):
            m_c, var_c = self._projection.predict(X, v, s)
            mean += m_c * w_mean[c, 0]
            var += (w_mean[c, 0] ** 2 + w_var[c, 0]) * var_c + w_var[c, 0] * m_c**2
        return pd.DataFrame({"mean": mean, "sd": np.sqrt(var)}, index=ids)

    def _pair_proba(self, left, right, items=None, *, workers=None, worker_features=None):
        """``P(left ≻ right)``: the consensus (``workers=None``) or each row's worker's personal
        probability ``Φ(E[Δf] / √(α² + Var[Δf]))`` (2020, Eqs. 3, 25). Workers not seen in fit
        (and not described by ``worker_features``) get the consensus, with a warning."""
        if workers is None:
            return super()._pair_proba(left, right, items)
        left, right, Xl, Xr = self._pair_rows(left, right, items, "predict_proba")
        workers = list(workers)
        mean, var = self._projection.difference_moments(Xl, Xr, self._factor, self.scale_)
        w_mean, w_var, _ = self._worker_moments(workers, "predict_proba", worker_features)
        for c, (v, s) in enumerate(zip(self._components, self._component_scales, strict=True)):
            m_c, var_c = self._projection.difference_moments(Xl, Xr, v, s)
            mean = mean + m_c * w_mean[c]
            var = var + (w_mean[c] ** 2 + w_var[c]) * var_c + w_var[c] * m_c**2
        return pair_probabilities(mean, var, self.noise)

    # ------------------------------------------------------------------ what to ask next
    #: BALD best first, not GPPL's ``"mixed"``: on the UKPConvArg crowd labels, 32 folds, area
    #: 0.689 against 0.677 (benchmarks/active/results/active_pairs_crowd_mixed_32.md)
    default_question_strategy: ClassVar[str] = "information"

    def _answer_model(self, questions, pairs, mean, var, learnable):
        """Who answers matters: worker ``j``'s answer is ``Φ((Δt + e_j)/α)`` with
        ``e_j = Σ_c Δv_c w_{c,j}`` their personal deviation from the consensus ``t``.

        Questions are valued by what the answer says about the consensus difference ``Δt``
        (the quantity behind :meth:`predict_proba` without workers), ``e_j`` independent of
        ``Δt`` with mean ``Σ_c Δv̂_c E[w_{c,j}]`` and variance
        ``Σ_c (E[w_{c,j}]² + Var[w_{c,j}]) Var[Δv_c] + Var[w_{c,j}] Δv̂_c²`` (2020, Eq. 25), so
        the answer given ``Δt`` is a probit with mean shifted by ``E[e_j]`` and noise
        ``α² + Var[e_j]``. For ``uncertainty`` (not ``learnable``) that is the worker's own
        predicted answer: ``w_j`` under ``q``, as in :meth:`predict_proba` with workers.

        For the information strategies (``learnable``) every worker's ``w_j`` is taken at
        its prior (``E[w] = 0``, ``Var[w] = 1/E[s_c^{(w)}]``), as for a worker never seen; the
        worker then counts through the chance that their answer is not a tie
        (:meth:`_answer_informs`). The fitted ``q(w_j)`` of a worker already seen is narrower,
        so under it their answers look like a cleaner reading of ``Δt``; but their earlier
        answers informed ``t`` and ``w_j`` together, and ``q(t) q(w)`` drops that dependence.
        Valued by it, best first, every question went to the workers already seen and the
        consensus stayed confounded with their tastes: on the UKPConvArg crowd labels (32
        folds) choosing the worker that way scored below worker-blind BALD (area 0.669
        against 0.689, ``benchmarks/active/results/active_pairs_crowd_32.md``); at the prior, the
        questions go to the worker least likely to say "equal"
        (``active_pairs_crowd_workers_prior.md``). With ``learnable`` the consensus and
        component variances are those an answer can inform
        (:meth:`GPPL._learnable_moments`)."""
        items = self._items()
        if learnable:
            mean, var = self._learnable_moments(pairs, mean, var)
        learnt_only = learnable and self._inducing_only()
        prior = 0.0 if learnt_only else items.pair_prior(pairs.low, pairs.high)
        w_mean, w_var = self._question_worker_moments(questions, at_prior=learnable)
        shift, spread = np.zeros(len(questions)), np.zeros(len(questions))
        for c, (v, s) in enumerate(zip(self._components, self._component_scales, strict=True)):
            m_c, var_c = pairs.expand(*items.pair_moments(v, s, pairs.low, pairs.high, prior))
            shift += m_c * w_mean[c]
            spread += (w_mean[c] ** 2 + w_var[c]) * var_c + w_var[c] * m_c**2
        return mean + shift, var, self._noise_var() + spread

    def _answer_informs(self, questions: pd.DataFrame) -> np.ndarray:
        """The probability that the answer to each question is not a tie: ``1 - τ_j`` for its
        worker ``j`` (``worker_tie_rates_``), ``1 - tie_rate_`` for a row without a known
        worker. Under the valuation's answer model a worker says "equal" at their own rate
        whatever the items, so a tie tells nothing about the order and the information of a
        question is ``(1 - τ_j)`` times that of a decisive answer (the same for every
        worker-blind question). On the UKPConvArg crowd labels the workers with at least 50
        answers say "equal" at rates from 0.02 to 0.71 (median 0.24)."""
        informs = np.full(len(questions), 1.0 - self.tie_rate_)
        if "worker" in questions.columns:
            rates = self.worker_tie_rates_.reindex(questions["worker"]).to_numpy()
            known = ~np.isnan(rates)
            informs[known] = 1.0 - rates[known]
        return informs

    def _question_worker_moments(
        self, questions: pd.DataFrame, *, at_prior: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(E[w], Var[w])`` (C × questions) of each question's worker: the prior for rows
        without a known worker, and for every row ``at_prior`` (:meth:`_answer_model`)."""
        n, C = len(questions), self.n_components
        prior_var = np.array([1.0 / s.mean for s in self._workers.scales])
        if isinstance(self._workers, _InducingWorkers):
            prior_var = prior_var * self._workers.projection.kernel.variance
        mean, var = np.zeros((C, n)), np.repeat(prior_var[:, None], n, axis=1)
        if "worker" in questions.columns and not at_prior:
            codes = self.worker_ids_.get_indexer(questions["worker"])
            known = codes >= 0
            if known.any():
                mean[:, known], var[:, known] = self._workers.moments(codes[known])
        return mean, var

    # ------------------------------------------------------------------ persistence
