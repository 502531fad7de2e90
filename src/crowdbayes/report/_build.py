"""The quality report of a fitted model: :func:`build` returns a :class:`Report`.

The page has, in order: the summary (what was fitted, in words; how confident its answers
are; what the data checks found; what to do next), the data checks (what was normalised,
dropped or looks suspicious in the input, and what was warned while fitting); for class labels
every task's answer (a sortable table of the least confident, and the whole table as a CSV
kept in the page); the data summary; for class labels the agreement statistics among workers;
the model's results with its figures (one plain sentence under each saying how to read it,
fitting the kind of posterior the model gives) and, with gold labels, its scores; and the most
uncertain items (what to ask next). Large tables are summarised (the first rows shown), never
dumped, so a report of a million labels stays small; only the answers' CSV grows with the
tasks (about 30 bytes a task).
"""

from __future__ import annotations

import datetime
import functools
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._version import __version__
from ..data import Comparisons, Labels, Links, Rankings, as_labels
from ..data.battles import Battles
from ..data.io import write_atomically
from ..metrics import accuracy, brier_score, log_loss
from ..metrics.agreement import agreement_table, worker_agreement
from . import figures
from ._html import Page, Section, with_intervals
from ._leaderboard import leaderboard_report, summary_rows
from ._results import item_scores, task_uncertainty, worker_scores
from ._words import fit_facts, model_words, posterior_words, sampled, spread
from .figures.labels import calibration_table, expected_calibration_error

__all__ = ["Report", "build"]

#: rows of the "what to ask next" and worker tables
_ROWS = 15
#: rows of the answers table shown (the least confident first; the CSV has every task)
ANSWER_ROWS = 100
#: an answer less probable than this is "not sure" on the summary
SURE = 0.9
#: label sets above this many labels get fewer bootstrap replicates (the report stays fast)
_LARGE = 200_000


@dataclass(frozen=True)
class Report:
    """A built report: the HTML page and what it holds.

    Attributes
    ----------
    html : str
        The self-contained page.
    figures : tuple of str
        The names of the figures drawn, in order (``data-figure`` attributes of the page).
    omitted : tuple of (str, str)
        Figures not drawn and why (e.g. a model without a convergence trace).
    """

    html: str
    figures: tuple[str, ...]
    omitted: tuple[tuple[str, str], ...]

    def save(self, path: str | Path) -> None:
        """Write the page to ``path`` atomically (no partial file on failure)."""
        write_atomically([(path, lambda tmp: Path(tmp).write_text(self.html, encoding="utf-8"))])

    def __repr__(self) -> str:
        return f"Report({len(self.html):,} characters, {len(self.figures)} figures)"


def _note_text(note: Any) -> tuple[str, str]:
    if isinstance(note, warnings.WarningMessage):
        return "warning", f"{note.category.__name__}: {note.message}"
    if isinstance(note, Warning):
        return "warning", f"{type(note).__name__}: {note}"
    return "info", str(note)


