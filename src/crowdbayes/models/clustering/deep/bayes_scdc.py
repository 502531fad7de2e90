r"""BayesSCDC: fully Bayesian semi-crowdsourced deep clustering (Luo et al. 2018, §3).

Model
-----
.. math::
    \pi \sim \mathrm{Dir}(\alpha_0),\quad (\mu_k, \Sigma_k) \sim \mathrm{NIW}(m, \kappa, S, \nu),
    \quad z_i \sim \mathrm{Cat}(\pi),\quad x_i \mid z_i \sim \mathcal N(\mu_{z_i},
    \Sigma_{z_i}),\quad o_i \mid x_i \sim p(o_i \mid x_i; \gamma),

with two-coin workers :math:`\alpha_m, \beta_m \sim \mathrm{Beta}` judging pairs
(:mod:`crowdbayes.annotators.two_coin`) and a neural decoder :math:`p(o\mid x;\gamma)`
(Gaussian or Bernoulli).

Inference (structured VAE, Johnson et al. 2016)
-----------------------------------------------
A recognition network gives every item a Gaussian potential
:math:`\psi(x_i) = \langle r(o_i;\phi), t(x_i)\rangle` (diagonal precision ``J``, ``h = J·mean``,
Eq. 9). For a minibatch of items, local mean field alternates (``local_iterations`` times)

* Eq. 12: :math:`q(x_i) = \mathcal N` with precision :math:`\sum_k r_{ik}\mathbb E[\Sigma_k^{-1}]
  + J_i` and linear term :math:`\sum_k r_{ik}\mathbb E[\Sigma_k^{-1}\mu_k] + h_i`;
* Eq. 14: :math:`\log r_{ik} = \mathbb E\log\pi_k + \mathbb E\log\mathcal N(x_i\mid\mu_k,
  \Sigma_k) + \sum_{l \ni i}\mathbb E[w_l]\, r_{j(l)k}` + const, the link messages with the
  weights of :func:`~crowdbayes.annotators.two_coin.link_message_weights`.

The partners' :math:`r_j` come from a table of every item's latest :math:`q(z_j)`: partners in the
minibatch are updated live, the others keep the belief from their last visit (asynchronous
coordinate ascent, as in stochastic VMP on the relational model). The globals then take a
stochastic natural-gradient step (Eq. 17, first term) with step size ``global_learning_rate``
:math:`\rho`: the Dirichlet and NIW factors from the minibatch statistics scaled by
:math:`N/|B|`, the Beta factors from :math:`|S| = N_a|B|/N` links sampled uniformly and scaled
by :math:`N_a/|S|` (§2.3, §3.2). The networks follow Adam on the reparameterised objective

.. math::
    \mathcal J = \tfrac{N}{|B|}\sum_{i\in B}\mathbb E_{q^*(x_i)}[\log p(o_i\mid x_i)]
    + \mathbb E_{q^*}[\log p(x_i\mid z_i) + \log p(z_i\mid\pi)] + H[q^*(x_i)] + H[q^*(z_i)]
    + \mathcal L_\mathrm{rel} - \mathrm{KL}_\mathrm{globals},

differentiated through :math:`q^*(x)` (which depends on :math:`\phi` via the potentials);
:math:`q^*(z)` is held fixed, since the objective is stationary in it (Eq. 15).
``history_`` holds :math:`\mathcal J` per epoch (minibatch estimates of the item part averaged
over the epoch, the link part and the KLs at the end of the epoch).

Computation: the table of the items' :math:`q(z_j)` lives on the model's device, so that the
link messages (a sparse product per local iteration) never leave it, and the host waits for a
GPU once per minibatch, to fetch the statistics of the global step. On CUDA the local mean
field of the training batches is replayed from a recorded CUDA graph (:class:`_MeanFieldGraph`),
since its many small operations would otherwise be bound by the cost of launching them.

Departures from the paper, needed for the fits to work here: (a) a warm-up
(``warmup_epochs``): the latent prior terms of the networks' loss are annealed in, q(π) is
held, and at the end q(π) and the NIW factors restart around the learnt embedding (k-means++
centres); (b) ``global_learning_rate`` 0.05 instead of the paper's 1e-4; (c) restarts
(``n_init``), keeping the best objective (averaged over the last three epochs); (d) an
optional power ``link_weight`` on the link likelihood (default 1, the paper's). With a Gaussian
decoder the observations are standardised (one shift per feature, one overall scale), which
changes the objective only by a constant.

Components whose posterior weight falls to ~0 get no items; ``n_clusters_used_`` counts the
clusters that are the MAP cluster of at least one item.

Limitation: every item has its own q(z), tied to its features only through the mixture in the
latent space. When the links are sparse and describe a grouping that the features do not
show (the CMU faces by pose, about three links per image), the local beliefs satisfy the links
on their own (estimated α ≈ 1) with a grouping unrelated to the features, or settle on workers
judged worse than random; :class:`SCDC`, whose q(z | o) is one network over the features,
has to explain the links through the features and is the model to use there
(``benchmarks/cluster_faces.py``).

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS. (Eqs. 5–17, Algorithm 1, Appendix B.)
Johnson, M. J., Duvenaud, D., Wiltschko, A., Adams, R. P. & Datta, S. R. (2016). Composing
graphical models with neural networks for structured representations and fast inference.
NeurIPS.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import torch

from ...._math import dirichlet_expected_log, dirichlet_kl
from ....annotators.two_coin import (
    link_expected_log_likelihood,
    link_message_weights,
    two_coin_expectations,
    two_coin_kl,
    two_coin_statistics,
)
from ...labels.bayesian_dawid_skene import dirichlet_marginal_summary
from ._base import (
    DeepClusteringBase,
    LinkData,
    ObservedData,
    csr_rows,
    row_chunks,
    to_device,
    to_host,
)
from ._conjugate import (
    NIW,
    NIWExpectations,
    natural_step,
    niw_expected_stats,
    niw_from_standard,
    niw_kl,
    niw_statistics,
)
from ._networks import Decoder, GaussianHead

__all__ = ["BayesSCDC", "local_meanfield", "gaussian_expected_loglik", "gaussian_posterior"]

_LOG_2PI = float(np.log(2 * np.pi))


# ------------------------------------------------------------------------ local pieces
def gaussian_expected_loglik(
    e: NIWExpectations, mean: torch.Tensor, second: torch.Tensor
) -> torch.Tensor:
    r""":math:`\mathbb E\log\mathcal N(x_i\mid\mu_k,\Sigma_k)` under q(x_i) (moments ``mean``
    (n,d), ``second`` (n,d,d)) and the NIW factors (torch tensors); returns (n, K)."""
    d = mean.shape[-1]
    return (
        -0.5 * torch.einsum("kij,nji->nk", e.prec, second)
        + mean @ e.prec_mean.T
        - 0.5 * e.mean_prec_mean
        + 0.5 * e.logdet_prec
        - 0.5 * d * _LOG_2PI
    )


def gaussian_posterior(resp, e: NIWExpectations, J_rec, h_rec):
    """Eq. 12: q(x_i) from responsibilities and the recognition potential. Returns ``(mean,
    second moment, Cholesky factor L of the precision, entropy)``.

    ``torch.linalg.cholesky`` reads its error flags on the host, which on a GPU waits for it in
    every local iteration; the precision is positive definite by construction (a positive
    diagonal plus a nonnegative mix of E[Σ_k⁻¹]), so ``cholesky_ex`` checks only where that is
    free (CPU). The covariance :math:`L^{-\top}L^{-1}` and the mean come from one batched
    triangular solve and products, plain cuBLAS work that the CUDA graph of the local mean
    field records."""
    precision = torch.einsum("nk,kij->nij", resp, e.prec) + torch.diag_embed(J_rec)
    linear = resp @ e.prec_mean + h_rec
    chol, _ = torch.linalg.cholesky_ex(precision, check_errors=precision.device.type == "cpu")
    eye = torch.eye(chol.shape[-1], dtype=chol.dtype, device=chol.device).expand_as(chol)
    chol_inv = torch.linalg.solve_triangular(chol, eye, upper=False)
    cov = chol_inv.mT @ chol_inv
    mean = (cov @ linear.unsqueeze(-1)).squeeze(-1)
    second = cov + mean.unsqueeze(-1) * mean.unsqueeze(-2)
    d = mean.shape[-1]
    log_diag = torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1)
    entropy = 0.5 * d * (1.0 + _LOG_2PI) - log_diag
    return mean, second, chol, entropy


def local_meanfield(e, log_pi, J_rec, h_rec, n_iter: int, messages=None, track=False):
    """Alternate Eqs. 12 and 14 ``n_iter`` times from a start that sees the recognition
    potential alone. ``messages(resp) -> (n, K)`` returns the link messages given the batch's
    current responsibilities (and stores them for the partners). Returns ``resp`` (n, K) and,
    with ``track``, the local surrogate bound after every round."""
    mean0 = h_rec / J_rec
    second0 = torch.diag_embed(1.0 / J_rec) + mean0.unsqueeze(-1) * mean0.unsqueeze(-2)
    logits = log_pi + gaussian_expected_loglik(e, mean0, second0)
    if messages is not None:
        logits = logits + messages(None)
    resp = torch.softmax(logits, dim=-1)
    if messages is not None:
        messages(resp)
    bounds = []
    for _ in range(n_iter):
        mean, second, _, entropy = gaussian_posterior(resp, e, J_rec, h_rec)
        expected = gaussian_expected_loglik(e, mean, second)
        logits = log_pi + expected
        if messages is not None:
            logits = logits + messages(resp)
        resp = torch.softmax(logits, dim=-1)
        if messages is not None:
            messages(resp)
        if track:
            bounds.append(_local_bound(resp, e, log_pi, J_rec, h_rec))
    return resp, bounds


def _local_bound(resp, e, log_pi, J_rec, h_rec) -> float:
    r"""Surrogate local bound of one batch without links: :math:`\sum_i \mathbb E[\log p(z_i)
    + \log p(x_i\mid z_i) + \psi(x_i)] + H[q(z_i)] + H[q(x_i)]` (up to the normaliser of
    :math:`\psi`)."""
    mean, second, _, entropy = gaussian_posterior(resp, e, J_rec, h_rec)
    log_resp = torch.log(resp.clamp_min(1e-30))
    potential = (h_rec * mean).sum(-1) - 0.5 * (J_rec * torch.diagonal(second, 0, -2, -1)).sum(-1)
    z_part = (resp * (log_pi + gaussian_expected_loglik(e, mean, second) - log_resp)).sum(-1)
    return float((z_part + potential + entropy).sum())


def table_messages(table: torch.Tensor, rows: torch.Tensor, product):
    """A ``messages`` callback for :func:`local_meanfield`: stores the batch's current q(z)
    at ``rows`` of the table of all items' beliefs (partners in the batch are updated live)
    and returns ``product(table)``, the (|B|, K) link messages, in float32."""

    def messages(resp):
        if resp is not None:
            table[rows] = resp.detach().to(table.dtype)
        return product(table).to(torch.float32)

    return messages


def padded_product(partners: torch.Tensor, weights: torch.Tensor):
    """``table ↦ Σ_slot weights[i, slot] · table[partners[i, slot]]``: the link messages from
    padded (|B|, max degree) entries (:meth:`LinkData.padded_entries`), a product whose shapes
    do not change from batch to batch, unlike a sparse matrix's."""
    return lambda table: (weights.unsqueeze(-1) * table[partners]).sum(1)


