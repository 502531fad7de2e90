"""Which choice sets to show next to a Plackett–Luce model, and a replay of real choices.

A candidate question is a choice set A (a set of two or more items, a pair included); its answer
is the item c ∈ A the respondent picks, with p(c | A, u) = exp(u_c) / Σ_{j∈A} exp(u_j)
(Plackett–Luce's top-1 stage; Guo et al. 2019, Eq. 3). Its value is the expected information
gain about the utilities u (Houlsby et al. 2011, "BALD"; MacKay 1992):

    I(c; u | A, D) = H[ E_u p(c | A, u) ] − E_u H[ p(c | A, u) ],

the entropy of the predictive choice minus the expected entropy of the choice given u: high
where the model is unsure which item will be picked *because* it is unsure of u, and zero for
a set whose choice is a coin flip the model already knows the odds of. Both expectations are
over the posterior of u given the answers so far, D, estimated from S joint posterior draws
u⁽¹⁾ … u⁽ˢ⁾ (seeded): with p̂_s = p(· | A, u⁽ˢ⁾) and p̄ = (1/S) Σ_s p̂_s,

    Î = H(p̄) − (1/S) Σ_s H(p̂_s),

a consistent estimator, biased low by O(1/S) (the entropy of a mean of S draws is concave in
them, Jensen). With item features (u = Xθ, θ ~ N(μ, Σ): the Gaussian of
:class:`~crowdbayes.PlackettLuceVI`, Guo et al. 2019, Algorithm 1) the draws are u⁽ˢ⁾ = Xθ⁽ˢ⁾;
without features they are the sampler's own draws (:class:`~crowdbayes.PlackettLuceGibbs`). A
point estimate (MAP, MM) carries no uncertainty about u, so every set would be worth zero: it is
refused. For pairs with a probit answer the same quantity has a closed form (Houlsby et al.
2011; :func:`~crowdbayes.gp.questions.probit_information_gain`); for a choice among m
items it has none, hence the draws. Maystre & Grossglauser (2017) find, for Bradley–Terry and
Plackett–Luce, that asking about items close in utility — the questions whose outcome is
uncertain, which the entropy term favours — learns a ranking about as fast as elaborate active
strategies; the second term discounts the uncertainty that no answer can reduce.

The top-k boundary (``strategy="top"``, models with features): when what matters is which k
items are best, a set is worth what it tells about the items whose membership of the top k is
in doubt. With p_i = P(i among the k of highest u) over the draws (the share of draws in which
u_i reaches the draw's k-th largest utility; every item of the feature table counts) and
w_i = p_i(1 − p_i), the target is the weighted variance of the utility differences among those
items, which for u = Xθ, θ ~ N(μ, Σ) is linear in Σ:

    Σ_{i<j} w_i w_j Var(u_i − u_j) = (Σ_i w_i) tr(W Σ),  W = Σ_i w_i (x_i − x̄_w)(x_i − x̄_w)ᵀ,

x̄_w the w-weighted mean of the features — an L-optimal design criterion (Chaloner &
Verdinelli 1995, §2.3) whose weights are those of the k-th/(k+1)-th boundary, as LUCB samples
the arms on either side of it (Kalyanakrishnan et al. 2012). One choice from A adds the Fisher
information F_A = X_Aᵀ(diag p − p pᵀ)X_A at p = softmax(X_A μ) (McFadden 1974) to Σ⁻¹, so that
with F_A = G_Aᵀ G_A (rows √p_j (x_j − Σ_l p_l x_l)) the expected fall of tr(W Σ) is, by the
Woodbury identity, tr((I + G_A Σ G_Aᵀ)⁻¹ G_A Σ W Σ G_Aᵀ) (the Laplace approximation of the
posterior; Chaloner & Verdinelli 1995, §2.1). A batch is chosen greedily: each set the one of
largest fall given the sets before it, Σ ← Σ − Σ G_Aᵀ(I + G_A Σ G_Aᵀ)⁻¹ G_A Σ after it, so that a
batch does not ask the same contrast many times over (where BALD's best-first order would).

Top-two Thompson sampling for the top k (``strategy="thompson"``, models with features): each
slot of the batch draws two joint posterior draws u⁽ᵃ⁾, u⁽ᵇ⁾ whose top-k sets T_a, T_b differ
(b drawn among the draws that disagree with a: Russo 2016's top-two sampling, applied to the
top-k set, the target of Chen, Li, Mao 2018 under the multinomial logit and of Jun et al. 2016
with batches) and asks the set that most lowers the variance of the utility differences that
decide between them,

    tr(W_t Σ),  W_t = (1 / |A||B|) Σ_{i∈A, j∈B} (x_i − x_j)(x_i − x_j)ᵀ,  A = T_a∖T_b, B = T_b∖T_a,

the mean of Var(u_i − u_j) over the contested pairs, by the same Woodbury step as ``top`` (Σ
updated after each slot). ``top`` weighs every doubtful item at once by p_i(1 − p_i) and so
asks, slot after slot, about the same few directions of θ; here each slot asks about the
contrast of one pair of plausible top-k sets, drawn in proportion to the posterior's belief in
them, so that a batch spreads over the contrasts the posterior still doubts. When every draw
has the same top k, W_t is the ``top`` weight. Measured on the recorded car choices
(``benchmarks/active/results/rank_next_replay_thompson.md``) it is no better than random sets
(median ratio 0.99 of random's sets for the full-data top ten, 8 seeds), as ``top``; on
choices drawn from the fitted model it reaches 9 of the top ten sooner than random sets.

Exploration (``explore=ε``): a share ε of each batch is drawn uniformly from the candidates the
strategy did not pick. An active design fits the model where it chooses to ask; when the model
is wrong, the fit then answers for those sets and not for the pool (the active-learning bias of
Farquhar, Gal, Rainforth 2021). With a uniform share ε every candidate keeps a probability of
at least ε·n/N per round of being asked (N candidates), so the revealed sets stay within a
factor 1/ε of a uniform sample's make-up — the defensive mixture of importance sampling
(Hesterberg 1995), here without the weights. On the car choices it did not help
(``thompson`` with ε = 0.5: ratio 1.11 of random's sets, 8 seeds; the same report).

Sampled sets with importance weights (``strategy="sampled"``, ``rank next``'s default with
PlackettLuceVI): the batch is drawn from the N candidates one set at a time without
replacement, set i with probability proportional to

    q_i = (1 − ε) Î_i / Σ_j Î_j + ε / N      (ε = ``explore``, default 0.5),

and each drawn set carries the importance ratio r_m = 1 / (N_m q_m) of a uniform draw to this
one (N_m the candidates left at draw m, q_m its probability among them). Fitted with these
weights (``Rankings(..., weight=)``), the log-likelihood estimates that of a uniform sample of
the candidates — exactly without bias with the LURE weights of Farquhar, Gal, Rainforth 2021
(:func:`lure_weights`, which become 1 as a fixed pool is exhausted), approximately with the
plain ratios, their limit while few of the pool are drawn — so the fit answers for the whole
pool and not for the sets the design favoured: the active-learning bias above, removed rather
than diluted. The uniform share bounds every weight by N/(N_m ε), about 1/ε = 2 while few of
the N are drawn, so that the second moment of a weighted sum is at most 1/ε times a uniform
sample's (Hesterberg 1995's defensive mixture), and the gain spends the other half of the
draws where the answers are informative. The share was chosen among 0.3, 0.5 and 0.6 by a
rule written down before the deciding results were seen: never farther from the full-data
fit, nor lower in top-10 overlap, than random sets by two paired standard errors over a
stretch of the collection (first 20%, 20–55%, last 45%, whole), on the recorded car choices
(24 seeds) and on choices drawn from the fitted model (16 seeds;
``benchmarks/active/results/rank_next_replay.md`` and ``rank_next_replay_synthetic.md``, whose
notes give the rule, its reading and the runs). 0.3, the default before, lay 1.38 times
random's distance over the first 20% of the drawn choices (3.0 s.e.), 0.6 1.17 times over all
of them (2.4 s.e.); 0.5 is never worse than random by more than 1.4 s.e. over a stretch of
either. With it the LURE-weighted refits of the recorded choices lie 0.74
times random sets' distance from the full-data fit over 20–55% of the sets (geometric mean of
(θ − θ_full)ᵀS_full⁻¹(θ − θ_full); 3.5 s.e. closer), 0.90 times over the whole collection, and
their top-10 overlap is never below random's by more than 1.31 paired s.e. at any budget; the
best-first order lies 3.4 times random's distance there. With the plain ratios the draws
lie 0.75 times random's distance over 20–55% but 1.45 times once most of the pool is asked
(their bias as the pool runs out, which the LURE weights remove). On the drawn choices, where
the model holds, the weighted draws lie 1.03 times random's distance (not significant).

Cold start (coverage first): an item that was never shown has had no chance to be chosen, so
its utility is known only through its features, if at all. A set with more never-shown items
comes first; inside a batch the choice is greedy, each chosen set's items counting as shown for
the next (a set cover of the new items, as :class:`~crowdbayes.active.PairPool`'s
``item_coverage`` for pairs). Among sets that show the same number of new items — every set
once all items are covered, or every set of a data set whose items are unique to their set —
the strategy decides (:func:`~crowdbayes.gp.questions.question_order`: ``information`` best
first, ``power`` drawn with probability proportional to the gain, ``mixed`` alternating best
first with a uniform draw, ``uncertainty`` by the predictive entropy H(p̄) alone, ``random``,
``top`` the greedy batch of the top-k boundary above, ``thompson`` the top-two Thompson batch,
the sets they do not pick after it in a random order).

References: K. Chaloner, I. Verdinelli, "Bayesian experimental design: a review",
Statistical Science 10(3), 1995. D. Russo, "Simple Bayesian algorithms for best arm
identification", COLT 2016. K.-S. Jun, K. Jamieson, R. Nowak, X. Zhu, "Top arm identification
in multi-armed bandits with batch arm pulls", AISTATS 2016. X. Chen, Y. Li, J. Mao, "A nearly
instance optimal algorithm for top-k ranking under the multinomial logit model", SODA 2018.
S. Kalyanakrishnan, A. Tewari, P. Auer, P. Stone, "PAC subset selection in stochastic
multi-armed bandits", ICML 2012. D. McFadden, "Conditional logit
analysis of qualitative choice behavior", in Frontiers in Econometrics, 1974. N. Houlsby,
F. Huszár, Z. Ghahramani, M. Lengyel, "Bayesian active learning for classification and
preference learning", arXiv:1112.5745, 2011. D. J. C. MacKay,
"Information-based objective functions for active data selection", Neural Computation 4(4),
1992. L. Maystre, M. Grossglauser, "Just sort it! A simple and effective approach to active
preference learning", ICML 2017. Y. Guo, J. Dy, D. Erdoğmuş, J. Kalpathy-Cramer, S. Ostmo,
J. P. Campbell, M. F. Chiang, S. Ioannidis, "Variational inference from ranked samples with
features", ACML 2019. S. Farquhar, Y. Gal, T. Rainforth, "On statistical bias in active
learning: how and when to fix it", ICLR 2021. T. Hesterberg, "Weighted average importance
sampling and defensive mixture distributions", Technometrics 37(2), 1995. W. Kool, H. van
Hoof, M. Welling, "Stochastic beams and where to find them: the Gumbel-top-k trick for sampling
sequences without replacement", ICML 2019. T. Vieira, "Gumbel-max trick and weighted reservoir
sampling", 2014.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._utils import RandomState, as_generator
from ..data.features import FeatureTable, read_features
from ..data.rankings import Rankings
from ..data.validate import show_id, show_values
from ..gp.question_strategies import PAIR_QUESTION_VALUES
from ..gp.questions import question_order

__all__ = [
    "SET_QUESTION_VALUES",
    "ChoiceSets",
    "boundary_design",
    "boundary_weight",
    "choice_fisher_factors",
    "contested_weights",
    "choice_information",
    "lure_weights",
    "replay_choice_sets",
    "sampling_proposal",
    "sequential_draws",
    "suggest_sets",
    "top_membership",
    "utility_draws",
]

#: how a set can be valued: the names and meanings of the pairwise strategies, ``top`` (the
#: expected fall of the top-k boundary's uncertainty) and ``thompson`` (top-two Thompson
#: sampling of the top-k set; module docstring)
SET_QUESTION_VALUES = ("sampled", "top", "thompson", *PAIR_QUESTION_VALUES)
#: ``strategy="sampled"``'s uniform share ε of the proposal when ``explore`` is not given
SAMPLED_UNIFORM_SHARE = 0.5
#: the strategies that choose a greedy batch by the fall of tr(W Σ) (models with features)
BOUNDARY_VALUED = ("top", "thompson")


@dataclass(frozen=True)
class ChoiceSets:
    """Candidate choice sets: set ``k`` is ``items[members[offsets[k]:offsets[k + 1]]]``.

    ``ids`` are the sets' ids (unique), ``items`` the distinct member ids."""

    ids: pd.Index
    items: pd.Index
    members: np.ndarray
    offsets: np.ndarray

    @classmethod
    def from_table(cls, table: pd.DataFrame, *, set_column: str, item_column: str) -> ChoiceSets:
        """The sets of a long ``set, item`` table (one row per member; other columns, such
        as the ``rank`` of recorded choices, are ignored); refused when empty, when a row lacks
        its set or item, when a set repeats an item or holds fewer than two."""
        for column in (set_column, item_column):
            if column not in table.columns:
                raise ValueError(
                    f"candidates: column {column!r} is missing; got {list(map(str, table.columns))}"
                )
        if len(table) == 0:
            raise ValueError("candidates: no choice set (the table has no rows)")
        missing = table[[set_column, item_column]].isna().any(axis=1).to_numpy()
        if missing.any():
            raise ValueError(
                f"candidates: {int(missing.sum())} row(s) have no {set_column} or no "
                f"{item_column} (first: row {int(np.argmax(missing)) + 1})"
            )
        set_codes, ids = pd.factorize(table[set_column], sort=False)
        item_codes, items = pd.factorize(table[item_column], sort=False)
        repeated = pd.DataFrame({"s": set_codes, "i": item_codes}).duplicated().to_numpy()
        if repeated.any():
            row = int(np.argmax(repeated))
            raise ValueError(
                f"candidates: set {show_id(ids[set_codes[row]])} lists item "
                f"{show_id(items[item_codes[row]])} twice"
            )
        order = np.argsort(set_codes, kind="stable")
        sizes = np.bincount(set_codes, minlength=len(ids))
        small = np.flatnonzero(sizes < 2)
        if small.size:
            raise ValueError(
                f"candidates: {small.size} set(s) hold a single item (first: "
                f"{show_id(ids[small[0]])}); a choice needs at least two"
            )
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        return cls(
            pd.Index(ids, name=set_column),
            pd.Index(items, name=item_column),
            item_codes[order].astype(np.int64),
            offsets.astype(np.int64),
        )

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def take(self, positions: np.ndarray) -> ChoiceSets:
        """The sets at ``positions`` (in that order), sharing the item index."""
        positions = np.asarray(positions, dtype=np.int64)
        starts, sizes = self.offsets[positions], self.sizes[positions]
        where = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
        members = self.members[where + np.arange(sizes.sum())]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return ChoiceSets(self.ids[positions], self.items, members, offsets)

    def long(self, values: pd.DataFrame | None = None) -> pd.DataFrame:
        """One row per member: the set id, the item id, and the set's ``values`` (one row per
        set, in set order) repeated over its members."""
        table = pd.DataFrame(
            {
                self.ids.name or "query": np.repeat(self.ids.to_numpy(), self.sizes),
                self.items.name or "item": self.items.to_numpy()[self.members],
            }
        )
        if values is None:
            return table
        repeated = values.iloc[np.repeat(np.arange(len(self)), self.sizes)]
        return pd.concat([table, repeated.reset_index(drop=True)], axis=1)


