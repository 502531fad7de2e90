r"""The task-difficulty part :math:`a_d` of the calibration exponent (:mod:`._calibration`,
:math:`a = \min(a_h, a_d)`): how far a model with a task effect would temper the fitted
posterior.

The votes of all the task's labels together are read by a model with a task effect, GLAD's
easiness :math:`a_i > 0` acting on the odds of a correct label of each fitted row (Whitehill et
al. 2009, in the confusion-matrix form): a worker labels a task of class :math:`k` correctly with
probability :math:`\sigma(a_i \operatorname{logit} \theta_{jkk})` and otherwise gives
:math:`x \ne k` in proportion to :math:`\theta_{jkx}`,

.. math::
    \theta^{(a)}_{jkk} = \sigma(a \operatorname{logit} \theta_{jkk}), \qquad
    \theta^{(a)}_{jkx} = \theta_{jkx}\,
    \frac{1 - \theta^{(a)}_{jkk}}{1 - \theta_{jkk}},

so :math:`a = 1` is the fitted row, :math:`a \to 0` a coin between right and wrong and
:math:`a \to \infty` always right (θ: the worker's row without the label,
:func:`~._held_out.rows_without_label`, as for :math:`a_h`). With
:math:`\log a_i \sim N(0, s^2)` the spread :math:`s` is the mode of its posterior given the
tasks' labels, the rows held fixed,

.. math::
    \hat s = \arg\max_{s \ge 0} \Bigl[\sum_i \log \int \sum_k \hat\pi_k \prod_{l \in i}
    \theta^{(a)}_{j_l k x_l} \, \mathrm{LogNormal}(a; 0, s^2)\, da
    \; - \frac{s^2}{2 \sigma_s^2}\Bigr],

on a grid of :math:`\log a` (:data:`LOG_EASINESS`; a scan of :math:`s \in [0, 3]` refined
by a bounded search; :math:`\hat\pi` the mean posterior), under a half-normal prior of unit
scale :math:`\sigma_s = 1` (:data:`SPREAD_SCALE`), the weakly informative prior of a
hierarchical scale (Gelman 2006) that shrinks towards the model without a task effect
(Simpson et al. 2017). The prior is needed: with three labels a task the marginal likelihood
is nearly flat in :math:`s` beyond about 0.75 (within 1.5 nats up to 3 on simulated three-class
draws), and its maximum fell at 0.3–0.5 on some draws and at 2.5–2.9 on others, which gave
gaps of +0.04 and −0.10: how the labels split pins the spread down only loosely, and the
class posterior under a wide spread is not identified by labels alone. (Sensitivity on the
benchmark's three-class draws and four further ones: a scale of 0.5 gave +0.031 and +0.009
pooled, 2 gave +0.024 and draws at −0.094 and −0.076; 1 was chosen as the unit of
:math:`\log a`, not tuned.) Only tasks with at least three
labels and no gold enter: two labels agree or not, which the fitted rows already match, and
the spread shows in how three or more labels split (as three views are what identify a
latent class model, Kruskal 1977; Allman, Matias & Rhodes 2009). The location is fixed at 0:
the fitted rows are those of the median task, since moving every task's easiness at once would
say that every worker is more or less reliable than fitted, which is what :math:`a_h` checks
(:mod:`._calibration`).
The task's posterior under the model mixes, by the posterior weight of each easiness
:math:`r_{ig} \propto \mathrm{LogNormal}(a_g; 0, \hat s^2)\, P(x_i \mid a_g)`, power posteriors
:math:`p_{a_g}` — in place of the exact posterior under :math:`a_g`, which they equal for two
classes with symmetric rows and even prevalence, and which could change an answer —
:math:`q_i = \sum_g r_{ig}\, p_{a_g}(c_i)`, and :math:`a_d` is the power of the fitted
posterior nearest to it,

.. math::
    a_d = \arg\min_{a \in [a_{\min}, 1]} \sum_i \mathrm{KL}(q_i \,\|\, p_{a}(c_i \mid x)),

the projection of the difficulty model's posterior on the tempered family (Brent); where the
spread is 0 (no task effect) :math:`a_d = 1`. On the three-class, three-label scenario
:math:`a_d` was 0.85 and 0.92 and the gap went from +0.046 to +0.025 (two draws pooled;
four further draws, seeds 2–5: +0.052 to −0.003 pooled, each draw within ±0.030); the
binary scenario keeps :math:`a_h` (+0.008), and so does every shared set but s_adult (0.97),
whose gap fell from +0.154 to +0.151. The draws vary: on six draws of the same scenario from
``tests/models/labels/test_difficulty_calibration.py``'s simulation the pooled gap went from
+0.064 to +0.032 (+0.055 with :math:`a_h` alone; single draws +0.006 to +0.074).

**Cost.** The evidence costs one pass over the labels per point of :data:`LOG_EASINESS` (81),
and the spread and the projection estimate only two numbers, so on large data they are fitted
on a fixed subsample: at most :data:`MAX_TASKS` (20,000) of the eligible tasks, evenly spaced
in task-code order (:func:`eligible_tasks`), the same on every call. At or below the cap every
eligible task enters, so the exponent is the one without a cap. On 500,000 simulated labels
(``simulate_labels(100_000, 500, 5, 5)``, Bayesian Dawid–Skene's fit) :func:`difficulty_exponent`
took 5.2 s on all 100,000 tasks and 1.1–1.4 s capped (shared machine; the held-out part 0.5 s);
:math:`a_d` went from 0.925 to 0.903, and three other evenly spaced subsamples of 20,000 gave
0.916, 0.932 and 0.973: above the cap the subsample adds noise of a few hundredths.

References
----------
J. Whitehill, P. Ruvolo, T. Wu, J. Bergsma, J. Movellan. "Whose vote should count more",
NIPS (2009).
J. B. Kruskal. "Three-way arrays: rank and uniqueness of trilinear decompositions", Linear
Algebra and its Applications 18 (1977).
E. S. Allman, C. Matias, J. A. Rhodes. "Identifiability of parameters in latent structure
models with many observed variables", Annals of Statistics 37 (2009).
A. Gelman. "Prior distributions for variance parameters in hierarchical models", Bayesian
Analysis 1 (2006).
D. Simpson, H. Rue, A. Riebler, T. G. Martins, S. H. Sørbye. "Penalising model component
complexity: a principled approach to constructing priors", Statistical Science 32 (2017).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_expit, logsumexp

from ...data import Labels
from ._held_out import HELD_OUT_FLOOR as _FLOOR
from ._held_out import best_exponent, rows_without_label, temper

__all__ = [
    "LOG_EASINESS",
    "MAX_TASKS",
    "SPREADS",
    "SPREAD_SCALE",
    "difficulty_exponent",
    "easiness_log_likelihood",
    "easiness_log_prior",
    "eligible_tasks",
    "fit_spread",
    "project_exponent",
]

#: the grid of log easiness on which the difficulty model's log-normal is discretised
LOG_EASINESS = np.linspace(-5.0, 3.0, 81)
#: the spreads of log easiness scanned before the bounded search
SPREADS = np.arange(0.0, 3.0 + 1e-9, 0.05)
#: the scale of the half-normal prior of the spread of log easiness (module docstring)
SPREAD_SCALE = 1.0
#: the most tasks the spread and the projection are fitted on (module docstring, "Cost")
MAX_TASKS = 20_000


def eligible_tasks(labels: Labels) -> np.ndarray:
    """The boolean mask (n_tasks,) of the tasks the difficulty model is fitted on: those with
    at least three labels and no gold, thinned to :data:`MAX_TASKS` evenly spaced in task-code
    order where there are more."""
    per_task = np.bincount(labels.task_codes, minlength=labels.n_tasks)
    chosen = (per_task >= 3) & (labels.gold_codes < 0)
    eligible = np.flatnonzero(chosen)
    if len(eligible) > MAX_TASKS:
        chosen[:] = False
        chosen[eligible[np.arange(MAX_TASKS) * len(eligible) // MAX_TASKS]] = True
    return chosen


def easiness_log_likelihood(
    labels: Labels, probas: np.ndarray, concentration: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """:math:`\\log P(x_i \\mid a_g)` (G, n) on :data:`LOG_EASINESS` for the n tasks of
    :func:`eligible_tasks`, and their boolean mask (n_tasks,): the difficulty model's evidence
    (module docstring) for class-major ``probas`` and the ``concentration`` of each worker's
    rows. None when no task qualifies."""
    if labels.label_codes is None:  # compacted counts: the labels one by one are gone
        return None
    chosen = eligible_tasks(labels)
    if not chosen.any():
        return None
    keep = np.flatnonzero(chosen[labels.task_codes])
    tasks = np.cumsum(chosen)[labels.task_codes[keep]] - 1  # positions among the chosen tasks
    workers, observed = labels.worker_codes[keep], labels.label_codes[keep]
    n_classes, n_chosen = probas.shape[0], int(chosen.sum())
    # the label's expected count leaves the row, where its task fed back into the row
    totals, own, weight = rows_without_label(labels, keep, probas, concentration)  # n, K
    totals = np.maximum(totals - weight, _FLOOR)
    own = np.maximum(own - weight, _FLOOR) / totals
    same = observed[:, None] == np.arange(n_classes)  # n, K: the label says class k
    diagonal = np.where(same, own, np.diagonal(concentration, axis1=1, axis2=2)[workers] / totals)
    diagonal = np.clip(diagonal, _FLOOR, 1 - _FLOOR)
    log_odds = np.log(diagonal) - np.log1p(-diagonal)
    wrong = np.log(own) - np.log1p(-diagonal)  # log θ_kx / (1 − θ_kk), used where x ≠ k
    prevalence = np.log(np.maximum(probas.mean(axis=1), _FLOOR))
    slots = (tasks[:, None] * n_classes + np.arange(n_classes)).ravel()  # (task, class) pairs
    out = np.empty((len(LOG_EASINESS), n_chosen))
    for g, easiness in enumerate(np.exp(LOG_EASINESS)):
        right = log_expit(easiness * log_odds)  # log σ(z); log σ(−z) = log σ(z) − z
        log_row = np.where(same, right, wrong + right - easiness * log_odds)
        per_class = np.bincount(slots, weights=log_row.ravel(), minlength=n_chosen * n_classes)
        out[g] = logsumexp(prevalence + per_class.reshape(n_chosen, n_classes), axis=1)
    return out, chosen


def easiness_log_prior(spread: float) -> np.ndarray:
    """(G,): the log of LogNormal(0, ``spread``²) discretised on :data:`LOG_EASINESS` (all of
    it at a = 1 below the grid step)."""
    if spread < LOG_EASINESS[1] - LOG_EASINESS[0]:
        return np.where(np.abs(LOG_EASINESS) == np.abs(LOG_EASINESS).min(), 0.0, -np.inf)
    prior = -0.5 * (LOG_EASINESS / spread) ** 2
    return prior - logsumexp(prior)


def fit_spread(log_likelihood: np.ndarray) -> float:
    """The spread of log easiness of the largest posterior density (module docstring) for the
    (G, n) ``log_likelihood`` of :func:`easiness_log_likelihood`, under the half-normal prior
    of scale :data:`SPREAD_SCALE`: the best of :data:`SPREADS`, refined by a bounded search
    between its neighbours."""
    # Σ_g w_g exp(L_gi) as a product with exp(L − max), logsumexp only where that underflows
    top = log_likelihood.max(axis=0)
    scaled = np.exp(log_likelihood - top)

    def negative(spread: float) -> float:
        prior = easiness_log_prior(spread)
        marginal = np.exp(prior) @ scaled
        lost = marginal < 1e-250
        exact = logsumexp(prior[:, None] + log_likelihood[:, lost], axis=0).sum()
        evidence = np.log(marginal[~lost]).sum() + top[~lost].sum() + exact
        return 0.5 * (spread / SPREAD_SCALE) ** 2 - evidence

    values = [negative(spread) for spread in SPREADS]
    best = int(np.argmin(values))
    if best == 0:
        return 0.0
    bounds = (SPREADS[best - 1], SPREADS[min(best + 1, len(SPREADS) - 1)])
    found = minimize_scalar(negative, bounds=bounds, method="bounded")
    return float(found.x) if found.fun < values[best] else float(SPREADS[best])


def project_exponent(probas: np.ndarray, target: np.ndarray) -> float:
    """The exponent in [:data:`~._held_out.MIN_EXPONENT`, 1] whose tempered class-major
    ``probas`` (K, n) are nearest to ``target`` (K, n) in Kullback–Leibler divergence summed
    over the tasks (:func:`~._held_out.best_exponent`)."""
    with np.errstate(divide="ignore"):
        log_p = np.log(probas)
    positive = target > 0  # where the target is 0 so is every tempered probability

    def cross_entropy(exponent: float) -> float:
        tempered = exponent * log_p - logsumexp(exponent * log_p, axis=0)
        return -float((target[positive] * tempered[positive]).sum())

    return best_exponent(cross_entropy)


def difficulty_exponent(labels: Labels, probas: np.ndarray, concentration: np.ndarray) -> float:
    """:math:`a_d` (module docstring) for class-major ``probas`` and the ``concentration`` of
    each worker's rows: 1 when no task has three labels or the fitted spread is 0."""
    fitted = easiness_log_likelihood(labels, probas, concentration)
    if fitted is None:
        return 1.0
    log_likelihood, chosen = fitted
    spread = fit_spread(log_likelihood)
    if spread == 0.0:
        return 1.0
    log_weights = easiness_log_prior(spread)[:, None] + log_likelihood
    responsibility = np.exp(log_weights - logsumexp(log_weights, axis=0))  # G, n
    posterior = probas[:, chosen]
    mixed = np.zeros_like(posterior)
    for g in np.flatnonzero(responsibility.max(axis=1) > 1e-12):
        mixed += responsibility[g] * temper(posterior, float(np.exp(LOG_EASINESS[g])))
    return project_exponent(posterior, mixed)
