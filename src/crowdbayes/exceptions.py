"""Exceptions and warnings raised by crowdbayes.

Importing this module imports nothing else (the command line's parser reads the warning
classes): :class:`CholeskyError`, a NumPy ``LinAlgError``, is built on first use.
"""

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing


class NotFittedError(RuntimeError, AttributeError):
    """A result was asked of an estimator before ``fit`` was called. Also an
    :class:`AttributeError` (as scikit-learn's), so that ``hasattr(model, "labels_")`` is
    False on a model not fitted yet."""


class ConvergenceWarning(UserWarning):
    """An iterative algorithm stopped at ``max_iter`` before meeting its tolerance."""


class DataWarning(UserWarning):
    """The input is usable but something in it deserves the user's attention."""


class DivergenceWarning(UserWarning):
    """An estimate ran away (e.g. a moment-matched prior scale went to infinity)."""


class NumericalWarning(UserWarning):
    """A computation needed a numerical safeguard (e.g. a larger jitter) to go through."""


def _cholesky_error() -> type:
    import numpy as np

    class CholeskyError(np.linalg.LinAlgError, ValueError):
        """A matrix could not be factorised even with the largest jitter the policy allows."""

    CholeskyError.__qualname__ = "CholeskyError"  # found by pickle and in tracebacks
    return CholeskyError


if TYPE_CHECKING:
    import numpy as np

    class CholeskyError(np.linalg.LinAlgError, ValueError): ...


def __getattr__(name: str):
    if name == "CholeskyError":
        # setdefault: two threads racing here still share one class
        return globals().setdefault(name, _cholesky_error())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "CholeskyError"})
