r"""The defaults protocol of issue 40: a default against its simple baseline, per data set,
with a paired bootstrap interval of the difference; the leave-one-set-out judgement of a
tuning choice; the calibration gap.

**Paired difference.** Both estimators are scored on the same units (the gold tasks of a
shared set, or every task of a simulated one, pooled over its seeds); the per-unit differences
:math:`d_i = s^{\text{default}}_i - s^{\text{baseline}}_i` are resampled with replacement
(the paired bootstrap of Efron & Tibshirani 1993, ch. 16, via
``benchmarks/values/_paired.py``), and the 90% percentile interval of :math:`\bar d` is
reported. With a score where higher is better (accuracy) the default **loses beyond noise**
when the whole interval lies below 0; with a loss (absolute error) when it lies above 0.

**Leave one set out.** A tuning choice picks one candidate (a model, a setting) from scores
on several sets. For each set :math:`s`, the candidate is chosen on the other sets (by the
rule of the choice) and judged on :math:`s`: does it still reach the baseline there, and how
far is it from the best candidate there (the regret)? The count of sets where it still
reaches the baseline is what the issue asks: how often a choice made without a set holds on
it.

**Calibration gap.** Mean claimed confidence of the answer (the posterior probability of
the reported class) minus the accuracy, over the same units: > 0 is over-confidence.

Efron, B. & Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "values"))  # _paired

from _paired import PairedDifference, paired_bootstrap  # noqa: E402

__all__ = [
    "LEVEL",
    "Comparison",
    "compare",
    "calibration_gap",
    "item_concordance",
    "leave_one_set_out",
    "rows_table",
]

#: the level of the paired interval (issue 40's protocol: 90%)
LEVEL = 0.90


@dataclass(frozen=True)
class Comparison:
    """One row of the report: a default (or ``--model auto``) against the baseline on one set,
    by one metric; ``extra`` holds further columns (calibration gap, coverage, seconds)."""

    family: str
    dataset: str
    source: str  # "shared" or "simulated"
    default: str
    baseline: str
    metric: str
    higher_is_better: bool
    default_value: float
    baseline_value: float
    difference: PairedDifference
    units: int
    extra: dict = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """``"loses beyond noise"``, ``"wins beyond noise"`` or ``"within noise"``."""
        low, high = self.difference.low, self.difference.high
        if (high < 0) if self.higher_is_better else (low > 0):
            return "loses beyond noise"
        if (low > 0) if self.higher_is_better else (high < 0):
            return "wins beyond noise"
        return "within noise"


def compare(
    default_scores: np.ndarray,
    baseline_scores: np.ndarray,
    *,
    seed: int = 0,
    n_boot: int = 2000,
) -> PairedDifference:
    """The paired bootstrap :data:`LEVEL` interval of ``mean(default − baseline)`` (module
    docstring)."""
    return paired_bootstrap(
        np.asarray(default_scores, float),
        np.asarray(baseline_scores, float),
        n_boot=n_boot,
        level=LEVEL,
        seed=seed,
    )


def calibration_gap(confidence: np.ndarray, correct: np.ndarray) -> float:
    """Mean claimed confidence minus accuracy (> 0: over-confident)."""
    return float(np.mean(confidence) - np.mean(correct))


def item_concordance(scores: pd.Series, truth: pd.Series) -> np.ndarray:
    """Per item, the share of its pairs with the other items ordered as ``truth`` (a tie in
    ``scores`` counts half; an item missing from ``scores`` scores the median)."""
    s = scores.reindex(truth.index)
    s = s.fillna(s.median()).to_numpy(float)
    t = truth.to_numpy(float)
    agree = np.sign(s[:, None] - s[None, :]) * np.sign(t[:, None] - t[None, :])
    counted = t[:, None] != t[None, :]
    return ((agree + 1) / 2 * counted).sum(axis=1) / np.maximum(counted.sum(axis=1), 1)


def rows_table(rows: Sequence[Comparison], extra: Sequence[str] = ()) -> list[str]:
    """The markdown table of ``rows``: one line per (set, default, metric)."""
    head = ["set", "units", "default", "baseline", "metric", "default", "baseline"]
    head += ["Δ = default − baseline [90%]", "verdict", *extra]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        d = r.difference
        cells = [
            f"{r.dataset} ({r.source})",
            str(r.units),
            r.default,
            r.baseline,
            r.metric,
            f"{r.default_value:.4f}",
            f"{r.baseline_value:.4f}",
            f"{d.mean:+.4f} [{d.low:+.4f}, {d.high:+.4f}]",
            f"**{r.verdict}**" if r.verdict == "loses beyond noise" else r.verdict,
        ]
        cells += [_cell(name, r.extra.get(name)) for name in extra]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


#: how an extra column is written: a signed gap, a share, seconds
_FORMATS = {"gap": "{:+.3f}", "coverage": "{:.3f}", "fit s": "{:.2f}"}


def _cell(name: str, value) -> str:
    if value is None:
        return ""
    return _FORMATS.get(name, "{}").format(value)


def mean_choice(scores: Mapping[str, Mapping[str, float]], sets: Sequence[str]) -> str:
    """The candidate with the highest mean score over ``sets`` (ties: the first listed)."""
    candidates = list(next(iter(scores.values())))
    means = {c: np.mean([scores[s][c] for s in sets]) for c in candidates}
    return max(candidates, key=lambda c: (means[c], -candidates.index(c)))


def leave_one_set_out(
    title: str,
    scores: Mapping[str, Mapping[str, float]],
    baseline: Mapping[str, float],
    *,
    shipped: str,
    choose: Callable[[Mapping[str, Mapping[str, float]], Sequence[str]], str] = mean_choice,
    rule: str = "the highest mean score on the other sets",
    score_name: str = "score",
    digits: int = 4,
) -> tuple[list[str], int]:
    """The leave-one-set-out table of a tuning choice (module docstring). ``scores[set][
    candidate]`` is higher-is-better; ``baseline[set]`` the baseline's score there; ``shipped``
    the candidate the project ships. Returns the markdown lines and the number of sets on
    which the choice made without them still reaches the baseline."""
    sets = list(scores)
    lines = [
        f"### {title}",
        "",
        f"Chosen on the other sets by {rule}; judged on the one left out ({score_name}, higher "
        "is better). Shipped: " + f"`{shipped}`; chosen on every set: "
        f"`{choose(scores, sets)}`.",
        "",
        "| left out | chosen without it | its score there | baseline there | ≥ baseline | best "
        "there | regret |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    holds = 0
    for held in sets:
        chosen = choose(scores, [s for s in sets if s != held])
        value = scores[held][chosen]
        best = max(scores[held], key=scores[held].get)
        ok = value >= baseline[held] - 1e-12
        holds += ok
        lines.append(
            f"| {held} | {chosen} | {value:.{digits}f} | {baseline[held]:.{digits}f} | "
            f"{'yes' if ok else '**no**'} | {best} ({scores[held][best]:.{digits}f}) | "
            f"{scores[held][best] - value:.{digits}f} |"
        )
    lines += [
        "",
        f"A choice made without the set still reaches the baseline on it in **{holds} of "
        f"{len(sets)}** sets.",
    ]
    return lines, holds
