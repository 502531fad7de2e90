r"""A leaderboard from pairwise battles: scores, intervals, ranks and their uncertainty.

Each model ``i`` has a score :math:`s_i`; a battle between ``a`` and ``b`` with covariates
(side differences, a minus b) ``x`` has the difference :math:`d = s_a - s_b + x^\top\beta` and
its outcome follows Bradley & Terry (1952) with ties either by Davidson (1970) — a tie strength
ν fitted with the scores — or counted as half a win for each side (the Chatbot Arena's
convention, Chiang et al. 2024, whose style control is the covariate term). The fit is Newton's
method over the models on the battles counted once per distinct ``(pair, outcome, covariates)``
row (:mod:`._battles_fit`), so its cost does not grow with the number of battles.

Without ``prior_scale`` the scores are the maximum-likelihood ones, centred; with it the prior
:math:`s_i \sim N(0, \sigma^2)` shrinks the scores of rarely played models towards the mean.
Intervals (:mod:`._leaderboard_intervals`) come from the Laplace approximation, the sandwich
estimator or a multinomial bootstrap over the counted battles, or on boards of at most 50
models from draws of the exact posterior (:mod:`._leaderboard_exact`); ranks, rank intervals and
P(rank 1) come from draws of the scores. Above :data:`SPARSE_MODELS` models the fit keeps minus
the Hessian sparse (the comparison graph's weighted Laplacian) and solves Newton systems by
conjugate gradients; the Laplace variances then come from sparse solves (estimated on large
boards) and the rank draws treat the scores as independent
(:mod:`._leaderboard_intervals`, "Sparse path"). :meth:`Leaderboard.robustness` finds how few
battles decide each adjacent pair at the top, by the influence approximation (the
"approximate maximum influence perturbation" of Broderick, Giordano & Meager 2020), and checks
it by refitting. When the battles say who judged them (``Battles(..., judge=...)``),
``judges_`` rates each judge by Crowd-BT (Chen et al. 2013) fitted on the battles counted per
``(judge, pair, outcome)`` (:mod:`._leaderboard_judges`).

References
----------
Bradley, R. A. & Terry, M. E. (1952). Rank analysis of incomplete block designs. Biometrika 39.
Davidson, R. R. (1970). On extending the Bradley–Terry model to accommodate ties in paired
comparison experiments. JASA 65(329).
Chiang, W.-L. et al. (2024). Chatbot Arena: an open platform for evaluating LLMs by human
preference. ICML.
Broderick, T., Giordano, R. & Meager, R. (2020). An automatic finite-sample robustness metric:
when can dropping a little data make a big difference? arXiv:2011.14999.
Chen, X., Bennett, P. N., Collins-Thompson, K. & Horvitz, E. (2013). Pairwise ranking
aggregation in a crowdsourced setting. WSDM.
"""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
import pandas as pd

from ...base import (
    NON_NEGATIVE_INT,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    TOLERANCE,
    Options,
)
from ...data.battles import A_WINS, B_WINS, TIE, BattleCounts, Battles
from ...data.comparisons import Comparisons
from ...exceptions import ConvergenceWarning, DataWarning
from ._base import BradleyTerryBase
from ._battles_fit import BattleProblem, Mode
from ._leaderboard_exact import exact_draws
from ._leaderboard_intervals import (
    bootstrap_draws,
    gaussian_draws,
    independent_draws,
    laplace_covariance,
    rank_draws,
    rank_table,
    sandwich_covariance,
    sparse_laplace,
)
from ._leaderboard_judges import (
    FLAG_BELOW,
    JUDGE_PRIOR_SCALE,
    JudgeRows,
    fit_judges,
    judge_table,
)
from ._leaderboard_robustness import flip_table

__all__ = ["Leaderboard"]

