r"""Which task to label next when no worker is named (issue 43 item 1): candidate rules for the
task-only default of ``crowdbayes labels next``, replayed on the shared label sets and chosen
leave one set out.

The issue's protocol: start from one random label per task, then rounds of a quarter of the
tasks (``--batch 0.25``); each round a rule picks tasks, the replay reveals the pool's next
unused real label of each (`crowdbayes.active.LabelPool`), and BayesianDawidSkene is refitted
warm with cold refits on a geometric schedule (`crowdbayes.active.WarmRefit`), up to four
labels per task. The score of a replay is its mean accuracy on gold at 2, 2.25, …, 4 labels
per task (the last fit at or below each, as in ``active_labels.py``).

Rules (a task's class posterior :math:`p`, :math:`n_i` its labels seen):

- ``information`` — today's default (``auto``): the mutual information between the class and
  one label from the label-weighted mean confusion matrix;
- ``uncertainty`` — the entropy :math:`H(p)` (plain uncertainty sampling);
- ``uncertainty_changes`` — the library's strategy of that name: ``entropy_changes_wide``
  below, through the model's own ``suggest`` (exact ties broken at random, where the rule
  below orders them by rounding noise in the expected changes);
- ``round_robin`` — the tasks with fewest labels;
- ``margin`` — :math:`1 - (p_{(1)} - p_{(2)})` (the same order as the entropy for two classes);
- ``changes`` — the answer changes one more label is expected to buy, looking up to three
  labels ahead (`crowdbayes.active.audit.expected_changes`, the stop rule's quantity;
  expected error reduction under the model);
- ``worker_information`` — BALD over the unknown answering worker: the label-weighted mean over
  workers of each worker's mutual information (held-out confusion matrices), i.e.
  :math:`I(c; x, j)` with the worker :math:`j` revealed with the label, against
  :math:`I(c; x)` of ``information``;
- ``mixed`` — half of the batch by entropy, best first, half drawn uniformly (alternating, as
  the pair models' ``mixed``);
- ``entropy_coverage`` — :math:`H(p) / n_i`: uncertainty discounted by the labels a task
  already has (a task still uncertain after many labels is likely ambiguous);
- ``eer`` — expected error reduction (Roy & McCallum 2001, ICML) for one task: the expected
  fall in :math:`1 - \max_k p_k` after one label from a worker drawn as the platform draws
  them (by each worker's share of the labels), :math:`\sum_j w_j \sum_x q_{jx} \max_k p'_{jk}(x) -
  \max_k p_k` with each worker's held-out confusion (the knowledge gradient averaged over
  workers); ties (most often zero: one label cannot turn the answer) broken by the entropy;
- ``entropy_changes`` / ``entropy_changes_wide`` — the entropy in bins of width
  :data:`TIE` · log K (2.5 times as wide), within a bin the expected answer changes first;
- ``entropy_fewest`` — the same bins, within a bin the task with fewer labels first;
- ``entropy_worker_information`` — the same bins, within a bin ``worker_information`` first;
- ``entropy_x_changes`` — the product :math:`H(p) \cdot` ``changes``;
- ``predictive_entropy`` — the entropy of the next label's predictive distribution
  :math:`H(q)`, :math:`q_x = \sum_k p_k \bar\theta_{kx}` with the label-weighted mean
  confusion (the total uncertainty of which BALD, ``information``, is the part due to the
  class).

The rule is chosen leave one set out: for each set, the rule below entropy sampling by more
than one paired standard error on the fewest of the other eleven sets, ties by the best mean
score there (the project's rule: prefer the choice that never loses over the one that wins most
often), scored on the held-out set against entropy and round-robin (paired over seeds: the same
starting labels and reveal order seed for every rule); the report also gives the choice by the
best mean alone.

``--chooser hierarchical`` replays the issue's own protocol: the questions come from
``HierarchicalAnnotation()`` at its defaults (the default of ``labels fit``, and of ``labels
next`` until stop 53; ``active_labels_next_model.py`` scores the choosers by it instead),
fitted cold on the revealed labels before each round's questions (it has no warm start), while
the accuracy recorded is still that of BayesianDawidSkene refitted warm on the same labels
(:class:`HierarchicalChooser`), so that every arm is scored by the same model. Only the
model's own strategies (``information``, ``uncertainty``, ``uncertainty_changes``) and
``round_robin`` (which asks no model) can be replayed so.

    CROWDBAYES_DATA=../shared/data .venv/bin/python benchmarks/active/active_labels_taskonly.py \
        [--sets rte temp] [--seeds 3] [--rules information uncertainty] [--cache /tmp/alt] \
        [--chooser hierarchical] [--output benchmarks/active/results/active_labels_taskonly.md]

Each replay is kept in ``--cache`` (a CSV per set, rule and seed), so a stopped run resumes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: _common, _*.py

from _common import markdown_table, write_markdown_report  # noqa: E402
from crowdbayes.active import LabelPool, WarmRefit, simulate  # noqa: E402
from crowdbayes.active.audit import expected_changes  # noqa: E402
from crowdbayes.annotators.questions import (  # noqa: E402
    entropy,
    held_out_confusion,
    label_question_values,
)
from crowdbayes.datasets import load_labels  # noqa: E402
from crowdbayes.models.labels import BayesianDawidSkene, HierarchicalAnnotation  # noqa: E402

SETS = (
    "bluebird", "d_possent", "d_product", "dog", "duchenne", "rte",
    "s_adult", "s_rel", "temp", "trec", "web", "wsd",
)  # fmt: skip
#: the model's own strategies (through ``suggest``) and the pool's baseline
BUILT_IN = ("information", "uncertainty", "round_robin", "uncertainty_changes")
RULES = (
    *BUILT_IN, "margin", "changes", "worker_information", "mixed", "entropy_coverage",
    "eer", "entropy_changes", "entropy_fewest", "entropy_x_changes", "predictive_entropy",
    "entropy_worker_information", "entropy_changes_wide",
)  # fmt: skip
#: width of the bins of :math:`H(p) / \log K` within which entropies count as equal
#: (``entropy_changes``, ``entropy_fewest``, ``entropy_worker_information``; 2.5 times as
#: wide for ``entropy_changes_wide``)
TIE = 0.02
#: labels per task at which the accuracy is averaged
GRID = np.arange(2.0, 4.0 + 1e-9, 0.25)


def worker_information(model, probas: np.ndarray, value: str = "information") -> np.ndarray:
    """The label-weighted mean over the fitted workers of the value (mutual information, or
    the knowledge gradient ``accuracy`` for ``eer``) of one label from each worker's held-out
    confusion (the module docstring's ``worker_information`` and ``eer``)."""
    k = probas.shape[1]
    counts = model.held_out_counts_.reindex(model.confusion_.index).fillna(0.0).to_numpy()
    matrices, _ = held_out_confusion(counts.reshape(-1, k, k))
    workers = pd.Index(model.confusion_.index.get_level_values(0)[::k])
    weights = model.worker_label_counts_.reindex(workers).fillna(0).to_numpy(np.float64)
    weights = weights / weights.sum()
    total = np.zeros(len(probas))
    for j in np.flatnonzero(weights > 0):
        total += weights[j] * label_question_values(probas, matrices[j], value)
    return total


class RuleModel(BayesianDawidSkene):
    """BayesianDawidSkene whose ``suggest`` also plays the candidate rules of this benchmark
    (the built-in strategies go to the model itself), so that `simulate` replays them all."""

    def suggest(self, n, *, candidates=None, strategy="auto", random_state=None, **options):
        if strategy in BUILT_IN:
            return super().suggest(
                n, candidates=candidates, strategy=strategy, random_state=random_state, **options
            )
        rng = np.random.default_rng(random_state)
        questions = pd.DataFrame({"task": pd.Index(candidates).unique()})
        probas = self.probas_.reindex(questions["task"]).to_numpy(np.float64)
        secondary = None
        if strategy == "margin":
            top = np.sort(probas, axis=1)
            score = 1.0 - (top[:, -1] - top[:, -2])
        elif strategy == "changes":
            score = expected_changes(self, questions)
        elif strategy == "worker_information":
            score = worker_information(self, probas)
        elif strategy == "eer":
            score = worker_information(self, probas, "accuracy")
            secondary = entropy(probas)
        elif strategy in ("entropy_changes", "entropy_changes_wide"):
            width = TIE * (2.5 if strategy == "entropy_changes_wide" else 1.0)
            score = binned(entropy(probas), probas.shape[1], width)
            secondary = expected_changes(self, questions)
        elif strategy == "entropy_worker_information":
            score = binned(entropy(probas), probas.shape[1])
            secondary = worker_information(self, probas)
        elif strategy == "entropy_fewest":
            score = binned(entropy(probas), probas.shape[1])
            secondary = -self.task_label_counts().reindex(questions["task"]).to_numpy()
        elif strategy == "entropy_x_changes":
            score = entropy(probas) * expected_changes(self, questions)
        elif strategy == "predictive_entropy":
            score = entropy(probas @ self._question_confusion(questions))
        else:  # mixed, entropy_coverage
            score = entropy(probas)
            if strategy == "entropy_coverage":
                seen = self.task_label_counts().reindex(questions["task"]).to_numpy()
                score = score / np.maximum(seen, 1)
        if secondary is None:
            secondary = np.zeros(len(score))
        order = np.lexsort((rng.random(len(score)), -secondary, -score))
        if strategy == "mixed":
            order = alternate(order, rng.permutation(len(score)))
        return questions.iloc[order[:n]].assign(score=score[order[:n]]).reset_index(drop=True)

    def task_label_counts(self) -> pd.Series:
        """Labels seen per task (kept by :meth:`fit`)."""
        return self.seen_counts_


def binned(values: np.ndarray, k: int, width: float = TIE) -> np.ndarray:
    """Entropies in nats rounded down to bins of ``width`` · log K (equal within a bin)."""
    return np.floor(values / (width * np.log(k)))


def alternate(best: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """Best-first and uniformly drawn positions alternating, each position once."""
    taken, order = set(), []
    for pair in zip(best, drawn, strict=True):
        for position in pair:
            if position not in taken:
                taken.add(position)
                order.append(position)
    return np.array(order, dtype=int)


class ScorerAnswers:
    """What `simulate` reads of the answers of a replayed model (``labels_`` for the score,
    ``expected_accuracy`` for the estimate): those of its ``scorer``, whoever chooses."""

    scorer = None

    @property
    def labels_(self) -> pd.Series:
        return self.scorer.labels_

    def expected_accuracy(self, tasks=None) -> float:
        return self.scorer.expected_accuracy(tasks)


class HierarchicalChooser(ScorerAnswers):
    """The questions of ``HierarchicalAnnotation()`` at its defaults, the answers of ``scorer``
    (BayesianDawidSkene): what `simulate` and `LabelPool` read of a model (``suggest``;
    ``labels_`` and ``expected_accuracy`` for the score and the estimate).

    :class:`ChooserRefit` refits ``scorer`` and keeps the revealed labels; the hierarchical
    model is fitted cold on them when questions are asked (so a replay's last fit, and the
    ``round_robin`` baseline, which asks no model, cost no Gibbs sweeps). ``n_jobs=1`` runs
    the chains in this process (the draws do not depend on it); each fit's seed is drawn from
    the replay's ``seed``."""

    def __init__(self, scorer, seed: int) -> None:
        self.scorer = scorer
        self.rng = np.random.default_rng(seed)
        self.revealed = None  # the labels revealed so far (set by ChooserRefit)

    def suggest(self, n, **options) -> pd.DataFrame:
        seed = int(self.rng.integers(2**31))
        chooser = HierarchicalAnnotation(n_jobs=1, random_state=seed).fit(self.revealed)
        return chooser.suggest(n, **options)


class ChooserRefit:
    """A refit of a :class:`HierarchicalChooser`: ``refit`` of its scorer, and the pool's
    labels kept for the chooser's next questions."""

    def __init__(self, refit) -> None:
        self.refit = refit

    def __call__(self, model: HierarchicalChooser, pool) -> HierarchicalChooser:
        self.refit(model.scorer, pool)
        (model.revealed,) = pool.fit_args()
        return model


#: the choosers of ``--chooser``, and the suffix of their replays' cache names
CHOOSERS = {"bds": "", "hierarchical": "@hier"}
#: the rules a hierarchical chooser can replay (its own strategies and the pool's baseline)
HIERARCHICAL_RULES = BUILT_IN


def run(name: str, rule: str, seed: int, cache: Path, chooser: str = "bds") -> pd.DataFrame:
    model, refit = RuleModel(), CountingRefit(WarmRefit(0.25))
    if chooser == "hierarchical":
        model, refit = HierarchicalChooser(model, seed), ChooserRefit(refit)
    path = cache / f"{name}__{rule}{CHOOSERS[chooser]}__{seed}.csv"
    return replay(path, name, seed, model, refit, rule)


def replay(path: Path, name: str, seed: int, model, refit, strategy: str, rule=None, gold=None):
    """The replay of the module docstring's protocol on set ``name`` (its ``seed`` draws the
    start and the reveal order): ``model`` asks by ``strategy``, ``refit`` refits it each
    round; its record (``rule``, default ``strategy``, names it) is kept at ``path`` and read
    from there when it exists. ``gold``: what the record's accuracy is scored against
    (default the set's gold)."""
    if path.exists():
        return pd.read_csv(path)
    data = load_labels(name)
    gold = data.gold if gold is None else gold
    pool = LabelPool(data.labels, gold, start=1, random_state=seed)
    n_tasks = data.labels["task"].nunique()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        record = simulate(
            model,
            pool,
            batch=max(1, int(round(0.25 * n_tasks))),
            budget=min(int(GRID[-1] * n_tasks), len(data.labels)),
            strategy=strategy,
            refit=refit,
            random_state=seed,
        )
    record = record.assign(
        set=name, rule=rule or strategy, seed=seed, per_task=record["n_answers"] / n_tasks
    )
    record.to_csv(path, index=False)
    return record


class CountingRefit:
    """A refit that also stores the labels seen per task on the model (``seen_counts_``), for
    ``entropy_coverage``."""

    def __init__(self, refit) -> None:
        self.refit = refit

    def __call__(self, model, pool):
        model = self.refit(model, pool)
        model.seen_counts_ = pool.observed()["task"].value_counts()
        return model


def at(record: pd.DataFrame, per_task: np.ndarray) -> np.ndarray:
    """The accuracy at ``per_task`` labels per task (the last fit at or below each)."""
    index = np.searchsorted(record["per_task"].to_numpy(), per_task + 1e-9, side="right") - 1
    return record["accuracy"].to_numpy()[np.clip(index, 0, len(record) - 1)]


def score(record: pd.DataFrame) -> float:
    """Mean accuracy at :data:`GRID` labels per task."""
    return float(at(record, GRID).mean())


def verdict(table: pd.DataFrame) -> str:
    """Whether the leave-one-set-out choice holds: at least entropy sampling within one paired
    standard error on every set, and above it on average."""
    below = table.index[table["− entropy"] + table["s.e. entropy"] < 0]
    mean = table["− entropy"].mean()
    holds = len(below) == 0 and mean > 0
    return (
        f"verdict: the leave-one-set-out choice {'holds' if holds else 'does not hold'} "
        f"(mean − entropy {mean:+.4f}; below entropy by more than one s.e. on "
        + (", ".join(below) if len(below) else "no set")
        + ")"
    )


#: the rules every chosen rule is compared with, and their short names in the tables
COMPARED = (("uncertainty", "entropy"), ("round_robin", "rr"), ("information", "auto"))


def loso(scores: pd.DataFrame, rules, criterion: str = "never-lose") -> pd.DataFrame:
    """For each set: the rule chosen on the other sets, and its score on the set against
    entropy, round-robin and the former default, paired over seeds.

    ``criterion="never-lose"`` (the report's first table) chooses the rule below entropy
    sampling by more than one paired s.e. on the fewest of the other sets, ties by the best
    mean score — the project's rule to prefer the choice that never loses over the one that
    wins most often, as the MACE study chooses by the best worst margin
    (``benchmarks/labels/mace_vs_crowdkit.py``); ``"mean"`` the best mean score alone."""
    means = scores.groupby(["set", "rule"])["score"].mean().unstack()[list(rules)]
    below = pd.DataFrame(
        {rule: paired(scores, rule, "uncertainty").eval("gap + `s.e.` < 0") for rule in rules}
    ).fillna(False)
    rows = []
    for name in means.index:
        others = pd.DataFrame(
            {"below": below.drop(index=name).sum(), "mean": means.drop(index=name).mean()}
        )
        if criterion == "mean":
            chosen = others["mean"].idxmax()
        else:
            chosen = others.sort_values(["below", "mean"], ascending=[True, False]).index[0]
        row = {"set": name, "chosen": chosen, "accuracy": means.at[name, chosen]}
        per_seed = scores[scores["set"] == name].pivot(index="seed", columns="rule", values="score")
        for other, label in COMPARED:
            if other not in rules:
                continue
            gap = per_seed[chosen] - per_seed[other]
            row[f"− {label}"] = gap.mean()
            row[f"s.e. {label}"] = gap.std(ddof=1) / np.sqrt(len(gap)) if len(gap) > 1 else np.nan
        rows.append(row)
    return pd.DataFrame(rows).set_index("set")


def paired(scores: pd.DataFrame, rule: str, other: str) -> pd.DataFrame:
    """Per set: mean score gap ``rule − other`` over seeds and its paired standard error."""
    per_seed = scores.pivot_table(index=["set", "seed"], columns="rule", values="score")
    gap = (per_seed[rule] - per_seed[other]).groupby(level="set")
    return pd.DataFrame({"gap": gap.mean(), "s.e.": gap.std(ddof=1) / np.sqrt(gap.count())})


#: the heading of each leave-one-set-out table, by the criterion that chooses the rule
LOSO_HEADINGS = {
    "never-lose": "the rule below entropy by more than one paired s.e. on the fewest other sets "
    "(ties: the best mean)",
    "mean": "the rule with the best mean score on the other sets",
}


def loso_section(scores: pd.DataFrame, rules, criterion: str) -> list[str]:
    """The report's leave-one-set-out table for ``criterion`` (:func:`loso`), with its means
    and :func:`verdict`."""
    table = loso(scores, rules, criterion)
    means = ", ".join(
        f"− {label} {table[f'− {label}'].mean():+.4f}"
        for _, label in COMPARED
        if f"− {label}" in table
    )
    return [
        f"## Leave one set out, choosing {LOSO_HEADINGS[criterion]}; scored on the set",
        "",
        "Gaps are the chosen rule's score minus entropy sampling (`uncertainty`), round-robin and "
        "the former default (`information`, if replayed), mean over seeds with the paired "
        "standard error.",
        "",
        markdown_table(table),
        "",
        f"mean: {means}",
        "",
        verdict(table),
        "",
    ]


#: the first line of a report: which model chose the questions and which scored them
CHOOSER_TEXT = {
    "bds": "Questions chosen and accuracy scored by BayesianDawidSkene, warm refits (cold "
    "refit kept if better every 25% growth)",
    "hierarchical": "Questions chosen by HierarchicalAnnotation() at its defaults (the default "
    "model of `labels fit`; fitted cold on the revealed labels before each round, n_jobs=1; "
    "`round_robin` asks no model); accuracy scored by BayesianDawidSkene refitted on the same "
    "labels, warm refits (cold refit kept if better every 25% growth)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--rules", nargs="*", default=list(RULES))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--first-seed", type=int, default=0, help="seeds run from here (fresh seeds confirm a rule)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="replays run in parallel")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/active_labels_taskonly"))
    parser.add_argument("--output", type=Path)
    parser.add_argument(
        "--chooser",
        choices=list(CHOOSERS),
        default="bds",
        help="the model whose questions are replayed (bds: BayesianDawidSkene, also the scorer; "
        "hierarchical: HierarchicalAnnotation at its defaults, scored by BayesianDawidSkene)",
    )
    args = parser.parse_args()
    for needed in ("uncertainty", "round_robin"):
        if needed not in args.rules:
            parser.error(f"--rules must include {needed!r} (the comparisons are against it)")
    unknown = [r for r in args.rules if r not in RULES]
    if unknown:
        parser.error(f"--rules: unknown rule(s) {unknown}; choose from {list(RULES)}")
    if args.chooser == "hierarchical":
        other = [r for r in args.rules if r not in HIERARCHICAL_RULES]
        if other:
            parser.error(
                f"--chooser hierarchical replays only {list(HIERARCHICAL_RULES)}; got {other}"
            )
    args.cache.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    jobs = [(n, r, s) for s in seeds for n in args.sets for r in args.rules]
    with ProcessPoolExecutor(args.jobs) as executor:
        futures = {executor.submit(run, *job, args.cache, args.chooser): job for job in jobs}
        for future in as_completed(futures):
            job = " ".join(map(str, futures[future]))
            print(f"{job} done ({time.perf_counter() - start:.0f} s)", flush=True)
    records = [future.result() for future in futures]
    points = np.array([2.0, 3.0, 4.0])
    scores = pd.DataFrame(
        [{"set": r["set"].iloc[0], "rule": r["rule"].iloc[0], "seed": r["seed"].iloc[0],
          "score": score(r), "seconds": r["seconds"].sum(),
          **dict(zip(points, at(r, points), strict=True))} for r in records]
    )  # fmt: skip
    by_point = scores.groupby(["set", "rule"])[list(points)].mean()
    by_point = by_point.groupby("rule").mean() - by_point.xs("uncertainty", level="rule").mean()
    means = scores.groupby(["set", "rule"])["score"].mean().unstack()[args.rules]
    lines = [
        f"{CHOOSER_TEXT[args.chooser]}; start one "
        f"random label per task; rounds of 25% of the tasks; {args.seeds} seeds "
        f"({seeds[0]}–{seeds[-1]}; paired: the same start and reveal seed for every rule); "
        "score = mean accuracy on gold at 2, 2.25, …, 4 labels per task (the last fit at or "
        "below each).",
        "",
        "## Mean accuracy at 2–4 labels per task",
        "",
        markdown_table(means),
        "",
        "mean over sets: " + ", ".join(f"{r} {means[r].mean():.4f}" for r in args.rules),
        "",
        *loso_section(scores, args.rules, "never-lose"),
        *loso_section(scores, args.rules, "mean"),
        "## Mean over sets of each rule's accuracy minus entropy sampling's, at 2, 3, 4 labels "
        "per task",
        "",
        markdown_table(by_point.loc[list(args.rules)].rename(columns=lambda c: f"{c:g} labels")),
        "",
        "## Each rule minus entropy sampling (paired over seeds)",
        "",
    ]
    for rule in args.rules:
        if rule == "uncertainty":
            continue
        gap = paired(scores, rule, "uncertainty")
        below = (gap["gap"] + gap["s.e."] < 0).sum()
        lines.append(
            f"- {rule}: mean {gap['gap'].mean():+.4f}; per set "
            + ", ".join(f"{n} {g:+.4f}±{s:.4f}" for n, (g, s) in gap.iterrows())
            + f"; below by more than one s.e. on {below} set(s)"
        )
    seconds = scores.groupby("rule")["seconds"].mean()
    lines += [
        "",
        "mean seconds per replay: " + ", ".join(f"{r} {s:.1f}" for r, s in seconds.items()),
    ]
    run_time = (
        f"- total run time {time.perf_counter() - start:.0f} s (cached replays count 0); the "
        f"replays' own time {scores['seconds'].sum():.0f} s (suggestions and refits)"
    )
    title = "Task-only question rules for class labels: leave-one-set-out replay"
    if args.chooser == "hierarchical":
        title += " (questions of HierarchicalAnnotation, scored by BayesianDawidSkene)"
    write_markdown_report(args.output, title, lines, [run_time], echo=True)


if __name__ == "__main__":
    main()
