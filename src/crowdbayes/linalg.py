"""Dense linear algebra for the Gaussian-process models: the one Cholesky policy.

Kernel matrices are positive semi-definite in exact arithmetic but often numerically singular
(duplicate items, long length-scales, smooth kernels). :func:`safe_cholesky` adds a jitter to the
diagonal that is chosen by the dtype and scaled by the mean diagonal, escalates it ×10 a few
times with a :class:`NumericalWarning`, and raises :class:`CholeskyError` if even that fails, so
no model ever factorises with its own ad-hoc constant.

``scipy.linalg`` is imported by the functions that use it, not with this module, so that
importing the module (as the GP engine and the models built on it do) costs nothing.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import numpy as np

from .exceptions import CholeskyError, NumericalWarning

__all__ = [
    "blas_threads",
    "CholeskyError",
    "NumericalWarning",
    "base_jitter",
    "safe_cholesky",
    "cholesky_solve",
    "triangular_solve",
    "cholesky_logdet",
]


#: relative jitter (times the mean diagonal) added before the first attempt, by dtype
_BASE_JITTER = {np.dtype(np.float64): 1e-8, np.dtype(np.float32): 1e-5}


def base_jitter(dtype: np.dtype) -> float:
    """The relative jitter of the first attempt: 1e-8 for float64, 1e-5 for float32."""
    dtype = np.dtype(dtype)
    if dtype not in _BASE_JITTER:
        raise TypeError(f"safe_cholesky: expected a float32 or float64 matrix; got {dtype}")
    return _BASE_JITTER[dtype]


def safe_cholesky(
    K: np.ndarray, *, jitter: float | None = None, max_tries: int = 4, what: str = "matrix"
) -> np.ndarray:
    """Lower Cholesky factor ``L`` of ``K + ε·mean(diag K)·I``.

    The relative jitter ``ε`` starts at ``jitter`` (default :func:`base_jitter` of the dtype) and
    is multiplied by 10 up to ``max_tries`` more times (from 0 the next try is the base
    jitter); any attempt beyond the first emits a :class:`NumericalWarning` naming the jitter
    that finally worked. Pass ``jitter=0`` for matrices that are well conditioned by
    construction (such as ``I + Lᵀ W L``), where a jitter relative to the diagonal would bias
    the result.

    Raises
    ------
    CholeskyError
        If ``K`` is not square, not finite, or still not positive definite at the largest
        jitter. The message names ``what`` and the jitter tried.
    """
    K = np.asarray(K)
    if K.dtype not in _BASE_JITTER:
        K = K.astype(np.float64)
    if K.ndim != 2 or K.shape[0] != K.shape[1]:
        raise CholeskyError(f"{what}: expected a square matrix; got shape {K.shape}")
    if not np.isfinite(K).all():
        raise CholeskyError(f"{what}: the matrix has non-finite entries")
    n = K.shape[0]
    if n == 0:
        return K.copy()
    scale = float(np.mean(np.diag(K)))
    if not scale > 0:
        raise CholeskyError(f"{what}: the diagonal is not positive (mean {scale:.3g})")
    eps = base_jitter(K.dtype) if jitter is None else float(jitter)
    import scipy.linalg

    diag = np.arange(n)
    for attempt in range(max_tries + 1):
        A = K.copy()
        A[diag, diag] += eps * scale
        try:
            L = scipy.linalg.cholesky(A, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            eps = eps * 10.0 if eps > 0 else base_jitter(K.dtype)
            continue
        if attempt:
            warnings.warn(
                f"{what}: Cholesky needed a relative jitter of {eps:.1e} "
                f"({attempt} escalation(s)); the matrix is close to singular",
                NumericalWarning,
                stacklevel=2,
            )
        return L
    raise CholeskyError(
        f"{what}: not positive definite even with a relative jitter of {eps / 10:.1e} "
        f"({n}×{n}, mean diagonal {scale:.3g})"
    )


def triangular_solve(L: np.ndarray, B: np.ndarray, *, transpose: bool = False) -> np.ndarray:
    """``L⁻¹ B`` (or ``L⁻ᵀ B`` with ``transpose=True``) for lower-triangular ``L``."""
    import scipy.linalg

    return scipy.linalg.solve_triangular(
        L, B, lower=True, trans=1 if transpose else 0, check_finite=False
    )


def cholesky_solve(L: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A⁻¹ B`` given the lower Cholesky factor ``L`` of ``A``."""
    import scipy.linalg

    return scipy.linalg.cho_solve((L, True), B, check_finite=False)


def cholesky_logdet(L: np.ndarray) -> float:
    """``log |A|`` given the lower Cholesky factor ``L`` of ``A``: ``2 Σ log L_ii``."""
    return 2.0 * float(np.sum(np.log(np.diag(L))))


@contextlib.contextmanager
def blas_threads(limit: int) -> Iterator[None]:
    """At most ``limit`` BLAS threads inside the block (through ``threadpoolctl``).

    Loops of many thin products (tens of columns, as in the Plackett–Luce bound iterations)
    gain nothing from splitting each product over threads, and lose much where the cores are
    shared: on a loaded 2-core machine one thread ran them 10–25 times faster than two.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        yield
        return
    with threadpool_limits(limits=limit, user_api="blas"):
        yield