def build(
    model,
    data,
    *,
    eval_gold: pd.Series | None = None,
    title: str | None = None,
    source: str | None = None,
    notes: Iterable[Any] = (),
    dropped: dict | None = None,
    fit_seconds: float | None = None,
    n_boot: int | None = None,
    random_state: Any = 0,
    categories: dict | None = None,
) -> Report:
    """The quality report of a fitted ``model`` on its ``data``, as one self-contained page.

    Parameters
    ----------
    model : Estimator
        A fitted crowdbayes model; the report reads only its public attributes and methods.
    data : Labels, Rankings, Comparisons, Battles or Links
        The data the model was fitted to (for label models also a ``task, worker, label``
        table): its summary and, for labels, the agreement statistics come from it. A
        leaderboard on :class:`~crowdbayes.data.battles.Battles` gets its own page
        (:mod:`._leaderboard`).
    eval_gold : Series, optional
        Label models: true classes indexed by task, used only to score the model (accuracy,
        log-loss, Brier score, calibration); gold tasks without labels are not scored.
    title : str, optional
        The page title (default: the model and ``source``).
    source : str, optional
        Where the data came from (a file or data set name), shown in the header.
    notes : iterable
        What was dropped or warned while loading or fitting: strings, warnings or
        ``warnings.WarningMessage`` records (from ``warnings.catch_warnings(record=True)``).
        Warnings that repeat one of the data's ``data_checks`` are shown once.
    dropped : dict, optional
        What an export reader left out, ``{reason: count}`` (rejected assignments, cancelled
        annotations, region results ...), shown with the data checks.
    fit_seconds : float, optional
        The fit's wall time, shown in the header.
    n_boot : int, optional
        Bootstrap replicates of the agreement intervals (default 1000; 200 above 200,000
        labels).
    random_state : int, Generator or None
        Seeds the bootstrap.
    categories : dict, optional
        A leaderboard on :class:`~crowdbayes.data.battles.Battles` with categories: the boards
        of each category, fitted already (by default they are fitted here).

    Returns
    -------
    Report
        ``report.html`` is the page; ``report.save(path)`` writes it atomically.
    """
    model.check_is_fitted()
    judgment = model.tags.judgment
    if judgment not in _REPORTS:
        raise ValueError(f"no report for {type(model).__name__} (judgment {judgment!r})")
    expected, describe = _REPORTS[judgment]
    if judgment == "pairs" and isinstance(data, Battles):  # a leaderboard: its own page
        expected, describe = Battles, functools.partial(leaderboard_report, categories=categories)
    if judgment == "labels" and not isinstance(data, Labels):
        data = as_labels(data)
    if not isinstance(data, expected):
        raise TypeError(
            f"a report on {type(model).__name__} needs its data as {expected.__name__}; "
            f"got {type(data).__name__}"
        )
    if eval_gold is not None and judgment != "labels":
        raise ValueError("eval_gold scores label models only")
    name = type(model).__name__
    where = f" on {source}" if source else ""
    fitted = f"; fit in {fit_seconds:.2f} s" if fit_seconds is not None else ""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = Page(
        title=title or f"crowdbayes report: {name}{where}",
        meta=f"{model_words(model)} (`{name}`){fitted}. Built {stamp} by crowdbayes {__version__}.",
        footer=(
            "Built by crowdbayes.report.build: every figure is an inlined PNG and the page makes "
            "no network request. Intervals are posterior credible intervals of the model unless "
            "labelled as bootstrap intervals."
        ),
    )
    checks = _checks(data, notes, dropped)
    summary = page.section("summary", "Summary")
    _summary(summary, model, data, checks, eval_gold)
    _data_checks(page, checks)
    describe(page, model, data, eval_gold=eval_gold, n_boot=n_boot, seed=random_state)
    return Report(page.render(), tuple(page.figures), tuple(page.omitted))


# ------------------------------------------------------------------------------ shared parts
@dataclass(frozen=True)
class _Checks:
    """What the report says about the input: the data's own checks (``data_checks``), what an
    export reader dropped, and the other notes of loading and fitting, as ``(kind, text)``."""

    found: list[tuple[str, str]]
    dropped: dict
    suspicious: list[str]

    @property
    def warnings(self) -> int:
        return sum(kind == "warning" for kind, _ in self.found)


def _checks(data, notes: Iterable[Any], dropped: dict | None) -> _Checks:
    found, seen = [], set()
    data_checks = list(getattr(data, "data_checks", None) or ())
    for check in data_checks:
        found.append(("warning" if check.warned else "info", check.message))
        seen.add(check.message)
    for note in notes:
        kind, text = _note_text(note)
        message = text.split(": ", 1)[1] if kind == "warning" and ": " in text else text
        if message not in seen:
            found.append((kind, text))
    dropped = {str(why): int(n) for why, n in (dropped or {}).items() if n}
    for why, n in dropped.items():
        found.append(("warning", f"dropped {n:,} {why}"))
    suspicious = sorted({c.kind for c in data_checks if c.warned})
    return _Checks(found, dropped, suspicious)


def _data_checks(page: Page, checks: _Checks) -> None:
    section = page.section("checks", "Data checks")
    if checks.found:
        section.paragraph(
            "What was normalised, dropped or looks suspicious in the input, and what was "
            "warned while the model was fitted (warnings highlighted):"
        )
        section.notes(checks.found)
    else:
        section.paragraph(
            "Nothing was normalised, dropped or found suspicious in the input, and no warning "
            "was raised while the model was fitted."
        )


