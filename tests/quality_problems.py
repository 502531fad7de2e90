"""One small problem per model family, scored at the model's *default* settings.

Used by the shared estimator test (``tests/test_estimators.py``) for its quality floors, and
runnable on its own to measure the floors' values::

    CROWDBAYES_DATA=../shared/data .venv/bin/python tests/quality_problems.py [ClassName ...]

Every model is built with its defaults, the seed aside (``random_state=0`` where the model has
one, so that the measured values are reproducible). Every problem uses real data where the
family has it (RTE for labels, car choice for Plackett–Luce with features, one UKPConvArg fold
for GP preferences) and data simulated from the model otherwise (feature-less Plackett–Luce,
communities; the pinwheel of Luo et al. 2018 for the clustering models). Only public names of
crowdbayes are used.
"""

from __future__ import annotations

import sys
from functools import cache

import numpy as np
import pandas as pd


def default(cls):
    """``cls`` at its default settings, seeded."""
    return cls(random_state=0) if "random_state" in cls._param_names() else cls()


# ------------------------------------------------------------------------------- labels
def labels_rte(cls) -> dict:
    """Accuracy on RTE's 800 gold tasks (Snow et al. 2008), the gold never given to the model."""
    from crowdbayes.datasets import load_labels
    from crowdbayes.metrics import accuracy

    data = load_labels("rte")
    model = default(cls).fit(data.labels)
    return {"accuracy": accuracy(data.gold, model.labels_)}


def labels_rte_gold_half(cls) -> dict:
    """Gold-trained models: RTE with the gold of a seeded random half of the 800 gold tasks given
    (``numpy.random.default_rng(0).random(800) < 0.5``), accuracy on the other half."""
    from crowdbayes.datasets import load_labels
    from crowdbayes.metrics import accuracy

    data = load_labels("rte")
    given = np.random.default_rng(0).random(len(data.gold)) < 0.5
    model = default(cls).fit(data.labels, gold=data.gold[given])
    return {"accuracy": accuracy(data.gold[~given], model.labels_)}


def labels_simulated_binary(cls) -> dict:
    """KOS on RTE is no better than a coin (0.4975, as crowd-kit's KOS: the method assumes a
    regular task–worker graph, and RTE's workers gave from 20 to 800 labels), so it is scored on
    a regular binary problem: ``simulate_labels(1000, 50, 5, random_state=0)``, accuracy against
    the simulated truth."""
    from crowdbayes.datasets import simulate_labels
    from crowdbayes.metrics import accuracy

    data = simulate_labels(1000, 50, 5, random_state=0)
    model = default(cls).fit(data.labels)
    return {"accuracy": accuracy(data.truth, model.labels_)}


def labels_s_adult(cls) -> dict:
    """Ordinal models: accuracy and mean absolute error on S_Adult's 333 gold tasks (four
    ordered grades 0-3; Ipeirotis et al. 2010), the gold never given to the model."""
    from crowdbayes import Labels
    from crowdbayes.datasets import load_labels
    from crowdbayes.metrics import accuracy, mean_absolute_error

    data = load_labels("s_adult")
    model = default(cls).fit(Labels(data.labels, ordered=True))
    return {
        "accuracy": accuracy(data.gold, model.labels_),
        "mae": mean_absolute_error(data.gold, model.labels_),
    }


def values_simulated(cls) -> dict:
    """Continuous answers: 300 tasks with true values N(50, 10²), 30 workers with biases
    N(0, 3²) and noise s.d. log-normal around 3 (a tenth of them answering uniformly at random
    on [0, 100]), 5 answers per task, seed 0; correlation of the posterior means with the
    truth (the plain task mean scores 0.898)."""
    rng = np.random.default_rng(0)
    truth = rng.normal(50, 10, 300)
    bias, noise = rng.normal(0, 3, 30), np.exp(rng.normal(np.log(3), 0.5, 30))
    rows = []
    for t in range(300):
        for w in rng.choice(30, 5, replace=False):
            value = rng.uniform(0, 100) if w < 3 else truth[t] + bias[w] + noise[w] * rng.normal()
            rows.append((t, w, value))
    table = pd.DataFrame(rows, columns=["task", "worker", "value"])
    means = default(cls).fit(table).predict().reindex(range(300))
    naive = table.groupby("task")["value"].mean().reindex(range(300))
    return {
        "correlation": float(np.corrcoef(means, truth)[0, 1]),
        "mean_correlation": float(np.corrcoef(naive, truth)[0, 1]),
    }


