"""The hierarchical annotation model (Carpenter 2008) sampled by Gibbs, with diagnostics."""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
import pandas as pd

from ..._utils import RandomState, spawn_generators
from ...annotators import confusion_statistics
from ...base import (
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    Interval,
    Options,
)
from ...data import Labels
from ...exceptions import ConvergenceWarning, DivergenceWarning
from ...inference.diagnostics import ess_bulk, ess_tail, rhat, rhat_from_moments
from ...inference.parallel import resolve_n_jobs, run_chains
from ...maths import beta_interval
from . import _gibbs
from ._base import LabelModel, feedback_tasks
from ._calibration import calibration_exponent, temper
from .bayesian_dawid_skene import BayesianDawidSkene, confusion_prior
from .majority_vote import majority_classes

__all__ = ["HierarchicalAnnotation"]

_SAMPLERS = ("blocked", "collapsed")
_HYPERPRIORS = ("sample", "moment", "fixed")


class HierarchicalAnnotation(LabelModel):
    r"""Hierarchical model of annotation with beta/Dirichlet priors, sampled by Gibbs.

    Model (Carpenter 2008; the binary case is the paper's table, the multinomial case puts the
    same hierarchy on every confusion row):

    .. math::
        \pi &\sim \mathrm{Dir}(\beta), \quad c_i \sim \mathrm{Cat}(\pi), \\
        m_k &\sim \mathrm{Dir}(1,\dots,1), \quad s_k \sim \mathrm{Pareto}(1.5, s_{\min}), \\
        \theta_{jk:} &\sim \mathrm{Dir}(s_k m_k), \quad x_{ij} \sim \mathrm{Cat}(\theta_{j c_i :}).

    For two classes, :math:`\theta_{j00}` is worker j's specificity and :math:`\theta_{j11}` the
    sensitivity (class index 1, the second of ``labels.classes``, is "positive").

    Inference runs ``n_chains`` chains of Gibbs sweeps, in parallel processes (``n_jobs``)
    (``sampler``: ``"blocked"`` is vectorised, ``"collapsed"`` integrates θ and π out and updates
    tasks one at a time; see :mod:`crowdbayes.models.labels._gibbs`). The hyperparameters are

    - ``"sample"`` (default): drawn from their conditional under the Beta(1,1)/Dirichlet(1) mean
      and Pareto scale priors, with θ integrated out — stays finite on RTE. All K rows at once,
      from distinct-count sufficient statistics: coordinate-wise slice sampling for the first
      warm-up sweeps, then elliptical slice steps around a Laplace approximation refreshed during
      warm-up and fixed from the first recorded sweep (see
      :func:`crowdbayes.models.labels._gibbs.update_hyperparameters`);
    - ``"moment"``: set by moment matching to the current worker estimates, as in the paper
      (diverges on RTE: a :class:`DivergenceWarning` is raised and ``diverged_`` set);
    - ``"fixed"``: held at ``prior_diagonal``/``prior_off_diagonal``.

    Label switching: the posterior is symmetric under permuting the true classes (for the
    symmetric hyperpriors), so each sweep's classes are matched to a pivot labelling (majority
    vote) by the Hungarian algorithm and relabelled when a permutation fits better;
    ``n_relabelled_`` counts the sweeps of each chain where this happened. With gold labels the
    clamped tasks identify the classes, and no relabelling is done.

    Tasks that one worker labelled (and that have no gold) get classes like every task but are
    left out of the counts that θ, π and α are drawn from (Plummer's cut, as in
    :class:`BayesianDawidSkene`): a single label can only agree with itself, and counting it
    makes workers look better than the data say. With one random label per task the model then
    answers like majority vote. Two things make that hold on the multi-class sets, where nothing
    is learnt about any worker: the hyperprior on each row's mean leans towards the row's own
    class (``hyperprior_diagonal``; with the symmetric Dir(1) no class is preferred and the
    answer was left to the relabelling), and the relabelling judges label switches on the
    counted tasks only. Before, at one label per task, S_Adult, S_Rel and WSD were 0.009, 0.099
    and 0.006 below majority vote (mean of 3 starts,
    ``benchmarks/active/results/active_sparse_hierarchical.md``). On full data only the few
    single-label tasks of s_adult, s_rel, trec and web move, within Monte-Carlo error.

    Estimates are Rao–Blackwellised running means over the post-warm-up sweeps of all chains
    (no draws are stored): task probabilities average p(c_i | θ, π, x); worker confusion
    averages the conjugate posterior mean of θ given the classes. Posterior variances follow
    from the law of total variance; ``credible_level`` intervals are those of a Beta with the
    same mean and variance (or the empirical quantiles of the draws when ``keep_trace``).

    Convergence: ``diagnostics_`` has rank-normalised split-R-hat and bulk/tail ESS (Vehtari et
    al. 2021) of the log-likelihood, prevalence and hyperparameters from their traces;
    ``confusion_rhat_`` and ``probas_rhat_`` give the Gelman–Rubin R-hat of every worker
    parameter and task probability from the chains' online moments. A fit whose ``max_rhat_``
    exceeds 1.05 raises a :class:`ConvergenceWarning` saying how to sample more, and a fit
    projected (from the first sweeps, timed on a copy of a chain) to take over 30 s says so
    with a :class:`DataWarning` before it starts, naming the faster models
    (:func:`crowdbayes.inference.announce.announce_duration`).

    Parameters
    ----------
    n_chains, n_warmup, n_samples : int
        Chains, discarded warm-up sweeps and recorded sweeps per chain.
    sampler : {"blocked", "collapsed"}
    hyperprior : {"sample", "moment", "fixed"}
    prior_diagonal, prior_off_diagonal : float
        The fixed prior concentrations (``hyperprior="fixed"``) and the starting point otherwise.
    prior_prevalence : float
        Symmetric Dirichlet concentration β of the prevalence.
    hyperprior_diagonal : float
        d of the Dir(1 + d e_k) hyperprior on the mean of each true class's row (``"sample"``):
        a priori a worker gives the true class more often than any one other (the default 3:
        its mean share (1 + d)/(K + d), 0.8 for two classes, 4/7 for four); 0 is the
        symmetric Dir(1). With data on the workers it hardly matters (full data on RTE,
        bluebird, dog, S_Adult, web, temp: accuracy within 0.001 of d = 0); with one label
        per task it decides the answer: d = 1 still left S_Adult and WSD below majority vote
        (0.649, 0.889 against 0.675, 0.974; the hyperparameters mix slowly when nothing
        informs them), d = 3 matches it on all 12 shared sets.
    scale_shape, scale_min : float
        Pareto hyperprior on each prior scale s_k (shape 1.5 as in the paper; support s ≥ s_min).
    max_scale : float
        Cap for moment-matched scales (reaching it counts as divergence).
    credible_level : float
    keep_trace : bool
        Also keep every worker confusion draw in ``trace_`` (memory: chains × samples × J × K²).
    init : {"majority", "vb"}
        Where chains start: classes drawn from the smoothed majority-vote shares (default; the
        chains then start dispersed, so R-hat can reveal a multimodal posterior) or from the
        variational Bayes posterior of :class:`BayesianDawidSkene`.
    calibrate : bool
        Report the posterior raised to the power ``calibration_exponent_`` ≤ 1 and normalised,
        the smaller of the exponent under which held-out labels are best predicted and the
        one nearest the posterior of a task-difficulty (GLAD) model fitted to the labels
        (:mod:`crowdbayes.models.labels._calibration`; answers unchanged, no gold used).
        Tasks of unequal difficulty make the plain posterior over-confident: on simulated
        GLAD-difficulty data claimed minus actual accuracy went from +0.047 to +0.008 (binary,
        five labels a task) and from +0.046 to +0.025 (three classes, three labels a task;
        two draws each; ``benchmarks/defaults/results/calibration.md``). Where tasks have
        unequal numbers of labels (collected adaptively, as by ``labels next`` or a
        platform's dynamic overlap) each label is read against its task's earlier labels
        only, so keep the rows in the order they arrived.
        ``False`` reports the posterior itself (``calibration_exponent_`` = 1).
    n_jobs : int or None
        Processes the chains run on (forked; ``-1``: every available core). ``None`` (default)
        uses every available core when the fit is large enough to pay for starting processes,
        otherwise one. The results do not depend on it: each chain draws from its own generator,
        spawned from ``random_state``.
    random_state : int, Generator or None
    progress : bool

    References
    ----------
    Carpenter, B. (2008). Multilevel Bayesian models of categorical data annotation; and the
    LingPipe blog post "Collapsed Gibbs Sampler for Hierarchical Annotation Model".
    """

    _tags = {"posterior": "sampled"}
    _diagnostics = {
        "chains": "n_chains",
        "draws": "n_samples",
        "warmup": "n_warmup",
        "max_rhat": "max_rhat_",
    }
    _traces = {"log_likelihood_trace_": "log-likelihood (each chain)"}
    _rhats = ("diagnostics_", "confusion_rhat_", "probas_rhat_")
    _added_params = {"calibrate": False}  # files written before it: fitted without
    parameter_constraints = {
        "n_chains": [POSITIVE_INT],
        "n_warmup": [NON_NEGATIVE_INT],
        "n_samples": [Interval(Integral, 4, None)],
        "sampler": [Options(*_SAMPLERS)],
        "hyperprior": [Options(*_HYPERPRIORS)],
        "prior_diagonal": [POSITIVE],
        "prior_off_diagonal": [POSITIVE],
        "prior_prevalence": [POSITIVE],
        "hyperprior_diagonal": [NON_NEGATIVE],
        "scale_shape": [POSITIVE],
        "scale_min": [POSITIVE],
        "max_scale": [POSITIVE],
        "credible_level": [OPEN_UNIT],
        "keep_trace": [bool],
        "init": [Options("majority", "vb")],
        "calibrate": [bool],
        "n_jobs": [None, Options(-1), POSITIVE_INT],
        "random_state": RANDOM_STATE,
        "progress": [bool],
    }

    def __init__(
        self,
        n_chains: int = 4,
        n_warmup: int = 200,
        n_samples: int = 300,
        sampler: str = "blocked",
        hyperprior: str = "sample",
        prior_diagonal: float = 2.0,
        prior_off_diagonal: float = 1.0,
        prior_prevalence: float = 1.0,
        hyperprior_diagonal: float = 3.0,
        scale_shape: float = 1.5,
        scale_min: float = 1.0,
        max_scale: float = 1e6,
        credible_level: float = 0.9,
        keep_trace: bool = False,
        init: str = "majority",
        calibrate: bool = True,
        n_jobs: int | None = None,
        random_state: RandomState = None,
        progress: bool = False,
    ) -> None:
        self.n_chains = n_chains
        self.n_warmup = n_warmup
        self.n_samples = n_samples
        self.sampler = sampler
        self.hyperprior = hyperprior
        self.prior_diagonal = prior_diagonal
        self.prior_off_diagonal = prior_off_diagonal
        self.prior_prevalence = prior_prevalence
        self.hyperprior_diagonal = hyperprior_diagonal
        self.scale_shape = scale_shape
        self.scale_min = scale_min
        self.max_scale = max_scale
        self.credible_level = credible_level
        self.keep_trace = keep_trace
        self.init = init
        self.calibrate = calibrate
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.progress = progress

    _capacity_hint = (
        "merge rare classes into fewer, use fewer n_chains or n_samples, or a model without "
        "Gibbs draws (BayesianDawidSkene: --model bayes-ds)"
    )

    def _dense_arrays(self, n_tasks: int, n_workers: int, n_classes: int) -> dict[str, int]:
        """The role's arrays plus those of every chain (:func:`_gibbs.chain_arrays`)."""
        arrays = super()._dense_arrays(n_tasks, n_workers, n_classes)
        per_chain = _gibbs.chain_arrays(
            n_tasks,
            n_workers,
            n_classes,
            n_samples=self.n_samples,
            hyperprior=self.hyperprior,
            keep_trace=self.keep_trace,
        )
        chains = f"{self.n_chains} chain{'s' if self.n_chains != 1 else ''}"
        arrays.update({f"{name} × {chains}": self.n_chains * n for name, n in per_chain.items()})
        return arrays

    def _fit(self, labels: Labels) -> None:
        self._check_capacity(labels.n_tasks, labels.n_workers, labels.n_classes)
        settings = _gibbs.GibbsSettings(
            sampler=self.sampler,
            hyperprior=self.hyperprior,
            prior_prevalence=float(self.prior_prevalence),
            hyperprior_diagonal=float(self.hyperprior_diagonal),
            scale_shape=float(self.scale_shape),
            scale_min=float(self.scale_min),
            max_scale=float(self.max_scale),
            # gold tasks clamp the labelling, so the posterior is no longer symmetric under
            # permuting classes (and relabelling would move the gold tasks): no relabelling then
            relabel=self.hyperprior != "fixed" and not labels.has_gold,
            keep_trace=self.keep_trace,
        )
        rng = self.random_generator()
        votes = labels.vote_counts()
        pivot = majority_classes(votes, "first", rng)
        known = labels.gold_codes >= 0
        pivot[known] = labels.gold_codes[known]
        start = self._start_probabilities(labels, votes)
        alpha0 = confusion_prior(labels.n_classes, self.prior_diagonal, self.prior_off_diagonal)
        chains = [
            _gibbs.new_chain(labels, start, alpha0, chain_rng)
            for chain_rng in spawn_generators(rng, self.n_chains)
        ]
        index = _gibbs.LabelIndex(labels) if self.sampler == "collapsed" else None
        n_sweeps = self.n_warmup + self.n_samples
        shared = (labels, settings, pivot, index, self.n_warmup)
        n_jobs = resolve_n_jobs(self.n_jobs, self.n_chains, self._estimated_seconds(labels))
        twice = f"n_warmup={2 * self.n_warmup or 100}, n_samples={2 * self.n_samples}"
        _gibbs.announce_duration(
            type(self).__name__,
            _gibbs.chain_sweep,
            chains,
            shared,
            n_sweeps=n_sweeps,
            n_jobs=n_jobs,
            fewer=f"n_warmup={max(1, self.n_warmup // 2)}, n_samples={max(4, self.n_samples // 2)}",
            faster="BayesianDawidSkene (--model bayes-ds) or DawidSkene (--model ds)",
        )
        chains = run_chains(
            _gibbs.chain_sweep,
            chains,
            shared,
            n_sweeps=n_sweeps,
            n_jobs=n_jobs,
            progress=self.progress,
            desc="Gibbs sweeps",
        )
        self.n_iter_, self.converged_ = n_sweeps, None
        self._summarise(labels, chains)
        more = f"{twice}, or more chains: n_chains={2 * self.n_chains}"
        _gibbs.warn_unmixed(type(self).__name__, self.max_rhat_, more)

    def _estimated_seconds(self, labels: Labels) -> float:
        """A rough single-core time of all the sweeps (for ``n_jobs=None``)."""
        per_sweep = 5e-4 + 2e-7 * labels.n_labels * labels.n_classes
        return self.n_chains * (self.n_warmup + self.n_samples) * per_sweep

    def _start_probabilities(self, labels: Labels, votes: np.ndarray) -> np.ndarray:
        """Class-major probabilities the chains draw their first classes from.

        ``"majority"``: smoothed vote shares; ``"vb"``: the variational Bayes posterior of
        :class:`BayesianDawidSkene` (every chain starts near the mode VB found).
        """
        if self.init == "majority":
            return (votes + 0.5) / (votes + 0.5).sum(axis=0)
        vb = BayesianDawidSkene(
            prior_diagonal=self.prior_diagonal,
            prior_off_diagonal=self.prior_off_diagonal,
            prior_prevalence=self.prior_prevalence,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            vb._fit(labels)
        return np.clip(vb.probas_.to_numpy().T, 1e-6, None)

    # ------------------------------------------------------------------ results
    def _summarise(self, labels: Labels, chains: list[_gibbs.ChainState]) -> None:
        probas, probas_var, probas_rhat = _pool([c.probas for c in chains])
        alpha = np.stack([np.stack(c.trace["alpha"]) for c in chains])  # chains, draws, K, K
        self.calibration_exponent_ = self._calibration(labels, probas, alpha.mean(axis=(0, 1)))
        self._set_task_results(labels, temper(probas, self.calibration_exponent_))
        self.probas_rhat_ = pd.DataFrame(probas_rhat.T, index=labels.tasks, columns=labels.classes)
        prevalence, _, _ = _pool([c.prevalence for c in chains])
        self._set_prevalence(labels, prevalence)

        mean, variance, confusion_rhat = _pool([c.confusion for c in chains])
        sd = np.sqrt(variance)
        if self.keep_trace:
            draws = np.concatenate([np.stack(c.trace["confusion"]) for c in chains])
            tail = (1 - self.credible_level) / 2
            lower, upper = np.quantile(draws, [tail, 1 - tail], axis=0)
            self.trace_ = {"confusion": draws.reshape(self.n_chains, -1, *draws.shape[1:])}
        else:
            lower, upper = beta_interval(mean, variance, self.credible_level)
        self._set_confusion(labels, mean, sd, lower, upper, self.credible_level)
        self.confusion_rhat_ = self._confusion_frame(labels, confusion_rhat)

        scale = alpha.sum(axis=-1)
        self.prior_scale_ = pd.Series(scale.mean(axis=(0, 1)), index=labels.classes, name="scale")
        self.prior_mean_ = pd.DataFrame(
            (alpha / scale[..., None]).mean(axis=(0, 1)),
            index=pd.Index(labels.classes, name="true"),
            columns=pd.Index(labels.classes, name="observed"),
        )
        self.n_relabelled_ = np.array([c.n_relabelled for c in chains])
        self.diverged_ = any(c.diverged for c in chains)
        if self.diverged_:
            warnings.warn(
                f"HierarchicalAnnotation: moment-matched prior scales diverged (hit max_scale="
                f"{self.max_scale:g}); use hyperprior='sample'",
                DivergenceWarning,
                stacklevel=4,
            )
        log_lik = np.array([c.trace["log_likelihood"] for c in chains])
        self.log_likelihood_trace_ = log_lik
        self.diagnostics_ = self._diagnostics_table(labels, log_lik, chains, scale)
        every_rhat = np.concatenate([self.diagnostics_["rhat"].to_numpy(), confusion_rhat.ravel()])
        finite = every_rhat[np.isfinite(every_rhat)]
        self.max_rhat_ = float(finite.max()) if finite.size else float("nan")

    def _calibration(self, labels: Labels, probas: np.ndarray, alpha: np.ndarray) -> float:
        """The exponent the reported probabilities are raised to (``calibrate``; 1 without):
        scored against each worker's rows Dir(ᾱ + n̄), ᾱ the mean sampled prior and n̄ the
        expected counts of the tasks that feed back (:mod:`._calibration`)."""
        if not self.calibrate:
            return 1.0
        counted = probas * feedback_tasks(labels)
        concentration = alpha + confusion_statistics(labels, counted, sums_to_one=False)
        return calibration_exponent(labels, probas, concentration, expected_log=False)

    def _diagnostics_table(self, labels, log_lik, chains, scale) -> pd.DataFrame:
        prevalence = np.array([c.trace["prevalence"] for c in chains])
        rows = {"log_likelihood": log_lik}
        for k, name in enumerate(labels.classes):
            rows[f"prevalence[{name}]"] = prevalence[..., k]
            rows[f"prior_scale[{name}]"] = scale[..., k]
        table = []
        for name, draws in rows.items():
            table.append(
                {
                    "quantity": name,
                    "mean": draws.mean(),
                    "sd": draws.std(ddof=1),
                    "rhat": float(rhat(draws)) if self.n_chains > 1 else np.nan,
                    "ess_bulk": float(ess_bulk(draws)),
                    "ess_tail": float(ess_tail(draws)),
                }
            )
        return pd.DataFrame(table).set_index("quantity")


def _pool(moments) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Combine per-chain online moments: pooled mean, total variance, Gelman–Rubin R-hat."""
    means = np.stack([m.mean for m in moments])
    mean = means.mean(axis=0)
    variance = np.stack([m.variance for m in moments]).mean(axis=0) + means.var(axis=0)
    if len(moments) > 1:
        with np.errstate(invalid="ignore", divide="ignore"):
            r_hat = rhat_from_moments(
                means, np.stack([m.sample_variance for m in moments]), moments[0].count
            )
    else:
        r_hat = np.full_like(mean, np.nan)
    return mean, variance, r_hat