def _summary(section: Section, model, data, checks: _Checks, eval_gold) -> None:
    """The first screen: what was fitted, how sure its answers are, what the checks found,
    what to do next."""
    judgment = model.tags.judgment
    rows: list[tuple[str, Any]] = [
        ("model", model_words(model)),
        ("estimates", posterior_words(model)),
    ]
    facts = model.diagnostics()
    next_steps = []
    if judgment == "labels":
        confidence = model.probas_.to_numpy(dtype=np.float64).max(axis=1)
        unsure = int((confidence < SURE).sum())
        rows.append(
            (
                "answers",
                f"{len(confidence):,} tasks in {model.probas_.shape[1]} classes; mean "
                f"probability of the answer {confidence.mean():.3f}",
            )
        )
        rows.append((f"answers with probability below {SURE}", f"{unsure:,}"))
        if unsure:
            next_steps.append(
                f"Ask for more labels on the {unsure:,} task{'' if unsure == 1 else 's'} whose "
                f"answer is below {SURE} "
                "(the answers table below lists the least confident first; `crowdbayes labels "
                "next` orders them by what one more label teaches the model)."
            )
        if eval_gold is None:
            next_steps.append(
                "Score the answers against known ones, if you have some: `--eval-gold FILE` "
                "(Python: `eval_gold=`) adds accuracy and a calibration figure."
            )
    if isinstance(data, Battles):
        rows += summary_rows(model, data)
    problems = len(checks.found)
    rows.append(
        (
            "data checks",
            f"{problems} finding{'' if problems == 1 else 's'} ({checks.warnings} warned)"
            if problems
            else "nothing normalised, dropped or suspicious",
        )
    )
    if checks.dropped:
        rows.append(("dropped", ", ".join(f"{n:,} {why}" for why, n in checks.dropped.items())))
    if "near_duplicate_classes" in checks.suspicious:
        next_steps.append(
            "Some classes look like typos or case variants of others (see the data checks): "
            'merge them with `--merge-classes "Dog=dog"` or declare the classes with '
            "`--classes`, then fit again."
        )
    elif checks.warnings:
        next_steps.append("Read the data checks below: the input was changed or warned about.")
    if facts.get("converged") is False:
        next_steps.append(
            "The fit stopped before it converged: raise its iteration limit and fit again."
        )
    rhat = facts.get("max_rhat")
    if rhat is not None and sampled(model) and rhat > 1.01:
        next_steps.append(
            f"The largest R-hat is {rhat:.3f} (above 1.01): the chains have not mixed; run "
            "more warm-up and draws before trusting the intervals."
        )
    if judgment != "labels":
        next_steps.append(
            "See what to ask next (at the end) for the judgments that would settle the least "
            "certain results."
        )
    section.facts(rows)
    section.paragraph("What to do next:" if next_steps else "Nothing needs doing first.")
    if next_steps:
        section.notes(("info", step) for step in next_steps)


def _convergence(section: Section, model) -> None:
    if sampled(model):
        how = (
            "The chains should overlap and wander around the same values, and every R-hat "
            "should be below about 1.01; otherwise run more warm-up and draws."
        )
    else:
        how = (
            "The objective should rise and flatten (or the largest change fall) before the "
            "fit stopped; if it is still moving, raise the iteration limit."
        )
    section.figure("convergence", lambda: figures.convergence(model), "Convergence", how)


# ------------------------------------------------------------------------------ labels
def _answers(page: Page, model, labels: Labels) -> None:
    """Every task's answer: the least confident shown (sortable), all of them as a CSV."""
    section = page.section("answers", "Answers")
    table = task_uncertainty(model, labels).sort_values("probability", kind="stable")
    table = table.rename(columns={"probability": "P(answer)"})
    table.index = pd.Index(table.index.astype(str), name=model.probas_.index.name or "task")
    section.paragraph(
        "The answer of each task and its probability under the model, the least confident "
        "first (entropy: the uncertainty of the task's class, in nats; votes: the labels it "
        "got). Click a column heading to sort by it."
    )
    section.table(table, max_rows=ANSWER_ROWS, sortable=True, anchor="answers-table")
    section.download(
        "answers.csv", _answers_csv(model), f"Download all {len(table):,} answers (CSV)"
    )


