r"""``LinkClustering``: crowd clustering from must-link / cannot-link judgments alone.

The model is the relational part of BayesSCDC (Luo et al. 2018, §3): a Dirichlet–categorical
mixture of cluster assignments :math:`z_i` judged in pairs by two-coin workers with Beta
sensitivities :math:`\alpha_m` and specificities :math:`\beta_m`. The fit has three parts, each
in its own module:

* :mod:`crowdbayes.models.clustering.link_graph`: the signed link graph in the item order of
  the sweeps (colour classes of items that share no link);
* :mod:`crowdbayes.models.clustering.link_vb`: the model, its mean-field VB (Luo et al. 2018,
  Eqs. 14, 26, 28–29) and evidence lower bound, written as sums over links;
* :mod:`crowdbayes.models.clustering.link_search`: the hard-partition searches that start every
  restart (contraction or greedy) and polish the VB solution (group moves, Kempe swaps).

A restart here is: a start, block moves on it, VB to convergence, then ``n_polish`` rounds of
block moves and Kempe swaps on the VB solution with the weights learnt by VB, each followed by
VB and kept while the ELBO rises. With ``search_factor`` f above 1 (the default is 1.5) there
are also ``n_init`` restarts at :math:`K' = \lceil fK \rceil` clusters, each brought back to K
by greedy merge and delete moves (:mod:`crowdbayes.models.clustering.link_reduce`: every pair
merge worth trying and every cluster deleted, each scored by the ELBO after ``merge_sweeps``
VB sweeps, the best kept and polished, until K clusters remain; Ueda et al. 2000, Hughes &
Sudderth 2013). With spare clusters a digit may take two clusters in two regions of tasks that
share few items, so the search at K' need not align every region's labelling at once; the
merges make the alignment. The highest final ELBO over all restarts, at K and reduced from K',
wins, so the search at K' can only raise the fit's ELBO; it costs about three to four times
the CPU time of the restarts at K alone. On the real MNIST annotations at K = 10 it raises the
per-task NMI at the default seed from 0.9749 to 0.9773 and meets the bar of issue 40 at four
seeds of five (``benchmarks/cluster/results/cluster_link_vb_search.md``); ``search_factor=1``
searches at K only.

A shortcut keeps the search at K' cheap where the data leave clusters empty at K and K' alike
(e.g. links with no cluster structure): when the best restart at K fills fewer than K clusters
(fewer than K are any item's most probable cluster) and VB at K' on a restart does too, that
restart skips the polish at K' and the merges: the clusters it fills, padded with empty ones to
K, are polished at K, and the search at K' stops there. This is a rule of thumb, not a bound:
an empty cluster does not show that the links support no more (on links of 6 clusters fitted
at K = 5, one restart at K' = 8 filled only 4), and where it fires the fit can end below the
full search's ELBO. On ``simulate_pair_links(np.arange(150) % 6, n_workers=8,
pairs_per_worker=180, alpha=0.8, beta=0.85)`` with ``n_init=3`` and seeds 0–7 the fit equals
the full search at K = 4 and 5 (below the 6 clusters: every fit where the restarts at K fill
K clusters searches in full) and is up to 17.7 nats below it at K = 6 and 8, where the full
search often keeps fewer clusters than K. On the real MNIST annotations and on the simulated
tasks of ``benchmarks/cluster/results/cluster_link_vb_search.md`` every restart fills K
clusters, so those fits search in full; on the 10,000 random links of the time-at-defaults
benchmark the restarts at K and VB at K' fill one cluster, and the fit takes 1.3 s of CPU
(``benchmarks/cluster/results/cluster_link_vb_speed.md``) where the full search took 6.4 s,
at a higher ELBO (−5897.4 against −5902.6; seed 0, measured with the shortcut turned off).

Speed: the VB sweeps run in one call of a compiled loop (``_link_kernel.c``, built with the
package; :func:`~crowdbayes.models.clustering.link_vb.run_link_vb`, the numpy sweeps
otherwise, with the same numbers to rounding), and the block search keeps what it learnt
about each block between passes (:func:`~crowdbayes.models.clustering.link_search.
block_search`).

Identifiability: a worker's sensitivity :math:`\alpha_m` is learnt only from items that
somebody else also judged. An item that one worker put in the wrong group and nobody else saw
fits the links perfectly in the cluster of that group, so VB puts it there instead of charging
the worker an error; on data where most errors are of this kind, :math:`\alpha` is not
identifiable from links while :math:`\beta` is. Measurements on the real MNIST annotations are
in ``benchmarks/cluster/results/cluster_link_vb_notes.md``. :meth:`LinkClustering.worker_posterior`
gives each worker's posterior given the fitted q(z) on a chosen subset of the links, e.g. those
between items seen by two workers or more
(:func:`crowdbayes.metrics.clustering.links_between_items_seen_by`), where the workers can be
judged (``benchmarks/cluster/results/cluster_semicrowd.md``, section 6).

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS.
Ueda, N., Nakano, R., Ghahramani, Z. & Hinton, G. E. (2000). SMEM algorithm for mixture models.
Neural Computation 12(9).
Hughes, M. C. & Sudderth, E. B. (2013). Memoized online variational inference for Dirichlet
process mixture models. NeurIPS.
"""