# ------------------------------------------------------------------------------ the posterior
def utility_draws(
    model,
    items: pd.Index,
    n_draws: int,
    random_state: RandomState = None,
    *,
    features: FeatureTable | pd.DataFrame | None = None,
) -> np.ndarray:
    """Joint posterior draws of the utilities (log-scores) of ``items``, shape
    ``(len(items), n_draws)``.

    A model with item features (``tags.features != "none"``): its ``posterior_draws`` —
    θ⁽ˢ⁾ ~ N(``coef_``, ``coef_cov_``) and u⁽ˢ⁾ = Xθ⁽ˢ⁾ (plus the item effects of
    ``PlackettLuceVI(item_effects=...)``), the rows of X taken from ``features`` (every item
    must have one). A sampled model without features (``tags.posterior == "sampled"``):
    ``n_draws`` of its draws (``samples_``), taken at random with replacement; every item must
    have been fitted. A point estimate is refused (it has no uncertainty to reduce)."""
    tags = model.tags
    name = type(model).__name__
    rng = as_generator(random_state)
    if tags.posterior == "point":
        raise ValueError(
            f"{name} is a point estimate: the information gain needs a posterior over the "
            "utilities (PlackettLuceVI, or PlackettLuceGibbs without features)"
        )
    if tags.features != "none":
        if features is None:
            raise ValueError(f"{name} scores items by their features: give the features")
        table = read_features(features).require_names(model.feature_names_)
        X = table.take(items, needed_by="candidates")
        # the model's own joint draws: Xθ, θ ~ N(coef_, coef_cov_) (the same stream as
        # before), plus PlackettLuceVI's item effects u when it has them
        rows = FeatureTable(pd.Index(items), X, list(model.feature_names_), "candidates")
        return model.posterior_draws(rows, n_draws, rng)
    if tags.posterior != "sampled":
        raise ValueError(f"{name}: no joint posterior draws of the utilities")
    codes = model.item_ids_.get_indexer(items)
    if (codes < 0).any():
        unknown = items[codes < 0]
        raise ValueError(
            f"candidates: {len(unknown)} item id(s) were not in the fitted rankings: "
            f"{show_values(unknown)} ({name} has no features, so it knows only those)"
        )
    samples = model.samples_.reshape(-1, len(model.item_ids_))
    rows = rng.integers(len(samples), size=n_draws)
    return samples[rows][:, codes].T