#: Elo-style scale: 400 points per factor 10 of the odds, centred at 1000 (the arena's)
ELO_FACTOR, ELO_CENTRE = 400.0 / np.log(10.0), 1000.0
#: Gaussian draws of the scores for the rank summaries (Laplace and sandwich)
N_RANK_DRAWS = 2000
INTERVALS = ("laplace", "sandwich", "bootstrap", "exact")
#: boards of more models than this take the sparse path (a dense Hessian is models² doubles)
SPARSE_MODELS = 5000
#: sparse path: the rank draws hold at most this many scores (draws × models)
MAX_DRAWN_SCORES = 20_000_000


class Leaderboard(BradleyTerryBase):
    r"""A leaderboard from pairwise battles (module docstring).

    Parameters
    ----------
    tie_model : {"davidson", "half"}
        Davidson ties (a fitted tie strength, ``tie_strength_``) or a tie as half a win each
        (the arena's convention).
    scale : {"logit", "elo"}
        Scores on the log-odds scale, or Elo-style points (400 / ln 10 per logit, centred at
        1000).
    anchor : str, optional
        A model whose score is fixed at 0 (logit) or 1000 (Elo); default: the mean score is.
    prior_scale : float, optional
        Prior sd σ of the scores (shrinkage of sparsely played models); None: no prior.
    interval : {"laplace", "sandwich", "bootstrap", "exact"}
        What ``board_``'s intervals and ranks come from (:meth:`intervals` gives any);
        ``"exact"``: Metropolis–Hastings draws of the exact posterior (at most 50 models;
        ``exact_acceptance_`` and ``exact_ess_`` give the chain's acceptance rate and effective
        sample size).
    n_bootstrap : int
        Replicates of the bootstrap: each refitted from the full-data mode; with covariates on
        more than ``KSTEP_ROWS`` (20,000) distinct battle rows, two Newton steps with the
        full-data Hessian instead (the k-step bootstrap, Andrews 2002; within O(N^-3/2) of a
        refit: :func:`._leaderboard_intervals.kstep_draws`).
    credible_level : float
        Level of the intervals.
    min_battles : int
        Models with fewer battles are listed in ``sparse_models_`` (and warned).
    judge_noise : {"flip", "random"}
        With a judge column: what Crowd-BT takes a judge's unfaithful vote for — the opposite
        answer (Crowd-BT's model, the default: an adversary's reliability near 0, a random
        voter's near ½) or a draw from learned outcome shares (a random voter's lower, but
        adversaries are missed; measured in :mod:`._leaderboard_judges`).
    judge_threshold : float, optional
        Judges whose posterior mean reliability is below it are ``flagged`` in ``judges_``;
        None: 0.65 with flip noise, 0.5 with random noise
        (:data:`._leaderboard_judges.FLAG_BELOW`).
    max_iter, tol : Newton steps at most, and the largest parameter change to stop at.
    random_state : seed of the rank draws and the bootstrap.
    progress : bool
        Accepted like every model's; the fit takes a few Newton steps and reports nothing.

    Without a prior, battles that split the models into groups that never meet are refused,
    and a model that wins (or loses) every battle is warned (its score is infinite); a
    bootstrap replicate without finite scores is left out, with a warning giving the count.

    Boards of more than ``SPARSE_MODELS`` (5,000) models are fitted on the sparse path: no
    dense matrix, Laplace intervals only, score variances exact on small boards and
    estimated stochastically on large ones (``variance_error_``: the largest relative standard error
    of a variance), rank summaries from independent Gaussian draws of the scores (at most
    ``MAX_DRAWN_SCORES`` / models of them).

    Attributes
    ----------
    board_ : DataFrame indexed by model, best first: ``score, lower, upper, rank, rank_lower,
        rank_upper, p_rank1, battles, win_rate``
    style_ : DataFrame indexed by covariate: ``coef, lower, upper``
    utility_ : DataFrame (models × [mean, sd, lower, upper]), centred logit scores (Laplace)
    judges_ : DataFrame indexed by judge, most reliable first, or None without a judge column:
        ``battles, decisive, agreement, reliability, lower, upper, flagged``
        (:func:`._leaderboard_judges.judge_table`; ``agreement``: the share of the judge's
        decisive battles won by the model the board scores higher); ``judge_threshold_``: the
        reliability below which a judge is flagged
    sparse_models_ : list, tie_strength_ : float, n_battles_ : int
    sparse_path_ : bool, variance_error_ : float (0: the variances are exact)
    n_iter_, converged_, objective_history_ : Newton steps, convergence, and the objective
        (log-likelihood plus the log priors in use) after each step
    """

    parameter_constraints = {
        "tie_model": [Options("davidson", "half")],
        "scale": [Options("logit", "elo")],
        "anchor": [str, Integral, None],
        "prior_scale": [POSITIVE, None],
        "interval": [Options(*INTERVALS)],
        "n_bootstrap": [POSITIVE_INT],
        "credible_level": [OPEN_UNIT],
        "min_battles": [NON_NEGATIVE_INT],
        "judge_noise": [Options("flip", "random")],
        "judge_threshold": [OPEN_UNIT, None],
        "max_iter": [POSITIVE_INT],
        "tol": TOLERANCE,
        "random_state": RANDOM_STATE,
        "progress": [bool],
    }
    _tags = {"partial_fit": True}

    def __init__(
        self,
        tie_model: str = "davidson",
        scale: str = "logit",
        anchor=None,
        prior_scale: float | None = None,
        interval: str = "laplace",
        n_bootstrap: int = 1000,
        credible_level: float = 0.9,
        min_battles: int = 50,
        judge_noise: str = "flip",
        judge_threshold: float | None = None,
        max_iter: int = 100,
        tol: float | None = 1e-10,
        random_state=None,
        progress: bool = False,
    ) -> None:
        self.tie_model = tie_model
        self.scale = scale
        self.anchor = anchor
        self.prior_scale = prior_scale
        self.interval = interval
        self.n_bootstrap = n_bootstrap
        self.credible_level = credible_level
        self.min_battles = min_battles
        self.judge_noise = judge_noise
        self.judge_threshold = judge_threshold
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.progress = progress

    # ------------------------------------------------------------------ fitting
    def fit(self, data) -> Leaderboard:
        """Fit to battles: a :class:`~crowdbayes.data.battles.Battles`, a ``model_a, model_b,
        winner`` table or path, or comparisons (a :class:`~crowdbayes.Comparisons` or a
        ``worker, left, right, label`` DataFrame; left = a, right = b)."""
        self.check_params()
        model_ids, counts, names, mean, scale, judges = _read(data)
        self._covariates = {"names": list(names), "mean": mean, "scale": scale}
        return self._fit_counts(model_ids, counts, start=None, judges=judges)

    def partial_fit(self, data) -> Leaderboard:
        """Add new battles to the counts kept from the previous fit (the daily update) and
        refit from the previous mode; new models join the board. Unfitted: :meth:`fit`."""
        if not self.is_fitted():
            return self.fit(data)
        self.check_params()
        names = self._covariates["names"]
        if isinstance(data, Battles):
            new = data
            if list(new.covariate_names) != names:
                raise ValueError(
                    f"partial_fit: the new battles have covariates {list(new.covariate_names)}; "
                    f"the fit had {names}"
                )
            raw = new.X * new.covariate_scale + new.covariate_mean
        else:
            new = Battles(data, covariates=names or None, standardize=False)
            raw = new.X
        X = (raw - self._covariates["mean"]) / self._covariates["scale"]
        old_ids = self.item_ids_
        model_ids = old_ids.append(new.model_ids.difference(old_ids))
        code = model_ids.get_indexer(new.model_ids)
        fresh = BattleCounts.of(len(model_ids), code[new.a], code[new.b], new.outcome, X)
        old = self._stored_counts(len(model_ids))
        start = self._mode_z(len(model_ids))
        judges = self._merged_judges(new, code, len(model_ids))
        return self._fit_counts(pd.Index(model_ids, name="model"), old.merged(fresh), start, judges)

    def _merged_judges(self, new: Battles, code: np.ndarray, n_models: int) -> JudgeRows | None:
        """The stored judge rows with the new battles' added; None (judges_ dropped, with a
        warning) unless both the fit and the new battles have a judge column."""
        old = getattr(self, "_judge_rows", None)  # None too in a model saved before judges
        if old is None or new.judge_ids is None:
            if old is not None or new.judge_ids is not None:
                warnings.warn(
                    "Leaderboard.partial_fit: judges_ is dropped: "
                    + (
                        "the new battles have no judge column"
                        if old is not None
                        else "the battles fitted before had no judge column"
                    ),
                    DataWarning,
                    stacklevel=3,
                )
            return None
        fresh = JudgeRows.of(
            new.judge_ids, new.judge_codes, code[new.a], code[new.b], new.outcome, n_models
        )
        return JudgeRows(**old).merged(fresh)

    def _fit_counts(
        self, model_ids: pd.Index, counts: BattleCounts, start, judges: JudgeRows | None = None
    ) -> Leaderboard:
        sparse = counts.n_models > SPARSE_MODELS
        if sparse and self.interval != "laplace":
            _refuse_sparse(self.interval, counts.n_models)
        if self.anchor is not None and self.anchor not in model_ids:
            raise ValueError(f"Leaderboard: anchor {self.anchor!r} is not one of the models")
        self._anchor_code = None if self.anchor is None else int(model_ids.get_loc(self.anchor))
        if self.prior_scale is None:
            _check_identified(counts, model_ids)
        problem = self._problem(counts, sparse)
        mode = problem.maximise(start, max_iter=self.max_iter, tol=self._tol())
        if not mode.converged:
            warnings.warn(
                f"Leaderboard: Newton did not converge in {self.max_iter} steps",
                ConvergenceWarning,
                stacklevel=3,
            )
        n = counts.n_models
        self._rows = {
            "a": counts.a,
            "b": counts.b,
            "outcome": counts.outcome,
            "X": counts.X,
            "count": counts.count,
        }
        # the sparse Hessian is rebuilt at the mode when needed (_fitted_problem)
        self._mode = {"z": mode.z, "matrix": np.zeros((0, 0)) if sparse else mode.matrix}
        self.sparse_path_ = sparse
        self.n_iter_, self.converged_ = mode.n_iter, mode.converged
        self.objective_history_ = np.array(mode.history)
        self.tie_strength_ = float(np.exp(mode.z[-1])) if problem.davidson else 0.0
        self.n_battles_ = counts.n_battles
        self.variance_error_ = 0.0
        if sparse:
            rng = self.random_generator()
            variance, other, self.variance_error_ = sparse_laplace(mode.matrix, rng)
            self._draws = self._sparse_draws(mode.z, variance, other, rng)
            self._draw_sd = self._gaussian_sd(np.concatenate([variance, np.diag(other)]), None, n)
        else:
            variance = np.clip(np.diag(laplace_covariance(mode, n))[:n], 0.0, None)
            self._draws, self._draw_sd = self._draws_of(self.interval, problem, mode)
        self._set_scores(_Ids(model_ids), mode.z[:n] - mode.z[:n].mean(), variance)
        battles = counts.battles_per_model()
        self.sparse_models_ = list(model_ids[battles < self.min_battles])
        if self.sparse_models_:
            shown = ", ".join(map(str, self.sparse_models_[:10]))
            more = len(self.sparse_models_) - 10
            warnings.warn(
                f"Leaderboard: {len(self.sparse_models_)} model(s) have fewer than "
                f"{self.min_battles} battles: {shown}{f' and {more} more' if more > 0 else ''}"
                + ("" if self.prior_scale else "; set prior_scale to shrink their scores"),
                DataWarning,
                stacklevel=3,
            )
        self._summarise(battles, counts.wins_per_model())
        self._set_judges(judges)
        return self

    def _set_judges(self, rows: JudgeRows | None) -> None:
        """``judges_`` from Crowd-BT on the judge rows, started at the board's mode."""
        self._judge_rows = None if rows is None else rows.state()
        threshold = self.judge_threshold
        self.judge_threshold_ = float(
            FLAG_BELOW[self.judge_noise] if threshold is None else threshold
        )
        self.judges_ = None
        if rows is None:
            return
        n = len(self.item_ids_)
        z = self._mode["z"]
        fit = fit_judges(
            rows,
            n,
            z[:n],
            theta=z[-1] if self.tie_model == "davidson" else None,
            noise=self.judge_noise,
            prior_var=float(self.prior_scale or JUDGE_PRIOR_SCALE) ** 2,
            sparse=n > SPARSE_MODELS,
        )
        if not fit.converged:
            warnings.warn(
                f"Leaderboard: the judges' reliabilities did not settle in {fit.n_iter} iterations",
                ConvergenceWarning,
                stacklevel=4,
            )
        self.judges_ = judge_table(
            rows, fit, z[:n], float(self.credible_level), self.judge_threshold_
        )

    def _tol(self) -> float:
        return 1e-10 if self.tol is None else float(self.tol)

    def _problem(self, counts: BattleCounts, sparse: bool = False) -> BattleProblem:
        prior_var = None if self.prior_scale is None else float(self.prior_scale) ** 2
        return BattleProblem(counts, self.tie_model, prior_var, sparse=sparse)

    def _sparse_draws(self, z: np.ndarray, variance: np.ndarray, other: np.ndarray, rng):
        """Independent Gaussian draws of the centred scores (and the other parameters)."""
        n = len(variance)
        z = z.copy()
        z[:n] -= z[:n].mean()
        n_draws = min(N_RANK_DRAWS, max(100, MAX_DRAWN_SCORES // len(z)))
        return independent_draws(z, variance, other, n_draws, rng)

    def _stored_counts(self, n_models: int | None = None) -> BattleCounts:
        r = self._rows
        n = len(self.item_ids_) if n_models is None else n_models
        return BattleCounts(n, r["a"], r["b"], r["outcome"], r["X"], r["count"])

    def _mode_z(self, n_models: int) -> np.ndarray:
        z, n = self._mode["z"], len(self.item_ids_)
        return np.concatenate([z[:n], np.zeros(n_models - n), z[n:]])

    def _fitted_problem(self) -> tuple[BattleProblem, Mode]:
        sparse = len(self.item_ids_) > SPARSE_MODELS
        problem = self._problem(self._stored_counts(), sparse)
        z = self._mode["z"]
        matrix = problem.gradient_and_matrix(z)[2] if sparse else self._mode["matrix"]
        return problem, Mode(z, matrix, self.n_iter_, True, 0.0)

    def _draws_of(self, method: str, problem: BattleProblem, mode: Mode):
        """(draws, parameters) of ``method`` (scores centred), and for the Gaussian methods the
        standard deviations of the board's scores and the coefficients (the intervals then
        come from them, free of the draws' Monte Carlo error; None otherwise)."""
        rng = self.random_generator()
        if method == "exact":
            result = exact_draws(problem, mode, rng)
            self.exact_acceptance_, self.exact_ess_ = result.acceptance_rate, result.ess
            return result.draws, None
        if method == "bootstrap":
            draws = bootstrap_draws(problem, mode, self.n_bootstrap, rng, tol=1e-8)
            failed = np.isnan(draws).any(axis=1)
            if failed.all():
                raise ValueError(
                    "Leaderboard: no bootstrap replicate has finite scores (models that win or "
                    "lose all their resampled battles); set prior_scale, or use "
                    "interval='laplace' or 'sandwich'"
                )
            if failed.any():
                warnings.warn(
                    f"Leaderboard: {int(failed.sum())} of {len(draws)} bootstrap replicates "
                    "have no finite maximum-likelihood scores (a model won or lost all its "
                    "resampled battles) and are left out; set prior_scale to keep them all",
                    DataWarning,
                    stacklevel=4,
                )
            return draws[~failed], None
        n = problem.n
        cov = laplace_covariance(mode, n) if method == "laplace" else None
        if method == "sandwich":
            cov = sandwich_covariance(problem, mode)
        z = mode.z.copy()
        z[:n] -= z[:n].mean()
        return gaussian_draws(z, cov, N_RANK_DRAWS, rng), self._gaussian_sd(np.diag(cov), cov, n)

    def _gaussian_sd(self, variance: np.ndarray, cov: np.ndarray | None, n: int) -> np.ndarray:
        """Standard deviations of the board's logit scores (measured from the anchor, when
        given: :math:`\\sigma_i^2 + \\sigma_a^2 - 2\\sigma_{ia}`, the covariance 0 on the sparse
        path) and of the other parameters, from their variances (and covariance)."""
        variance = np.clip(variance, 0.0, None).copy()
        a = self._anchor_code
        if a is not None:
            across = 0.0 if cov is None else cov[:n, a]
            variance[:n] = np.clip(variance[:n] + variance[a] - 2 * across, 0.0, None)
            variance[a] = 0.0
        return np.sqrt(variance)

    # ------------------------------------------------------------------ summaries
    def _transform(self, values: np.ndarray) -> np.ndarray:
        """Centred logit scores (last axis: models) on the board's scale and anchor."""
        if self.anchor is not None:
            values = values - values[..., [self.item_ids_.get_loc(self.anchor)]]
        if self.scale == "elo":
            return ELO_CENTRE + ELO_FACTOR * values
        return values

    def _coef_factor(self) -> float:
        return ELO_FACTOR if self.scale == "elo" else 1.0

    def _interval_table(self, draws: np.ndarray, sd: np.ndarray | None) -> pd.DataFrame:
        """``score, lower, upper``: from the standard deviations ``sd`` where given (the
        Gaussian methods), else the draws' quantiles."""
        n = len(self.item_ids_)
        point = self._transform(self._mode["z"][:n] - self._mode["z"][:n].mean())
        lower, upper = self._bounds(point, draws[:, :n], sd, n, transform=self._transform)
        return pd.DataFrame(
            {"score": point, "lower": lower, "upper": upper}, index=self.item_ids_.copy()
        )

    def _bounds(self, point, draws, sd, size: int, transform=None):
        """The interval ends of ``size`` parameters at ``credible_level``: ``point`` ± the
        normal quantile × the scale's factor × ``sd[:size]`` (Gaussian methods), or the
        quantiles of the (transformed) draws."""
        alpha = (1 - self.credible_level) / 2
        if size == 0:
            return np.zeros(0), np.zeros(0)
        if sd is not None:
            from statistics import NormalDist

            half = NormalDist().inv_cdf(1 - alpha) * sd[:size]
            factor = self._coef_factor() if transform is not None else 1.0
            return point - factor * half, point + factor * half
        values = draws if transform is None else transform(draws)
        return tuple(np.quantile(values, [alpha, 1 - alpha], axis=0))

    def _summarise(self, battles: np.ndarray, wins: np.ndarray) -> None:
        n = len(self.item_ids_)
        table = self._interval_table(self._draws, self._draw_sd)
        ranks = rank_draws(self._draws[:, :n])
        alpha = (1 - self.credible_level) / 2
        order = np.argsort(-table["score"].to_numpy(), kind="stable")
        point_rank = np.empty(n, dtype=np.int64)
        point_rank[order] = np.arange(1, n + 1)
        table["rank"] = point_rank
        table["rank_lower"] = np.quantile(ranks, alpha, axis=0, method="lower").astype(np.int64)
        table["rank_upper"] = np.quantile(ranks, 1 - alpha, axis=0, method="higher").astype(
            np.int64
        )
        table["p_rank1"] = (ranks == 1).mean(axis=0)
        table["battles"] = battles.astype(np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            table["win_rate"] = wins / battles
        self.board_ = table.iloc[order]
        names = self._covariates["names"]
        k = len(names)
        beta = self._mode["z"][n : n + k]
        sd = None if self._draw_sd is None else self._draw_sd[n : n + k]
        lower, upper = self._bounds(beta, self._draws[:, n : n + k], sd, k)
        factor = self._coef_factor()
        self.style_ = pd.DataFrame(
            {"coef": factor * beta, "lower": factor * lower, "upper": factor * upper},
            index=pd.Index(names, name="covariate", dtype=object),
        )

    # ------------------------------------------------------------------ results on request
    def intervals(self, method: str = "laplace") -> pd.DataFrame:
        """``score, lower, upper`` per model (board order) by ``method``: ``"laplace"``,
        ``"sandwich"``, ``"bootstrap"`` (seeded by ``random_state``) or ``"exact"`` (the exact
        posterior, seeded; at most 50 models)."""
        self.check_is_fitted()
        if method not in INTERVALS:
            raise ValueError(f"intervals: method must be one of {INTERVALS}; got {method!r}")
        draws, sd = self._draws, self._draw_sd
        if method != self.interval:
            if len(self.item_ids_) > SPARSE_MODELS:
                _refuse_sparse(method, len(self.item_ids_))
            draws, sd = self._draws_of(method, *self._fitted_problem())
        return self._interval_table(draws, sd).loc[self.board_.index]

    def rank_probabilities(self, top: int | None = None) -> pd.DataFrame:
        """P(model has rank r): models (board order; the first ``top`` of them) × ranks 1..n,
        from the draws of ``interval``."""
        self.check_is_fitted()
        n = len(self.item_ids_)
        rows = self._board_codes(top)
        table = rank_table(rank_draws(self._draws[:, :n]), rows)
        return pd.DataFrame(
            table, index=self.item_ids_[rows], columns=pd.RangeIndex(1, n + 1, name="rank")
        )

    def win_rate_matrix(self, top: int | None = None) -> pd.DataFrame:
        """Share of battles row beats column (a tie half), NaN where they never met, among the
        models in board order (the first ``top`` of them: the matrix is dense)."""
        self.check_is_fitted()
        c = self._stored_counts()
        rows = self._board_codes(top)
        local = np.full(c.n_models, -1)
        local[rows] = np.arange(len(rows))
        a, b = local[c.a], local[c.b]
        kept = (a >= 0) & (b >= 0)
        a, b, count, outcome = a[kept], b[kept], c.count[kept], c.outcome[kept]
        a_score = np.where(outcome == A_WINS, 1.0, np.where(outcome == TIE, 0.5, 0.0))
        n = len(rows)
        wins = np.zeros((n, n))
        games = np.zeros((n, n))
        np.add.at(wins, (a, b), a_score * count)
        np.add.at(wins, (b, a), (1 - a_score) * count)
        np.add.at(games, (a, b), count)
        np.add.at(games, (b, a), count)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(games > 0, wins / games, np.nan)
        ids = self.item_ids_[rows]
        return pd.DataFrame(rate, index=ids, columns=ids.copy())

    def _board_codes(self, top: int | None) -> np.ndarray:
        """Item codes of the board's models, best first (the first ``top``)."""
        if top is not None and (not isinstance(top, Integral) or top < 1):
            raise ValueError(f"top must be a positive integer or None; got {top!r}")
        return self.item_ids_.get_indexer(self.board_.index[:top])

    def robustness(self, top_k: int = 1) -> pd.DataFrame:
        """For each adjacent pair of ranks among the top ``top_k + 1`` models: the fewest
        battles whose removal swaps the pair, by the influence approximation, and whether a
        refit without them does swap it (:mod:`._leaderboard_robustness`)."""
        self.check_is_fitted()
        if not isinstance(top_k, Integral) or top_k < 1:
            raise ValueError(f"robustness: top_k must be a positive integer; got {top_k!r}")
        problem, mode = self._fitted_problem()
        order = self.item_ids_.get_indexer(self.board_.index)
        pairs = [(order[r], order[r + 1]) for r in range(min(top_k, len(order) - 1))]
        table = flip_table(problem, mode, pairs, tol=self._tol())
        table.insert(1, "model_above", self.item_ids_[[p[0] for p in pairs]])
        table.insert(2, "model_below", self.item_ids_[[p[1] for p in pairs]])
        return table


def _refuse_sparse(method: str, n_models: int) -> None:
    raise ValueError(
        f"Leaderboard: {method} intervals need the dense Hessian, which takes at most "
        f"{SPARSE_MODELS} models (this board has {n_models}); use interval='laplace'"
    )


class _Ids:
    """What :meth:`BradleyTerryBase._set_scores` reads of the data: the item ids."""

    def __init__(self, ids: pd.Index) -> None:
        self.item_ids = ids


def _check_identified(counts: BattleCounts, model_ids: pd.Index) -> None:
    """Without a prior the scores exist only on a connected comparison graph, and are finite
    only when every split of the models into two groups has a win each way across it
    (Zermelo 1929; Ford 1957): the directed win graph, a tie an edge each way, strongly
    connected. Either failing is refused in one line naming the models (the maximum-likelihood
    scores would be infinite or arbitrary; a prior makes them finite)."""
    if counts.reaches_all() and counts.reaches_all(wins=True):
        return  # the usual case, found without importing scipy (0.1 s)
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    n = counts.n_models
    ones = np.ones(counts.n_rows)
    graph = csr_matrix((ones, (counts.a, counts.b)), shape=(n, n))
    parts, labels = connected_components(graph, directed=False)
    if parts > 1:
        sizes = np.bincount(labels)
        small = model_ids[labels == np.argmin(sizes)]
        raise ValueError(
            f"Leaderboard: the battles form {parts} unconnected groups of models (e.g. "
            f"{', '.join(map(str, small[:5]))} never meet the others), so their scores cannot "
            "be compared; give prior_scale= or fit each group alone"
        )
    labels, beaten, beats = counts.win_groups()
    unbeaten = model_ids[~beaten[labels]]
    never_won = model_ids[~beats[labels]]
    named = ", ".join(map(str, unbeaten[:5]))
    others = ", ".join(map(str, never_won[:5]))
    raise ValueError(
        "Leaderboard: "
        + (f"{named} never lost to the other models" if len(unbeaten) else "")
        + (" and " if len(unbeaten) and len(never_won) else "")
        + (f"{others} never beat (or tied) them" if len(never_won) else "")
        + ", so the maximum-likelihood scores are infinite; give prior_scale= (e.g. 5) to "
        "shrink them to finite ones"
    )


def _read(data):
    """``(model_ids, counts, covariate names, means, scales, judge rows or None)`` of any
    accepted input."""
    if (
        isinstance(data, pd.DataFrame)
        and "model_a" not in data.columns
        and {"left", "right", "label"} <= set(data.columns)
    ):
        data = Comparisons(data)  # the role's worker, left, right, label table
    if isinstance(data, Comparisons):
        outcome = np.where(data.outcome > 0, A_WINS, np.where(data.outcome < 0, B_WINS, TIE))
        counts = BattleCounts.of(data.n_items, data.left_codes, data.right_codes, outcome, None)
        model_ids = pd.Index(data.item_ids, name="model")
        return model_ids, counts, (), np.zeros(0), np.ones(0), None
    battles = data if isinstance(data, Battles) else Battles(data)
    judges = None
    if battles.judge_ids is not None:
        judge, a, b, outcome, count = battles.judge_battles()
        judges = JudgeRows.of(battles.judge_ids, judge, a, b, outcome, battles.n_models, count)
    return (
        battles.model_ids,
        battles.counts(),
        battles.covariate_names,
        battles.covariate_mean,
        battles.covariate_scale,
        judges,
    )
