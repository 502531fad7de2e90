"""The one estimator contract: parameters, validation, fitted state, randomness, save and load.

Every model in crowdbayes derives from :class:`Estimator` (scikit-learn's ``BaseEstimator`` is
the model for it):

- **parameters are exactly the keyword arguments of** ``__init__``, stored unchanged under the
  same names; :meth:`~Estimator.get_params`, :meth:`~Estimator.set_params` and :func:`clone` work
  from the signature, and ``repr`` shows the parameters that differ from their defaults;
- each class declares ``parameter_constraints`` (name → list of accepted :class:`Interval`,
  :class:`Options`, types or ``None``); :meth:`~Estimator.check_params`, called first by every
  ``fit``, raises a ``ValueError`` that names the parameter, what it accepts and what it got;
- fitted results are attributes ending in ``_``; asking for them before ``fit`` raises
  :class:`~crowdbayes.exceptions.NotFittedError`;
- randomness comes only from the ``random_state`` parameter (an int, a ``SeedSequence``, a
  ``numpy.random.Generator`` or None), resolved once per fit by :meth:`~Estimator.random_generator`;
- :meth:`~Estimator.save` writes parameters and fitted state in the one model file format
  (:mod:`crowdbayes.persistence`, no pickle) and :func:`load` restores any estimator from it; the
  registry of classes it may build is filled by subclassing;
- what a model can do is said by its capability :class:`Tags` (``Model.tags``, in the manner of
  scikit-learn's estimator tags), which the command line, the report and the tests read instead
  of class names and attribute probes; a class declares what differs from its bases in a
  ``_tags`` dict, merged along the class hierarchy;
- :meth:`~Estimator.diagnostics` and :meth:`~Estimator.convergence_traces` give the fit's
  convergence facts and traces under the same names for every model (each class declares
  which of its results they are).

The results and predictions of each kind of judgment (labels, values, rankings, pairwise
scores, clusters) are fixed once by the role bases of :mod:`crowdbayes.roles`, between this
class and the model families.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import numbers
import os
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from . import persistence
from ._utils import as_generator
from ._version import __version__
from .exceptions import NotFittedError

__all__ = [
    "Estimator",
    "OptionalResult",
    "Tags",
    "DIAGNOSTICS",
    "Interval",
    "Options",
    "PositivePair",
    "POSITIVE",
    "NON_NEGATIVE",
    "POSITIVE_INT",
    "NON_NEGATIVE_INT",
    "OPEN_UNIT",
    "RANDOM_STATE",
    "TOLERANCE",
    "clone",
    "load",
    "list_models",
    "check_is_fitted",
]

#: every concrete estimator class, by class name (filled by ``Estimator.__init_subclass__``)
_REGISTRY: dict[str, type[Estimator]] = {}

#: the model packages, imported by :func:`list_models` and :func:`load` (the deep models need
#: torch and are skipped by ``list_models`` when it is missing)
_FAMILIES = (
    "crowdbayes.models.labels",
    "crowdbayes.models.plackett_luce",
    "crowdbayes.models.gp_preference",
    "crowdbayes.models.comparisons",
    "crowdbayes.models.communities",
    "crowdbayes.models.clustering",
    "crowdbayes.models.clustering.deep",
)
_OPTIONAL_FAMILIES = {"crowdbayes.models.clustering.deep": "torch"}


# ------------------------------------------------------------------------- constraints
@dataclass(frozen=True)
class Interval:
    """Numbers of ``kind`` (``numbers.Integral`` or ``numbers.Real``) in a range.

    ``closed`` says which ends belong to it: ``"both"``, ``"left"``, ``"right"`` or
    ``"neither"``; ``None`` for an end means unbounded.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    closed: str = "both"

    def accepts(self, value: Any) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        if (
            isinstance(value, numbers.Real)
            and not isinstance(value, numbers.Integral)  # ints of any size are finite
            and not np.isfinite(value)
        ):
            return False  # NaN, and infinity (outside every interval with finite or no bounds)
        low_ok = (
            self.low is None
            or value > self.low
            or (value == self.low and self.closed in ("both", "left"))
        )
        high_ok = (
            self.high is None
            or value < self.high
            or (value == self.high and self.closed in ("both", "right"))
        )
        return bool(low_ok and high_ok)

    def describe(self) -> str:
        kind = "an integer" if self.kind is numbers.Integral else "a number"
        if self.low is None and self.high is None:
            return kind
        left = "[" if self.closed in ("both", "left") and self.low is not None else "("
        right = "]" if self.closed in ("both", "right") and self.high is not None else ")"
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"
        return f"{kind} in {left}{low}, {high}{right}"

    def invalid_value(self) -> Any:
        """A value this constraint refuses (for the shared estimator test)."""
        if self.low is not None:
            return self.low - 1 if self.closed in ("both", "left") else self.low
        if self.high is not None:
            return self.high + 1 if self.closed in ("both", "right") else self.high
        return "not-a-number"


