r"""Which item pairs to ask about next for crowd clustering (``crowdbayes cluster next``).

Every model of links (:class:`~crowdbayes.roles.Clusterer`) gives a mean-field posterior
:math:`q(z_i)` over each item's cluster (``predict_proba``) and each worker's two-coin
sensitivity :math:`\alpha_m = P(\text{must} \mid z_i = z_j)` and specificity
:math:`\beta_m = P(\text{cannot} \mid z_i \ne z_j)` (``workers_``). The answer :math:`y` to a
question about the pair :math:`(i, j)` depends on the assignments only through
:math:`e = [z_i = z_j]`, whose probability under the factorised posterior is

.. math::  s_{ij} = P(z_i = z_j) = \sum_k q_{ik}\, q_{jk}.

The platform, not the tool, decides who answers, so the answer is that of a worker drawn in
proportion to the links each gave: :math:`\bar\alpha = \sum_m n_m E[\alpha_m] / \sum_m n_m` and
likewise :math:`\bar\beta` (``E[α_m]`` is the exact predictive of a two-coin worker under its
Beta posterior). The answer's predictive is

.. math::  p_{ij} = P(y = \text{must}) = \bar\alpha\, s_{ij} + (1 - \bar\beta)(1 - s_{ij}).

The value of the question is the expected reduction in the entropy of the pair's cluster
assignments, :math:`H(z_i, z_j) - E_y[H(z_i, z_j \mid y)]`, with the posterior after the answer
given by one exact Bayes update of the pair's joint (every other item held fixed). That is the
mutual information between the answer and the assignments (BALD: Houlsby, Huszár, Ghahramani
& Lengyel 2011, "Bayesian active learning for classification and preference learning",
arXiv:1112.5745), and since :math:`y` depends on :math:`(z_i, z_j)` only through :math:`e`,

.. math::

   I(y; z_i, z_j) = H(p_{ij}) - s_{ij}\, H(\bar\alpha) - (1 - s_{ij})\, H(1 - \bar\beta)

in nats, with :math:`H` the binary entropy. It depends on the assignments only through
:math:`s_{ij}` — so it does not care how the clusters are numbered — and for reliable workers it
is highest where :math:`s_{ij}` is near one half: the pairs the posterior cannot tell apart,
as in active crowd clustering by pairwise queries (Biswas & Jacobs 2014, "Active image
clustering with pairwise constraints from humans", IJCV 108). A pair the posterior has decided
(:math:`\max(s, 1 - s) \ge` ``confidence``) is never asked.

An item the model has not clustered (a links-only model knows only the items with links) has
the posterior predictive of a new item, approximated by the mean of the fitted
:math:`q(z)` (the expected cluster proportions).

**A batch.** Values come from one posterior, so a batch that asked the same item many times
would spend answers on what one answer settles. The questions are taken best first with each
item at most ``per_item`` times in the batch; when that leaves fewer than ``n``, the cap rises
by ``per_item`` and the pass repeats.

**Coverage first.** Nothing about an item is learnt before its first link. Pairs are ranked
first by how many of their two items have no link yet (two, then one, then none), then by
value — so at a cold start (few links, most items unseen) the questions first spread over the
unseen items, each at most ``per_item`` times per batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._utils import RandomState, as_generator
from ..data.validate import show_values
from ..gp.questions import binary_entropy
from ..roles.pair_questions import triangular_pair

__all__ = [
    "LinkPosterior",
    "link_posterior",
    "same_cluster_probability",
    "must_link_probability",
    "link_information",
    "suggest_links",
    "candidate_codes",
    "capped_batch",
    "MAX_CANDIDATE_PAIRS",
]

#: without candidates: every pair of the items when there are at most this many, else this
#: many distinct pairs drawn uniformly at random
MAX_CANDIDATE_PAIRS = 50_000


@dataclass(frozen=True)
class LinkPosterior:
    """What the questions need of a fitted model of links: ``probas`` (items × clusters, the
    posterior ``q(z)`` of every item of ``item_ids``; the prior predictive for an item the
    model has not clustered), ``links_per_item`` (links seen of each item), and the crowd's
    answer noise ``alpha`` and ``beta`` (link-weighted means of the workers' posterior means)."""

    item_ids: pd.Index
    probas: np.ndarray
    links_per_item: np.ndarray
    alpha: float
    beta: float


def link_posterior(model, links, items=None) -> LinkPosterior:
    """The :class:`LinkPosterior` of a fitted ``model`` of ``links`` (a
    :class:`~crowdbayes.data.links.Links`), over the items of the links (for a model of
    features: every item with features) and the ids ``items`` (e.g. items of a pool not linked
    yet)."""
    proba = model.predict_proba()
    ids = links.item_ids.append(proba.index)
    if items is not None:
        ids = ids.append(pd.Index(items))
    ids = pd.Index(ids.unique(), name="item")
    known = proba.to_numpy(dtype=np.float64)
    prior = known.mean(axis=0) if len(known) else np.full(proba.shape[1], 1.0 / proba.shape[1])
    probas = np.tile(prior, (len(ids), 1))
    where = ids.get_indexer(proba.index)
    probas[where] = known
    counts = np.bincount(
        np.concatenate([links.left_codes, links.right_codes]), minlength=links.n_items
    )
    links_per_item = np.zeros(len(ids), dtype=np.int64)
    links_per_item[ids.get_indexer(links.item_ids)] = counts
    workers = model.workers_
    weight = workers["n_links"].to_numpy(dtype=np.float64)
    alpha = float(np.average(workers["alpha"].to_numpy(dtype=np.float64), weights=weight))
    beta = float(np.average(workers["beta"].to_numpy(dtype=np.float64), weights=weight))
    return LinkPosterior(ids, probas, links_per_item, alpha, beta)


def same_cluster_probability(q_left: np.ndarray, q_right: np.ndarray) -> np.ndarray:
    """``s = Σ_k q_ik q_jk``: the probability that two items share a cluster under the
    factorised posterior (rows of ``q_left`` and ``q_right`` paired)."""
    return np.einsum("ik,ik->i", np.asarray(q_left), np.asarray(q_right))


def must_link_probability(same: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """``p = ᾱ s + (1 − β̄)(1 − s)``: the predictive probability of a must-link answer."""
    same = np.asarray(same, dtype=np.float64)
    return alpha * same + (1.0 - beta) * (1.0 - same)


def link_information(same: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The expected reduction in the entropy of a pair's assignments by one answer (nats):
    ``H(p) − s H(ᾱ) − (1 − s) H(β̄)`` (module docstring)."""
    same = np.clip(np.asarray(same, dtype=np.float64), 0.0, 1.0)
    p = must_link_probability(same, alpha, beta)
    value = binary_entropy(p) - same * binary_entropy(alpha) - (1 - same) * binary_entropy(beta)
    return np.maximum(value, 0.0)  # rounding below zero for decided pairs


def suggest_links(
    model,
    links,
    n: int,
    *,
    candidates: pd.DataFrame | None = None,
    items=None,
    per_item: int = 1,
    confidence: float | None = None,
    max_candidates: int = MAX_CANDIDATE_PAIRS,
    random_state: RandomState = None,
) -> pd.DataFrame:
    """The ``n`` item pairs most worth asking about next, best first (module docstring).

    Parameters
    ----------
    model : fitted model of links (``predict_proba``, ``workers_``)
    links : Links
        The links it was fitted to (which items have links, and how many).
    n : int
        Questions wanted.
    candidates : DataFrame, optional
        ``left``, ``right`` columns of item ids (of the links, or, for a model of features,
        of the items with features; ids the links do not know are refused unless the model
        clustered them). Default: every pair of those items when there are at most
        ``max_candidates``, else that many distinct pairs drawn at random.
    items : sequence, optional
        More item ids the candidates may name: items with no link yet (a replay's pool), which
        get the prior predictive ``q(z)`` and come first (coverage).
    per_item : int
        An item's appearances in the batch before the cap rises (module docstring).
    confidence : float, optional
        In (0.5, 1): a pair whose ``max(s, 1 − s)`` reaches it is decided and never asked.
    random_state : seed
        Draws the default candidates and breaks ties.

    Returns
    -------
    DataFrame with columns ``left``, ``right``, ``score`` (the information, nats),
    ``p_same`` (``s``) and ``unlinked`` (how many of the two items have no link yet); at most
    ``n`` rows, fewer when fewer candidates are undecided.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"suggest_links: n must be a positive integer; got {n!r}")
    if isinstance(per_item, bool) or not isinstance(per_item, (int, np.integer)) or per_item < 1:
        raise ValueError(f"suggest_links: per_item must be a positive integer; got {per_item!r}")
    if confidence is not None and not 0.5 < confidence < 1:
        raise ValueError(f"suggest_links: confidence must lie in (0.5, 1); got {confidence!r}")
    rng = as_generator(random_state)
    posterior = link_posterior(model, links, items)
    if candidates is None:
        left, right = _default_pairs(len(posterior.item_ids), max_candidates, rng)
    else:
        left, right = candidate_codes(candidates, posterior.item_ids)
    same = same_cluster_probability(posterior.probas[left], posterior.probas[right])
    score = link_information(same, posterior.alpha, posterior.beta)
    unlinked = (posterior.links_per_item[left] == 0).astype(np.int64)
    unlinked += posterior.links_per_item[right] == 0
    keep = np.ones(len(left), dtype=bool)
    if confidence is not None:
        keep = np.maximum(same, 1 - same) < confidence
    order = np.flatnonzero(keep)
    order = order[np.lexsort((rng.random(order.size), -score[order], -unlinked[order]))]
    chosen = capped_batch(left[order], right[order], n, per_item, len(posterior.item_ids))
    rows = order[chosen]
    ids = posterior.item_ids
    return pd.DataFrame(
        {
            "left": ids[left[rows]],
            "right": ids[right[rows]],
            "score": score[rows],
            "p_same": same[rows],
            "unlinked": unlinked[rows],
        }
    )


def capped_batch(left: np.ndarray, right: np.ndarray, n: int, per_item: int, n_items: int):
    """Positions of up to ``n`` of the ranked pairs ``(left, right)`` (item codes), in rank
    order, taking a pair only while each of its items appears fewer than ``cap`` times in the
    batch; ``cap`` starts at ``per_item`` and rises by it while fewer than ``n`` are taken."""
    taken = np.zeros(left.size, dtype=bool)
    uses = np.zeros(n_items, dtype=np.int64)
    count, cap = 0, per_item
    while count < min(n, left.size):
        for position in np.flatnonzero(~taken):
            if count == n:
                break
            i, j = left[position], right[position]
            if uses[i] < cap and uses[j] < cap:
                taken[position] = True
                uses[i] += 1
                uses[j] += 1
                count += 1
        cap += per_item
    return np.flatnonzero(taken)  # in rank order


def _default_pairs(n_items: int, limit: int, rng: np.random.Generator):
    total = n_items * (n_items - 1) // 2
    if total == 0:
        raise ValueError("suggest_links: fewer than two items, so there is no pair to ask about")
    if total <= limit:
        return np.triu_indices(n_items, k=1)
    return triangular_pair(np.sort(rng.choice(total, limit, replace=False)), n_items)


def candidate_codes(candidates: pd.DataFrame, item_ids: pd.Index):
    """The item codes (in ``item_ids``) of the candidate pairs' ``left`` and ``right``; refuses
    missing columns, an empty table, unknown items and an item paired with itself."""
    missing = [c for c in ("left", "right") if c not in candidates.columns]
    if missing:
        raise ValueError(f"candidates: column(s) {missing} missing; got {list(candidates.columns)}")
    if len(candidates) == 0:
        raise ValueError("candidates: the table is empty (0 rows)")
    left = item_ids.get_indexer(candidates["left"])
    right = item_ids.get_indexer(candidates["right"])
    unknown = pd.Index(
        np.concatenate(
            [candidates["left"].to_numpy()[left < 0], candidates["right"].to_numpy()[right < 0]]
        )
    ).unique()
    if len(unknown):
        raise ValueError(
            f"candidates: {len(unknown)} item(s) unknown (no link, no features, not in the "
            f"items): "
            f"{show_values(unknown)}"
        )
    same = np.flatnonzero(left == right)
    if same.size:
        raise ValueError(
            f"candidates: {same.size} row(s) pair an item with itself (first: item "
            f"{item_ids[left[same[0]]]!r}); a question needs two different items"
        )
    return left, right