def labels_with_features(cls) -> dict:
    """Learning from crowds: 2,000 items in 4 Gaussian classes (5 features, centres
    N(0, 1.5²)), the first half labelled 1-3 times by 30 workers (accuracy U(0.35, 0.85),
    mistakes uniform), seed 0; accuracy on the unlabelled half (answered from the features)."""
    from crowdbayes import Labels
    from crowdbayes.datasets import simulate_crowd_labels

    rng = np.random.default_rng(0)
    centres = rng.normal(0, 1.5, (4, 5))
    truth = rng.integers(4, size=2000)
    features = pd.DataFrame(centres[truth] + rng.normal(size=(2000, 5)))
    features.columns = [f"f{k}" for k in range(5)]
    table, _ = simulate_crowd_labels(
        truth, np.arange(1000), n_workers=30, accuracy=(0.35, 0.85), random_state=0
    )
    model = default(cls).fit(Labels(table, classes=list(range(4))), features)
    unlabelled = np.arange(1000, 2000)
    answers = model.labels_.loc[unlabelled].to_numpy()
    return {"accuracy": float((answers == truth[unlabelled]).mean())}


# ------------------------------------------------------------------------------- rankings
@cache
def car_split():
    """Car choice (McFadden & Train 2000): the first 80% of the people train, the rest test;
    features standardised on the training cars."""
    from crowdbayes.datasets import load_car_choice

    data = load_car_choice()
    table = data.rankings
    people = data.person.reindex(table["query"]).to_numpy()
    everyone = pd.unique(people)
    training_people = set(everyone[: int(0.8 * len(everyone))])
    in_train = np.array([p in training_people for p in people])
    train, test = table[in_train], table[~in_train]
    train_items = train["item"].unique()
    mean = data.items.loc[train_items].mean()
    sd = data.items.loc[train_items].std().replace(0.0, 1.0)
    return train, test, (data.items - mean) / sd


def rank_car_choice(cls) -> dict:
    """Held-out choice accuracy and mean log-likelihood per choice (uniform: log 1/6 = −1.79)."""
    from crowdbayes import Rankings

    train, test, items = car_split()
    model = default(cls).fit(Rankings(train, items))
    test_rankings = Rankings(test, items)
    log_p = model.choice_log_proba(test_rankings, random_state=0)
    scores = model.predict_utility(items.loc[test["item"].unique()])["mean"]
    frame = test.assign(score=scores.reindex(test["item"]).to_numpy())
    best = frame.loc[frame.groupby("query")["score"].idxmax()]
    return {"accuracy": float((best["rank"] == 1).mean()), "log_lik": float(np.mean(log_p))}


def rank_simulated_pairs(cls) -> dict:
    """Feature-less models cannot score car choice's cars (each is seen once) and the
    maximum-likelihood scores of ``PlackettLuceMM``'s default do not exist on UKPConvArg's
    sparse pairs (arguments that never lose), so these models are scored on recovery: 40 items
    with log-scores ~ N(0, 1), 1,500 random pairs decided by Bradley–Terry, seed 0; Spearman
    correlation between the estimated and the true log-scores."""
    from scipy.stats import spearmanr

    from crowdbayes import Rankings

    rng = np.random.default_rng(0)
    strength = rng.normal(size=40)
    left = rng.integers(40, size=1500)
    right = (left + rng.integers(1, 40, size=1500)) % 40
    wins = rng.random(1500) < 1 / (1 + np.exp(strength[right] - strength[left]))
    ids = np.array([f"i{k}" for k in range(40)])
    pairs = pd.DataFrame(
        {"left": ids[left], "right": ids[right], "label": np.where(wins, ids[left], ids[right])}
    )
    model = default(cls).fit(Rankings.from_pairs(pairs))
    estimate = model.predict_utility()["mean"].reindex(ids).to_numpy()
    return {"spearman": float(spearmanr(estimate, strength).statistic)}


