"""Figures of the models that group workers or items: communities of preferences (who
belongs with whom, what each community prefers) and crowd clustering (the items in 2-D coloured
by cluster, each worker's sensitivity α and specificity β)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._mpl import color, new_figure, styled

__all__ = ["cluster_embedding", "community_members", "community_utilities", "worker_alpha_beta"]


def _communities(model, what: str) -> None:
    """Refuse a model that does not group workers into communities."""
    model.check_is_fitted()
    if model.tags.judgment != "pairs" or model.worker_groups_ is None:
        raise ValueError(
            f"{what} needs a model of communities of workers; got {type(model).__name__}"
        )


def _clustering(model, what: str) -> None:
    """Refuse a model that does not cluster items from links."""
    model.check_is_fitted()
    if model.tags.judgment != "links":
        raise ValueError(
            f"{what} needs a crowd clustering model; got {type(model).__name__} "
            f"(judgment {model.tags.judgment!r})"
        )


# ------------------------------------------------------------------------------ communities
@styled
def community_members(model):
    """Who belongs with whom: the posterior co-membership of every pair of workers (ordered by
    community, lines between communities), the communities' sizes, and the posterior of the
    number of communities.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _communities(model, "community_members")
    partition = model.partition_
    order = np.argsort(partition.to_numpy(), kind="stable")
    co = model.co_membership_.to_numpy()[np.ix_(order, order)]
    figure, (matrix, sizes, number) = new_figure(11.0, 3.6, ncols=3, width_ratios=[1.2, 1, 1])
    image = matrix.imshow(co, vmin=0, vmax=1, cmap="Blues", interpolation="nearest")
    bounds = np.cumsum(np.bincount(partition.to_numpy()))[:-1] - 0.5
    for b in bounds:
        matrix.axhline(b, color=color(5), lw=0.6)
        matrix.axvline(b, color=color(5), lw=0.6)
    matrix.set_xlabel("worker (ordered by community)")
    matrix.set_ylabel("worker")
    matrix.set_title("P(two workers share a community)", fontsize=9)
    figure.colorbar(image, ax=matrix, shrink=0.8)
    counts = partition.value_counts().sort_index()
    sizes.bar([str(c) for c in counts.index], counts.to_numpy(), color=color(0))
    sizes.set_xlabel("community (point partition)")
    sizes.set_ylabel("workers")
    sizes.set_title(f"{len(counts)} communities", fontsize=9)
    posterior = model.n_communities_
    number.bar(posterior.index.astype(str), posterior.to_numpy(), color=color(1))
    number.set_xlabel("number of communities")
    number.set_ylabel("posterior probability")
    number.set_title("posterior of the number of communities", fontsize=9)
    figure.suptitle(f"Communities of {len(partition)} workers")
    return figure


