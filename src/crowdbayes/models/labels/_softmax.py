r"""Multinomial logistic regression on soft targets: the default classifier of
:class:`~crowdbayes.models.labels.CrowdClassifier` (no scikit-learn needed, and savable).

Minimises :math:`-\sum_i\sum_k R_{ik}\log\mathrm{softmax}(W^\top \tilde x_i + w_0)_k
+ \tfrac{1}{2C}\lVert W\rVert^2` by L-BFGS, with :math:`\tilde x` the features standardised on
the training rows and :math:`R` rows of class probabilities (one-hot for hard labels). With soft
targets this is the M-step of Raykar et al. (2010) for the classifier.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax

from ...persistence import persistable

__all__ = ["SoftmaxRegression", "fit_soft", "class_probabilities"]


@persistable
class SoftmaxRegression:
    """L2-regularised multinomial logistic regression (module docstring); scikit-learn style
    ``fit(X, y, sample_weight)`` / ``predict_proba(X)`` plus ``fit_soft(X, R)``."""

    def __init__(self, C: float = 1.0, max_iter: int = 500) -> None:
        self.C = C
        self.max_iter = max_iter

    def fit_soft(self, X: np.ndarray, targets: np.ndarray) -> SoftmaxRegression:
        """Fit to (n, K) target probabilities ``targets`` (columns: classes ``0..K-1``)."""
        X = np.asarray(X, np.float64)
        targets = np.asarray(targets, np.float64)
        n_features, n_classes = X.shape[1], targets.shape[1]
        self.mean_ = X.mean(axis=0)
        sd = X.std(axis=0)
        self.scale_ = np.where(sd > 0, sd, 1.0)
        Z = (X - self.mean_) / self.scale_
        shape = (n_features + 1, n_classes)

        def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
            W = flat.reshape(shape)
            log_p = log_softmax(Z @ W[:-1] + W[-1], axis=1)
            value = -float(np.sum(targets * log_p)) + 0.5 / self.C * float(np.sum(W[:-1] ** 2))
            residual = np.exp(log_p) * targets.sum(axis=1, keepdims=True) - targets
            grad = np.vstack([Z.T @ residual + W[:-1] / self.C, residual.sum(axis=0)])
            return value, grad.ravel()

        previous = getattr(self, "coef_", None)  # warm start from the last fit (EM)
        start = previous if previous is not None and previous.shape == shape else np.zeros(shape)
        result = minimize(
            loss, start.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": self.max_iter}
        )
        self.coef_ = result.x.reshape(shape)
        self.classes_ = np.arange(n_classes)
        return self

    def fit(self, X, y, sample_weight=None) -> SoftmaxRegression:
        """Fit to hard labels ``y`` (integers ``0..K-1``), optionally weighted."""
        y = np.asarray(y, np.int64)
        weights = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, float)
        targets = np.zeros((len(y), int(y.max()) + 1))
        targets[np.arange(len(y)), y] = weights
        return self.fit_soft(X, targets)

    def predict_proba(self, X) -> np.ndarray:
        Z = (np.asarray(X, np.float64) - self.mean_) / self.scale_
        return np.exp(log_softmax(Z @ self.coef_[:-1] + self.coef_[-1], axis=1))


def fit_soft(classifier, X: np.ndarray, targets: np.ndarray, min_weight: float = 1e-6):
    """Fit ``classifier`` to soft targets (n, K): its own ``fit_soft`` if it has one, else any
    scikit-learn classifier by repeating each row once per class with the class probability as
    ``sample_weight`` (weights below ``min_weight`` left out)."""
    if hasattr(classifier, "fit_soft"):
        return classifier.fit_soft(X, targets)
    n, k = targets.shape
    rows, classes = np.nonzero(targets >= min_weight)
    classifier.fit(X[rows], classes, sample_weight=targets[rows, classes])
    return classifier


def class_probabilities(classifier, X: np.ndarray, n_classes: int, floor: float = 1e-6):
    """(n, K) probabilities of classes ``0..K-1`` from ``classifier.predict_proba`` (classes it
    never saw get ``floor``; rows renormalised), clipped away from 0 for the log."""
    raw = np.asarray(classifier.predict_proba(X), np.float64)
    seen: Sequence = getattr(classifier, "classes_", np.arange(raw.shape[1]))
    probas = np.full((len(X), n_classes), floor)
    probas[:, np.asarray(seen, np.int64)] = np.maximum(raw, floor)
    return probas / probas.sum(axis=1, keepdims=True)
