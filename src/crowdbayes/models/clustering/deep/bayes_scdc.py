r"""BayesSCDC, the estimator: fully Bayesian semi-crowdsourced deep clustering (Luo et al. 2018,
§3), fitted as a structured VAE (Johnson et al. 2016).

Each minibatch of items runs the local mean field of Eqs. 12 and 14 at fixed globals
(:mod:`.meanfield`; on CUDA replayed from a recorded graph, :mod:`._cuda_graph`), then the
networks take an Adam step on the objective :math:`\mathcal J` and the globals a stochastic
natural-gradient step (Eq. 17): the Dirichlet and NIW factors (:mod:`._conjugate`) from the
minibatch statistics scaled by :math:`N/|B|`, the workers' Beta factors from a uniform sample
of links (:mod:`._workers`). The globals start as in Appendix B and restart around the learnt
embedding at the end of the warm-up (:mod:`._init`); with sparse links an amortised cluster
head can replace the per-item q(z) (:mod:`._head`).

The table of every item's latest :math:`q(z_j)`, whose rows are the partners' beliefs in the
link messages, lives on the model's device, so that the messages never leave it; the host
waits for a GPU once per minibatch, to fetch the statistics of the global step.

The model, its inference, the departures from the paper, the collapse of issue 19, the
cluster head and the measurements behind the defaults: ``docs/models/bayes_scdc.md``.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd
import torch

from ....annotators.two_coin import link_expected_log_likelihood
from ....base import (
    NON_NEGATIVE,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    Interval,
    Options,
    PositivePair,
)
from ....maths import dirichlet_expected_log, dirichlet_kl
from ._base import DeepClusteringBase
from ._conjugate import (
    NIW,
    NIWExpectations,
    natural_step,
    niw_expected_stats,
    niw_kl,
    niw_statistics,
)
from ._cuda_graph import MeanFieldGraph
from ._data import LinkData, ObservedData, csr_rows, row_chunks, to_device, to_host
from ._head import SPARSE_LINKS_PER_ITEM, head_link_term, sparse_links
from ._init import globals_around, head_centres, initial_globals, kmeans_plus_plus, niw_prior
from ._networks import Decoder, GaussianHead, mlp
from ._workers import (
    Factors,
    link_minibatch,
    link_weights,
    worker_kl,
    worker_step,
    worker_table,
)
from .meanfield import (
    gaussian_expected_loglik,
    gaussian_posterior,
    local_meanfield,
    table_messages,
)

__all__ = ["BayesSCDC"]


class BayesSCDC(DeepClusteringBase):
    r"""Fully Bayesian semi-crowdsourced deep clustering (Luo et al. 2018, §3).

    A Gaussian mixture in a latent space with a neural decoder of the observations, and
    two-coin workers judging pairs of items (:mod:`crowdbayes.annotators.two_coin`):

    .. math::
        \pi \sim \mathrm{Dir}(\alpha_0),\quad (\mu_k, \Sigma_k) \sim \mathrm{NIW}(m, \kappa, S,
        \nu),\quad z_i \sim \mathrm{Cat}(\pi),\quad x_i \mid z_i \sim \mathcal N(\mu_{z_i},
        \Sigma_{z_i}),\quad o_i \mid x_i \sim p(o_i \mid x_i; \gamma),

    :math:`\alpha_m, \beta_m \sim \mathrm{Beta}`: worker m's link on items i, j is a
    must-link with probability :math:`\alpha_m` if :math:`z_i = z_j` and a cannot-link with
    probability :math:`\beta_m` if not (Eq. 1). The globals have mean-field posteriors in
    their priors' families; q(x_i) and q(z_i) follow from a recognition network's Gaussian
    potential by local mean field (the structured VAE of Johnson et al. 2016). The networks
    maximise the bound :math:`\mathcal J` (``history_``).

    The model and its inference in full, the departures from the paper, the collapse of
    issue 19, the cluster head and the measurements behind the defaults and the advice below:
    ``docs/models/bayes_scdc.md``.

    Parameters
    ----------
    n_clusters : int
        Initial number of mixture components K (unneeded ones are emptied by the Dirichlet
        prior).
    latent_dim : int
        Dimension d of the latent x.
    hidden : tuple of int
        Hidden widths of the recognition network; the decoder mirrors them.
    decoder : {"gaussian", "bernoulli"}
        p(o | x): Gaussian with a learned diagonal variance, or Bernoulli for values in [0, 1].
    epochs, batch_size : int
        Passes over the items and items per minibatch |B|.
    learning_rate : float
        Adam step size of the networks (default 5e-3; 1e-3 left the pinwheel's arms unformed
        after 20 epochs). For large networks on images use 1e-3 (MNIST).
    global_learning_rate : float
        Step size ρ of the natural-gradient updates of the globals. The paper's 1e-4 moves the
        globals by 1e-4 per step; we use a larger constant (0.05 by default) so that the
        globals follow the networks within the paper's few epochs.
    local_iterations : int
        Rounds of Eqs. 12/14 per minibatch.
    warmup_epochs : int
        Epochs over which the weight of the latent prior terms in the networks' loss rises
        linearly from 1/warmup_epochs to 1 (KL annealing); q(π) is held during them, and at
        their end q(π) and the NIW factors restart around the learnt embedding (k-means++
        centres; with the cluster head, at its clusters, and the workers' Beta factors are
        held during the warm-up too). Without it the recognition network collapses onto
        the prior (posterior collapse) and the components starve before the embedding has
        formed. 0 switches this off; at most half of ``epochs`` is used (default 10).
    n_init : int
        Restarts (each from its own random stream, default 3), each ending in its best-bound
        state; the one with the highest bound is kept (the paper picks the best of 10
        initialisations).
    collapse_restarts : int
        Further restarts at most, run only while every restart so far has collapsed (its
        clusters put at least half of the pairs the links call cannot-link together). A
        :class:`~._base.CollapseWarning` says what happened. Without links nothing is
        detected.
    dirichlet_prior : float or None
        α₀ of the Dirichlet prior on π (None: 0.05 / K, the paper's).
    niw_kappa : float
        Prior concentration κ; the prior is m = 0, S = (d + κ) I, ν = d + κ (Appendix B).
    worker_prior : (float, float)
        Beta prior on every α_m and β_m (paper: (1, 1)).
    worker_init : (float, float)
        Initial Beta factors of q(α_m), q(β_m) (paper: (10, 1)).
    link_weight : float
        Power λ of the link likelihood, :math:`p(L \mid z)^\lambda` (1: the paper's model).
        It multiplies the link messages of Eq. 14, the workers' Beta statistics and the link
        term of the objective. Values above 1 let sparse links outweigh a feature structure
        that is not the one the links describe. Values below 1 suit links derived from
        groupings: a worker who sorts 36 images into groups gives all 630 pairs, which the
        two-coin likelihood counts as independent judgments although they carry one
        partition (MNIST tasks: 0.5).
    cluster_head : {"off", "on", "auto"}
        Whether q(z) is the paper's per-item factor with link messages ("off", the default)
        or the output of a discriminative head over the observations that feeds the link
        likelihood ("on"; :mod:`._head`); "auto" turns the head on when the linked items
        have fewer than 10 links each on average. For sparse links (the
        faces: 3–7 per image) use "on" or "auto" with ``link_weight`` 10–30.
    head_balance : float
        With the cluster head only: weight γ of the entropy of the head's mean cluster
        distribution in the networks' loss, per link and relative to the tempered link term
        (:mod:`._head`); 0 turns it off. Keep it small when K is well above the number of
        groups (MNIST tasks at K = 50: 0.05).
    credible_level : float
        Mass of the central intervals in ``workers_``.
    device : {"cpu", "cuda"}
    random_state : int, Generator or None
    progress : bool
        Show a progress bar over epochs.

    Attributes
    ----------
    assignments_ : Series
        MAP cluster of every item (index: item id); cluster 0 is the largest.
    probas_ : DataFrame
        q(z) of every item (``predict_proba()``).
    embedding_ : DataFrame
        Posterior mean of x per item.
    weights_ : Series
        E[π_k] per cluster.
    workers_ : DataFrame
        Per worker: ``alpha``, ``alpha_sd``, ``alpha_lower``, ``alpha_upper``, the same for
        ``beta`` (posterior mean, sd, central interval) and ``n_links``.
    n_clusters_used_ : int
    history_ : list of float
        The objective :math:`\mathcal J` per epoch of the restart kept.
    best_epoch_ : int
        The epoch (from 0) after which the kept state was taken.
    n_restarts_, collapsed_restarts_ : int
        Restarts run (``n_init`` plus those after collapses) and how many collapsed.
    uses_cluster_head_ : bool
        Whether the fit used the cluster head (``cluster_head``).

    References
    ----------
    Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with
    deep generative models. NeurIPS. (Eqs. 5–17, Algorithm 1, Appendix B.)
    Johnson, M. J., Duvenaud, D., Wiltschko, A., Adams, R. P. & Datta, S. R. (2016). Composing
    graphical models with neural networks for structured representations and fast inference.
    NeurIPS.
    """

    _name = "BayesSCDC"
    parameter_constraints = {
        **DeepClusteringBase._common_constraints,
        "global_learning_rate": [Interval(numbers.Real, 0, 1, closed="right")],
        "local_iterations": [POSITIVE_INT],
        "dirichlet_prior": [POSITIVE, None],
        "niw_kappa": [POSITIVE],
        "worker_prior": [PositivePair()],
        "worker_init": [PositivePair()],
        "credible_level": [OPEN_UNIT],
        "cluster_head": [Options("auto", "on", "off")],
        "head_balance": [NON_NEGATIVE],
    }
    #: the recognition network, the decoder and (with ``cluster_head``) the cluster head
    _networks = ("encoder_", "decoder_", "head_")

    def __init__(
        self,
        n_clusters: int = 15,
        latent_dim: int = 2,
        hidden: tuple[int, ...] = (40, 40),
        decoder: str = "gaussian",
        epochs: int = 20,
        batch_size: int = 50,
        learning_rate: float = 5e-3,
        global_learning_rate: float = 0.05,
        local_iterations: int = 10,
        warmup_epochs: int = 10,
        n_init: int = 3,
        collapse_restarts: int = 3,
        dirichlet_prior: float | None = None,
        niw_kappa: float = 0.5,
        worker_prior: tuple[float, float] = (1.0, 1.0),
        worker_init: tuple[float, float] = (10.0, 1.0),
        link_weight: float = 1.0,
        cluster_head: str = "off",
        head_balance: float = 0.5,
        credible_level: float = 0.9,
        device: str = "cpu",
        random_state=None,
        progress: bool = False,
    ) -> None:
        self.n_clusters = n_clusters
        self.latent_dim = latent_dim
        self.hidden = hidden
        self.decoder = decoder
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.global_learning_rate = global_learning_rate
        self.local_iterations = local_iterations
        self.warmup_epochs = warmup_epochs
        self.n_init = n_init
        self.collapse_restarts = collapse_restarts
        self.dirichlet_prior = dirichlet_prior
        self.niw_kappa = niw_kappa
        self.worker_prior = worker_prior
        self.worker_init = worker_init
        self.link_weight = link_weight
        self.cluster_head = cluster_head
        self.head_balance = head_balance
        self.credible_level = credible_level
        self.device = device
        self.random_state = random_state
        self.progress = progress

    # ---------------------------------------------------------------------------- setup
    def _make_networks(self, n_obs: int):
        """The recognition network (a Gaussian potential per item), the decoder and, if the
        fit uses one (``uses_cluster_head_``), the cluster head (the logits of q(z) per item;
        else None), on the CPU, freshly initialised from torch's random
        state."""
        d = self.latent_dim
        encoder = GaussianHead(n_obs, self._hidden, d, logvar_init=-4.0)
        decoder = Decoder(d, self._hidden, n_obs, self.decoder)
        head = mlp(n_obs, self._hidden, self.n_clusters) if self._head_used() else None
        return encoder, decoder, head

    def _head_used(self) -> bool:
        """Whether the fitted (or fitting) model has the cluster head."""
        return bool(getattr(self, "uses_cluster_head_", False))

    def _decide_head(self, links: LinkData | None) -> bool:
        """Whether this fit uses the cluster head: ``cluster_head`` "on"/"off", or under
        "auto" when the links are sparse (:func:`~._head.sparse_links`)."""
        if self.cluster_head != "auto":
            return self.cluster_head == "on"
        return sparse_links(links)

    def _collapse_advice(self) -> str:
        """The base's advice and, for sparse links fitted without the head, the head."""
        advice = super()._collapse_advice()
        if self._sparse_links and not self._head_used():
            advice += (
                f"; the links are sparse (fewer than {SPARSE_LINKS_PER_ITEM:g} per linked item): "
                "try cluster_head='on' with link_weight 10-30"
            )
        return advice

    def _build(self, data: ObservedData, rng: np.random.Generator) -> None:
        K, d = self.n_clusters, self.latent_dim
        n, n_obs = data.obs.shape
        links = data.links
        self._sparse_links = sparse_links(links)
        self.uses_cluster_head_ = self._decide_head(links)
        encoder, decoder, head = self._make_networks(n_obs)
        self.encoder_, self.decoder_ = encoder.to(self._device), decoder.to(self._device)
        self.head_ = None if head is None else head.to(self._device)
        params = list(self.encoder_.parameters()) + list(self.decoder_.parameters())
        if self.head_ is not None:
            params += list(self.head_.parameters())
        fused = True if self._device.type == "cuda" else None  # one kernel for all parameters
        self._optimizer = torch.optim.Adam(params, lr=self.learning_rate, fused=fused)
        self._niw_prior = niw_prior(d, float(self.niw_kappa))
        alpha0 = 0.05 / K if self.dirichlet_prior is None else float(self.dirichlet_prior)
        self._dir_prior = np.full(K, alpha0)
        self.dirichlet_, self.niw_ = initial_globals(K, d, rng)
        # q(z_j) of every item, on the device so that the link messages of the local
        # iterations never leave it (float64, as the link weights)
        self._resp_table = torch.full((n, K), 1.0 / K, dtype=torch.float64, device=self._device)
        if data.links is not None:
            m = data.links.n_workers
            self.worker_alpha_ = np.tile(np.asarray(self.worker_init, float), (m, 1))
            self.worker_beta_ = self.worker_alpha_.copy()
        self._step = 0
        self._graph = None  # recorded at the first CUDA batch (it holds this restart's table)

    def _workers(self) -> Factors:
        """The workers' Beta factors q(α_m), q(β_m) (fits with links only)."""
        return self.worker_alpha_, self.worker_beta_

    def _globals_torch(self) -> tuple[NIWExpectations, torch.Tensor]:
        """E-statistics of the NIW factors and E[log π] as float32 tensors, sent in one copy."""
        arrays = (*niw_expected_stats(self.niw_), dirichlet_expected_log(self.dirichlet_))
        flat = to_device(np.concatenate([a.ravel() for a in arrays]), self._device, torch.float32)
        chunks = flat.split([a.size for a in arrays])
        parts = [t.view(a.shape) for t, a in zip(chunks, arrays, strict=True)]
        return NIWExpectations(*parts[:4]), parts[4]

    def _link_weights(self, links: LinkData, link: np.ndarray) -> np.ndarray:
        """λ·E[w_l] of the links ``link`` under the current Beta factors (Eq. 14)."""
        weights, _ = link_weights(self._workers(), links, link)
        return weights * self.link_weight

    def _messenger(self, links: LinkData | None, batch: np.ndarray, rows=None):
        """The ``messages`` callback of :func:`local_meanfield` for one batch: link weights
        from the current Beta factors, partner beliefs from the table (updated in place).
        ``rows`` is ``batch`` on the device, if the caller has it there already.

        The (|B|, N) weight matrix is built once per batch; the product with the table and the
        update of the table stay on the device in every local iteration."""
        if links is None:
            return None
        indptr, partner, link = links.batch_entries(batch)
        weights = self._link_weights(links, link)
        matrix = csr_rows(indptr, partner, weights, (len(batch), links.n_items), self._device)
        rows = to_device(batch, self._device) if rows is None else rows
        return table_messages(self._resp_table, rows, matrix.__matmul__)

    def _eager_meanfield(self, inputs, links, batch, rows) -> torch.Tensor:
        """q(z) of a batch by :func:`local_meanfield`, run op by op."""
        messages = self._messenger(links, batch, rows)
        return local_meanfield(*inputs, self.local_iterations, messages)[0]

    def _replay_meanfield(self, inputs, links, batch, rows) -> torch.Tensor:
        """CUDA: q(z) of a training batch through the recorded :class:`~._cuda_graph.MeanFieldGraph`
        (recorded at the first batch; if recording fails, it runs eagerly from then on)."""
        entries = None
        if links is not None:
            partners, weights = links.padded_entries(
                batch, lambda codes: self._link_weights(links, codes)
            )
            entries = (to_device(partners, self._device), to_device(weights, self._device))
        if self._graph is not None:
            return self._graph(inputs, rows, entries)
        table = None if links is None else self._resp_table
        try:
            self._graph = MeanFieldGraph(inputs, self.local_iterations, table, rows, entries)
            return self._graph.first
        except RuntimeError as error:  # pragma: no cover - depends on the CUDA build
            warnings.warn(
                f"CUDA graph recording failed ({error}); running the local mean field "
                "eagerly (slower)",
                RuntimeWarning,
                stacklevel=2,
            )
            self._graph = False
            return self._eager_meanfield(inputs, links, batch, rows)

    # ---------------------------------------------------------------------------- epochs
    def _local(self, obs: torch.Tensor, links=None, batch=None, rows=None, replay=False):
        """Recognition potentials of the batch ``obs`` (items ``batch``, on the device
        ``rows``) and its local mean field at the current globals, with link messages if
        ``links``. ``replay``: through the CUDA graph (training batches, all of one size).
        With the cluster head q(z) is the softmax of its logits instead of Eq. 14 (the links
        reach q(z) through the head's training, :func:`~._head.head_link_term`, not as
        messages); the logits, with their graph, are returned last (None without the head)."""
        mean_rec, logvar_rec = self.encoder_(obs)
        J_rec = torch.exp(-logvar_rec)
        h_rec = mean_rec * J_rec
        e, log_pi = self._globals_torch()
        inputs = (e, log_pi, J_rec.detach(), h_rec.detach())
        head = self.head_(obs) if self._head_used() else None
        with torch.no_grad():
            if head is not None:
                resp = torch.softmax(head.detach(), dim=-1)
            elif replay and self._graph is not False:
                resp = self._replay_meanfield(inputs, links, batch, rows)
            else:
                resp = self._eager_meanfield(inputs, links, batch, rows)
        return resp, e, log_pi, J_rec, h_rec, head

    def _epoch(self, data: ObservedData, rng: np.random.Generator, epoch: int) -> float:
        n = len(data.obs)
        links = data.links
        batches = self._minibatches(n, rng)
        total = torch.zeros((), dtype=torch.float64, device=self._device)
        cuda = self._device.type == "cuda"
        for batch in batches:
            rows = to_device(batch, self._device)
            obs = data.obs[rows]
            resp, e, log_pi, J_rec, h_rec, head = self._local(obs, links, batch, rows, cuda)
            if head is not None:
                resp = torch.softmax(head, dim=-1)
            mean, second, chol, entropy = gaussian_posterior(resp, e, J_rec, h_rec)
            noise = torch.randn_like(mean).unsqueeze(-1)
            sample = mean + torch.linalg.solve_triangular(
                chol.transpose(-1, -2), noise, upper=True
            ).squeeze(-1)
            recon = self.decoder_.log_prob(obs, sample)
            expected = (resp * gaussian_expected_loglik(e, mean, second)).sum(-1)
            log_resp = torch.log(resp.clamp_min(1e-30))
            z_part = (resp * (log_pi - log_resp)).sum(-1)
            local = recon + expected + entropy + z_part
            warm = self._warm(epoch)
            prior_terms = expected + entropy if head is None else expected + entropy + z_part
            loss = -(recon + warm * prior_terms).mean()
            if head is not None and links is not None:
                loss = loss - self._head_links(data, links, len(batch), rng) / n
                self._resp_table[rows] = resp.detach().double()
            resp = resp.detach()
            self._optimizer.zero_grad()
            loss.backward()
            self._optimizer.step()
            total += local.detach().sum().double() * (n / len(batch))  # no sync per batch
            self._global_step(
                resp, mean.detach(), second.detach(), n, len(batch), links, rng, warm >= 1.0
            )
        if self._warmup and epoch + 1 == self._warmup:
            self._restart_globals(data, rng)
        return float(total) / len(batches) + self._relational_and_kl(links)

    def _head_links(self, data: ObservedData, links: LinkData, b: int, rng) -> torch.Tensor:
        r"""The tempered link term :math:`\lambda\,\mathbb E_q[\log p(L\mid z)]` and the
        balance term :math:`\lambda N_a \gamma H[\bar q]` of a minibatch of ``b`` items,
        through the cluster head (:func:`~._head.head_link_term`), with gradients."""
        workers = self._workers()
        value = head_link_term(self.head_, data.obs, links, workers, b, self.head_balance, rng)
        return value * (self.link_weight * links.n_links)

    @torch.no_grad()
    def _restart_globals(self, data: ObservedData, rng: np.random.Generator) -> None:
        """End of the warm-up: restart q(π) and the NIW factors around the embedding the
        networks have learnt (:func:`~._init.globals_around`), at k-means++ picks among the
        items' recognition means or, with the cluster head, at its clusters."""
        emb = np.concatenate(
            [
                self.encoder_(data.obs[rows])[0].cpu().double().numpy()
                for rows in row_chunks(len(data.obs))
            ]
        )
        if self._head_used():  # a links-aware start: the head's clusters of the embedding
            heads = [torch.softmax(self.head_(data.obs[rows]), -1) for rows in row_chunks(len(emb))]
            centres = head_centres(emb, torch.cat(heads).cpu().double().numpy(), rng)
        else:
            centres = kmeans_plus_plus(emb, self.n_clusters, rng)
        self.dirichlet_, self.niw_ = globals_around(emb, centres, rng)

    def _global_step(self, resp, mean, second, n, b, links, rng, weights: bool) -> None:
        """Natural-gradient step of the globals from one batch. The statistics (NIW sums and
        the agreements of the sampled links) are formed on the batch's device and fetched in
        one copy, the only point per batch where the host waits for the GPU."""
        rho = float(self.global_learning_rate)
        on_device = list(niw_statistics(resp.double(), mean.double(), second.double()))
        if links is not None:
            chosen = link_minibatch(links, b, n, rng)
            on_device.append(links.agreement(self._resp_table, chosen))
        fetched = to_host(*on_device)
        stats = NIW(*fetched[:4])
        self.niw_ = natural_step(self.niw_, self._niw_prior, stats, rho, n / b)
        if weights:  # q(π) stays at its start during the warm-up (no component dies early)
            self.dirichlet_ = natural_step(  # the counts Σ_i r_ik
                (self.dirichlet_,), (self._dir_prior,), (stats.kappa,), rho, n / b
            )[0]
        if links is not None and (weights or not self._head_used()):
            self.worker_alpha_, self.worker_beta_ = worker_step(
                self._workers(), self.worker_prior, fetched[4], links, chosen, rho, self.link_weight
            )
        self._step += 1

    def _relational_and_kl(self, links: LinkData | None) -> float:
        r"""The part of :math:`\mathcal J` outside the items' terms: the tempered link term
        :math:`\lambda\mathcal L_\mathrm{rel}` at the table's q(z) and the KLs of the
        globals from their priors."""
        value = -float(niw_kl(self.niw_, self._niw_prior).sum())
        value -= float(dirichlet_kl(self.dirichlet_, self._dir_prior))
        if links is not None:
            weights, offsets = link_weights(self._workers(), links)
            (agreement,) = to_host(links.agreement(self._resp_table))
            value += self.link_weight * link_expected_log_likelihood(agreement, weights, offsets)
            value -= worker_kl(self._workers(), self.worker_prior)
        return value

    # --------------------------------------------------------------------------- results
    @torch.no_grad()
    def _posterior(self, data: ObservedData, sweeps: int = 1):
        """q(z) and E[x] of every item: local mean field over all items (with links, partners
        from the table) for ``sweeps`` passes at the final globals."""
        n = len(data.obs)
        size = max(self.batch_size, 256)
        batches = [np.arange(i, min(i + size, n)) for i in range(0, n, size)]
        means = torch.zeros((n, self.latent_dim), device=self._device)
        for _ in range(sweeps):
            for batch in batches:
                rows = to_device(batch, self._device)
                resp, e, _, J_rec, h_rec, _ = self._local(data.obs[rows], data.links, batch, rows)
                mean, *_ = gaussian_posterior(resp, e, J_rec, h_rec)
                self._resp_table[rows] = resp.double()
                means[rows] = mean
        resp, means = to_host(self._resp_table, means)
        return resp, means, self.dirichlet_ / self.dirichlet_.sum()

    def fit(self, X, links=None, item_ids=None) -> BayesSCDC:  # noqa: D102
        super().fit(X, links, item_ids)
        self._graph = None  # the recorded graph is of no use after the fit
        return self

    def _set_state(self, state: dict) -> None:
        """As the base's, with the NIW factors (stored as plain tuples) typed again."""
        super()._set_state(state)
        self.niw_, self._niw_prior = NIW(*self.niw_), NIW(*self._niw_prior)
        self._graph = None

    @torch.no_grad()
    def _predict_new(self, obs: torch.Tensor) -> np.ndarray:
        return np.concatenate(
            [self._local(obs[rows])[0].cpu().numpy() for rows in row_chunks(len(obs))]
        )

    def _worker_table(self, links: LinkData | None) -> pd.DataFrame:
        return worker_table(None if links is None else self._workers(), links, self.credible_level)
