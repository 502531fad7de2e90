r"""Constrained-clustering baselines for the crowd clustering benchmarks (numpy; not part of the
package).

All three take features ``X`` (n × d), the number of clusters ``k`` and *clean* pairwise
constraints: ``must`` and ``cannot`` arrays of shape (m, 2) of row numbers (one constraint per
unordered pair, no contradictions). Crowd links, where one pair may be judged by several workers
and differently, go through :func:`clean_constraints` first (majority per pair, ties dropped).

- :func:`pck_means`: PCK-means (Basu, Banerjee & Mooney 2004). Minimises

  .. math:: J = \sum_i \tfrac12\lVert x_i - \mu_{l_i}\rVert^2
        + w \sum_{(i,j)\in\mathcal M} [l_i \ne l_j] + \bar w \sum_{(i,j)\in\mathcal C} [l_i = l_j]

  by iterated conditional modes: points are re-assigned one at a time (random order) to the
  cluster of least cost given the others, then the centroids are re-computed. Initialisation from
  the neighbourhoods of the transitive closure of the must-links (the ``k`` largest give the
  starting centroids, more come from k-means++ seeding on the remaining points).

- :func:`mpck_means`: MPCK-means (Bilenko, Basu & Mooney 2004) with a diagonal metric
  :math:`A_h = \mathrm{diag}(a_h)` per cluster. Minimises

  .. math:: J = \sum_i \bigl(\lVert x_i - \mu_{l_i}\rVert^2_{A_{l_i}} - \log\det A_{l_i}\bigr)
        + \sum_{(i,j)\in\mathcal M} w\,\tfrac12\bigl(\lVert x_i-x_j\rVert^2_{A_{l_i}}
        + \lVert x_i-x_j\rVert^2_{A_{l_j}}\bigr)[l_i\ne l_j]
        + \sum_{(i,j)\in\mathcal C} \bar w\,\bigl(\lVert x'_{l_i}-x''_{l_i}\rVert^2_{A_{l_i}}
        - \lVert x_i-x_j\rVert^2_{A_{l_i}}\bigr)[l_i = l_j]

  where :math:`(x', x'')` is the most distant pair of points under the cluster's metric
  (recomputed after every metric update). Each iteration: ICM assignment, centroids, then the
  closed-form diagonal metric update
  :math:`a_{hd} = |X_h| / \bigl(\sum_{i\in X_h}(x_{id}-\mu_{hd})^2
  + \text{violated-constraint terms}\bigr)`.

- :func:`itml`: Information-theoretic metric learning (Davis, Kulis, Jain, Sra & Dhillon 2007,
  Algorithm 1): Bregman projections onto one constraint at a time, starting from
  :math:`A_0 = I`, with slack. Similar pairs are pushed below the distance ``u``, dissimilar
  ones above ``l`` (the 5th and 95th percentiles of the distances between random pairs, as in
  the paper). :func:`itml_kmeans` then runs k-means on :math:`X L` with :math:`A = L L^\top`.

Constraint weights ``w`` are given relative to the scale of the data (the mean squared distance
of the points to their mean), so the same value means the same trade-off for any features.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

__all__ = [
    "clean_constraints",
    "pck_means",
    "mpck_means",
    "itml",
    "itml_transform",
    "itml_kmeans",
    "kmeans",
]


# ------------------------------------------------------------------------------ constraints
def clean_constraints(
    links: pd.DataFrame, *, left: str = "left", right: str = "right", label: str = "label"
) -> tuple[np.ndarray, np.ndarray]:
    """One constraint per unordered pair by majority over every judgment of it (ties dropped).

    ``links`` holds row numbers in ``left``/``right`` and 0/1 in ``label``. Returns ``(must,
    cannot)``, integer arrays of shape (m, 2) with the smaller row number first.
    """
    a, b = links[left].to_numpy(np.int64), links[right].to_numpy(np.int64)
    low, high = np.minimum(a, b), np.maximum(a, b)
    votes = pd.DataFrame({"i": low, "j": high, "v": np.where(links[label] == 1, 1, -1)})
    total = votes.groupby(["i", "j"], sort=True)["v"].sum()
    pairs = np.array(total.index.tolist(), dtype=np.int64).reshape(-1, 2)
    score = total.to_numpy()
    return pairs[score > 0], pairs[score < 0]


def _neighbours(n: int, pairs: np.ndarray) -> list[np.ndarray]:
    """For every point, the row numbers it shares a constraint with."""
    if len(pairs) == 0:
        return [np.empty(0, dtype=np.int64) for _ in range(n)]
    rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
    cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
    graph = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    return [graph.indices[graph.indptr[i] : graph.indptr[i + 1]] for i in range(n)]


def _scale(X: np.ndarray) -> float:
    return float(np.mean(np.sum((X - X.mean(axis=0)) ** 2, axis=1)))


def _kmeans_pp(X: np.ndarray, k: int, rng: np.random.Generator, given=None) -> np.ndarray:
    """k-means++ seeding, keeping the centroids in ``given`` (if any) as the first ones."""
    centres = [] if given is None else list(given)
    if not centres:
        centres.append(X[rng.integers(len(X))])
    while len(centres) < k:
        d2 = np.min(((X[:, None, :] - np.asarray(centres)[None]) ** 2).sum(-1), axis=1)
        p = d2 / d2.sum() if d2.sum() > 0 else np.full(len(X), 1 / len(X))
        centres.append(X[rng.choice(len(X), p=p)])
    return np.asarray(centres[:k], dtype=np.float64)


def _neighbourhood_start(
    X: np.ndarray, k: int, must: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Starting centroids: means of the ``k`` largest must-link neighbourhoods (connected
    components with two points or more), completed by k-means++ seeding."""
    n = len(X)
    if len(must):
        graph = sp.coo_matrix((np.ones(len(must)), (must[:, 0], must[:, 1])), shape=(n, n))
        _, comp = connected_components(graph, directed=False)
        sizes = np.bincount(comp)
        order = np.argsort(-sizes, kind="stable")
        big = [c for c in order[:k] if sizes[c] >= 2]
        given = [X[comp == c].mean(axis=0) for c in big]
    else:
        given = []
    return _kmeans_pp(X, k, rng, given)