# ------------------------------------------------------------------------------- preferences
@cache
def ukp_fold(variant: str):
    """Leave-one-topic-out on UKPConvArg (the papers' protocol), the first topic held out:
    train on the other topics' pairs (``variant``), test on the topic's gold (Strict) pairs;
    items described by their MiniLM sentence embeddings."""
    from crowdbayes.datasets import load_ukpconvarg

    data = load_ukpconvarg(variant, embed=True)
    gold = load_ukpconvarg("strict").pairs
    topic = sorted(gold["topic"].unique())[0]
    columns = ["worker", "left", "right", "label"] if variant == "crowdsample" else None
    columns = columns or ["left", "right", "label"]
    train = data.pairs[data.pairs["topic"] != topic][columns].reset_index(drop=True)
    return train, gold[gold["topic"] == topic], data.features


def prefs_ukp_fold(cls, variant: str = "strict") -> dict:
    """Accuracy on the held-out topic's gold pairs (every test argument unseen in training)."""
    train, test, features = ukp_fold(variant)
    model = default(cls).fit(train, features)
    p = np.asarray(model.predict_proba(test["left"], test["right"]))
    return {"accuracy": float(((p > 0.5) == (test["label"] == test["left"])).mean())}


def comparisons_ukp_crowdsample(cls) -> dict:
    """UKPConvArgCrowdSample (one crowd label per pair, with its worker; ties kept): Spearman
    correlation of the fitted scores with the gold UKPConvArgRank scores (``-pagerank``)
    within each of the 32 topics, averaged over the topics."""
    from scipy.stats import spearmanr

    from crowdbayes.datasets import load_ukpconvarg

    data = load_ukpconvarg("crowdsample")
    model = default(cls).fit(data.pairs[["worker", "left", "right", "label"]])
    joined = data.ranking.join(model.utility_["mean"], how="inner")
    rhos = [
        spearmanr(part["mean"], -part["pagerank"]).statistic for _, part in joined.groupby("topic")
    ]
    return {"spearman": float(np.mean(rhos))}


def leaderboard_simulated(cls) -> dict:
    """Simulated arena battles (40 models of Zipf-like popularity, 20,000 battles, Davidson
    ties): Spearman correlation of the board's scores with the true scores."""
    from scipy.stats import spearmanr

    from crowdbayes.models.comparisons import simulate_battles

    sim = simulate_battles(40, 20_000, popularity=1.0, random_state=0)
    model = default(cls).fit(sim.battles)
    fitted = model.board_["score"].reindex(sim.scores.index)
    return {"spearman": float(spearmanr(fitted, sim.scores).statistic)}


def communities_simulated(cls) -> dict:
    """Adjusted Rand index between the point partition and the planted communities (60 users,
    30 items, 3 communities, 15 comparisons per user, seed 0)."""
    from crowdbayes.metrics import adjusted_rand_index
    from crowdbayes.models.communities import simulate_community_preferences

    sim = simulate_community_preferences(
        n_users=60, n_items=30, n_communities=3, pairs_per_user=15, random_state=0
    )
    model = default(cls).fit(sim.comparisons, sim.items)
    truth = sim.membership.reindex(model.partition_.index)
    return {"ari": adjusted_rand_index(truth.to_numpy(), model.partition_.to_numpy())}


