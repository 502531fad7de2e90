"""The value of a comparison (``crowdbayes.gp.questions``): BALD's closed form against Monte
Carlo, its invariants, uncertainty sampling, the random baseline and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr

from crowdbayes.gp import (
    PAIR_QUESTION_VALUES,
    answer_probability,
    pair_question_values,
    probit_information_gain,
    question_order,
)
from crowdbayes.gp.questions import binary_entropy

GRID = [
    (0.0, 1.0, 2.0),
    (0.5, 0.2, 2.0),
    (-1.5, 3.0, 2.0),
    (2.0, 0.5, 0.5),
    (0.0, 10.0, 2.0),
    (0.3, 0.01, 2.0),
    (-4.0, 4.0, 1.0),
    (1.0, 2.0, 8.0),
]


def monte_carlo(mean, var, noise_var, n=400_000, seed=0):
    """``I(y; d) = h(E[p]) - E[h(p)]`` with ``p = Φ(d/√ν)``, ``d ~ N(mean, var)``."""
    d = np.random.default_rng(seed).normal(mean, np.sqrt(var), n)
    p = ndtr(d / np.sqrt(noise_var))
    terms = binary_entropy(p)
    return binary_entropy(p.mean()) - terms.mean(), terms.std() / np.sqrt(n)


@pytest.mark.parametrize(("mean", "var", "noise_var"), GRID)
def test_bald_closed_form_matches_monte_carlo(mean, var, noise_var):
    """The closed form approximates ``h(Φ(x))`` by a Gaussian (error ≤ 0.0027 bits, i.e.
    0.0019 nats), so it agrees with Monte Carlo within that plus four standard errors."""
    exact, se = monte_carlo(mean, var, noise_var)
    value = probit_information_gain(mean, var, noise_var)
    assert value == pytest.approx(exact, abs=0.0019 + 4 * se)


def test_answer_probability_matches_monte_carlo():
    for mean, var, noise_var in GRID:
        d = np.random.default_rng(1).normal(mean, np.sqrt(var), 400_000)
        p = ndtr(d / np.sqrt(noise_var)).mean()
        assert answer_probability(mean, var, noise_var) == pytest.approx(p, abs=3e-3)


def test_bald_invariants():
    var = np.linspace(0.0, 20.0, 41)
    gain = probit_information_gain(0.0, var, 2.0)
    assert gain[0] == pytest.approx(0.0, abs=1e-12)  # a known difference: nothing to learn
    assert np.all(np.diff(gain) > 0)  # more uncertain, more to learn
    assert np.all(gain <= np.log(2.0))  # at most one bit
    mean = np.linspace(0.0, 6.0, 25)
    assert np.all(np.diff(probit_information_gain(mean, 1.0, 2.0)) < 0)  # decided pairs
    assert np.allclose(
        probit_information_gain(mean, 1.0, 2.0), probit_information_gain(-mean, 1, 2)
    )
    noisier = probit_information_gain(0.5, 1.0, np.array([0.5, 2.0, 8.0, 32.0]))
    assert np.all(np.diff(noisier) < 0)  # a noisier answer tells less
    # shape: arrays broadcast, non-negative everywhere
    values = probit_information_gain(np.zeros((3, 4)), np.ones((3, 4)), 2.0)
    assert values.shape == (3, 4) and (values >= 0).all()


def test_bald_ranks_unlike_uncertainty():
    """A well-known tie (p = ½, no variance) is the most uncertain answer and worth nothing
    to BALD; an unknown pair is worth more."""
    mean, var = np.array([0.0, 1.0]), np.array([1e-6, 4.0])
    assert pair_question_values(mean, var, 2.0, "uncertainty").argmax() == 0
    assert pair_question_values(mean, var, 2.0, "information").argmax() == 1


def test_uncertainty_is_least_confidence():
    mean, var = np.array([-2.0, 0.0, 0.3]), np.array([1.0, 1.0, 0.5])
    p = answer_probability(mean, var, 2.0)
    values = pair_question_values(mean, var, 2.0, "uncertainty")
    assert np.allclose(values, 1 - np.maximum(p, 1 - p))
    assert values[1] == pytest.approx(0.5)


def test_random_is_seeded():
    a = pair_question_values(np.zeros(5), 1.0, 2.0, "random", np.random.default_rng(3))
    b = pair_question_values(np.zeros(5), 1.0, 2.0, "random", np.random.default_rng(3))
    c = pair_question_values(np.zeros(5), 1.0, 2.0, "random", np.random.default_rng(4))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_best_first_unless_power():
    score = np.array([0.2, 0.5, 0.0, 0.3, 0.5])
    order = question_order(score, "information", np.random.default_rng(0))
    assert set(order[:2]) == {1, 4} and list(order[2:]) == [3, 0, 2]
    assert set(question_order(score, "information", np.random.default_rng(1))[:2]) == {1, 4}
    # power: the values are the information gain's, the order a draw
    assert np.array_equal(
        pair_question_values(np.ones(3), 1.0, 2.0, "power"),
        pair_question_values(np.ones(3), 1.0, 2.0, "information"),
    )


def test_power_draws_in_proportion_to_the_value():
    """The first question drawn is question i with probability score_i / Σ score (the
    Gumbel-top-k trick), the second from the rest likewise; a question worth nothing is last."""
    score = np.array([0.5, 0.3, 0.2, 0.0])
    rng = np.random.default_rng(0)
    draws = np.array([question_order(score, "power", rng) for _ in range(20_000)])
    first = np.bincount(draws[:, 0], minlength=4) / len(draws)
    assert np.allclose(first, score, atol=0.015)  # 3.3 standard errors at most
    second_after_0 = draws[draws[:, 0] == 0, 1]
    share = np.bincount(second_after_0, minlength=4) / len(second_after_0)
    assert np.allclose(share, [0.0, 0.6, 0.4, 0.0], atol=0.02)
    assert np.all(draws[:, 3] == 3)


def test_mixed_alternates_the_best_and_uniform_draws():
    """Every question once; the best-first list and a uniform permutation alternate (a fair coin
    choosing which starts), so the first 2k places hold the k best whatever the draws, and the
    low-valued questions come in through the draws, each equally often."""
    score = np.array([0.9, 0.8, 0.7] + [0.1] * 7)
    rng = np.random.default_rng(0)
    orders = np.array([question_order(score, "mixed", rng) for _ in range(8_000)])
    assert np.all(np.sort(orders, axis=1) == np.arange(10))
    # the coin: the best question first, or a draw of the ten (the best one with chance 0.1)
    assert 0.53 < np.mean(orders[:, 0] == 0) < 0.57
    # the first 2k places hold the k best questions, whatever the draws
    for k in (1, 2, 3):
        assert np.all(np.isin(np.arange(k), orders[:, : 2 * k]))
    # and the other places a uniform draw: a batch of two holds a given low-valued question
    # with chance 0.1 (the draw) + 0.05 / 9 (the draw first, the best question drawn, then a
    # second draw of the nine others) — each of the seven equally often
    batch_of_two = np.bincount(orders[:, :2].ravel(), minlength=10) / len(orders)
    assert np.allclose(batch_of_two[3:], 0.1 + 0.05 / 9, atol=0.012)
    # the values are the information gain's
    assert np.array_equal(
        pair_question_values(np.ones(3), 1.0, 2.0, "mixed"),
        pair_question_values(np.ones(3), 1.0, 2.0, "information"),
    )


def test_bad_input():
    assert PAIR_QUESTION_VALUES == ("information", "power", "mixed", "uncertainty", "random")
    with pytest.raises(ValueError, match="the random strategy needs a random generator"):
        pair_question_values(np.zeros(2), 1.0, 2.0, "random")
    with pytest.raises(ValueError, match=r"strategy must be one of .*; got 'entropy'"):
        pair_question_values(np.zeros(2), 1.0, 2.0, "entropy")
