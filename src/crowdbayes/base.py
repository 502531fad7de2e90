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
  registry of classes it may build is filled by subclassing.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import numbers
import os
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from . import persistence
from ._utils import as_generator
from ._version import __version__
from .exceptions import NotFittedError

__all__ = [
    "Estimator",
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
        if isinstance(value, numbers.Real) and not np.isfinite(value):
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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        parts = cls.__module__.split(".")
        if len(parts) > 2 and parts[:2] == ["crowdbayes", "models"]:
            cls.family = parts[2]
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

    # ----------------------------------------------------------------- what to ask next
    #: the question-selection strategies of the family (besides ``"auto"``); empty: this model
    #: cannot suggest questions
    question_strategies: ClassVar[tuple[str, ...]] = ()

    def suggest(
        self,
        n: int,
        *,
        candidates: Any = None,
        available: Any = None,
        strategy: str = "auto",
        confidence: float | None = None,
        random_state: Any = None,
    ) -> Any:
        """The ``n`` most valuable questions to ask next, best first, with their ``score``.

        Computed from the fitted posterior by the family (labels: which task, and which of the
        ``available`` workers; comparisons: which pair, and for whom). ``candidates`` limits the
        questions (tasks, pairs; default: the family's natural pool), ``confidence`` marks a
        question as answered once the posterior's most probable answer reaches it (never
        suggested again), ``strategy`` is ``"auto"`` or one of ``question_strategies``, and
        ``random_state`` breaks ties and draws the ``"random"`` baseline. Returns a DataFrame
        of at most ``n`` rows (fewer when fewer questions are worth asking).
        """
        self.check_is_fitted()
        name = type(self).__name__
        if not self.question_strategies:
            raise TypeError(f"{name} cannot suggest questions (it has no question strategies)")
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"{name}.suggest: n must be a positive integer; got {n!r}")
        if strategy != "auto" and strategy not in self.question_strategies:
            choices = ", ".join(repr(s) for s in ("auto", *self.question_strategies))
            raise ValueError(f"{name}.suggest: strategy must be one of {choices}; got {strategy!r}")
        if confidence is not None and not OPEN_UNIT.accepts(confidence):
            raise ValueError(
                f"{name}.suggest: confidence must be a number in (0, 1) or None; got {confidence!r}"
            )
        return self._suggest(
            int(n),
            candidates=candidates,
            available=available,
            strategy=strategy,
            confidence=confidence,
            rng=as_generator(random_state),
        )

    def _suggest(self, n, *, candidates, available, strategy, confidence, rng):
        """The family's question selection (see :meth:`suggest`); arguments are checked."""
        raise NotImplementedError

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
    def save(self, path: str | os.PathLike) -> None:
        """Write the parameters and fitted state to ``path`` in the one model file format
        (an ``.npz`` of arrays plus a JSON header; never pickle; written atomically). Restore
        with :func:`crowdbayes.load` or ``type(model).load(path)``."""
        self.check_is_fitted()
        persistence.write_model_file(
            path, type(self), self.get_params(), self._get_state(), __version__
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> Estimator:
        """The estimator saved at ``path``; refused if it is not a ``cls``."""
        model = load(path)
        if not isinstance(model, cls):
            raise ValueError(
                f"{path} holds a {type(model).__name__} model; expected a {cls.__name__}"
            )
        return model


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
    for module in _FAMILIES:
        try:
            importlib.import_module(module)
        except ImportError as err:
            needed = _OPTIONAL_FAMILIES.get(module)
            if needed is None or not skip_missing or needed not in str(err):
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
            raise ImportError(f"loading a {name} model needs {err.name or err}") from err
    cls = _REGISTRY.get(name)
    if cls is None:
        raise ValueError(f"the model file holds a {name!r}, which this crowdbayes does not know")
    return cls


def load(path: str | os.PathLike) -> Estimator:
    """The estimator saved at ``path`` by ``model.save(path)``, fitted state included."""
    cls, params, state, _ = persistence.read_model_file(path, _restore_class)
    model = cls(**params)
    model._set_state(state)
    return model