def _answers_csv(model) -> str:
    """The task id, the answer, its probability and (up to 20 classes) every class's
    probability, in the model's task order."""
    probas = model.probas_
    values = probas.to_numpy(dtype=np.float64)
    frame = pd.DataFrame(
        {"answer": model.labels_.reindex(probas.index).to_numpy(), "probability": values.max(1)},
        index=probas.index,
    )
    if values.shape[1] <= 20:
        for column, name in enumerate(probas.columns):
            frame[f"p_{name}"] = values[:, column]
    frame.index.name = probas.index.name or "task"
    return frame.to_csv(float_format="%.4g", lineterminator="\n")


def _labels_report(page, model, labels: Labels, *, eval_gold, n_boot, seed) -> None:
    _answers(page, model, labels)
    per_task = np.bincount(labels.task_codes, minlength=labels.n_tasks)
    per_worker = np.bincount(labels.worker_codes, minlength=labels.n_workers)
    shares = np.bincount(labels.label_codes, minlength=labels.n_classes) / labels.n_labels
    pairs = labels.task_codes.astype(np.int64) * labels.n_workers + labels.worker_codes
    repeated = int(pd.Series(pairs).duplicated().sum())
    section = page.section("data", "Data")
    section.facts(
        [
            ("labels", labels.n_labels),
            ("tasks", labels.n_tasks),
            ("workers", labels.n_workers),
            ("classes", ", ".join(map(str, labels.classes))),
            (
                "share of labels per class",
                ", ".join(f"{c}: {s:.3f}" for c, s in zip(labels.classes, shares, strict=True)),
            ),
            ("labels per task", spread(per_task)),
            ("labels per worker", spread(per_worker)),
            ("tasks with a single label", int((per_task == 1).sum())),
            ("labels repeating a task-worker pair", repeated),
            ("tasks clamped to a gold class", int((labels.gold_codes >= 0).sum())),
            ("tasks with gold for scoring", 0 if eval_gold is None else len(eval_gold)),
        ]
    )
    section.figure(
        "label_counts",
        lambda: figures.label_counts(labels),
        "Labels per task and per worker",
        "Left: how many labels each task got; right: how many labels each worker gave (on a "
        "log scale when the counts span more than tenfold). Workers with few labels have wide "
        "reliability intervals below.",
    )
    _agreement(page, labels, n_boot, seed)
    _label_results(page, model, labels, eval_gold)


def _agreement(page: Page, labels: Labels, n_boot: int | None, seed) -> None:
    if n_boot is None:
        n_boot = 1000 if labels.n_labels <= _LARGE else 200
    section = page.section("agreement", "Agreement among workers")
    try:
        table = agreement_table(labels, n_boot=n_boot, random_state=seed)
    except ValueError as err:
        section.paragraph(f"No agreement statistic: {err}.")
        return
    section.paragraph(
        "Chance-corrected agreement of the raw labels, before any model: 1 is perfect agreement, "
        "0 agreement at chance. Krippendorff's alpha and Fleiss' kappa use every task with two "
        "or more labels; Cohen's kappa is averaged over the worker pairs that share enough "
        f"tasks. Intervals: {n_boot} bootstrap replicates over tasks, 95%."
    )
    table = with_intervals(table, {"estimate": ("lower", "upper")})
    section.table(
        table.rename(columns={"estimate": "estimate [95% interval]", "units": "tasks or pairs"})
    )
    workers = worker_agreement(labels, n_boot=n_boot, random_state=seed)
    enough = workers[workers["n_compared"] >= 10]
    shown = enough if len(enough) else workers
    section.paragraph(
        "The workers who agree least with the majority of the other labels on their tasks "
        "(among workers with at least 10 compared labels); kappa corrects that agreement for "
        "the worker's and the majority's class shares."
    )
    columns = {name: (f"{name}_lower", f"{name}_upper") for name in ("agreement", "kappa")}
    section.table(
        with_intervals(shown.head(_ROWS), columns),
        f"{len(shown):,} workers; median agreement {shown['agreement'].median():.3f}; "
        "95% bootstrap intervals in brackets.",
        max_rows=_ROWS,
    )


