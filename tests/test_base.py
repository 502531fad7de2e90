"""The estimator base: constraints, parameters, fitted state and the registry."""

from __future__ import annotations

import numbers

import numpy as np
import pytest

from crowdbayes import DawidSkene, NotFittedError, clone
from crowdbayes.base import (
    NON_NEGATIVE,
    OPEN_UNIT,
    POSITIVE,
    POSITIVE_INT,
    RANDOM_STATE,
    Estimator,
    Interval,
    Options,
    _accepts,
)


def test_intervals_accept_and_describe():
    assert POSITIVE.accepts(0.1) and not POSITIVE.accepts(0.0) and not POSITIVE.accepts(np.nan)
    assert NON_NEGATIVE.accepts(0) and not NON_NEGATIVE.accepts(-1e-9)
    assert POSITIVE_INT.accepts(np.int64(3)) and not POSITIVE_INT.accepts(3.0)
    assert not POSITIVE_INT.accepts(True)  # booleans are not numbers here
    assert OPEN_UNIT.accepts(0.5) and not OPEN_UNIT.accepts(1.0)
    assert POSITIVE.describe() == "a number in (0, inf)"
    assert POSITIVE_INT.describe() == "an integer in [1, inf)"
    assert Interval(numbers.Real, 0, 1, "right").describe() == "a number in (0, 1]"
    for constraint in (POSITIVE, NON_NEGATIVE, POSITIVE_INT, OPEN_UNIT):
        assert not constraint.accepts(constraint.invalid_value())


def test_options_compare_type_and_value():
    options = Options("a", 1)
    assert options.accepts("a") and options.accepts(1)
    assert not options.accepts(True) and not options.accepts(1.0)
    assert options.describe() == "one of 'a', 1"


def test_random_state_accepts_seeds_generators_and_none():
    for value in (0, np.int64(7), np.random.default_rng(1), np.random.SeedSequence(2), None):
        assert any(_accepts(c, value) for c in RANDOM_STATE)
    for value in (-1, 1.5, "seed"):
        assert not any(_accepts(c, value) for c in RANDOM_STATE)


class _Toy(Estimator):
    parameter_constraints = {"size": [POSITIVE_INT], "scale": [POSITIVE, None]}

    def __init__(self, size: int = 3, scale: float | None = None) -> None:
        self.size = size
        self.scale = scale

    def fit(self):
        self.check_params()
        self.value_ = self.size * 2
        return self


class _Kwargs(Estimator):
    def __init__(self, **options) -> None:
        self.options = options


def test_parameters_repr_clone_and_errors():
    toy = _Toy(size=5)
    assert toy.get_params() == {"size": 5, "scale": None}
    assert repr(toy) == "_Toy(size=5)"
    assert repr(_Toy()) == "_Toy()"
    copy = clone(toy.fit())
    assert copy.get_params() == toy.get_params() and not copy.is_fitted()
    with pytest.raises(ValueError, match="_Toy has no parameter 'sise'; its parameters are size"):
        toy.set_params(sise=3)
    with pytest.raises(
        ValueError, match=r"_Toy: parameter 'size' must be an integer in \[1, inf\)"
    ):
        _Toy(size=0).fit()
    with pytest.raises(ValueError, match=r"'scale' must be a number in \(0, inf\) or None; got -1"):
        _Toy(scale=-1).fit()
    with pytest.raises(TypeError, match="takes \\*\\*options"):
        _Kwargs().get_params()


def test_fitted_state_and_not_fitted_error():
    toy = _Toy()
    assert not toy.is_fitted()
    with pytest.raises(NotFittedError, match=r"_Toy is not fitted yet: call _Toy.fit\(...\) first"):
        toy.check_is_fitted()
    toy.fit()
    assert toy.is_fitted() and toy._get_state() == {"value_": 6}


def test_random_generator_is_resolved_from_random_state():
    class Seeded(_Toy):
        _abstract = True

        def __init__(self, random_state=None) -> None:
            self.random_state = random_state

    a, b = Seeded(4).random_generator(), Seeded(4).random_generator()
    assert a.random() == b.random()
    rng = np.random.default_rng(0)
    assert Seeded(rng).random_generator() is rng


def test_the_registry_knows_every_concrete_model_once():
    from crowdbayes.base import _REGISTRY

    assert _REGISTRY["DawidSkene"] is DawidSkene
    assert "_Toy" not in _REGISTRY and "LabelModel" not in _REGISTRY
    with pytest.raises(TypeError, match="two estimator classes are named DawidSkene"):
        type("DawidSkene", (Estimator,), {"__module__": "elsewhere"})
