"""Gibbs sampling of community memberships with EP community posteriors inside.

State of one chain: a community label ``z_u`` per user and, per community ``c``, the EP
posterior ``q_c(f) = N(μ_c, Σ_c)`` of its utility given its members' comparisons
(:mod:`.community`: the GP engine's EP, one prior Cholesky factor for all communities). One
sweep visits the users in random order and draws

.. math:: p(z_u = c | z_{-u}, D) ∝ n_c^{-u} \\, p(D_u | D_{c \\setminus u}),
   \\qquad p(z_u = \\text{new} | z_{-u}, D) ∝ λ \\, p(D_u | \\text{GP prior}),

the CRP prior of Abbasnejad et al. (2013, Eqs. 20–21) times the expected likelihood of the
user's comparisons (their Eq. 19). Two samplers:

``"blocked"`` (the paper's scheme, linear in users)
    ``p(D_u | D_{c∖u})`` is the ADF evidence (:mod:`._adf`) of ``D_u`` under the marginal over
    the user's items of community ``c``'s current Gaussian belief: the EP posterior fitted at
    the end of the previous sweep, with the user's own EP sites removed when the user was a
    member then (a leave-one-out cavity: the paper's Eq. 19 integrates over ``p(f | c*, D)``,
    which would otherwise count ``D_u`` twice), and updated within the sweep as users move
    (a leaver's sites divided out exactly, a joiner's comparisons filtered in by ADF), so the
    belief always matches the members the CRP weight ``n_c`` counts. The new-community term
    is the ADF evidence under the GP prior. After the sweep empty communities are
    garbage-collected and only communities whose members changed are refitted, EP
    warm-started from their previous sites (matched by member). Cost per sweep:
    ``O(U C P s²)`` for ``U`` users with ``P`` comparisons on ``s`` items and ``C``
    communities, ``O(P N²)`` per user who moves, plus one warm EP (``O(N³)`` per EP
    iteration, ``O(P M² + M³)`` with ``M`` inducing items, :mod:`crowdbayes.gp.sparse_ep`)
    per changed community. The draws follow these approximate conditionals, not an exact
    Gibbs kernel.
``"collapsed"`` (exact with respect to the EP evidence, for small problems and checking)
    ``p(D_u | D_{c∖u}) = Z_EP(D_{c∖u} ∪ D_u) / Z_EP(D_{c∖u})``, the EP marginal likelihoods
    of the two member sets (memoised). This is a Gibbs sampler whose stationary distribution is
    exactly ``p(z | D) ∝ CRP(z | λ) Π_c Z_EP(D_c)``.

Both are followed by ``split_merge`` Metropolis–Hastings split–merge moves per sweep (Jain &
Neal, 2004; :meth:`_Chain._split_merge`) on the EP-evidence target, which merge or split whole
communities. With a ``Gamma(a, b)`` prior the concentration ``λ`` is then updated (Escobar &
West, 1995; :func:`._crp.sample_concentration`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln

from ...inference.announce import announce_duration
from ...inference.parallel import run_chains
from ._adf import adf_filter, adf_log_evidence
from ._crp import sample_concentration
from .community import (
    Community,
    SamplerSettings,
    UserData,
    fit_community,
    item_block,
    remove_sites,
    user_marginal,
)

__all__ = ["SAMPLERS", "ChainResult", "sample_chains"]

SAMPLERS = ("blocked", "collapsed")


@dataclass
class ChainResult:
    """Kept draws of one chain: memberships (kept × users), number of communities and λ per
    kept draw, and for the predictive draws the community version of each user and the sites
    of every version they reference."""

    memberships: np.ndarray
    n_communities: np.ndarray
    concentration: np.ndarray
    predictive: np.ndarray
    predictive_concentration: np.ndarray
    versions: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    history: list[float] = field(default_factory=list)
    n_ep_unconverged: int = 0
    n_split_merge_accepted: int = 0


class _Chain:
    """The state and moves of one chain (memberships, member sets, community posteriors)."""

    def __init__(self, data: UserData, settings: SamplerSettings, rng: np.random.Generator):
        self.data, self.settings, self.rng = data, settings, rng
        self.lam = float(settings.concentration)
        self.n_versions = 0
        self.n_ep_unconverged = 0
        self.memo: OrderedDict[frozenset, Community] = OrderedDict()
        self.anchors: OrderedDict[int, Community] = OrderedDict()
        self.n_split_merge_accepted = 0
        if settings.init == "sequential":
            self.z = self._seat_sequentially()
        else:
            self.z = rng.integers(max(1, min(int(settings.init), data.n_users)), size=data.n_users)
        self.members: dict[int, set] = {}
        for u, c in enumerate(self.z):
            self.members.setdefault(int(c), set()).add(u)
        self.communities = {c: self._fit(m) for c, m in sorted(self.members.items())}
        self.next_label = max(self.members) + 1

    # ---------------------------------------------------------------- community posteriors
    def _fit(self, members, *previous: Community) -> Community:
        key = frozenset(members)
        if self.settings.sampler == "collapsed":
            # cold starts only, so the memoised evidence is a function of the member set
            if key in self.memo:
                self.memo.move_to_end(key)
                return self.memo[key]
            previous = ()
        community = fit_community(self.data, key, self.settings, previous)
        community.version = self.n_versions
        self.n_versions += 1
        self.n_ep_unconverged += not community.converged
        if self.settings.sampler == "collapsed":
            self.memo[key] = community
            if len(self.memo) > self.settings.memo_size:
                self.memo.popitem(last=False)
        return community

    def _log_evidence(self, members) -> float:
        return self._fit(members).log_marginal if members else 0.0

    # ---------------------------------------------------------------- sweeps
    def _choose(self, log_w: np.ndarray) -> int:
        w = np.exp(log_w - log_w.max())
        cum = np.cumsum(w)
        return int(np.searchsorted(cum, self.rng.random() * cum[-1], side="right"))

    def _candidates(self, u: int) -> list[int]:
        c0 = int(self.z[u])
        self.members[c0].discard(u)
        return [c for c, m in self.members.items() if m]

    def _assign(self, u: int, c: int) -> None:
        self.z[u] = c
        self.members.setdefault(c, set()).add(u)

    def _new_label(self) -> int:
        label = self.next_label
        self.next_label += 1
        return label

    def _sweep_blocked(self) -> None:
        """One blocked sweep. Community beliefs follow the memberships within the sweep: when
        user ``u`` leaves ``c0`` its EP sites are divided out of ``c0``'s Gaussian
        (:func:`remove_sites`), when it joins ``c`` its comparisons are filtered into ``c``'s
        (ADF), so a community's belief always matches the members its CRP weight counts (a
        community opened in this sweep is not weighed by its size with the posterior of its
        first member only). Only communities changed in the sweep hold a dense copy."""
        data, settings = self.data, self.settings
        alpha = settings.alpha
        beliefs: dict[int, tuple[np.ndarray, np.ndarray]] = {}

        def full(c: int) -> tuple[np.ndarray, np.ndarray]:
            if c not in beliefs:
                post = self.communities[c].posterior
                return post.mean.copy(), post.cov.copy()
            return beliefs[c]

        for u in self.rng.permutation(data.n_users):
            c0 = int(self.z[u])
            labels = self._candidates(u)
            items = data.items[u]
            s = len(items)
            means = np.zeros((len(labels) + 1, s))
            covs = np.empty((len(labels) + 1, s, s))
            own = self.communities[c0]
            for i, c in enumerate(labels):
                if c in beliefs:
                    mean, cov = beliefs[c]
                    means[i], covs[i] = mean[items], item_block(cov, items)
                    if c == c0 and u in own.members:
                        a, b = own.offsets[u]
                        means[i], covs[i] = remove_sites(
                            means[i], covs[i], data.pairs[u], own.tau[a:b], own.nu[a:b]
                        )
                else:
                    means[i], covs[i] = user_marginal(data, self.communities[c], u)
            covs[-1] = settings.prior_block(items)
            log_ev = adf_log_evidence(means, covs, data.pairs[u], alpha)
            sizes = np.array([len(self.members[c]) for c in labels] + [self.lam], dtype=float)
            pick = self._choose(np.log(sizes) + log_ev)
            if pick < len(labels):
                c = labels[pick]
            elif not self.members[c0] and own.members == {u}:
                c = c0  # the user's own singleton is already the new community's posterior
            else:
                c = self._new_label()
                self.communities[c] = self._fit({u})
            if c != c0:
                if self.members[c0] and u in own.members:
                    a, b = own.offsets[u]
                    beliefs[c0] = remove_sites(
                        *full(c0), data.global_pairs[u], own.tau[a:b], own.nu[a:b]
                    )
                if self.communities[c].members != {u}:
                    mean, cov = full(c)
                    _, mean, cov = adf_filter(mean[None], cov[None], data.global_pairs[u], alpha)
                    beliefs[c] = (mean[0], cov[0])
            self._assign(u, c)
        for c in list(self.communities):
            members = self.members.get(c)
            if not members:
                self.communities.pop(c)
                self.members.pop(c, None)
            elif self.communities[c].members != members:
                self.communities[c] = self._fit(members, self.communities[c])

    def _sweep_collapsed(self) -> None:
        for u in self.rng.permutation(self.data.n_users):
            c0 = int(self.z[u])
            labels = self._candidates(u)
            log_w = [
                np.log(len(self.members[c]))
                + self._log_evidence(self.members[c] | {u})
                - self._log_evidence(self.members[c])
                for c in labels
            ]
            log_w.append(np.log(self.lam) + self._log_evidence({u}))
            pick = self._choose(np.array(log_w))
            if pick < len(labels):
                c = labels[pick]
            else:
                c = c0 if not self.members[c0] else self._new_label()
            self._assign(u, c)
        for c in list(self.members):
            if not self.members[c]:
                self.members.pop(c)
                self.communities.pop(c, None)
            else:
                self.communities[c] = self._fit(self.members[c])

    def _seat_sequentially(self) -> np.ndarray:
        """Initial memberships by one sequential CRP pass: users in random order join a
        community ``c`` with probability ``∝ n_c p(D_u | D_c)`` or a new one ``∝ λ p(D_u)``,
        where each community's utility belief starts at the GP prior and is filtered (ADF,
        :func:`adf_filter`) through the comparisons of every user seated in it. Starting all
        users in one community instead makes the first sweep open many small communities of
        the same taste, which single-user moves merge only slowly."""
        data, K, alpha = self.data, self.settings.K, self.settings.alpha
        beliefs: list[tuple[np.ndarray, np.ndarray]] = []
        sizes: list[int] = []
        z = np.empty(data.n_users, dtype=np.int64)
        for u in self.rng.permutation(data.n_users).tolist():
            items = data.items[u]
            means = np.zeros((len(beliefs) + 1, len(items)))
            covs = np.empty((len(beliefs) + 1, len(items), len(items)))
            for c, (mean, cov) in enumerate(beliefs):
                means[c], covs[c] = mean[items], item_block(cov, items)
            covs[-1] = self.settings.prior_block(items)
            log_ev = adf_log_evidence(means, covs, data.pairs[u], alpha)
            c = self._choose(np.log(np.array(sizes + [self.lam], dtype=float)) + log_ev)
            if c == len(beliefs):
                beliefs.append((np.zeros(len(K)), K))
                sizes.append(0)
            _, mean, cov = adf_filter(
                beliefs[c][0][None], beliefs[c][1][None], data.global_pairs[u], alpha
            )
            beliefs[c] = (mean[0], cov[0])
            sizes[c] += 1
            z[u] = c
        return z

    def _anchor(self, u: int) -> Community:
        """EP posterior of user ``u``'s comparisons alone (cold start, memoised)."""
        if u not in self.anchors:
            self.anchors[u] = fit_community(self.data, {u}, self.settings)
            if len(self.anchors) > self.settings.memo_size // 8:
                self.anchors.popitem(last=False)
        return self.anchors[u]

    def _allocate(self, i: int, j: int, others: list[int], given: set | None) -> tuple:
        """Sequential allocation of ``others`` to the sides of anchors ``i`` and ``j`` (Dahl,
        2003): in random order, user ``k`` joins side ``a`` with probability
        ``∝ |S_a| p(D_k | S_a)``, the ADF evidence of ``D_k`` under a Gaussian belief about
        side ``a``'s utility that starts at the anchor's own EP posterior and is filtered
        (ADF) through the comparisons of every user allocated to it. With ``given`` (the
        members of ``i``'s side in an existing split) nothing is drawn and the probability of
        that allocation is computed instead. Returns ``(side of i, side of j, log q)``.
        """
        data, alpha = self.data, self.settings.alpha
        beliefs = []
        for anchor in (self._anchor(i), self._anchor(j)):
            beliefs.append((anchor.posterior.mean[None], anchor.posterior.cov[None]))
        sides, log_q = ({i}, {j}), 0.0
        for k in self.rng.permutation(np.asarray(others, dtype=np.int64)).tolist():
            mean = np.concatenate([b[0] for b in beliefs])
            cov = np.concatenate([b[1] for b in beliefs])
            log_ev, new_mean, new_cov = adf_filter(mean, cov, data.global_pairs[k], alpha)
            log_w = log_ev + np.log([len(sides[0]), len(sides[1])])
            p_first = 1.0 / (1.0 + np.exp(np.clip(log_w[1] - log_w[0], -700.0, 700.0)))
            first = (k in given) if given is not None else self.rng.random() < p_first
            a = 0 if first else 1
            with np.errstate(divide="ignore"):
                log_q += float(np.log(p_first if first else 1.0 - p_first))
            sides[a].add(k)
            beliefs[a] = (new_mean[a : a + 1], new_cov[a : a + 1])
        return sides[0], sides[1], log_q

    def _split_merge(self) -> bool:
        """One Metropolis–Hastings split–merge move (Jain & Neal, 2004) on the target
        ``p(z | D) ∝ CRP(z | λ) Π_c Z_EP(D_c)``.

        Two users ``i ≠ j`` are drawn uniformly. In different communities, merging them is
        proposed; in the same community ``M``, a split: ``i`` and ``j`` anchor two sides and
        the other members are allocated sequentially (:meth:`_allocate`), with probability
        ``q`` of the split computed exactly in both directions. A split of ``M`` into
        ``S_i, S_j`` is accepted with probability
        ``min(1, λ Γ(|S_i|) Γ(|S_j|) / Γ(|M|) · Z(S_i) Z(S_j) / Z(M) / q)``, a merge with the
        inverse ratio. Single-user Gibbs moves take very long to undo a split of one taste
        into two self-consistent halves; this move does it at once.
        """
        data, z = self.data, self.z
        if data.n_users < 2:
            return False
        i, j = (int(v) for v in self.rng.choice(data.n_users, size=2, replace=False))
        ci, cj = int(z[i]), int(z[j])
        merged = self.members[ci] | self.members[cj]
        others = sorted(merged - {i, j})
        given = None if ci == cj else self.members[ci]
        part_i, part_j, log_q = self._allocate(i, j, others, given)
        log_crp = np.log(self.lam) + gammaln(len(part_i)) + gammaln(len(part_j))
        log_crp -= gammaln(len(merged))
        if ci == cj:
            whole = self.communities[ci]
            split = (self._fit(part_i, whole), self._fit(part_j, whole))
            log_ratio = log_crp + split[0].log_marginal + split[1].log_marginal
            log_ratio -= whole.log_marginal + log_q
        else:
            split = (self.communities[ci], self.communities[cj])
            whole = self._fit(merged, *split)
            log_ratio = whole.log_marginal - split[0].log_marginal - split[1].log_marginal
            log_ratio += log_q - log_crp
        if not np.log(self.rng.random()) < log_ratio:
            return False
        if ci == cj:
            new = self._new_label()
            self.communities[ci], self.communities[new] = split
            self.members[ci], self.members[new] = part_i, part_j
            z[list(part_j)] = new
        else:
            self.communities[ci] = whole
            self.members[ci] = merged
            z[list(part_j)] = ci
            del self.communities[cj], self.members[cj]
        return True

    def sweep(self) -> float:
        if self.settings.sampler == "blocked":
            self._sweep_blocked()
        else:
            self._sweep_collapsed()
        for _ in range(self.settings.split_merge):
            self.n_split_merge_accepted += self._split_merge()
        k = len(self.communities)
        if self.settings.concentration_prior is not None:
            shape, rate = self.settings.concentration_prior
            self.lam = sample_concentration(self.lam, k, self.data.n_users, shape, rate, self.rng)
        return float(k)

    def version_of_users(self, store: dict) -> np.ndarray:
        """Each user's community version; records the sites of versions not yet stored."""
        out = np.empty(self.data.n_users, dtype=np.int64)
        for c, community in self.communities.items():
            if community.version not in store:
                store[community.version] = (
                    community.pairs.left,
                    community.pairs.right,
                    community.tau,
                    community.nu,
                )
            out[list(self.members[c])] = community.version
        return out