def _label_results(page: Page, model, labels: Labels, eval_gold) -> None:
    section = page.section("model", "Model results")
    probas = model.probas_.to_numpy(dtype=np.float64)
    confidence = probas.max(axis=1)
    rows = fit_facts(model)
    rows.append(("mean probability of the answers", float(confidence.mean())))
    rows.append(("tasks whose answer has probability < 0.9", int((confidence < 0.9).sum())))
    section.facts(rows)
    prevalence = model.prevalence_.to_frame("estimated prevalence")
    section.table(prevalence, "The estimated share of each class among the tasks.")
    if eval_gold is not None:
        _gold_scores(section, model, eval_gold)
    section.figure(
        "worker_reliability",
        lambda: figures.worker_reliability(model),
        "Worker reliability",
        "Each dot is a worker's estimated reliability with its credible interval (bars), the "
        "workers with the most labels sorted from least reliable (bottom) to most; right, every "
        "worker against their number of labels: unreliable workers with many labels matter most.",
    )
    section.figure(
        "confusion_matrices",
        lambda: figures.confusion_matrices(model),
        "Confusion matrices",
        "Row c, column k is the probability that a worker labels a task of true class c as k: "
        "a dark diagonal means reliable labels, dark cells off it are systematic confusions.",
    )
    section.figure(
        "class_probabilities",
        lambda: figures.class_probabilities(model),
        "Posterior class probabilities",
        "How sure the model is of each task's answer: tasks near 1 are settled, tasks near "
        "1/K would benefit from more labels (listed below).",
    )
    if eval_gold is not None:
        section.figure(
            "calibration",
            lambda: figures.calibration(model, eval_gold),
            "Calibration against gold",
            "Points on the dashed diagonal mean the probabilities can be taken at face value; "
            "points below it mean the model is over-confident at that probability.",
        )
    _convergence(section, model)
    scores = worker_scores(model).sort_values("reliability", kind="stable").head(_ROWS)
    columns = {"reliability": ("lower", "upper")}
    columns.update({n: (f"{n}_lower", f"{n}_upper") for n in ("sensitivity", "specificity")})
    section.paragraph(
        "The least reliable workers under the model (reliability: the probability that their "
        "label is right; credible intervals in brackets):"
    )
    section.table(with_intervals(scores, columns), max_rows=_ROWS)
    ask = page.section("next", "What to ask next")
    ask.paragraph(
        "The tasks where one more label teaches the model most (`model.suggest`: the expected "
        "information gain about the task's class, in nats, from a typical worker's label), with "
        "their current answer, its probability, the posterior entropy and the votes; "
        "`crowdbayes labels next` writes such a list."
    )
    questions = model.suggest(_ROWS, random_state=0).set_index("task")
    table = task_uncertainty(model, labels).loc[questions.index]
    table.insert(0, "information gain", questions["score"].to_numpy())
    ask.table(table, max_rows=_ROWS)


def _gold_scores(section: Section, model, gold: pd.Series) -> None:
    known = gold.index.isin(model.labels_.index)
    scored = gold[known]
    if scored.empty:
        section.paragraph("No gold task has labels: nothing to score.", "note")
        return
    table = calibration_table(model, scored)
    rows = [
        ("gold tasks scored", len(scored)),
        ("accuracy", accuracy(scored, model.labels_)),
        ("log-loss", log_loss(scored, model.probas_)),
        ("Brier score", brier_score(scored, model.probas_)),
        ("expected calibration error", expected_calibration_error(table)),
    ]
    missing = int((~known).sum())
    if missing:
        rows.append(("gold tasks without labels (not scored)", missing))
    section.paragraph("Scores against the gold labels (used only for scoring):")
    section.facts(rows)


# ------------------------------------------------------------------------------ rankings
def _item_frame(data: Rankings, items: pd.Index) -> pd.DataFrame | None:
    """The features of ``items`` as a table indexed by item (Plackett–Luce with features)."""
    if data.X is None:
        return None
    rows = data.item_ids.get_indexer(items)
    return pd.DataFrame(data.X[rows], index=items, columns=list(data.features.names))


