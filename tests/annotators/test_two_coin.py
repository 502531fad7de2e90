"""Two-coin worker maths against quadrature and naive loops."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from crowdbayes.annotators.two_coin import (
    link_expected_log_likelihood,
    link_message_weights,
    two_coin_expectations,
    two_coin_kl,
    two_coin_posterior,
    two_coin_statistics,
)

ALPHA = np.array([[9.0, 2.0], [1.5, 1.5], [30.0, 0.7]])
BETA = np.array([[4.0, 1.0], [2.0, 6.0], [1.0, 1.0]])


def beta_mean_of(f, a: float, b: float) -> float:
    value, _ = integrate.quad(lambda x: f(x) * stats.beta.pdf(x, a, b), 0, 1, limit=200)
    return value


def test_expected_logs_match_quadrature():
    expected = two_coin_expectations(ALPHA, BETA)
    for m in range(3):
        assert expected.log_alpha[m] == pytest.approx(beta_mean_of(np.log, *ALPHA[m]), rel=1e-6)
        assert expected.log1m_alpha[m] == pytest.approx(
            beta_mean_of(lambda x: np.log1p(-x), *ALPHA[m]), rel=1e-6
        )
        assert expected.log_beta[m] == pytest.approx(beta_mean_of(np.log, *BETA[m]), rel=1e-6)
        assert expected.log1m_beta[m] == pytest.approx(
            beta_mean_of(lambda x: np.log1p(-x), *BETA[m]), rel=1e-6
        )


def test_weights_reproduce_the_expected_link_log_likelihood():
    """s·E[w] + E[c] = E[log p(L | s)] for all four (s, L), by direct integration over α, β."""
    expected = two_coin_expectations(ALPHA, BETA)
    workers = np.array([0, 0, 1, 1, 2, 2])
    labels = np.array([1, 0, 1, 0, 1, 0])
    weights, offsets = link_message_weights(expected, workers, labels)
    for w, (m, label) in enumerate(zip(workers, labels, strict=True)):
        a, b = ALPHA[m], BETA[m]
        # p(L | same) = α^L (1-α)^(1-L);  p(L | different) = (1-β)^L β^(1-L)
        same = beta_mean_of(lambda x, lab=label: lab * np.log(x) + (1 - lab) * np.log1p(-x), *a)
        diff = beta_mean_of(lambda x, lab=label: lab * np.log1p(-x) + (1 - lab) * np.log(x), *b)
        assert weights[w] + offsets[w] == pytest.approx(same, rel=1e-6)
        assert offsets[w] == pytest.approx(diff, rel=1e-6)


def test_message_sign_follows_the_label_for_good_workers():
    expected = two_coin_expectations(np.array([[20.0, 1.0]]), np.array([[20.0, 1.0]]))
    weights, _ = link_message_weights(expected, np.array([0, 0]), np.array([1, 0]))
    assert weights[0] > 0 > weights[1]


def test_statistics_and_expected_log_likelihood_match_loops():
    rng = np.random.default_rng(3)
    n_links, n_workers = 40, 4
    workers = rng.integers(n_workers, size=n_links)
    labels = rng.integers(2, size=n_links)
    agreement = rng.random(n_links)
    alpha_counts, beta_counts = two_coin_statistics(agreement, workers, labels, n_workers)
    naive_a, naive_b = np.zeros((n_workers, 2)), np.zeros((n_workers, 2))
    for s, m, lab in zip(agreement, workers, labels, strict=True):
        naive_a[m] += s * np.array([lab, 1 - lab])
        naive_b[m] += (1 - s) * np.array([1 - lab, lab])
    np.testing.assert_allclose(alpha_counts, naive_a)
    np.testing.assert_allclose(beta_counts, naive_b)
    np.testing.assert_allclose(two_coin_posterior([1.0, 2.0], alpha_counts), naive_a + [1, 2])

    alpha = two_coin_posterior([1.0, 1.0], alpha_counts)
    beta = two_coin_posterior([1.0, 1.0], beta_counts)
    e = two_coin_expectations(alpha, beta)
    weights, offsets = link_message_weights(e, workers, labels)
    naive = 0.0
    for s, m, lab in zip(agreement, workers, labels, strict=True):
        same = e.log_alpha[m] if lab else e.log1m_alpha[m]
        diff = e.log1m_beta[m] if lab else e.log_beta[m]
        naive += s * same + (1 - s) * diff
    assert link_expected_log_likelihood(agreement, weights, offsets) == pytest.approx(naive)


def test_kl_matches_quadrature():
    prior = np.array([1.0, 2.0])
    naive = 0.0
    for a, b in ALPHA:
        q = stats.beta(a, b)
        value, _ = integrate.quad(
            lambda x, q=q: q.pdf(x) * (q.logpdf(x) - stats.beta.logpdf(x, *prior)),
            0,
            1,
            limit=200,
        )
        naive += value
    assert two_coin_kl(ALPHA, prior) == pytest.approx(naive, rel=1e-5)
    assert two_coin_kl(np.tile(prior, (2, 1)), prior) == pytest.approx(0.0, abs=1e-12)