def sample_chains(
    data: UserData,
    settings: SamplerSettings,
    rngs: list[np.random.Generator],
    *,
    n_sweeps: int,
    burn_in: int,
    thin: int,
    n_predictive: int,
    n_jobs: int = 1,
    progress: bool = False,
    desc: str = "Gibbs sweeps",
    announce: dict[str, str] | None = None,
) -> list[ChainResult]:
    """Run one chain per generator for ``n_sweeps`` sweeps (on ``n_jobs`` processes,
    :func:`~crowdbayes.inference.parallel.run_chains`); keep every ``thin``-th draw after
    ``burn_in``, and the community posteriors of ``n_predictive`` of them (evenly spaced).
    With ``announce`` (``name``, ``fewer``, ``faster``), a run projected past 30 s says so
    first (:func:`~crowdbayes.inference.announce.announce_duration`)."""
    kept = np.arange(burn_in, n_sweeps, thin)
    spaced = np.unique(np.linspace(0, len(kept) - 1, n_predictive).round().astype(np.int64))
    plan = _Plan(n_sweeps, burn_in, thin, frozenset(kept[spaced].tolist()))
    runs = [_ChainRun(rng) for rng in rngs]
    if announce is not None:
        announce_duration(
            sweep=_record_sweep,
            chains=runs,
            shared=(data, settings, plan),
            n_sweeps=n_sweeps,
            n_jobs=n_jobs,
            **announce,
        )
    runs = run_chains(
        _record_sweep,
        runs,
        (data, settings, plan),
        n_sweeps=n_sweeps,
        n_jobs=n_jobs,
        progress=progress,
        desc=desc,
    )
    return [run.result for run in runs]


