r"""A Gibbs sampler of ``LinkClustering``'s model, to check its VB worker intervals (issue 19).

Not part of the package: a diagnosis for ``cluster_semicrowd.py``. The model is the one
:class:`~crowdbayes.models.clustering.LinkClustering` fits by mean-field VB: items' clusters
:math:`z_i`, proportions :math:`\pi \sim \mathrm{Dir}(\gamma_0)`, and per worker a two-coin
:math:`\alpha_m` (P(must-link | same cluster)) and :math:`\beta_m` (P(cannot-link | different
clusters)) with Beta priors. One sweep draws, in turn (Gelfand & Smith 1990),

.. math::
    \alpha_m \sim \mathrm{Beta}(a^0 + n^{\mathrm{same}}_{m,1}, a^0 + n^{\mathrm{same}}_{m,0}),
    \quad \beta_m \sim \mathrm{Beta}(b^0 + n^{\mathrm{diff}}_{m,0}, b^0 + n^{\mathrm{diff}}_{m,1}),
    \quad \pi \sim \mathrm{Dir}(\gamma_0 + n_k),

(counts of the worker's links by whether the pair shares a cluster and by the label), then
every item's cluster in random order from

.. math::
    p(z_i = k \mid \cdot) \propto \pi_k \exp\Big(\sum_{l \ni i,\ z_{j(l)} = k} w_l\Big), \qquad
    w_l = \begin{cases} \log\alpha_m - \log(1-\beta_m) & L_l = 1 \\
                        \log(1-\alpha_m) - \log\beta_m & L_l = 0, \end{cases}

the log-odds of the link under "same cluster" against "different clusters" (terms that do not
depend on :math:`z_i` dropped). Started from the VB fit's most probable clusters, so it samples
the mode VB found and the spread VB's factorisation leaves out.

The posterior of a worker's α given the sampled clusters and a subset of the links (the
identifiable ones) is the mixture over the kept sweeps of the conjugate Beta posteriors of
each sweep's counts on those links; its highest-density region at mass ``level`` is read off
a grid (the density of a mixture may have several modes, so a region, not an interval).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import beta as beta_distribution

from crowdbayes.annotators.two_coin import two_coin_statistics

__all__ = ["sample_link_clusters", "mixture_hpd_covers"]


def _two_coin_counts(z, left, right, labels, workers, n_workers, subset=None) -> np.ndarray:
    """Per worker (rows): the Beta counts of α (first two columns) and β (last two) of the
    clusters ``z`` (:func:`~crowdbayes.annotators.two_coin.two_coin_statistics`), on the
    links where ``subset`` is True (default: all)."""
    keep = slice(None) if subset is None else subset
    same = (z[left] == z[right]).astype(np.float64)
    alpha, beta = two_coin_statistics(same[keep], workers[keep], labels[keep], n_workers)
    return np.concatenate([alpha, beta], axis=1)


def sample_link_clusters(
    model,
    links: pd.DataFrame,
    subset: np.ndarray,
    *,
    n_sweeps: int = 300,
    n_burn: int = 100,
    random_state: int = 0,
) -> np.ndarray:
    """Gibbs sweeps of the model (module docstring) from ``model``'s fit on ``links``
    (columns ``worker, left, right, label``); returns, for every kept sweep, the two-coin counts
    of each of ``model``'s workers on the links where ``subset`` is True: (sweeps, workers, 4)."""
    rng = np.random.default_rng(random_state)
    items, worker_ids = model.probas_.index, model.workers_.index
    left, right = items.get_indexer(links["left"]), items.get_indexer(links["right"])
    workers = worker_ids.get_indexer(links["worker"])
    labels = links["label"].to_numpy(np.float64)
    k, n_workers = model.probas_.shape[1], len(worker_ids)
    prior_alpha, prior_beta = np.asarray(model.prior_alpha), np.asarray(model.prior_beta)
    # every link from both ends: the item, the other item, the link's row
    ends = np.concatenate([left, right])
    order = np.argsort(ends, kind="stable")
    other = np.concatenate([right, left])[order]
    row = np.tile(np.arange(labels.size), 2)[order]
    bounds = np.searchsorted(ends[order], np.arange(items.size + 1))
    z = model.probas_.to_numpy().argmax(axis=1)
    kept = []
    for sweep in range(n_sweeps):
        counts = _two_coin_counts(z, left, right, labels, workers, n_workers)
        alpha = rng.beta(prior_alpha[0] + counts[:, 0], prior_alpha[1] + counts[:, 1])
        beta = rng.beta(prior_beta[0] + counts[:, 2], prior_beta[1] + counts[:, 3])
        log_pi = np.log(rng.dirichlet(model.prior_prevalence + np.bincount(z, minlength=k)))
        must, cannot = np.log(alpha) - np.log1p(-beta), np.log1p(-alpha) - np.log(beta)
        weight = np.where(labels == 1, must[workers], cannot[workers])[row]
        for i in rng.permutation(items.size):
            span = slice(bounds[i], bounds[i + 1])
            score = log_pi + np.bincount(z[other[span]], weights=weight[span], minlength=k)
            p = np.exp(score - score.max())
            z[i] = rng.choice(k, p=p / p.sum())
        if sweep >= n_burn:
            kept.append(_two_coin_counts(z, left, right, labels, workers, n_workers, subset))
    return np.array(kept)


def mixture_hpd_covers(
    counts: np.ndarray, prior: tuple[float, float], value: float, level: float
) -> bool:
    """Whether ``value`` lies in the ``level`` highest-density region of the mixture, with equal
    weights, of Beta(prior[0] + counts[s, 0], prior[1] + counts[s, 1]) over the rows s."""
    grid = np.unique(
        np.concatenate([np.linspace(1e-9, 0.999, 20_001), 1 - np.logspace(-3, -9, 2_001)])
    )
    width = np.diff(np.concatenate([[0.0], (grid[1:] + grid[:-1]) / 2, [1.0]]))
    rows, times = np.unique(counts[:, :2], axis=0, return_counts=True)  # sweeps often repeat
    a, b = prior[0] + rows[:, 0], prior[1] + rows[:, 1]
    density = times @ beta_distribution.pdf(grid[None, :], a[:, None], b[:, None]) / times.sum()
    mass = density * width
    order = np.argsort(-density)
    threshold = density[order][np.searchsorted(np.cumsum(mass[order]) / mass.sum(), level)]
    at_value = np.interp(min(value, grid[-1]), grid, density)
    return bool(at_value >= threshold)
