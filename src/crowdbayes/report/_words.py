"""The fitted model in words, for the report's first screen: what it is (the command line's
one-line help of the model, :mod:`crowdbayes._catalogue`), what kind of posterior it gives
(its ``tags.posterior``), and never its ``repr``."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..base import DIAGNOSTICS

__all__ = [
    "fit_facts",
    "model_words",
    "posterior_words",
    "sampled",
    "settings_words",
    "spread",
]

#: what each kind of posterior (``Tags.posterior``) means for the numbers of the report
_POSTERIORS = {
    "point": "point estimates (no posterior intervals)",
    "approximate": "an approximate posterior (variational, Laplace or EP): intervals from the "
    "approximation",
    "sampled": "a sampled posterior (MCMC draws): check R-hat before trusting the intervals",
}


def _catalogued(name: str) -> str | None:
    """The command line's help of the model class ``name``, without its parenthesised
    remarks; None when no command offers it."""
    from .._catalogue import FAMILIES, model_entries

    del FAMILIES  # the entries of every command, in the families' order
    helps = {
        entry.class_name: entry.help
        for command in ("cluster", "leaderboard", "prefs", "rank", "values", "labels")  # first wins
        for entry in model_entries(command)
    }
    if name not in helps:
        return None
    help = re.sub(r"\s*\([^)]*\)", "", helps[name]).strip()
    return help[:1].upper() + help[1:]


def _first_sentence(text: str | None) -> str | None:
    if not text or not text.strip():
        return None
    paragraph = " ".join(text.strip().split("\n\n", 1)[0].split())
    return paragraph.split(". ", 1)[0].rstrip(".")


def model_words(model) -> str:
    """``"Bayesian Dawid-Skene, variational Bayes"``: the model as the command line describes
    it (else the first sentence of its class's docstring, else its class name); a model that
    chose another (``model_``, e.g. ``AutoLabelModel``) adds what it chose."""
    cls = type(model)
    words = _catalogued(cls.__name__) or _first_sentence(cls.__doc__) or cls.__name__
    chosen = vars(model).get("model_")  # set only by a model that chooses among others
    if chosen is not None and chosen is not model:
        words = f"{words}; chose: {model_words(chosen)}"
    return words


def sampled(model) -> bool:
    """Whether the model's posterior is sampled (MCMC draws, with R-hat)."""
    return model.tags.posterior == "sampled"


def posterior_words(model) -> str:
    return _POSTERIORS[model.tags.posterior]


#: parameters that change how a fit is shown, not what it finds
_DISPLAY_ONLY = ("progress", "verbose")


def settings_words(model) -> str:
    """The parameters set away from their defaults, as ``name = value`` (numbers and text as
    they are, other values by their type), or ``"defaults"``."""
    import inspect

    signature = inspect.signature(type(model).__init__).parameters
    shown = []
    for name, value in model.get_params().items():
        default = signature[name].default if name in signature else inspect.Parameter.empty
        if name in _DISPLAY_ONLY or _same(value, default):
            continue
        plain = isinstance(value, (bool, int, float, str)) or value is None
        shown.append(f"{name} = {value if plain else type(value).__name__}")
    return ", ".join(shown) or "defaults"


def _same(value, default) -> bool:
    """Whether a parameter is at its default (``1`` is not ``1.0`` nor ``True``: their reprs
    differ)."""
    try:
        return bool(value == default) and repr(value) == repr(default)
    except (TypeError, ValueError):
        return value is default


def fit_facts(model) -> list[tuple[str, Any]]:
    """The model and its convergence facts (:meth:`~crowdbayes.base.Estimator.diagnostics`)."""
    rows: list[tuple[str, Any]] = [
        ("model", f"{model_words(model)} (`{type(model).__name__}`)"),
        ("settings", settings_words(model)),
    ]
    rows += [(DIAGNOSTICS[key], value) for key, value in model.diagnostics().items()]
    return rows


def spread(counts: np.ndarray) -> str:
    """``"min 1, median 4, mean 5.2, max 30"``: how counts (per worker, per model ...) spread."""
    median = float(np.median(counts))
    median_text = f"{median:,.0f}" if median == int(median) else f"{median:,.1f}"
    return (
        f"min {counts.min():,}, median {median_text}, mean {counts.mean():,.1f}, "
        f"max {counts.max():,}"
    )