def choice_information(
    draws: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per set: the Monte Carlo information gain Î = H(p̄) − mean_s H(p̂_s) (nats) and the
    predictive entropy H(p̄) (module docstring); per member: its predictive choice probability
    p̄. From ``draws`` of the members' utilities (rows: the sets' members concatenated, set
    ``k`` at ``offsets[k]:offsets[k + 1]``; columns: joint posterior draws)."""
    starts = offsets[:-1]
    sizes = np.diff(offsets)
    peak = np.maximum.reduceat(draws, starts, axis=0)
    shifted = draws - np.repeat(peak, sizes, axis=0)
    log_norm = np.log(np.add.reduceat(np.exp(shifted), starts, axis=0))
    log_p = shifted - np.repeat(log_norm, sizes, axis=0)
    p = np.exp(log_p)
    expected = -np.add.reduceat(p * log_p, starts, axis=0).mean(axis=1)
    p_bar = p.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p_bar > 0, p_bar * np.log(p_bar), 0.0)
    predictive = -np.add.reduceat(terms, starts)
    return np.maximum(predictive - expected, 0.0), predictive, p_bar


# ------------------------------------------------------------------------------ the top-k boundary
def top_membership(draws: np.ndarray, k: int) -> np.ndarray:
    """P(item i is among the ``k`` of highest utility), per row of ``draws`` (items × joint
    posterior draws): the share of the draws in which u_i is at least the draw's k-th largest
    utility."""
    if not 1 <= k < len(draws):
        raise ValueError(f"top_k must be between 1 and {len(draws) - 1} got {k}")
    kth = np.partition(draws, len(draws) - k, axis=0)[len(draws) - k]
    return (draws >= kth).mean(axis=1)


def boundary_weight(X: np.ndarray, membership: np.ndarray) -> np.ndarray:
    """W = Σ_i w_i (x_i − x̄_w)(x_i − x̄_w)ᵀ with w_i = p_i(1 − p_i), p_i the top-k membership
    of item i, x̄_w the w-weighted mean of its features (module docstring: Σ_{i<j} w_i w_j
    Var(u_i − u_j) = (Σ_i w_i) tr(W Σ_θ) for u = Xθ)."""
    w = membership * (1.0 - membership)
    if w.sum() <= 0:
        return np.zeros((X.shape[1], X.shape[1]))
    centred = X - (w @ X) / w.sum()
    return (centred * w[:, None]).T @ centred


def contested_weights(
    draws: np.ndarray, X: np.ndarray, k: int, n: int, rng: np.random.Generator
) -> np.ndarray:
    """``n`` top-two Thompson weights W_t (module docstring), shape (n, features, features):
    per slot a draw a at random and a draw b among those whose top-``k`` set differs from a's,
    W_t the mean of (x_i − x_j)(x_i − x_j)ᵀ over i ∈ T_a∖T_b, j ∈ T_b∖T_a. ``draws``: items ×
    joint posterior draws; ``X``: the items' features. When every draw has the same top k, the
    slot's weight is :func:`boundary_weight` (zero there)."""
    fallback = boundary_weight(X, top_membership(draws, k))  # (checks k)
    top = np.sort(np.argpartition(-draws, k - 1, axis=0)[:k], axis=0)  # (k, draws)
    weights = np.empty((n, X.shape[1], X.shape[1]))
    for t in range(n):
        a = int(rng.integers(draws.shape[1]))
        rivals = np.flatnonzero((top != top[:, [a]]).any(axis=0))
        if rivals.size == 0:
            weights[t] = fallback
            continue
        b = int(rivals[rng.integers(rivals.size)])
        ours, theirs = np.setdiff1d(top[:, a], top[:, b]), np.setdiff1d(top[:, b], top[:, a])
        d = (X[ours][:, None, :] - X[theirs][None, :, :]).reshape(-1, X.shape[1])
        weights[t] = d.T @ d / len(d)
    return weights


