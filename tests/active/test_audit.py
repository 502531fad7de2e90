"""Audits: exact inclusion probabilities, the prediction-powered accuracy estimate against a
brute-force Horvitz–Thompson computation, its coverage where the model's confidence is
miscalibrated, the halving number, the refusals, and the expected answer changes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from crowdbayes.active.audit import audit_accuracy, plan_audit
from crowdbayes.annotators.questions import answer_change
from crowdbayes.metrics.audit import check_audit


def population(n_tasks: int, seed: int = 0, overconfident: bool = True):
    """Posteriors of ``n_tasks`` binary tasks and their true classes, the model's confidence
    overstating the chance that its answer is right (when ``overconfident``)."""
    rng = np.random.default_rng(seed)
    confidence = np.clip(rng.beta(6, 1.2, n_tasks), 0.5, 1.0)
    chance = 0.1 + 0.8 * confidence if overconfident else confidence
    answer_a = rng.random(n_tasks) < 0.6
    p_a = np.where(answer_a, confidence, 1 - confidence)
    tasks = pd.Index([f"t{i}" for i in range(n_tasks)], name="task")
    posteriors = pd.DataFrame({"a": p_a, "b": 1 - p_a}, index=tasks)
    right = rng.random(n_tasks) < chance
    answer = np.where(answer_a, "a", "b")
    truth = pd.Series(np.where(right, answer, np.where(answer_a, "b", "a")), index=tasks)
    return posteriors, truth


def checked(posteriors, truth, n, seed, design="stratified"):
    plan = plan_audit(posteriors, n, design=design, random_state=seed)
    return plan.assign(label=truth.reindex(plan["task"]).to_numpy())


# ---------------------------------------------------------------------------- the design
@pytest.mark.parametrize("design", ["uniform", "stratified"])
def test_inclusion_probabilities_are_exact(design):
    posteriors, _ = population(9, seed=1)
    plan = plan_audit(posteriors, 5, design=design, n_strata=2, random_state=0)
    assert plan["task"].is_unique and len(plan) == 5
    # the design, enumerated: within each stratum every subset of its audited size is equally
    # likely; the marginal probability of each task is its share of those subsets
    strata = _strata_of_all_tasks(posteriors, plan, design)
    sizes = plan.groupby("stratum").size()
    for h, members in strata.items():
        subsets = list(itertools.combinations(members, int(sizes[h])))
        for task in plan.loc[plan["stratum"] == h, "task"]:
            share = sum(task in s for s in subsets) / len(subsets)
            got = plan.loc[plan["task"] == task, "inclusion_probability"].item()
            assert got == pytest.approx(share, abs=1e-15)
    # the draws themselves: each task's frequency over seeds matches its probability
    draws = 600
    counts = pd.Series(0, index=posteriors.index)
    for seed in range(draws):
        counts[plan_audit(posteriors, 5, design=design, n_strata=2, random_state=seed)["task"]] += 1
    expected = pd.Series({t: sizes[h] / len(m) for h, m in strata.items() for t in m}).reindex(
        posteriors.index
    )
    tolerance = 4.5 * np.sqrt(expected * (1 - expected) / draws) + 1e-9
    assert ((counts / draws - expected).abs() <= tolerance).all()
    assert expected.sum() == pytest.approx(5)


def _strata_of_all_tasks(posteriors, plan, design):
    """Every task's stratum, from the design's rule (confidence order, near-equal halves)."""
    if design == "uniform":
        return {0: list(posteriors.index)}
    order = np.argsort(posteriors.max(axis=1).to_numpy(), kind="stable")
    parts = np.array_split(posteriors.index[order], 2)
    return {h: list(part) for h, part in enumerate(parts)}


def test_neyman_allocation_audits_the_doubtful_tasks_more():
    posteriors, _ = population(400, seed=2)
    plan = plan_audit(posteriors, 60, allocation="neyman", n_strata=4, random_state=0)
    per_stratum = plan.groupby("stratum").size()
    assert per_stratum.iloc[0] > per_stratum.iloc[-1] >= 2
    represented = (1 / plan["inclusion_probability"]).sum()
    assert represented == pytest.approx(400)


# ---------------------------------------------------------------------------- the estimate
def test_point_estimate_is_the_brute_force_horvitz_thompson_estimate():
    posteriors, truth = population(300, seed=3)
    audit = checked(posteriors, truth, 40, seed=5)
    result = audit_accuracy(posteriors, audit)
    answer = posteriors.idxmax(axis=1)
    f = posteriors.max(axis=1)
    for scope, row in result.iterrows():
        domain = answer.index if scope == "all" else answer.index[answer == scope]
        lam, total, alone = row["lambda"], 0.0, 0.0
        for _, line in audit.iterrows():
            if line["task"] not in domain:
                continue
            y = float(line["label"] == answer[line["task"]])
            total += (y - lam * f[line["task"]]) / line["inclusion_probability"]
            alone += y / line["inclusion_probability"]
        brute = (lam * f[domain].sum() + total) / len(domain)
        assert row["estimate"] == pytest.approx(brute, abs=1e-12)
        assert row["audit_only"] == pytest.approx(alone / len(domain), abs=1e-12)
        assert row["tasks"] == len(domain)


@pytest.mark.parametrize("design", ["uniform", "stratified"])
def test_unbiased_and_covering_where_the_confidence_is_miscalibrated(design):
    posteriors, truth = population(1500, seed=4)
    answer = posteriors.idxmax(axis=1)
    accuracy = float((answer == truth).mean())
    assert posteriors.max(axis=1).mean() - accuracy > 0.05  # overconfident by design
    rows = [
        audit_accuracy(posteriors, checked(posteriors, truth, 80, seed, design)).loc["all"]
        for seed in range(100)
    ]
    table = pd.DataFrame(rows)
    error = table["estimate"] - accuracy
    assert abs(error.mean()) < 3.5 * error.std() / np.sqrt(len(error)) + 0.002
    covered = ((table["lower"] <= accuracy) & (accuracy <= table["upper"])).mean()
    assert covered >= 0.84
    # the model's own expected accuracy misses: the audit corrects it
    assert posteriors.max(axis=1).mean() - table["estimate"].mean() > 0.05


def test_the_halving_number_halves_the_interval():
    posteriors, truth = population(4000, seed=6, overconfident=False)
    n = 50
    first = audit_accuracy(posteriors, checked(posteriors, truth, n, 0, "uniform")).loc["all"]
    fraction = n / 4000
    assert first["more_to_halve"] == math.ceil(n * (4 / (1 + 3 * fraction) - 1) - 1e-9)
    widths = {}
    for size in (n, n + int(first["more_to_halve"])):
        rows = [
            audit_accuracy(posteriors, checked(posteriors, truth, size, s, "uniform")).loc["all"]
            for s in range(40)
        ]
        widths[size] = np.mean([r["upper"] - r["lower"] for r in rows])
    ratio = widths[n + int(first["more_to_halve"])] / widths[n]
    assert 0.42 < ratio < 0.58


def test_an_audit_without_errors_still_has_an_interval():
    posteriors, truth = population(500, seed=7, overconfident=False)
    audit = checked(posteriors, truth, 30, seed=0)
    answers = posteriors.idxmax(axis=1)
    audit["label"] = answers.reindex(audit["task"]).to_numpy()  # the expert agrees everywhere
    row = audit_accuracy(posteriors, audit).loc["all"]
    assert row["upper"] - row["lower"] > 0.02
    assert row["lower"] < 1.0


def test_wilson_interval_of_a_uniform_audit():
    posteriors, truth = population(100_000, seed=8, overconfident=False)
    audit = checked(posteriors, truth, 200, 0, "uniform")
    row = audit_accuracy(posteriors, audit, level=0.9).loc["all"]
    correct = int((audit["label"].to_numpy() == posteriors.idxmax(axis=1)[audit["task"]]).sum())
    lower, upper = _wilson(correct, 200, stats.norm.ppf(0.95))
    assert row["wilson_lower"] == pytest.approx(lower, abs=2e-3)  # the FPC is 0.998 here
    assert row["wilson_upper"] == pytest.approx(upper, abs=2e-3)


def test_audit_only_interval_of_a_uniform_audit_is_wilsons():
    """lambda = 0 under uniform sampling: the score interval is Wilson's (normal quantile; up
    to the n/(n-1) of the sample variance, 5e-3 of the half width here)."""
    posteriors, truth = population(100_000, seed=8, overconfident=False)
    audit = checked(posteriors, truth, 200, 0, "uniform")
    row = audit_accuracy(posteriors, audit, level=0.9).loc["all"]
    assert row["audit_only_lower"] == pytest.approx(row["wilson_lower"], abs=3e-4)
    assert row["audit_only_upper"] == pytest.approx(row["wilson_upper"], abs=3e-4)


def test_an_audit_that_catches_the_only_error_still_covers():
    """177 tasks, one answer wrong (WSD's case): every uniform audit of 30 that holds it gives
    an upper bound at least the true accuracy 176/177 (the Poisson bound of the few-errors
    rule); without the rule the score interval's upper bound is about 0.99."""
    posteriors, truth = population(177, seed=3, overconfident=False)
    answers = posteriors.idxmax(axis=1)
    truth = answers.copy()
    wrong = truth.index[17]
    truth[wrong] = "b" if answers[wrong] == "a" else "a"
    caught = 0
    for seed in range(60):
        audit = checked(posteriors, truth, 30, seed, "uniform")
        if wrong not in set(audit["task"]):
            continue
        caught += 1
        row = audit_accuracy(posteriors, audit, level=0.9).loc["all"]
        assert row["upper"] >= 176 / 177
        assert row["audit_only_upper"] >= 176 / 177
        assert row["wilson_upper"] < 176 / 177  # the plain score interval misses
    assert caught >= 5


def _wilson(k, n, z):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


# ---------------------------------------------------------------------------- refusals
def test_bad_sizes_are_refused():
    posteriors, _ = population(20)
    for n in (0, -3, 21):
        with pytest.raises(ValueError, match="audit size"):
            plan_audit(posteriors, n)
    with pytest.raises(ValueError, match="design"):
        plan_audit(posteriors, 5, design="cluster")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: a.iloc[:0], "no audited task"),
        (lambda a: a.drop(columns="inclusion_probability"), "inclusion_probability"),
        (lambda a: a.assign(task=["zz", *a["task"].iloc[1:]]), "not among the 20 tasks"),
        (lambda a: a.assign(label=["c", *a["label"].iloc[1:]]), "is not one of the classes"),
        (lambda a: a.assign(label=[None, *a["label"].iloc[1:]]), "without a label"),
        (lambda a: a.assign(inclusion_probability=1.5), r"\(0, 1\]"),
        (lambda a: a.iloc[1:], "stand for"),
        (lambda a: pd.concat([a, a.iloc[:1]]), "twice"),
    ],
)
def test_bad_audits_are_refused(change, message):
    posteriors, truth = population(20)
    audit = change(checked(posteriors, truth, 6, seed=0))
    with pytest.raises(ValueError, match=message):
        check_audit(audit, posteriors.index, posteriors.columns)


