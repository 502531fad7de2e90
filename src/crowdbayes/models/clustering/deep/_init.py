r"""Starting values of BayesSCDC's global factors: q(π) and the NIW factors q(μ_k, Σ_k).

Two starts, both drawn from the fit's random stream:

* at the start of a restart, the variational initialisation of Luo et al. (2018, Appendix B),
  :func:`initial_globals`: Dirichlet parameters :math:`\sim U(1, 2)`, and NIW factors with
  :math:`\kappa = 1`, :math:`m \sim \mathcal N(0, 3)`, :math:`S = (d + \kappa) I`,
  :math:`\nu = d + \kappa`; the prior is :func:`niw_prior` (:math:`m = 0`,
  :math:`S = (d + \kappa_0) I`, :math:`\nu = d + \kappa_0`);
* at the end of the warm-up, a restart around the embedding that the networks have learnt
  (:func:`globals_around`), so that no component starts far from the data and starves: the
  component means at k-means++ picks among the items' recognition means
  (:func:`kmeans_plus_plus`) or, with the cluster head, at the head's clusters of the
  embedding (:func:`head_centres`, a links-aware start), each covariance the embedding's shrunk
  by :math:`K^{2/d}`.

References
----------
Luo, Y., Tian, T., Shi, J., Zhu, J. & Zhang, B. (2018). Semi-crowdsourced clustering with deep
generative models. NeurIPS. (Appendix B.)
Arthur, D. & Vassilvitskii, S. (2007). k-means++: the advantages of careful seeding. SODA.
"""

from __future__ import annotations

import numpy as np

from ._conjugate import NIW, niw_from_standard

__all__ = ["globals_around", "head_centres", "initial_globals", "kmeans_plus_plus", "niw_prior"]


def niw_prior(latent_dim: int, kappa: float) -> NIW:
    """The NIW prior, one component: m = 0, S = (d + κ) I, ν = d + κ (Appendix B)."""
    d = latent_dim
    return niw_from_standard(
        np.zeros((1, d)), [kappa], ((d + kappa) * np.eye(d))[None], [d + kappa]
    )


def initial_globals(
    n_clusters: int, latent_dim: int, rng: np.random.Generator
) -> tuple[np.ndarray, NIW]:
    """Appendix B's start of q(π) and the NIW factors: ``(dirichlet, niw)``, the Dirichlet
    parameters ~ U(1, 2) and NIW factors with κ = 1, m ~ N(0, 3), S = (d + κ) I, ν = d + κ."""
    K, d = n_clusters, latent_dim
    dirichlet = rng.uniform(1.0, 2.0, size=K)
    niw = niw_from_standard(
        rng.normal(0.0, np.sqrt(3.0), size=(K, d)),
        np.ones(K),
        np.broadcast_to((d + 1.0) * np.eye(d), (K, d, d)),
        np.full(K, d + 1.0),
    )
    return dirichlet, niw


def globals_around(
    embedding: np.ndarray, centres: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, NIW]:
    """A restart of q(π) and the NIW factors around the ``embedding`` (n, d): ``(dirichlet,
    niw)``, the NIW factors at the ``centres`` (K, d) with κ = 1, ν = d + 1 and E[Σ_k⁻¹] the
    inverse of the embedding's covariance shrunk by K^(2/d), the Dirichlet parameters
    ~ U(1, 2)."""
    K, d = centres.shape
    cov = np.atleast_2d(np.cov(embedding.T)) / K ** (2.0 / d) + 1e-6 * np.eye(d)
    nu = d + 1.0
    niw = niw_from_standard(
        centres, np.ones(K), np.broadcast_to(nu * cov, (K, d, d)), np.full(K, nu)
    )
    return rng.uniform(1.0, 2.0, size=K), niw


def kmeans_plus_plus(points: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
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


def head_centres(emb: np.ndarray, resp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Component means from the head's clustering of the embedding: the ``resp``-weighted
    mean of the rows of ``emb`` per cluster, or a k-means++ pick for clusters holding less
    than one item's weight."""
    mass = resp.sum(axis=0)
    centres = (resp.T @ emb) / np.maximum(mass, 1e-12)[:, None]
    empty = mass < 1.0
    if empty.any():
        centres[empty] = kmeans_plus_plus(emb, int(empty.sum()), rng)
    return centres
