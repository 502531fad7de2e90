"""Exceptions and warnings raised by crowdbayes."""

import numpy as np


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


class CholeskyError(np.linalg.LinAlgError, ValueError):
    """A matrix could not be factorised even with the largest jitter the policy allows."""