@dataclass(frozen=True)
class Options:
    """One of a fixed set of values (compared with ``==``; strings usually)."""

    values: tuple

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", tuple(values))

    def accepts(self, value: Any) -> bool:
        return any(type(value) is type(v) and value == v for v in self.values)

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)

    def invalid_value(self) -> Any:
        return "no-such-option"


@dataclass(frozen=True)
class PositivePair:
    """Two positive finite numbers, as a tuple, a list or an array: the parameters of a Beta
    or Gamma prior (``(a, b)``, ``(shape, rate)``)."""

    def accepts(self, value: Any) -> bool:
        if isinstance(value, (str, bytes)):
            return False
        try:
            pair = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            return False
        return pair.shape == (2,) and bool(np.all(np.isfinite(pair)) and np.all(pair > 0))

    def describe(self) -> str:
        return "two positive numbers"

    def invalid_value(self) -> Any:
        return (1.0, 0.0)


Real, Integral = numbers.Real, numbers.Integral
#: the usual constraints, by meaning
POSITIVE = Interval(Real, 0, None, "neither")
NON_NEGATIVE = Interval(Real, 0, None)
POSITIVE_INT = Interval(Integral, 1, None)
NON_NEGATIVE_INT = Interval(Integral, 0, None)
OPEN_UNIT = Interval(Real, 0, 1, "neither")
#: accepted by a ``random_state`` parameter
RANDOM_STATE = [NON_NEGATIVE_INT, np.random.Generator, np.random.SeedSequence, None]
#: a convergence tolerance (None: run every iteration)
TOLERANCE = [NON_NEGATIVE, None]


def _accepts(constraint: Any, value: Any) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, type):
        if constraint is bool:
            return isinstance(value, (bool, np.bool_))
        return isinstance(value, constraint) and not (
            constraint in (numbers.Real, numbers.Integral, int, float)
            and isinstance(value, (bool, np.bool_))
        )
    if callable(getattr(constraint, "accepts", None)):
        return constraint.accepts(value)
    raise TypeError(f"unknown parameter constraint {constraint!r}")


def _describe(constraint: Any) -> str:
    if constraint is None:
        return "None"
    if isinstance(constraint, type):
        names = {
            bool: "True or False",
            str: "a string",
            numbers.Real: "a number",
            numbers.Integral: "an integer",
            np.random.Generator: "a numpy Generator",
            np.random.SeedSequence: "a SeedSequence",
            np.ndarray: "an array",
            tuple: "a tuple",
            list: "a list",
            dict: "a dict",
        }
        return names.get(constraint, f"a {constraint.__name__}")
    return constraint.describe()


# ------------------------------------------------------------------------- capability tags
#: the kinds of judgment a model can fit (``Tags.judgment``)
JUDGMENTS = ("labels", "values", "rankings", "pairs", "links")