def _neighbour_pairs(model, scores: pd.DataFrame, items: pd.DataFrame | None) -> pd.DataFrame:
    """Consecutive items of the ranking (among the best 30) whose order is least certain."""
    top = scores.head(30).index
    left, right = top[:-1], top[1:]
    if len(left) == 0:
        return pd.DataFrame(columns=["better", "worse", "P(better beats worse)"])
    if items is not None:
        p = model.predict_proba(left.to_numpy(), right.to_numpy(), items)
    else:
        p = model.predict_proba(left.to_numpy(), right.to_numpy())
    table = pd.DataFrame(
        {
            "position": np.arange(1, len(left) + 1),
            "better": left,
            "worse": right,
            "P(better beats worse)": np.asarray(p, dtype=np.float64),
        }
    )
    order = np.argsort(np.abs(table["P(better beats worse)"].to_numpy() - 0.5), kind="stable")
    return table.iloc[order].set_index("position")


def _ranked_parts(page: Page, model, data, items: pd.DataFrame | None) -> None:
    section = page.section("model", "Model results")
    section.facts(fit_facts(model))
    scores = item_scores(model)
    section.figure(
        "ranked_items",
        lambda: figures.ranked_items(model),
        "Ranked items",
        "The best items with 90% intervals on their score, best at the top: items whose bars "
        "overlap cannot be told apart by the data; right, every item's score against its "
        "uncertainty.",
    )
    section.figure(
        "feature_weights",
        lambda: figures.feature_weights(model),
        "Feature weights" if model.tags.judgment == "rankings" else "Length-scales",
        "Plackett-Luce: a weight whose interval excludes 0 makes items with more of that "
        "feature more (right) or less (left) likely to be chosen. GP: a shorter length-scale "
        "means the utility changes faster along that feature, so it matters more.",
    )
    _convergence(section, model)
    section.paragraph("The best items (score: posterior mean [90% interval] and sd):")
    section.table(with_intervals(scores.head(_ROWS), {"mean": ("lower", "upper")}), max_rows=_ROWS)
    ask = page.section("next", "What to ask next")
    ask.paragraph(
        "Neighbouring items near the top of the ranking whose order is least certain "
        "(probability closest to 0.5): comparing these directly sharpens the ranking most."
    )
    ask.table(_neighbour_pairs(model, scores, items).head(10), max_rows=10)


def _ranking_report(page, model, data: Rankings, *, eval_gold, n_boot, seed) -> None:
    sizes = np.diff(data.stage_offsets)
    section = page.section("data", "Data")
    features = [] if data.features is None else list(data.features.names)
    section.facts(
        [
            ("queries", data.n_queries),
            ("items", data.n_items),
            ("choices (top-queries)", data.n_stages),
            ("items per choice", spread(sizes)),
            ("workers", len(data.worker_ids)),
            (
                "item features",
                f"{len(features)}: {', '.join(features[:12])}" if features else "none",
            ),
        ]
    )
    items = None
    if data.X is not None and model.tags.features != "none":
        items = _item_frame(data, item_scores(model).head(30).index)
    _ranked_parts(page, model, data, items)


# ------------------------------------------------------------------------------ preferences
def _comparison_facts(page: Page, data: Comparisons) -> None:
    per_worker = np.bincount(data.worker_codes, minlength=max(data.n_workers, 1))
    section = page.section("data", "Data")
    features = list(data.feature_names) if data.feature_names is not None else []
    section.facts(
        [
            ("comparisons", data.n_comparisons),
            ("items (compared)", f"{data.n_items:,} ({len(data.compared_items()):,})"),
            ("workers", data.n_workers),
            ("comparisons per worker", spread(per_worker)),
            ("ties", int((data.outcome == 0).sum())),
            ("won by the left item", f"{float((data.outcome > 0).mean()):.3f}"),
            ("item features", len(features)),
        ]
    )


def _pairs_report(page, model, data: Comparisons, **options) -> None:
    """A model of comparisons: its communities of workers where it has them (``worker_groups_``),
    else its item scores."""
    if model.worker_groups_ is not None:
        _communities_report(page, model, data, **options)
    else:
        _preference_report(page, model, data, **options)


