"""The machinery of the defaults report (``benchmarks/defaults/``) on one tiny simulated set:
the paired verdicts, the leave-one-set-out count, the baselines of comparisons and rankings,
and ``--model auto``'s answer as the report reads it (the chosen candidate's own fit)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "defaults"))

from _label_scenarios import LABEL_SCENARIOS, scaled, simulate_label_scenario  # noqa: E402
from _labels import default_label_model, evaluate_label_set  # noqa: E402
from _prefs import win_share  # noqa: E402
from _protocol import (  # noqa: E402
    Comparison,
    compare,
    item_concordance,
    leave_one_set_out,
)
from _rankings import borda  # noqa: E402

from crowdbayes.cli.labels import FAST_MODEL, LARGE_INPUT_LABELS  # noqa: E402
from crowdbayes.models.labels import AutoLabelModel  # noqa: E402


def _row(ours, theirs, higher=True):
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    return Comparison(
        "f", "s", "simulated", "d", "b", "m", higher, ours.mean(), theirs.mean(),
        compare(ours, theirs), len(ours),
    )  # fmt: skip


def test_verdicts_follow_the_side_of_the_paired_interval():
    rng = np.random.default_rng(0)
    base = rng.random(300) < 0.7
    better = base | (rng.random(300) < 0.5)
    assert _row(better, base).verdict == "wins beyond noise"
    assert _row(base, better).verdict == "loses beyond noise"
    assert _row(base, base).verdict == "within noise"
    # a loss metric: a larger error loses
    assert _row(better + 1.0, base, higher=False).verdict == "loses beyond noise"
    difference = compare(better, base)
    assert difference.low <= difference.mean <= difference.high


def test_leave_one_set_out_counts_the_sets_where_the_choice_still_reaches_the_baseline():
    scores = {
        "a": {"x": 0.9, "y": 0.8},
        "b": {"x": 0.9, "y": 0.7},
        "c": {"x": 0.5, "y": 0.9},
    }
    # without a or b, y has the higher mean and holds there; without c, x does and fails on c
    lines, holds = leave_one_set_out("t", scores, {"a": 0.75, "b": 0.65, "c": 0.6}, shipped="x")
    assert holds == 2
    assert any(line.startswith("| c | x | 0.5000 |") and "**no**" in line for line in lines)


def test_baselines_of_comparisons_and_rankings():
    table = pd.DataFrame(
        {"left": ["a", "a", "b"], "right": ["b", "c", "c"], "label": ["a", "equal", "b"]}
    )
    assert win_share(table).to_dict() == {"a": 0.75, "b": 0.5, "c": 0.25}
    truth = pd.Series([3.0, 2.0, 1.0], index=["a", "b", "c"])
    assert np.allclose(item_concordance(win_share(table), truth), 1.0)
    assert np.allclose(item_concordance(-truth, truth), 0.0)
    ranked = pd.DataFrame(
        {
            "query": [0, 0, 0, 1, 1],
            "item": ["a", "b", "c", "a", "c"],
            "rank": [1, np.nan, np.nan, 2, 1],
        }
    )
    # query 0: a first (1 point), b and c share positions 2–3 (1/4 each); query 1: c beats a
    assert borda(ranked).to_dict() == {"a": 0.5, "b": 0.25, "c": 0.625}


def test_the_size_rule_is_the_command_lines():
    assert default_label_model(LARGE_INPUT_LABELS - 1) == "hierarchical"
    assert default_label_model(LARGE_INPUT_LABELS) == FAST_MODEL


@pytest.mark.filterwarnings("ignore")
def test_a_tiny_simulated_set_through_the_label_machinery():
    scenario = scaled(LABEL_SCENARIOS[3], n_tasks=60, n_workers=12, per_task=4)
    draw = simulate_label_scenario(scenario, 0)
    assert draw.labels.n_labels == 240 and len(draw.truth) == 60
    fast = ("mv", "one-coin", "ds", "bayes-ds")  # the hierarchical refits would take seconds
    result = evaluate_label_set("tiny", "simulated", [(draw.labels, draw.truth)], candidates=fast)
    assert result.default == "hierarchical"
    assert set(result.correct) == {*fast, "hierarchical", "auto"}
    assert all(len(c) == 60 for c in result.correct.values())
    # the report reads --model auto as its choice's own fit: the same answer as AutoLabelModel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = AutoLabelModel(candidates=fast).fit(draw.labels)
    assert auto.choice_ == result.choices[0]
    hit = (auto.labels_.reindex(draw.truth.index) == draw.truth).to_numpy()
    np.testing.assert_array_equal(hit, result.correct["auto"].astype(bool))


def test_dynamic_overlap_stops_each_task_at_a_lead_of_two():
    """Binary labels arriving in order until one class leads by 2 (at most 5): a task keeps 2,
    4 or 5 labels, a third label only after a 1–1 split, and the rows stay in arrival order."""
    scenario = next(s for s in LABEL_SCENARIOS if s.dynamic_overlap)
    draw = simulate_label_scenario(scaled(scenario, n_tasks=200), 0)
    frame = pd.DataFrame({"task": draw.labels.task_codes, "label": draw.labels.label_codes})
    sizes = frame.groupby("task").size()
    assert set(sizes) <= {2, 4, 5} and {2, 4, 5} <= set(sizes)
    for _, labels in frame.groupby("task")["label"]:
        votes = 2 * np.cumsum(labels.to_numpy()) - np.arange(1, len(labels) + 1)
        stopped = np.flatnonzero(np.abs(votes) >= 2)
        assert len(labels) == (stopped[0] + 1 if len(stopped) else 5)