@styled
def community_utilities(model, *, top: int = 20):
    """What each community prefers: the utility of the ``top`` items on which the communities
    disagree most (largest spread of the communities' mean utilities), one column a community.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _communities(model, "community_utilities")
    means = model.community_utility_["mean"].unstack("community")
    used = sorted(pd.unique(model.partition_.to_numpy()))
    means = means.reindex(columns=[c for c in means.columns if c in used] or means.columns)
    spread = means.std(axis=1) if means.shape[1] > 1 else means.iloc[:, 0].abs()
    shown = means.loc[spread.sort_values(ascending=False).index[:top]]
    figure, ax = new_figure(2.2 + 0.7 * shown.shape[1], max(3.0, 0.22 * len(shown) + 1.2))
    limit = float(np.nanmax(np.abs(shown.to_numpy()))) or 1.0
    image = ax.imshow(shown.to_numpy(), cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    sizes = model.partition_.value_counts()
    ax.set_xticks(
        np.arange(shown.shape[1]),
        [f"{c}\n({sizes.get(c, 0)})" for c in shown.columns],
    )
    ax.set_yticks(np.arange(len(shown)), [str(i)[:28] for i in shown.index], fontsize=7)
    ax.set_xlabel("community (workers)")
    ax.set_title(f"Utilities of the {len(shown)} items the communities disagree on most")
    figure.colorbar(image, ax=ax, shrink=0.8, label="posterior mean utility")
    return figure


# ------------------------------------------------------------------------------ clustering
def _pca(values: np.ndarray) -> np.ndarray:
    centred = values - values.mean(axis=0)
    if centred.shape[1] <= 2:
        return centred if centred.shape[1] == 2 else np.column_stack([centred[:, 0], 0 * centred])
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ vt[:2].T


def _coordinates(model, data) -> tuple[np.ndarray, pd.Index, str]:
    """2-D coordinates of the clustered items and where they come from: two-dimensional
    features as they are, else the model's latent embedding, else the features' principal
    components, else (links only) those of the posterior cluster probabilities."""
    items = model.assignments_.index
    observations = None if data is None else data.observations
    features = None
    if observations is not None:
        ids = pd.Index(data.item_ids)
        values = np.asarray(observations, dtype=np.float64).reshape(len(ids), -1)
        features = values[ids.get_indexer(items)]
        if features.shape[1] == 2:
            return features, items, "their two features"
    embedding = model.embedding_
    if embedding is not None:
        if isinstance(embedding, pd.DataFrame):
            values = embedding.reindex(items).to_numpy(dtype=np.float64)
        else:
            values = np.asarray(embedding, dtype=np.float64)
        reduced = " (first two principal components)" if values.shape[1] > 2 else ""
        return _pca(values), items, f"the model's latent embedding{reduced}"
    if features is not None:
        return _pca(features), items, "the first two principal components of their features"
    probas = model.predict_proba().reindex(items).to_numpy(dtype=np.float64)
    jitter = np.random.default_rng(0).normal(scale=0.02, size=(len(items), 2))
    return (
        _pca(probas) + jitter,
        items,
        "the principal components of their cluster probabilities (jittered)",
    )


@styled
def cluster_embedding(model, data=None):
    """The clustered items in two dimensions, coloured by their cluster.

    The coordinates are the items' features from ``data`` (a :class:`~crowdbayes.Links` with
    observations) when they are two-dimensional, else the model's latent embedding (deep
    models), else the features, else — links only — the posterior cluster probabilities; more
    than two dimensions are reduced to the first two principal components. Faint points are
    items the model is unsure of (probability of their cluster below 0.9).

    Returns
    -------
    matplotlib.figure.Figure
    """
    _clustering(model, "cluster_embedding")
    xy, items, source = _coordinates(model, data)
    assignments = model.assignments_.reindex(items).to_numpy()
    probas = model.predict_proba().reindex(items)
    position = probas.columns.get_indexer(assignments)
    sure = probas.to_numpy()[np.arange(len(items)), position] >= 0.9
    figure, ax = new_figure(6.4, 4.8)
    clusters = pd.Series(assignments).value_counts()
    for rank, cluster in enumerate(clusters.index):
        member = assignments == cluster
        label = f"cluster {cluster} ({int(member.sum())})"
        ax.scatter(*xy[member & sure].T, s=9, color=color(rank), label=label, edgecolors="none")
        ax.scatter(*xy[member & ~sure].T, s=9, color=color(rank), alpha=0.25, edgecolors="none")
    ax.set_xlabel("dimension 1")
    ax.set_ylabel("dimension 2")
    if len(clusters) <= 15:
        ax.legend(frameon=False, fontsize=7, markerscale=1.5, loc="best")
    ax.set_title(f"{len(items)} items in {len(clusters)} clusters, placed by {source}")
    ax.title.set_fontsize(9)
    return figure


@styled
def worker_alpha_beta(model):
    """Each worker's sensitivity α = P(must-link | same cluster) against specificity
    β = P(cannot-link | different clusters), with credible intervals where the model has
    them; the point's area grows with the worker's number of links. Good workers sit in the
    top-right corner; a worker near (0.5, 0.5) answers at random.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _clustering(model, "worker_alpha_beta")
    workers = model.workers_
    if workers.empty:
        raise ValueError(f"{type(model).__name__} was fitted without links: no worker estimates")
    alpha, beta = workers["alpha"].to_numpy(float), workers["beta"].to_numpy(float)
    figure, ax = new_figure(5.2, 4.6)
    if "alpha_lower" in workers.columns:
        ax.errorbar(
            alpha,
            beta,
            xerr=[alpha - workers["alpha_lower"], workers["alpha_upper"] - alpha],
            yerr=[beta - workers["beta_lower"], workers["beta_upper"] - beta],
            fmt="none",
            ecolor=color(4),
            alpha=0.4,
            lw=0.8,
        )
    links = workers["n_links"].to_numpy(float)
    ax.scatter(alpha, beta, s=10 + 90 * links / links.max(), color=color(0), alpha=0.8)
    ax.plot([0.5], [0.5], "x", color="grey")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("α: P(says same | same cluster)")
    ax.set_ylabel("β: P(says different | different clusters)")
    ax.grid(alpha=0.3)
    ax.set_title(f"Workers' sensitivity and specificity ({len(workers)} workers)")
    return figure
