"""Stationary kernels with one length-scale per input dimension (ARD), in product form.

Both kernels factorise over dimensions,

.. math:: k(x, x') = \\sigma^2 \\prod_{d=1}^{D} k_d(|x_d - x'_d| / l_d),

as in GPPL (Simpson & Gurevych, 2018, Sec. 2.1; 2020, Eq. 26 context), so each is evaluated in
log space as ``σ² exp(Σ_d log k_d)`` (no underflow of intermediate products) and its gradient
with respect to ``log l_d`` is ``K ⊙ M_d`` with a per-dimension multiplier ``M_d``:

- Matérn-3/2: ``k_d = (1 + u) e^{-u}``, ``u = √3 r_d / l_d``, ``M_d = u² / (1 + u)``
  (the paper's Eqs. 12–13, ``∂K/∂l_d = K / k_d · 3 r_d² / l_d³ · e^{-u}``, times ``l_d``);
- RBF: ``k_d = exp(-s² / 2)``, ``s = r_d / l_d``, ``M_d = s²``.

Gradients are taken with respect to log length-scales, the natural unconstrained parameters
for L-BFGS-B. The three kernels are stored in model files (:mod:`crowdbayes.persistence`); a
custom :class:`Kernel` subclass is stored only if it is decorated with ``@persistable``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..persistence import persistable

__all__ = ["Kernel", "Matern32", "RBF", "Independent", "make_kernel"]


def _as_inputs(X: np.ndarray, what: str) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"{what}: expected a 2-d array (n, n_features); got shape {X.shape}")
    return X


class Kernel(ABC):
    """A covariance function ``k(x, x')`` with prior variance ``variance``.

    Subclasses with length-scales implement :meth:`__call__` and :meth:`gradient`; every kernel
    has :meth:`diag` and a number of length-scale parameters ``n_lengthscales``.
    """

    variance: float

    @abstractmethod
    def __call__(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        """The (n, m) covariance matrix between the rows of ``X`` and ``Y`` (default ``X``)."""

    def diag(self, X: np.ndarray) -> np.ndarray:
        """``k(x, x)`` for each row: the prior variance (all these kernels are stationary)."""
        return np.full(len(X), self.variance)

    @abstractmethod
    def paired(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """``k(x_i, y_i)`` for each row ``i`` of two equally long inputs (no n × m matrix)."""

    @property
    def n_lengthscales(self) -> int:
        return 0


class _ProductKernel(Kernel):
    """ARD product kernel ``σ² Π_d k_d(r_d / l_d)``; subclasses give ``log k_d`` and ``M_d``."""

    def __init__(self, lengthscale: float | np.ndarray, variance: float = 1.0) -> None:
        lengthscale = np.atleast_1d(np.asarray(lengthscale, dtype=np.float64))
        if lengthscale.ndim != 1 or not (
            np.isfinite(lengthscale).all() and (lengthscale > 0).all()
        ):
            raise ValueError(
                f"{type(self).__name__}: length-scales must be positive and finite; "
                f"got {lengthscale.tolist()}"
            )
        if not (np.isfinite(variance) and variance > 0):
            raise ValueError(f"{type(self).__name__}: variance must be positive; got {variance}")
        self.lengthscale = lengthscale
        self.variance = float(variance)

    @property
    def n_lengthscales(self) -> int:
        return len(self.lengthscale)

    def with_lengthscale(self, lengthscale: float | np.ndarray) -> _ProductKernel:
        """A copy with new length-scales (and the same variance)."""
        return type(self)(lengthscale, self.variance)

    def __repr__(self) -> str:
        ls = np.array2string(self.lengthscale, precision=4, threshold=6)
        return f"{type(self).__name__}(lengthscale={ls}, variance={self.variance:.4g})"

    # ------------------------------------------------------------------ per-dimension pieces
    @staticmethod
    @abstractmethod
    def _log_factor(scaled: np.ndarray) -> np.ndarray:
        """``log k_d`` as a function of ``|x_d - x'_d| / l_d``."""

    @staticmethod
    @abstractmethod
    def _grad_factor(scaled: np.ndarray) -> np.ndarray:
        """``M_d`` with ``∂K/∂log l_d = K ⊙ M_d``, as a function of ``|x_d - x'_d| / l_d``."""

    def _scaled(self, X: np.ndarray, Y: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        X = _as_inputs(X, "X")
        Y = X if Y is None else _as_inputs(Y, "Y")
        lengthscale = self.lengthscale
        if len(lengthscale) == 1:
            lengthscale = np.repeat(lengthscale, X.shape[1])
        if X.shape[1] != len(lengthscale) or Y.shape[1] != len(lengthscale):
            raise ValueError(
                f"{type(self).__name__}: {len(self.lengthscale)} length-scale(s) for inputs with "
                f"{X.shape[1]} and {Y.shape[1]} feature(s)"
            )
        return X / lengthscale, Y / lengthscale

    def _scaled_distance(self, Xs: np.ndarray, Ys: np.ndarray, d: int) -> np.ndarray:
        return np.abs(Xs[:, d, None] - Ys[None, :, d])

    def paired(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        Xs, Ys = self._scaled(X, Y)
        if len(Xs) != len(Ys):
            raise ValueError(f"paired: inputs have {len(Xs)} and {len(Ys)} rows")
        return self.variance * np.exp(self._log_factor(np.abs(Xs - Ys)).sum(axis=1))

    def __call__(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        Xs, Ys = self._scaled(X, Y)
        log_k = np.zeros((len(Xs), len(Ys)))
        for d in range(Xs.shape[1]):
            log_k += self._log_factor(self._scaled_distance(Xs, Ys, d))
        return self.variance * np.exp(log_k)

    def gradient(self, X: np.ndarray, Y: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(K, dK)`` with ``dK[d] = ∂K/∂log l_d``, shape (D, n, m).

        With a single shared length-scale ``dK`` has one slice (the sum over dimensions). The
        (D, n, m) array can be large; :meth:`gradient_contract` gives ``Σ_ij G_ij dK[d]_ij``
        without storing it.
        """
        K = self(X, Y)
        Xs, Ys = self._scaled(X, Y)
        slices = [
            K * self._grad_factor(self._scaled_distance(Xs, Ys, d)) for d in range(Xs.shape[1])
        ]
        dK = np.stack(slices)
        if len(self.lengthscale) == 1:
            dK = dK.sum(axis=0, keepdims=True)
        return K, dK

    def gradient_contract(
        self, G: np.ndarray, X: np.ndarray, Y: np.ndarray | None = None
    ) -> np.ndarray:
        """``[Σ_ij G_ij ∂K_ij/∂log l_d]_d`` for an (n, m) weight matrix ``G``.

        This is what the gradient of a marginal likelihood or bound needs
        (``½ tr(G ∂K)``-type terms), at O(n m) memory instead of O(D n m).
        """
        KG = self(X, Y) * G
        Xs, Ys = self._scaled(X, Y)
        grad = np.array(
            [
                np.sum(KG * self._grad_factor(self._scaled_distance(Xs, Ys, d)))
                for d in range(Xs.shape[1])
            ]
        )
        return grad.sum(keepdims=True) if len(self.lengthscale) == 1 else grad


@persistable
class Matern32(_ProductKernel):
    """Matérn-3/2 product kernel ``σ² Π_d (1 + √3 r_d/l_d) exp(-√3 r_d/l_d)``.

    The kernel GPPL and crowdGPPL use (Simpson & Gurevych, 2018, Eqs. 12–13; 2020, Sec. 5).
    Note the product over dimensions is not the isotropic Matérn of the scaled Euclidean
    distance: it is rougher along each axis and decays faster in high dimension, which is why
    the papers scale the median heuristic with ``√D`` (:func:`scaled_median_heuristic`).
    """

    @staticmethod
    def _log_factor(scaled: np.ndarray) -> np.ndarray:
        u = np.sqrt(3.0) * scaled
        return np.log1p(u) - u

    @staticmethod
    def _grad_factor(scaled: np.ndarray) -> np.ndarray:
        u = np.sqrt(3.0) * scaled
        return u * u / (1.0 + u)


@persistable
class RBF(_ProductKernel):
    """Squared-exponential (RBF) kernel with ARD length-scales,
    ``σ² exp(-½ Σ_d r_d² / l_d²)`` (Rasmussen & Williams, 2006, Eq. 5.1)."""

    @staticmethod
    def _log_factor(scaled: np.ndarray) -> np.ndarray:
        return -0.5 * scaled * scaled

    @staticmethod
    def _grad_factor(scaled: np.ndarray) -> np.ndarray:
        return scaled * scaled

    def __call__(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        from scipy.spatial.distance import cdist

        # the squared distance of the scaled inputs is one BLAS-backed call
        Xs, Ys = self._scaled(X, Y)
        return self.variance * np.exp(-0.5 * cdist(Xs, Ys, "sqeuclidean"))


@persistable
class Independent(Kernel):
    """``k(x, x') = σ²`` if ``x == x'`` (every coordinate) else 0.

    The prior of the feature-less Thurstone model: each item's utility is an independent
    ``N(0, σ²)``. With item codes as one-column inputs, an item never seen gets the prior.
    """

    def __init__(self, variance: float = 1.0) -> None:
        if not (np.isfinite(variance) and variance > 0):
            raise ValueError(f"Independent: variance must be positive; got {variance}")
        self.variance = float(variance)

    def __call__(self, X: np.ndarray, Y: np.ndarray | None = None) -> np.ndarray:
        X = _as_inputs(X, "X")
        Y = X if Y is None else _as_inputs(Y, "Y")
        same = (X[:, None, :] == Y[None, :, :]).all(axis=-1)
        return self.variance * same.astype(np.float64)

    def paired(self, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        X, Y = _as_inputs(X, "X"), _as_inputs(Y, "Y")
        return self.variance * (X == Y).all(axis=1).astype(np.float64)

    def __repr__(self) -> str:
        return f"Independent(variance={self.variance:.4g})"


_KERNELS = {"matern32": Matern32, "rbf": RBF}


def make_kernel(name: str | Kernel, lengthscale: float | np.ndarray, variance: float) -> Kernel:
    """A kernel from its name (``"matern32"``, ``"rbf"``) or a :class:`Kernel` passed through."""
    if isinstance(name, Kernel):
        return name
    key = str(name).lower().replace("-", "").replace("_", "")
    if key not in _KERNELS:
        raise ValueError(f"kernel must be one of {sorted(_KERNELS)} or a Kernel; got {name!r}")
    return _KERNELS[key](lengthscale, variance)
