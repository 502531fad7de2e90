"""Metrics for predicted preferences: pairwise AUC and accuracy, the top-K value ratio, Kendall τ.

Held-out rankings are scored through the pairwise comparisons they imply, as in Guo et al.
(2019, §5.2): :func:`rankings_to_pairs` breaks a ranking of M items into its M(M-1) ordered
pairs. A pair is a row ``(left, right, left_wins)`` with a predicted ``p_left`` = P(left ≻ right).

References
----------
Y. Guo, J. Dy, D. Erdoğmuş, J. Kalpathy-Cramer, S. Ostmo, J. P. Campbell, M. F. Chiang,
S. Ioannidis. "Variational Inference from Ranked Samples with Features", ACML 2019, §5.2,
Eqs. 27-28.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.validate import show_values as _show

__all__ = [
    "kendall_tau",
    "pairwise_accuracy",
    "pairwise_auc",
    "rankings_to_pairs",
    "top_k_metric",
]


def _outcomes(left_wins, what: str = "left_wins") -> np.ndarray:
    """0/1 float array from booleans or numbers that are all 0 or 1."""
    y = np.asarray(left_wins)
    if y.ndim != 1:
        raise ValueError(f"{what}: expected a 1-d array; got shape {y.shape}")
    if y.size == 0:
        raise ValueError(f"{what}: no pairs to score (empty)")
    if y.dtype == bool:
        return y.astype(np.float64)
    if not np.issubdtype(y.dtype, np.number):
        raise TypeError(f"{what}: expected booleans or 0/1 numbers; got dtype {y.dtype}")
    y = y.astype(np.float64)
    if np.isnan(y).any():
        raise ValueError(f"{what}: {int(np.isnan(y).sum())} missing outcome(s) (NaN)")
    bad = (y != 0) & (y != 1)
    if bad.any():
        raise ValueError(
            f"{what}: outcomes must be 0/1 (or booleans); {int(bad.sum())} value(s) are not, "
            f"e.g. {_show(np.unique(y[bad]))}. A tie is not a binary outcome: drop tied pairs "
            "before scoring"
        )
    return y


def _probabilities(p_left, n: int, what: str = "p_left") -> np.ndarray:
    p = np.asarray(p_left, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"{what}: expected a 1-d array; got shape {p.shape}")
    if p.size != n:
        raise ValueError(f"{what}: {p.size} value(s) for {n} pair(s); lengths must match")
    if not np.isfinite(p).all():
        raise ValueError(f"{what}: {int((~np.isfinite(p)).sum())} value(s) are NaN or infinite")
    if ((p < 0) | (p > 1)).any():
        bad = p[(p < 0) | (p > 1)]
        raise ValueError(f"{what}: probabilities must lie in [0, 1]; got e.g. {_show(bad)}")
    return p


def rankings_to_pairs(
    rankings: pd.DataFrame,
    *,
    both_orders: bool = True,
    query: str = "query",
    item: str = "item",
    rank: str = "rank",
) -> pd.DataFrame:
    """Break rankings (long format) into the pairwise comparisons they imply.

    Within a query, a ranked item beats every item with a larger rank and every unranked item
    (missing rank: an unchosen alternative); two unranked items are not compared. A full
    ranking of M items thus gives M(M-1)/2 comparisons, and a top-1 choice among M gives M-1.
    This is the breaking of Guo et al. (2019, §5.2) used for AUC over rankings.

    Parameters
    ----------
    rankings : DataFrame
        Columns ``query, item, rank`` (names configurable); rank 1 is best; NaN = unranked.
    both_orders : bool, default True
        Emit every comparison in both orientations, as in the paper's M(M-1) ordered pairs
        (``left_wins`` is then True on half the rows). With False, one row per comparison with
        the winner on the left (``left_wins`` all True).

    Returns
    -------
    DataFrame
        Columns ``query, left, right, left_wins`` (bool), sorted by query in order of first
        appearance, then by the rows' order in ``rankings``.

    Raises
    ------
    ValueError
        If a column is missing, a query has fewer than two items, an item appears twice in a
        query, two items of a query share a rank, or a query has no ranked item.
    """
    if not isinstance(rankings, pd.DataFrame):
        raise TypeError(f"rankings must be a pandas DataFrame; got {type(rankings).__name__}")
    for col in (query, item, rank):
        if col not in rankings.columns:
            raise ValueError(
                f"rankings: column {col!r} is missing; got {list(map(str, rankings.columns))}"
            )
    df = pd.DataFrame(
        {
            "query": rankings[query].to_numpy(),
            "item": rankings[item].to_numpy(),
            "rank": pd.to_numeric(rankings[rank], errors="raise").to_numpy(dtype=np.float64),
        }
    )
    if df["query"].isna().any() or df["item"].isna().any():
        raise ValueError("rankings: query or item ids are missing (NaN)")
    if np.isinf(df["rank"]).any():
        raise ValueError("rankings: ranks must be finite numbers or NaN (unranked)")

    sizes = df.groupby("query", sort=False).size()
    small = sizes[sizes < 2]
    if len(small):
        raise ValueError(
            f"rankings: {len(small)} quer(y/ies) have fewer than two items: {_show(small.index)}"
        )
    dup = df.duplicated(["query", "item"])
    if dup.any():
        raise ValueError(
            f"rankings: {int(dup.sum())} item(s) repeated within a query, e.g. "
            f"query {df['query'][dup].iloc[0]!r} item {df['item'][dup].iloc[0]!r}"
        )
    ranked = df.dropna(subset=["rank"])
    tied = ranked.duplicated(["query", "rank"], keep=False)
    if tied.any():
        queries = pd.unique(ranked["query"][tied])
        raise ValueError(
            f"rankings: {len(queries)} quer(y/ies) give two items the same rank: {_show(queries)}"
        )
    unranked = set(sizes.index) - set(ranked["query"])
    if unranked:
        raise ValueError(
            f"rankings: {len(unranked)} quer(y/ies) have no ranked item, so imply no "
            f"comparison: {_show(sorted(unranked, key=str))}"
        )

    df["order"] = np.arange(len(df))
    df["query_order"] = pd.factorize(df["query"])[0]
    # NaN ranks sort after every rank; equal (infinite) ranks are not compared.
    df["key"] = df["rank"].fillna(np.inf)
    joined = df.merge(df, on="query", suffixes=("_l", "_r"))
    if both_orders:
        keep = joined["key_l"] != joined["key_r"]
    else:
        keep = joined["key_l"] < joined["key_r"]
    joined = joined[keep & (joined["order_l"] != joined["order_r"])]
    joined = joined.sort_values(["query_order_l", "order_l", "order_r"], kind="stable")
    return pd.DataFrame(
        {
            "query": joined["query"].to_numpy(),
            "left": joined["item_l"].to_numpy(),
            "right": joined["item_r"].to_numpy(),
            "left_wins": (joined["key_l"] < joined["key_r"]).to_numpy(),
        }
    )


def pairwise_auc(left_wins, p_left, *, symmetrize: bool = True) -> float:
    """Area under the ROC curve of predicted pairwise preferences.

    Each pair is a binary outcome (did ``left`` win?) scored by ``p_left``; the AUC is the
    probability that a random won pair gets a higher ``p_left`` than a random lost pair, ties
    in ``p_left`` counting one half (Mann-Whitney), the same as scikit-learn's
    ``roc_auc_score``. Guo et al. (2019, §5.2) treat the M(M-1) ordered pairs of each ranking
    as the binary variables.

    Parameters
    ----------
    left_wins : array-like of bool or 0/1, shape (n,)
    p_left : array-like of float in [0, 1], shape (n,)
        Predicted P(left ≻ right).
    symmetrize : bool, default True
        Add every pair flipped (outcome ``1 - y``, score ``1 - p``) before scoring, so the
        result does not depend on which item was written on the left, and pairs listed only
        winner-first still have both classes. Data that already hold both orientations score
        the same either way (duplicating every pair leaves the AUC unchanged), up to the
        rounding of ``1 - (1 - p)`` splitting exact ties in ``p``.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If an outcome is not 0/1 (ties must be dropped first), a probability is outside [0, 1]
        or missing, the lengths differ, or (with ``symmetrize=False``) only one outcome occurs.
    """
    from scipy.stats import rankdata

    y = _outcomes(left_wins)
    p = _probabilities(p_left, y.size)
    if symmetrize:
        y = np.concatenate([y, 1.0 - y])
        p = np.concatenate([p, 1.0 - p])
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(
            "pairwise_auc: the AUC needs both won and lost pairs; every pair has left_wins="
            f"{bool(n_pos)}. Pass symmetrize=True (or both orientations of each pair)"
        )
    ranks = rankdata(p)  # average ranks: tied scores count one half
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def pairwise_accuracy(left_wins, p_left) -> float:
    """Fraction of pairs whose winner gets the higher predicted probability.

    A pair counts 1 when ``p_left > 0.5`` and left won, or ``p_left < 0.5`` and right won;
    0 when the prediction points the other way; and 1/2 when ``p_left == 0.5`` exactly (a
    predicted tie: the expected score of a coin flip, so an uninformative model scores 0.5).
    The result does not depend on the pairs' orientation.

    Parameters
    ----------
    left_wins : array-like of bool or 0/1, shape (n,)
        Observed outcomes; tied judgments (e.g. ``"equal"`` labels) must be removed first.
    p_left : array-like of float in [0, 1], shape (n,)

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On non-binary outcomes, probabilities outside [0, 1] or NaN, or a length mismatch.
    """
    y = _outcomes(left_wins)
    p = _probabilities(p_left, y.size)
    score = np.where(p == 0.5, 0.5, ((p > 0.5) == (y == 1)).astype(np.float64))
    return float(score.mean())


def _item_values(
    left: np.ndarray, right: np.ndarray, values: np.ndarray
) -> tuple[pd.Index, np.ndarray]:
    """Per item, the mean over the pairs containing it of its own value (``values`` for the
    left item, ``1 - values`` for the right one)."""
    codes, uniques = pd.factorize(np.concatenate([left, right]), sort=False)
    own = np.concatenate([values, 1.0 - values])
    total = np.bincount(codes, weights=own, minlength=len(uniques))
    count = np.bincount(codes, minlength=len(uniques))
    return pd.Index(uniques), total / count


def top_k_metric(left, right, left_wins, p_left, k: int) -> float:
    """The top-K value ratio T_K of Guo et al. (2019, Eqs. 27-28).

    For every item i in the test pairs, the true value is its share of wins and the estimate
    its mean predicted probability of winning,

        w_i = #{pairs containing i that i wins} / #{pairs containing i}          (27)
        ŵ_i = Σ_{pairs containing i} P(i ≻ j) / #{pairs containing i}             (28)

    and T_K = W(Ŝ⁺) / max_{|S|=K} W(S), with W(S) = Σ_{i∈S} w_i and Ŝ⁺ the K items of largest
    ŵ. T_K is 1 when the predicted top K have the greatest possible true value.

    When several items tie for the last places of Ŝ⁺ (equal ŵ), every choice among them
    maximises Ŵ; the result is the mean of T_K over those choices (each tied item contributes
    its w times the fraction of tied places filled), so it does not depend on item order.

    Parameters
    ----------
    left, right : array-like, shape (n,)
        Item ids of each pair.
    left_wins : array-like of bool or 0/1, shape (n,)
    p_left : array-like of float in [0, 1], shape (n,)
        Predicted P(left ≻ right), e.g. E[σ(x_lrᵀθ)] under the posterior.
    k : int
        Size of the top set, 1 <= k <= number of distinct items.

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        On bad outcomes/probabilities (as :func:`pairwise_auc`), a pair comparing an item with
        itself, or a ``k`` out of range.

    Notes
    -----
    Both orientations of a pair may be passed (the M(M-1) ordered pairs of a ranking): each
    item's numerator and denominator double and w, ŵ are unchanged.
    """
    y = _outcomes(left_wins)
    p = _probabilities(p_left, y.size)
    left = np.asarray(left, dtype=object)
    right = np.asarray(right, dtype=object)
    if left.shape != y.shape or right.shape != y.shape:
        raise ValueError(
            f"top_k_metric: left ({left.size}), right ({right.size}), left_wins ({y.size}) must "
            "have the same length"
        )
    if pd.isna(left).any() or pd.isna(right).any():
        raise ValueError("top_k_metric: item ids are missing (NaN) in left or right")
    same = left == right
    if same.any():
        raise ValueError(
            f"top_k_metric: {int(same.sum())} pair(s) compare an item with itself, e.g. "
            f"{left[same][0]!r}"
        )
    items, w = _item_values(left, right, y)
    _, w_hat = _item_values(left, right, p)
    n_items = len(items)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n_items:
        raise ValueError(f"top_k_metric: k must be an integer in [1, {n_items}]; got {k!r}")

    best = np.sort(w)[::-1][:k].sum()
    if best <= 0:
        raise ValueError(
            "top_k_metric: no item wins any pair, so max W(S) = 0 and T_K is undefined"
        )
    order = np.argsort(-w_hat, kind="stable")
    threshold = w_hat[order[k - 1]]
    above = w_hat > threshold
    tied = w_hat == threshold
    n_left = k - int(above.sum())
    chosen = w[above].sum() + n_left * w[tied].mean()
    return float(chosen / best)


def kendall_tau(a, b) -> float:
    """Kendall's rank correlation τ_b between two score vectors over the same items.

    τ_b = (C - D) / sqrt((C + D + T_a)(C + D + T_b)), with C and D the concordant and
    discordant pairs and T_a (T_b) the pairs tied only in ``a`` (only in ``b``) (Kendall,
    1945); the same statistic as ``scipy.stats.kendalltau`` (its default, used here).

    Parameters
    ----------
    a, b : Series or array-like, shape (n,)
        Two Series are matched by index (they must hold the same ids, each once); arrays are
        matched by position and must have the same length.

    Returns
    -------
    float in [-1, 1]

    Raises
    ------
    ValueError
        On NaN, fewer than two items, mismatched ids or lengths, or a constant vector (τ is
        then undefined).

    References
    ----------
    M. G. Kendall. "The treatment of ties in ranking problems", Biometrika 33(3):239-251, 1945.
    """
    from scipy.stats import kendalltau

    if isinstance(a, pd.Series) and isinstance(b, pd.Series):
        for name, s in (("a", a), ("b", b)):
            if s.index.has_duplicates:
                dup = s.index[s.index.duplicated()].unique()
                raise ValueError(f"kendall_tau: {name} lists item(s) more than once: {_show(dup)}")
        only_a = a.index.difference(b.index)
        only_b = b.index.difference(a.index)
        if len(only_a) or len(only_b):
            raise ValueError(
                f"kendall_tau: the Series hold different items: {len(only_a)} only in a "
                f"{_show(only_a)}, {len(only_b)} only in b {_show(only_b)}"
            )
        b = b.reindex(a.index)
    x = np.asarray(a, dtype=np.float64)
    z = np.asarray(b, dtype=np.float64)
    if x.ndim != 1 or z.ndim != 1 or x.size != z.size:
        raise ValueError(
            f"kendall_tau: a and b must be 1-d of the same length; got {x.shape} and {z.shape}"
        )
    if x.size < 2:
        raise ValueError("kendall_tau: needs at least two items")
    if np.isnan(x).any() or np.isnan(z).any():
        raise ValueError("kendall_tau: scores contain NaN")
    for name, v in (("a", x), ("b", z)):
        if np.all(v == v[0]):
            raise ValueError(f"kendall_tau: {name} is constant, so τ is undefined")
    return float(kendalltau(x, z, variant="b").statistic)
