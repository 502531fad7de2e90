r"""Tempering a label model's task posteriors by an exponent learnt from its own labels.

A confusion-matrix model reads every label of a task as independent evidence of one shared
confusion row per worker. Where tasks differ in difficulty (GLAD's misspecification,
Whitehill et al. 2009) the votes on hard tasks are closer to random than that, and the
posterior claims more than it delivers: on simulated tasks with log-normal easiness the
hierarchical model's mean claimed probability of its answer exceeded its accuracy by 0.047
(``benchmarks/defaults/results/calibration.md``). The reported posterior is therefore the
tempered (power) posterior

.. math::
    p_a(c_i = k) \propto p(c_i = k \mid x)^{a}, \qquad 0 < a \le 1,

which keeps the order of the classes, so every answer (``labels_``) is unchanged; the
exponent plays the part of the learning rate of a generalised posterior (Grünwald 2012,
SafeBayes; Holmes & Walker 2017), chosen without gold as the smaller of two exponents, each
a check of a different kind of over-confidence: :math:`a = \min(a_h, a_d)`. Each check can
only miss over-confidence (neither exponent exceeds 1, and 1 is what it gives where it sees
none), so the reported posterior is the one tempered enough for both.

**Held-out labels** (:math:`a_h`, :func:`fit_exponent`). The exponent under which the labels
themselves are best predicted when hidden (the predictive log score, Gneiting & Raftery 2007).
Where every task has the same number of labels, every label :math:`x_{ij}` of a task with at
least three labels, from a worker with at least two
(:func:`~crowdbayes.models.labels._held_out.held_out_rows`), is scored against all the others
(where the numbers differ, against its task's earlier labels only: *adaptive collection*,
below) by

.. math::
    s_{ij}(a) = \log \sum_k p_a^{(-ij)}(c_i = k)\, \hat\theta^{(-ij)}_{j k x_{ij}},
    \qquad p^{(-ij)}(c_i = k) \propto \frac{p(c_i = k \mid x)}{\exp \ell_{jk x_{ij}}},

with no refit: the task's posterior without the label divides the label's own likelihood
term :math:`\exp\ell_{jkx}` out of the fitted posterior (exact when the worker parameters are
held fixed: Dawid–Skene's posterior is the prior times one factor per label), and the worker's
confusion row without the label removes the label's expected count from its Dirichlet
posterior, :math:`\hat\theta^{(-ij)}_{jk:} = (A_{jk:} - p(c_i = k \mid x)\, e_{x_{ij}}) /
(\sum_x A_{jkx} - p(c_i = k \mid x))` for concentrations :math:`A_{jk:}` (prior plus
expected counts). Without that second correction the worker's row has already seen the label
it predicts, which rewards confident posteriors: on the 18 simulated draws of
``benchmarks/defaults`` (hierarchical model, search extended above 1) the chosen exponent was
then above 1 on 15, and on all four task-difficulty draws above the one that calibrates.
:math:`\ell_{jkx}` is the log of the row mean for a model that averages over θ (the
hierarchical model's Gibbs draws),
:math:`\mathbb{E}\log\theta_{jkx}` for mean-field variational Bayes (whose posterior is the
prior times :math:`\exp\mathbb{E}\log\theta` per label). The mean score over the held-out
labels is maximised over :math:`a \in [a_{\min}, 1]` by a bounded scalar search (Brent).

**Adaptive collection.** Labels collected adaptively (``labels next``, a platform's dynamic
overlap) go to a task *because* its earlier labels disagreed, so hiding an earlier label and
keeping the later ones conditions on that disagreement: the others look unanimous and the
hidden one contradicts them far more often than the posterior allows. On the defaults
protocol's dynamic-overlap scenario (binary Dawid–Skene workers, labels until one class leads
by 2, at most 5), where the model holds, hiding every label tempered the hierarchical model to
the floor and claimed 0.36–0.38 below its accuracy (``calibration.md``, its note); in
``labels next``'s own loop it claimed 0.39 below its agreement with the full pool on
d_product at two labels per task (``benchmarks/active/results/active_estimate_next.md``).
Scoring each task's *last* label instead is no cure: a task stops *because* its last label
settled it, so the scored labels agree with the rest and the check sees no over-confidence
at all. The cure is Dawid's (1984) prequential decomposition: where the numbers of labels
differ (:func:`~crowdbayes.models.labels._held_out.fixed_overlap`), every label with at least
two earlier labels of its task in the order given, from a worker with at least two
(:func:`~crowdbayes.models.labels._held_out.prequential_rows`), is scored against the
posterior of those earlier labels alone,

.. math::
    p^{(<ij)}(c_i = k) \propto \bar\pi_k \prod_{j' \text{ before } j} \exp \ell_{j'k x_{ij'}},

(:math:`\bar\pi` the fit's mean class shares; the product built from the factors, since a
Gibbs average can put exactly zero on a class that earlier labels alone would not rule out).
Whether a label is asked for depends only on the labels before it, all of which are in that
posterior, so a stopping rule cannot bias the score; but the order given must be the order
the labels arrived in (append new labels at the end). A fixed overlap asks no label because
of another's answer, and there every label is scored against all the others, as before (more
labels, and the posterior the check reads is the reported one less one label). On the
dynamic-overlap scenario the exponent is then 1 and the claim 0.017 below the accuracy
(``calibration.md``); with GLAD task difficulty added to it, which the plain posterior
over-claims by about 0.04, the exponent falls below 1 (the calibration tests'
``test_adaptively_collected_labels_are_read_prequentially``). On the five shared sets whose
tasks have unequal numbers of labels the claimed minus the gold accuracy went from +0.139,
+0.151, +0.199, +0.153 and −0.026 (Duchenne, S_Adult, S_Rel, TREC, Web; every label hidden)
to +0.166, +0.151, +0.204, +0.160 and +0.014 (one fit each); the seven with a fixed overlap
are unchanged.

Held-out labels see a posterior from one label fewer than the reported one, so :math:`a_h`
transfers where that does not change the kind of evidence: with five labels a task the gap on
the binary GLAD scenario went from +0.047 to +0.008 (two draws pooled). With three labels a
task and three classes the two-label posteriors left after hiding one contain no 2–1 split,
the vote that the full posterior is over-confident on, and :math:`a_h` stays near 1 (0.99
and 0.96; gap +0.046 to +0.042).

**Task difficulty** (:math:`a_d`, :func:`~._difficulty.difficulty_exponent`, module
:mod:`._difficulty`). The votes of all the task's labels together read by a model with a task
effect, GLAD's easiness acting on the odds of a correct label of each fitted row (Whitehill et
al. 2009), with the spread of log easiness fitted by its posterior mode; :math:`a_d` is the
power of the fitted posterior nearest (Kullback–Leibler) to that model's posterior, and 1
where the fitted spread is 0. It sees what :math:`a_h` misses with three labels a task: on
the three-class, three-label scenario the gap went from +0.046 to +0.025 (two draws pooled).

References
----------
J. Whitehill, P. Ruvolo, T. Wu, J. Bergsma, J. Movellan. "Whose vote should count more",
NIPS (2009).
T. Gneiting, A. E. Raftery. "Strictly proper scoring rules, prediction, and estimation",
Journal of the American Statistical Association 102 (2007).
P. Grünwald. "The safe Bayesian: learning the learning rate via the mixability gap",
Algorithmic Learning Theory (2012).
C. C. Holmes, S. G. Walker. "Assigning a value to a power likelihood in a general Bayesian
model", Biometrika 104 (2017).
A. P. Dawid. "Present position and potential developments: some personal views. Statistical
theory: the prequential approach", Journal of the Royal Statistical Society A 147 (1984).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma, logsumexp

from ...data import Labels
from ._difficulty import difficulty_exponent
from ._held_out import HELD_OUT_FLOOR as _FLOOR
from ._held_out import (
    MIN_EXPONENT,
    best_exponent,
    earlier_in_task,
    fixed_overlap,
    held_out_rows,
    prequential_rows,
    rows_without_label,
    temper,
)

__all__ = [
    "MIN_EXPONENT",
    "HeldOutLabels",
    "calibration_exponent",
    "fit_exponent",
    "held_out_labels",
    "temper",
]


@dataclass(frozen=True)
class HeldOutLabels:
    """What scoring the held-out labels needs (module docstring), class-major: per held-out
    label (``rows``, its positions in the labels), the normalised log posterior of its task
    without it, ``log_posterior`` (K, n), and ``likelihood`` (K, n), the probability of the
    label under each class's confusion row of its worker without it."""

    log_posterior: np.ndarray
    likelihood: np.ndarray
    rows: np.ndarray | None = None

    def scores(self, exponent: float) -> np.ndarray:
        """:math:`s_{ij}(a)` of every held-out label (module docstring). The log posterior is
        normalised (its largest entry per label is at least log 1/K), so for 0 < a ≤ 1 the
        weights exp(a log p) lie in [K^-1, 1] for the best class: no shift is needed."""
        weights = np.exp(exponent * self.log_posterior)
        predictive = (weights * self.likelihood).sum(axis=0) / weights.sum(axis=0)
        return np.log(np.maximum(predictive, _FLOOR))