# ---------------------------------------------------------------------------- stop rule
def test_answer_change_against_enumeration():
    rng = np.random.default_rng(9)
    probas = rng.dirichlet(np.ones(3), size=6)
    confusion = rng.dirichlet(np.ones(3) * 2, size=(6, 3))
    got = answer_change(probas, confusion)
    for i in range(6):
        expected = 0.0
        for x in range(3):
            joint = probas[i] * confusion[i, :, x]
            if joint.argmax() != probas[i].argmax():
                expected += joint.sum()
        assert got[i] == pytest.approx(expected)
    # two labels: every ordered pair of labels, brute force
    two = answer_change(probas, confusion, labels=2)
    for i in range(6):
        expected = 0.0
        for x, x2 in itertools.product(range(3), repeat=2):
            joint = probas[i] * confusion[i, :, x] * confusion[i, :, x2]
            if joint.argmax() != probas[i].argmax():
                expected += joint.sum()
        assert two[i] == pytest.approx(expected)
    # a decided task under honest workers never changes; a coin flip often does
    honest = np.array([[0.9, 0.1], [0.1, 0.9]])
    assert answer_change(np.array([[0.999, 0.001], [0.5, 0.5 + 1e-9]]), honest)[0] == 0
    assert answer_change(np.array([[0.5 + 1e-9, 0.5]]), honest)[0] > 0.4
