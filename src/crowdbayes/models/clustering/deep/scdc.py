r"""SCDC: semi-crowdsourced deep clustering with point estimates (Luo et al. 2018, §2).

Model: :math:`z_i \sim \mathrm{Cat}(\pi)`, :math:`x_i \mid z_i \sim \mathcal N(\mu_{z_i},
\mathrm{diag}\,\sigma^2_{z_i})`, :math:`o_i \mid x_i \sim p(o_i \mid x_i;\gamma)` and two-coin
links :math:`p(L_l \mid z_i, z_j; \alpha_m, \beta_m)` (Eq. 1). The globals
:math:`\Theta = (\pi, \mu, \sigma, \alpha, \beta)` are point estimates.

Inference is amortised (§2.3): :math:`q(z_i \mid o_i) = \mathrm{Cat}(\pi(o_i;\phi))` and
:math:`q(x_i \mid z_i, o_i) = \mathcal N(\mu(z_i, o_i;\phi), \mathrm{diag}\,\sigma^2(z_i,
o_i;\phi))`; the lower bound sums over :math:`z_i` analytically (one pass of the decoder per
component, the cost that BayesSCDC avoids) and is estimated on a minibatch :math:`B` of items,
scaled by :math:`N/|B|`, and a minibatch :math:`S` of :math:`|S| = N_a|B|/N` links sampled
uniformly, scaled by :math:`N_a/|S|`, where a link contributes
:math:`\bar s_l w_l + c_l` with :math:`\bar s_l = q(z_i)^\top q(z_j)` (the weights of
:mod:`crowdbayes.annotators.two_coin` at point :math:`\alpha, \beta`). Everything, globals
included, follows Adam. As in :class:`BayesSCDC`, the prior terms are switched on gradually
over ``warmup_epochs`` so that the networks first learn an informative embedding.

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS. (Eqs. 1–4, §2.3.)
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F

from ....base import OPEN_UNIT
from ._base import DeepClusteringBase
from ._data import LinkData, ObservedData, row_chunks
from ._networks import Decoder, GaussianHead, mlp

__all__ = ["SCDC"]

_LOG_2PI = float(np.log(2 * np.pi))


def _link_log_lik(agreement, logit_alpha, logit_beta, worker, label):
    r""":math:`\log p(L \mid s) = s\,w + c` with point :math:`\alpha, \beta` (torch, so that
    gradients reach the worker parameters; the same algebra as
    :func:`~crowdbayes.annotators.two_coin.link_message_weights`)."""
    la, l1a = F.logsigmoid(logit_alpha[worker]), F.logsigmoid(-logit_alpha[worker])
    lb, l1b = F.logsigmoid(logit_beta[worker]), F.logsigmoid(-logit_beta[worker])
    weight = l1a - lb + label * (la - l1a + lb - l1b)
    offset = label * l1b + (1 - label) * lb
    return agreement * weight + offset


class _Encoder(nn.Module):
    """q(z | o) and q(x | z, o) for every z at once."""

    def __init__(self, n_obs: int, hidden: tuple[int, ...], K: int, d: int) -> None:
        super().__init__()
        self.K = K
        self.cluster = mlp(n_obs, hidden, K)
        self.latent = GaussianHead(n_obs + K, hidden, d, logvar_init=-4.0)

    def forward(self, obs: torch.Tensor):
        logits = self.cluster(obs)
        b = len(obs)
        onehot = torch.eye(self.K, device=obs.device).expand(b, -1, -1)
        inputs = torch.cat([obs.unsqueeze(1).expand(-1, self.K, -1), onehot], dim=-1)
        mean, logvar = self.latent(inputs)  # (b, K, d)
        return torch.log_softmax(logits, dim=-1), mean, logvar


class SCDC(DeepClusteringBase):
    r"""Semi-crowdsourced deep clustering with point-estimated globals (Luo et al. 2018, §2).

    Parameters are those of :class:`BayesSCDC` where they apply: ``n_clusters``,
    ``latent_dim``, ``hidden``, ``decoder``, ``epochs``, ``batch_size``, ``learning_rate``
    (Adam, networks and globals), ``warmup_epochs``, ``n_init``, ``collapse_restarts``,
    ``worker_init`` (starting α = β of every worker), ``link_weight``, ``device``,
    ``random_state``, ``progress``. Unlike BayesSCDC, a restart ends in its last state and
    restarts are ranked by their bound over the last three epochs (``_keep_best_bound``).
    ``link_weight`` λ tempers the relational term, :math:`\lambda\,\mathcal L_{\mathrm{rel}}`
    (a power likelihood :math:`p(L\mid z)^\lambda`; 1 is the paper's model). On the CMU faces
    by pose (624 images, a few links per image) the plain likelihood is too weak against the
    reconstruction term, which clusters by identity and lighting, and the objective of a
    restart says nothing about its NMI; λ = 30 lets the links decide and makes the
    objective rank restarts like their NMI (``benchmarks/cluster/cluster_faces.py``).

    Attributes
    ----------
    assignments_, probas_, embedding_, n_clusters_used_, history_
        As in :class:`BayesSCDC`; ``probas_`` is the amortised q(z | o), ``embedding_`` the
        mean of x under q(z | o) q(x | z, o); ``history_`` the lower bound per epoch
        (average of its minibatch estimates).
    weights_ : Series
        π.
    workers_ : DataFrame
        Point estimates ``alpha``, ``beta`` per worker and ``n_links``.
    """

    _name = "SCDC"
    #: SCDC's epoch bound averages minibatch estimates over networks that change within the
    #: epoch, and its noise exceeds the differences between epochs: on the pinwheel (quality
    #: floor problem) accuracy moves between 0.57 and 0.83 over epochs 10-19 while the bound
    #: stays within 1%, and the best-bound epoch scored 0.612 against 0.698 for the last.
    #: Restarts are ranked by the bound of their last three epochs instead.
    _keep_best_bound = False
    parameter_constraints = {
        **DeepClusteringBase._common_constraints,
        "worker_init": [OPEN_UNIT],
    }

    def __init__(
        self,
        n_clusters: int = 15,
        latent_dim: int = 2,
        hidden: tuple[int, ...] = (40, 40),
        decoder: str = "gaussian",
        epochs: int = 20,
        batch_size: int = 50,
        learning_rate: float = 1e-3,
        warmup_epochs: int = 5,
        n_init: int = 1,
        collapse_restarts: int = 3,
        worker_init: float = 0.9,
        link_weight: float = 1.0,
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
        self.warmup_epochs = warmup_epochs
        self.n_init = n_init
        self.collapse_restarts = collapse_restarts
        self.worker_init = worker_init
        self.link_weight = link_weight
        self.device = device
        self.random_state = random_state
        self.progress = progress

    def _make_networks(self, n_obs: int) -> tuple[_Encoder, Decoder]:
        """The encoder of q(z | o) and q(x | z, o) and the decoder, on the CPU, freshly
        initialised from torch's random state."""
        K, d = self.n_clusters, self.latent_dim
        encoder = _Encoder(n_obs, self._hidden, K, d)
        return encoder, Decoder(d, self._hidden, n_obs, self.decoder)

    def _build(self, data: ObservedData, rng: np.random.Generator) -> None:
        K, d = self.n_clusters, self.latent_dim
        n_obs = data.obs.shape[1]
        dev = self._device
        encoder, decoder = self._make_networks(n_obs)
        self.encoder_, self.decoder_ = encoder.to(dev), decoder.to(dev)
        self._pi_logits = nn.Parameter(torch.zeros(K, device=dev))
        self._means = nn.Parameter(
            torch.as_tensor(rng.normal(0, 1, (K, d)), dtype=torch.float32, device=dev)
        )
        self._logvars = nn.Parameter(torch.zeros(K, d, device=dev))
        m = 0 if data.links is None else data.links.n_workers
        start = float(np.log(self.worker_init / (1 - self.worker_init)))
        self._logit_alpha = nn.Parameter(torch.full((m,), start, device=dev))
        self._logit_beta = nn.Parameter(torch.full((m,), start, device=dev))
        params = [*self.encoder_.parameters(), *self.decoder_.parameters()]
        params += [self._pi_logits, self._means, self._logvars, self._logit_alpha, self._logit_beta]
        self._optimizer = torch.optim.Adam(params, lr=self.learning_rate)

    def _local_bound(self, obs: torch.Tensor, warm: float) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-item bound (summed over z analytically) and its warmed-up training version."""
        log_q, mean, logvar = self.encoder_(obs)
        q = log_q.exp()
        sample = mean + torch.exp(0.5 * logvar) * torch.randn_like(mean)
        recon = self.decoder_.log_prob(obs.unsqueeze(1), sample)  # (b, K)
        prior_var = torch.exp(self._logvars)
        log_prior_x = -0.5 * (
            ((sample - self._means) ** 2) / prior_var + self._logvars + _LOG_2PI
        ).sum(-1)
        log_q_x = -0.5 * (((sample - mean) ** 2) * torch.exp(-logvar) + logvar + _LOG_2PI).sum(-1)
        log_pi = torch.log_softmax(self._pi_logits, dim=-1)
        kl_x = log_prior_x - log_q_x
        z_part = log_pi - log_q
        bound = (q * (recon + kl_x + z_part)).sum(-1)
        train = (q * (recon + warm * (kl_x + z_part))).sum(-1)
        return bound, train

    def _epoch(self, data: ObservedData, rng: np.random.Generator, epoch: int) -> float:
        n = len(data.obs)
        links = data.links
        warm = self._warm(epoch)
        total = 0.0
        batches = self._minibatches(n, rng)
        for batch in batches:
            bound, train = self._local_bound(data.obs[batch], warm)
            objective = bound.sum() * (n / len(batch))
            loss = -train.mean()
            if links is not None:
                rel = self._relational(data, links, len(batch), rng)
                objective = objective + rel
                loss = loss - rel / n
            self._optimizer.zero_grad()
            loss.backward()
            self._optimizer.step()
            total += float(objective.detach())
        return total / len(batches)

    def _relational(self, data: ObservedData, links: LinkData, b: int, rng) -> torch.Tensor:
        n = len(data.obs)
        size = min(max(int(round(links.n_links * b / n)), 1), links.n_links)
        chosen = rng.choice(links.n_links, size=size, replace=False)
        left, right = links.left[chosen], links.right[chosen]
        log_q = self.encoder_.cluster(data.obs[np.concatenate([left, right])])
        q = torch.softmax(log_q, dim=-1)
        agreement = (q[:size] * q[size:]).sum(-1)
        dev = self._device
        worker = torch.as_tensor(links.worker[chosen], device=dev)
        label = torch.as_tensor(links.labels[chosen], dtype=torch.float32, device=dev)
        value = _link_log_lik(agreement, self._logit_alpha, self._logit_beta, worker, label)
        return value.sum() * (self.link_weight * links.n_links / size)

    @torch.no_grad()
    def _posterior(self, data: ObservedData):
        resp, emb = self._amortised(data.obs)
        return resp, emb, torch.softmax(self._pi_logits, -1).cpu().numpy()

    def _amortised(self, obs: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        resps, embs = [], []
        for rows in row_chunks(len(obs)):
            log_q, mean, _ = self.encoder_(obs[rows])
            q = log_q.exp()
            resps.append(q.cpu().double().numpy())
            embs.append((q.unsqueeze(-1) * mean).sum(1).cpu().double().numpy())
        return np.concatenate(resps), np.concatenate(embs)

    @torch.no_grad()
    def _predict_new(self, obs: torch.Tensor) -> np.ndarray:
        return self._amortised(obs)[0]

    def _worker_table(self, links: LinkData | None) -> pd.DataFrame:
        if links is None:
            return pd.DataFrame(
                columns=["alpha", "beta", "n_links"], index=pd.Index([], name="worker")
            )
        return pd.DataFrame(
            {
                "alpha": torch.sigmoid(self._logit_alpha).detach().cpu().numpy(),
                "beta": torch.sigmoid(self._logit_beta).detach().cpu().numpy(),
                "n_links": np.bincount(links.worker, minlength=links.n_workers),
            },
            index=pd.Index(links.worker_ids, name="worker"),
        )
