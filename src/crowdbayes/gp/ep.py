"""Expectation propagation for Gaussian-process preference learning.

Model: utilities ``f ~ N(0, K)`` over N items; the comparisons of pair ``k`` = items
``(l_k, r_k)`` have likelihood ``ℓ_k(d_k) = Φ(d_k/α)^{a_k} Φ(-d_k/α)^{b_k}`` of the difference
``d_k = f_{l_k} - f_{r_k}`` (``α = √2 σ``; ``a_k``, ``b_k`` the wins of each side, ties half
to each; see :mod:`.likelihood`). EP replaces every ``ℓ_k`` by an unnormalised Gaussian site
on the difference,

.. math:: \\tilde t_k(d) = e^{s_k} \\exp(-\\tfrac12 \\tilde τ_k d^2 + \\tilde ν_k d),

which is the rank-one form of the two-dimensional sites of Abbasnejad et al. (2013, Eq. 3): the
likelihood depends on ``(f_i, f_j)`` only through ``[1, -1]·(f_i, f_j)``, so the site covariance
``Σ̃⁻¹`` of their Eqs. 5 and 15 is ``τ̃ 1₂`` and the moment matching of their Eqs. 6–15 reduces
to one dimension. Each sweep (parallel EP; Minka, 2001; van Gerven et al., 2010):

1. cavity of every site from the current posterior marginal ``N(d_k; m_k, v_k)``:
   ``τ_{-k} = 1/v_k - τ̃_k``, ``ν_{-k} = m_k/v_k - ν̃_k`` (Abbasnejad Eqs. 6–8);
2. tilted moments ``(Ẑ_k, m̂_k, v̂_k)`` of ``ℓ_k × cavity`` (Eqs. 9–14);
3. new sites ``τ̃_k = 1/v̂_k - τ_{-k}``, ``ν̃_k = m̂_k/v̂_k - ν_{-k}`` (Eq. 15), damped:
   ``θ ← (1 - δ) θ_old + δ θ_new``;
4. the posterior ``Σ = (K⁻¹ + Aᵀ diag(τ̃) A)⁻¹``, ``μ = Σ Aᵀ ν̃`` (Eqs. 4–5).

Sweeps stop when the largest relative change that moment matching asks of a site parameter
(before damping) is below ``tol``. The damping does not move the fixed point, only the path
to it. With ``damping="auto"`` (:class:`AutoDamping`) the sweeps start undamped (``δ = 1``);
whenever that change fails to shrink, ``δ`` is halved from the sweep at hand on and a ceiling
is set at ¾ of the ``δ`` that failed; whenever it shrinks, ``δ`` doubles back up to the
ceiling. The ceiling only falls, so an oscillation is damped more every time it recurs (down
to :data:`AUTO_DAMPING_FLOOR`), while updates that contract keep the undamped speed; a site
update whose posterior cannot be factorised (sites of extreme precision) restarts the sweeps
from the first sites with the ceiling halved. This is a safeguard of ours against the
oscillation of undamped parallel EP on sharp likelihoods (van Gerven et al., 2010, damp every
sweep instead). On 1,000 items and 10,000 comparisons it needs 8 sweeps where ``δ = ½`` needs
25; on random sharp problems where undamped EP oscillates it converges, in fewer sweeps than
``δ = ½`` as a rule (the tests check both).

The EP estimate of the log marginal likelihood (Rasmussen & Williams, 2006, Eq. 3.65, written
for difference sites in natural parameters) is

.. math:: \\log Z_{EP} = Σ_k s_k - \\tfrac12 \\log|I + K W| + \\tfrac12 b^T μ,
   \\qquad b = A^T \\tilde ν,

with ``s_k = log Ẑ_k + ½ log(1 + v_{-k} τ̃_k) - (ν̃_k + m_{-k}/v_{-k})² / (2(1/v_{-k} + τ̃_k))
+ m_{-k}² / (2 v_{-k})`` chosen so each site has the tilted distribution's mass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..exceptions import CholeskyError
from ..inference.driver import run_iterations
from ..linalg import triangular_solve
from .likelihood import PairCounts, tilted_moments
from .posterior import LatentPosterior, prepare_problem

__all__ = [
    "AUTO_DAMPING_FLOOR",
    "AutoDamping",
    "EPResult",
    "expectation_propagation",
    "parallel_ep",
    "initial_sites",
    "site_cavities",
    "site_log_normalisers",
    "ep_log_marginal",
    "ep_gradient_weights",
]


#: the smallest damping ``damping="auto"`` falls to (module docstring)
AUTO_DAMPING_FLOOR = 1.0 / 64.0


class AutoDamping:
    """The damping of ``damping="auto"`` (module docstring): :meth:`after` each sweep's
    change gives the damping of its update, :meth:`restart` lowers the ceiling after a
    posterior that could not be factorised."""

    def __init__(self) -> None:
        self.value = 1.0
        self.ceiling = 1.0
        self._change = np.inf

    def after(self, change: float) -> float:
        if change >= self._change:
            self.ceiling = max(0.75 * self.value, AUTO_DAMPING_FLOOR)
            self.value = max(0.5 * self.value, AUTO_DAMPING_FLOOR)
        else:
            self.value = min(2.0 * self.value, self.ceiling)
        self._change = change
        return self.value

    def restart(self) -> bool:
        """Halve the ceiling and start again (from the first sites); False at the floor."""
        if self.ceiling <= AUTO_DAMPING_FLOOR:
            return False
        self.ceiling = self.value = max(0.5 * self.ceiling, AUTO_DAMPING_FLOOR)
        self._change = np.inf
        return True


def check_damping(damping: float | str) -> None:
    """Raise a one-line ValueError unless ``damping`` is in (0, 1] or ``"auto"``."""
    if isinstance(damping, str):
        if damping != "auto":
            raise ValueError(f"damping must be in (0, 1] or 'auto'; got {damping!r}")
    elif not 0.0 < damping <= 1.0:
        raise ValueError(f"damping must be in (0, 1] or 'auto'; got {damping}")


@dataclass
class EPResult:
    """Output of :func:`expectation_propagation`.

    ``site_precision`` and ``site_linear`` (``τ̃``, ``ν̃``, one per pair of ``PairCounts``) can be
    passed back as ``sites=`` to warm-start a later run on the same pairs (e.g. new length-scales,
    or a community whose members changed a little: map the sites by ``(left, right)``).
    """

    posterior: LatentPosterior
    site_precision: np.ndarray
    site_linear: np.ndarray
    log_marginal: float
    n_iter: int
    converged: bool
    history: list[float] = field(default_factory=list)


def site_cavities(
    posterior, left: np.ndarray, right: np.ndarray, tau: np.ndarray, nu: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cavity natural parameters ``(τ_{-k}, ν_{-k})`` and a mask of the valid (τ > 0) ones, for
    any posterior with ``difference_moments(left, right)`` (exact or sparse)."""
    m, v = posterior.difference_moments(left, right)
    v = np.maximum(v, 1e-300)
    cav_tau = 1.0 / v - tau
    cav_nu = m / v - nu
    return cav_tau, cav_nu, cav_tau > 1e-12 * (1.0 / v)