@dataclass(frozen=True)
class _Plan:
    """Which sweeps a chain keeps: every ``thin``-th from ``burn_in``; ``predictive`` also keep
    their community posteriors."""

    n_sweeps: int
    burn_in: int
    thin: int
    predictive: frozenset


@dataclass
class _ChainRun:
    """One chain and the draws it keeps. The chain is built in its first sweep, wherever it
    runs, and dropped after its last, so only the generator goes to a chain process and only
    the kept draws (``result``) come back."""

    rng: np.random.Generator
    chain: _Chain | None = None
    memberships: list = field(default_factory=list)
    sizes: list = field(default_factory=list)
    lams: list = field(default_factory=list)
    predictive: list = field(default_factory=list)
    predictive_lams: list = field(default_factory=list)
    versions: dict = field(default_factory=dict)
    history: list = field(default_factory=list)
    result: ChainResult | None = None


def _record_sweep(
    run: _ChainRun, iteration: int, data: UserData, settings: SamplerSettings, plan: _Plan
) -> None:
    """One sweep of ``run``'s chain, keeping the draw where ``plan`` says so."""
    if run.chain is None:
        run.chain = _Chain(data, settings, run.rng)
    chain = run.chain
    k = chain.sweep()
    run.history.append(float(k))
    if iteration >= plan.burn_in and (iteration - plan.burn_in) % plan.thin == 0:
        run.memberships.append(chain.z.copy())
        run.sizes.append(int(k))
        run.lams.append(chain.lam)
        if iteration in plan.predictive:
            run.predictive.append(chain.version_of_users(run.versions))
            run.predictive_lams.append(chain.lam)
    if iteration == plan.n_sweeps - 1:
        run.result = ChainResult(
            memberships=np.array(run.memberships, dtype=np.int64).reshape(-1, data.n_users),
            n_communities=np.array(run.sizes, dtype=np.int64),
            concentration=np.array(run.lams),
            predictive=np.array(run.predictive, dtype=np.int64).reshape(-1, data.n_users),
            predictive_concentration=np.array(run.predictive_lams),
            versions=run.versions,
            history=run.history,
            n_ep_unconverged=chain.n_ep_unconverged,
            n_split_merge_accepted=chain.n_split_merge_accepted,
        )
        run.chain = None
