r"""Mean-field variational Bayes of the links-only crowd clustering model, as sums over links.

This is the relational part of BayesSCDC (Luo et al. 2018, §3) without the deep generative
model of the items: only the pairwise judgments inform the clusters. The estimator is
:class:`~crowdbayes.models.clustering.LinkClustering`; this module holds the sweeps it runs,
written as sufficient statistics of the links so that :mod:`crowdbayes.distributed` can map the
same functions over partitions of the links.

Model
-----
.. math::
    \pi \sim \mathrm{Dir}(\gamma_0), \quad z_i \sim \mathrm{Cat}(\pi), \quad
    \alpha_m \sim \mathrm{Beta}(a^0), \quad \beta_m \sim \mathrm{Beta}(b^0), \\
    p(L_l = 1 \mid z_i = z_j) = \alpha_{m_l}, \quad p(L_l = 0 \mid z_i \ne z_j) = \beta_{m_l}

for every link :math:`l = (m_l, i, j, L_l)` (the two-coin model of Luo et al. 2018, Eq. 1;
:mod:`crowdbayes.annotators.two_coin`).

Inference
---------
Mean field :math:`q(\pi)\prod_i q(z_i)\prod_m q(\alpha_m) q(\beta_m)` with categorical
:math:`q(z_i) = r_i`, Dirichlet :math:`q(\pi)` and Beta :math:`q(\alpha_m), q(\beta_m)`.
Coordinate ascent, one sweep:

1. :math:`q(\pi) = \mathrm{Dir}(\gamma_0 + \sum_i r_i)`, and :math:`q(\alpha_m), q(\beta_m)`
   by the conjugate two-coin updates with agreements :math:`\bar s_l = r_i^\top r_j` (Luo et
   al. 2018, Eqs. 26, 28–29 at step size one; :func:`link_global_update`).
2. :math:`\log r_{ik} = \mathbb{E}\log\pi_k + \sum_{l \ni i} \mathbb{E}[w_l]\, r_{j(l)k}
   + \text{const}` (Luo et al. 2018, Eq. 14 without the observation term). The update of
   :math:`r_i` depends on its link partners, so items are updated in the colour classes of
   :mod:`crowdbayes.models.clustering.link_graph`: items of one class share no link, so
   updating a whole class at once is still an exact coordinate step, and the ELBO cannot
   decrease.

The evidence lower bound, tracked after every sweep (Luo et al. 2018, Eqs. 19–20, 23, 25
without the observation terms), is

.. math::
    \mathcal{L} = \sum_l (\bar s_l \mathbb{E}[w_l] + \mathbb{E}[c_l])
    + \sum_{i,k} r_{ik}\mathbb{E}\log\pi_k + H[q(z)]
    - \mathrm{KL}(q(\pi)\|p(\pi)) - \sum_m \mathrm{KL}(q(\alpha_m)\|p(\alpha_m))
    - \sum_m \mathrm{KL}(q(\beta_m)\|p(\beta_m)).

Sums over links
---------------
Every link enters a sweep only through sums: the two-coin counts of each worker and the
expected log-likelihood (:func:`link_local_stats`), and the messages to the items of one colour
class (:func:`link_messages`). So the links may be split into partitions, each summed on its
own with the current q(z), and the sums added: :func:`iterate_link_vb` runs the sweeps over any
such source of sums (:class:`LinkStatistics`, one partition holding every link, is the
in-memory fit; :func:`crowdbayes.distributed.fit_links_distributed` maps the same functions
over a Dask cluster), with the globals updated from the summed counts by
:func:`link_global_update`. Only the VB is a sum; the search of
:mod:`crowdbayes.models.clustering.link_search` is not.

Compiled loop
-------------
In memory, :func:`run_link_vb` runs all the sweeps of one VB run in one call of
``_link_kernel.c`` (when the package was built with a C compiler): a link's weight
:math:`\mathbb{E}[w_l]` and constant :math:`\mathbb{E}[c_l]` depend only on its worker and
label, so the loop keeps them, and the sums over links, per (worker, label), and updates the
items colour class by colour class as above. It computes the same sweeps and stops by the same
rule as :func:`iterate_link_vb` (digamma by its asymptotic series after shifting the argument
above 6); the numbers agree to rounding (``tests/models/clustering/test_link_speed.py``).

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS. (Eqs. 1, 14, 19–20, 23, 25–29.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...annotators.two_coin import (
    link_expected_log_likelihood,
    link_message_weights,
    two_coin_expectations,
    two_coin_kl,
    two_coin_posterior,
    two_coin_statistics,
)
from ...inference.driver import IterationResult, run_iterations
from ...maths import dirichlet_expected_log, dirichlet_kl
from .link_graph import LinkGraph

try:
    from . import _link_kernel as _kernel
except ImportError:  # no compiler at install time: the numpy path
    _kernel = None

__all__ = [
    "LinkGlobals",
    "LinkStatistics",
    "LinkVBState",
    "link_model_elbo",
    "link_weights",
    "link_local_stats",
    "link_messages",
    "link_global_update",
    "iterate_link_vb",
    "run_link_vb",
    "kernel_available",
    "soften",
]

#: sweeps before the ELBO change is tested (as in :func:`iterate_link_vb`)
MIN_SWEEPS = 2


def kernel_available() -> bool:
    """Whether the compiled VB loop (``_link_kernel.c``) was built."""
    return _kernel is not None


@dataclass
class LinkGlobals:
    """The global factors of the VB: Dirichlet q(π) (``prevalence``, shape (K,)) and the Beta
    rows of every worker's q(α_m), q(β_m) (``alpha``, ``beta``, shape (n_workers, 2))."""

    prevalence: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray


