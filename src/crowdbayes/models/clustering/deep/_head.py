r"""BayesSCDC's cluster head (``cluster_head``, issue 19): an amortised q(z) for sparse links.

With the paper's family every item has its own q(z_i), tied to its features only through the
mixture in the latent space, so sparse links that describe a grouping the features do not
show can be satisfied item by item, without the features. The cluster head replaces the
per-item categorical factor by a discriminative head :math:`g(o;\phi_z)` (an MLP of the
networks' widths), as in SCDC (Luo et al. 2018, §2.3; amortised inference, Kingma & Welling
2014):

.. math::
    q(z_i) = \mathrm{Cat}(\mathrm{softmax}\, g(o_i;\phi_z)),\qquad
    q(x_i) \text{ by Eq. 12 given } q(z_i).

The networks maximise the same objective :math:`\mathcal J`, now differentiated through q(z)
too; the links reach q(z) through the head's training, in the tempered link term
(:func:`head_link_term`)

.. math::
    \lambda\,\mathcal L_\mathrm{rel} = \lambda \sum_l \big(q(z_{i_l})^\top q(z_{j_l})\,
    \mathbb E[w_l] + \mathbb E[c_l]\big),

estimated on :math:`|S| = N_a|B|/N` links per minibatch and scaled by :math:`N_a/|S|`, not as
the messages of Eq. 14. The loss adds the balance term :math:`\lambda N_a\,\gamma\,H[\bar q]`,
:math:`\bar q = \tfrac1{|R|}\sum_{i\in R}\mathrm{softmax}\,g(o_i;\phi_z)` over
:math:`|R| = 2|S|` items drawn uniformly (:func:`head_marginal_entropy`, ``head_balance``
:math:`\gamma`): the marginal-entropy half of the mutual information between items and
clusters of regularised information maximisation (Krause, Perona & Gomes 2010), which keeps
the head from merging groups early. It shapes the head's training only. With the head the
workers' Beta factors are also held during the warm-up, and the mixture restarts at the
head's clusters of the embedding (:func:`~._init.head_centres`).

``cluster_head="auto"`` turns the head on when the linked items have fewer than
:data:`SPARSE_LINKS_PER_ITEM` links each on average (:func:`sparse_links`). Why and how much
it helps, with measurements: ``docs/models/bayes_scdc.md``.

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS. (§2.3 for the amortised q(z).)
Kingma, D. P. & Welling, M. (2014). Auto-encoding variational Bayes. ICLR.
Krause, A., Perona, P. & Gomes, R. G. (2010). Discriminative clustering by regularized
information maximization. NeurIPS.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ._data import LinkData, to_device
from ._workers import Factors, link_minibatch, link_weights

__all__ = [
    "SPARSE_LINKS_PER_ITEM",
    "head_link_term",
    "head_marginal_entropy",
    "links_per_linked_item",
    "sparse_links",
]

#: ``cluster_head="auto"`` uses the head when the linked items have fewer links each than this
#: on average (faces by pose: 3.3 at 1,000 links, 6.4 at 2,000; the pinwheel of the command
#: line: 19.6; MNIST tasks in the real scheme: 35):
#: benchmarks/cluster/results/cluster_defaults.md §7
SPARSE_LINKS_PER_ITEM = 10.0


def links_per_linked_item(links: LinkData) -> float:
    """Mean number of links of the items that at least one link names."""
    linked = np.unique(np.concatenate([links.left, links.right])).size
    return 2.0 * links.n_links / max(linked, 1)


def sparse_links(links: LinkData | None) -> bool:
    """Whether there are links and the linked items have fewer than
    :data:`SPARSE_LINKS_PER_ITEM` links each on average."""
    return links is not None and links_per_linked_item(links) < SPARSE_LINKS_PER_ITEM


def head_link_term(
    head: nn.Module,
    obs: torch.Tensor,
    links: LinkData,
    workers: Factors,
    batch_size: int,
    balance: float,
    rng: np.random.Generator,
) -> torch.Tensor:
    r"""The link term per link, :math:`\mathbb E_q[\log p(L\mid z)] / N_a` estimated on the
    links of :func:`~._workers.link_minibatch` for a minibatch of ``batch_size`` items, with
    the q(z) of both ends computed afresh by the ``head`` (with gradients) from ``obs`` and
    :math:`\mathbb E[w_l], \mathbb E[c_l]` from the workers' Beta factors;
    plus ``balance`` :math:`\gamma` times :math:`H[\bar q]` over twice as many items. Times
    :math:`\lambda N_a` it is the tempered link term and the balance term of the loss."""
    chosen = link_minibatch(links, batch_size, len(obs), rng)
    size = len(chosen)
    ends = to_device(np.concatenate([links.left[chosen], links.right[chosen]]), obs.device)
    resp = torch.softmax(head(obs[ends]), dim=-1)
    weights, offsets = link_weights(workers, links, chosen)
    weights = to_device(weights, obs.device, torch.float32)
    agreement = (resp[:size] * resp[size:]).sum(-1)
    value = (agreement @ weights + float(offsets.sum())) / size
    if balance:
        value = value + balance * head_marginal_entropy(head, obs, 2 * size, rng)
    return value


def head_marginal_entropy(
    head: nn.Module, obs: torch.Tensor, size: int, rng: np.random.Generator
) -> torch.Tensor:
    r""":math:`H[\bar q]`, :math:`\bar q` the mean of the ``head``'s q(z) over ``size`` rows of
    ``obs`` (all, if fewer) drawn uniformly without replacement, with gradients."""
    rows = rng.choice(len(obs), size=min(size, len(obs)), replace=False)
    mean = torch.softmax(head(obs[to_device(rows, obs.device)]), -1).mean(0)
    return -(mean * torch.log(mean.clamp_min(1e-30))).sum()