def choice_fisher_factors(X: np.ndarray, sets: ChoiceSets, theta: np.ndarray) -> np.ndarray:
    """Per set A a factor G_A (rows √p_j (x_j − Σ_l p_l x_l), j ∈ A, zero rows padding to the
    largest set) of the Fisher information of one choice about θ at ``theta``:
    G_Aᵀ G_A = X_Aᵀ (diag p − p pᵀ) X_A with p = softmax(X_A θ). ``X``: the features of
    ``sets.items``. Shape (sets, largest size, features)."""
    starts, sizes = sets.offsets[:-1], sets.sizes
    xs = X[sets.members]
    u = xs @ theta
    e = np.exp(u - np.repeat(np.maximum.reduceat(u, starts), sizes))
    p = e / np.repeat(np.add.reduceat(e, starts), sizes)
    mean = np.add.reduceat(p[:, None] * xs, starts, axis=0)
    G = np.zeros((len(sets), int(sizes.max()), X.shape[1]))
    slot = np.arange(len(xs)) - np.repeat(starts, sizes)
    G[np.repeat(np.arange(len(sets)), sizes), slot] = np.sqrt(p)[:, None] * (
        xs - np.repeat(mean, sizes, axis=0)
    )
    return G


def boundary_design(
    G: np.ndarray, cov: np.ndarray, weight: np.ndarray, n: int, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy batch: ``n`` sets, each the one whose Fisher information most lowers
    tr(W Σ) given the sets chosen before it (module docstring), Σ starting at ``cov``;
    ``weight`` is W, or one W per slot (shape (n, features, features)). Returns the chosen set
    positions (in the order chosen) and each one's fall of tr(W Σ)."""
    weight = np.asarray(weight, dtype=np.float64)
    weights = weight if weight.ndim == 3 else np.broadcast_to(weight, (n, *weight.shape))
    C = np.array(cov, dtype=np.float64, copy=True)
    eye = np.eye(G.shape[1])
    free = np.ones(len(G), dtype=bool) if allowed is None else allowed.copy()
    Gt = G.transpose(0, 2, 1)
    chosen, gains = [], []
    for step in range(min(n, int(free.sum()))):
        P = G @ C
        M = eye + P @ Gt
        quad = P @ weights[step] @ P.transpose(0, 2, 1)
        gain = np.trace(np.linalg.solve(M, quad), axis1=1, axis2=2)
        gain[~free] = -np.inf
        best = int(np.argmax(gain))
        chosen.append(best)
        gains.append(max(float(gain[best]), 0.0))
        free[best] = False
        C = C - P[best].T @ np.linalg.solve(M[best], P[best])
        C = (C + C.T) / 2
    return np.asarray(chosen, dtype=np.int64), np.asarray(gains)


# ------------------------------------------------------------------------------ the choice
def suggest_sets(
    model,
    candidates: ChoiceSets,
    n: int,
    *,
    features: FeatureTable | pd.DataFrame | None = None,
    shown: pd.Index | None = None,
    strategy: str = "information",
    confidence: float | None = None,
    coverage: bool = True,
    n_draws: int = 256,
    top_k: int = 10,
    explore: float | None = None,
    random_state: RandomState = None,
) -> pd.DataFrame:
    """The ``n`` candidate sets to show next, first to show first.

    ``shown``: the items shown so far (default: the model's fitted items); with ``coverage``
    the sets with the most never-shown items come first, greedily within the batch (module
    docstring), then ``strategy`` orders the rest. ``confidence``: a set whose most probable
    choice the model already predicts with at least this probability is decided and left out.
    ``top_k``: the size of the top set for ``strategy="top"`` and ``"thompson"``. ``explore``:
    the share ε of the batch drawn uniformly from the candidates the strategy did not pick (the
    strategy picks the other (1 − ε)n; default 0; module docstring); for ``"sampled"`` the
    uniform share of its proposal (default :data:`SAMPLED_UNIFORM_SHARE`). Returns one
    row per set, indexed by set id: ``score`` (the information gain in nats; for
    ``uncertainty`` the predictive entropy; for ``random`` the information gain, for the
    record; for ``top`` and ``thompson`` the fall of tr(W Σ) when the set was chosen, 0 after
    the batch), ``new_items`` (never-shown members
    when it was chosen), ``p_max`` (the predicted probability of its most probable choice);
    for ``"sampled"`` also ``weight``, the set's importance weight (module docstring; 1 for a
    set taken first because it showed more never-shown items than another set)."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"suggest_sets: n must be a positive integer; got {n!r}")
    if strategy not in SET_QUESTION_VALUES:
        raise ValueError(
            f"suggest_sets: strategy must be one of {show_values(SET_QUESTION_VALUES)}; got "
            f"{strategy!r}"
        )
    if explore is None:
        explore = SAMPLED_UNIFORM_SHARE if strategy == "sampled" else 0.0
    if not 0.0 <= explore <= 1.0:
        raise ValueError(f"suggest_sets: explore must be between 0 and 1; got {explore!r}")
    if strategy == "sampled" and explore == 0.0:
        raise ValueError(
            "suggest_sets: strategy 'sampled' needs a uniform share explore > 0 (it bounds "
            "the weights)"
        )
    if len(candidates) == 0:
        raise ValueError("candidates: no choice set")
    rng = as_generator(random_state)
    if strategy in BOUNDARY_VALUED:
        table = _feature_table(model, features, strategy)
        table.take(candidates.items, needed_by="candidates")  # every candidate has features
        every = utility_draws(model, table.ids, n_draws, rng, features=table)
        draws = every[table.ids.get_indexer(candidates.items)]
    else:
        draws = utility_draws(model, candidates.items, n_draws, rng, features=features)
    info, entropy, p_bar = choice_information(draws[candidates.members], candidates.offsets)
    p_max = np.maximum.reduceat(p_bar, candidates.offsets[:-1])
    keep = np.arange(len(candidates))
    if confidence is not None:
        keep = np.flatnonzero(p_max < confidence)
    sampled = strategy == "sampled"
    drawn = 0 if sampled else int(round(explore * min(n, len(keep))))
    designed = min(n, len(keep)) - drawn
    if strategy in BOUNDARY_VALUED:
        if strategy == "top":
            weight = boundary_weight(table.values, top_membership(every, top_k))
        else:
            weight = contested_weights(every, table.values, top_k, designed, rng)
        score, order = _boundary_order(model, candidates, table, weight, keep, designed, rng)
    elif sampled:
        score = info
        proposal = np.zeros(len(candidates))
        proposal[keep] = sampling_proposal(info[keep], explore)
        order = keep[sequential_draws(proposal[keep], rng)]
    else:
        score = entropy if strategy == "uncertainty" else info
        # "random" is a uniform order (the score is kept for the record); the others by score
        value = rng.random(len(score)) if strategy == "random" else score
        order = keep[question_order(value[keep], strategy, rng)]
    if drawn:
        rest = order[designed:]
        order = np.concatenate([order[:designed], rng.permutation(rest)])
    shown = model.item_ids_ if shown is None else pd.Index(shown)
    new = ~candidates.items.isin(shown)
    if coverage:
        # sampled: a forced pick breaks its tie uniformly at random, as a uniform design that
        # also takes such sets first would (weight 1 relative to that design, given the draws
        # before it), with randomness of its own, so that the draws after it are not
        # conditioned by the tie it won
        tie_rng = rng if sampled else None
        chosen, new_items, forced = _coverage_first(candidates, order, new, n, tie_rng=tie_rng)
    else:
        chosen = order[:n]
        counts = np.add.reduceat(new[candidates.members].astype(np.int64), candidates.offsets[:-1])
        new_items, forced = counts[chosen], np.zeros(len(chosen), dtype=bool)
    columns = {"score": score[chosen], "new_items": new_items, "p_max": p_max[chosen]}
    if sampled:
        columns["weight"] = _draw_weights(proposal, keep, chosen, forced)
    return pd.DataFrame(columns, index=candidates.ids[chosen])


def sampling_proposal(gain: np.ndarray, share: float) -> np.ndarray:
    """q_i = (1 − ε) g_i / Σ_j g_j + ε / N over N candidates (g clipped at 0; uniform where
    every gain is 0): the defensive mixture of the information gain with a uniform share ε."""
    g = np.clip(gain, 0.0, None)
    if len(g) == 0:  # every candidate decided (``confidence``)
        return g
    total = g.sum()
    if not total > 0:
        return np.full(len(g), 1.0 / len(g))
    return (1.0 - share) * g / total + share / len(g)


def sequential_draws(proposal: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random order of the candidates distributed as drawing them one at a time without
    replacement, each draw with probability proportional to ``proposal`` among those left: the
    order of log q_i + Gumbel noise, largest first (the Gumbel-top-k trick; Vieira 2014,
    Kool, van Hoof, Welling 2019)."""
    return np.argsort(-(np.log(proposal) + rng.gumbel(size=len(proposal))), kind="stable")


def _draw_weights(proposal, keep, chosen, covered) -> np.ndarray:
    """The importance weights r_m = 1 / (N_m q_m) of the sets drawn in ``chosen``'s order (N_m
    the candidates left at draw m, q_m its draw probability among them); 1 for the ``covered``
    sets, taken first for showing more never-shown items than others."""
    mass, left = proposal[keep].sum(), len(keep)
    weights = np.ones(len(chosen))
    for m in range(len(chosen)):  # in draw order: a forced pick leaves the pool when taken
        q = proposal[chosen[m]]
        if not covered[m]:
            weights[m] = mass / (left * q)
        mass -= q
        left -= 1
    return weights


def lure_weights(ratios: np.ndarray, pool_size: int) -> np.ndarray:
    """LURE weights (Farquhar, Gal, Rainforth 2021, Eq. 5) of M sets drawn one at a time from a
    fixed pool of N, from their importance ratios r_m = 1 / ((N − m + 1) q_m) in draw order
    (``suggest_sets``'s ``weight`` column, rounds concatenated; 1 for a uniform draw):

        v_m = 1 + (N − M)/(N − m) · (r_m − 1),

    so that (1/M) Σ_m v_m L_m is unbiased for the pool's mean loss at every M, and v_m = 1 once
    the whole pool is drawn (M = N); the plain ratios r_m are the limit M ≪ N. It assumes
    every one of the M was drawn from all the pool's sets left (N_m = N − m + 1): sets left out
    by ``confidence`` or taken for their never-shown items (weight 1) break that."""
    ratios = np.asarray(ratios, dtype=np.float64)
    M, N = len(ratios), int(pool_size)
    if M > N:
        raise ValueError(f"lure_weights: {M} draws from a pool of {N}")
    m = np.arange(1, M + 1)
    factor = np.where(m < N, (N - M) / np.maximum(N - m, 1), 0.0)
    return 1.0 + factor * (ratios - 1.0)


def _feature_table(model, features, strategy: str) -> FeatureTable:
    """The feature table of a feature model, for the top-k boundary (refused otherwise)."""
    name = type(model).__name__
    if model.tags.features == "none" or model.tags.posterior == "point":
        raise ValueError(
            f"strategy {strategy!r} needs a posterior over feature weights (PlackettLuceVI "
            f"with features); {name} has none"
        )
    if features is None:
        raise ValueError(f"{name} scores items by their features: give the features")
    return read_features(features).require_names(model.feature_names_)


def _boundary_order(model, candidates, table, weight, keep, n, rng):
    """Strategies ``top`` and ``thompson``: the sets :func:`boundary_design` picks among
    ``keep`` with ``weight`` (the batch's first ``n``), then the rest of ``keep`` in a random
    order. Returns each candidate's score (its fall of tr(W Σ) when chosen, 0 for the others)
    and the order."""
    G = choice_fisher_factors(
        table.take(candidates.items, needed_by="candidates"), candidates, model.coef_.to_numpy()
    )
    allowed = np.zeros(len(candidates), dtype=bool)
    allowed[keep] = True
    picked, gains = boundary_design(G, model.coef_cov_.to_numpy(), weight, n, allowed)
    score = np.zeros(len(candidates))
    score[picked] = gains
    allowed[picked] = False
    rest = rng.permutation(np.flatnonzero(allowed))
    return score, np.concatenate([picked, rest])


def _coverage_first(
    sets: ChoiceSets,
    order: np.ndarray,
    new: np.ndarray,
    n: int,
    tie_rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Greedy: while a candidate shows a never-shown item, take the one showing the most (ties
    in ``order``, or uniformly at random by ``tie_rng`` when some set left shows fewer), its
    items then counting as shown; then the rest in ``order``. Returns the chosen set positions,
    the new items each showed when chosen, and whether coverage forced it (it showed more new
    items than some other set left; where every set left shows as many, ``order`` alone
    decides, as for the rest)."""
    rank = np.empty(len(sets), dtype=np.int64)
    rank[order] = np.arange(len(order))
    allowed = np.zeros(len(sets), dtype=bool)
    allowed[order] = True
    owner = np.repeat(np.arange(len(sets)), sets.sizes)
    count = np.bincount(owner, new[sets.members].astype(np.int64), minlength=len(sets))
    count[~allowed] = -1
    # the sets holding each item (CSR), to update the counts when an item is covered
    by_item = np.argsort(sets.members, kind="stable")
    item_start = np.searchsorted(sets.members[by_item], np.arange(len(sets.items) + 1))
    new = new.copy()
    chosen, shows, forced = [], [], []
    taken = np.zeros(len(sets), dtype=bool)
    while len(chosen) < n:
        best = count.max() if len(count) else -1
        if best <= 0:
            break
        tied = np.flatnonzero(count == best)
        is_forced = len(tied) < int((count >= 0).sum())
        if is_forced and tie_rng is not None:
            pick = int(tie_rng.choice(tied))
        else:
            pick = int(tied[np.argmin(rank[tied])])
        chosen.append(pick)
        shows.append(int(best))
        forced.append(is_forced)
        taken[pick] = True
        count[pick] = -1
        for item in sets.members[sets.offsets[pick] : sets.offsets[pick + 1]]:
            if new[item]:
                new[item] = False
                holders = owner[by_item[item_start[item] : item_start[item + 1]]]
                holders = holders[~taken[holders] & allowed[holders]]
                count[holders] -= 1
    rest = order[~taken[order]][: n - len(chosen)]
    return (
        np.concatenate([np.asarray(chosen, dtype=np.int64), rest]),
        np.concatenate([np.asarray(shows, dtype=np.int64), np.zeros(len(rest), np.int64)]),
        np.concatenate([np.asarray(forced, dtype=bool), np.zeros(len(rest), dtype=bool)]),
    )


# ------------------------------------------------------------------------------ the replay
def replay_choice_sets(
    model,
    rankings: pd.DataFrame,
    items: pd.DataFrame | None,
    *,
    start: int,
    batch: int,
    score: Callable[[object], float],
    strategy: str = "information",
    coverage: bool = True,
    budget: int | None = None,
    n_draws: int = 256,
    top_k: int = 10,
    explore: float | None = None,
    weights: str = "lure",
    query: str = "query",
    item: str = "item",
    rank: str = "rank",
    random_state: RandomState = None,
) -> pd.DataFrame:
    """Replay recorded choices: ``start`` sets (queries of ``rankings``, a long ``query, item,
    rank`` table) drawn at random are revealed, then each round ``batch`` of the others are
    chosen — by :func:`suggest_sets` with ``strategy`` (and ``coverage``, ``explore``), or
    uniformly at random for ``strategy="random"`` without coverage — their recorded choices
    revealed and the model refitted, until ``budget`` sets (default: all) have been revealed.
    With ``strategy="sampled"`` the refits weigh the sets (``model`` must take case weights):
    ``weights="lure"`` by :func:`lure_weights` over the pool of recorded sets, ``"ratio"`` by
    the plain ratios ``suggest_sets`` writes, ``"none"`` not at all (the start sets, drawn
    uniformly, have ratio 1). ``score(model)`` measures each fit. Returns one row per fit:
    ``round``, ``n_sets``, ``score``, ``seconds`` (the choice and the refit)."""
    if batch < 1 or start < 1:
        raise ValueError(f"replay: start and batch must be positive; got {start}, {batch}")
    rng = as_generator(random_state)
    features = None if items is None else read_features(items, id_column=item)
    sets = ChoiceSets.from_table(rankings, set_column=query, item_column=item)
    rows_of = pd.Index(sets.ids).get_indexer(rankings[query])
    budget = len(sets) if budget is None else min(budget, len(sets))
    if start > budget:
        raise ValueError(f"replay: start ({start}) exceeds the budget ({budget})")
    if weights not in ("lure", "ratio", "none"):
        raise ValueError(f"replay: weights must be 'lure', 'ratio' or 'none'; got {weights!r}")
    weighted = strategy == "sampled" and weights != "none"
    seen = np.zeros(len(sets), dtype=bool)
    drawn = list(rng.choice(len(sets), start, replace=False))
    seen[drawn] = True
    ratios = [1.0] * start  # in draw order

    def refit():
        revealed = seen[rows_of]
        observed = rankings[revealed]
        column = None
        if weighted:
            column = "_case_weight"
            ratio = np.asarray(ratios)
            case = lure_weights(ratio, len(sets)) if weights == "lure" else ratio
            per_set = np.zeros(len(sets))
            per_set[drawn] = case
            observed = observed.assign(**{column: per_set[rows_of[revealed]]})
        model.fit(Rankings(observed, features, query=query, item=item, rank=rank, weight=column))

    clock = time.perf_counter()
    refit()
    record = [(0, start, score(model), time.perf_counter() - clock)]
    while seen.sum() < budget:
        clock = time.perf_counter()
        k = int(min(batch, budget - seen.sum()))
        left = np.flatnonzero(~seen)
        if strategy == "random" and not coverage:
            pick = rng.choice(left, k, replace=False)
        else:
            shown = sets.items[np.unique(sets.take(np.flatnonzero(seen)).members)]
            chosen = suggest_sets(
                model,
                sets.take(left),
                k,
                features=features,
                shown=shown,
                strategy=strategy,
                coverage=coverage,
                n_draws=n_draws,
                top_k=top_k,
                explore=explore,
                random_state=rng,
            )
            pick = sets.ids.get_indexer(chosen.index)
            if weighted:
                ratios.extend(chosen["weight"].tolist())
        drawn.extend(pick.tolist())
        seen[pick] = True
        refit()
        record.append((len(record), int(seen.sum()), score(model), time.perf_counter() - clock))
    return pd.DataFrame(record, columns=["round", "n_sets", "score", "seconds"])
