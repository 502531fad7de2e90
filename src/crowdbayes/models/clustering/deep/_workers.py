r"""The workers' two-coin factors in BayesSCDC: q(α_m), q(β_m) and what the links give them.

Worker m says "must-link" to a pair in one cluster with probability :math:`\alpha_m` and
"cannot-link" to a pair in two with probability :math:`\beta_m`, both with Beta factors
(:mod:`crowdbayes.annotators.two_coin`). Under mean-field q(z) a link :math:`l` between items
:math:`i, j` contributes :math:`\mathbb E\log p(L_l\mid z) = \bar s_l\,\mathbb E[w_l] +
\mathbb E[c_l]`, with the agreement :math:`\bar s_l = q(z_i)^\top q(z_j)` (Eq. 14 and 20;
:func:`link_weights`). The Beta factors take a stochastic natural-gradient step (Eq. 17) from
the expected counts of a uniform sample of :math:`|S| = N_a|B|/N` links per minibatch
(:func:`link_minibatch`), scaled by :math:`N_a/|S|` and by the power :math:`\lambda`
(``link_weight``) of the link likelihood (:func:`worker_step`; §2.3, §3.2).

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS. (Eqs. 14, 17, 20, 25.)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ....annotators.two_coin import (
    link_message_weights,
    two_coin_expectations,
    two_coin_kl,
    two_coin_statistics,
)
from ....maths import dirichlet_marginal_summary
from ._conjugate import natural_step
from ._data import LinkData

__all__ = ["Factors", "link_minibatch", "link_weights", "worker_kl", "worker_step", "worker_table"]

#: the workers' Beta factors ``(alpha, beta)``: rows ``[a1, a2]`` of q(α_m) and ``[b1, b2]`` of
#: q(β_m), each (n_workers, 2)
Factors = tuple[np.ndarray, np.ndarray]


def link_minibatch(
    links: LinkData, batch_size: int, n_items: int, rng: np.random.Generator
) -> np.ndarray:
    """|S| = N_a|B|/N links (at least one, at most all) drawn uniformly without replacement
    for a minibatch of ``batch_size`` of the ``n_items`` items."""
    size = max(int(round(links.n_links * batch_size / n_items)), 1)
    return rng.choice(links.n_links, size=min(size, links.n_links), replace=False)


def link_weights(
    factors: Factors, links: LinkData, chosen: np.ndarray | slice = slice(None)
) -> tuple[np.ndarray, np.ndarray]:
    """E[w_l] and E[c_l] of the links ``chosen`` (all by default) under the Beta ``factors``."""
    expected = two_coin_expectations(*factors)
    return link_message_weights(expected, links.worker[chosen], links.labels[chosen])


def worker_step(
    factors: Factors,
    prior,
    agreement: np.ndarray,
    links: LinkData,
    chosen: np.ndarray,
    rho: float,
    link_weight: float,
) -> Factors:
    """The Beta ``factors`` after one natural-gradient step of size ``rho`` from the
    ``agreement`` of the links ``chosen``, their counts scaled by λ N_a/|S|."""
    alpha, beta = factors
    a_counts, b_counts = two_coin_statistics(
        agreement, links.worker[chosen], links.labels[chosen], links.n_workers
    )
    prior = np.asarray(prior, float)
    scale = link_weight * links.n_links / len(chosen)
    alpha = natural_step((alpha,), (prior,), (a_counts,), rho, scale)[0]
    beta = natural_step((beta,), (prior,), (b_counts,), rho, scale)[0]
    return alpha, beta


def worker_kl(factors: Factors, prior) -> float:
    """KL of the Beta ``factors`` from their prior, summed over the workers and both coins."""
    alpha, beta = factors
    prior = np.asarray(prior, float)
    return two_coin_kl(alpha, prior) + two_coin_kl(beta, prior)


def worker_table(
    factors: Factors | None, links: LinkData | None, credible_level: float
) -> pd.DataFrame:
    """Per worker: ``alpha``, ``alpha_sd``, ``alpha_lower``, ``alpha_upper``, the same for
    ``beta`` (posterior mean, sd and central interval of mass ``credible_level``) and
    ``n_links``, from the Beta ``factors``; an empty table without links."""
    columns = ["alpha", "alpha_sd", "alpha_lower", "alpha_upper"]
    columns += ["beta", "beta_sd", "beta_lower", "beta_upper", "n_links"]
    if links is None:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="worker"))
    table = {}
    for name, params in zip(("alpha", "beta"), factors, strict=True):
        mean, sd, lower, upper, _ = dirichlet_marginal_summary(params, credible_level)
        table[name], table[f"{name}_sd"] = mean[:, 0], sd[:, 0]
        table[f"{name}_lower"], table[f"{name}_upper"] = lower[:, 0], upper[:, 0]
    table["n_links"] = np.bincount(links.worker, minlength=links.n_workers)
    return pd.DataFrame(table, index=pd.Index(links.worker_ids, name="worker"))