class _MeanFieldGraph:
    """CUDA: :func:`local_meanfield` of one batch size, recorded once as a CUDA graph and
    replayed for every batch.

    Run eagerly, each of the ~40 small tensor operations of a local iteration costs a kernel
    launch whose host-side cost exceeds its run time, so the GPU idles; a replay issues them
    all at once. Before each replay the inputs are copied into the buffers the graph reads:
    the globals' expectations, the recognition potentials, and for the link messages the
    batch's rows and padded link entries (the table of beliefs is read and written in place).
    """

    def __init__(self, inputs, n_iter: int, table=None, rows=None, entries=None) -> None:
        """Run the mean field once on the first batch's ``inputs`` ``(e, log_pi, J_rec,
        h_rec)`` (on a side stream, which also creates the library handles and workspaces the
        recording needs; ``self.first`` holds its q(z)), then record it. ``table``, ``rows``
        and ``entries`` (padded partners and weights) give the link messages, if any."""
        e, *rest = inputs
        self._inputs = [t.clone() for t in (*e, *rest)]
        messages = None
        if table is not None:
            self._rows = rows.clone()
            self._entries = [t.clone() for t in entries]
            messages = table_messages(table, self._rows, padded_product(*self._entries))

        def run():
            e = NIWExpectations(*self._inputs[:4])
            return local_meanfield(e, *self._inputs[4:], n_iter, messages)[0]

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            first = run()
        torch.cuda.current_stream().wait_stream(side)
        self.first = first.clone()
        self._graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self._graph):
            self._resp = run()

    def __call__(self, inputs, rows=None, entries=None) -> torch.Tensor:
        """q(z) of a batch (of the recorded size) from its inputs, as in :meth:`__init__`."""
        e, *rest = inputs
        for buffer, value in zip(self._inputs, (*e, *rest), strict=True):
            buffer.copy_(value)
        if entries is not None:
            self._rows.copy_(rows)
            for buffer, value in zip(self._entries, entries, strict=True):
                buffer.copy_(value)
        self._graph.replay()
        return self._resp.clone()