@dataclass(frozen=True)
class Tags:
    """What a model can do, declared by its class (scikit-learn's estimator tags are the model).

    The command line, the report and the tests read these instead of asking which class they
    hold. A class declares what differs from its bases in a ``_tags`` dict; ``Model.tags`` is
    the merge along its class hierarchy (bases first).

    Attributes
    ----------
    judgment : str
        The kind of judgment it fits: ``"labels"`` (class labels), ``"values"`` (numbers),
        ``"rankings"`` (rankings and choices), ``"pairs"`` (pairwise comparisons) or
        ``"links"`` (must-link / cannot-link judgments); fixed by its role
        (:mod:`crowdbayes.roles`).
    features : str
        Item (or task) features: ``"none"`` (not used), ``"optional"`` or ``"required"``.
    new_items : bool
        Predicts items not seen in fit from their features.
    worker_features : bool
        Takes features of the workers.
    posterior : str
        ``"point"`` (an estimate), ``"approximate"`` (variational, Laplace, EP: credible
        intervals from an approximation) or ``"sampled"`` (MCMC draws, with R-hat).
    warm_start : bool
        ``fit(data, init=previous)`` starts from a previous fit (a model or its file).
    partial_fit : bool
        ``partial_fit(new_data)`` updates a fitted model with new data only.
    dask : bool
        Fits on a Dask cluster (:func:`crowdbayes.distributed.fit_distributed`).
    suggest : bool
        ``suggest(n, ...)`` says which questions to ask next.
    personal_questions : bool
        ``suggest(..., available=workers)`` also says whom to ask.
    personal_predictions : bool
        Predicts for each worker (``predict_proba(..., workers=...)``), not only for the crowd.
    needs_gold : bool
        Needs some known answers (``gold``) to fit.
    case_weights : bool
        Fits weighted judgments: a query of ``Rankings(..., weight=...)`` counts its weight
        times in the likelihood (importance weights of a designed sample); the others refuse
        weights.
    ordered_classes : bool
        Models ordered grades (takes only ``Labels(..., ordered=True)``).
    min_workers : int
        The fewest distinct workers it can fit.
    requires : tuple of str
        Optional packages it needs (``("torch",)``).
    """

    judgment: str = ""
    features: str = "none"
    new_items: bool = False
    worker_features: bool = False
    posterior: str = "point"
    warm_start: bool = False
    partial_fit: bool = False
    dask: bool = False
    suggest: bool = False
    personal_questions: bool = False
    personal_predictions: bool = False
    needs_gold: bool = False
    case_weights: bool = False
    ordered_classes: bool = False
    min_workers: int = 1
    requires: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.judgment not in ("", *JUDGMENTS):
            raise ValueError(f"Tags: judgment must be one of {JUDGMENTS}; got {self.judgment!r}")
        if self.features not in ("none", "optional", "required"):
            raise ValueError(
                f"Tags: features must be none, optional or required; got {self.features!r}"
            )
        if self.posterior not in ("point", "approximate", "sampled"):
            raise ValueError(
                f"Tags: posterior must be point, approximate or sampled; got {self.posterior!r}"
            )


def _merged_tags(cls: type) -> Tags:
    """The tags of ``cls``: every ``_tags`` dict of its hierarchy, bases first."""
    names = {f.name for f in fields(Tags)}
    merged: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        declared = klass.__dict__.get("_tags", {})
        unknown = set(declared) - names
        if unknown:
            raise TypeError(f"{klass.__name__}._tags: unknown tag(s) {sorted(unknown)}")
        merged.update(declared)
    return replace(Tags(), **merged)


#: the convergence facts a model may report (:meth:`Estimator.diagnostics`), with the words the
#: command line and the report show for each
DIAGNOSTICS = {
    "iterations": "iterations",
    "converged": "converged",
    "chains": "chains",
    "sweeps": "sweeps per chain",
    "draws": "recorded draws per chain",
    "warmup": "warm-up draws per chain",
    "max_rhat": "largest R-hat",
    "rhat_n_communities": "R-hat of the number of communities",
    "eta": "prior precision η (chosen)",
    "lower_bound": "lower bound",
    "log_marginal_likelihood": "log marginal likelihood",
    "log_posterior": "log posterior",
    "elbo": "ELBO",
    "ties_dropped": "ties dropped",
    "best_epoch": "epoch kept (its bound the best)",
    "restarts": "restarts run",
    "collapsed_restarts": "restarts that collapsed",
}