@dataclass
class LinkVBState:
    """Where a VB run ended: q(z) (``resp`` (n_items, K) in the internal item order, and its
    log) and the global factors, as in :class:`LinkGlobals`."""

    resp: np.ndarray
    log_resp: np.ndarray
    prevalence: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray


# ------------------------------------------------------------------------------ pure pieces
def soften(chosen: np.ndarray, n_clusters: int, smoothing: float) -> np.ndarray:
    """Rows of q(z) from hard clusters ``chosen``: ``1 − smoothing`` on the chosen cluster,
    the rest spread evenly over the others."""
    if n_clusters == 1:
        return np.ones((chosen.size, 1))
    resp = np.full((chosen.size, n_clusters), smoothing / (n_clusters - 1))
    resp[np.arange(chosen.size), chosen] = 1.0 - smoothing
    return resp


def _softmax_rows(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise softmax and its log (one pass; rows of K are short, so no scipy overhead)."""
    logits = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    totals = probs.sum(axis=1, keepdims=True)
    probs /= totals
    return probs, logits - np.log(totals)


def _entropy(resp: np.ndarray, log_resp: np.ndarray) -> float:
    return float(-np.sum(np.where(resp > 0, resp * log_resp, 0.0)))


def _elbo(expected_loglik, resp, log_resp, log_pi, factors, priors):
    """The ELBO (module docstring) from the expected log-likelihood of the links, q(z), its
    log, E[log π] and the global ``factors`` (``prevalence``, ``alpha``, ``beta``)."""
    prior_pi, prior_alpha, prior_beta = priors
    return (
        expected_loglik
        + resp.sum(axis=0) @ log_pi
        + _entropy(resp, log_resp)
        - dirichlet_kl(factors.prevalence, prior_pi)
        - two_coin_kl(factors.alpha, prior_alpha)
        - two_coin_kl(factors.beta, prior_beta)
    )


def link_model_elbo(
    resp: np.ndarray,
    prevalence: np.ndarray,
    alpha: np.ndarray,
    beta: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    worker: np.ndarray,
    labels: np.ndarray,
    prior_prevalence: np.ndarray,
    prior_alpha: np.ndarray,
    prior_beta: np.ndarray,
) -> float:
    """The evidence lower bound of the links-only model (module docstring) at the given
    variational parameters: ``resp`` (n_items, K) rows of q(z), ``prevalence`` (K,) Dirichlet
    q(π), ``alpha``/``beta`` (n_workers, 2) Beta rows of q(α), q(β)."""
    with np.errstate(divide="ignore"):
        log_resp = np.log(resp)
    weights, offsets = link_message_weights(two_coin_expectations(alpha, beta), worker, labels)
    agreement = np.einsum("lk,lk->l", resp[left], resp[right])
    return float(
        _elbo(
            link_expected_log_likelihood(agreement, weights, offsets),
            resp,
            log_resp,
            dirichlet_expected_log(prevalence),
            LinkGlobals(prevalence, alpha, beta),
            (prior_prevalence, prior_alpha, prior_beta),
        )
    )


# ------------------------------------------------------------ VB as sufficient statistics
def link_weights(graph: LinkGraph, globals_: LinkGlobals) -> tuple[np.ndarray, np.ndarray]:
    """``(E[w_l], E[c_l])`` of the links of ``graph`` (one partition) under ``globals_``: the
    message weights and constants of :func:`~crowdbayes.annotators.two_coin.link_message_weights`.
    """
    expected = two_coin_expectations(globals_.alpha, globals_.beta)
    return link_message_weights(expected, graph.worker, graph.labels)


def link_local_stats(
    graph: LinkGraph,
    resp: np.ndarray,
    weighted: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict:
    r"""Sufficient statistics of one partition of the links at :math:`q(z)` = ``resp``.

    With agreements :math:`\bar s_l = r_i^\top r_j` of the partition's links:
    ``alpha_counts``, ``beta_counts`` (n_workers, 2), the two-coin counts
    :math:`\sum_l \bar s_l (L_l, 1 - L_l)` and :math:`\sum_l (1 - \bar s_l)(1 - L_l, L_l)` per
    worker (:func:`~crowdbayes.annotators.two_coin.two_coin_statistics`), and
    ``expected_loglik``, :math:`\sum_l \bar s_l \mathbb{E}[w_l] + \mathbb{E}[c_l]` under the
    weights ``weighted = link_weights(graph, globals_)`` (0 without them). Every entry is a sum
    over links, so the statistics of several partitions add up
    (:func:`~crowdbayes.inference.statistics.add_stats`) to those of their union.
    """
    agreement = graph.agreement(resp)
    alpha_counts, beta_counts = two_coin_statistics(
        agreement, graph.worker, graph.labels, graph.n_workers
    )
    expected = 0.0 if weighted is None else link_expected_log_likelihood(agreement, *weighted)
    return {"alpha_counts": alpha_counts, "beta_counts": beta_counts, "expected_loglik": expected}


def link_messages(
    graph: LinkGraph, colour: int, weights: np.ndarray, resp: np.ndarray
) -> np.ndarray:
    r"""One partition's part of the messages to the items of colour class ``colour``:
    :math:`m_i = \sum_{l \ni i} \mathbb{E}[w_l]\, r_{\text{partner}(l)}` over its links, one
    row per item of the class (items ``bounds[c]:bounds[c+1]``). Messages of partitions add up."""
    return graph.colour_messages(colour, weights, resp)[2]


def link_global_update(stats: dict, resp: np.ndarray, priors) -> LinkGlobals:
    r"""The conjugate updates of the globals from the summed statistics of all partitions and
    the current q(z): :math:`q(\pi) = \mathrm{Dir}(\gamma_0 + \sum_i r_i)`,
    :math:`q(\alpha_m) = \mathrm{Beta}(a^0 + \text{alpha\_counts}_m)`,
    :math:`q(\beta_m) = \mathrm{Beta}(b^0 + \text{beta\_counts}_m)`."""
    prior_pi, prior_alpha, prior_beta = priors
    return LinkGlobals(
        prior_pi + resp.sum(axis=0),
        two_coin_posterior(prior_alpha, stats["alpha_counts"]),
        two_coin_posterior(prior_beta, stats["beta_counts"]),
    )


class LinkStatistics:
    """Where :func:`iterate_link_vb` gets its sums over links: here one partition holding every
    link (the in-memory fit); :mod:`crowdbayes.distributed` maps the same functions over the
    partitions of a cluster and adds their results.

    ``weigh(globals_)`` fixes the link weights for the coming sweep, ``stats(resp)`` returns
    :func:`link_local_stats` at ``resp`` (under the weights, once weighed), and
    ``messages(colour, resp)`` :func:`link_messages` of a colour class.
    """

    def __init__(self, graph: LinkGraph) -> None:
        self.graph = graph
        self.weighted: tuple[np.ndarray, np.ndarray] | None = None

    def weigh(self, globals_: LinkGlobals) -> None:
        self.weighted = link_weights(self.graph, globals_)

    def stats(self, resp: np.ndarray) -> dict:
        return link_local_stats(self.graph, resp, self.weighted)

    def messages(self, colour: int, resp: np.ndarray) -> np.ndarray:
        return link_messages(self.graph, colour, self.weighted[0], resp)


def iterate_link_vb(
    resp: np.ndarray,
    priors,
    source: LinkStatistics,
    bounds: np.ndarray,
    *,
    max_iter: int,
    tol: float | None,
    progress: bool = False,
    desc: str = "LinkClustering sweeps",
    callback=None,
) -> tuple[LinkVBState, IterationResult]:
    """Coordinate-ascent VB from q(z) = ``resp`` (internal item order, colour classes
    ``bounds``) with the sums over links taken by ``source``; returns ``(state, run)``.

    One sweep: the globals from the statistics of the previous q(z)
    (:func:`link_global_update`), the link weights under them, q(z) colour class by colour
    class from the summed messages, then the statistics at the new q(z), which give both the
    ELBO of this sweep and the globals of the next one. ``callback(sweep, elbo)`` (1-based)
    after every sweep.
    """
    prior_pi, prior_alpha, prior_beta = priors
    resp = resp.copy()
    state = LinkVBState(resp, np.log(resp), prior_pi, prior_alpha, prior_beta)
    stats = source.stats(state.resp)

    def sweep(iteration: int) -> float:
        nonlocal stats
        globals_ = link_global_update(stats, state.resp, priors)
        state.prevalence, state.alpha, state.beta = (
            globals_.prevalence,
            globals_.alpha,
            globals_.beta,
        )
        source.weigh(globals_)
        log_pi = dirichlet_expected_log(state.prevalence)
        for colour, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            messages = source.messages(colour, state.resp)
            state.resp[lo:hi], state.log_resp[lo:hi] = _softmax_rows(messages + log_pi)
        stats = source.stats(state.resp)
        elbo = _elbo(stats["expected_loglik"], state.resp, state.log_resp, log_pi, state, priors)
        if callback is not None:
            callback(iteration + 1, float(elbo))
        return elbo

    run = run_iterations(
        sweep,
        max_iter=max_iter,
        tol=tol,
        min_iter=MIN_SWEEPS,
        progress=progress,
        desc=desc,
    )
    return state, run


def run_link_vb(
    graph: LinkGraph,
    resp: np.ndarray,
    priors,
    *,
    max_iter: int,
    tol: float | None,
    progress: bool = False,
    use_kernel: bool = True,
) -> tuple[LinkVBState, IterationResult]:
    """Coordinate-ascent VB over all links of ``graph`` in memory from q(z) = ``resp``:
    :func:`iterate_link_vb` with :class:`LinkStatistics`, every sweep of it in one call of the
    compiled loop ``_link_kernel.c`` where that was built (the same sweeps and stopping rule;
    the numbers agree to rounding). ``progress=True`` or ``use_kernel=False`` (tests) keep to
    the numpy path. Returns ``(state, run)``."""
    small = graph.n_items < 2**31 and 2 * graph.n_workers < 2**31  # int32 codes
    if progress or not use_kernel or _kernel is None or not small:
        return iterate_link_vb(
            resp,
            priors,
            LinkStatistics(graph),
            graph.bounds,
            max_iter=max_iter,
            tol=tol,
            progress=progress,
        )
    prior_pi, prior_alpha, prior_beta = (np.ascontiguousarray(p, dtype=np.float64) for p in priors)
    resp = np.array(resp, dtype=np.float64, order="C")
    log_resp = np.empty_like(resp)
    prevalence = np.empty(prior_pi.size)
    alpha, beta = np.empty((graph.n_workers, 2)), np.empty((graph.n_workers, 2))
    history = np.empty(max_iter)
    n_iter, converged = _kernel.vb_run(
        *graph.kernel_arrays,
        prior_pi,
        prior_alpha,
        prior_beta,
        resp,
        log_resp,
        prevalence,
        alpha,
        beta,
        history,
        max_iter,
        MIN_SWEEPS,
        -1.0 if tol is None else float(tol),
    )
    state = LinkVBState(resp, log_resp, prevalence, alpha, beta)
    return state, IterationResult(history[:n_iter].tolist(), n_iter, converged)