def held_out_labels(
    labels: Labels,
    probas: np.ndarray,
    concentration: np.ndarray,
    *,
    expected_log: bool,
) -> HeldOutLabels | None:
    """The held-out labels of ``labels`` scored against a fit's class-major (K, n_tasks)
    ``probas`` and Dirichlet ``concentration`` of each worker's confusion rows (workers, K, K:
    prior plus expected counts of the tasks that feed back); ``expected_log``: the posterior
    used :math:`\\mathbb{E}\\log\\theta` (variational Bayes) rather than :math:`\\log
    \\mathbb{E}\\theta`. None when no label can be held out."""
    if labels.label_codes is None:  # compacted counts: the labels one by one are gone
        return None
    sequential = not fixed_overlap(labels)
    rows = prequential_rows(labels) if sequential else held_out_rows(labels)
    if not len(rows):
        return None
    if sequential:  # the posterior from the task's earlier labels, factor by factor
        every = np.arange(labels.n_labels)
        totals, own, weight = rows_without_label(labels, every, probas, concentration)
        before = earlier_in_task(labels, _factor_log(own, totals, expected_log))[rows].T
        totals, own, weight = totals[rows].T, own[rows].T, weight[rows].T  # class-major (K, n)
        with np.errstate(divide="ignore"):
            log_posterior = np.log(probas.mean(axis=1))[:, None] + before
    else:
        totals, own, weight = rows_without_label(labels, rows, probas, concentration)
        totals, own, weight = totals.T, own.T, weight.T  # class-major (K, n)
        with np.errstate(divide="ignore"):
            log_posterior = np.log(probas[:, labels.task_codes[rows]]) - _factor_log(
                own, totals, expected_log
            )
    log_posterior -= logsumexp(log_posterior, axis=0, keepdims=True)
    # the label's expected count leaves the row, where its task fed back into the row
    left = np.maximum(own - weight, 0.0)
    likelihood = np.maximum(left / np.maximum(totals - weight, _FLOOR), _FLOOR)
    return HeldOutLabels(log_posterior, likelihood, rows)


def _factor_log(own: np.ndarray, totals: np.ndarray, expected_log: bool) -> np.ndarray:
    r"""The log of the factor a label multiplied its task's posterior by: :math:`\mathbb{E}
    \log\theta_{jkx}` (variational Bayes) or :math:`\log \mathbb{E}\theta_{jkx}`, from
    the row's entry at the label and its total."""
    return digamma(own) - digamma(totals) if expected_log else np.log(own / totals)


def fit_exponent(held_out: HeldOutLabels | None) -> float:
    """The exponent in [:data:`MIN_EXPONENT`, 1] of the best mean held-out score (1 when
    nothing is held out)."""
    if held_out is None:
        return 1.0
    return best_exponent(lambda a: -held_out.scores(a).mean())


def calibration_exponent(
    labels: Labels, probas: np.ndarray, concentration: np.ndarray, *, expected_log: bool
) -> float:
    """:math:`\\min(a_h, a_d)`: :func:`fit_exponent` of :func:`held_out_labels` and
    :func:`~._difficulty.difficulty_exponent` (module docstring)."""
    held_out = held_out_labels(labels, probas, concentration, expected_log=expected_log)
    return min(fit_exponent(held_out), difficulty_exponent(labels, probas, concentration))