# ------------------------------------------------------------------------- optional results
class OptionalResult:
    """A result that some models of a role hold and others do not (``sensitivity_`` of a label
    model of two classes, say): what the fit set, None on a fitted model that has none, and —
    as every result — :class:`~crowdbayes.exceptions.NotFittedError` before ``fit``. Declared
    once by the role, so that nobody above the models needs to ask whether a model has it."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, model: Any, owner: type | None = None) -> Any:
        if model is None:
            return self
        if not model.is_fitted():
            return model.__getattr__(self.name)  # raises NotFittedError naming the model
        return None  # the fit set no value (a value set is found before this descriptor)


# ------------------------------------------------------------------------- the base class
class Estimator:
    """Base class of every crowdbayes model (module docstring).

    Subclasses define ``__init__`` with keyword parameters only stored as attributes of the same
    name, declare ``parameter_constraints``, call :meth:`check_params` at the start of ``fit``
    and set their results as attributes ending in ``_``.
    """

    #: parameter name -> list of accepted values (see :func:`_accepts`)
    parameter_constraints: ClassVar[dict[str, list]] = {}
    #: the model family (``labels``, ``plackett_luce``, ``gp_preference``, ``comparisons``,
    #: ``communities``, ``clustering``), from the module path
    family: ClassVar[str] = ""
    #: attributes left out of a saved file (caches rebuilt on demand)
    _transient: ClassVar[tuple[str, ...]] = ()
    #: parameters added after model files were first written: name -> the value that gives
    #: the behaviour of the model those older files were fitted as (filled in when loading a
    #: file that lacks it)
    _added_params: ClassVar[dict[str, Any]] = {}
    #: what the model can do (class docstring of :class:`Tags`), merged from ``_tags``
    tags: ClassVar[Tags] = Tags()
    #: the tags this class declares, beyond those of its bases
    _tags: ClassVar[dict[str, Any]] = {}
    #: its convergence facts: :data:`DIAGNOSTICS` key -> the result (or parameter) holding it
    _diagnostics: ClassVar[dict[str, str]] = {}
    #: the traces its fit keeps: result name -> what it traces (the objective first)
    _traces: ClassVar[dict[str, str]] = {}
    #: the results holding R-hat values (see :meth:`rhat`)
    _rhats: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        parts = cls.__module__.split(".")
        if len(parts) > 2 and parts[:2] == ["crowdbayes", "models"]:
            cls.family = parts[2]
        cls.tags = _merged_tags(cls)
        persistence.persistable(cls)
        if cls.__name__.startswith("_") or inspect.isabstract(cls):
            return
        if cls.__dict__.get("_abstract", False):
            return
        known = _REGISTRY.get(cls.__name__)
        if known is not None and known.__module__ != cls.__module__:
            raise TypeError(
                f"two estimator classes are named {cls.__name__}: {known.__module__} and "
                f"{cls.__module__}"
            )
        _REGISTRY[cls.__name__] = cls

    # ----------------------------------------------------------------- parameters
    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        names = []
        for name, parameter in signature.parameters.items():
            if name == "self":
                continue
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                stars = "*" if parameter.kind == parameter.VAR_POSITIONAL else "**"
                raise TypeError(
                    f"{cls.__name__}.__init__ takes {stars}{name}: an estimator's parameters "
                    "must be named keyword arguments"
                )
            names.append(name)
        return names

    @classmethod
    def _defaults(cls) -> dict[str, Any]:
        signature = inspect.signature(cls.__init__)
        return {
            name: p.default
            for name, p in signature.parameters.items()
            if name != "self" and p.default is not inspect.Parameter.empty
        }

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters, by name, as passed to ``__init__`` (``deep`` is accepted for
        scikit-learn compatibility; crowdbayes estimators do not nest)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Estimator:
        """Set parameters by name; returns ``self``. Unknown names raise ``ValueError``."""
        names = self._param_names()
        for name, value in params.items():
            if name not in names:
                raise ValueError(
                    f"{type(self).__name__} has no parameter {name!r}; its parameters are "
                    f"{', '.join(names)}"
                )
            setattr(self, name, value)
        return self

    def check_params(self) -> None:
        """Raise ``ValueError`` naming the first parameter outside its constraints.

        Subclasses with rules that tie parameters together extend this (calling ``super()``).
        """
        for name in self._param_names():
            constraints = self.parameter_constraints.get(name)
            if constraints is None:
                continue
            value = getattr(self, name)
            if not any(_accepts(c, value) for c in constraints):
                accepted = " or ".join(_describe(c) for c in constraints)
                raise ValueError(
                    f"{type(self).__name__}: parameter {name!r} must be {accepted}; got {value!r}"
                )

    def __repr__(self) -> str:
        defaults = self._defaults()
        shown = [
            f"{name}={value!r}"
            for name, value in self.get_params().items()
            if name not in defaults or not _same(value, defaults[name])
        ]
        return f"{type(self).__name__}({', '.join(shown)})"

    # ----------------------------------------------------------------- randomness
    def get_tags(self) -> Tags:
        """The tags of this model (its class's: :attr:`tags`)."""
        return type(self).tags

    def random_generator(self) -> np.random.Generator:
        """The generator of one fit: ``numpy.random.default_rng(random_state)``, or the given
        Generator itself (which the fit then advances, as in scikit-learn)."""
        return as_generator(getattr(self, "random_state", None))

    # ----------------------------------------------------------------- fitted state
    def __getattr__(self, name: str):
        """Only reached when ``name`` is not an attribute: a result (``name_``) asked of a model
        not fitted yet raises :class:`NotFittedError` naming the model."""
        if name.endswith("_") and not name.startswith("_") and not self.is_fitted():
            model = type(self).__name__
            raise NotFittedError(
                f"{model} is not fitted yet: call {model}.fit(...) first (asked for {name!r})"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def is_fitted(self) -> bool:
        """True once ``fit`` has set a result (an attribute ending in ``_``)."""
        return any(name.endswith("_") and not name.startswith("_") for name in vars(self))

    def check_is_fitted(self) -> None:
        """Raise :class:`NotFittedError` naming the estimator if it has not been fitted."""
        if not self.is_fitted():
            name = type(self).__name__
            raise NotFittedError(f"{name} is not fitted yet: call {name}.fit(...) first")

    # ----------------------------------------------------------------- convergence
    def diagnostics(self) -> dict[str, Any]:
        """The fit's convergence facts under the names of :data:`DIAGNOSTICS` (iterations,
        converged, largest R-hat, lower bound, ...): those this model reports, from the results
        its class declares in ``_diagnostics`` (a fact the fit left undecided, such as
        ``converged`` for a sampler, is left out)."""
        self.check_is_fitted()
        facts = {}
        for key, attribute in _declared(type(self), "_diagnostics").items():
            value = getattr(self, attribute)
            if value is None:
                continue
            if isinstance(value, (bool, np.bool_)):
                facts[key] = bool(value)
            elif isinstance(value, numbers.Integral):
                facts[key] = int(value)
            else:
                facts[key] = float(value)
        return facts

    def convergence_traces(self) -> list[tuple[str, str, np.ndarray]]:
        """``(name, label, values)`` of every trace the fit keeps (its class declares them in
        ``_traces``, the monitored objective first): 1-D per iteration, or 2-D (chains ×
        draws; chains of unequal length cut to the shortest)."""
        self.check_is_fitted()
        traces = []
        for attribute, label in _declared(type(self), "_traces").items():
            values = getattr(self, attribute)
            if values is None:
                continue
            if len(values) and np.ndim(values[0]) == 1:  # one sequence per chain
                length = min(len(chain) for chain in values)
                values = [np.asarray(chain[:length], dtype=np.float64) for chain in values]
            traces.append((attribute, label, np.asarray(values, dtype=np.float64)))
        return traces

    def rhat(self):
        """Every finite R-hat the fit reports (a Series by quantity; empty for a model that
        does not sample): its diagnostics tables (an ``rhat`` column), per-parameter R-hat
        tables and single values, as its class declares them in ``_rhats``."""
        import pandas as pd

        self.check_is_fitted()
        parts = []
        for attribute in _declared(type(self), "_rhats"):
            value = getattr(self, attribute)
            if isinstance(value, pd.DataFrame) and "rhat" in value.columns:
                parts.append(value["rhat"].astype(np.float64).rename(index=str))
            elif isinstance(value, pd.DataFrame):
                flat = value.to_numpy(dtype=np.float64).ravel()
                names = [f"{attribute[:-1]}[{i}]" for i in range(len(flat))]
                parts.append(pd.Series(flat, index=names))
            elif value is not None:
                parts.append(pd.Series([float(value)], index=[attribute[:-1]]))
        if not parts:
            return pd.Series([], dtype=np.float64)
        values = pd.concat(parts)
        return values[np.isfinite(values.to_numpy())]

    def _get_state(self) -> dict[str, Any]:
        """Everything ``fit`` set (every attribute that is not a parameter), for saving."""
        params = set(self._param_names())
        return {
            name: value
            for name, value in vars(self).items()
            if name not in params and name not in self._transient
        }

    def _set_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`_get_state` returned (after ``__init__`` with the parameters)."""
        for name, value in state.items():
            setattr(self, name, value)

    # ----------------------------------------------------------------- save and load
    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Write the parameters and fitted state to ``path`` in the one model file format
        (an ``.npz`` of arrays plus a JSON header; never pickle; written atomically). Restore
        with :func:`crowdbayes.load` or ``type(model).load(path)``.

        An existing file is refused unless ``overwrite=True``; the parent directory must
        exist."""
        self.check_is_fitted()
        target = Path(path)
        if not overwrite and (target.exists() or target.is_symlink()):
            raise FileExistsError(f"{target} exists; pass overwrite=True to replace it")
        if not target.parent.is_dir():
            raise FileNotFoundError(f"cannot save to {target}: no directory {target.parent}")
        persistence.write_model_file(
            path,
            type(self),
            self.get_params(),
            self._get_state(),
            __version__,
            overwrite=overwrite,
            make_parents=False,
        )

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_bytes: int | None = None) -> Estimator:
        """The estimator saved at ``path``; refused if it is not a ``cls`` (``max_bytes``: as
        for :func:`load`)."""
        model = load(path, max_bytes=max_bytes)
        if not isinstance(model, cls):
            raise ValueError(
                f"{path} holds a {type(model).__name__} model; expected a {cls.__name__}"
            )
        return model


def _declared(cls: type, attribute: str) -> dict | tuple:
    """A declaration (``_diagnostics``, ``_traces``, ``_rhats``) merged along the class
    hierarchy, the most derived class's entries first."""
    merged: dict = {}
    for klass in cls.__mro__:
        declared = klass.__dict__.get(attribute, ())
        items = declared.items() if isinstance(declared, dict) else ((k, None) for k in declared)
        for key, value in items:
            merged.setdefault(key, value)
    return merged if attribute != "_rhats" else tuple(merged)


def _same(a: Any, b: Any) -> bool:
    """Whether a parameter value equals its default (arrays element-wise, NaN-safe)."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return bool(np.array_equal(np.asarray(a), np.asarray(b)))
        except (TypeError, ValueError):
            return False
    try:
        return type(a) is type(b) and bool(a == b)
    except (TypeError, ValueError):
        return False


def check_is_fitted(estimator: Estimator) -> None:
    """Raise :class:`NotFittedError` if ``estimator`` has not been fitted."""
    estimator.check_is_fitted()


def clone(estimator: Estimator) -> Estimator:
    """A new, unfitted estimator with the same parameters (deep-copied)."""
    params = {name: copy.deepcopy(value) for name, value in estimator.get_params().items()}
    return type(estimator)(**params)


# ------------------------------------------------------------------------- the registry
def _import_families(skip_missing: bool) -> None:
    """Import every model (the family packages may import their models on first use); with
    ``skip_missing``, those whose optional package is missing are left out."""
    optional = set(_OPTIONAL_FAMILIES.values())

    def missing(err: ImportError) -> bool:
        return skip_missing and any(package in str(err) for package in optional)

    for module in _FAMILIES:
        try:
            package = importlib.import_module(module)
        except ImportError as err:
            if module not in _OPTIONAL_FAMILIES or not missing(err):
                raise
            continue
        for name in getattr(package, "__all__", ()):
            try:
                getattr(package, name)
            except ImportError as err:
                if not missing(err):
                    raise


def list_models(family: str | None = None) -> list[type[Estimator]]:
    """Every estimator class, sorted by family then name; ``family`` keeps one family.

    The deep clustering models (``SCDC``, ``BayesSCDC``) need torch and are listed only when it
    is installed.
    """
    _import_families(skip_missing=True)
    classes = sorted(_REGISTRY.values(), key=lambda c: (c.family, c.__name__))
    if family is not None:
        families = sorted({c.family for c in classes})
        if family not in families:
            raise ValueError(f"family must be one of {', '.join(families)}; got {family!r}")
        classes = [c for c in classes if c.family == family]
    return classes


def _restore_class(name: str, module: str) -> type[Estimator]:
    if name not in _REGISTRY and module.startswith("crowdbayes.models."):
        try:
            importlib.import_module(module)
        except ImportError as err:
            if (err.name or "").split(".")[0] == "crowdbayes":  # no such model module
                raise ValueError(
                    f"the model file names a module {module[:80]!r} this crowdbayes lacks"
                ) from None
            raise ImportError(f"loading a {name[:80]} model needs {err.name or err}") from err
    cls = _REGISTRY.get(name)
    if cls is None:
        raise ValueError(
            f"the model file holds a {name[:80]!r}, which this crowdbayes does not know"
        )
    return cls


def load(path: str | os.PathLike, *, max_bytes: int | None = None) -> Estimator:
    """The estimator saved at ``path`` by ``model.save(path)``, fitted state included.

    A model file is untrusted input: it is read within bounds (``max_bytes``, the most bytes
    its arrays may hold; default: the environment's ``CROWDBAYES_MAX_MODEL_BYTES``, else
    64 MiB or 32 times the file's size, whichever is larger), its checksums verified, and its
    parameters and fitted state checked (:mod:`crowdbayes.roles._state_checks`) before it is
    returned. A damaged, truncated, edited or forged file raises one ``ValueError`` naming the
    file; a missing one ``FileNotFoundError``; a model that needs a missing package
    ``ImportError``."""
    cls, params, state, _ = persistence.read_model_file(path, _restore_class, max_bytes=max_bytes)
    if not _RESTORE:  # pragma: no cover - every model class imports the roles
        raise RuntimeError("crowdbayes.roles was not imported: no checks to load a model with")
    return _RESTORE[0](cls, params, state, path)


#: the function that builds a loaded estimator and checks its contents, registered by
#: :mod:`crowdbayes.roles` (which knows what each role's results must look like; a layer
#: above this one): ``restore(cls, params, state, path) -> Estimator``
_RESTORE: list[Callable] = []


def register_restore(restore: Callable) -> None:
    """Set the function :func:`load` builds and checks a restored estimator with."""
    _RESTORE[:] = [restore]