# ------------------------------------------------------------------------------- clustering
@cache
def pinwheel(seed: int = 0):
    """The pinwheel of Luo et al. (2018, §5.1): 5 arms × 100 points, 100 points annotated by
    20 workers × 49 pairs with α = β = 0.9 (as in benchmarks/cluster/cluster_pinwheel.py)."""
    from crowdbayes.datasets.clustering import make_pinwheel, simulate_pair_links

    X, y = make_pinwheel(random_state=seed)
    annotated = np.random.default_rng(seed).choice(len(X), size=100, replace=False)
    sim = simulate_pair_links(
        y,
        n_workers=20,
        pairs_per_worker=49,
        alpha=0.9,
        beta=0.9,
        items=annotated,
        random_state=seed,
    )
    return X, y, sim.to_links(observations=X)


def cluster_links_pinwheel(cls) -> dict:
    """Links only: NMI on the annotated points (the only ones the model sees)."""
    from crowdbayes.metrics.clustering import normalized_mutual_info

    _, y, links = pinwheel()
    model = default(cls).fit(links)
    items = model.assignments_.index.to_numpy().astype(int)
    return {"nmi": normalized_mutual_info(y[items], model.assignments_.to_numpy())}


def cluster_deep_pinwheel(cls) -> dict:
    """Features and links: accuracy (best one-to-one matching) and NMI on all 500 points."""
    from crowdbayes.metrics.clustering import normalized_mutual_info, unsupervised_accuracy

    X, y, links = pinwheel()
    model = default(cls).fit(X, links)
    pred = model.assignments_.to_numpy()
    return {
        "accuracy": unsupervised_accuracy(y, pred),
        "nmi": normalized_mutual_info(y, pred),
    }


def measure(name: str) -> dict:
    import time

    import crowdbayes
    from crowdbayes.models import (
        clustering,
        communities,
        comparisons,
        gp_preference,
        plackett_luce,
    )

    families = [crowdbayes, plackett_luce, gp_preference, comparisons, communities, clustering]
    if name in ("SCDC", "BayesSCDC"):
        from crowdbayes.models.clustering import deep

        families.append(deep)
    cls = next(getattr(m, name) for m in families if hasattr(m, name))
    problem = PROBLEM_OF[name]
    start = time.perf_counter()
    result = problem(cls)
    return {**result, "seconds": round(time.perf_counter() - start, 1)}


PROBLEM_OF = {
    "MajorityVote": labels_rte,
    "DawidSkene": labels_rte,
    "BayesianDawidSkene": labels_rte,
    "CommunityDawidSkene": labels_rte,
    "HierarchicalAnnotation": labels_rte,
    "AutoLabelModel": labels_rte,
    "GLAD": labels_rte,
    "MACE": labels_rte,
    "MMSR": labels_rte,
    "Wawa": labels_rte,
    "ZeroBasedSkill": labels_rte,
    "GoldMajorityVote": labels_rte_gold_half,
    "KOS": labels_simulated_binary,
    "OrdinalDawidSkene": labels_s_adult,
    "ContinuousAggregation": values_simulated,
    "CrowdClassifier": labels_with_features,
    "PlackettLuceVI": rank_car_choice,
    "PlackettLuceMAP": rank_car_choice,
    "PlackettLuceMM": rank_simulated_pairs,
    "PlackettLuceGibbs": rank_simulated_pairs,
    "GPPL": prefs_ukp_fold,
    "GPPLVI": prefs_ukp_fold,
    "GPPLLaplace": prefs_ukp_fold,
    "GPPreferenceEP": prefs_ukp_fold,
    "CrowdGPPL": lambda cls: prefs_ukp_fold(cls, "crowdsample"),
    "BradleyTerry": comparisons_ukp_crowdsample,
    "CrowdBT": comparisons_ukp_crowdsample,
    "Leaderboard": leaderboard_simulated,
    "CommunityPreferences": communities_simulated,
    "LinkClustering": cluster_links_pinwheel,
    "SCDC": cluster_deep_pinwheel,
    "BayesSCDC": cluster_deep_pinwheel,
}


if __name__ == "__main__":
    import os
    import warnings

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    warnings.simplefilter("ignore")
    for name in sys.argv[1:] or list(PROBLEM_OF):
        print(name, measure(name), flush=True)
