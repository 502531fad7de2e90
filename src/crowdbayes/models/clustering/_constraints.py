"""Parameter constraints of the crowd clustering estimators that the base's
:class:`~crowdbayes.base.Interval` and :class:`~crowdbayes.base.Options` do not express.

Each has the interface :meth:`crowdbayes.base.Estimator.check_params` reads: ``accepts(value)``,
``describe()`` (for the error message) and ``invalid_value()`` (a value it refuses).
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LayerWidths", "DeviceName"]


def _positive_integer(value: Any) -> bool:
    return (
        isinstance(value, numbers.Integral)
        and not isinstance(value, (bool, np.bool_))
        and value > 0
    )


@dataclass(frozen=True)
class LayerWidths:
    """The hidden layer widths of a network: a positive integer, or a tuple or list of them."""

    def accepts(self, value: Any) -> bool:
        if isinstance(value, (tuple, list)):
            return all(_positive_integer(width) for width in value)
        return _positive_integer(value)

    def describe(self) -> str:
        return "a positive integer or a tuple of positive integers"

    def invalid_value(self) -> Any:
        return (10, -1)


@dataclass(frozen=True)
class DeviceName:
    """A torch device name: ``'cpu'``, ``'cuda'`` or ``'cuda:<index>'`` (whether CUDA is
    available is checked when fitting)."""

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and re.fullmatch(r"(cpu|cuda)(:\d+)?", value) is not None

    def describe(self) -> str:
        return "'cpu', 'cuda' or 'cuda:<index>'"

    def invalid_value(self) -> Any:
        return "tpu"
