"""Checks shared by the crowd clustering tests."""

from __future__ import annotations

import pytest

from crowdbayes.base import _accepts


def _refused(constraints: list):
    """A value that none of ``constraints`` accepts."""
    candidates = [c.invalid_value() for c in constraints if hasattr(c, "invalid_value")]
    candidates += ["not-a-valid-value", object()]
    return next(v for v in candidates if not any(_accepts(c, v) for c in constraints))


@pytest.fixture
def check_constraints():
    """``check(cls)``: every ``__init__`` parameter of ``cls`` has constraints, the defaults
    pass them, and a value they refuse is a ValueError naming the parameter."""

    def check(cls) -> None:
        model = cls()
        assert set(model.parameter_constraints) == set(model.get_params())
        model.check_params()
        for name, constraints in model.parameter_constraints.items():
            with pytest.raises(ValueError, match=f"'{name}'"):
                cls().set_params(**{name: _refused(constraints)}).check_params()

    return check