def _preference_report(page, model, data: Comparisons, *, eval_gold, n_boot, seed) -> None:
    _comparison_facts(page, data)
    _ranked_parts(page, model, data, None)


def _communities_report(page, model, data: Comparisons, *, eval_gold, n_boot, seed) -> None:
    from ..models.communities import communities_table

    _comparison_facts(page, data)
    section = page.section("model", "Model results")
    rows = fit_facts(model)
    sizes = model.partition_.value_counts()
    rows.append(("communities (point partition)", len(sizes)))
    rows.append(("most probable number of communities", int(model.n_communities_.idxmax())))
    section.facts(rows)
    section.figure(
        "community_members",
        lambda: figures.community_members(model),
        "Communities",
        "Dark blocks on the diagonal are groups of workers who agree; a light or patchy block is "
        "a community the data do not pin down. The bars give the communities' sizes and the "
        "posterior of their number.",
    )
    section.figure(
        "community_utilities",
        lambda: figures.community_utilities(model),
        "What each community prefers",
        "Each column is a community (its size below): red items are preferred, blue ones "
        "disliked; rows whose colours differ across columns are where communities disagree.",
    )
    _convergence(section, model)
    table = communities_table(model)
    ask = page.section("next", "What to ask next")
    ask.paragraph(
        "The workers whose community is least certain (confidence: the mean posterior "
        "probability of sharing a community with its other members): more of their comparisons "
        "place them best."
    )
    ask.table(table.sort_values("confidence", kind="stable").head(_ROWS), max_rows=_ROWS)


# ------------------------------------------------------------------------------ clustering
def _clustering_report(page, model, data: Links, *, eval_gold, n_boot, seed) -> None:
    per_worker = np.bincount(data.worker_codes, minlength=data.n_workers)
    section = page.section("data", "Data")
    observed = "none" if data.observations is None else f"shape {data.observations.shape}"
    section.facts(
        [
            ("links", data.n_links),
            ("must-links", int(data.labels.sum())),
            ("workers", data.n_workers),
            ("links per worker", spread(per_worker)),
            ("items (linked)", f"{data.n_items:,} ({len(data.linked_codes):,})"),
            ("item observations", observed),
        ]
    )
    section = page.section("model", "Model results")
    rows = fit_facts(model)
    rows.append(("clusters used", int(model.n_clusters_used_)))
    section.facts(rows)
    sizes = model.assignments_.value_counts().rename("items").rename_axis("cluster").to_frame()
    section.table(sizes, "Items per cluster.", max_rows=_ROWS)
    section.figure(
        "cluster_embedding",
        lambda: figures.cluster_embedding(model, data),
        "Clusters",
        "Each dot is an item placed in two dimensions and coloured by its cluster; faint dots are "
        "items whose cluster has probability below 0.9.",
    )
    section.figure(
        "worker_alpha_beta",
        lambda: figures.worker_alpha_beta(model),
        "Workers",
        "Good workers sit in the top-right corner (they link items of the same cluster and "
        "separate different ones); a worker near the cross at (0.5, 0.5) answers at random.",
    )
    _convergence(section, model)
    workers = model.workers_.sort_values("alpha", kind="stable").head(_ROWS)
    workers = with_intervals(
        workers.drop(columns=["alpha_sd", "beta_sd"], errors="ignore"),
        {n: (f"{n}_lower", f"{n}_upper") for n in ("alpha", "beta")},
    )
    section.paragraph("The workers with the lowest sensitivity α (credible intervals in brackets):")
    section.table(workers, max_rows=_ROWS)
    unsure = model.item_table().sort_values("probability", kind="stable")
    ask = page.section("next", "What to ask next")
    ask.paragraph(
        "The items whose cluster is least certain: links between these and items of the "
        "candidate clusters settle them."
    )
    ask.table(unsure.head(_ROWS), max_rows=_ROWS)


#: the report of each kind of judgment (the model's ``tags.judgment``): its data and sections
_REPORTS = {
    "labels": (Labels, _labels_report),
    "rankings": (Rankings, _ranking_report),
    "pairs": (Comparisons, _pairs_report),
    "links": (Links, _clustering_report),
}