def _kmeanspp(points: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding (Arthur & Vassilvitskii 2007): ``k`` rows of ``points``, each drawn
    with probability proportional to its squared distance to the nearest row already drawn."""
    chosen = [int(rng.integers(len(points)))]
    dist = ((points - points[chosen[0]]) ** 2).sum(axis=1)
    for _ in range(1, k):
        total = dist.sum()
        nxt = (
            int(rng.integers(len(points)))
            if total <= 0
            else int(rng.choice(len(points), p=dist / total))
        )
        chosen.append(nxt)
        dist = np.minimum(dist, ((points - points[nxt]) ** 2).sum(axis=1))
    return points[chosen]


# -------------------------------------------------------------------------------- model
class BayesSCDC(DeepClusteringBase):
    r"""Fully Bayesian semi-crowdsourced deep clustering (Luo et al. 2018, §3).

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
        Adam step size of the networks.
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
        centres). Without it the recognition network collapses onto the prior (posterior
        collapse) and the components starve before the embedding has formed. 0 switches
        this off; at most half of ``epochs`` is used.
    n_init : int
        Restarts (each from its own random stream); the one with the highest final objective
        is kept (the paper picks the best of 10 initialisations).
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
        partition. On MNIST with tasks simulated in the real scheme (about 35 links per
        annotated image) λ = 0.5 raised accuracy from 0.807 to 0.870 over three held-out seeds
        (``benchmarks/results/cluster_mnist_tempered.md``).
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
        The objective :math:`\mathcal J` per epoch.
    """

    _name = "BayesSCDC"

    def __init__(
        self,
        n_clusters: int = 15,
        latent_dim: int = 2,
        hidden: tuple[int, ...] = (40, 40),
        decoder: str = "gaussian",
        epochs: int = 20,
        batch_size: int = 50,
        learning_rate: float = 1e-3,
        global_learning_rate: float = 0.05,
        local_iterations: int = 10,
        warmup_epochs: int = 5,
        n_init: int = 1,
        dirichlet_prior: float | None = None,
        niw_kappa: float = 0.5,
        worker_prior: tuple[float, float] = (1.0, 1.0),
        worker_init: tuple[float, float] = (10.0, 1.0),
        link_weight: float = 1.0,
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
        self.dirichlet_prior = dirichlet_prior
        self.niw_kappa = niw_kappa
        self.worker_prior = worker_prior
        self.worker_init = worker_init
        self.link_weight = link_weight
        self.credible_level = credible_level
        self.device = device
        self.random_state = random_state
        self.progress = progress

    # -------------------------------------------------------------------------- checks
    def _check_params(self) -> None:
        self._check_common_params()
        if not 0 < self.global_learning_rate <= 1:
            raise ValueError(
                f"global_learning_rate must lie in (0, 1]; got {self.global_learning_rate!r}"
            )
        if not (isinstance(self.local_iterations, int) and self.local_iterations >= 1):
            raise ValueError(
                f"local_iterations must be a positive integer; got {self.local_iterations!r}"
            )
        if self.dirichlet_prior is not None and not self.dirichlet_prior > 0:
            raise ValueError(f"dirichlet_prior must be positive; got {self.dirichlet_prior!r}")
        if not self.niw_kappa > 0:
            raise ValueError(f"niw_kappa must be positive; got {self.niw_kappa!r}")
        for name in ("worker_prior", "worker_init"):
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != (2,) or not np.all(value > 0):
                raise ValueError(
                    f"{name} must be two positive numbers; got {getattr(self, name)!r}"
                )
        if not 0 < self.credible_level < 1:
            raise ValueError(f"credible_level must lie in (0, 1); got {self.credible_level!r}")

    # ---------------------------------------------------------------------------- setup
    def _build(self, data: ObservedData, rng: np.random.Generator) -> None:
        K, d = self.n_clusters, self.latent_dim
        n, n_obs = data.obs.shape
        self.encoder_ = GaussianHead(n_obs, self._hidden, d, logvar_init=-4.0).to(self._device)
        self.decoder_ = Decoder(d, self._hidden, n_obs, self.decoder).to(self._device)
        params = list(self.encoder_.parameters()) + list(self.decoder_.parameters())
        fused = True if self._device.type == "cuda" else None  # one kernel for all parameters
        self._optimizer = torch.optim.Adam(params, lr=self.learning_rate, fused=fused)
        kappa0 = float(self.niw_kappa)
        eye = np.eye(d)
        self._niw_prior = niw_from_standard(
            np.zeros((1, d)), [kappa0], ((d + kappa0) * eye)[None], [d + kappa0]
        )
        alpha0 = 0.05 / K if self.dirichlet_prior is None else float(self.dirichlet_prior)
        self._dir_prior = np.full(K, alpha0)
        # variational initialisation of Appendix B: α ~ U(1, 2), κ = 1, m ~ N(0, 3),
        # S = (d + κ) I, ν = d + κ
        self.dirichlet_ = rng.uniform(1.0, 2.0, size=K)
        self.niw_ = niw_from_standard(
            rng.normal(0.0, np.sqrt(3.0), size=(K, d)),
            np.ones(K),
            np.broadcast_to((d + 1.0) * eye, (K, d, d)),
            np.full(K, d + 1.0),
        )
        # q(z_j) of every item, on the device so that the link messages of the local
        # iterations never leave it (float64, as the link weights)
        self._resp_table = torch.full((n, K), 1.0 / K, dtype=torch.float64, device=self._device)
        if data.links is not None:
            m = data.links.n_workers
            self.worker_alpha_ = np.tile(np.asarray(self.worker_init, float), (m, 1))
            self.worker_beta_ = self.worker_alpha_.copy()
        self._step = 0
        self._graph = None  # recorded at the first CUDA batch (it holds this restart's table)

    def _globals_torch(self) -> tuple[NIWExpectations, torch.Tensor]:
        """E-statistics of the NIW factors and E[log π] as float32 tensors, sent in one copy."""
        arrays = (*niw_expected_stats(self.niw_), dirichlet_expected_log(self.dirichlet_))
        flat = to_device(np.concatenate([a.ravel() for a in arrays]), self._device, torch.float32)
        chunks = flat.split([a.size for a in arrays])
        parts = [t.view(a.shape) for t, a in zip(chunks, arrays, strict=True)]
        return NIWExpectations(*parts[:4]), parts[4]

    def _link_weights(self, links: LinkData, link: np.ndarray) -> np.ndarray:
        """λ·E[w_l] of the links ``link`` under the current Beta factors (Eq. 14)."""
        weights, _ = link_message_weights(
            two_coin_expectations(self.worker_alpha_, self.worker_beta_),
            links.worker[link],
            links.labels[link],
        )
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
        """CUDA: q(z) of a training batch through the recorded :class:`_MeanFieldGraph`
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
            self._graph = _MeanFieldGraph(inputs, self.local_iterations, table, rows, entries)
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
        ``links``. ``replay``: through the CUDA graph (training batches, all of one size)."""
        mean_rec, logvar_rec = self.encoder_(obs)
        J_rec = torch.exp(-logvar_rec)
        h_rec = mean_rec * J_rec
        e, log_pi = self._globals_torch()
        inputs = (e, log_pi, J_rec.detach(), h_rec.detach())
        with torch.no_grad():
            if replay and self._graph is not False:
                resp = self._replay_meanfield(inputs, links, batch, rows)
            else:
                resp = self._eager_meanfield(inputs, links, batch, rows)
        return resp, e, log_pi, J_rec, h_rec

    def _epoch(self, data: ObservedData, rng: np.random.Generator, epoch: int) -> float:
        n = len(data.obs)
        links = data.links
        batches = self._minibatches(n, rng)
        total = torch.zeros((), dtype=torch.float64, device=self._device)
        cuda = self._device.type == "cuda"
        for batch in batches:
            rows = to_device(batch, self._device)
            obs = data.obs[rows]
            resp, e, log_pi, J_rec, h_rec = self._local(obs, links, batch, rows, replay=cuda)
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
            loss = -(recon + warm * (expected + entropy)).mean()
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

    @torch.no_grad()
    def _restart_globals(self, data: ObservedData, rng: np.random.Generator) -> None:
        """End of the warm-up: restart q(π) and the NIW factors around the embedding the
        networks have learnt (component means at k-means++ picks among the items' recognition
        means, each covariance the embedding's shrunk by K^(2/d)), so that no component starts
        far from the data and starves."""
        emb = np.concatenate(
            [
                self.encoder_(data.obs[rows])[0].cpu().double().numpy()
                for rows in row_chunks(len(data.obs))
            ]
        )
        K, d = self.n_clusters, self.latent_dim
        centres = _kmeanspp(emb, K, rng)
        cov = np.atleast_2d(np.cov(emb.T)) / K ** (2.0 / d) + 1e-6 * np.eye(d)
        nu = d + 1.0
        self.niw_ = niw_from_standard(
            centres, np.ones(K), np.broadcast_to(nu * cov, (K, d, d)), np.full(K, nu)
        )
        self.dirichlet_ = rng.uniform(1.0, 2.0, size=K)

    def _global_step(self, resp, mean, second, n, b, links, rng, weights: bool) -> None:
        """Natural-gradient step of the globals from one batch. The statistics (NIW sums and
        the agreements of the sampled links) are formed on the batch's device and fetched in
        one copy, the only point per batch where the host waits for the GPU."""
        rho = float(self.global_learning_rate)
        on_device = list(niw_statistics(resp.double(), mean.double(), second.double()))
        if links is not None:
            size = max(int(round(links.n_links * b / n)), 1)
            chosen = rng.choice(links.n_links, size=min(size, links.n_links), replace=False)
            on_device.append(links.agreement(self._resp_table, chosen))
        fetched = to_host(*on_device)
        stats = NIW(*fetched[:4])
        self.niw_ = natural_step(self.niw_, self._niw_prior, stats, rho, n / b)
        if weights:  # q(π) stays at its start during the warm-up (no component dies early)
            self.dirichlet_ = natural_step(  # the counts Σ_i r_ik
                (self.dirichlet_,), (self._dir_prior,), (stats.kappa,), rho, n / b
            )[0]
        if links is not None:
            agreement = fetched[4]
            a_counts, b_counts = two_coin_statistics(
                agreement, links.worker[chosen], links.labels[chosen], links.n_workers
            )
            prior = np.asarray(self.worker_prior, float)
            scale = self.link_weight * links.n_links / len(chosen)
            self.worker_alpha_ = natural_step(
                (self.worker_alpha_,), (prior,), (a_counts,), rho, scale
            )[0]
            self.worker_beta_ = natural_step(
                (self.worker_beta_,), (prior,), (b_counts,), rho, scale
            )[0]
        self._step += 1

    def _relational_and_kl(self, links: LinkData | None) -> float:
        value = -float(niw_kl(self.niw_, self._niw_prior).sum())
        value -= float(dirichlet_kl(self.dirichlet_, self._dir_prior))
        if links is not None:
            expected = two_coin_expectations(self.worker_alpha_, self.worker_beta_)
            weights, offsets = link_message_weights(expected, links.worker, links.labels)
            (agreement,) = to_host(links.agreement(self._resp_table))
            value += self.link_weight * link_expected_log_likelihood(agreement, weights, offsets)
            prior = np.asarray(self.worker_prior, float)
            value -= two_coin_kl(self.worker_alpha_, prior) + two_coin_kl(self.worker_beta_, prior)
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
                resp, e, _, J_rec, h_rec = self._local(data.obs[rows], data.links, batch, rows)
                mean, *_ = gaussian_posterior(resp, e, J_rec, h_rec)
                self._resp_table[rows] = resp.double()
                means[rows] = mean
        resp, means = to_host(self._resp_table, means)
        return resp, means, self.dirichlet_ / self.dirichlet_.sum()

    def fit(self, X, links=None, item_ids=None) -> BayesSCDC:  # noqa: D102
        super().fit(X, links, item_ids)
        self._graph = None  # the recorded graph is of no use after the fit
        return self

    @torch.no_grad()
    def _predict_new(self, obs: torch.Tensor) -> np.ndarray:
        return np.concatenate(
            [self._local(obs[rows])[0].cpu().numpy() for rows in row_chunks(len(obs))]
        )

    def _worker_table(self, links: LinkData | None) -> pd.DataFrame:
        columns = ["alpha", "alpha_sd", "alpha_lower", "alpha_upper"]
        columns += ["beta", "beta_sd", "beta_lower", "beta_upper", "n_links"]
        if links is None:
            return pd.DataFrame(columns=columns, index=pd.Index([], name="worker"))
        table = {}
        for name, params in (("alpha", self.worker_alpha_), ("beta", self.worker_beta_)):
            mean, sd, lower, upper, _ = dirichlet_marginal_summary(params, self.credible_level)
            table[name], table[f"{name}_sd"] = mean[:, 0], sd[:, 0]
            table[f"{name}_lower"], table[f"{name}_upper"] = lower[:, 0], upper[:, 0]
        table["n_links"] = np.bincount(links.worker, minlength=links.n_workers)
        return pd.DataFrame(table, index=pd.Index(links.worker_ids, name="worker"))
