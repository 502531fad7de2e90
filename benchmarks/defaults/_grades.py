"""The ordered-grades family of the defaults report: ``labels fit --ordered --model
ordinal-ds`` at its defaults against the majority grade, on the simulated scenarios of
:mod:`crowdbayes.models.labels._ordinal_scenarios` and the shared ordered sets (S_Adult,
S_Rel, Web), through the helpers of ``benchmarks/labels/ordinal_defaults.py`` (the same
loaders, losses and leave-one-set-out grid of the priors)."""

from __future__ import annotations

import ordinal_defaults as od

from crowdbayes.models.labels import OrdinalDawidSkene

__all__ = ["grade_sets", "evaluate_grade_set", "prior_choice_scores"]


def grade_sets(seeds: int, real: bool = True) -> dict[str, tuple[str, list]]:
    """``{name: (source, draws)}``: every simulated scenario with ``seeds`` draws and, with
    ``real``, the shared ordered sets."""
    sets = {
        s.name: ("simulated", [od.simulate_grade_scenario(s, seed) for seed in range(seeds)])
        for s in od.GRADE_SCENARIOS
    }
    if real:
        sets.update({name: ("shared", [od.load_gold_set(name)]) for name in od.REAL_SETS})
    return sets


def evaluate_grade_set(draws) -> dict:
    """Pooled per-task 0–1 loss and absolute error of the majority grade and the default,
    the default's confidence and mean fit time."""
    vote = od.majority_losses(draws)
    zero_one, absolute, confidence, seconds = od.pooled(draws, OrdinalDawidSkene)
    return {
        "majority": vote,
        "default": (zero_one, absolute),
        "confidence": confidence,
        "seconds": seconds,
    }


def prior_choice_scores(sets: dict[str, list]):
    """The grid of ``ordinal_defaults.py`` on ``sets``: ``(scores, choose, shipped)`` in the
    shape :func:`_protocol.leave_one_set_out` takes: ``scores[set][setting]`` is the margin
    over the majority grade (min over accuracy and MAE; > 0 a win), the choice is the
    benchmark's own rule (:func:`ordinal_defaults.choose`)."""
    settings, raw = od.grid_scores(sets)
    names = [od.describe(s) for s in settings]
    scores = {held: {names[i]: raw[i, held][0] for i in range(len(settings))} for held in sets}

    def choose(_scores, among):
        return names[od.choose(settings, raw, list(among))]

    defaults = OrdinalDawidSkene().get_params()
    return scores, choose, od.describe({k: defaults[k] for k in od.GRID})