def site_log_normalisers(
    posterior, pairs: PairCounts, tau: np.ndarray, nu: np.ndarray, alpha: float
) -> float:
    """``Σ_k log s̃_k``: the sites' share of ``log Z_EP`` (see the module docstring); the
    posterior adds its own ``−½ log|B| + ½ ν̃ᵀμ`` term."""
    cav_tau, cav_nu, ok = site_cavities(posterior, pairs.left, pairs.right, tau, nu)
    cav_tau = np.where(ok, cav_tau, 1e-300)
    cav_var = 1.0 / cav_tau
    cav_mean = cav_nu * cav_var
    log_z, _, _ = tilted_moments(cav_mean, cav_var, pairs.wins, pairs.losses, alpha)
    site_scale = (
        log_z
        + 0.5 * np.log1p(cav_var * tau)
        - (nu + cav_nu) ** 2 / (2.0 * (cav_tau + tau))
        + cav_nu * cav_mean / 2.0
    )
    return float(site_scale.sum())


def ep_log_marginal(
    posterior: LatentPosterior,
    pairs: PairCounts,
    tau: np.ndarray,
    nu: np.ndarray,
    alpha: float,
) -> float:
    """``log Z_EP`` for the given sites and their posterior (see the module docstring)."""
    return (
        site_log_normalisers(posterior, pairs, tau, nu, alpha)
        - 0.5 * posterior.log_det_inner()
        + 0.5 * posterior.linear_term @ posterior.mean
    )


