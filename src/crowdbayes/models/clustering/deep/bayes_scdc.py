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
Eq. 9). For a minibatch of items, the local mean field alternates Eq. 12 (q(x_i)) and Eq. 14
(q(z_i), with the link messages) ``local_iterations`` times
(:mod:`crowdbayes.models.clustering.deep.meanfield`); the partners' :math:`r_j` come from a
table of every item's latest :math:`q(z_j)` (asynchronous coordinate ascent, as in stochastic
VMP on the relational model). The globals
(:mod:`crowdbayes.models.clustering.deep._conjugate`) then take a stochastic natural-gradient
step (Eq. 17, first term) with step size ``global_learning_rate`` :math:`\rho`: the Dirichlet
and NIW factors from the minibatch statistics scaled by :math:`N/|B|`, the Beta factors from
:math:`|S| = N_a|B|/N` links sampled uniformly and scaled by :math:`N_a/|S|` (§2.3, §3.2).
The networks follow Adam on the reparameterised objective

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
field of the training batches is replayed from a recorded CUDA graph
(:mod:`crowdbayes.models.clustering.deep._cuda_graph`), since its many small operations would
otherwise be bound by the cost of launching them.

Departures from the paper, needed for the fits to work here: (a) a warm-up
(``warmup_epochs``): the latent prior terms of the networks' loss are annealed in, q(π) is
held, and at the end q(π) and the NIW factors restart around the
learnt embedding (k-means++ centres); (b) ``global_learning_rate`` 0.05 instead of the paper's
1e-4; (c) restarts (``n_init``), each ending in its best-bound state, the best bound kept;
(d) an optional power ``link_weight`` on the link likelihood (default 1, the paper's);
(e) collapse detection and recovery (below).

Collapse (issue 19). A fit could end with every item in one or two clusters, against the
links: while the embedding is still unformed most items share a cluster, the Beta factors
then learn that workers say "must-link" to a third of same-cluster pairs (α ≈ 0.3, the links
become uninformative), and the mixture settles there — a self-consistent but wrong fixed point
(pinwheel at K = 15, latent x of 8 dimensions: accuracy 0.20–0.24 on seeds 0–2). Holding the
Beta factors during the warm-up, as q(π) is, kept α at its start there but did not stop the
collapse, and cost MNIST accuracy (seed 0: 0.807 → 0.700), so they are not held. Now (i) the
defaults below let the networks form the embedding before the mixture restarts on it;
(ii) every restart tracks its bound per epoch and ends in the state after
its best epoch from the end of the warm-up on, so longer training never ends below the best
earlier state (a fall of the bound by more than 10% is reported); (iii) a restart whose
clusters put at least half of the item pairs that the links' majority calls cannot-link into
one cluster has collapsed (:func:`~._base.collapse_report`), and up to ``collapse_restarts``
further restarts run; the best bound among those that did not collapse is kept, with a
:class:`~._base.CollapseWarning` that says what happened. The defaults (``learning_rate``
5e-3, ``warmup_epochs`` 10, ``n_init`` 3) were chosen on the pinwheel through the command line
(``benchmarks/results/cluster_defaults.md``): with Adam at 1e-3 and a warm-up of 5 epochs
the networks have not formed the arms when the mixture restarts on them, and the result
depended on the number of epochs (0.35 accuracy after 20, 40 or 60 epochs, 0.99 after 100).

With a Gaussian decoder the observations are standardised (one shift per feature, one
overall scale), which changes the objective only by a constant.

Components whose posterior weight falls to ~0 get no items; ``n_clusters_used_`` counts the
clusters that are the MAP cluster of at least one item.

Sparse links: the cluster head (``cluster_head``, issue 19)
----------------------------------------------------------
With the paper's family every item has its own q(z_i), tied to its features only through the
mixture in the latent space. When the links are sparse and describe a grouping that the
features do not show (the CMU faces by pose, 3–7 links per image), the fit collapses
(NMI 0.009 / 0.051 at 1,000 / 2,000 links, seed 0). The mechanism, traced per epoch
(``benchmarks/results/cluster_defaults.md`` §7): the table of q(z_j) starts uniform, so in the
first natural-gradient steps every link has agreement :math:`\bar s_l = 1/K` and the Beta
factors move to :math:`\mathbb E[\alpha] \approx` the share of must-links (0.2–0.4) and
:math:`\mathbb E[\beta] \approx 0.7`; there
:math:`\mathbb E[w_l] = \mathbb E\log\frac{\alpha}{1-\beta} + \mathbb E\log\frac{\beta}
{1-\alpha} \approx 0`, a cannot-link carries no evidence, the mixture follows the
features alone and one component takes all of π (β then sits at exactly 0.5) — the
self-consistent fixed point of §2 of that report. Tempering the links up (λ = 30) does not
help while the per-item q(z_i) can satisfy the links without the features.

``cluster_head="on"`` replaces the per-item categorical factor by an amortised one, a
discriminative head :math:`g(o;\phi_z)` (an MLP of the same widths) as in SCDC (§2.3):

.. math::
    q(z_i) = \mathrm{Cat}(\mathrm{softmax}\, g(o_i;\phi_z)),\qquad
    q(x_i) \text{ by Eq. 12 given } q(z_i),

and the networks maximise the same objective :math:`\mathcal J` (a lower bound for every
:math:`\phi_z`, since the family is a subset of the mean field), now differentiated through
:math:`q(z)` too: :math:`\mathbb E_{q}[\log p(x_i\mid z_i) + \log p(z_i\mid\pi)] +
H[q(z_i)]` pulls the head towards the mixture's posterior, and the tempered link term

.. math::
    \lambda\,\mathcal L_\mathrm{rel} = \lambda \sum_l \big(q(z_{i_l})^\top q(z_{j_l})\,
    \mathbb E[w_l] + \mathbb E[c_l]\big)

(estimated on :math:`|S| = N_a|B|/N` links per minibatch, scaled by :math:`N_a/|S|`) makes the
head explain the links through the features, so that links on a few images generalise to the
unlinked and lightly linked ones — the inductive bias that lets SCDC use sparse links
(Luo et al. 2018, §2.3; amortised inference, Kingma & Welling 2014). Links no longer enter
q(z) as the messages of Eq. 14 (the head alone carries them), which removes the per-item
shortcut. Two further changes apply with the head only: the workers' Beta factors are held at
``worker_init`` during the warm-up (as q(π): while the annealing weight is below 1), until the
head's q(z) has formed (updated from a uniform
q(z) they fall to chance as above), and at the end of the warm-up the components restart at
the head's clusters of the embedding (:func:`head_centres`, a links-aware start) instead of
k-means++ picks. Everything else (the NIW, Dirichlet and Beta factors by natural gradients,
restarts, collapse detection) is unchanged.