from __future__ import annotations

import math
import warnings
from numbers import Real

import numpy as np
import pandas as pd

from ..._utils import RandomState, spawn_generators
from ...annotators.two_coin import (
    link_message_weights,
    two_coin_expectations,
    two_coin_posterior,
    two_coin_statistics,
)
from ...base import (
    NON_NEGATIVE_INT,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    TOLERANCE,
    Interval,
    PositivePair,
)
from ...data.io import TableLike
from ...data.links import Links, as_links
from ...exceptions import ConvergenceWarning
from ...maths import beta_credible_interval, dirichlet_expected_log, dirichlet_marginal_summary
from ...roles import Clusterer
from .link_graph import LinkGraph
from .link_reduce import padded_to, reduce_clusters, used_clusters
from .link_search import block_search, contraction_start, greedy_start, kempe_search
from .link_vb import LinkVBState, run_link_vb, soften

__all__ = ["LinkClustering"]


class LinkClustering(Clusterer):
    r"""Cluster items from noisy must-link / cannot-link judgments by variational Bayes.

    Mean-field VB over cluster assignments :math:`q(z_i)`, cluster proportions
    :math:`q(\pi)` (Dirichlet) and every worker's two-coin sensitivity :math:`\alpha_m`
    (P(must-link | same cluster)) and specificity :math:`\beta_m` (P(cannot-link | different
    clusters)), Beta-distributed: the relational part of BayesSCDC (Luo et al. 2018) on its own.
    The maths is in :mod:`crowdbayes.models.clustering.link_vb`, the search that starts and
    polishes it in :mod:`crowdbayes.models.clustering.link_search`.

    Only items that appear in at least one link get an assignment: without features nothing
    is known about the others (observations attached to the :class:`~crowdbayes.data.links.
    Links` are ignored here; the SCDC models use them).

    Parameters
    ----------
    n_clusters : int
        K, the number of mixture components (an upper bound: with a small
        ``prior_prevalence`` unneeded components empty out; see ``n_clusters_used_``).
    prior_prevalence : float
        Symmetric Dirichlet concentration γ₀ of π.
    prior_alpha, prior_beta : (float, float)
        Beta prior parameters of every α_m and β_m (default Beta(1, 1), as in the paper).
    init_accuracy : (float, float)
        Beta parameters of α_m and β_m that weigh the links in the starts (default
        (10, 1), mean 0.91, the paper's initial variational parameters): every worker is first
        trusted alike; VB then learns each worker's accuracy.
    init_smoothing : float
        Probability spread over the other clusters when a hard start (greedy, group moves or
        ``init``) becomes q(z); in (0, 1).
    n_polish : int
        Rounds of group moves and Kempe-chain swaps on the VB solution, each followed by VB,
        kept while the ELBO rises (:mod:`~crowdbayes.models.clustering.link_search`); 0 turns
        them off.
    search_factor : float
        At least 1. Above 1, ``n_init`` more restarts search with :math:`K' = \lceil`
        ``search_factor`` · K :math:`\rceil` clusters and are brought back to K by merge and
        delete moves (module docstring); 1 searches at K only. Restarts from ``init`` search
        at K.
    merge_sweeps : int
        VB sweeps that refine each candidate merge or delete before its ELBO is compared.
    n_init : int
        Restarts (at K, and as many at K'), alternating contraction and greedy starts, each
        with its own random tie-breaks; the run with the highest final ELBO is kept.
    max_iter, tol : int, float or None
        Sweeps per restart and the relative ELBO change that counts as converged (None: run
        ``max_iter`` sweeps).
    credible_level : float
        Mass of the central credible intervals of ``workers_``.
    random_state : int, Generator, SeedSequence or None
        Seeds the restarts (each gets its own spawned generator).
    progress : bool
        Show a progress bar over the sweeps. With ``progress=True`` (as in the distributed fit,
        :mod:`crowdbayes.distributed`) the VB sweeps run in numpy instead of the compiled loop:
        the same sweeps, equal to the compiled ones to rounding (about 1e-12 relative in the
        ELBO; ``tests/models/clustering/test_link_speed.py``).

    Attributes
    ----------
    assignments_ : Series
        Most probable cluster of every linked item (index: the user's item ids). Clusters are
        numbered by decreasing expected size.
    probas_ : DataFrame
        Items × clusters posterior probabilities q(z_i = k).
    prevalence_ : Series
        Posterior mean of π.
    workers_ : DataFrame
        Per worker (index: worker id): ``alpha``, ``alpha_sd``, ``alpha_lower``,
        ``alpha_upper``, the same for ``beta`` (posterior mean, sd, central interval), and
        ``n_links``. :meth:`worker_posterior` gives the Beta parameters, HPD intervals, and the
        posterior given the fitted clusters on a subset of the links.
    worker_params_ : DataFrame
        Per worker: the Beta parameters of q(α_m) (``alpha_a``, ``alpha_b``) and q(β_m)
        (``beta_a``, ``beta_b``).
    n_clusters_used_ : int
        Clusters that are the most probable cluster of at least one item.
    elbo_ : float
        Final ELBO of the kept restart; ``elbo_history_`` the per-sweep values of its last VB
        run (non-decreasing) and ``restart_elbos_`` the final ELBO of every restart (those at
        K first, then those reduced from K'; fewer of these when the shortcut of the module
        docstring stops the search at K').
    n_iter_, converged_ : int, bool
        Of the kept restart.
    """

    _tags = {"posterior": "approximate"}
    _diagnostics = {"iterations": "n_iter_", "converged": "converged_", "elbo": "elbo_"}
    _traces = {"elbo_history_": "ELBO"}

    parameter_constraints = {
        "n_clusters": [POSITIVE_INT],
        "prior_prevalence": [POSITIVE],
        "prior_alpha": [PositivePair()],
        "prior_beta": [PositivePair()],
        "init_accuracy": [PositivePair()],
        "init_smoothing": [OPEN_UNIT],
        "n_polish": [NON_NEGATIVE_INT],
        "search_factor": [Interval(Real, 1, None)],
        "merge_sweeps": [POSITIVE_INT],
        "n_init": [POSITIVE_INT],
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "credible_level": [OPEN_UNIT],
        "random_state": list(RANDOM_STATE),
        "progress": [bool],
    }

    def __init__(
        self,
        n_clusters: int = 10,
        *,
        prior_prevalence: float = 1.0,
        prior_alpha: tuple[float, float] = (1.0, 1.0),
        prior_beta: tuple[float, float] = (1.0, 1.0),
        init_accuracy: tuple[float, float] = (10.0, 1.0),
        init_smoothing: float = 0.1,
        n_polish: int = 2,
        search_factor: float = 1.5,
        merge_sweeps: int = 5,
        n_init: int = 5,
        max_iter: int = 300,
        tol: float | None = 1e-8,
        credible_level: float = 0.9,
        random_state: RandomState = None,
        progress: bool = False,
    ) -> None:
        self.n_clusters = n_clusters
        self.prior_prevalence = prior_prevalence
        self.prior_alpha = prior_alpha
        self.prior_beta = prior_beta
        self.init_accuracy = init_accuracy
        self.init_smoothing = init_smoothing
        self.n_polish = n_polish
        self.search_factor = search_factor
        self.merge_sweeps = merge_sweeps
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.credible_level = credible_level
        self.random_state = random_state
        self.progress = progress

    # -------------------------------------------------------------------------- interface
    def fit(self, links: Links | TableLike, init: pd.Series | None = None) -> LinkClustering:
        """Fit to ``links`` (a :class:`~crowdbayes.data.links.Links`, DataFrame or path).

        Parameters
        ----------
        init : Series, optional
            Starting clusters (integers ``0 … n_clusters−1``) indexed by item id, e.g. from a
            clustering of the items' features; linked items missing from it start at random.
            Every restart starts from it (softened by ``init_smoothing``), so one restart is
            enough; the block moves still run afterwards.
        """
        self.check_params()
        links = as_links(links)
        graph, items = LinkGraph.from_links(links)
        priors = self._priors()
        start = None
        if init is not None:
            start = self._initial_resp(init, links.item_ids[items], priors[0].size)
        best, best_run = None, None
        restart_elbos = []
        rngs = spawn_generators(self.random_generator(), 2 * self.n_init)
        for restart, rng in enumerate(rngs[: self.n_init]):
            resp = None if start is None else start(rng)
            state, run = self._run(graph, priors, rng, resp, contract=restart % 2 == 0)
            restart_elbos.append(run.history[-1])
            if best_run is None or run.history[-1] > best_run.history[-1]:
                best, best_run = state, run
        if start is None and self._wide(priors[0].size) > priors[0].size:
            # the search at K' may stop early only where the restarts at K leave a cluster
            # empty too (module docstring)
            sparse = used_clusters(best.resp).sum() < priors[0].size
            for restart, rng in enumerate(rngs[self.n_init :]):
                state, run, filled = self._wide_search(
                    graph, priors, rng, contract=restart % 2 == 0, shortcut=sparse
                )
                restart_elbos.append(run.history[-1])
                if run.history[-1] > best_run.history[-1]:
                    best, best_run = state, run
                if not filled:
                    break  # the shortcut was taken (module docstring)
        self._warn_unless_converged(best_run)
        worker_links = np.bincount(links.worker_codes, minlength=links.n_workers)
        self.restart_elbos_ = restart_elbos
        self._set_results(links.item_ids, items, links.worker_ids, worker_links, best, best_run)
        return self

    def worker_posterior(
        self,
        links: Links | TableLike | None = None,
        *,
        level: float | None = None,
        interval: str = "hpd",
    ) -> pd.DataFrame:
        r"""Every worker's Beta posterior of α and β, with credible intervals.

        Without ``links``: the fitted factors :math:`q(\alpha_m) = \mathrm{Beta}(a_m)`,
        :math:`q(\beta_m) = \mathrm{Beta}(b_m)` (``worker_params_``). With ``links`` (a set
        :math:`S` of links between fitted items, e.g. a subset of the fitted links): the
        posterior of :math:`\alpha_m, \beta_m` given the fitted q(z) and these links only,

        .. math::
            a_m = a^0 + \sum_{l \in S_m} \bar s_l\,(L_l,\; 1 - L_l), \qquad
            b_m = b^0 + \sum_{l \in S_m} (1 - \bar s_l)\,(1 - L_l,\; L_l), \qquad
            \bar s_l = r_i^\top r_j,

        the fit's conjugate update (:func:`~crowdbayes.models.clustering.link_vb.
        link_global_update`) with its sums restricted to :math:`S`: what those links say about
        each worker once the clusters are taken from the fit. A worker with no link in
        :math:`S` keeps the prior.

        Parameters
        ----------
        links : Links, DataFrame or path, optional
            Links between fitted items by fitted workers (columns ``worker, left, right,
            label``); None for the fitted factors.
        level : float, optional
            Mass of the intervals, in (0, 1) (default ``credible_level``).
        interval : {"hpd", "central"}
            Highest-density or equal-tailed intervals
            (:func:`~crowdbayes.maths.beta_credible_interval`). When a worker made no error the
            density of α peaks at 1: the HPD interval then ends at 1, the central one never
            does.

        Returns
        -------
        DataFrame indexed by worker: for ``alpha`` and ``beta`` the Beta parameters
        (``alpha_a``, ``alpha_b``), the mean (``alpha``) and the interval (``alpha_lower``,
        ``alpha_upper``); and the expected pair counts behind them, ``n_same``
        (:math:`\sum \bar s_l`) and ``n_different`` (:math:`\sum 1 - \bar s_l`).
        """
        self.check_is_fitted()
        level = self.credible_level if level is None else level
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1); got {level!r}")
        _, prior_alpha, prior_beta = self._priors()
        params = self.worker_params_.to_numpy()
        if links is None:
            alpha, beta = params[:, :2], params[:, 2:]
        else:
            alpha_counts, beta_counts = self._link_counts(links)
            alpha = two_coin_posterior(prior_alpha, alpha_counts)
            beta = two_coin_posterior(prior_beta, beta_counts)
        columns = {}
        for name, rows in (("alpha", alpha), ("beta", beta)):
            lower, upper = beta_credible_interval(rows[:, 0], rows[:, 1], level, interval)
            columns |= {
                f"{name}_a": rows[:, 0],
                f"{name}_b": rows[:, 1],
                name: rows[:, 0] / rows.sum(axis=1),
                f"{name}_lower": lower,
                f"{name}_upper": upper,
            }
        columns["n_same"] = alpha.sum(axis=1) - prior_alpha.sum()
        columns["n_different"] = beta.sum(axis=1) - prior_beta.sum()
        return pd.DataFrame(columns, index=self.worker_params_.index)

    # ---------------------------------------------------------------------------- internals
    def _link_counts(self, links: Links | TableLike) -> tuple[np.ndarray, np.ndarray]:
        """The two-coin counts (:func:`~crowdbayes.annotators.two_coin.two_coin_statistics`)
        of ``links`` under the fitted q(z), one row per fitted worker."""
        links = as_links(links)
        items = self.probas_.index.get_indexer(links.item_ids)
        workers = self.workers_.index.get_indexer(links.worker_ids)
        for what, codes, ids in (
            ("items", items, links.item_ids),
            ("workers", workers, links.worker_ids),
        ):
            if (codes < 0).any():
                raise ValueError(
                    f"links: {int((codes < 0).sum())} {what} were not in the fit (first: "
                    f"{ids[codes < 0][0]!r})"
                )
        resp = self.probas_.to_numpy()
        agreement = np.einsum(
            "lk,lk->l", resp[items[links.left_codes]], resp[items[links.right_codes]]
        )
        return two_coin_statistics(
            agreement, workers[links.worker_codes], links.labels, len(self.workers_)
        )

    def _initial_resp(self, init: pd.Series, ids: pd.Index, k: int):
        """``start(rng) -> resp``: q(z) of the items ``ids`` from the user's starting clusters
        ``init``, items missing from it drawn at random from ``rng``."""
        if not isinstance(init, pd.Series):
            raise TypeError(f"init must be a pandas Series indexed by item; got {type(init)}")
        values = init.reindex(ids)
        known = values.notna().to_numpy()
        codes = values.to_numpy()[known]
        if known.any() and not np.all((codes == np.round(codes)) & (codes >= 0) & (codes < k)):
            raise ValueError(f"init: clusters must be integers in [0, {k - 1}]")
        if not known.any():
            raise ValueError("init: none of the linked items has a starting cluster")
        chosen = np.zeros(ids.size, dtype=np.int64)
        chosen[known] = codes.astype(np.int64)

        def start(rng: np.random.Generator) -> np.ndarray:
            chosen[~known] = rng.integers(k, size=int((~known).sum()))
            return soften(chosen, k, self.init_smoothing)

        return start

    def _priors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(γ₀ (K,), a⁰ (2,), b⁰ (2,))``: the priors of π, every α_m and every β_m."""
        return self._priors_at(int(self.n_clusters))

    def _priors_at(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_priors` with ``k`` clusters."""
        return (
            np.full(k, float(self.prior_prevalence)),
            np.asarray(self.prior_alpha, dtype=np.float64),
            np.asarray(self.prior_beta, dtype=np.float64),
        )

    def _run(self, graph: LinkGraph, priors, rng: np.random.Generator, resp=None, contract=True):
        """One restart: from ``resp`` if given, else a searched start (:meth:`_searched_start`);
        then VB to convergence and the polish (:meth:`_polish`). Returns the final state and
        the driver result of its VB run."""
        if resp is None:
            resp = self._searched_start(graph, priors, rng, contract)
        return self._polish(graph, priors, rng, resp)

    def _wide(self, k: int) -> int:
        """K' = ⌈``search_factor``·K⌉, the clusters of the spare-cluster search."""
        return math.ceil(float(self.search_factor) * k - 1e-9)

    def _searched_start(self, graph: LinkGraph, priors, rng: np.random.Generator, contract):
        """q(z) at the start of a restart without ``init``: :meth:`_hard_start`, softened."""
        k = priors[0].size
        return soften(self._hard_start(graph, priors, rng, contract), k, self.init_smoothing)

    def _wide_search(
        self, graph: LinkGraph, priors, rng: np.random.Generator, contract, shortcut=True
    ):
        """One restart of the spare-cluster search (module docstring): a restart at K'
        (:meth:`_run`) brought back to K by the merge and delete moves of
        :func:`~crowdbayes.models.clustering.link_reduce.reduce_clusters`, each kept move
        refined by :meth:`_polish`. With ``shortcut`` (the fit passes it when its best restart
        at K fills fewer than K clusters), when VB at K' also fills fewer than K clusters (fewer
        than K are any item's most probable one) the polish at K' and the merges are skipped:
        the clusters it fills, padded with empty ones to K, are polished at K instead (module
        docstring: a rule of thumb that can cost ELBO). Returns the final state, the driver
        result of its last VB run and whether the restart searched in full (False: the
        shortcut was taken and the fit stops the search at K').
        """
        k = priors[0].size
        wide_priors = self._priors_at(self._wide(k))
        resp = self._searched_start(graph, wide_priors, rng, contract)
        wide, run = self._vb(graph, wide_priors, resp)
        used = used_clusters(wide.resp)
        if shortcut and used.sum() < k:
            state, run = self._polish(graph, priors, rng, padded_to(wide.resp[:, used], k))
            return state, run, False
        wide, _ = self._polish_rounds(graph, wide_priors, rng, wide, run)
        state, run = reduce_clusters(
            wide,
            k,
            graph=graph,
            weigh=lambda state: self._vb_weights(graph, state),
            refine=lambda resp: self._vb(
                graph, self._priors_at(resp.shape[1]), resp, max_iter=self.merge_sweeps
            ),
            settle=lambda resp: self._polish(graph, self._priors_at(resp.shape[1]), rng, resp),
            n_pairs=self._wide(k),
        )
        return state, run, True

    def _hard_start(self, graph: LinkGraph, priors, rng: np.random.Generator, contract):
        """A contraction start (``contract``) or a greedy one with the clusters of ``priors``,
        improved by block moves under the links weighed at ``init_accuracy``."""
        prior_pi = priors[0]
        k = prior_pi.size
        start = np.tile(np.asarray(self.init_accuracy, dtype=np.float64), (graph.n_workers, 1))
        weights, _ = link_message_weights(
            two_coin_expectations(start, start), graph.worker, graph.labels
        )
        if contract:
            chosen = contraction_start(graph, weights, k, rng)
        else:
            chosen = greedy_start(graph, weights, k, rng)
        log_pi = dirichlet_expected_log(prior_pi + np.bincount(chosen, minlength=k))
        return block_search(graph, weights, log_pi, chosen, rng)

    def _polish(self, graph: LinkGraph, priors, rng: np.random.Generator, resp: np.ndarray):
        """VB from ``resp`` to convergence, then up to ``n_polish`` rounds of block moves and
        Kempe swaps on the VB solution, each followed by VB and kept only if the ELBO rises."""
        state, run = self._vb(graph, priors, resp)
        return self._polish_rounds(graph, priors, rng, state, run)

    def _polish_rounds(self, graph: LinkGraph, priors, rng: np.random.Generator, state, run):
        """The ``n_polish`` rounds of :meth:`_polish` from the VB solution ``state`` (``run``
        its driver result)."""
        k = priors[0].size
        for _ in range(self.n_polish):
            weights = self._vb_weights(graph, state)
            chosen = np.argmax(state.resp, axis=1)
            moved = kempe_search(
                graph, weights, dirichlet_expected_log(state.prevalence), chosen, rng
            )
            if np.array_equal(moved, chosen):
                break
            candidate, candidate_run = self._vb(
                graph, priors, soften(moved, k, self.init_smoothing)
            )
            if candidate_run.history[-1] <= run.history[-1]:
                break
            state, run = candidate, candidate_run
        return state, run

    @staticmethod
    def _vb_weights(graph: LinkGraph, state: LinkVBState) -> np.ndarray:
        """Every link's message weight under the workers' fitted q(α), q(β)."""
        weights, _ = link_message_weights(
            two_coin_expectations(state.alpha, state.beta), graph.worker, graph.labels
        )
        return weights

    def _vb(self, graph: LinkGraph, priors, resp: np.ndarray, max_iter: int | None = None):
        """Coordinate-ascent VB from q(z) = ``resp`` over all links as one partition
        (:func:`~crowdbayes.models.clustering.link_vb.run_link_vb`: the sweeps of
        :func:`~crowdbayes.models.clustering.link_vb.iterate_link_vb`, the loop the
        distributed fit runs too, in the compiled loop where it was built); with ``max_iter``
        given, exactly that many sweeps and no progress bar (the short refinements that score
        the merge and delete moves)."""
        return run_link_vb(
            graph,
            resp,
            priors,
            max_iter=self.max_iter if max_iter is None else max_iter,
            tol=self.tol if max_iter is None else None,
            progress=self.progress and max_iter is None,
        )

    def _warn_unless_converged(self, run) -> None:
        """A :class:`ConvergenceWarning` (pointing at the user's ``fit`` call) when the kept
        run stopped at ``max_iter`` with a tolerance set."""
        if self.tol is not None and not run.converged:
            warnings.warn(
                f"LinkClustering did not converge in {self.max_iter} sweeps (tol={self.tol}); "
                "increase max_iter or tol",
                ConvergenceWarning,
                stacklevel=3,
            )

    def _set_results(
        self, item_ids: pd.Index, item_codes, worker_ids: pd.Index, worker_links, state, run
    ) -> None:
        """Results in the user's ids: ``item_codes`` are the codes (into ``item_ids``) of the
        items in internal order, ``worker_links`` every worker's number of links."""
        sizes = state.resp.sum(axis=0)
        relabel = np.argsort(-sizes, kind="stable")  # cluster 0 is the largest
        resp = state.resp[:, relabel]
        ids = item_ids[item_codes]
        # report items in the order of their codes (first appearance), not colour order
        back = np.argsort(item_codes, kind="stable")
        ids, resp = ids[back], resp[back]
        clusters = pd.RangeIndex(resp.shape[1], name="cluster")
        self.probas_ = pd.DataFrame(resp, index=pd.Index(ids, name="item"), columns=clusters)
        self.assignments_ = pd.Series(
            np.argmax(resp, axis=1), index=self.probas_.index, name="cluster"
        )
        prevalence = state.prevalence[relabel]
        self.prevalence_ = pd.Series(prevalence / prevalence.sum(), index=clusters, name="share")
        self.n_clusters_used_ = int(self.assignments_.nunique())
        self.workers_ = self._worker_table(worker_ids, worker_links, state)
        self.credible_level_ = float(self.credible_level)
        self.worker_params_ = pd.DataFrame(
            np.hstack([state.alpha, state.beta]),
            index=self.workers_.index,
            columns=["alpha_a", "alpha_b", "beta_a", "beta_b"],
        )
        self.elbo_history_ = run.history
        self.elbo_ = run.history[-1]
        self.n_iter_, self.converged_ = run.n_iter, run.converged

    def _worker_table(self, worker_ids: pd.Index, worker_links, state: LinkVBState) -> pd.DataFrame:
        columns = {}
        for name, params in (("alpha", state.alpha), ("beta", state.beta)):
            mean, sd, lower, upper, _ = dirichlet_marginal_summary(params, self.credible_level)
            columns[name] = mean[:, 0]
            columns[f"{name}_sd"] = sd[:, 0]
            columns[f"{name}_lower"] = lower[:, 0]
            columns[f"{name}_upper"] = upper[:, 0]
        columns["n_links"] = np.asarray(worker_links, dtype=np.int64)
        return pd.DataFrame(columns, index=pd.Index(worker_ids, name="worker"))