def initial_sites(sites, n_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """``(τ̃, ν̃)``: zeros (posterior = prior), or a validated copy of the given sites."""
    if sites is None:
        return np.zeros(n_pairs), np.zeros(n_pairs)
    tau = np.array(sites[0], dtype=np.float64)
    nu = np.array(sites[1], dtype=np.float64)
    if tau.shape != (n_pairs,) or nu.shape != (n_pairs,) or (tau < 0).any():
        raise ValueError(
            f"sites: expected two arrays of shape ({n_pairs},) with non-negative precisions"
        )
    return tau, nu


def parallel_ep(
    make_posterior,
    pairs: PairCounts,
    tau: np.ndarray,
    nu: np.ndarray,
    *,
    alpha: float,
    damping: float | str,
    max_iter: int,
    tol: float,
    progress: bool = False,
    desc: str = "EP sweeps",
    warn_name: str = "expectation propagation",
):
    """Parallel damped EP over the pairwise probit sites, for any Gaussian posterior family.

    ``make_posterior(τ̃, ν̃)`` builds the posterior of the latent utilities given the site
    parameters (exact: :class:`LatentPosterior`; inducing points: the communities' sparse
    posterior). Each sweep takes every site's cavity, matches the moments of the tilted
    distribution (:func:`tilted_moments`) and moves the site parameters a fraction ``damping``
    toward the matched ones (``"auto"``: :class:`AutoDamping`). The monitored change is
    the undamped relative distance to the matched sites: zero exactly at a fixed point, and
    not shrunk by the damping.

    Returns ``(posterior, τ̃, ν̃, result)`` with the driver's result (``n_iter``,
    ``converged``, ``history``).
    """
    check_damping(damping)
    schedule = AutoDamping() if damping == "auto" else None
    left, right = pairs.left, pairs.right
    first = (make_posterior(tau, nu), tau, nu)
    state = {"posterior": first[0], "tau": tau, "nu": nu}

    def sweep(_: int) -> float:
        tau, nu = state["tau"], state["nu"]
        cav_tau, cav_nu, ok = site_cavities(state["posterior"], left, right, tau, nu)
        cav_var = 1.0 / cav_tau[ok]
        cav_mean = cav_nu[ok] * cav_var
        _, hat_mean, hat_var = tilted_moments(
            cav_mean, cav_var, pairs.wins[ok], pairs.losses[ok], alpha
        )
        # the tilted variance is below the cavity's; keep it positive against round-off
        hat_var = np.maximum(hat_var, 1e-12 * cav_var)
        new_tau = np.maximum(1.0 / hat_var - cav_tau[ok], 0.0)
        new_nu = hat_mean / hat_var - cav_nu[ok]
        change = max(
            float(np.max(np.abs(new_tau - tau[ok]) / (1.0 + tau[ok]), initial=0.0)),
            float(np.max(np.abs(new_nu - nu[ok]) / (1.0 + np.abs(nu[ok])), initial=0.0)),
        )
        step = damping if schedule is None else schedule.after(change)
        tau_next, nu_next = tau.copy(), nu.copy()
        tau_next[ok] = (1.0 - step) * tau[ok] + step * new_tau
        nu_next[ok] = (1.0 - step) * nu[ok] + step * new_nu
        try:
            posterior = make_posterior(tau_next, nu_next)
        except CholeskyError:
            if schedule is None or not schedule.restart():
                raise
            posterior, tau_next, nu_next = first
        state.update(tau=tau_next, nu=nu_next, posterior=posterior)
        return change

    result = run_iterations(
        sweep,
        max_iter=max_iter,
        tol=tol,
        monitor="change",
        progress=progress,
        desc=desc,
        warn_name=warn_name,
    )
    return state["posterior"], state["tau"], state["nu"], result


def expectation_propagation(
    K: np.ndarray,
    pairs: PairCounts,
    *,
    noise: float = 1.0,
    damping: float | str = 0.5,
    max_iter: int = 200,
    tol: float = 1e-6,
    sites: tuple[np.ndarray, np.ndarray] | None = None,
    chol_prior: np.ndarray | None = None,
    progress: bool = False,
) -> EPResult:
    """Parallel EP for the GP preference model on a prior covariance ``K``.

    Parameters
    ----------
    K : ndarray (N, N)
        Prior covariance of the utilities of the N items that ``pairs`` index.
    pairs : PairCounts
        The comparisons grouped by pair (:meth:`PairCounts.from_comparisons`); one site each.
    noise : float
        Judgment noise sd ``σ``; the likelihood is ``Φ(y (f_l - f_r) / (√2 σ))``.
    damping : float in (0, 1] or "auto"
        Fraction of each parallel site update applied (1: undamped; ``"auto"``: adapted to
        the site changes, see the module docstring).
    max_iter, tol : sweeps and the site-change tolerance.
    sites : (τ̃, ν̃), optional
        Initial site parameters (warm start); default all zero (posterior = prior).
    chol_prior : ndarray, optional
        A precomputed lower Cholesky factor of ``K`` (e.g. cached per community).
    """
    alpha, L = prepare_problem(K, pairs, noise, chol_prior)
    tau, nu = initial_sites(sites, len(pairs.left))
    posterior, tau, nu, result = parallel_ep(
        lambda tau, nu: LatentPosterior(L, pairs.left, pairs.right, tau, linear=nu),
        pairs,
        tau,
        nu,
        alpha=alpha,
        damping=damping,
        max_iter=max_iter,
        tol=tol,
        progress=progress,
    )
    return EPResult(
        posterior=posterior,
        site_precision=tau,
        site_linear=nu,
        log_marginal=ep_log_marginal(posterior, pairs, tau, nu, alpha),
        n_iter=result.n_iter,
        converged=result.converged,
        history=result.history,
    )


def ep_gradient_weights(posterior: LatentPosterior) -> np.ndarray:
    """``G`` with ``∂ log Z_EP / ∂θ = Σ_ij G_ij ∂K_ij/∂θ`` at an EP fixed point.

    At convergence ``log Z_EP`` is stationary in the site parameters, so only its explicit
    dependence on ``K`` counts (Rasmussen & Williams, 2006, Eq. 5.27; Seeger, 2005):
    ``G = ½ (γ γᵀ - R)`` with ``γ = K⁻¹ μ`` and ``R = K⁻¹ - K⁻¹ Σ K⁻¹ = (K + W⁻¹)⁻¹``. Pass
    ``G`` to :meth:`~crowdbayes.kernels.Kernel.gradient_contract` for the length-scale
    gradient; ``Σ_ij G_ij K_ij`` is the gradient in the log prior variance.
    """
    L, Lb = posterior.chol_prior, posterior.chol_inner
    gamma = triangular_solve(L, posterior.whitened_mean, transpose=True)
    L_inv = triangular_solve(L, np.eye(len(L)))
    inner = triangular_solve(Lb, L_inv)
    R = L_inv.T @ L_inv - inner.T @ inner
    return 0.5 * (np.outer(gamma, gamma) - R)