*Balance.* Trained on the link term alone the head can merge groups early: with half of the
pairs same-pose (the faces' balanced protocol), two groups satisfy every must-link and two
thirds of the cannot-links, and on some seeds every restart settled on two clusters of the four
poses (NMI 0.38–0.48) while the Beta factors and q(π) were still held. The networks' loss
therefore adds, with the head, the entropy of the head's *mean* cluster distribution over a
uniform sample of items,

.. math::
    \lambda N_a\,\gamma\, H[\bar q], \qquad \bar q = \tfrac1{|R|}\textstyle\sum_{i\in R}
    \mathrm{softmax}\, g(o_i;\phi_z),

(``head_balance`` γ = 0.5, per link like the link term; :math:`|R| = 2|S|` items per
minibatch): the marginal-entropy half of the mutual information between items and clusters
that regularised information maximisation uses for discriminative clustering (Krause, Perona
& Gomes 2010; the conditional-entropy half is already in :math:`\mathcal J`). It shapes the
head's training only: the bound that picks the state and the restart is :math:`\mathcal J`.

Measured (``benchmarks/results/cluster_faces.md``, ``cluster_defaults.md`` §7–8): on the faces
with SCDC's settings (λ = 30, Adam 3e-3, 10 restarts) mean NMI over seeds 0–4 0.735 / 0.854 at
1,000 / 2,000 links (SCDC 0.642 / 0.852; without the balance term below 0.642 / 0.845); with
the balanced protocol 0.720 / 0.867 (SCDC 0.528 / 0.643; without the balance term 0.593 /
0.694); at the class default λ = 1 with 3 restarts 0.581 (seed 0, 1,000 links, before the
balance term).
On three well-separated blobs with 3.6 links per item (the collapse tests' data, 4 seeds, one
restart) the head at λ = 1 scored 0.61–0.82 (mean 0.69) against 0.60–0.98 (mean 0.80)
without it, and 0.83–1.00 (mean 0.93) at λ = 10. Hence the default stays ``"off"`` (the
paper's family; the pinwheel, MNIST and every earlier measurement are unchanged), and
``"auto"`` turns the head on when the linked items have fewer than
:data:`SPARSE_LINKS_PER_ITEM` (10) links each on average (faces 3.3 / 6.4; the command line's
pinwheel 19.6 per annotated point; MNIST tasks in the real scheme about 35). Use it with a
tempered link likelihood (``link_weight`` 10–30).

*Sorted tasks.* Dense links from workers who sort a task's items (every pair linked) need the
head for a different reason: with per-item q(z) an image that one worker misplaced gets ~35
agreeing links and nothing can move it, while the head must explain them through the image,
which classes it with the images it resembles. On the MNIST test images with tasks in the real
scheme (``benchmarks/results/cluster_mnist_tasks_head_gpu.md``, seeds 0–2, K = 50,
``link_weight`` 1, Adam 1e-3, 60 epochs, 3 restarts) the head with γ = 0.05 has per-task NMI
0.9879 against the workers' own groupings' 0.9857 (above on every seed), placing right 46 of
the 51 (task, image) slots the workers misgroup on average but misplacing about 59 they had
right; accuracy on all images 0.946 (without the head, ``link_weight`` 0.5, 30 epochs: per-task
0.9818, accuracy 0.871). On held-out seeds 3–4 (``cluster_mnist_tasks_head_cpu.md``): 0.9865
against 0.9737, with fewer misgrouped slots than the workers (68 against 101).
γ must be small when K is well above the number of groups: the
marginal entropy is largest with every component used, and at the default 0.5 the images
spread over all 50 (per-task NMI 0.820, seed 0, one 30-epoch restart); at γ = 0 groups merge
(9–10 clusters, per-task 0.959); 0.1 and 0.2 gave 0.962 and 0.855 after 30 epochs
(``cluster_mnist_tasks_notes.md``).

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS. (Eqs. 5–17, Algorithm 1, Appendix B; §2.3 for the amortised q(z).)
Kingma, D. P. & Welling, M. (2014). Auto-encoding variational Bayes. ICLR.
Krause, A., Perona, P. & Gomes, R. G. (2010). Discriminative clustering by regularized
information maximization. NeurIPS.
Johnson, M. J., Duvenaud, D., Wiltschko, A., Adams, R. P. & Datta, S. R. (2016). Composing
graphical models with neural networks for structured representations and fast inference.
NeurIPS.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd
import torch

from ....annotators.two_coin import (
    link_expected_log_likelihood,
    link_message_weights,
    two_coin_expectations,
    two_coin_kl,
    two_coin_statistics,
)
from ....base import (
    NON_NEGATIVE,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    Interval,
    Options,
    PositivePair,
)
from ....maths import dirichlet_expected_log, dirichlet_kl, dirichlet_marginal_summary
from ._base import DeepClusteringBase
from ._conjugate import (
    NIW,
    NIWExpectations,
    natural_step,
    niw_expected_stats,
    niw_from_standard,
    niw_kl,
    niw_statistics,
)
from ._cuda_graph import MeanFieldGraph
from ._data import LinkData, ObservedData, csr_rows, row_chunks, to_device, to_host
from ._networks import Decoder, GaussianHead, mlp
from .meanfield import (
    gaussian_expected_loglik,
    gaussian_posterior,
    local_meanfield,
    table_messages,
)

__all__ = ["BayesSCDC"]


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


#: ``cluster_head="auto"`` uses the head when the linked items have fewer links each than this
#: on average (faces by pose: 3.3 at 1,000 links, 6.4 at 2,000; the pinwheel of the command
#: line: 19.6; MNIST tasks in the real scheme: 35): benchmarks/results/cluster_defaults.md §7
SPARSE_LINKS_PER_ITEM = 10.0


def links_per_linked_item(links: LinkData) -> float:
    """Mean number of links of the items that at least one link names."""
    linked = np.unique(np.concatenate([links.left, links.right])).size
    return 2.0 * links.n_links / max(linked, 1)


def sparse_links(links: LinkData | None) -> bool:
    """Whether there are links and the linked items have fewer than
    :data:`SPARSE_LINKS_PER_ITEM` links each on average."""
    return links is not None and links_per_linked_item(links) < SPARSE_LINKS_PER_ITEM


def head_centres(emb: np.ndarray, resp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Component means from the head's clustering of the embedding: the ``resp``-weighted
    mean of the rows of ``emb`` per cluster, or a k-means++ pick for clusters holding less
    than one item's weight."""
    mass = resp.sum(axis=0)
    centres = (resp.T @ emb) / np.maximum(mass, 1e-12)[:, None]
    empty = mass < 1.0
    if empty.any():
        centres[empty] = _kmeanspp(emb, int(empty.sum()), rng)
    return centres


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
        Adam step size of the networks (5e-3; 1e-3 left the pinwheel's arms unformed after
        20 epochs). For large networks on images use 1e-3: on MNIST (MLP 500×500) 5e-3
        gave 0.662 accuracy against 0.700 at 1e-3 (seed 0, both with an intermediate version
        of this code; ``benchmarks/results/cluster_defaults.md``).
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
        clusters put at least half of the pairs the links call cannot-link together; module
        docstring). A :class:`~._base.CollapseWarning` says what happened. Without links
        nothing is detected.
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
    cluster_head : {"off", "on", "auto"}
        Whether q(z) is the paper's per-item factor with link messages ("off", the default)
        or the output of a discriminative head over the observations that feeds the link
        likelihood ("on"; module docstring, "Sparse links"); "auto" turns the head on when
        the linked items have fewer than 10 links each on average. For sparse links (the
        faces: 3–7 per image) use "on" or "auto" with ``link_weight`` 10–30.
    head_balance : float
        With the cluster head only: weight γ of the entropy of the head's mean cluster
        distribution in the networks' loss, per link and relative to the tempered link term
        (module docstring, "Sparse links"); 0 turns it off.
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
        "auto" when the links are sparse (:func:`sparse_links`)."""
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
        reach q(z) through the head's training, :meth:`_head_links`, not as messages); the
        logits, with their graph, are returned last (None without the head)."""
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
        r"""The tempered link term :math:`\lambda\,\mathbb E_q[\log p(L\mid z)]` estimated on
        :math:`|S| = N_a|B|/N` links drawn uniformly, scaled by :math:`N_a/|S|`, with the
        q(z) of both ends computed afresh by the cluster head (with gradients) and
        :math:`\mathbb E[w_l], \mathbb E[c_l]` from the current Beta factors; plus
        :math:`\lambda N_a \gamma H[\bar q]` (``head_balance``), the balance term."""
        size = min(max(int(round(links.n_links * b / len(data.obs))), 1), links.n_links)
        chosen = rng.choice(links.n_links, size=size, replace=False)
        ends = to_device(np.concatenate([links.left[chosen], links.right[chosen]]), self._device)
        resp = torch.softmax(self.head_(data.obs[ends]), dim=-1)
        weights, offsets = link_message_weights(
            two_coin_expectations(self.worker_alpha_, self.worker_beta_),
            links.worker[chosen],
            links.labels[chosen],
        )
        weights = to_device(weights, self._device, torch.float32)
        agreement = (resp[:size] * resp[size:]).sum(-1)
        value = (agreement @ weights + float(offsets.sum())) / size
        if self.head_balance:
            value = value + self.head_balance * self._head_marginal_entropy(data, 2 * size, rng)
        return value * (self.link_weight * links.n_links)

    def _head_marginal_entropy(self, data: ObservedData, size: int, rng) -> torch.Tensor:
        r""":math:`H[\bar q]`, :math:`\bar q` the mean of the head's q(z) over ``size`` items
        drawn uniformly (with gradients): the balance term of the module docstring."""
        rows = rng.choice(len(data.obs), size=min(size, len(data.obs)), replace=False)
        mean = torch.softmax(self.head_(data.obs[to_device(rows, self._device)]), -1).mean(0)
        return -(mean * torch.log(mean.clamp_min(1e-30))).sum()

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
        if self._head_used():  # a links-aware start: the head's clusters of the embedding
            heads = [torch.softmax(self.head_(data.obs[rows]), -1) for rows in row_chunks(len(emb))]
            centres = head_centres(emb, torch.cat(heads).cpu().double().numpy(), rng)
        else:
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
        if links is not None and (weights or not self._head_used()):
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