def _icm_sweep(
    labels: np.ndarray,
    unary: np.ndarray,
    penalty,
    order: np.ndarray,
) -> int:
    """Re-assign the points one at a time in ``order``: ``unary[i] + penalty(i, labels)``
    is the cost of each cluster for point i. Returns how many points moved."""
    moved = 0
    for i in order:
        cost = unary[i] + penalty(i, labels)
        best = int(np.argmin(cost))
        if best != labels[i]:
            labels[i] = best
            moved += 1
    return moved


def _centroids(X: np.ndarray, labels: np.ndarray, k: int, old: np.ndarray, rng) -> np.ndarray:
    centres = old.copy()
    for h in range(k):
        members = labels == h
        centres[h] = X[members].mean(axis=0) if members.any() else X[rng.integers(len(X))]
    return centres


# ------------------------------------------------------------------------------ PCK-means
def pck_means(
    X: np.ndarray,
    k: int,
    must: np.ndarray,
    cannot: np.ndarray,
    *,
    w: float = 1.0,
    max_iter: int = 100,
    random_state=None,
) -> np.ndarray:
    """PCK-means (Basu, Banerjee & Mooney 2004); returns the cluster of every row of ``X``.

    ``w`` is the penalty of one violated constraint (must-link and cannot-link alike), in units
    of the mean squared distance of the points to their mean.
    """
    rng = np.random.default_rng(random_state)
    X = np.asarray(X, dtype=np.float64)
    n = len(X)
    weight = w * _scale(X)
    must_nb, cannot_nb = _neighbours(n, must), _neighbours(n, cannot)
    centres = _neighbourhood_start(X, k, must, rng)
    labels = np.argmin(((X[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)

    def penalty(i: int, labels: np.ndarray) -> np.ndarray:
        out = np.zeros(k)
        if must_nb[i].size:  # w for every must-link partner in another cluster
            out += weight * (must_nb[i].size - np.bincount(labels[must_nb[i]], minlength=k))
        if cannot_nb[i].size:  # w̄ for every cannot-link partner in the same cluster
            out += weight * np.bincount(labels[cannot_nb[i]], minlength=k)
        return out

    for _ in range(max_iter):
        unary = 0.5 * ((X[:, None, :] - centres[None]) ** 2).sum(-1)
        moved = _icm_sweep(labels, unary, penalty, rng.permutation(n))
        centres = _centroids(X, labels, k, centres, rng)
        if moved == 0:
            break
    return labels


# ------------------------------------------------------------------------------ MPCK-means
def mpck_means(
    X: np.ndarray,
    k: int,
    must: np.ndarray,
    cannot: np.ndarray,
    *,
    w: float = 1.0,
    max_iter: int = 100,
    random_state=None,
) -> np.ndarray:
    """MPCK-means with a diagonal metric per cluster (Bilenko, Basu & Mooney 2004); returns the
    cluster of every row of ``X``. ``w`` weighs every constraint (must- and cannot-links)."""
    rng = np.random.default_rng(random_state)
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    spread = X.std(axis=0)
    spread[spread == 0] = 1.0
    Z = (X - X.mean(axis=0)) / spread  # metric learning starts from the standardised data
    must_nb, cannot_nb = _neighbours(n, must), _neighbours(n, cannot)
    metric = np.ones((k, d))
    far = _farthest_pairs(Z, metric)  # (k, d): squared differences of each metric's far pair
    centres = _neighbourhood_start(Z, k, must, rng)
    labels = np.argmin(((Z[:, None, :] - centres[None]) ** 2).sum(-1), axis=1)

    def penalty(i: int, labels: np.ndarray) -> np.ndarray:
        out = np.zeros(k)
        if must_nb[i].size:
            partners = must_nb[i]
            diff2 = (Z[i] - Z[partners]) ** 2  # (m, d)
            own = diff2 @ metric.T  # distance under each candidate cluster's metric (m, k)
            theirs = np.sum(diff2 * metric[labels[partners]], axis=1)  # (m,)
            cost = w * 0.5 * (own + theirs[:, None])
            cost[np.arange(partners.size), labels[partners]] = 0.0  # satisfied if same cluster
            out += cost.sum(axis=0)
        if cannot_nb[i].size:
            partners = cannot_nb[i]
            diff2 = (Z[i] - Z[partners]) ** 2
            reach = np.sum(far * metric, axis=1)  # (k,) the far pair's distance
            cost = w * np.maximum(reach[None] - diff2 @ metric.T, 0.0)  # (m, k)
            same = labels[partners][:, None] == np.arange(k)[None]
            out += (cost * same).sum(axis=0)
        return out

    for _ in range(max_iter):
        unary = ((Z[:, None, :] - centres[None]) ** 2 * metric[None]).sum(-1)
        unary -= np.log(metric).sum(axis=1)[None]
        moved = _icm_sweep(labels, unary, penalty, rng.permutation(n))
        centres = _centroids(Z, labels, k, centres, rng)
        metric = _diagonal_metrics(Z, labels, centres, must, cannot, far, w, metric)
        far = _farthest_pairs(Z, metric)
        if moved == 0:
            break
    return labels


def _farthest_pairs(Z: np.ndarray, metric: np.ndarray) -> np.ndarray:
    """For each cluster's diagonal metric, the squared coordinate differences of the most
    distant pair of points under it (the x', x'' of the cannot-link penalty)."""
    out = np.empty_like(metric)
    for h, a in enumerate(metric):
        q = (Z**2) @ a
        dist = q[:, None] + q[None, :] - 2.0 * (Z * a) @ Z.T
        i, j = np.unravel_index(int(np.argmax(dist)), dist.shape)
        out[h] = (Z[i] - Z[j]) ** 2
    return out


def _diagonal_metrics(Z, labels, centres, must, cannot, far, w, old) -> np.ndarray:
    """Closed-form update of every cluster's diagonal metric (Bilenko et al. 2004, Eq. 6 for a
    diagonal A_h): members' scatter plus the violated constraints' terms in the denominator."""
    k, d = old.shape
    metric = old.copy()
    for h in range(k):
        members = labels == h
        count = int(members.sum())
        if count == 0:
            continue
        denom = ((Z[members] - centres[h]) ** 2).sum(axis=0)
        if len(must):
            li, lj = labels[must[:, 0]], labels[must[:, 1]]
            broken = (li != lj) & ((li == h) | (lj == h))
            if broken.any():
                diff2 = (Z[must[broken, 0]] - Z[must[broken, 1]]) ** 2
                denom += 0.5 * w * diff2.sum(axis=0)
        if len(cannot):
            li, lj = labels[cannot[:, 0]], labels[cannot[:, 1]]
            broken = (li == h) & (lj == h)
            if broken.any():
                diff2 = (Z[cannot[broken, 0]] - Z[cannot[broken, 1]]) ** 2
                denom += w * np.maximum(far[h][None] - diff2, 0.0).sum(axis=0)
        metric[h] = count / np.maximum(denom, 1e-6 * count)
    return metric


# ------------------------------------------------------------------------------ ITML
def itml(
    X: np.ndarray,
    similar: np.ndarray,
    dissimilar: np.ndarray,
    *,
    gamma: float = 1.0,
    max_sweeps: int = 200,
    tol: float = 1e-3,
    random_state=None,
) -> np.ndarray:
    """Learn a Mahalanobis matrix ``A`` by ITML (Davis et al. 2007, Algorithm 1).

    Cyclic Bregman projections onto the constraints ``d_A(i, j) ≤ u`` (similar pairs) and
    ``d_A(i, j) ≥ l`` (dissimilar pairs), with slack variables ξ controlled by ``gamma``
    (larger: harder constraints). One projection on the pair difference ``v`` with
    ``p = vᵀAv`` and δ = ±1 (similar/dissimilar) is
    ``α = min(λ, δ γ/(γ+1) (1/p − 1/ξ))``, ``β = δα / (1 − δαp)``, ``ξ ← 1/(1/ξ + δα/γ)``,
    ``λ ← λ − α``, ``A ← A + β A v vᵀ A`` (the projection step as in the authors' release;
    the printed Algorithm 1 writes the slack term differently), from
    ``A0 = I`` on the standardised features. ``u`` and ``l`` are the 5th and 95th percentiles of
    the squared distances between random pairs. Stops when a sweep changes the dual variables
    λ by less than ``tol`` relative to their size. Returns ``A`` for the *standardised* data
    (see :func:`itml_transform`).
    """
    rng = np.random.default_rng(random_state)
    Z = _standardise(X)
    n, d = Z.shape
    pairs = rng.integers(n, size=(4000, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    dist = ((Z[pairs[:, 0]] - Z[pairs[:, 1]]) ** 2).sum(axis=1)
    upper, lower = np.percentile(dist, 5), np.percentile(dist, 95)
    constraints = np.concatenate([similar, dissimilar]).astype(np.int64)
    delta = np.concatenate([np.ones(len(similar)), -np.ones(len(dissimilar))])
    xi = np.where(delta > 0, upper, lower)
    lam = np.zeros(len(constraints))
    V = Z[constraints[:, 0]] - Z[constraints[:, 1]]
    A = np.eye(d)
    shrink = gamma / (gamma + 1.0)
    for _ in range(max_sweeps):
        before = lam.copy()
        for c in rng.permutation(len(constraints)):
            v = V[c]
            Av = A @ v
            p = float(v @ Av)
            if p <= 1e-12:
                continue
            alpha = min(lam[c], delta[c] * shrink * (1.0 / p - 1.0 / xi[c]))
            beta = delta[c] * alpha / (1.0 - delta[c] * alpha * p)
            xi[c] = 1.0 / (1.0 / xi[c] + delta[c] * alpha / gamma)
            lam[c] -= alpha
            A += beta * np.outer(Av, Av)
        change = np.abs(lam - before).sum()
        if change <= tol * max(np.abs(lam).sum(), 1e-12):
            break
    return A


def _standardise(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    spread = X.std(axis=0)
    spread[spread == 0] = 1.0
    return (X - X.mean(axis=0)) / spread


def itml_transform(X: np.ndarray, A: np.ndarray) -> np.ndarray:
    """The standardised data mapped so that Euclidean distance is the ``A`` distance:
    ``Z L`` with ``A = L Lᵀ`` (``L`` from the eigendecomposition, negative eigenvalues cut)."""
    values, vectors = np.linalg.eigh(0.5 * (A + A.T))
    L = vectors * np.sqrt(np.clip(values, 0.0, None))
    return _standardise(X) @ L


def kmeans(X: np.ndarray, k: int, *, random_state=None) -> np.ndarray:
    """scikit-learn's k-means (10 k-means++ starts)."""
    from sklearn.cluster import KMeans

    seed = int(np.random.default_rng(random_state).integers(2**31 - 1))
    return KMeans(k, n_init=10, random_state=seed).fit_predict(X)


def itml_kmeans(
    X: np.ndarray, k: int, must: np.ndarray, cannot: np.ndarray, *, random_state=None
) -> np.ndarray:
    """k-means in the metric learned by ITML from the constraints."""
    A = itml(X, must, cannot, random_state=random_state)
    return kmeans(itml_transform(X, A), k, random_state=random_state)


# ------------------------------------------------------------------------------ self-check
def _self_check() -> None:
    """Tiny problems with known answers (run ``python benchmarks/_cluster_baselines.py``)."""
    from sklearn.metrics import normalized_mutual_info_score as nmi

    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(3), 40)

    def problem(shift: float, noise: float, n_pairs: int):
        X = noise * rng.standard_normal((120, 6))
        X[:, 0] = shift * truth + rng.standard_normal(120)  # only column 0 tells the clusters
        pairs = rng.integers(120, size=(n_pairs, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
        links = pd.DataFrame({"left": pairs[:, 0], "right": pairs[:, 1], "label": same * 1})
        return X, *clean_constraints(links)

    # 1. clusters overlap in the features, many clean constraints: PCK/MPCK follow them
    X, must, cannot = problem(1.2, 1.0, 600)
    scores = {"k-means": nmi(truth, kmeans(X, 3, random_state=0))}
    scores["pck"] = nmi(truth, pck_means(X, 3, must, cannot, random_state=0))
    scores["mpck"] = nmi(truth, mpck_means(X, 3, must, cannot, random_state=0))
    # 2. separated along column 0 but drowned by noisy columns: ITML finds the column
    X2, must2, cannot2 = problem(6.0, 4.0, 300)
    A = itml(X2, must2, cannot2, random_state=0)
    scores["k-means (2)"] = nmi(truth, kmeans(X2, 3, random_state=0))
    scores["itml (2)"] = nmi(truth, kmeans(itml_transform(X2, A), 3, random_state=0))
    print("NMI on the self-check problems:", {k: round(v, 3) for k, v in scores.items()})
    assert scores["pck"] > 0.95 and scores["mpck"] > 0.85, scores
    assert scores["k-means"] < 0.5 and scores["k-means (2)"] < 0.5, scores
    assert scores["itml (2)"] > 0.9, scores
    # ITML keeps similar pairs below u and dissimilar ones above l (most of them: slack)
    Z = itml_transform(X2, A)
    d_must = ((Z[must2[:, 0]] - Z[must2[:, 1]]) ** 2).sum(1)
    d_cannot = ((Z[cannot2[:, 0]] - Z[cannot2[:, 1]]) ** 2).sum(1)
    print(f"ITML: A[0, 0] = {A[0, 0]:.2f}, other diagonal at most {np.diag(A)[1:].max():.3f}")
    assert np.argmax(np.diag(A)) == 0
    assert np.quantile(d_must, 0.9) < np.quantile(d_cannot, 0.1), (d_must, d_cannot)
    # majority cleaning: a 2-1 vote keeps the majority, a 1-1 tie is dropped
    votes = pd.DataFrame(
        {"left": [0, 1, 0, 2, 3], "right": [1, 0, 1, 3, 2], "label": [1, 0, 1, 1, 0]}
    )
    must, cannot = clean_constraints(votes)
    assert must.tolist() == [[0, 1]] and cannot.tolist() == []
    print("self-check passed")


if __name__ == "__main__":
    _self_check()
